//! The ACP bridge editors use today: `acpx` (a headless ACP client) runs
//! `pi-acp`, which runs pi-rpc in the native dialect (`--mode rpc
//! --no-themes`, found through `PI_ACP_PI_COMMAND`). Both npm packages are
//! installed into `target/tools/acp` by `scripts/install-test-tools.sh`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::{installed_tool, node22};
use crate::harness::Sandbox;

struct Bridge {
    node: PathBuf,
    acpx: PathBuf,
    pi_acp: PathBuf,
}

fn bridge() -> Option<Bridge> {
    let node = node22()?;
    let acpx = installed_tool("acp/node_modules/acpx/dist/cli.js")?;
    let pi_acp = installed_tool("acp/node_modules/pi-acp/dist/index.js")?;
    Some(Bridge { node, acpx, pi_acp })
}

impl Bridge {
    /// `acpx --approve-all --format json <agent args…> exec <prompt>` in the
    /// sandbox; the NDJSON lines it printed.
    async fn exec(&self, sb: &Sandbox, agent: &[&str], prompt: &str) -> Vec<Value> {
        self.exec_with(sb, Path::new(env!("CARGO_BIN_EXE_pi")), agent, prompt).await
    }

    /// [`Bridge::exec`] with pi-acp running this `pi`.
    async fn exec_with(&self, sb: &Sandbox, pi: &Path, agent: &[&str], prompt: &str) -> Vec<Value> {
        let node_dir = self.node.parent().unwrap_or(Path::new("/"));
        let mut cmd = tokio::process::Command::new(&self.node);
        cmd.arg(&self.acpx).args(["--approve-all", "--format", "json"]).args(agent).args(["exec", prompt]);
        cmd.current_dir(sb.cwd.path()).env_clear();
        // No `pi` and no `npm` on PATH: pi-acp finds pi-rpc through its variable
        // and skips its version check.
        cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir.display()));
        cmd.env("HOME", sb.home.path());
        cmd.env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
        cmd.env("PI_ACP_PI_COMMAND", pi);
        cmd.env("PI_OFFLINE", "1");
        cmd.env("RUST_LOG", "error");
        cmd.kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("acpx timed out").unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "acpx failed\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    }

    fn agent_command(&self) -> String {
        format!("{} {}", self.node.display(), self.pi_acp.display())
    }
}

fn updates<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|v| v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == kind)
        .map(|v| &v["params"]["update"])
        .collect()
}

fn message_text(lines: &[Value]) -> String {
    updates(lines, "agent_message_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

fn stop_reason(lines: &[Value]) -> Value {
    lines.iter().rev().find_map(|v| v["result"].get("stopReason").cloned()).unwrap_or(Value::Null)
}

#[tokio::test]
async fn acpx_and_pi_acp_run_a_turn_on_the_faux_model() {
    let Some(bridge) = bridge() else { return };
    let sb = Sandbox::offline();
    let agent = bridge.agent_command();
    let lines = bridge.exec(&sb, &["--agent", &agent], "hello over ACP").await;
    let new_session = lines.iter().find(|v| v["result"]["sessionId"].is_string()).expect("session/new result");
    assert_eq!(new_session["result"]["configOptions"][0]["currentValue"], "faux/faux-1");
    assert!(message_text(&lines).contains("You said: hello over ACP"), "{lines:?}");
    assert!(updates(&lines, "usage_update").iter().any(|u| u["used"].as_u64() > Some(0)), "context usage reported");
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

/// A tool call round trip on the fake model server through `acpx pi`, the
/// agent taken from a project `.acpxrc.json` (replacing acpx's built-in
/// `npx pi-acp`); the ACP lines and the sandbox.
async fn tool_round_trip(bridge: &Bridge, pi: &Path) -> (Vec<Value>, Sandbox) {
    let sb = Sandbox::with_server().await;
    // Fixed usage: the fake server's default counts the request, and the two
    // programs' system prompts differ.
    sb.server().push(Reply::tool_call("call_1", "bash", r#"{"command":"echo acp-tool-ran"}"#).usage(900, 20, 0));
    sb.server().push(Reply::text("The tool said acp-tool-ran.").usage(1000, 12, 0));
    let config = json!({"agents": {"pi": {"argv": [bridge.node, bridge.pi_acp]}}});
    std::fs::write(sb.cwd.path().join(".acpxrc.json"), config.to_string()).unwrap();
    let lines = bridge.exec_with(&sb, pi, &["pi"], "run the tool").await;
    (lines, sb)
}

#[tokio::test]
async fn acpx_pi_from_a_config_file_runs_a_tool_call_round_trip() {
    let Some(bridge) = bridge() else { return };
    let (lines, sb) = tool_round_trip(&bridge, Path::new(env!("CARGO_BIN_EXE_pi"))).await;
    let calls = updates(&lines, "tool_call");
    assert_eq!(calls.len(), 1, "{lines:?}");
    assert_eq!(calls[0]["toolCallId"], "call_1");
    assert_eq!((calls[0]["title"].as_str(), calls[0]["kind"].as_str()), (Some("echo acp-tool-ran"), Some("execute")));
    let done = updates(&lines, "tool_call_update");
    let output: String =
        done.iter().filter_map(|u| u["_meta"]["terminal_output"]["data"].as_str()).collect::<Vec<_>>().concat();
    assert_eq!(output, "acp-tool-ran\n", "{done:?}");
    let last = done.iter().rfind(|u| u["toolCallId"] == "call_1").expect("tool_call_update");
    assert_eq!(
        (last["status"].as_str(), last["_meta"]["terminal_exit"]["exit_code"].as_i64()),
        (Some("completed"), Some(0))
    );
    assert!(message_text(&lines).contains("The tool said acp-tool-ran."));
    assert_eq!(stop_reason(&lines), json!("end_turn"));
    let requests = sb.server().requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("acp-tool-ran"), "the tool result went back to the model");
}

/// The `session/update` stream, without what differs between two runs.
fn comparable_updates(lines: &[Value], sb: &Sandbox) -> Vec<String> {
    let cwd = sb.cwd.path().display().to_string();
    lines
        .iter()
        .filter(|v| v["method"] == "session/update")
        .map(|v| v["params"]["update"].to_string().replace(&cwd, "<cwd>"))
        .collect()
}

#[tokio::test]
async fn pi_acp_streams_the_same_updates_on_pi_1_6_0() {
    let Some(bridge) = bridge() else { return };
    let Some(reference) = installed_tool("reference/node_modules/.bin/pi") else { return };
    let (ours, sb_ours) = tool_round_trip(&bridge, Path::new(env!("CARGO_BIN_EXE_pi"))).await;
    let (theirs, sb_theirs) = tool_round_trip(&bridge, &reference).await;
    assert_eq!(stop_reason(&theirs), json!("end_turn"), "the reference ran: {theirs:?}");
    let (ours, theirs) = (comparable_updates(&ours, &sb_ours), comparable_updates(&theirs, &sb_theirs));
    let diff: Vec<String> = similar_lines(&theirs, &ours);
    assert!(diff.is_empty(), "pi 1.6.0 (-) vs pi-rpc (+):\n{}", diff.join("\n"));
}

/// Lines of `a` missing from `b` (`-`) and of `b` missing from `a` (`+`), in order.
fn similar_lines(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let max = a.len().max(b.len());
    for i in 0..max {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                if let Some(x) = x {
                    out.push(format!("- {x}"));
                }
                if let Some(y) = y {
                    out.push(format!("+ {y}"));
                }
            }
        }
    }
    out
}
