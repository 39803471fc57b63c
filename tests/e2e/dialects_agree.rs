//! The same scenario through both dialects yields the same session file and
//! the same final state: the core is really shared.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Sandbox, read_jsonl};

fn script(sb: &Sandbox) {
    let s = sb.server();
    s.push(Reply::tool_call("call_1", "write", r#"{"path":"out.txt","content":"hello"}"#).usage(50, 10, 0));
    s.push(Reply::text("Wrote it.").usage(70, 5, 0));
}

/// Replace what legitimately differs between two runs.
fn normalize(mut v: Value) -> Value {
    match &mut v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                match k.as_str() {
                    "id" | "parentId" | "timestamp" | "sessionId" | "sessionFile" | "cwd" | "leafId"
                    | "firstKeptEntryId" | "baseUrl" | "durationMs" => {
                        if !val.is_null() {
                            *val = json!("<var>");
                        }
                    }
                    _ => *val = normalize(val.take()),
                }
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = normalize(item.take());
            }
        }
        _ => {}
    }
    v
}

#[tokio::test]
async fn native_and_jsonrpc_runs_write_the_same_session() {
    // Native.
    let a = Sandbox::with_server().await;
    script(&a);
    let mut pi = a.spawn(&[]);
    pi.send(json!({"type": "prompt", "message": "write hello to out.txt"})).await;
    pi.until_type("agent_settled").await;
    pi.call("n", json!({"type": "set_session_name", "name": "shared core"})).await;
    let state_a = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    let file_a = state_a["sessionFile"].as_str().unwrap().to_string();
    pi.close_stdin();
    assert!(pi.wait().await.success());

    // JSON-RPC.
    let b = Sandbox::with_server().await;
    script(&b);
    let mut pi = b.spawn(&[]);
    pi.send(json!({"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"content": "write hello to out.txt"}}))
        .await;
    pi.until(|v| v["method"] == "turnEnd").await;
    pi.send(json!({"jsonrpc": "2.0", "id": 2, "method": "setSessionName", "params": {"name": "shared core"}})).await;
    pi.until(|v| v["id"] == 2).await;
    pi.send(json!({"jsonrpc": "2.0", "id": 3, "method": "getState", "params": {}})).await;
    let state_b = pi.until(|v| v["id"] == 3).await.pop().unwrap()["result"].clone();
    let file_b = state_b["sessionFile"].as_str().unwrap().to_string();
    pi.close_stdin();
    assert!(pi.wait().await.success());

    assert_eq!(normalize(state_a), normalize(state_b));
    let lines_a: Vec<Value> = read_jsonl(std::path::Path::new(&file_a)).into_iter().map(normalize).collect();
    let lines_b: Vec<Value> = read_jsonl(std::path::Path::new(&file_b)).into_iter().map(normalize).collect();
    assert_eq!(lines_a.len(), 9, "header, model, thinking, system, user, assistant, tool result, assistant, name");
    assert_eq!(lines_a, lines_b);
    assert_eq!(std::fs::read_to_string(a.cwd.path().join("out.txt")).unwrap(), "hello");
    assert_eq!(std::fs::read_to_string(b.cwd.path().join("out.txt")).unwrap(), "hello");
    // The model saw the same requests.
    let bodies = |sb: &Sandbox| sb.server().requests().into_iter().map(|r| normalize(r.body)).collect::<Vec<_>>();
    assert_eq!(bodies(&a).len(), 2);
    let strip_cwd = |v: Vec<Value>, sb: &Sandbox| {
        let cwd = std::fs::canonicalize(sb.cwd.path()).unwrap().display().to_string();
        serde_json::to_string(&v).unwrap().replace(&cwd, "<cwd>")
    };
    assert_eq!(strip_cwd(bodies(&a), &a), strip_cwd(bodies(&b), &b));
}
