//! Native dialect: a text prompt end to end, offline and against the fake server.

use pi_compat::fake_server::Reply;
use serde_json::json;

use crate::harness::{Sandbox, types};

#[tokio::test]
async fn a_text_prompt_streams_the_seed_event_sequence() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["Hello", " world", "!"]).usage(100, 20, 0));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p1", "type": "prompt", "message": "Hi there"})).await;
    let lines = pi.until_type("agent_settled").await;
    let t = types(&lines);
    assert_eq!(
        t,
        [
            "response",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled"
        ],
        "{lines:#?}"
    );
    assert_eq!(
        lines[0],
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true, "data": {"disposition": "started"}})
    );
    // The first run of a session declares the prompt and tools (pi 1.6.0).
    assert_eq!(lines[3]["message"]["role"], "system");
    assert_eq!(lines[4]["message"]["role"], "system");
    let user = &lines[5]["message"];
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"], json!([{"type": "text", "text": "Hi there"}]));
    let updates: Vec<_> = lines.iter().filter(|l| l["type"] == "message_update").collect();
    for u in &updates {
        assert!(u.get("message").is_none(), "no cumulative message copy: {u}");
        assert!(u["assistantMessageEvent"].get("partial").is_none(), "no partial: {u}");
    }
    assert_eq!(updates[0]["assistantMessageEvent"], json!({"type": "text_start", "contentIndex": 0}));
    assert_eq!(updates[1]["assistantMessageEvent"], json!({"type": "text_delta", "contentIndex": 0, "delta": "Hello"}));
    assert_eq!(
        updates[4]["assistantMessageEvent"],
        json!({"type": "text_end", "contentIndex": 0, "content": "Hello world!"})
    );
    let assistant = &lines[13]["message"];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], json!([{"type": "text", "text": "Hello world!"}]));
    assert_eq!(assistant["api"], "openai-completions");
    assert_eq!(assistant["provider"], "fake");
    assert_eq!(assistant["model"], "fake-model");
    assert_eq!(assistant["stopReason"], "stop");
    assert_eq!(assistant["usage"]["input"], 100);
    assert_eq!(assistant["usage"]["output"], 20);
    let cost = assistant["usage"]["cost"]["total"].as_f64().unwrap();
    assert!((cost - (100.0 * 3.0 + 20.0 * 15.0) / 1e6).abs() < 1e-12, "{cost}");
    assert_eq!(lines[14]["toolResults"], json!([]));
    assert_eq!(lines[15]["willRetry"], false);
    assert_eq!(lines[15]["messages"].as_array().unwrap().len(), 3, "system, user, assistant");
    assert_eq!(lines[16], json!({"type": "agent_settled", "aborted": false}));

    let req = &sb.server().requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer test-key-123"));
    assert_eq!(req.body["model"], "fake-model");
    assert_eq!(req.body["stream"], true);
}

#[tokio::test]
async fn offline_faux_serves_a_piped_prompt_and_exits_zero() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&[]);
    pi.send(json!({"type": "prompt", "message": "hi"})).await;
    pi.close_stdin();
    let lines = pi.drain().await;
    let t = types(&lines);
    assert_eq!(t.first().map(String::as_str), Some("response"));
    assert_eq!(t.last().map(String::as_str), Some("agent_settled"), "{lines:#?}");
    let end = lines.iter().find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant").unwrap();
    assert_eq!(end["message"]["provider"], "faux");
    assert!(!end["message"]["content"][0]["text"].as_str().unwrap().is_empty());
    assert!(pi.wait().await.success());
    assert!(pi.stderr().contains("faux"), "stderr says the faux model is used: {}", pi.stderr());
    // The session was written where pi writes sessions.
    assert_eq!(sb.session_files().len(), 1);
}
