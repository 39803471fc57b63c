//! The session's extension order, side by side with pi 1.6.0: the
//! command-line (`-e`) extensions load first, then the discovered ones
//! (here a user-level one), so where both handle one event the `-e`
//! extension's handler runs first: `input` transforms and
//! `before_agent_start` system prompts chain in that order, its `tool_call`
//! block wins, and `get_commands` lists its command first.

use serde_json::{Value, json};

use crate::clients::{node22, repo_root};
use crate::extension_project_trust::{spawn_either, tools_ready};
use crate::harness::Sandbox;

/// An extension named `NAME` that marks every event it handles with its name.
const MARKING_EXTENSION: &str = r#"export default function (pi: any) {
  pi.registerCommand("NAME-cmd", { description: "NAME's command", handler: async () => {} });
  pi.on("input", async (event: any) => ({ action: "transform", text: `${event.text} <NAME>` }));
  pi.on("before_agent_start", async (event: any) => ({ systemPrompt: `${event.systemPrompt} [NAME]` }));
  pi.on("tool_call", async () => ({ block: true, reason: "blocked by NAME" }));
}
"#;

/// The order of `markers` in `text` (those found).
fn order_in(text: &str, markers: &[&str]) -> Vec<String> {
    let mut found: Vec<(usize, &str)> = markers.iter().filter_map(|m| text.find(m).map(|at| (at, *m))).collect();
    found.sort();
    found.into_iter().map(|(_, m)| m.to_string()).collect()
}

/// What pi-rpc (or pi 1.6.0) shows of the order, with a user-level
/// extension `user` and an `-e` extension `cli`.
async fn observe(reference: bool) -> Value {
    use pi_compat::fake_server::{FakeToolCall, Reply};
    let node = node22().expect("node 22");
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "read", r#"{"path":"notes.txt"}"#)]));
    sb.server().set_fallback(Reply::text("done"));
    crate::extension_host::host_settings(&sb, &node, &repo_root().join("target/tools/extension-host"), json!({}));
    crate::extension_host::write_module(&sb, "user.ts", &MARKING_EXTENSION.replace("NAME", "user"));
    let cli = sb.home.path().join("cli.ts");
    std::fs::write(&cli, MARKING_EXTENSION.replace("NAME", "cli")).expect("cli extension");
    let mut pi = spawn_either(&sb, &node, reference, &["-e", &cli.display().to_string()]);
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    let names: Vec<Value> = commands["data"]["commands"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|c| c["name"].as_str().is_some_and(|n| n.ends_with("-cmd")))
                .map(|c| c["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    let lines = pi.until_type("agent_settled").await;
    pi.close_stdin();
    let blocked = crate::mcp::result_text(crate::mcp::result(&crate::mcp::results(&lines), "c1"));
    let first = sb.server().requests().first().map(|r| r.body.to_string()).unwrap_or_default();
    json!({
        "commands": names,
        "input": order_in(&first, &["<cli>", "<user>"]),
        "systemPrompt": order_in(&first, &["[cli]", "[user]"]),
        "blocked": blocked,
    })
}

#[tokio::test]
async fn command_line_extensions_run_before_the_discovered_ones_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let (ours, theirs) = tokio::join!(observe(false), observe(true));
    assert_eq!(ours["commands"], json!(["cli-cmd", "user-cmd"]), "{ours}");
    assert_eq!(ours["input"], json!(["<cli>", "<user>"]), "{ours}");
    assert_eq!(ours["systemPrompt"], json!(["[cli]", "[user]"]), "{ours}");
    assert!(ours["blocked"].as_str().is_some_and(|t| t.contains("blocked by cli")), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}
