//! Native dialect: framing and bad input never kill the session.

use serde_json::{Value, json};

use crate::harness::Sandbox;

async fn expect_error(pi: &mut crate::harness::Pi, raw: &str) -> Value {
    pi.send_raw(raw).await;
    let v = pi.next().await;
    assert_eq!(v["type"], "response", "for input {raw:?}: {v}");
    assert_eq!(v["success"], false, "for input {raw:?}: {v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    v
}

#[tokio::test]
async fn every_kind_of_bad_input_gets_one_clear_error_and_the_session_goes_on() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);

    let v = expect_error(&mut pi, "this is not json\n").await;
    assert_eq!(v["command"], "parse");
    assert!(v.get("id").is_none());
    assert!(v["error"].as_str().unwrap().starts_with("Failed to parse command: "));

    let v = expect_error(&mut pi, "\n").await;
    assert_eq!(v["command"], "parse");

    let v = expect_error(&mut pi, "null\n").await;
    assert!(v["error"].as_str().unwrap().contains("expected a JSON object"), "{v}");
    expect_error(&mut pi, "[1,2,3]\n").await;
    expect_error(&mut pi, "42\n").await;
    expect_error(&mut pi, "\"str\"\n").await;

    let v = expect_error(&mut pi, "{\"id\":\"u2\"}\n").await;
    assert_eq!(v["id"], "u2");
    assert!(v.get("command").is_none());
    assert!(v["error"].as_str().unwrap().contains("\"type\""));

    let v = expect_error(&mut pi, "{\"id\":\"u1\",\"type\":\"no_such_command\"}\n").await;
    assert_eq!(v["id"], "u1");
    assert_eq!(v["command"], "no_such_command");
    assert_eq!(v["error"], "Unknown command: no_such_command");

    let v = expect_error(&mut pi, "{\"id\":3,\"type\":\"prompt\"}\n").await;
    assert_eq!((v["id"].clone(), v["command"].clone()), (json!(3), json!("prompt")));
    assert!(v["error"].as_str().unwrap().contains("\"message\""));

    let v = expect_error(&mut pi, "{\"type\":\"set_auto_retry\",\"enabled\":\"yes\"}\n").await;
    assert!(v["error"].as_str().unwrap().contains("boolean"));
    let v = expect_error(&mut pi, "{\"type\":\"set_thinking_level\",\"level\":\"bogus\"}\n").await;
    assert!(v["error"].as_str().unwrap().contains("bogus"));
    let v = expect_error(&mut pi, "{\"type\":\"set_steering_mode\",\"mode\":\"sideways\"}\n").await;
    assert!(v["error"].as_str().unwrap().contains("sideways"));

    // Invalid UTF-8.
    pi.send_bytes(b"{\"type\":\"get_state\",\"x\":\"\xff\xfe\"}\n").await;
    let v = pi.next().await;
    assert_eq!((v["command"].clone(), v["success"].clone()), (json!("parse"), json!(false)));
    assert!(v["error"].as_str().unwrap().contains("UTF-8"), "{v}");

    // A 10 MB line of garbage is answered, and so is the next command.
    let big = format!("{{\"type\":\"prompt\",\"message\":\"{}\"\n", "x".repeat(10 * 1024 * 1024));
    pi.send_raw(&big).await;
    let v = pi.next().await;
    assert_eq!(v["command"], "parse", "{}", &v.to_string()[..200.min(v.to_string().len())]);

    // CRLF and surrounding spaces are fine; ids of any type are echoed verbatim.
    pi.send_raw("  {\"id\":{\"nested\":[1]},\"type\":\"get_state\"}  \r\n").await;
    let v = pi.next().await;
    assert_eq!(v["id"], json!({"nested": [1]}));
    assert_eq!(v["success"], true);
    pi.send_raw("{\"id\":18446744073709551616,\"type\":\"get_state\"}\n").await;
    let line = pi.next_line().await.unwrap();
    assert!(line.starts_with("{\"id\":18446744073709551616,\"type\":\"response\""), "{line}");
}

#[tokio::test]
async fn unicode_line_separators_stay_inside_strings() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    let v = pi.call("n", json!({"type": "set_session_name", "name": "a\u{2028}b\u{2029}c"})).await;
    assert_eq!(v["success"], true, "{v}");
    let v = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(v["data"]["sessionName"], "a\u{2028}b\u{2029}c");
}

#[tokio::test]
async fn a_burst_of_ten_thousand_commands_is_answered_in_full() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    let mut input = String::new();
    for i in 0..10_000 {
        input.push_str(&format!("{{\"id\":{i},\"type\":\"get_state\"}}\n"));
    }
    pi.send_bytes(input.as_bytes()).await;
    let mut seen = vec![false; 10_000];
    for _ in 0..10_000 {
        let v = pi.next().await;
        assert_eq!(v["success"], true);
        seen[v["id"].as_u64().unwrap() as usize] = true;
    }
    assert!(seen.iter().all(|s| *s));
}
