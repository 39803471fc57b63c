//! Every wire API end to end against the fake server: streamed thinking, text
//! and parallel tool calls become the seed's events and messages; faults are
//! retried as specified; an API key never leaks.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};

/// A sandbox whose models.json has one reasoning model per wire API, all on the fake server.
async fn multi_api_sandbox() -> Sandbox {
    let mut sb = Sandbox::offline();
    let server = pi_compat::fake_server::FakeServer::start().await.expect("fake server");
    let model = |id: &str| json!({"id": id, "reasoning": true, "input": ["text", "image"], "contextWindow": 200000, "maxTokens": 8192, "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}});
    let models = json!({"providers": {
        "fake-anthropic": {"baseUrl": server.url(), "api": "anthropic-messages", "apiKey": "sk-ant-test-secret-1", "models": [model("claude-fake")]},
        "fake-openai": {"baseUrl": server.base_url(), "api": "openai-completions", "apiKey": "sk-oai-test-secret-2", "models": [model("gpt-fake")]},
        "fake-responses": {"baseUrl": server.base_url(), "api": "openai-responses", "apiKey": "sk-resp-test-secret-3", "models": [model("resp-fake")]},
        "fake-google": {"baseUrl": format!("{}/v1beta", server.url()), "api": "google-generative-ai", "apiKey": "goog-test-secret-4", "models": [model("gemini-fake")]}
    }});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).unwrap();
    sb.write_settings(json!({"retry": {"baseDelayMs": 20}}));
    sb.server = Some(server);
    sb
}

fn rich_reply() -> Reply {
    Reply::empty()
        .with_thinking("Let me think about it.")
        .with_text("I will run two tools.")
        .with_tool_call(FakeToolCall::new("call_a", "bash", r#"{"command":"echo one"}"#).pieces(3))
        .with_tool_call(FakeToolCall::new("call_b", "bash", r#"{"command":"echo two"}"#).pieces(2))
        .usage(120, 40, 20)
}

async fn run_prompt(pi: &mut Pi) -> Vec<Value> {
    pi.send(json!({"id": "p", "type": "prompt", "message": "do it"})).await;
    pi.until_type("agent_settled").await
}

#[tokio::test]
async fn every_wire_api_streams_thinking_text_and_parallel_tool_calls() {
    for (provider, model) in [
        ("fake-anthropic", "claude-fake"),
        ("fake-openai", "gpt-fake"),
        ("fake-responses", "resp-fake"),
        ("fake-google", "gemini-fake"),
    ] {
        let sb = multi_api_sandbox().await;
        sb.server().push(rich_reply());
        sb.server().push(Reply::text("Both ran."));
        let mut pi = sb.spawn(&["--no-session", "--model", &format!("{provider}/{model}:high")]);
        let lines = run_prompt(&mut pi).await;
        let kinds: Vec<String> = lines
            .iter()
            .filter(|v| v["type"] == "message_update")
            .map(|v| v["assistantMessageEvent"]["type"].as_str().unwrap().to_string())
            .collect();
        for k in [
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
        ] {
            assert!(kinds.iter().any(|x| x == k), "{provider}: no {k} in {kinds:?}");
        }
        let first = lines.iter().find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant").unwrap();
        let m = &first["message"];
        assert_eq!(m["provider"], provider);
        assert_eq!(m["stopReason"], "toolUse", "{provider}: {m}");
        // Gemini ends with an empty text part, which (as in pi) opens an empty text block.
        let blocks: Vec<&str> = m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| !(b["type"] == "text" && b["text"] == ""))
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(blocks, ["thinking", "text", "toolCall", "toolCall"], "{provider}");
        assert_eq!(m["content"][0]["thinking"], "Let me think about it.");
        assert_eq!(m["content"][2]["arguments"], json!({"command": "echo one"}), "{provider}");
        assert_eq!(m["content"][3]["arguments"], json!({"command": "echo two"}), "{provider}");
        assert!(m["usage"]["output"].as_u64().unwrap() > 0, "{provider}: {}", m["usage"]);
        assert!(m["usage"]["cost"]["total"].as_f64().unwrap() > 0.0, "{provider}");
        let results: Vec<&Value> = lines.iter().filter(|v| v["type"] == "tool_execution_end").collect();
        assert_eq!(results.len(), 2, "{provider}");
        let last = lines.iter().rfind(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant").unwrap();
        assert_eq!(last["message"]["content"][0]["text"], "Both ran.", "{provider}");
        // The second request carries both tool results back.
        let second = sb.server().requests()[1].body.to_string();
        assert!(second.contains("one") && second.contains("two"), "{provider}: {second}");
    }
}

#[tokio::test]
async fn anthropic_overload_and_rate_limits_are_retried() {
    let sb = multi_api_sandbox().await;
    sb.server().push(Reply::anthropic_error(529, "overloaded_error", "Overloaded"));
    sb.server().push(Reply::anthropic_error(429, "rate_limit_error", "Slow down").header("retry-after", "1"));
    sb.server().push(Reply::text("finally"));
    let mut pi = sb.spawn(&["--no-session", "--model", "fake-anthropic/claude-fake"]);
    let lines = run_prompt(&mut pi).await;
    let starts: Vec<&Value> = lines.iter().filter(|v| v["type"] == "auto_retry_start").collect();
    assert_eq!(starts.len(), 2);
    assert!(starts[0]["errorMessage"].as_str().unwrap().starts_with("529"), "{}", starts[0]);
    assert_eq!(starts[0]["delayMs"], 20);
    assert_eq!(starts[1]["delayMs"], 1000, "retry-after is honoured");
    let end = lines.iter().find(|v| v["type"] == "auto_retry_end").unwrap();
    assert_eq!(end, &json!({"type": "auto_retry_end", "success": true, "attempt": 2}));
    let req = &sb.server().requests()[0];
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test-secret-1"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn abort_retry_cancels_the_wait() {
    let sb = Sandbox::with_server().await;
    sb.write_settings(
        json!({"defaultProvider": "fake", "defaultModel": "fake-model", "retry": {"baseDelayMs": 60000}}),
    );
    sb.server().push(Reply::openai_error(503, "busy", "server_error"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("auto_retry_start").await;
    pi.send(json!({"id": "ar", "type": "abort_retry"})).await;
    let rest = pi.until(|v| v["id"] == "ar").await;
    let n = rest.len();
    assert_eq!(
        rest[n - 3],
        json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "Retry cancelled"})
    );
    // pi 1.6.0: stopping the retries is not an abort of the run.
    assert_eq!(rest[n - 2], json!({"type": "agent_settled", "aborted": false}));
    assert_eq!(rest[n - 1]["success"], true);
}

#[tokio::test]
async fn an_api_key_never_leaks() {
    let secret = "sk-very-secret-key-0123456789";
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::openai_error(
        401,
        "Incorrect API key provided: sk-very-secret-key-0123456789",
        "invalid_request_error",
    ));
    sb.server().push(Reply::text("ok"));
    let mut pi = {
        let mut cmd_args = vec!["--api-key", secret, "--provider", "fake", "--model", "fake-model", "--verbose"];
        cmd_args.push("--name");
        cmd_args.push("secret-test");
        sb.spawn(&cmd_args)
    };
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
    pi.send(json!({"id": "p2", "type": "prompt", "message": "again"})).await;
    pi.until_type("agent_settled").await;
    for cmd in ["get_state", "get_messages", "get_session_stats", "get_available_models", "get_entries"] {
        pi.call(cmd, json!({"type": cmd})).await;
    }
    pi.close_stdin();
    pi.drain().await;
    pi.wait().await;
    let out = pi.transcript.join("\n");
    // The provider echoed the key in its error text; pi-rpc must redact it.
    assert!(!out.contains(secret), "stdout leaks the key");
    assert!(!pi.stderr().contains(secret), "stderr leaks the key:\n{}", pi.stderr());
    for file in sb.session_files() {
        assert!(!std::fs::read_to_string(&file).unwrap().contains(secret), "{} leaks the key", file.display());
    }
    assert_eq!(sb.server().requests()[0].header("authorization"), Some(format!("Bearer {secret}").as_str()));
}
