//! Framing defects the transport fixes, through the real binary: native
//! error replies keep their place, repeated `id` members and `1e400` ids are
//! echoed as read, and `Content-Length` framing resynchronises after stray
//! bytes and bounds header lines.

use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};

#[tokio::test]
async fn a_native_error_reply_comes_after_the_reply_to_an_earlier_command() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    let mut input = String::new();
    for i in 0..40 {
        input.push_str(&format!(
            "{{\"id\":{i},\"type\":\"get_state\"}}\nnot json {i}\n{{\"id\":\"u{i}\",\"type\":\"nope\"}}\n"
        ));
    }
    pi.send_raw(&input).await;
    for i in 0..40 {
        let state = pi.next().await;
        assert_eq!((state["id"].clone(), state["success"].clone()), (json!(i), json!(true)), "{state}");
        let parse = pi.next().await;
        assert_eq!(parse["command"], "parse", "{parse}");
        let unknown = pi.next().await;
        assert_eq!(unknown["id"], format!("u{i}"), "{unknown}");
    }
}

#[tokio::test]
async fn native_ids_are_echoed_as_read() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send_raw("{\"id\":1,\"type\":\"get_state\",\"id\":\"last\"}\n").await;
    let v = pi.next().await;
    assert_eq!((v["id"].clone(), v["success"].clone()), (json!("last"), json!(true)), "{v}");
    pi.send_raw("{\"id\":1e400,\"type\":\"get_state\"}\n").await;
    let line = pi.next_line().await.unwrap_or_default();
    assert!(
        line.starts_with("{\"id\":1e400,\"type\":\"response\",\"command\":\"get_state\",\"success\":true"),
        "{line}"
    );
}

#[tokio::test]
async fn jsonrpc_ids_are_echoed_as_read_and_1e400_does_not_flip_the_dialect() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send_raw("{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"getStatus\"}\n").await;
    let line = pi.next_line().await.unwrap_or_default();
    assert!(line.starts_with("{\"jsonrpc\":\"2.0\",\"id\":1e400,\"result\":{"), "{line}");
    pi.send_raw("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getStatus\",\"id\":\"b\"}\n").await;
    let v = pi.next().await;
    assert_eq!(v["id"], "b", "{v}");
    assert!(v["result"]["sessionId"].is_string(), "{v}");
}

/// Split header-framed output into bodies.
fn frames(pi: &Pi) -> Vec<Value> {
    let all = pi.transcript.join("\n");
    let mut rest = all.as_str();
    let mut out = Vec::new();
    while let Some(start) = rest.find("Content-Length: ") {
        rest = &rest[start + "Content-Length: ".len()..];
        let Some((len, after)) = rest.split_once("\r\n\r\n") else { break };
        let len: usize = len.trim().parse().expect("a length");
        out.push(serde_json::from_str(&after[..len]).expect("a JSON body"));
        rest = &after[len..];
    }
    out
}

fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

#[tokio::test]
async fn content_length_framing_resynchronises_and_bounds_header_lines() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    let request = |id: u32| frame(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"getStatus\"}}"));
    let mut input = request(1);
    input.push_str("stray bytes");
    input.push_str(&request(2));
    input.push_str("Content-Length: 2\r\nX-Junk: ");
    input.push_str(&"a".repeat(1 << 20));
    input.push_str("\r\n\r\n{}");
    input.push_str(&request(3));
    pi.send_raw(&input).await;
    pi.close_stdin();
    while pi.next_line().await.is_some() {}
    let bodies = frames(&pi);
    let ids: Vec<Value> = bodies.iter().filter(|b| b.get("result").is_some()).map(|b| b["id"].clone()).collect();
    assert_eq!(ids, vec![json!(1), json!(2), json!(3)], "{bodies:?}");
    let errors: Vec<&str> = bodies.iter().filter_map(|b| b["error"]["message"].as_str()).collect();
    assert_eq!(
        errors,
        vec![
            "Parse error: 10 stray bytes before a Content-Length header",
            "Parse error: header line longer than 8192 bytes",
            "Parse error: 2 stray bytes before a Content-Length header",
        ],
        "{bodies:?}"
    );
    assert!(bodies.iter().all(|b| b["error"].is_null() || b["error"]["code"] == -32700), "{bodies:?}");
}
