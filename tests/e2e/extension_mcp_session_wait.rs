//! When pi's MCP extension waits for the `direct` servers, side by side
//! with pi 1.6.0 (`createMcpExtension({ startupWaitMs })`, a `direct`
//! server that never answers `initialize`): the first prompt after each
//! session start waits and gives pi's "still connecting" note (again after
//! `new_session`, `switch_session`, `clone`, `fork` and a reload), and the
//! prompts after it do not wait at all.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::time::{Duration, Instant};

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_builtin_factories::start_saved;
use crate::extension_host::write_module;
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, write_mcp};

/// pi's MCP extension with `startupWaitMs` of `{WAIT}` ms, and `/again`, a reload.
const WAITING: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
export default function (pi: any) {
  createMcpExtension({ startupWaitMs: {WAIT} })(pi);
  pi.registerCommand("again", { handler: async (_args: string, ctx: any) => { await ctx.reload(); } });
}
"#;

/// A sandbox whose only MCP server is a `direct` one that never answers
/// `initialize`, with [`WAITING`] waiting `wait_ms`.
async fn silent_sandbox(servers: &Servers, wait_ms: u64) -> Sandbox {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "waiting.ts", &WAITING.replace("{WAIT}", &wait_ms.to_string()));
    let silent = json!({"command": servers.node, "args": ["-e", "setInterval(() => {}, 1000)"], "exposure": "direct"});
    write_mcp(&sb, json!({"silent": silent}));
    sb.server().set_fallback(Reply::text("Answered."));
    sb
}

/// One prompt: the notifications it gave (`[message, type]`) and how long it took.
async fn prompt(pi: &mut Pi, id: &str) -> (Vec<Value>, Duration) {
    let started = Instant::now();
    pi.send(json!({"id": id, "type": "prompt", "message": "hi"})).await;
    let lines = pi.until_type("agent_settled").await;
    let notes = lines.iter().filter(|v| v["method"] == "notify").map(|v| json!([v["message"], v["notifyType"]]));
    (notes.collect(), started.elapsed())
}

/// The notes of a prompt after each session start and of one after it:
/// `{start, again, new, resumed, cloned, forked, reloaded}`.
async fn notes_per_session(servers: &Servers, reference: bool) -> Option<Value> {
    let sb = silent_sandbox(servers, 300).await;
    let mut pi = start_saved(&sb, reference, &[])?;
    let mut seen = serde_json::Map::new();
    seen.insert("start".into(), json!(prompt(&mut pi, "p1").await.0));
    seen.insert("again".into(), json!(prompt(&mut pi, "p2").await.0));
    let state = pi.call("s", json!({"type": "get_state"})).await;
    let first = state["data"]["sessionFile"].as_str().expect("a saved session").to_string();
    assert_eq!(pi.call("n", json!({"type": "new_session"})).await["success"], true);
    seen.insert("new".into(), json!(prompt(&mut pi, "p3").await.0));
    let switched = pi.call("w", json!({"type": "switch_session", "sessionPath": first})).await;
    assert_eq!(switched["success"], true, "{switched}");
    seen.insert("resumed".into(), json!(prompt(&mut pi, "p4").await.0));
    assert_eq!(pi.call("c", json!({"type": "clone"})).await["success"], true);
    seen.insert("cloned".into(), json!(prompt(&mut pi, "p5").await.0));
    let forkable = pi.call("m", json!({"type": "get_fork_messages"})).await;
    let entry = forkable["data"]["messages"][0]["entryId"].clone();
    assert_eq!(pi.call("f", json!({"type": "fork", "entryId": entry})).await["success"], true);
    seen.insert("forked".into(), json!(prompt(&mut pi, "p6").await.0));
    pi.send(json!({"id": "r", "type": "prompt", "message": "/again"})).await;
    pi.until(|v| v["type"] == "response" && v["id"] == "r").await;
    seen.insert("reloaded".into(), json!(prompt(&mut pi, "p7").await.0));
    pi.close_stdin();
    Some(Value::Object(seen))
}

#[tokio::test]
async fn the_still_connecting_note_comes_again_after_each_session_start_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = notes_per_session(&servers, false).await else { return };
    let still = json!([["MCP servers are still connecting; their tools become available once connected.", "info"]]);
    let expected = json!({
        "start": still, "again": [], "new": still, "resumed": still, "cloned": still, "forked": still, "reloaded": still,
    });
    assert_eq!(ours, expected, "pi-rpc");
    let Some(theirs) = notes_per_session(&servers, true).await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// How long the first two prompts took, with a `startupWaitMs` of `WAIT_MS`.
async fn prompt_times(servers: &Servers, reference: bool) -> Option<(Duration, Duration, Vec<Value>)> {
    let sb = silent_sandbox(servers, WAIT_MS).await;
    let mut pi = start_saved(&sb, reference, &[])?;
    let (first_notes, first) = prompt(&mut pi, "p1").await;
    let (second_notes, second) = prompt(&mut pi, "p2").await;
    pi.close_stdin();
    Some((first, second, [first_notes, second_notes].concat()))
}

const WAIT_MS: u64 = 12_000;

#[tokio::test]
async fn prompts_after_the_first_do_not_wait_for_a_direct_server_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let Some((first, second, notes)) = prompt_times(&servers, reference).await else { return };
        assert!(first >= Duration::from_millis(WAIT_MS), "{who}: the first prompt waited ({first:?})");
        assert_eq!(notes.len(), 1, "{who}: one note, at the first prompt: {notes:?}");
        // Half the wait: the second prompt did not wait for the server, which never connects.
        assert!(second < Duration::from_millis(WAIT_MS / 2), "{who}: the second prompt took {second:?}");
    }
}
