//! Start-up configuration: broken files, flags, the system prompt, queue modes.

use pi_compat::fake_server::Reply;
use serde_json::json;

use crate::harness::Sandbox;

#[tokio::test]
async fn a_broken_config_file_is_a_clear_startup_error_and_a_broken_models_json_is_reported() {
    let sb = Sandbox::offline();
    std::fs::write(sb.agent_dir.path().join("settings.json"), "{ \"steeringMode\": ").unwrap();
    let mut pi = sb.spawn(&[]);
    assert_eq!(pi.wait().await.code(), Some(1));
    let err = pi.stderr();
    assert!(err.contains("settings.json") && err.contains("invalid JSON"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    std::fs::remove_file(sb.agent_dir.path().join("settings.json")).unwrap();
    // A models.json provider that cannot be set up is no stop, as in pi: the
    // session starts without it, and stderr says why in pi's words.
    std::fs::write(sb.agent_dir.path().join("models.json"), r#"{"providers":{"x":{"models":[{"id":"m"}]}}}"#).unwrap();
    let mut pi = sb.spawn(&["--no-session"]);
    let state = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["success"], true, "{state}");
    pi.close_stdin();
    assert_eq!(pi.wait().await.code(), Some(0));
    assert!(pi.stderr().contains(r#"Provider "x": Provider x, model m: no "api" specified"#), "{}", pi.stderr());

    std::fs::remove_file(sb.agent_dir.path().join("models.json")).unwrap();
    let mut pi = sb.spawn(&["--model", "no-such-model"]);
    assert_eq!(pi.wait().await.code(), Some(1));
    assert!(pi.stderr().contains("Model \"no-such-model\" not found"), "{}", pi.stderr());
}

#[tokio::test]
async fn help_and_version() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi")).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), env!("CARGO_PKG_VERSION"), "the bare number, as pi");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi")).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--mode", "--protocol", "--model", "--no-session", "--session-dir", "--continue", "--tools", "--name"]
    {
        assert!(help.contains(flag), "{flag} in --help");
    }
}

#[tokio::test]
async fn the_system_prompt_names_tools_cwd_and_context_files() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("ok"));
    std::fs::write(sb.cwd.path().join("AGENTS.md"), "Always answer in haiku.").unwrap();
    std::fs::write(sb.cwd.path().join("extra.md"), "Appended from a file.").unwrap();
    // A name no tool has is ignored, as pi 1.6.0 does (an extension may register it later).
    let mut pi = sb.spawn(&["--no-session", "--tools", "read,teleport,ls", "--append-system-prompt", "extra.md"]);
    pi.send(json!({"type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let body = &sb.server().requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap().to_string();
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(system.contains("- read:") && system.contains("- ls:") && !system.contains("- bash:"), "{system}");
    assert!(system.contains("Always answer in haiku."));
    assert!(system.contains("Appended from a file."));
    let cwd = std::fs::canonicalize(sb.cwd.path()).unwrap();
    assert!(system.contains(&format!("<cwd>\n{}\n</cwd>", cwd.display())), "{system}");
    // pi 1.6.0's sections, in its order.
    let at = |tag: &str| system.find(tag).unwrap_or_else(|| panic!("{tag} in {system}"));
    assert!(at("<tools>") < at("<rules>") && at("<rules>") < at("<addendum>"), "{system}");
    assert!(at("<addendum>") < at("<project_context>") && at("<project_context>") < at("<cwd>"), "{system}");
    assert!(!system.contains("Current date"), "no date line, as pi 1.6.0: {system}");
    let tools: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["read", "ls"]);

    let sb2 = Sandbox::with_server().await;
    sb2.server().push(Reply::text("ok"));
    let mut pi = sb2.spawn(&["--no-session", "--no-tools", "--system-prompt", "You are a test."]);
    pi.send(json!({"type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let body = &sb2.server().requests()[0].body;
    assert!(body["messages"][0]["content"].as_str().unwrap().starts_with("You are a test."));
    assert!(body.get("tools").is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())), "{body}");
}

#[tokio::test]
async fn steering_mode_all_delivers_every_queued_message_in_one_turn() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["a", "b", "c"]).delay_ms(150));
    sb.server().push(Reply::text("both seen"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.call("m", json!({"type": "set_steering_mode", "mode": "all"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until(|v| v["type"] == "message_update").await;
    pi.call("s1", json!({"type": "steer", "message": "one"})).await;
    pi.call("s2", json!({"type": "steer", "message": "two"})).await;
    let st = pi.call("st", json!({"type": "get_state"})).await;
    assert_eq!(st["data"]["isStreaming"], true);
    assert_eq!(st["data"]["pendingMessageCount"], 2);
    pi.until_type("agent_settled").await;
    let reqs = sb.server().requests();
    assert_eq!(reqs.len(), 2, "both steering messages went in one turn");
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["role"], "user");
    assert!(msgs[n - 2]["content"].to_string().contains("one"));
    assert!(msgs[n - 1]["content"].to_string().contains("two"));
}
