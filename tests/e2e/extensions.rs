//! Extensions end to end: the example extension (`examples/extensions/demo.py`)
//! registering commands (run by `prompt`, also while streaming), a tool the
//! model calls, a `session_before_switch` / `session_before_fork` cancel, a
//! blocked tool call; every UI method through the native dialect (answered,
//! timed out, cancelled); and misbehaving extensions (crash, hang, garbage,
//! no registration) that are reported and isolated while the session goes on.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox, types};

/// The example extension the README documents.
pub fn demo_path() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/extensions/demo.py").to_string()
}

/// Write a Python extension into the sandbox; returns its path.
pub fn write_script(sb: &Sandbox, name: &str, body: &str) -> String {
    let path = sb.home.path().join(name);
    std::fs::write(&path, body).expect("write extension");
    path.display().to_string()
}

/// Start pi with the demo extension (and `extra` arguments).
pub fn spawn_demo(sb: &Sandbox, extra: &[&str]) -> Pi {
    let demo = demo_path();
    let mut args = vec!["--no-session", "-e", demo.as_str()];
    args.extend_from_slice(extra);
    sb.spawn(&args)
}

/// Read until the UI request of this method; returns it.
pub async fn ui_request(pi: &mut Pi, method: &str) -> Value {
    let lines = pi.until(|v| v["type"] == "extension_ui_request" && v["method"] == method).await;
    lines.into_iter().last().unwrap_or(Value::Null)
}

async fn answer(pi: &mut Pi, request: &Value, answer: Value) {
    let mut line = json!({"type": "extension_ui_response", "id": request["id"]});
    if let (Value::Object(l), Value::Object(a)) = (&mut line, answer) {
        l.extend(a);
    }
    pi.send(line).await;
}

/// The `summary {…}` notification of `/demo-ui`, parsed.
async fn demo_summary(pi: &mut Pi) -> Value {
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with("summary "))).await;
    let message = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    serde_json::from_str(message.trim_start_matches("summary ")).unwrap_or(Value::Null)
}

/// The text of each user message the model received in request `n`.
pub fn user_texts(sb: &Sandbox, n: usize) -> Vec<String> {
    let req = &sb.server().requests()[n];
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
            other => other.to_string(),
        })
        .collect()
}

fn tool_texts(sb: &Sandbox, n: usize) -> Vec<String> {
    let req = &sb.server().requests()[n];
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().map_or_else(|| m["content"].to_string(), str::to_string))
        .collect()
}

#[tokio::test]
async fn demo_command_asks_the_user_and_answers_before_its_response() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(json!({"id": "a", "type": "prompt", "message": "/demo-ask Shall we?"})).await;
    let confirm = ui_request(&mut pi, "confirm").await;
    assert_eq!(confirm["title"], "Proceed?");
    assert_eq!(confirm["message"], "Shall we?");
    assert!(confirm["id"].as_str().is_some_and(|id| id.len() == 36), "a UUID: {confirm}");
    answer(&mut pi, &confirm, json!({"confirmed": true})).await;
    let select = ui_request(&mut pi, "select").await;
    assert_eq!(select["options"], json!(["red", "green", "blue"]));
    assert!(select.get("timeout").is_none());
    answer(&mut pi, &select, json!({"value": "green"})).await;
    let input = ui_request(&mut pi, "input").await;
    assert_eq!(input["placeholder"], "type something...");
    answer(&mut pi, &input, json!({"value": "Ada"})).await;
    let lines = pi.until(|v| v["type"] == "response").await;
    let notify = lines.iter().find(|v| v["method"] == "notify").expect("notify before the response");
    assert_eq!(notify["message"], "color=green name=Ada");
    assert_eq!(notify["notifyType"], "info");
    let response = lines.last().unwrap();
    assert_eq!(response["id"], "a");
    assert_eq!(response["data"], json!({"disposition": "handled"}));
    assert_eq!(sb.server().request_count(), 0, "a command is not sent to the model");

    // steer and follow_up refuse extension commands; unknown /names go to the model.
    let steer = pi.call("s", json!({"type": "steer", "message": "/demo-ask"})).await;
    assert_eq!(steer["success"], false);
    assert_eq!(
        steer["error"],
        "Extension command \"/demo-ask\" cannot be queued. Use prompt() or execute the command when not streaming."
    );
    let follow = pi.call("f", json!({"type": "follow_up", "message": "/demo-say x"})).await;
    assert_eq!(follow["success"], false);
    // A failing command is reported, and the prompt still counts as handled.
    let fail = pi.call("x", json!({"type": "prompt", "message": "/demo-fail"})).await;
    assert_eq!(fail["data"]["disposition"], "handled");
    let err = pi.transcript.iter().rev().find(|l| l.contains("extension_error")).cloned().unwrap_or_default();
    let err: Value = serde_json::from_str(&err).unwrap();
    assert_eq!(
        err,
        json!({"type": "extension_error", "extensionPath": "command:demo-fail", "event": "command", "error": "demo-fail always fails"})
    );
}

#[tokio::test]
async fn commands_run_at_once_while_streaming_and_can_steer_the_run() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["one ", "two ", "three ", "four"]).delay_ms(400));
    sb.server().push(Reply::text("after steer"));
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "first"})).await;
    pi.until(|v| v["type"] == "message_update").await;
    pi.send(json!({"id": "c", "type": "prompt", "message": "/demo-say steered in"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "c").await;
    assert_eq!(lines.last().unwrap()["data"]["disposition"], "handled");
    assert!(!types(&lines).contains(&"agent_end".to_string()), "handled while the run streams");
    let queued = lines.iter().find(|v| v["type"] == "queue_update").expect("queue_update");
    assert_eq!(queued["steering"], json!(["steered in"]));
    let rest = pi.until_type("agent_settled").await;
    assert_eq!(rest.iter().filter(|v| v["type"] == "agent_end").count(), 1, "steered within the same run");
    assert_eq!(sb.server().request_count(), 2);
    assert_eq!(user_texts(&sb, 1).last().map(String::as_str), Some("steered in"));

    // A custom message while idle is appended (no run); it reaches the model next time.
    let note = pi.call("n", json!({"type": "prompt", "message": "/demo-note remember this"})).await;
    assert_eq!(note["data"]["disposition"], "handled");
    let custom = pi.transcript.iter().rev().find(|l| l.contains("\"message_end\"")).cloned().unwrap_or_default();
    let custom: Value = serde_json::from_str(&custom).unwrap();
    assert_eq!(custom["message"]["role"], "custom");
    assert_eq!(custom["message"]["customType"], "demo-note");
    pi.call("q", json!({"type": "prompt", "message": "next"})).await;
    pi.until_type("agent_settled").await;
    let texts = user_texts(&sb, 2);
    assert!(texts.iter().any(|t| t == "remember this"), "{texts:?}");
}

#[tokio::test]
async fn the_model_calls_an_extension_tool() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::tool_call("t1", "demo_upper", r#"{"text":"shout this"}"#));
    sb.server().push(Reply::text("done"));
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "use the tool"})).await;
    let lines = pi.until_type("agent_settled").await;
    let first = &sb.server().requests()[0];
    let tools: Vec<&str> =
        first.body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(tools.contains(&"demo_upper"), "{tools:?}");
    let system = first.body["messages"][0]["content"].as_str().unwrap_or_default().to_string();
    assert!(!system.contains("demo_upper"), "extension tools are not listed in the prompt's tool list");
    let update = lines.iter().find(|v| v["type"] == "tool_execution_update").expect("partial update");
    assert_eq!(update["partialResult"]["content"][0]["text"], "working...");
    let end = lines.iter().find(|v| v["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], false);
    assert_eq!(end["result"]["content"][0]["text"], "SHOUT THIS");
    assert_eq!(end["result"]["details"], json!({"length": 10}));
    assert_eq!(tool_texts(&sb, 1), ["SHOUT THIS"]);
    // Events reach subscribers: turn_end updates a status entry (asynchronously).
    let status = |v: &Value| v["method"] == "setStatus" && v["statusKey"] == "demo-turns";
    if !lines.iter().any(status) {
        pi.until(status).await;
    }
}

#[tokio::test]
async fn a_tool_call_handler_blocks_dangerous_bash() {
    let sb = Sandbox::with_server().await;
    std::fs::write(sb.cwd.path().join("keep.txt"), "precious").unwrap();
    sb.server().push(Reply::tool_call("b1", "bash", r#"{"command":"rm -rf keep.txt"}"#));
    sb.server().push(Reply::tool_call("b2", "bash", r#"{"command":"echo fine"}"#));
    sb.server().push(Reply::text("ok"));
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "clean up"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(sb.cwd.path().join("keep.txt").exists(), "the blocked command did not run");
    let ends: Vec<&Value> = lines.iter().filter(|v| v["type"] == "tool_execution_end").collect();
    assert_eq!(ends[0]["isError"], true);
    let reason = "Blocked by the demo extension: rm -rf is not allowed";
    assert_eq!(ends[0]["result"]["content"][0]["text"], reason);
    assert_eq!(ends[1]["isError"], false);
    assert_eq!(tool_texts(&sb, 1), [reason]);
    assert!(tool_texts(&sb, 2)[1].contains("fine"));
}

#[tokio::test]
async fn session_hooks_cancel_switches_and_forks() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    pi.call("p", json!({"type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
    let forks = pi.call("fm", json!({"type": "get_fork_messages"})).await;
    let entry = forks["data"]["messages"][0]["entryId"].as_str().unwrap().to_string();

    pi.call("g", json!({"type": "prompt", "message": "/demo-guard on"})).await;
    let new = pi.call("n1", json!({"type": "new_session"})).await;
    assert_eq!(new["data"], json!({"cancelled": true}));
    let fork = pi.call("f1", json!({"type": "fork", "entryId": entry})).await;
    assert_eq!(fork["data"], json!({"text": "hello", "cancelled": true}));
    let clone = pi.call("c1", json!({"type": "clone"})).await;
    assert_eq!(clone["data"], json!({"cancelled": true}));
    let state = pi.call("st", json!({"type": "get_messages"})).await;
    assert_eq!(
        state["data"]["messages"].as_array().unwrap().len(),
        3,
        "still the same session (system, user, assistant)"
    );

    // `ask`: the hook asks the user; ops sent meanwhile wait for the decision.
    pi.call("g2", json!({"type": "prompt", "message": "/demo-guard ask"})).await;
    pi.send(json!({"id": "n2", "type": "new_session"})).await;
    let confirm = ui_request(&mut pi, "confirm").await;
    assert_eq!(confirm["title"], "Allow session switch?");
    pi.send(json!({"id": "s2", "type": "get_state"})).await;
    answer(&mut pi, &confirm, json!({"confirmed": false})).await;
    let lines = pi.until(|v| v["id"] == "s2").await;
    let n2 = lines.iter().find(|v| v["id"] == "n2").expect("new_session answered before the later get_state");
    assert_eq!(n2["data"], json!({"cancelled": true}));

    pi.send(json!({"id": "n3", "type": "new_session"})).await;
    let confirm = ui_request(&mut pi, "confirm").await;
    answer(&mut pi, &confirm, json!({"confirmed": true})).await;
    assert_eq!(pi.response("n3").await["data"], json!({"cancelled": false}));
    let state = pi.call("st2", json!({"type": "get_messages"})).await;
    assert_eq!(state["data"]["messages"], json!([]), "a new session");

    pi.call("g3", json!({"type": "prompt", "message": "/demo-guard off"})).await;
    assert_eq!(pi.call("n4", json!({"type": "new_session"})).await["data"], json!({"cancelled": false}));
}

#[tokio::test]
async fn every_ui_method_round_trips_natively() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    pi.send(json!({"id": "u", "type": "prompt", "message": "/demo-ui"})).await;
    let select = ui_request(&mut pi, "select").await;
    assert_eq!((select["title"].clone(), select["options"].clone()), (json!("Pick one"), json!(["A", "B"])));
    answer(&mut pi, &select, json!({"value": "B"})).await;
    let confirm = ui_request(&mut pi, "confirm").await;
    assert_eq!(confirm["message"], "Really do it?");
    answer(&mut pi, &confirm, json!({"confirmed": true})).await;
    let input = ui_request(&mut pi, "input").await;
    assert_eq!(input["placeholder"], "type a name");
    answer(&mut pi, &input, json!({"value": "Ada"})).await;
    let editor = ui_request(&mut pi, "editor").await;
    assert_eq!(editor["prefill"], "Line 1\nLine 2");
    answer(&mut pi, &editor, json!({"value": "edited"})).await;

    let notify = ui_request(&mut pi, "notify").await;
    assert_eq!((notify["message"].clone(), notify["notifyType"].clone()), (json!("dialogs done"), json!("warning")));
    let status = ui_request(&mut pi, "setStatus").await;
    assert_eq!((status["statusKey"].clone(), status["statusText"].clone()), (json!("demo"), json!("ready")));
    let widget = ui_request(&mut pi, "setWidget").await;
    assert_eq!(widget["widgetLines"], json!(["line 1", "line 2"]));
    assert_eq!(widget["widgetPlacement"], "belowEditor");
    assert_eq!(ui_request(&mut pi, "setTitle").await["title"], "pi demo");
    assert_eq!(ui_request(&mut pi, "set_editor_text").await["text"], "prefilled by demo");
    let summary = demo_summary(&mut pi).await;
    assert_eq!(
        summary,
        json!({"select": "B", "confirm": true, "input": "Ada", "editor": "edited", "editorText": ""}),
        "getEditorText returns \"\" in RPC mode"
    );
    assert_eq!(pi.response("u").await["data"]["disposition"], "handled");
}

#[tokio::test]
async fn dialogs_time_out_or_are_cancelled_with_pi_defaults() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    // Timed out: nobody answers; each dialog resolves with its default.
    pi.send(json!({"id": "t", "type": "prompt", "message": "/demo-ui timeout=150"})).await;
    let select = ui_request(&mut pi, "select").await;
    assert_eq!(select["timeout"], 150);
    let summary = demo_summary(&mut pi).await;
    assert_eq!(summary, json!({"select": null, "confirm": false, "input": null, "editor": null, "editorText": ""}));
    assert_eq!(pi.response("t").await["data"]["disposition"], "handled");
    // A late answer (and one for an unknown id) is consumed silently.
    answer(&mut pi, &select, json!({"value": "A"})).await;
    pi.send(json!({"type": "extension_ui_response", "id": "nope", "cancelled": true})).await;
    let state = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["success"], true);

    // Cancelled: every dialog dismissed.
    pi.send(json!({"id": "c", "type": "prompt", "message": "/demo-ui"})).await;
    for method in ["select", "confirm", "input", "editor"] {
        let request = ui_request(&mut pi, method).await;
        assert!(request.get("timeout").is_none());
        answer(&mut pi, &request, json!({"cancelled": true})).await;
    }
    let summary = demo_summary(&mut pi).await;
    assert_eq!(summary, json!({"select": null, "confirm": false, "input": null, "editor": null, "editorText": ""}));
}

#[tokio::test]
async fn a_crashing_extension_is_reported_and_isolated() {
    let sb = Sandbox::with_server().await;
    let crash = write_script(
        &sb,
        "crashy.py",
        r#"import json, sys
print(json.dumps({"type": "register", "name": "crashy",
    "commands": [{"name": "boom", "description": "exits"}],
    "tools": [{"name": "crashy_tool", "description": "d", "parameters": {"type": "object", "properties": {}}}]}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "request" and m.get("method") == "command":
        print("about to crash", file=sys.stderr, flush=True)
        sys.exit(3)
"#,
    );
    let demo = demo_path();
    let mut pi = sb.spawn(&["--no-session", "-e", &crash, "-e", &demo]);
    let commands = pi.call("c0", json!({"type": "get_commands"})).await;
    assert!(commands["data"]["commands"].as_array().unwrap().iter().any(|c| c["name"] == "boom"));
    pi.send(json!({"id": "b", "type": "prompt", "message": "/boom"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "b").await;
    assert_eq!(lines.last().unwrap()["data"]["disposition"], "handled");
    let error = lines.iter().find(|v| v["type"] == "extension_error").expect("extension_error");
    assert_eq!(error["extensionPath"], crash.as_str());
    assert_eq!(error["event"], "command");
    let text = error["error"].as_str().unwrap();
    assert!(text.contains("exited") && text.contains("about to crash"), "{text}");

    // Its commands and tools are gone; the other extension and the session go on.
    let commands = pi.call("c1", json!({"type": "get_commands"})).await;
    let names: Vec<&str> =
        commands["data"]["commands"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert!(!names.contains(&"boom") && names.contains(&"demo-ask"), "{names:?}");
    pi.call("p", json!({"type": "prompt", "message": "still here?"})).await;
    pi.until_type("agent_settled").await;
    let tools: Vec<String> = sb.server().requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(!tools.contains(&"crashy_tool".to_string()) && tools.contains(&"demo_upper".to_string()), "{tools:?}");
}

#[tokio::test]
async fn a_hanging_extension_times_out_and_is_stopped() {
    let sb = Sandbox::with_server().await;
    sb.write_settings(json!({
        "defaultProvider": "fake", "defaultModel": "fake-model", "retry": {"baseDelayMs": 20},
        "extensionTimeoutMs": 400
    }));
    let hang = write_script(
        &sb,
        "hang.py",
        r#"import json, sys, time
print(json.dumps({"type": "register", "name": "hang",
    "commands": [{"name": "stall"}], "events": ["tool_call"]}), flush=True)
for line in sys.stdin:
    pass  # reads everything, answers nothing
time.sleep(60)
"#,
    );
    sb.server().push(Reply::tool_call("c1", "bash", r#"{"command":"echo hi"}"#));
    sb.server().push(Reply::text("ok"));
    let mut pi = sb.spawn(&["--no-session", "-e", &hang]);
    // A hook that never answers: the call fails closed after the timeout.
    pi.send(json!({"id": "p", "type": "prompt", "message": "run something"})).await;
    let lines = pi.until_type("agent_settled").await;
    let error = lines.iter().find(|v| v["type"] == "extension_error").expect("extension_error");
    assert_eq!(error["event"], "tool_call");
    assert!(error["error"].as_str().unwrap().contains("no answer"), "{error}");
    let end = lines.iter().find(|v| v["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], true);
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().starts_with("Extension failed, blocking execution"));
    // The extension is gone: /stall is no longer a command (the built-in /mcp stays).
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    assert_eq!(
        commands["data"]["commands"].as_array().map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect()),
        Some(vec!["mcp"])
    );
    let state = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["isStreaming"], false);
}

#[tokio::test]
async fn a_hanging_command_is_bounded_by_the_timeout() {
    let sb = Sandbox::with_server().await;
    sb.write_settings(json!({
        "defaultProvider": "fake", "defaultModel": "fake-model", "extensionTimeoutMs": 300
    }));
    let hang = write_script(
        &sb,
        "stall.py",
        r#"import json, sys
print(json.dumps({"type": "register", "commands": [{"name": "stall"}]}), flush=True)
for line in sys.stdin:
    pass
"#,
    );
    let mut pi = sb.spawn(&["--no-session", "-e", &hang]);
    let started = std::time::Instant::now();
    pi.send(json!({"id": "x", "type": "prompt", "message": "/stall"})).await;
    let lines = pi.until(|v| v["id"] == "x").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let error = lines.iter().find(|v| v["type"] == "extension_error").expect("extension_error");
    assert_eq!((error["event"].clone(), error["extensionPath"].clone()), (json!("command"), json!(hang)));
    assert_eq!(lines.last().unwrap()["data"]["disposition"], "handled");
    let after = pi.call("p", json!({"type": "prompt", "message": "/stall"})).await;
    assert_eq!(after["data"]["disposition"], "started", "no longer a command: sent to the model");
    pi.until_type("agent_settled").await;
    assert_eq!(sb.server().requests()[0].last_message_text(), "/stall");
}

#[tokio::test]
async fn garbage_missing_registration_and_bad_paths_are_reported() {
    let sb = Sandbox::with_server().await;
    sb.write_settings(json!({
        "defaultProvider": "fake", "defaultModel": "fake-model", "extensionStartupTimeoutMs": 2000
    }));
    let garbage = write_script(
        &sb,
        "garbage.py",
        r#"import json, sys
print(json.dumps({"type": "register", "commands": [{"name": "noise"}]}), flush=True)
print("this is not json", flush=True)
sys.stdin.read()
"#,
    );
    let silent = write_script(&sb, "silent.py", "import sys\nsys.stdin.read()\n");
    let early = write_script(&sb, "early.py", "import sys\nprint('bye', file=sys.stderr)\nsys.exit(1)\n");
    let mut pi = sb.spawn(&["--no-session", "-e", &garbage, "-e", &silent, "-e", &early, "-e", "missing.py"]);
    // Ops wait until every extension registered or failed.
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["id"] == "s").await;
    let errors: Vec<&Value> = lines.iter().filter(|v| v["type"] == "extension_error").collect();
    let by_path = |p: &str| errors.iter().find(|e| e["extensionPath"] == p).copied().cloned().unwrap_or(Value::Null);
    let g = by_path(&garbage);
    assert_eq!(g["event"], "protocol");
    assert!(g["error"].as_str().unwrap().starts_with("invalid JSON"), "{g}");
    let s = by_path(&silent);
    assert_eq!(s["event"], "startup");
    assert!(s["error"].as_str().unwrap().contains("did not register within 2000 ms of its last sign of life"), "{s}");
    let e = by_path(&early);
    assert_eq!(e["event"], "startup");
    assert!(e["error"].as_str().unwrap().contains("bye"), "{e}");
    let missing = sb.cwd.path().join("missing.py").display().to_string();
    let m = by_path(&missing);
    assert_eq!(m["event"], "load");
    assert!(m["error"].as_str().unwrap().contains("extension not found"), "{m}");
    assert_eq!(lines.last().unwrap()["success"], true);
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    assert_eq!(
        commands["data"]["commands"].as_array().map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect()),
        Some(vec!["mcp"])
    );
    pi.call("p", json!({"type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
}

/// The start-up limit is a limit on silence: an extension that keeps showing
/// signs of life (as pi's TypeScript modules do at each loading step) may take
/// longer than it to register, as a slow start on a loaded machine does; one
/// that writes but never registers is still stopped, at six times the limit.
#[tokio::test]
async fn a_slow_start_with_signs_of_life_is_not_taken_for_a_hang() {
    let sb = Sandbox::with_server().await;
    sb.write_settings(json!({
        "defaultProvider": "fake", "defaultModel": "fake-model", "extensionStartupTimeoutMs": 2000
    }));
    let alive = |n: &str| {
        format!(
            r#"import json, sys, time
for step in range({n}):
    print(json.dumps({{"type": "request", "method": "starting", "params": {{"step": str(step)}}}}), flush=True)
    time.sleep(0.3)
"#
        )
    };
    let slow = write_script(
        &sb,
        "slow.py",
        &format!(
            "{}print(json.dumps({{\"type\": \"register\", \"commands\": [{{\"name\": \"slow\"}}]}}), flush=True)\nsys.stdin.read()\n",
            alive("15")
        ),
    );
    let chatty = write_script(&sb, "chatty.py", &format!("{}sys.stdin.read()\n", alive("1000000")));
    let mut pi = sb.spawn(&["--no-session", "-e", &slow, "-e", &chatty]);
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["id"] == "s").await;
    let errors: Vec<&Value> = lines.iter().filter(|v| v["type"] == "extension_error").collect();
    assert!(!errors.iter().any(|e| e["extensionPath"] == slow.as_str()), "{errors:?}");
    let c = errors.iter().find(|e| e["extensionPath"] == chatty.as_str()).expect("the chatty one is stopped");
    assert_eq!(c["event"], "startup");
    assert!(c["error"].as_str().unwrap().contains("did not register within 12000 ms"), "{c}");
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    let names: Vec<&str> =
        commands["data"]["commands"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert!(names.contains(&"slow"), "{names:?}");
}

#[tokio::test]
async fn end_of_input_cancels_open_dialogs_and_exits() {
    let sb = Sandbox::with_server().await;
    let mut pi = spawn_demo(&sb, &[]);
    pi.call("g", json!({"type": "prompt", "message": "/demo-guard ask"})).await;
    pi.send(json!({"id": "n", "type": "new_session"})).await;
    ui_request(&mut pi, "confirm").await;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    pi.close_stdin();
    // Nobody can answer: the dialog resolves as cancelled, the hook cancels, held ops run.
    let rest = pi.drain().await;
    let n = rest.iter().find(|v| v["id"] == "n").expect("new_session answered");
    assert_eq!(n["data"], json!({"cancelled": true}));
    assert!(rest.iter().any(|v| v["id"] == "s" && v["success"] == true), "{rest:?}");
    assert!(pi.wait().await.success());
}

#[tokio::test]
async fn a_command_name_shared_by_two_extensions_gets_suffixes() {
    let sb = Sandbox::with_server().await;
    let script = |label: &str| {
        format!(
            r#"import json, sys
print(json.dumps({{"type": "register", "name": "{label}", "commands": [{{"name": "dup", "description": "{label}"}}]}}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "request":
        print(json.dumps({{"type": "request", "method": "notify", "params": {{"message": "ran {label}"}}}}), flush=True)
        print(json.dumps({{"type": "response", "id": m["id"], "result": None}}), flush=True)
"#
        )
    };
    let one = write_script(&sb, "one.py", &script("one"));
    let two = write_script(&sb, "two.py", &script("two"));
    let mut pi = sb.spawn(&["--no-session", "-e", &one, "-e", &two]);
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    let names: Vec<&str> =
        commands["data"]["commands"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["dup:1", "dup:2", "mcp"]);
    pi.send(json!({"id": "d", "type": "prompt", "message": "/dup:2"})).await;
    let notify = ui_request(&mut pi, "notify").await;
    assert_eq!(notify["message"], "ran two");
    assert_eq!(pi.response("d").await["data"]["disposition"], "handled");
}

#[tokio::test]
async fn an_awaited_startup_session_start_holds_the_first_prompt() {
    let sb = Sandbox::with_server().await;
    // Asks to be awaited; its session_start answer comes late, after a
    // registration that adds a tool. A second extension gets the notification.
    let awaited = write_script(
        &sb,
        "awaited.py",
        r#"import json, sys, time
reg = {"type": "register", "name": "awaited", "events": ["session_start"], "awaitSessionStart": True}
print(json.dumps(reg), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "request" and m.get("method") == "session_start":
        time.sleep(0.5)
        reg["tools"] = [{"name": "late_tool", "description": m["params"]["reason"],
                         "parameters": {"type": "object", "properties": {}}}]
        print(json.dumps(reg), flush=True)
        time.sleep(0.3)
        print(json.dumps({"type": "response", "id": m["id"], "result": None}), flush=True)
"#,
    );
    let notified = write_script(
        &sb,
        "notified.py",
        r#"import json, sys
print(json.dumps({"type": "register", "name": "notified", "events": ["session_start"]}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "event" and m["event"]["type"] == "session_start":
        print(json.dumps({"type": "request", "method": "notify", "params": {"message": m["event"]["reason"]}}), flush=True)
    elif m.get("type") == "request":
        print(json.dumps({"type": "response", "id": m["id"], "error": "unexpected " + m["method"]}), flush=True)
"#,
    );
    let mut pi = sb.spawn(&["--no-session", "-e", &awaited, "-e", &notified]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(!lines.iter().any(|v| v["type"] == "extension_error"), "{lines:?}");
    let notify = lines.iter().find(|v| v["method"] == "notify").expect("the notification reached the other one");
    assert_eq!(notify["message"], "startup");
    let first = &sb.server().requests()[0].body["tools"];
    let late = first.as_array().unwrap().iter().find(|t| t["function"]["name"] == "late_tool");
    assert_eq!(late.expect("offered on the first request")["function"]["description"], "startup");
}
