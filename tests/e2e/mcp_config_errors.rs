//! `mcp.json` errors as pi 1.6.0 reports them in its start-up warning,
//! side by side: a file that is not JSON with V8's `JSON.parse` message,
//! one file after the other (the global file's entries before the
//! project's reading error), a project override whose merged entry is
//! invalid named by the project file, two enabled names of one namespace,
//! and an empty `command`, which is taken and fails as it starts (`/mcp`).
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::extension_builtin_factories::start;
use crate::harness::Sandbox;

/// One program's start-up warning with these `mcp.json` texts (the
/// project's trusted), then what `/mcp` says of the server `empty`.
async fn reported(reference: bool, global: &str, project: &str) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    std::fs::write(sb.agent_dir.path().join("mcp.json"), global).expect("global mcp.json");
    let dir = sb.cwd.path().join(".pi");
    std::fs::create_dir_all(&dir).expect("project dir");
    std::fs::write(dir.join("mcp.json"), project).expect("project mcp.json");
    let mut pi = start(&sb, reference, &["--approve"])?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
    let warning = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    // The servers have tried to start by then.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    pi.send(json!({"id": "m", "type": "prompt", "message": "/mcp"})).await;
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.contains("empty"))).await;
    let listed = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    pi.close_stdin();
    let agent_dir = sb.agent_dir.path().display().to_string();
    let cwd = sb.cwd.path().display().to_string();
    let clean = |text: &str| text.replace(&agent_dir, "<agent>").replace(&cwd, "<cwd>");
    let empty: Vec<String> =
        clean(&listed).lines().skip_while(|l| !l.starts_with("empty")).take(2).map(str::to_string).collect();
    Some(json!({"warning": clean(&warning), "empty": empty}))
}

/// The global file: an invalid entry, two enabled names of one namespace,
/// an empty `command`, and a server the project overrides.
const GLOBAL: &str = r#"{"mcpServers": {
  "slow": {"command": "x", "timeout": 0},
  "c-d": {"command": "", "enabled": true},
  "c_d": {"command": ""},
  "empty": {"command": ""},
  "internal": {"command": "", "enabled": false}
}}"#;

#[tokio::test]
async fn mcp_json_errors_are_reported_as_in_pi() {
    // A project file that is not JSON, after the global file's entries.
    let broken = "{\n  \"mcpServers\": {\n    \"x\": nope\n  }\n}\n";
    // A project override whose merged entry is invalid, and one that is valid.
    let overriding = r#"{"mcpServers": {"internal": {"exposure": "sometimes"}}}"#;
    for project in [broken, overriding] {
        let Some(ours) = reported(false, GLOBAL, project).await else { return };
        let warning = ours["warning"].as_str().unwrap_or_default();
        let slow = warning.find("server \"slow\"").unwrap_or(usize::MAX);
        let clash = warning.find("server \"c_d\" conflicts with \"c-d\"").unwrap_or(usize::MAX);
        assert!(slow < clash && clash < usize::MAX, "{warning}");
        assert!(!warning.contains("\"command\" is empty"), "{warning}");
        if project == broken {
            let not_json = "<cwd>/.pi/mcp.json: Unexpected token 'o', ";
            assert!(warning.find(not_json).is_some_and(|at| at > clash), "after the global entries: {warning}");
        } else {
            let named = "<cwd>/.pi/mcp.json: server \"internal\": exposure must be one of";
            assert!(warning.contains(named), "{warning}");
        }
        let Some(theirs) = reported(true, GLOBAL, project).await else { return };
        assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    }
}
