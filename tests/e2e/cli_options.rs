//! pi 1.6.0's command line: every option of its `--help` is accepted (the
//! terminal-UI ones ignored), pi's short forms, and what the options with a
//! meaning headless do (`--models`, `--session-id`, `--fork`, tool filters,
//! context files, `--export`, `--list-models`, `--print`, `--mode json`).

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox, read_jsonl};

/// Each option of `pi --help` (1.6.0) with a value where it takes one; all
/// start an RPC server that answers `get_state`.
const SERVER_OPTIONS: &[&[&str]] = &[
    &["--provider", "fake", "--model", "fake-model"],
    &["--model", "fake/fake-model:low"],
    &["--api-key", "k", "--model", "fake/fake-model"],
    &["--system-prompt", "Be brief."],
    &["--append-system-prompt", "one", "--append-system-prompt", "two"],
    &["--continue"],
    &["-c"],
    &["--session-dir", "sessions-here"],
    &["--no-session"],
    &["--name", "named"],
    &["-n", "named"],
    &["--models", "fake/*,fake-other:high"],
    &["--no-tools"],
    &["-nt"],
    &["--no-builtin-tools"],
    &["-nbt"],
    &["--tools", "read,grep"],
    &["-t", "+ls"],
    &["--exclude-tools", "bash"],
    &["-xt", "bash,edit"],
    &["--thinking", "high"],
    &["--extension", "missing-extension.py"],
    &["-e", "missing-extension.py"],
    &["--no-extensions"],
    &["-ne"],
    &["--no-mcp"],
    &["--skill", "skills"],
    &["--no-skills"],
    &["-ns"],
    &["--prompt-template", "prompts"],
    &["--no-prompt-templates"],
    &["-np"],
    &["--theme", "dark.json"],
    &["--use-theme", "dark"],
    &["--no-themes"],
    &["--no-context-files"],
    &["-nc"],
    &["--verbose"],
    &["--tui-mode", "regular"],
    &["--tui-mode", "fullscreen"],
    &["--approve"],
    &["-a"],
    &["--no-approve"],
    &["-na"],
    &["--offline"],
    &["--session-id", "my-session-1"],
];

#[tokio::test]
async fn every_option_of_pi_starts_the_server() {
    let sb = Sandbox::with_server().await;
    for args in SERVER_OPTIONS {
        let mut pi = sb.spawn(args);
        let state = pi.call("s", json!({"type": "get_state"})).await;
        assert_eq!(state["success"], true, "{args:?}: {state}\n{}", pi.stderr());
        pi.close_stdin();
        assert_eq!(pi.wait().await.code(), Some(0), "{args:?}: {}", pi.stderr());
    }
}

/// `activeTools` and `sessionId` through JSON-RPC `getStatus`.
async fn status(pi: &mut Pi) -> Value {
    pi.send(json!({"jsonrpc": "2.0", "id": "st", "method": "getStatus"})).await;
    pi.until(|v| v["id"] == "st").await.pop().expect("getStatus answer")["result"].clone()
}

#[tokio::test]
async fn short_forms_cluster_as_in_pi() {
    let sb = Sandbox::with_server().await;
    // `-nc` is --no-context-files, not `-n c`; `-n x` still names the session.
    let mut pi = sb.spawn(&["--no-session", "-nc", "-nbt", "-xt", "read"]);
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["sessionName"], Value::Null);
    let mut pi = sb.spawn(&["--no-session", "-nbt", "-xt", "read"]);
    assert_eq!(status(&mut pi).await["activeTools"], json!([]));
    let mut pi = sb.spawn(&["--no-session", "-n", "c"]);
    assert_eq!(pi.call("s", json!({"type": "get_state"})).await["data"]["sessionName"], "c");
    // Values may start with a dash, as pi reads them (`-bash` removes bash).
    let mut pi = sb.spawn(&["--no-session", "--tools", "-bash", "--name", "-nc"]);
    assert_eq!(status(&mut pi).await["activeTools"], json!(["read", "edit", "write"]));
    let mut pi = sb.spawn(&["--no-session", "--name", "-nc"]);
    assert_eq!(pi.call("s", json!({"type": "get_state"})).await["data"]["sessionName"], "-nc");
}

#[tokio::test]
async fn unknown_options_are_refused_and_resume_is_explained() {
    let sb = Sandbox::offline();
    // pi 1.6.0 keeps unknown options for extension flags; with no extension to take it: its error, exit 1.
    let (code, _, err) = sb.run(&["--mode", "rpc", "--no-such-option"], "").await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Unknown option: --no-such-option"), "{err}");
    let (code, _, err) = sb.run(&["--mode", "rpc", "--resume"], "").await;
    assert_eq!(code, 1);
    assert!(err.contains("--resume") && err.contains("--session"), "{err}");
    let (code, _, err) = sb.run(&["--mode", "rpc", "--fork", "x", "--continue"], "").await;
    assert_eq!((code, err.trim()), (1, "pi: --fork cannot be combined with --continue"));
    let (code, _, err) = sb.run(&["--mode", "rpc", "--session-id", "-bad-"], "").await;
    assert_eq!(code, 1);
    assert!(err.contains("Session id must be non-empty"), "{err}");
    let (code, _, err) = sb.run(&["--mode", "rpc", "--tui-mode", "sideways"], "").await;
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = sb.run(&["--version"], "").await;
    assert_eq!((code, out.trim()), (0, env!("CARGO_PKG_VERSION")));
    let (code, out, _) = sb.run(&["-v"], "").await;
    assert_eq!((code, out.trim()), (0, env!("CARGO_PKG_VERSION")));
}

#[tokio::test]
async fn models_scope_what_cycle_model_cycles() {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    sb.write_settings(json!({"retry": {"baseDelayMs": 20}}));
    let mut pi = sb.spawn(&["--no-session", "--models", "fake-other,fake/fake-model:high"]);
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["model"]["id"], "fake-other", "the scope's first model starts");
    let cycled = pi.call("c", json!({"type": "cycle_model"})).await["data"].clone();
    assert_eq!(cycled["model"]["id"], "fake-model");
    assert_eq!((cycled["isScoped"].clone(), cycled["thinkingLevel"].clone()), (json!(true), json!("high")));
    let cycled = pi.call("c2", json!({"type": "cycle_model"})).await["data"].clone();
    assert_eq!((cycled["model"]["id"].clone(), cycled["isScoped"].clone()), (json!("fake-other"), json!(true)));
    // As in pi, the settings' default model starts when it is in the scope.
    sb.write_settings(json!({"defaultProvider": "fake", "defaultModel": "fake-model"}));
    let mut pi = sb.spawn(&["--no-session", "--models", "fake-other,fake/fake-model:high"]);
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!((state["model"]["id"].clone(), state["thinkingLevel"].clone()), (json!("fake-model"), json!("high")));
    // Without --models, cycling is over every available model and not scoped.
    let mut pi = sb.spawn(&["--no-session"]);
    assert_eq!(pi.call("c", json!({"type": "cycle_model"})).await["data"]["isScoped"], false);
}

#[tokio::test]
async fn session_id_creates_then_reopens_and_fork_copies() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("first answer"));
    let mut pi = sb.spawn(&["--session-id", "proj-42"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["sessionId"], "proj-42");
    let file = state["sessionFile"].as_str().unwrap().to_string();
    pi.close_stdin();
    pi.wait().await;

    let mut pi = sb.spawn(&["--session-id", "proj-42"]);
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!((state["sessionFile"].as_str(), state["messageCount"].clone()), (Some(file.as_str()), json!(3)));
    pi.close_stdin();
    pi.wait().await;

    let mut pi = sb.spawn(&["--fork", "proj-42", "--session-id", "proj-43"]);
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!((state["sessionId"].clone(), state["messageCount"].clone()), (json!("proj-43"), json!(3)));
    let forked = read_jsonl(std::path::Path::new(state["sessionFile"].as_str().unwrap()));
    assert_eq!(forked[0]["parentSession"], file.as_str());
    pi.close_stdin();
    pi.wait().await;
    let (code, _, err) = sb.run(&["--mode", "rpc", "--fork", "proj-42", "--session-id", "proj-43"], "").await;
    assert_eq!(code, 1);
    assert!(err.contains("Session already exists with id 'proj-43'"), "{err}");
}

#[tokio::test]
async fn tool_filters_and_context_files_shape_the_request() {
    let sb = Sandbox::with_server().await;
    std::fs::write(sb.cwd.path().join("AGENTS.md"), "Project rule: answer in haiku.").unwrap();
    for _ in 0..2 {
        sb.server().push(Reply::text("ok"));
    }
    let mut pi = sb.spawn(&["--no-session", "--exclude-tools", "bash,w*"]);
    assert_eq!(status(&mut pi).await["activeTools"], json!(["read", "edit"]));
    pi.send(json!({"jsonrpc": "2.0", "id": "t", "method": "setActiveTools", "params": {"tools": ["bash"]}})).await;
    let refused = pi.until(|v| v["id"] == "t").await.pop().unwrap();
    assert_eq!(refused["error"]["code"], -32602, "an excluded tool cannot come back: {refused}");
    pi.send(json!({"jsonrpc": "2.0", "id": "p", "method": "prompt", "params": {"content": "hi"}})).await;
    pi.until(|v| v["method"] == "turnEnd").await;
    let mut pi = sb.spawn(&["--no-session", "--no-context-files"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    let system = |i: usize| requests[i].body["messages"][0]["content"].as_str().unwrap_or_default().to_string();
    let tools: Vec<String> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].to_string()).collect();
    assert_eq!(tools, ["\"read\"", "\"edit\""]);
    assert!(system(0).contains("answer in haiku"), "context files are loaded by default");
    assert!(!system(1).contains("answer in haiku"), "--no-context-files: {}", system(1));
}

#[tokio::test]
async fn export_and_list_models_print_and_exit() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("exported answer"));
    let mut pi = sb.spawn(&[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
    let file = pi.call("s", json!({"type": "get_state"})).await["data"]["sessionFile"].as_str().unwrap().to_string();
    pi.close_stdin();
    pi.wait().await;
    let (code, out, err) = sb.run(&["--export", &file, "out.html"], "").await;
    assert_eq!((code, out.trim()), (0, "Exported to: out.html"), "{err}");
    let html = std::fs::read_to_string(sb.cwd.path().join("out.html")).unwrap();
    assert!(html.contains("exported answer"));
    let (code, _, err) = sb.run(&["--export", "nope.jsonl"], "").await;
    assert_eq!(code, 1);
    assert!(err.contains("File not found"), "{err}");

    let (code, out, _) = sb.run(&["--list-models"], "").await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("provider  model ") && lines[0].contains("context  max-out  thinking  images"));
    assert!(lines[1].starts_with("fake      fake-model  128K     16.4K"), "{out}");
    let (_, out, _) = sb.run(&["--list-models", "other"], "").await;
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("fake-other") && !out.contains("fake-model"), "{out}");
}

#[tokio::test]
async fn print_mode_prints_the_final_text() {
    let sb = Sandbox::with_server().await;
    std::fs::write(sb.cwd.path().join("notes.txt"), "the notes").unwrap();
    sb.server().push(Reply::text("first"));
    sb.server().push(Reply::text("Final answer."));
    let (code, out, err) = sb.run(&["--no-session", "-p", "@notes.txt", "one", "two"], "from stdin").await;
    assert_eq!((code, out.as_str()), (0, "Final answer.\n"), "{err}");
    let requests = sb.server().requests();
    let first = requests[0].body["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(first.contains("from stdin") && first.contains("the notes") && first.contains("one"), "{first}");
    assert!(requests[1].body.to_string().contains("two"));

    sb.server().push(Reply::openai_error(400, "bad request", "invalid_request_error"));
    let (code, out, err) = sb.run(&["--no-session", "-p", "fail"], "").await;
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("bad request"), "{err}");
}

#[tokio::test]
async fn json_mode_streams_the_header_and_every_event() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("json answer"));
    let (code, out, err) = sb.run(&["--mode", "json", "hello"], "").await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines[0]["type"], "session");
    assert!(lines[0]["id"].is_string() && lines[0]["cwd"].is_string());
    assert_eq!(lines[1]["type"], "agent_start");
    assert!(lines.iter().any(|v| v["type"] == "message_update"));
    assert_eq!(lines.last().unwrap()["type"], "agent_settled");
    let end = lines.iter().rfind(|v| v["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["content"][0]["text"], "json answer");
}

#[tokio::test]
async fn claude_sonnet_4_resolves_as_in_pi_with_an_anthropic_key() {
    let sb = Sandbox::offline();
    let mut cmd = sb.command(&["--mode", "rpc", "--no-session", "--model", "claude-sonnet-4"]);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-test");
    let mut pi = Pi::start(cmd);
    let model = pi.call("s", json!({"type": "get_state"})).await["data"]["model"].clone();
    assert_eq!((model["provider"].as_str(), model["id"].as_str()), (Some("anthropic"), Some("claude-sonnet-4-6")));
    // Without any key, pi's resolver (with this catalog, see
    // crates/config/src/config/testdata/model_resolution.json) picks Amazon Bedrock's model.
    let mut pi = Pi::start(sb.command(&["--mode", "rpc", "--no-session", "--model", "claude-sonnet-4"]));
    let model = pi.call("s", json!({"type": "get_state"})).await["data"]["model"].clone();
    assert_eq!(
        (model["provider"].as_str(), model["id"].as_str()),
        (Some("amazon-bedrock"), Some("us.anthropic.claude-sonnet-4-6"))
    );
}

#[tokio::test]
async fn print_mode_cancels_extension_dialogs_instead_of_waiting() {
    let sb = Sandbox::with_server().await;
    let demo = crate::extensions::demo_path();
    let (code, _, err) = sb.run(&["--no-session", "-e", &demo, "-p", "/demo-ask Shall we?"], "").await;
    assert_eq!(code, 0, "{err}");
}
