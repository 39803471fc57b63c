//! Native dialect: compaction — manual `compact`, threshold and overflow
//! compaction, summarisation retries, abort, re-compaction — against the
//! fake model server: the events, the summarisation requests we send, and the
//! messages the model sees afterwards.

use pi_compat::fake_server::{FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox, read_jsonl, types};

const SUMMARY_SYSTEM: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.\n\nDo NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.";
const SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";

/// A sandbox whose model has `window` tokens and whose compaction keeps
/// `keep` recent tokens and reserves `reserve`.
async fn sandbox(window: u64, keep: u64, reserve: u64) -> Sandbox {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"contextWindow": window}));
    sb.write_settings(json!({
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "retry": {"baseDelayMs": 20},
        "compaction": {"keepRecentTokens": keep, "reserveTokens": reserve}
    }));
    sb
}

/// Prompt and wait for the run to settle; returns the lines of the run.
async fn prompt(pi: &mut Pi, id: &str, text: &str) -> Vec<Value> {
    let r = pi.call(id, json!({"type": "prompt", "message": text})).await;
    assert_eq!(r["success"], true, "{r}");
    pi.until_type("agent_settled").await
}

/// Text of one OpenAI request message (string or text parts).
fn message_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn is_summary_request(r: &RecordedRequest) -> bool {
    r.body["messages"][0]["content"] == SUMMARY_SYSTEM
}

/// The summarisation requests the server received, as (system, user) texts.
fn summary_requests(pi_server: &pi_compat::fake_server::FakeServer) -> Vec<(String, String)> {
    pi_server
        .requests()
        .iter()
        .filter(|r| is_summary_request(r))
        .map(|r| {
            let m = r.body["messages"].as_array().unwrap();
            assert_eq!(m.len(), 2, "system + one user message");
            assert_eq!(m[0]["role"], "system");
            assert_eq!(m[1]["role"], "user");
            assert!(r.body.get("tools").is_none(), "no tools in a summarisation request");
            (message_text(&m[0]), message_text(&m[1]))
        })
        .collect()
}

fn long(word: &str, n: usize) -> String {
    vec![word; n].join(" ")
}

#[tokio::test]
async fn manual_compaction_summarises_and_the_model_sees_the_summary() {
    // Turns of ~60-90 estimated tokens: keeping 100 cuts at the second prompt.
    let sb = sandbox(128_000, 100, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)).usage(500, 100, 0));
    server.push(Reply::text(&long("beta", 60)).usage(900, 100, 0));
    server.push(Reply::text("## Goal\nTest compaction.").usage(300, 40, 0));
    server.push(Reply::text("after compaction").usage(200, 10, 0));
    let mut pi = sb.spawn(&[]);
    prompt(&mut pi, "p1", &format!("first question {}", long("one", 50))).await;
    prompt(&mut pi, "p2", &format!("second question {}", long("two", 50))).await;

    pi.send(json!({"id": "c", "type": "compact", "customInstructions": "Focus on the tests"})).await;
    let lines = pi.until(|v| v["id"] == "c").await;
    assert_eq!(types(&lines), ["compaction_start", "compaction_end", "response"], "{lines:#?}");
    assert_eq!(lines[0], json!({"type": "compaction_start", "reason": "manual"}));
    let end = &lines[1];
    assert_eq!(end["reason"], "manual");
    assert_eq!(end["aborted"], false);
    assert_eq!(end["willRetry"], false);
    assert!(end.get("errorMessage").is_none());
    let result = &end["result"];
    let keys: Vec<&str> = result.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter", "usage", "details"]);
    assert_eq!(result["summary"], "## Goal\nTest compaction.");
    assert_eq!(result["tokensBefore"], 1000, "the last reply's usage");
    assert_eq!(result["usage"]["input"], 300);
    assert_eq!(result["usage"]["output"], 40);
    assert_eq!(result["details"], json!({"readFiles": [], "modifiedFiles": []}));
    assert!(result["estimatedTokensAfter"].as_u64().unwrap() > 0);
    let response = &lines[2];
    assert_eq!(response["success"], true);
    assert_eq!(&response["data"], result, "the response data is the result");

    // The request we sent: pi's system prompt, the conversation, the focus.
    let reqs = summary_requests(server);
    assert_eq!(reqs.len(), 1);
    let (system, user) = &reqs[0];
    assert_eq!(system, SUMMARY_SYSTEM);
    assert!(user.starts_with("<conversation>\n[User]: first question one one"), "{user}");
    assert!(user.contains("\n\n[Assistant]: alpha alpha"), "{user}");
    assert!(user.contains("</conversation>\n\nThe messages above are a conversation to summarize."), "{user}");
    assert!(user.ends_with("\n\nAdditional focus: Focus on the tests"), "{user}");
    assert!(!user.contains("<previous-summary>"));

    // The context now starts with the summary, then the kept messages.
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    let messages = m["data"]["messages"].as_array().unwrap();
    // pi 1.6.0: the compaction's checkpoint of the system messages first.
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "compactionSummary");
    assert_eq!(messages[1]["summary"], "## Goal\nTest compaction.");
    assert_eq!(messages[1]["tokensBefore"], 1000);
    assert!(messages.len() < 5, "older messages were summarised: {messages:#?}");
    let kept_last = messages.last().unwrap();
    assert_eq!(kept_last["role"], "assistant");

    let stats = pi.call("s", json!({"type": "get_session_stats"})).await;
    let usage = &stats["data"]["contextUsage"];
    assert_eq!(usage["tokens"], Value::Null, "{stats}");
    assert_eq!(usage["percent"], Value::Null);
    assert_eq!(usage["contextWindow"], 128000);
    assert_eq!(stats["data"]["tokens"]["input"], 500 + 900 + 300, "the summary call counts");
    assert_eq!(stats["data"]["userMessages"], 2, "the whole session is counted");
    let state = pi.call("st", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["isCompacting"], false);

    // The next request carries the summary as a user message, then the kept messages.
    prompt(&mut pi, "p3", "third").await;
    let last = server.requests().last().unwrap().body.clone();
    let msgs = last["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1]["role"], "user");
    assert_eq!(message_text(&msgs[1]), format!("{SUMMARY_PREFIX}## Goal\nTest compaction.\n</summary>"));
    assert_eq!(message_text(msgs.last().unwrap()), "third");
    assert!(!msgs.iter().any(|m| message_text(m).contains("first question")), "summarised away");
    let stats = pi.call("s2", json!({"type": "get_session_stats"})).await;
    assert_eq!(stats["data"]["contextUsage"]["tokens"], 210, "fresh usage after the next reply");

    // The session file holds the compaction entry.
    pi.close_stdin();
    pi.wait().await;
    let files = sb.session_files();
    let entries = read_jsonl(&files[0]);
    let compaction = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(compaction["summary"], "## Goal\nTest compaction.");
    assert_eq!(compaction["firstKeptEntryId"], result["firstKeptEntryId"]);
    assert_eq!(compaction["tokensBefore"], 1000);
    assert_eq!(compaction["fromHook"], false);
    assert_eq!(compaction["details"], json!({"readFiles": [], "modifiedFiles": []}));
    assert_eq!(compaction["usage"]["input"], 300);
}

#[tokio::test]
async fn compact_errors_already_compacted_and_too_small() {
    let sb = sandbox(128_000, 20_000, 16_384).await;
    sb.server().push(Reply::text("short"));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p", "hi").await;
    pi.send(json!({"id": "c", "type": "compact"})).await;
    let lines = pi.until(|v| v["id"] == "c").await;
    assert_eq!(types(&lines), ["compaction_start", "compaction_end", "response"]);
    assert_eq!(
        lines[1],
        json!({"type": "compaction_end", "reason": "manual", "result": null, "aborted": false, "willRetry": false,
               "errorMessage": "Compaction failed: Nothing to compact (session too small)"})
    );
    assert_eq!(lines[2]["success"], false);
    assert_eq!(lines[2]["error"], "Nothing to compact (session too small)");
    assert_eq!(sb.server().requests().len(), 1, "no summarisation request");
}

#[tokio::test]
async fn a_second_compact_says_already_compacted_and_recompaction_builds_on_the_summary() {
    let sb = sandbox(128_000, 70, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 40)).usage(100, 50, 0));
    server.push(Reply::text(&long("beta", 40)).usage(200, 50, 0));
    server.push(Reply::text("FIRST SUMMARY"));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 40)).await;
    prompt(&mut pi, "p2", &long("two", 40)).await;
    let r = pi.call("c1", json!({"type": "compact"})).await;
    assert_eq!(r["success"], true, "{r}");
    let r = pi.call("c2", json!({"type": "compact"})).await;
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Already compacted");

    server.push(Reply::text(&long("gamma", 40)).usage(300, 50, 0));
    server.push(Reply::text(&long("delta", 40)).usage(400, 50, 0));
    server.push(Reply::text("SECOND SUMMARY"));
    prompt(&mut pi, "p3", &long("three", 40)).await;
    prompt(&mut pi, "p4", &long("four", 40)).await;
    let r = pi.call("c3", json!({"type": "compact"})).await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["summary"], "SECOND SUMMARY");
    let reqs = summary_requests(server);
    assert_eq!(reqs.len(), 2);
    let (_, user) = &reqs[1];
    assert!(user.contains("</conversation>\n\n<previous-summary>\nFIRST SUMMARY\n</previous-summary>\n\n"), "{user}");
    assert!(user.contains("The messages above are NEW conversation messages to incorporate"), "{user}");
    assert!(user.contains("[User]: three"), "{user}");
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(m["data"]["messages"][1]["summary"], "SECOND SUMMARY");
}

#[tokio::test]
async fn threshold_compaction_runs_after_the_run_before_agent_settled() {
    // Window 4000, reserve 1000: compaction above 3000 context tokens.
    let sb = sandbox(4000, 100, 1000).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)).usage(400, 100, 0));
    server.push(Reply::text(&long("beta", 60)).usage(3400, 100, 0));
    server.push(Reply::text("THRESHOLD SUMMARY").usage(50, 5, 0));
    let mut pi = sb.spawn(&["--no-session"]);
    let first = prompt(&mut pi, "p1", &long("one", 60)).await;
    assert!(!first.iter().any(|v| v["type"] == "compaction_start"));
    let lines = prompt(&mut pi, "p2", &long("two", 60)).await;
    let t = types(&lines);
    let tail: Vec<&str> = t.iter().map(String::as_str).skip(t.len() - 4).collect();
    assert_eq!(tail, ["agent_end", "compaction_start", "compaction_end", "agent_settled"], "{lines:#?}");
    let n = lines.len();
    assert_eq!(lines[n - 3], json!({"type": "compaction_start", "reason": "threshold"}));
    assert_eq!(lines[n - 2]["reason"], "threshold");
    assert_eq!(lines[n - 2]["willRetry"], false);
    assert_eq!(lines[n - 2]["result"]["summary"], "THRESHOLD SUMMARY");
    assert_eq!(lines[n - 2]["result"]["tokensBefore"], 3500);
    assert_eq!(t.iter().filter(|x| *x == "agent_start").count(), 1, "no new run");
    assert_eq!(t.iter().filter(|x| *x == "response").count(), 0);
    let stats = pi.call("s", json!({"type": "get_session_stats"})).await;
    assert_eq!(stats["data"]["contextUsage"]["tokens"], Value::Null);
}

#[tokio::test]
async fn set_auto_compaction_false_turns_threshold_compaction_off() {
    let sb = sandbox(4000, 40, 1000).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)).usage(400, 100, 0));
    server.push(Reply::text(&long("beta", 60)).usage(3400, 100, 0));
    let mut pi = sb.spawn(&["--no-session"]);
    let r = pi.call("a", json!({"type": "set_auto_compaction", "enabled": false})).await;
    assert_eq!(r["success"], true);
    let s = pi.call("st", json!({"type": "get_state"})).await;
    assert_eq!(s["data"]["autoCompactionEnabled"], false);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    let lines = prompt(&mut pi, "p2", &long("two", 60)).await;
    assert!(!lines.iter().any(|v| v["type"] == "compaction_start"), "{lines:#?}");
    assert_eq!(server.requests().len(), 2);
}

/// Two long answers, then a context overflow on the third prompt, the
/// summary compaction asks for, and the answer to the retried prompt.
fn push_recovered_overflow(server: &FakeServer) {
    server.push(Reply::text(&long("alpha", 60)).usage(500, 100, 0));
    server.push(Reply::text(&long("beta", 60)).usage(700, 100, 0));
    server.push(overflow_error());
    server.push(Reply::text("OVERFLOW SUMMARY").usage(50, 5, 0));
    server.push(Reply::text("answer after recovery").usage(300, 10, 0));
}

fn overflow_error() -> Reply {
    Reply::error(
        400,
        json!({"error": {"message": "This model's maximum context length is 4000 tokens. However, your messages resulted in 5000 tokens.",
                          "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        .to_string(),
    )
}

#[tokio::test]
async fn overflow_compacts_then_retries_the_prompt_once() {
    // Keeping 150 tokens cuts at the second prompt (not inside the failed turn).
    let sb = sandbox(128_000, 150, 16_384).await;
    let server = sb.server();
    push_recovered_overflow(server);
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    prompt(&mut pi, "p1b", &long("uno", 60)).await;
    let lines = prompt(&mut pi, "p2", &format!("retry me {}", long("two", 60))).await;
    let t = types(&lines);
    let first_end = t.iter().position(|x| x == "agent_end").unwrap();
    assert_eq!(lines[first_end]["willRetry"], false);
    let failed = &lines[first_end]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(failed["stopReason"], "error");
    assert!(failed["errorMessage"].as_str().unwrap().contains("context_length_exceeded"), "{failed}");
    assert_eq!(
        t[first_end + 1..].iter().map(String::as_str).take(4).collect::<Vec<_>>(),
        ["entry_appended", "compaction_start", "compaction_end", "agent_start"],
        "{lines:#?}"
    );
    // The failed attempt is hidden from the model by a context_edit, announced as pi 1.6.0 does.
    let edit = &lines[first_end + 1]["entry"];
    assert_eq!((edit["type"].as_str(), &edit["replacement"]), (Some("context_edit"), &Value::Null), "{edit}");
    assert_eq!(lines[first_end + 2], json!({"type": "compaction_start", "reason": "overflow"}));
    let end = &lines[first_end + 3];
    assert_eq!(end["reason"], "overflow");
    assert_eq!(end["willRetry"], true);
    assert_eq!(end["result"]["summary"], "OVERFLOW SUMMARY");
    assert_eq!(t.iter().filter(|x| *x == "agent_settled").count(), 1);
    assert_eq!(t.iter().filter(|x| *x == "agent_end").count(), 2);
    let retry_end = lines.iter().rfind(|v| v["type"] == "agent_end").unwrap();
    let retried: Vec<&str> =
        retry_end["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(retried, ["assistant"], "the retry adds no user message");
    assert_eq!(retry_end["messages"][0]["content"][0]["text"], "answer after recovery");
    assert_eq!(lines.last().unwrap(), &json!({"type": "agent_settled", "aborted": false}));

    // The retried request: summary, then the prompt; the failed attempt is gone.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert!(is_summary_request(&reqs[3]));
    let retry = reqs[4].body["messages"].as_array().unwrap();
    assert_eq!(message_text(&retry[1]), format!("{SUMMARY_PREFIX}OVERFLOW SUMMARY\n</summary>"));
    assert!(message_text(retry.last().unwrap()).starts_with("retry me"));
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    let messages = m["data"]["messages"].as_array().unwrap();
    assert!(!messages.iter().any(|m| m["stopReason"] == "error"), "the failed attempt is hidden: {messages:#?}");
}

#[tokio::test]
async fn a_second_overflow_does_not_loop() {
    let sb = sandbox(128_000, 150, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)).usage(500, 100, 0));
    server.push(Reply::text(&long("beta", 60)).usage(700, 100, 0));
    server.push(overflow_error());
    server.push(Reply::text("OVERFLOW SUMMARY"));
    server.push(overflow_error());
    server.set_fallback(Reply::text("should not be asked"));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    prompt(&mut pi, "p1b", &long("uno", 60)).await;
    let lines = prompt(&mut pi, "p2", &long("two", 60)).await;
    let t = types(&lines);
    assert_eq!(t.iter().filter(|x| *x == "compaction_start").count(), 1, "{lines:#?}");
    let ends: Vec<&Value> = lines.iter().filter(|v| v["type"] == "compaction_end").collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0]["willRetry"], true);
    assert_eq!(
        ends[1],
        &json!({"type": "compaction_end", "reason": "overflow", "result": null, "aborted": false, "willRetry": false,
                "errorMessage": "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."})
    );
    assert_eq!(t.iter().filter(|x| *x == "agent_settled").count(), 1);
    assert_eq!(server.requests().len(), 5);
}

#[tokio::test]
async fn summarisation_failures_are_retried_with_events() {
    let sb = sandbox(128_000, 100, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)));
    server.push(Reply::text(&long("beta", 60)));
    server.push(Reply::openai_error(500, "The server had an error while processing your request.", "server_error"));
    server.push(Reply::text("RETRIED SUMMARY"));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    prompt(&mut pi, "p2", &long("two", 60)).await;
    pi.send(json!({"id": "c", "type": "compact"})).await;
    let lines = pi.until(|v| v["id"] == "c").await;
    assert_eq!(
        types(&lines),
        [
            "compaction_start",
            "summarization_retry_scheduled",
            "summarization_retry_attempt_start",
            "summarization_retry_finished",
            "compaction_end",
            "response"
        ],
        "{lines:#?}"
    );
    let scheduled = &lines[1];
    assert_eq!(scheduled["attempt"], 1);
    assert_eq!(scheduled["maxAttempts"], 3);
    assert_eq!(scheduled["delayMs"], 20);
    assert!(scheduled["errorMessage"].as_str().unwrap().starts_with("500"), "{scheduled}");
    assert_eq!(
        lines[2],
        json!({"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"})
    );
    assert_eq!(lines[3], json!({"type": "summarization_retry_finished"}));
    assert_eq!(lines[4]["result"]["summary"], "RETRIED SUMMARY");

    // A non-retryable failure: no retry events, pi's error texts.
    server.push(Reply::text(&long("gamma", 60)));
    server.push(Reply::openai_error(400, "Bad request", "invalid_request_error"));
    prompt(&mut pi, "p3", &long("three", 60)).await;
    pi.send(json!({"id": "c2", "type": "compact"})).await;
    let lines = pi.until(|v| v["id"] == "c2").await;
    assert_eq!(types(&lines), ["compaction_start", "compaction_end", "response"], "{lines:#?}");
    let error = lines[2]["error"].as_str().unwrap();
    assert!(error.starts_with("Summarization failed: 400"), "{error}");
    assert_eq!(lines[1]["errorMessage"], format!("Compaction failed: {error}"));
    assert_eq!(lines[1]["result"], Value::Null);
}

#[tokio::test]
async fn abort_stops_a_running_compaction_and_prompts_wait_for_it() {
    let sb = sandbox(128_000, 100, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)));
    server.push(Reply::text(&long("beta", 60)));
    server.push(Reply::text_chunks(["slow ", "summary ", "never"]).delay_ms(500));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    prompt(&mut pi, "p2", &long("two", 60)).await;
    pi.send(json!({"id": "c", "type": "compact"})).await;
    pi.until_type("compaction_start").await;
    let state = pi.call("st", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["isCompacting"], true);
    let r = pi.call("px", json!({"type": "prompt", "message": "not now"})).await;
    assert_eq!(r["success"], false);
    assert_eq!(
        r["error"],
        "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
    );
    pi.send(json!({"id": "a", "type": "abort"})).await;
    let lines = pi.until(|v| v["id"] == "a").await;
    assert_eq!(types(&lines), ["compaction_end", "response", "response"], "{lines:#?}");
    assert_eq!(
        lines[0],
        json!({"type": "compaction_end", "reason": "manual", "result": null, "aborted": true, "willRetry": false})
    );
    assert_eq!(lines[1]["id"], "c");
    assert_eq!(lines[1]["success"], false);
    assert_eq!(lines[1]["error"], "Compaction cancelled");
    assert_eq!(lines[2]["success"], true);
    let state = pi.call("st2", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["isCompacting"], false);
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(m["data"]["messages"][1]["role"], "user", "nothing was compacted");
}

#[tokio::test]
async fn compact_during_a_run_aborts_the_run_first() {
    // Keeping 100 cuts inside the first turn: a split turn, summarised alone.
    let sb = sandbox(128_000, 100, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)));
    server.push(Reply::text_chunks(["partial ", "answer ", "never"]).delay_ms(400));
    server.push(Reply::text("SUMMARY DURING RUN"));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    pi.send(json!({"id": "p2", "type": "prompt", "message": long("two", 60)})).await;
    pi.until(|v| v["assistantMessageEvent"]["type"] == "text_delta").await;
    pi.send(json!({"id": "c", "type": "compact"})).await;
    let lines = pi.until(|v| v["id"] == "c").await;
    let t = types(&lines);
    let settled = t.iter().position(|x| x == "agent_settled").unwrap();
    assert_eq!(lines[settled], json!({"type": "agent_settled", "aborted": true}));
    assert_eq!(t[settled + 1..], ["compaction_start", "compaction_end", "response"], "{lines:#?}");
    assert_eq!(
        lines.last().unwrap()["data"]["summary"],
        "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nSUMMARY DURING RUN"
    );
    let (_, user) = &summary_requests(server)[0];
    assert!(user.starts_with("# Conversation\n[User]: one one"), "{user}");
}

#[tokio::test]
async fn jsonrpc_compact_takes_the_prompt_as_instructions() {
    let sb = sandbox(128_000, 100, 16_384).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)));
    server.push(Reply::text(&long("beta", 60)));
    server.push(Reply::text("RPC SUMMARY"));
    let mut pi = sb.spawn(&["--no-session"]);
    let req =
        |id: u64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    pi.send(req(1, "initialize", json!({}))).await;
    pi.until(|v| v["id"] == 1).await;
    for (id, text) in [(2, long("one", 60)), (3, long("two", 60))] {
        pi.send(req(id, "prompt", json!({"content": text}))).await;
        pi.until(|v| v["method"] == "turnEnd").await;
    }
    pi.send(req(4, "compact", json!({"prompt": "Focus on database changes"}))).await;
    let lines = pi.until(|v| v["id"] == 4 && v.get("method").is_none()).await;
    let response = lines.last().unwrap();
    assert_eq!(response["result"]["summary"], "RPC SUMMARY", "{lines:#?}");
    assert!(response["result"]["firstKeptEntryId"].is_string());
    assert!(lines.iter().any(|v| v["method"] == "compactionStart"));
    assert!(lines.iter().any(|v| v["method"] == "compactionEnd"));
    let (_, user) = &summary_requests(server)[0];
    assert!(user.ends_with("Additional focus: Focus on database changes"), "{user}");
}

#[tokio::test]
async fn threshold_compaction_between_turns_and_before_a_prompt() {
    let sb = sandbox(4000, 100, 1000).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)).usage(400, 100, 0));
    server.push(
        Reply::text("Running it.")
            .with_tool_call(pi_compat::fake_server::FakeToolCall::new("call_1", "bash", r#"{"command":"echo hi"}"#))
            .usage(3400, 10, 0),
    );
    server.push(Reply::text("BETWEEN TURNS"));
    server.push(Reply::text("done").usage(200, 10, 0));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    let lines = prompt(&mut pi, "p2", &long("two", 60)).await;
    let t = types(&lines);
    let start = t.iter().position(|x| x == "compaction_start").expect("compacted between turns");
    assert_eq!(t[start - 1], "turn_end", "{lines:#?}");
    assert_eq!(t[start + 1..start + 3], ["compaction_end", "turn_start"]);
    assert_eq!(lines[start]["reason"], "threshold");
    assert_eq!(t.iter().filter(|x| *x == "compaction_start").count(), 1);
    // The next turn's request starts from the summary (the cut split the
    // running turn) and keeps the tool exchange.
    let last = server.requests().last().unwrap().body.clone();
    let msgs = last["messages"].as_array().unwrap();
    assert_eq!(
        message_text(&msgs[1]),
        format!(
            "{SUMMARY_PREFIX}No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nBETWEEN TURNS\n</summary>"
        )
    );
    assert_eq!(msgs.last().unwrap()["role"], "tool");

    // Before a prompt: compaction was off during the big answer, on again now.
    server.push(Reply::text(&long("gamma", 60)).usage(3500, 100, 0));
    server.push(Reply::text("PRE-PROMPT SUMMARY"));
    server.push(Reply::text("fresh").usage(100, 10, 0));
    pi.call("off", json!({"type": "set_auto_compaction", "enabled": false})).await;
    let lines = prompt(&mut pi, "p3", &long("three", 60)).await;
    assert!(!lines.iter().any(|v| v["type"] == "compaction_start"));
    pi.call("on", json!({"type": "set_auto_compaction", "enabled": true})).await;
    pi.send(json!({"id": "p4", "type": "prompt", "message": "four"})).await;
    let lines = pi.until_type("agent_settled").await;
    let t = types(&lines);
    assert_eq!(t[..4], ["response", "compaction_start", "compaction_end", "agent_start"], "{lines:#?}");
    assert_eq!(lines[1]["reason"], "threshold");
    let last = server.requests().last().unwrap().body.clone();
    let msgs = last["messages"].as_array().unwrap();
    assert_eq!(message_text(&msgs[1]), format!("{SUMMARY_PREFIX}PRE-PROMPT SUMMARY\n</summary>"));
    assert_eq!(message_text(msgs.last().unwrap()), "four");
}

#[tokio::test]
async fn abort_during_threshold_compaction_settles_the_run_as_aborted() {
    let sb = sandbox(4000, 100, 1000).await;
    let server = sb.server();
    server.push(Reply::text(&long("alpha", 60)).usage(400, 100, 0));
    server.push(Reply::text(&long("beta", 60)).usage(3400, 100, 0));
    server.push(Reply::text_chunks(["slow ", "summary"]).delay_ms(800));
    let mut pi = sb.spawn(&["--no-session"]);
    prompt(&mut pi, "p1", &long("one", 60)).await;
    pi.send(json!({"id": "p2", "type": "prompt", "message": long("two", 60)})).await;
    pi.until_type("compaction_start").await;
    let state = pi.call("st", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["isCompacting"], true);
    assert_eq!(state["data"]["isStreaming"], true);
    pi.send(json!({"id": "a", "type": "abort"})).await;
    let lines = pi.until(|v| v["id"] == "a").await;
    assert_eq!(types(&lines), ["compaction_end", "agent_settled", "response"], "{lines:#?}");
    assert_eq!(
        lines[0],
        json!({"type": "compaction_end", "reason": "threshold", "result": null, "aborted": true, "willRetry": false})
    );
    assert_eq!(lines[1], json!({"type": "agent_settled", "aborted": true}));
    let state = pi.call("st2", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["isCompacting"], false);
    assert_eq!(state["data"]["isStreaming"], false);
}

#[tokio::test]
async fn jsonrpc_reports_a_recovered_overflow_as_retryable() {
    let sb = sandbox(128_000, 150, 16_384).await;
    let server = sb.server();
    push_recovered_overflow(server);
    let mut pi = sb.spawn(&["--no-session", "--protocol", "jsonrpc"]);
    for (id, text) in [(1, long("one", 60)), (2, long("uno", 60)), (3, format!("retry me {}", long("two", 60)))] {
        pi.send(json!({"jsonrpc": "2.0", "id": id, "method": "prompt", "params": {"content": text}})).await;
        let lines = pi.until(|v| v["method"] == "turnEnd").await;
        if id == 3 {
            let error = lines.iter().find(|v| v["method"] == "error").expect("an error notification");
            assert_eq!(error["params"]["code"], "context_limit");
            assert_eq!(error["params"]["retryable"], true, "compaction recovers it: {error}");
            let e = lines.iter().position(|v| v["method"] == "error").unwrap();
            let c = lines.iter().position(|v| v["method"] == "compactionEnd").unwrap();
            assert!(c < e, "decided after the compaction");
            let complete = lines.iter().rfind(|v| v["params"]["type"] == "complete").unwrap();
            assert_eq!(complete["params"]["content"], "answer after recovery");
        }
    }
}
