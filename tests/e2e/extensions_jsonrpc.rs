//! The extension UI sub-protocol in the JSON-RPC dialect: `extension:ui`
//! notifications carrying a correlation `id`, answered with
//! `extension:response` (notification or request; with the id, or without it
//! when exactly one dialog is open), plus a timed-out and a cancelled dialog.

use serde_json::{Value, json};

use crate::extensions::spawn_demo;
use crate::harness::{Pi, Sandbox};

fn req(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Read until the `extension:ui` notification of this method.
async fn ui(pi: &mut Pi, method: &str) -> Value {
    let lines = pi.until(|v| v["method"] == "extension:ui" && v["params"]["method"] == method).await;
    lines.into_iter().last().map(|v| v["params"].clone()).unwrap_or(Value::Null)
}

async fn summary(pi: &mut Pi) -> Value {
    let lines = pi
        .until(|v| {
            v["method"] == "extension:ui"
                && v["params"]["data"]["message"].as_str().is_some_and(|m| m.starts_with("summary "))
        })
        .await;
    let message = lines.last().and_then(|v| v["params"]["data"]["message"].as_str()).unwrap_or_default().to_string();
    serde_json::from_str(message.trim_start_matches("summary ")).unwrap_or(Value::Null)
}

#[tokio::test]
async fn every_ui_method_round_trips_over_json_rpc() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(req(json!(1), "prompt", json!({"content": "/demo-ui"}))).await;

    let select = ui(&mut pi, "select").await;
    assert_eq!(select["extension"], "demo");
    assert_eq!(select["type"], "dialog");
    assert_eq!(select["data"], json!({"title": "Pick one", "options": ["A", "B"]}));
    pi.send(notification("extension:response", json!({"id": select["id"], "result": "B"}))).await;

    // The request form gets a result.
    let confirm = ui(&mut pi, "confirm").await;
    assert_eq!(confirm["data"]["message"], "Really do it?");
    pi.send(req(json!("r1"), "extension:response", json!({"id": confirm["id"], "result": true}))).await;
    let lines = pi.until(|v| v["id"] == "r1").await;
    assert_eq!(lines.last().unwrap()["result"], json!({}));

    // Without an id: the only open dialog.
    let input = ui(&mut pi, "input").await;
    assert_eq!(input["data"]["placeholder"], "type a name");
    pi.send(notification("extension:response", json!({"result": "Ada"}))).await;

    // Cancelled.
    let editor = ui(&mut pi, "editor").await;
    assert_eq!(editor["data"]["prefill"], "Line 1\nLine 2");
    pi.send(notification("extension:response", json!({"id": editor["id"], "cancelled": true}))).await;

    let notify = ui(&mut pi, "notify").await;
    assert_eq!(
        (notify["type"].clone(), notify["data"].clone()),
        (json!("notify"), json!({"message": "dialogs done", "notifyType": "warning"}))
    );
    let status = ui(&mut pi, "setStatus").await;
    assert_eq!(status["data"], json!({"statusKey": "demo", "statusText": "ready"}));
    let widget = ui(&mut pi, "setWidget").await;
    assert_eq!(widget["data"]["widgetLines"], json!(["line 1", "line 2"]));
    assert_eq!(ui(&mut pi, "setTitle").await["data"], json!({"title": "pi demo"}));
    assert_eq!(ui(&mut pi, "set_editor_text").await["data"], json!({"text": "prefilled by demo"}));
    assert_eq!(
        summary(&mut pi).await,
        json!({"select": "B", "confirm": true, "input": "Ada", "editor": null, "editorText": ""})
    );
    let lines = pi.until(|v| v["id"] == 1).await;
    assert_eq!(lines.last().unwrap()["result"], json!({"accepted": true, "disposition": "handled"}));

    // A request for a dialog that is not open is an error; a notification is ignored.
    pi.send(notification("extension:response", json!({"id": "gone", "result": "x"}))).await;
    pi.send(req(json!("r2"), "extension:response", json!({"id": "gone", "result": "x"}))).await;
    let lines = pi.until(|v| v["id"] == "r2").await;
    let error = &lines.last().unwrap()["error"];
    assert!(error["message"].as_str().unwrap().contains("No pending extension dialog"), "{error}");
}

#[tokio::test]
async fn dialogs_time_out_over_json_rpc() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(req(json!(1), "prompt", json!({"content": "/demo-ui timeout=150"}))).await;
    let select = ui(&mut pi, "select").await;
    assert_eq!(select["data"]["timeout"], 150);
    assert_eq!(
        summary(&mut pi).await,
        json!({"select": null, "confirm": false, "input": null, "editor": null, "editorText": ""})
    );
    let lines = pi.until(|v| v["id"] == 1).await;
    assert_eq!(lines.last().unwrap()["result"]["disposition"], "handled");

    // Failing commands surface as `extension:error`.
    pi.send(req(json!(2), "prompt", json!({"content": "/demo-fail"}))).await;
    let lines = pi.until(|v| v["id"] == 2).await;
    let error = lines.iter().find(|v| v["method"] == "extension:error").expect("extension:error");
    assert_eq!(error["params"]["extensionPath"], "command:demo-fail");
}
