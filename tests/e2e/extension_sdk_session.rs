//! pi's SDK inside an extension, side by side with pi 1.6.0: a command
//! calls `createAgentSession({sessionManager: SessionManager.inMemory(),
//! model: ctx.model})` and prompts the sub-session, which reads a file with
//! its `read` tool and answers, against the fake model server. The
//! extension reports what the session's subscribers saw (every event, with
//! the streaming message as it was then), its messages and session entries;
//! the model requests are compared too.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::harness::Sandbox;

/// An extension whose `/sub` command runs a sub-session of pi's SDK.
const SUB_SESSION: &str = r#"import { createAgentSession, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** A value without what differs from run to run (clock readings, generated ids), nor the
 * fake server's token counts (they follow the prompt's length, and its wording is pi-rpc's). */
function stable(value: any): any {
  const volatile = ["timestamp", "id", "parentId", "responseId", "durationMs", "usage"];
  return JSON.parse(JSON.stringify(value, (key, v) => (volatile.includes(key) ? undefined : v)));
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("sub", {
    handler: async (_args, ctx) => {
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(), model: ctx.model });
      const events: any[] = [];
      session.subscribe((event: any) => events.push(stable(event)));
      await session.prompt("read notes.txt");
      ctx.ui.notify(JSON.stringify({
        events,
        messages: stable(session.messages),
        entries: stable(session.sessionManager.getEntries()),
        model: `${session.model?.provider}/${session.model?.id}`,
        thinkingLevel: session.thinkingLevel,
        tools: session.getActiveToolNames(),
        idle: [session.isStreaming, session.isIdle],
        file: session.sessionFile ?? null,
      }), "info");
      session.dispose();
    },
  });
}
"#;

/// `value` without the words of the system prompt and of the tools'
/// descriptions, which are pi-rpc's own (as in its main session): the
/// prompt's section names stay, each tool its name.
pub(crate) fn without_wording(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("role").and_then(Value::as_str) == Some("system") {
                if let Some(Value::Object(sections)) = map.get_mut("sections") {
                    sections.values_mut().for_each(|text| *text = json!("…"));
                }
                if let Some(Value::String(text)) = map.get_mut("content")
                    && !text.is_empty()
                {
                    *text = "<the system prompt>".into();
                }
            }
            for key in ["toolsAdded", "tools"] {
                if let Some(Value::Array(tools)) = map.get_mut(key) {
                    for tool in tools.iter_mut() {
                        let name = tool.get("name").or_else(|| tool.pointer("/function/name")).cloned();
                        if let Some(name) = name {
                            *tool = name;
                        }
                    }
                }
            }
            map.values_mut().for_each(without_wording);
        }
        Value::Array(items) => items.iter_mut().for_each(without_wording),
        _ => {}
    }
}

/// The fake server's pause before each frame of a reply.
pub const PACE_MS: u64 = 60;

/// What one program did: the `/sub` note, the model requests its sub-session made.
struct Run {
    note: Value,
    requests: Vec<Value>,
}

async fn run(reference: bool, node: &std::path::Path, dir: &std::path::Path, cli: &std::path::Path) -> Run {
    let sb = Sandbox::with_server().await;
    host_settings(&sb, node, dir, json!({}));
    write_module(&sb, "sub-session.ts", SUB_SESSION);
    std::fs::write(sb.cwd.path().join("notes.txt"), "buy milk\n").expect("notes");
    // Paced: each frame of the replies is read on its own, so what a subscriber sees of the
    // streaming message (one object, changed as the reply comes in) does not depend on timing.
    sb.server().push(Reply::tool_call("c1", "read", r#"{"path": "notes.txt"}"#).paced_ms(PACE_MS));
    sb.server().push(Reply::text("It says to buy milk.").paced_ms(PACE_MS));
    // pi-rpc's prompt names pi's documentation where pi's does.
    let docs = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
    let mut pi = if reference {
        spawn_reference(&sb, node, cli)
    } else {
        sb.spawn_with_env(&["--no-session"], &[("PI_RPC_DOCS_DIR", &docs)])
    };
    pi.send(json!({"id": "sub", "type": "prompt", "message": "/sub"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let root = sb.cwd.path().display().to_string();
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().replace(&root, "<cwd>");
    let mut note = serde_json::from_str(&note).unwrap_or_else(|e| panic!("/sub notified {note}: {e}"));
    without_wording(&mut note);
    let requests = sb
        .server()
        .requests()
        .iter()
        .map(|r| {
            let mut body = serde_json::from_str(&r.body.to_string().replace(&root, "<cwd>")).unwrap_or(Value::Null);
            without_wording(&mut body);
            body
        })
        .collect();
    Run { note, requests }
}

#[tokio::test]
async fn an_extensions_sdk_session_runs_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let ours = run(false, &node, &dir, &cli).await;
    let theirs = run(true, &node, &dir, &cli).await;

    // The sub-session did the work: it read the file with its own tool and answered.
    let messages = ours.note["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "toolResult", "assistant"], "{}", ours.note);
    assert_eq!(messages[3]["content"][0]["text"], "buy milk\n", "{}", ours.note);
    assert_eq!(ours.note["tools"], json!(["read", "bash", "edit", "write"]));
    assert_eq!(ours.requests.len(), 2, "{:?}", ours.requests);

    // Every event its subscribers saw (the streaming message as it was at each update
    // included), its messages and session entries, its state: pi's.
    let (events, pis) =
        (ours.note["events"].as_array().expect("events"), theirs.note["events"].as_array().expect("events"));
    for (i, (event, pi)) in events.iter().zip(pis).enumerate() {
        assert_eq!(event, pi, "event {i}: pi-rpc, then pi 1.6.0");
    }
    assert_eq!(events.len(), pis.len(), "pi-rpc, then pi 1.6.0");
    for key in ["messages", "entries", "model", "thinkingLevel", "tools", "idle", "file"] {
        assert_eq!(ours.note[key], theirs.note[key], "{key}: pi-rpc, then pi 1.6.0");
    }
    // Its model requests: the same transcripts, tools and options as pi's.
    assert_eq!(ours.requests, theirs.requests);
}
