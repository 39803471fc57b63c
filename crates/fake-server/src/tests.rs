//! Tests of the fake server over raw TCP.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn post(server: &FakeServer, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn chat(text: &str) -> String {
    serde_json::json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": text}]})
    .to_string()
}

#[tokio::test]
async fn records_requests_and_serves_the_queue_in_order() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text("first"));
    server.push(Reply::openai_error(500, "boom", "server_error").header("retry-after", "2"));
    let a = post(&server, "/v1/chat/completions", &chat("hi")).await;
    assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "{a}");
    assert!(a.contains("transfer-encoding: chunked"));
    assert!(a.contains(r#""content":"fir"}"#), "{a}");
    assert!(a.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"), "{a:?}");
    let b = post(&server, "/v1/chat/completions", &chat("again")).await;
    assert!(b.starts_with("HTTP/1.1 500 Internal Server Error\r\n"), "{b}");
    assert!(b.contains("retry-after: 2\r\n"));
    assert!(b.ends_with(r#"{"error":{"message":"boom","type":"server_error","param":null,"code":null}}"#));
    // Queue exhausted: fallback.
    let c = post(&server, "/v1/chat/completions", &chat("third")).await;
    assert!(c.contains(r#""content":"ok""#), "{c}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer k"));
    assert_eq!(reqs[1].body["messages"][0]["content"], "again");
    server.shutdown().await;
}

#[tokio::test]
async fn markers_win_over_the_queue_and_only_fire_on_the_last_message() {
    let server = FakeServer::start().await.unwrap();
    server.on_marker("#tool", Reply::tool_call("call_1", "bash", r#"{"command":"ls"}"#));
    server.push(Reply::text("queued"));
    let a = post(&server, "/v1/chat/completions", &chat("please #tool")).await;
    assert!(a.contains(r#""finish_reason":"tool_calls""#), "{a}");
    let follow_up = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "please #tool"}]},
        {"role": "tool", "content": "file.txt", "tool_call_id": "call_1"}
    ]});
    let b = post(&server, "/v1/chat/completions", &follow_up.to_string()).await;
    assert!(b.contains(r#""content":"que"}"#), "{b}");
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn cut_streams_end_without_the_terminating_chunk() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text_chunks(["a", "b", "c"]).cut_after(1));
    let a = post(&server, "/v1/chat/completions", &chat("x")).await;
    assert!(a.contains(r#""content":"a""#));
    assert!(!a.contains(r#""content":"b""#));
    assert!(!a.ends_with("0\r\n\r\n"));
}

#[tokio::test]
async fn a_hanging_stream_stalls_until_shutdown_then_ends_without_the_terminating_chunk() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text_chunks(["a", "b"]).hang_after(1));
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let body = chat("x");
    let req = format!("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&out).contains(r#""content":"a""#) {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&out));
        out.extend_from_slice(&buf[..n]);
    }
    // Nothing more while it hangs.
    assert!(tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await.is_err());
    server.shutdown().await;
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await.unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(!text.contains(r#""content":"b""#), "{text}");
    assert!(!text.ends_with("0\r\n\r\n"), "{text:?}");
}

#[tokio::test]
async fn unknown_paths_get_a_404_and_are_recorded() {
    let server = FakeServer::start().await.unwrap();
    let a = post(&server, "/v1/embeddings", "{}").await;
    assert!(a.starts_with("HTTP/1.1 404"), "{a}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn the_path_picks_the_wire_format() {
    let server = FakeServer::start().await.unwrap();
    server.set_fallback(Reply::text("hey"));
    let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let a = post(&server, "/v1/messages?beta=true", &body).await;
    assert!(a.contains("event: message_start\n"), "{a}");
    assert!(a.contains(r#""delta":{"type":"text_delta","text":"hey"}"#), "{a}");
    let r = post(&server, "/v1/responses", r#"{"model":"m","input":[]}"#).await;
    assert!(r.contains("event: response.output_text.delta\n"), "{r}");
    let g = post(&server, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", r#"{"contents":[]}"#).await;
    assert!(g.contains(r#"data: {"candidates":[{"content":{"parts":[{"text":"hey"}],"role":"model"}"#), "{g}");
}

#[tokio::test]
async fn markers_are_found_in_every_format() {
    let server = FakeServer::start().await.unwrap();
    server.on_marker("#m", Reply::text_chunks(["marked"]));
    let anthropic = serde_json::json!({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "x #m"}]}]});
    assert!(post(&server, "/v1/messages", &anthropic.to_string()).await.contains("marked"));
    let responses = serde_json::json!({"input": [{"type": "function_call_output", "call_id": "c", "output": "#m"}]});
    assert!(post(&server, "/v1/responses", &responses.to_string()).await.contains("marked"));
    let gemini = serde_json::json!({"contents": [{"role": "user", "parts": [
        {"functionResponse": {"name": "bash", "response": {"output": "y #m"}}}]}]});
    assert!(post(&server, "/v1beta/models/g:streamGenerateContent", &gemini.to_string()).await.contains("marked"));
}

#[tokio::test]
async fn chunked_request_bodies_are_read() {
    let server = FakeServer::start().await.unwrap();
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let body = chat("chunky");
    let (a, b) = body.split_at(10);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    assert_eq!(server.requests()[0].body["messages"][0]["content"], "chunky");
}

#[tokio::test]
async fn scripts_load_from_json() {
    let script = Script::from_json(
        r##"{"replies":[{"text":"one"}],"markers":[{"marker":"#err","reply":{"error":{"status":429,"body":"slow down"},"headers":{"retry-after":"1"}}}],"fallback":{"text":"fb"}}"##,
    )
    .unwrap();
    let server = FakeServer::start().await.unwrap();
    server.load_script(script);
    let a = post(&server, "/v1/chat/completions", &chat("#err")).await;
    assert!(a.starts_with("HTTP/1.1 429"), "{a}");
    assert!(a.ends_with("slow down"));
    assert!(post(&server, "/v1/chat/completions", &chat("x")).await.contains(r#""content":"one"}"#));
    assert!(post(&server, "/v1/chat/completions", &chat("x")).await.contains(r#""content":"fb""#));
    assert_eq!(Script::from_json(r#"[{"text":"a"},{"text":"b"}]"#).unwrap().replies.len(), 2);
}

#[tokio::test]
async fn the_sent_time_mark_becomes_the_time_of_writing() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text_chunks([format!("{SENT_TIME_MARK} "), "plain".to_string()]));
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros();
    let out = post(&server, "/v1/chat/completions", &chat("hi")).await;
    assert!(!out.contains(SENT_TIME_MARK), "{out}");
    let start =
        out.find(r#""content":"1"#).unwrap_or_else(|| panic!("no stamped delta: {out}")) + r#""content":""#.len();
    let stamped: u128 = out[start..].split(' ').next().unwrap().parse().expect("a number");
    assert!(stamped >= before && stamped < before + 10_000_000, "{stamped} vs {before}");
    server.shutdown().await;
}
