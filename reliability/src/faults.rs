//! The fault matrix: one prompt per provider fault against the fake model
//! server (errors, refused connections, cut and hanging streams, malformed
//! SSE, huge chunks and bodies). Each must be retried or reported as
//! expected, within a time limit, and the session must go on: `get_state`
//! answers and a second prompt gets its reply.

use std::path::Path;
use std::time::{Duration, Instant};

use pi_compat::fake_server::{FakeServer, FakeToolCall, Part, Reply};
use serde_json::{Value, json};

use crate::agent::{Agent, Framing, Sandbox};

/// What the first prompt must end in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    /// Succeeds after `n` requests in all.
    Recovered(usize),
    /// Ends in `stopReason: error` after `n` requests, the text containing this.
    Reported(usize, &'static str),
    /// Either, as long as it ends.
    Ends,
    /// Ends in `stopReason: aborted` (an `abort` is sent after 400 ms).
    Aborted,
}

struct Fault {
    name: &'static str,
    replies: Vec<Reply>,
    want: Want,
    /// Point the provider at a closed port instead of the server.
    refused: bool,
    settings: Value,
}

fn fault(name: &'static str, replies: Vec<Reply>, want: Want) -> Fault {
    Fault { name, replies, want, refused: false, settings: json!({}) }
}

fn matrix() -> Vec<Fault> {
    let big_error = format!("{{\"error\":{{\"message\":\"{}\"}}}}", "e".repeat(5_000_000));
    let ten_mb = "z".repeat(10 << 20);
    vec![
        fault(
            "500 once",
            vec![Reply::error(500, "{\"error\":{\"message\":\"boom\"}}"), Reply::text("ok")],
            Want::Recovered(2),
        ),
        fault("502 persistent", vec![Reply::error(502, "bad gateway"); 3], Want::Reported(3, "502")),
        fault("503 once", vec![Reply::error(503, "unavailable"), Reply::text("ok")], Want::Recovered(2)),
        fault(
            "529 overloaded",
            vec![Reply::error(529, "{\"error\":{\"message\":\"Overloaded\"}}"), Reply::text("ok")],
            Want::Recovered(2),
        ),
        fault(
            "429 with retry-after",
            vec![Reply::error(429, "slow down").header("retry-after", "1"), Reply::text("ok")],
            Want::Recovered(2),
        ),
        fault("400", vec![Reply::error(400, "{\"error\":{\"message\":\"bad request\"}}")], Want::Reported(1, "400")),
        fault("401", vec![Reply::error(401, "{\"error\":{\"message\":\"no key\"}}")], Want::Reported(1, "401")),
        Fault { refused: true, ..fault("connection refused", Vec::new(), Want::Reported(0, "")) },
        fault(
            "cut mid-body",
            vec![Reply::text_chunks(["Hel", "lo ", "there"]).cut_after(1), Reply::text("ok")],
            Want::Recovered(2),
        ),
        fault(
            "cut inside tool-call arguments",
            vec![
                Reply::tool_calls([FakeToolCall::new("c1", "bash", r#"{"command":"echo NEVER > ran.txt"}"#).pieces(4)])
                    .cut_after(2),
                Reply::text("ok"),
            ],
            Want::Recovered(2),
        ),
        fault("hang, then abort", vec![Reply::text_chunks(["a", "b"]).hang_after(1)], Want::Aborted),
        Fault {
            settings: json!({"httpIdleTimeoutMs": 300}),
            ..fault(
                "hang, idle timeout",
                vec![Reply::text_chunks(["a", "b"]).hang_after(1), Reply::text("ok")],
                Want::Recovered(2),
            )
        },
        fault(
            "malformed SSE",
            vec![Reply::empty().with_part(Part::RawData("{not json".into())), Reply::text("ok")],
            Want::Ends,
        ),
        fault("no [DONE]", vec![Reply::text("ok").without_done()], Want::Recovered(1)),
        fault("no finish reason", vec![Reply::text("ok").without_finish_reason()], Want::Ends),
        // 10 MB of text also fills the context: auto-compaction follows.
        fault("10 MB chunk", vec![Reply::text_chunks([ten_mb])], Want::Ends),
        fault("5 MB error body", vec![Reply::error(400, big_error)], Want::Reported(1, "400")),
    ]
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(9)
}

fn models(base_url: &str) -> Value {
    json!({"providers": {"fake": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "fault-key-123",
        "models": [{"id": "fake-model", "contextWindow": 128000, "maxTokens": 16384}]}}})
}

/// Play one fault; `Err` says what went wrong.
async fn play(pi: &Path, f: Fault) -> Result<String, String> {
    let server = FakeServer::start().await.map_err(|e| format!("fake server: {e}"))?;
    for r in f.replies {
        server.push(r);
    }
    server.set_fallback(Reply::text("second answer"));
    let sb = Sandbox::new().map_err(|e| e.to_string())?;
    let url = if f.refused { format!("http://127.0.0.1:{}/v1", closed_port()) } else { server.base_url() };
    let mut settings =
        json!({"defaultProvider": "fake", "defaultModel": "fake-model", "retry": {"baseDelayMs": 20, "maxRetries": 2}});
    if let (Value::Object(s), Value::Object(extra)) = (&mut settings, f.settings) {
        s.extend(extra);
    }
    sb.configure(&settings, Some(&models(&url))).map_err(|e| e.to_string())?;
    let mut agent = Agent::spawn(pi, &sb, &["--no-session".to_string()], Framing::Lines).map_err(|e| e.to_string())?;
    let started = Instant::now();
    agent.write(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n").await;
    if f.want == Want::Aborted {
        tokio::time::sleep(Duration::from_millis(400)).await;
        agent.write(b"{\"id\":\"a\",\"type\":\"abort\"}\n").await;
    }
    let settled = |r: &[u8]| r.starts_with(br#"{"type":"agent_settled""#);
    let (out, ended) = agent.until(Duration::from_secs(30), settled).await;
    if !ended {
        return Err(format!("no agent_settled within 30 s; stderr: {}", agent.stderr()));
    }
    let took = started.elapsed();
    let values: Vec<Value> = out.iter().filter_map(|r| serde_json::from_slice(r).ok()).collect();
    if values.len() != out.len() {
        return Err("an output line is not JSON".into());
    }
    let last = values
        .iter()
        .rev()
        .find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .map(|v| v["message"].clone())
        .unwrap_or(Value::Null);
    let stop = last["stopReason"].as_str().unwrap_or("");
    let error = last["errorMessage"].as_str().unwrap_or("");
    let requests = server.request_count();
    match f.want {
        Want::Recovered(n) if stop != "stop" || requests != n => {
            return Err(format!("wanted success after {n} requests, got {stop:?} after {requests}: {error:.200}"));
        }
        Want::Reported(n, text) if stop != "error" || !error.contains(text) || (!f.refused && requests != n) => {
            return Err(format!(
                "wanted an error with {text:?} after {n} requests, got {stop:?} after {requests}: {error:.200}"
            ));
        }
        Want::Aborted if stop != "aborted" => return Err(format!("wanted aborted, got {stop:?}")),
        _ => {}
    }
    if error.len() > 64 * 1024 {
        return Err(format!("errorMessage of {} bytes", error.len()));
    }
    if out.iter().any(|r| r.windows(13).any(|w| w == b"fault-key-123")) {
        return Err("the API key appeared on stdout".into());
    }
    if values.iter().any(|v| v["type"] == "tool_execution_start") && f.name.contains("tool-call") {
        return Err("a tool call from a cut stream was executed".into());
    }
    let longest = values
        .iter()
        .filter(|v| v["type"] == "message_end")
        .filter_map(|v| v["message"]["content"][0]["text"].as_str())
        .map(str::len)
        .max();
    if f.name == "10 MB chunk" && longest != Some(10 << 20) {
        return Err(format!("the 10 MB text arrived as {longest:?} bytes"));
    }
    if f.name == "429 with retry-after" && took < Duration::from_millis(900) {
        return Err(format!("retry-after: 1 was not honoured (done in {} ms)", took.as_millis()));
    }
    // The session goes on.
    agent.write(b"{\"id\":\"s\",\"type\":\"get_state\"}\n").await;
    let (_, state) = agent.until(Duration::from_secs(10), |r| r.starts_with(br#"{"id":"s","type":"response""#)).await;
    if !state {
        return Err("get_state was not answered afterwards".into());
    }
    if !f.refused {
        agent.write(b"{\"id\":\"q\",\"type\":\"prompt\",\"message\":\"again\"}\n").await;
        let (more, ended) = agent.until(Duration::from_secs(30), settled).await;
        let answered = more.iter().filter_map(|r| serde_json::from_slice::<Value>(r).ok()).any(|v| {
            v["type"] == "message_end" && v["message"]["role"] == "assistant" && v["message"]["stopReason"] == "stop"
        });
        if !ended || !answered {
            let tail: Vec<String> = more
                .iter()
                .rev()
                .take(4)
                .map(|r| String::from_utf8_lossy(&r[..r.len().min(300)]).into_owned())
                .collect();
            return Err(format!("a second prompt did not get its answer: {tail:?}"));
        }
    }
    agent.close_stdin();
    if agent.wait(Duration::from_secs(10)).await.is_none_or(|s| !s.success()) {
        return Err("pi did not exit cleanly".into());
    }
    server.shutdown().await;
    Ok(format!("{stop} after {requests} request(s) in {} ms", took.as_millis()))
}

/// Play the whole matrix; true when every fault behaved.
pub async fn run(pi: &Path) -> bool {
    let started = Instant::now();
    let (mut passed, mut failed) = (0, 0);
    for f in matrix() {
        let name = f.name;
        match play(pi, f).await {
            Ok(how) => {
                passed += 1;
                crate::say(&format!("PASS fault {name}: {how}"));
            }
            Err(why) => {
                failed += 1;
                crate::say(&format!("FAIL fault {name}: {why}"));
            }
        }
    }
    crate::say(&format!("faults: {passed} passed, {failed} failed in {:.0} s", started.elapsed().as_secs_f64()));
    failed == 0
}
