//! Native dialect: state, model and setting commands, and the session file.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Sandbox, read_jsonl};

#[tokio::test]
async fn get_state_has_the_seed_fields() {
    let sb = Sandbox::with_server().await;
    let mut pi = sb.spawn(&["--no-session"]);
    let r = pi.call("s", json!({"type": "get_state"})).await;
    let d = &r["data"];
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "model",
            "thinkingLevel",
            "isStreaming",
            "isCompacting",
            "steeringMode",
            "followUpMode",
            "sessionId",
            "autoCompactionEnabled",
            "messageCount",
            "pendingMessageCount"
        ],
        "sessionFile absent with --no-session, sessionName absent until set"
    );
    assert_eq!(d["model"]["id"], "fake-model");
    assert_eq!(d["model"]["provider"], "fake");
    assert_eq!(d["model"]["contextWindow"], 128000);
    assert_eq!(d["thinkingLevel"], "off", "a non-reasoning model stays off");
    assert_eq!(d["steeringMode"], "one-at-a-time");
    assert_eq!(d["isStreaming"], false);
}

#[tokio::test]
async fn models_and_thinking_levels() {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    let mut pi = sb.spawn(&["--no-session"]);
    let r = pi.call("m", json!({"type": "get_available_models"})).await;
    let ids: Vec<_> = r["data"]["models"].as_array().unwrap().iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, [json!("fake-model"), json!("fake-other")]);

    let r = pi.call("l", json!({"type": "get_available_thinking_levels"})).await;
    assert_eq!(r["data"]["levels"], json!(["off", "minimal", "low", "medium", "high"]));
    pi.send(json!({"id": "t", "type": "set_thinking_level", "level": "high"})).await;
    let lines = pi.until(|v| v["id"] == "t").await;
    assert_eq!(lines[0], json!({"type": "thinking_level_changed", "level": "high"}));
    assert_eq!(lines[1]["success"], true);
    // Unsupported levels clamp to the nearest supported one.
    pi.send(json!({"id": "x", "type": "set_thinking_level", "level": "max"})).await;
    let r = pi.response("x").await;
    assert_eq!(r["success"], true);
    let s = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(s["data"]["thinkingLevel"], "high");
    let r = pi.call("c", json!({"type": "cycle_thinking_level"})).await;
    assert_eq!(r["data"], json!({"level": "off"}));

    let r = pi.call("sm", json!({"type": "set_model", "provider": "fake", "modelId": "fake-other"})).await;
    assert_eq!(r["data"]["id"], "fake-other");
    let r = pi.call("bad", json!({"type": "set_model", "provider": "fake", "modelId": "nope"})).await;
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Model not found: fake/nope");
    let r = pi.call("cy", json!({"type": "cycle_model"})).await;
    assert_eq!(r["data"]["model"]["id"], "fake-model");
    assert_eq!(r["data"]["isScoped"], false);
    let r = pi.call("lv", json!({"type": "get_available_thinking_levels"})).await;
    assert_eq!(r["data"]["levels"].as_array().unwrap().len(), 5);
    let r = pi.call("cy2", json!({"type": "cycle_model"})).await;
    assert_eq!(r["data"]["model"]["id"], "fake-other");
    assert_eq!(r["data"]["thinkingLevel"], "off");
}

#[tokio::test]
async fn setters_persist_and_toggle() {
    let sb = Sandbox::with_server().await;
    let mut pi = sb.spawn(&["--no-session"]);
    for (id, cmd) in [
        ("a", json!({"type": "set_steering_mode", "mode": "all"})),
        ("b", json!({"type": "set_follow_up_mode", "mode": "all"})),
        ("c", json!({"type": "set_auto_compaction", "enabled": false})),
        ("d", json!({"type": "set_auto_retry", "enabled": false})),
    ] {
        let r = pi.call(id, cmd).await;
        assert_eq!(r["success"], true, "{r}");
        assert!(r.get("data").is_none());
    }
    let s = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(s["data"]["steeringMode"], "all");
    assert_eq!(s["data"]["followUpMode"], "all");
    assert_eq!(s["data"]["autoCompactionEnabled"], false);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.agent_dir.path().join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["steeringMode"], "all");
    assert_eq!(settings["retry"]["enabled"], false);
    assert_eq!(settings["retry"]["baseDelayMs"], 20, "other settings kept");
}

#[tokio::test]
async fn names_stats_and_last_text() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("  the answer  ").usage(1000, 50, 200));
    let mut pi = sb.spawn(&["--no-session"]);
    let r = pi.call("t0", json!({"type": "get_last_assistant_text"})).await;
    assert_eq!(r["data"], json!({"text": null}));
    let r = pi.call("n0", json!({"type": "set_session_name", "name": "   "})).await;
    assert_eq!(r["error"], "Session name cannot be empty");
    pi.send(json!({"id": "n", "type": "set_session_name", "name": " my work "})).await;
    let lines = pi.until(|v| v["id"] == "n").await;
    assert_eq!(lines[0], json!({"type": "session_info_changed", "name": "my work"}));
    pi.send(json!({"id": "p", "type": "prompt", "message": "q"})).await;
    pi.until_type("agent_settled").await;
    let r = pi.call("t", json!({"type": "get_last_assistant_text"})).await;
    assert_eq!(r["data"], json!({"text": "the answer"}));
    let r = pi.call("st", json!({"type": "get_session_stats"})).await;
    let d = &r["data"];
    assert_eq!(d["userMessages"], 1);
    assert_eq!(d["assistantMessages"], 1);
    assert_eq!(d["totalMessages"], 3, "pi 1.6.0 counts the system message");
    assert_eq!(d["tokens"], json!({"input": 800, "output": 50, "cacheRead": 200, "cacheWrite": 0, "total": 1050}));
    let cost = d["cost"].as_f64().unwrap();
    assert!((cost - (800.0 * 3.0 + 50.0 * 15.0 + 200.0 * 0.3) / 1e6).abs() < 1e-12);
    assert_eq!(d["contextUsage"]["contextWindow"], 128000);
    assert_eq!(d["contextUsage"]["tokens"], 1050);
    let s = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(s["data"]["sessionName"], "my work");
}

#[tokio::test]
async fn the_session_file_records_the_run_and_restores_it() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("first answer"));
    let mut pi = sb.spawn(&["--name", "named"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "remember this"})).await;
    pi.until_type("agent_settled").await;
    let state = pi.call("s", json!({"type": "get_state"})).await;
    let file = state["data"]["sessionFile"].as_str().unwrap().to_string();
    pi.close_stdin();
    assert!(pi.wait().await.success());

    let lines = read_jsonl(std::path::Path::new(&file));
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[0]["cwd"], std::fs::canonicalize(sb.cwd.path()).unwrap().display().to_string());
    let kinds: Vec<&str> = lines[1..].iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session_info", "model_change", "thinking_level_change", "message", "message", "message"]);
    for (i, l) in lines[1..].iter().enumerate() {
        let id = l["id"].as_str().unwrap();
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        let parent = if i == 0 { Value::Null } else { lines[i]["id"].clone() };
        assert_eq!(l["parentId"], parent, "linear parent chain");
    }
    assert_eq!(lines[2]["provider"], "fake");
    assert_eq!(lines[2]["modelId"], "fake-model");
    assert_eq!(lines[4]["message"]["role"], "system");
    assert_eq!(lines[5]["message"]["content"][0]["text"], "remember this");
    assert_eq!(lines[6]["message"]["role"], "assistant");

    // --session <file> restores messages and name; --continue finds it too.
    for args in [vec!["--session", file.as_str()], vec!["--continue"]] {
        let mut pi = sb.spawn(&args);
        let m = pi.call("m", json!({"type": "get_messages"})).await;
        let msgs = m["data"]["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{args:?}");
        assert_eq!(msgs[2]["content"][0]["text"], "first answer");
        let s = pi.call("s", json!({"type": "get_state"})).await;
        assert_eq!(s["data"]["sessionName"], "named");
        assert_eq!(s["data"]["sessionFile"], file.as_str());
    }
    assert_eq!(read_jsonl(std::path::Path::new(&file)).len(), lines.len(), "resuming unchanged appends nothing");
}

#[tokio::test]
async fn new_session_starts_empty_with_a_parent() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("x"));
    let mut pi = sb.spawn(&[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "q"})).await;
    pi.until_type("agent_settled").await;
    let old = pi.call("s", json!({"type": "get_state"})).await["data"]["sessionFile"].clone();
    let r = pi.call("n", json!({"type": "new_session", "parentSession": old})).await;
    assert_eq!(r["data"], json!({"cancelled": false}));
    let s = pi.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(s["data"]["messageCount"], 0);
    assert_ne!(s["data"]["sessionFile"], old);
}
