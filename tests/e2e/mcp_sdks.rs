//! MCP end to end with the official Python SDK over streamable HTTP
//! (tests/mcp/python_server.py on the PyPI `mcp` package, installed into
//! target/tools/mcp-python) and `@modelcontextprotocol/server-memory` over
//! stdio: codemode cancels the calls a script leaves running (the server sees
//! `notifications/cancelled` at once), `isError` results and failed nested
//! calls are reported as pi 1.6.0 reports them, the resource tools' details,
//! and a server that goes away mid-call.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::harness::Sandbox;
use crate::mcp::{Servers, repo_root, result, result_text, results, write_mcp};

/// The Python SDK installed by scripts/install-mcp-servers.sh, or None (skip).
fn python_sdk() -> Option<PathBuf> {
    let dir = repo_root().join("target/tools/mcp-python");
    if dir.join(".installed").exists() {
        return Some(dir);
    }
    if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("the Python MCP SDK is not installed: run scripts/install-mcp-servers.sh");
    }
    eprintln!("SKIP: the Python MCP SDK is not installed (scripts/install-mcp-servers.sh)");
    None
}

/// The Python test server over streamable HTTP on 127.0.0.1; its port.
async fn start_python_server(sdk: &Path, events: &Path) -> (tokio::process::Child, u16) {
    let mut child = tokio::process::Command::new("python3")
        .arg(repo_root().join("tests/mcp/python_server.py"))
        .env("PYTHONPATH", sdk)
        .env("EVENTS_FILE", events)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python MCP server");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(port) = line.strip_prefix("LISTENING ") {
                return port.trim().parse::<u16>().ok();
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the Python MCP server listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// The server's `cancelled <label> <time>` line, waiting up to a second for it.
async fn cancelled_at(events: &Path, label: &str) -> Option<f64> {
    for _ in 0..20 {
        let text = std::fs::read_to_string(events).unwrap_or_default();
        let prefix = format!("cancelled {label} ");
        if let Some(t) = text.lines().find_map(|l| l.strip_prefix(&prefix)) {
            return t.parse().ok();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

fn calls(result: &Value) -> Vec<Value> {
    result["details"]["calls"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn codemode_cancels_the_calls_a_script_leaves_running() {
    let Some(sdk) = python_sdk() else { return };
    let sb = Sandbox::with_server().await;
    let events = sb.home.path().join("events.txt");
    let (_server, port) = start_python_server(&sdk, &events).await;
    write_mcp(&sb, json!({"py": {"url": format!("http://127.0.0.1:{port}/mcp")}}));
    // The script starts a slow call and ends once two quick calls are back
    // (so the slow one is surely running on the server).
    let ended = "tools.mcp__py__slow({seconds: 30, label: 'left'});\n\
                 await tools.mcp__py__echo({text: 'a'});\n\
                 await tools.mcp__py__echo({text: 'b'});\n\
                 return 'done'";
    let timed_out = "// @options: {\"timeout_ms\": 800}\n\
                     await tools.mcp__py__slow({seconds: 30, label: 'late'});\n\
                     return 'never'";
    let failing = "const r = await tools.mcp__py__fail({message: 'no such widget'});\nreturn r.isError";
    sb.server().push(Reply::tool_call("c1", "codemode", &json!({"code": ended}).to_string()));
    sb.server().push(Reply::tool_call("c2", "codemode", &json!({"code": timed_out}).to_string()));
    sb.server().push(Reply::tool_call("c3", "codemode", &json!({"code": failing}).to_string()));
    sb.server().push(Reply::text("done"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "use mcp"})).await;

    let mut seen = pi.until(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c1").await;
    let c1_end = now();
    let cancel = cancelled_at(&events, "left").await.expect("the server saw the cancellation");
    assert!((cancel - c1_end).abs() < 0.5, "cancelled at {cancel}, script result at {c1_end}");
    seen.extend(pi.until(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c2").await);
    let c2_end = now();
    let cancel = cancelled_at(&events, "late").await.expect("the server saw the timeout's cancellation");
    assert!((cancel - c2_end).abs() < 0.5, "cancelled at {cancel}, script result at {c2_end}");
    seen.extend(pi.until_type("agent_settled").await);
    let rs = results(&seen);

    let c1 = result(&rs, "c1");
    assert_eq!(c1["isError"], false, "{c1}");
    assert!(result_text(c1).ends_with("Output:\n\ndone"), "{}", result_text(c1));
    let statuses: Vec<(String, String)> = calls(c1)
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["status"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("mcp__py__slow".to_string(), "cancelled".to_string()),
            ("mcp__py__echo".to_string(), "ok".to_string()),
            ("mcp__py__echo".to_string(), "ok".to_string())
        ]
    );
    let c2 = result(&rs, "c2");
    assert_eq!(c2["isError"], true);
    let c2_end = seen.iter().find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c2").unwrap();
    assert_eq!(c2_end["result"]["isError"], true, "a failed script's result says so, as pi's");
    assert!(calls(c2)[0].get("error").is_none(), "a cancelled call names no error: {c2}");
    assert!(result_text(c2).contains("timed out"), "{}", result_text(c2));
    assert_eq!(calls(c2)[0]["status"], "cancelled", "{c2}");
    assert!(calls(c2)[0]["durationMs"].as_f64().unwrap() < 5000.0);
    let c3 = result(&rs, "c3");
    assert!(result_text(c3).ends_with("Output:\n\ntrue"), "the script gets the result: {}", result_text(c3));
    assert_eq!(calls(c3)[0]["status"], "error", "{c3}");
    assert!(calls(c3)[0]["error"].as_str().unwrap().contains("no such widget"), "{c3}");

    // Neither slow call ran to its end.
    let log = std::fs::read_to_string(&events).unwrap();
    assert!(log.contains("started left") && log.contains("started late"), "{log}");
    assert!(!log.contains("finished"), "{log}");
    pi.close_stdin();
    assert!(pi.wait().await.success());
}

#[tokio::test]
async fn error_results_resource_details_and_a_server_that_goes_away() {
    let Some(sdk) = python_sdk() else { return };
    let sb = Sandbox::with_server().await;
    let events = sb.home.path().join("events.txt");
    let (mut server, port) = start_python_server(&sdk, &events).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    write_mcp(&sb, json!({"py": {"url": url, "exposure": "direct"}}));
    sb.server().push(Reply::tool_calls([
        FakeToolCall::new("c1", "mcp__py__fail", r#"{"message":"the widget is broken"}"#),
        FakeToolCall::new("c2", "read_mcp_resource", r#"{"server":"py","uri":"memo://note"}"#),
        FakeToolCall::new("c3", "list_mcp_resources", "{}"),
        FakeToolCall::new("c4", "list_mcp_resources", r#"{"server":"py"}"#),
        FakeToolCall::new("c5", "read_mcp_resource", r#"{"server":"nope","uri":"memo://note"}"#),
    ]));
    sb.server().push(Reply::tool_call("c6", "mcp__py__stop_server", "{}"));
    // Asked a moment after the server's end: a call sent while its process
    // still tears down its sockets may meet a connection closed mid-request
    // instead of a refused one.
    sb.server().push(Reply::tool_call("c7", "mcp__py__echo", r#"{"text":"anyone?"}"#).delay_ms(500));
    sb.server().push(Reply::text("done"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    let end =
        |id: &str| lines.iter().find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == id).cloned().unwrap();

    // An `isError` result: an error for the model, `result.isError` in the event.
    let c1 = end("c1");
    assert_eq!(c1["isError"], true);
    assert_eq!(c1["result"]["isError"], true, "{c1}");
    assert_eq!(c1["result"]["details"], json!({"server": "py", "tool": "fail"}));
    assert!(result_text(result(&rs, "c1")).ends_with("the widget is broken"), "{}", result_text(result(&rs, "c1")));
    assert!(end("c2")["result"].get("isError").is_none(), "only results that say so carry it");

    assert_eq!(result_text(result(&rs, "c2")), "remember the milk");
    assert_eq!(result(&rs, "c2")["details"], json!({"server": "py", "tool": "read_mcp_resource"}));
    assert_eq!(result(&rs, "c3")["details"], json!({"server": "", "tool": "list_mcp_resources"}));
    let listed: Value = serde_json::from_str(&result_text(result(&rs, "c3"))).unwrap();
    assert_eq!(listed["resources"][0]["server"], "py");
    assert_eq!(listed["resources"][0]["uri"], "memo://note");
    assert_eq!(result(&rs, "c4")["details"], json!({"server": "py", "tool": "list_mcp_resources"}));
    let unknown = result(&rs, "c5");
    assert_eq!(unknown["isError"], true);
    assert!(result_text(unknown).contains("\"nope\"") && result_text(unknown).contains("py"), "{unknown}");

    // The server ends in the middle of a call, then cannot be reached: plain
    // errors, no Rust type names.
    let stopped = result_text(result(&rs, "c6"));
    let unreachable = result_text(result(&rs, "c7"));
    assert_eq!(result(&rs, "c6")["isError"], true);
    assert_eq!(result(&rs, "c7")["isError"], true);
    for text in [&stopped, &unreachable] {
        assert!(!text.is_empty() && !text.contains("rmcp::") && !text.contains("Transport ["), "{text}");
    }
    assert!(unreachable.starts_with("cannot reach the MCP server: error sending request"), "{unreachable}");
    assert!(unreachable.contains("Connection refused"), "{unreachable}");
    let _ = server.wait().await;
    pi.close_stdin();
    assert!(pi.wait().await.success());
}

#[tokio::test]
async fn server_memory_over_stdio_through_codemode() {
    let Some(srv) = Servers::find() else { return };
    let script = srv.modules.join("@modelcontextprotocol/server-memory/dist/index.js");
    if !script.exists() {
        if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("server-memory not installed: run scripts/install-mcp-servers.sh");
        }
        return;
    }
    let sb = Sandbox::with_server().await;
    let memory = sb.home.path().join("memory.jsonl");
    write_mcp(&sb, json!({"memory": {"command": srv.node, "args": [script], "env": {"MEMORY_FILE_PATH": memory}}}));
    let code = "await tools.mcp__memory__create_entities({entities: [{name: 'pi-rpc', entityType: 'agent', observations: ['written in Rust']}]});\n\
                await tools.mcp__memory__add_observations({observations: [{entityName: 'pi-rpc', contents: ['speaks ACP']}]});\n\
                const found = await tools.mcp__memory__search_nodes({query: 'ACP'});\n\
                return found.structuredContent.entities.map(e => e.name + ': ' + e.observations.join(', ')).join('\\n')";
    sb.server().push(Reply::tool_call("c1", "codemode", &json!({"code": code}).to_string()));
    sb.server().push(Reply::tool_call("c2", "codemode", r#"{"code":"return (await tools.mcp__memory__open_nodes({names: ['nobody']})).structuredContent.entities.length"}"#));
    sb.server().push(Reply::text("done"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "remember"})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    let c1 = result(&rs, "c1");
    assert!(result_text(c1).ends_with("Output:\n\npi-rpc: written in Rust, speaks ACP"), "{}", result_text(c1));
    assert!(calls(c1).iter().all(|c| c["status"] == "ok"), "{c1}");
    assert!(result_text(result(&rs, "c2")).ends_with("Output:\n\n0"));
    assert!(std::fs::read_to_string(&memory).unwrap().contains("speaks ACP"), "the server kept it");
    pi.close_stdin();
    assert!(pi.wait().await.success());
}
