//! pi-rpc speaking ACP itself (`--protocol acp`, or detected), driven by
//! real ACP clients: the ACP project's TypeScript SDK (an editor-like
//! client in `acp/sdk_client.mjs`: its own buffers, real terminals, a
//! permission policy) and `acpx` (a headless ACP client). Both come from
//! `target/tools/acp`, installed by `scripts/install-test-tools.sh`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::Sandbox;

fn pi() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_pi"))
}

/// node with the sandbox's environment, in its cwd.
fn node_command(sb: &Sandbox, node: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(node);
    cmd.current_dir(sb.cwd.path()).env_clear();
    let node_dir = node.parent().unwrap_or(Path::new("/"));
    cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir.display()));
    cmd.env("HOME", sb.home.path());
    cmd.env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
    cmd.env("RUST_LOG", "error");
    cmd.kill_on_drop(true);
    cmd
}

async fn output(cmd: tokio::process::Command, what: &str) -> String {
    let (stdout, success) = output_status(cmd, what).await;
    assert!(success, "{what} failed\n{stdout}");
    stdout
}

/// stdout and whether the command succeeded (its stderr is logged).
async fn output_status(mut cmd: tokio::process::Command, what: &str) -> (String, bool) {
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output()).await.expect("timed out").expect(what);
    eprintln!("{what} stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.success())
}

struct Sdk {
    node: PathBuf,
    dir: PathBuf,
}

fn sdk() -> Option<Sdk> {
    let node = node22()?;
    let dir = installed_tool("acp/node_modules/@agentclientprotocol/sdk")?;
    Some(Sdk { node, dir })
}

impl Sdk {
    /// Run the SDK client with these prompts (or `--load <id>`); its report.
    async fn run(&self, sb: &Sandbox, args: &[&str]) -> Value {
        let script = repo_root().join("tests/e2e/acp/sdk_client.mjs");
        let mut cmd = node_command(sb, &self.node);
        cmd.arg(script).arg(&self.dir).arg(pi()).arg(sb.cwd.path()).args(args);
        let stdout = output(cmd, "the SDK client").await;
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

fn methods(report: &Value) -> Vec<String> {
    report["calls"].as_array().unwrap().iter().map(|c| c[0].as_str().unwrap().to_string()).collect()
}

fn calls<'a>(report: &'a Value, method: &str) -> Vec<&'a Value> {
    report["calls"].as_array().unwrap().iter().filter(|c| c[0] == method).map(|c| &c[1]).collect()
}

fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["updates"].as_array().unwrap().iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

#[tokio::test]
async fn the_acp_sdk_client_gets_edits_as_file_writes_bash_as_terminals_and_rejections_respected() {
    let Some(sdk) = sdk() else { return };
    let sb = Sandbox::with_server().await;
    let cwd = sb.cwd.path().to_path_buf();
    std::fs::write(cwd.join("notes.txt"), "hello disk\n").unwrap();
    let server = sb.server();
    let edit = json!({"path": "notes.txt", "edits": [{"oldText": "unsaved buffer", "newText": "edited buffer"}]});
    server.push(Reply::tool_call("call_edit", "edit", &edit.to_string()));
    server.push(Reply::text("Edited."));
    server.push(Reply::tool_call("call_bash", "bash", r#"{"command":"echo from-the-terminal"}"#));
    server.push(Reply::text("Ran it."));
    server.push(Reply::tool_call("call_secret", "write", r#"{"path":"secret.txt","content":"leak"}"#));
    server.push(Reply::text("Not written."));
    let report = sdk.run(&sb, &["edit the notes", "run the command", "write the secret"]).await;

    assert_eq!(report["init"]["protocolVersion"], 1);
    assert_eq!(report["results"], json!(["end_turn", "end_turn", "end_turn"]), "{report}");
    // The edit read the editor's buffer and landed in the editor, not on disk.
    let notes = cwd.join("notes.txt").display().to_string();
    assert!(calls(&report, "fs/read_text_file").iter().any(|p| p["path"] == notes.as_str()), "{report}");
    let writes = calls(&report, "fs/write_text_file");
    assert_eq!(writes.len(), 1, "{report}");
    assert_eq!(
        (writes[0]["path"].as_str(), writes[0]["content"].as_str()),
        (Some(notes.as_str()), Some("hello edited buffer\n"))
    );
    assert_eq!(std::fs::read_to_string(cwd.join("notes.txt")).unwrap(), "hello disk\n");
    // bash ran in a client terminal, and its output went back to the model.
    let created = calls(&report, "terminal/create");
    assert_eq!(created.len(), 1, "{report}");
    assert!(created[0].to_string().contains("echo from-the-terminal"), "{report}");
    assert!(methods(&report).contains(&"terminal/release".to_string()), "{report}");
    // Each changing call asked first; the rejected write never ran.
    let asked: Vec<&str> = calls(&report, "session/request_permission")
        .iter()
        .filter_map(|p| p["toolCall"]["toolCallId"].as_str())
        .collect();
    assert_eq!(asked, ["call_edit", "call_bash", "call_secret"]);
    assert!(!cwd.join("secret.txt").exists());
    assert!(!report["buffers"].as_object().unwrap().keys().any(|k| k.ends_with("secret.txt")), "{report}");
    let ends: Vec<(&str, &str)> = updates(&report, "tool_call_update")
        .iter()
        .filter_map(|u| Some((u["toolCallId"].as_str()?, u["status"].as_str()?)))
        .filter(|(_, s)| *s == "completed" || *s == "failed")
        .collect();
    assert_eq!(ends, [("call_edit", "completed"), ("call_bash", "completed"), ("call_secret", "failed")], "{report}");
    let calls_seen: Vec<&str> = updates(&report, "tool_call").iter().filter_map(|u| u["kind"].as_str()).collect();
    assert_eq!(calls_seen, ["edit", "execute", "edit"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    assert!(requests[3].body.to_string().contains("from-the-terminal"), "the terminal's output reached the model");
    let rejected = requests[5].body.to_string();
    assert!(rejected.contains("call_secret") && rejected.to_lowercase().contains("reject"), "{rejected}");

    // A second connection loads the session: the conversation is replayed.
    let id = report["sessionId"].as_str().unwrap().to_string();
    let listed = report["listed"]["sessions"].as_array().unwrap();
    assert!(listed.iter().any(|s| s["sessionId"] == id.as_str()), "{report}");
    let loaded = sdk.run(&sb, &["--load", &id]).await;
    let users: Vec<String> = updates(&loaded, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(users, ["edit the notes", "run the command", "write the secret"], "{loaded}");
    let agent: String =
        updates(&loaded, "agent_message_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect();
    assert!(agent.contains("Edited.") && agent.contains("Not written."), "{agent}");
}

struct Acpx {
    node: PathBuf,
    cli: PathBuf,
}

fn acpx() -> Option<Acpx> {
    Some(Acpx { node: node22()?, cli: installed_tool("acp/node_modules/acpx/dist/cli.js")? })
}

impl Acpx {
    /// `acpx <flags> --format json --agent '<pi> <agent args>' exec <prompt>`:
    /// the NDJSON it printed, and whether it exited with success (acpx fails
    /// the run when it denied a permission).
    async fn exec(&self, sb: &Sandbox, flags: &[&str], agent_args: &str, prompt: &str) -> (Vec<Value>, bool) {
        let mut cmd = node_command(sb, &self.node);
        let agent = format!("{} {agent_args}", pi().display()).trim().to_string();
        cmd.arg(&self.cli).args(flags).args(["--format", "json", "--agent", &agent, "exec", prompt]);
        let (stdout, success) = output_status(cmd, "acpx").await;
        let lines = stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
        (lines, success)
    }
}

fn stop_reason(lines: &[Value]) -> Value {
    lines.iter().rev().find_map(|v| v["result"].get("stopReason").cloned()).unwrap_or(Value::Null)
}

fn acpx_updates<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|v| v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == kind)
        .map(|v| &v["params"]["update"])
        .collect()
}

#[tokio::test]
async fn acpx_drives_pi_rpc_directly_on_the_faux_model() {
    let Some(acpx) = acpx() else { return };
    let sb = Sandbox::offline();
    // No --protocol: the first record (ACP `initialize`) picks the dialect.
    let (lines, success) = acpx.exec(&sb, &["--approve-all"], "", "hello straight over ACP").await;
    assert!(success, "{lines:?}");
    let text: String =
        acpx_updates(&lines, "agent_message_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect();
    assert!(text.contains("You said: hello straight over ACP"), "{lines:?}");
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn acpx_runs_a_tool_call_with_approvals_on_the_fake_model_server() {
    let Some(acpx) = acpx() else { return };
    for (flags, approved) in [(&["--approve-all"][..], true), (&["--deny-all"][..], false)] {
        let sb = Sandbox::with_server().await;
        sb.server().push(Reply::tool_call("call_1", "bash", r#"{"command":"echo acpx-approved > made.txt"}"#));
        sb.server().push(Reply::text("Done."));
        let (lines, success) = acpx.exec(&sb, flags, "--protocol acp", "run it").await;
        assert!(success || !approved, "{lines:?}");
        assert_eq!(stop_reason(&lines), json!("end_turn"), "{lines:?}");
        let asked = lines.iter().any(|v| v["method"] == "session/request_permission");
        assert!(asked, "acpx was asked: {lines:?}");
        assert_eq!(sb.cwd.path().join("made.txt").exists(), approved, "{flags:?}: {lines:?}");
        let status = acpx_updates(&lines, "tool_call_update")
            .iter()
            .rev()
            .find_map(|u| u["status"].as_str())
            .map(str::to_string);
        assert_eq!(status.as_deref(), Some(if approved { "completed" } else { "failed" }));
        assert!(sb.server().requests()[1].body.to_string().contains("call_1"));
    }
}
