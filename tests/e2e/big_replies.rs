//! Big replies through the binary: a session whose messages are several
//! hundred KiB (non-ASCII, escapes, U+2028) answers `get_messages`,
//! `get_entries`, `get_tree` and `get_fork_messages` — written as they are
//! serialised — as whole lines, in order with the replies around them, the
//! same in the native dialect, JSON-RPC over lines and `Content-Length` frames.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};

fn awkward(n: usize) -> String {
    let parts = ["ascii ", "é ü ", "日本語 ", "🦀 ", "\"q\" \\ ", "\n\t\u{1} ", "\u{2028}\u{2029} "];
    let mut text = String::new();
    let mut i = n;
    while text.len() < 200_000 + 9_973 * n {
        text.push_str(parts[i % parts.len()]);
        i += 1 + i % 4;
    }
    text
}

/// The core's `crafted.jsonl` with three big user messages after its leaf; their texts.
fn big_session(sb: &Sandbox) -> (PathBuf, Vec<String>) {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crates/session/src/session/testdata/crafted.jsonl");
    let mut text = std::fs::read_to_string(fixture).expect("fixture");
    let mut parent = "e0000019".to_string();
    let mut texts = Vec::new();
    for n in 1..=3 {
        let id = format!("b000000{n}");
        let message = json!({"role": "user", "content": awkward(n), "timestamp": 1767323100000_i64 + n as i64});
        let entry = json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-02T03:05:00.000Z", "message": message});
        text.push_str(&entry.to_string());
        text.push('\n');
        texts.push(awkward(n));
        parent = id;
    }
    let path = sb.cwd.path().join("big.jsonl");
    std::fs::write(&path, text).expect("session file");
    let models = json!({"providers": {"fake-openai": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k",
        "models": [{"id": "fake-model", "contextWindow": 128000, "maxTokens": 16384}]}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("models.json");
    (path, texts)
}

fn last_texts(messages: &Value, n: usize) -> Vec<String> {
    let all = messages.as_array().expect("messages");
    all[all.len() - n..].iter().map(|m| m["content"].as_str().unwrap_or_default().to_string()).collect()
}

/// Every line, in order, until `count` lines were read.
async fn lines(pi: &mut Pi, count: usize) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < count {
        out.push(pi.next_line().await.expect("a line"));
    }
    out
}

#[tokio::test]
async fn big_replies_come_whole_and_in_order_in_both_dialects() {
    let sb = Sandbox::offline();
    let (path, texts) = big_session(&sb);
    let session = path.to_str().unwrap();

    let mut pi = sb.spawn(&["--session", session]);
    let commands = ["get_messages", "get_state", "get_entries", "get_tree", "get_fork_messages", "get_state"];
    let input: String =
        commands.iter().enumerate().map(|(i, c)| format!("{{\"id\":\"r{i}\",\"type\":\"{c}\"}}\n")).collect();
    pi.send_raw(&input).await;
    let native: Vec<Value> =
        lines(&mut pi, commands.len()).await.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (i, (response, command)) in native.iter().zip(commands).enumerate() {
        assert_eq!((response["id"].clone(), response["command"].clone()), (json!(format!("r{i}")), json!(command)));
        assert_eq!(response["success"], true, "{command}");
    }
    assert_eq!(last_texts(&native[0]["data"]["messages"], 3), texts);
    let entries = native[2]["data"]["entries"].as_array().unwrap();
    let entry_texts: Vec<&str> =
        entries[entries.len() - 3..].iter().map(|e| e["message"]["content"].as_str().unwrap()).collect();
    assert_eq!(entry_texts, texts);
    assert!(native[3]["data"]["tree"].to_string().contains(&serde_json::to_string(&texts[2]).unwrap()));
    let forks = native[4]["data"]["messages"].as_array().unwrap();
    assert_eq!(forks.last().unwrap()["text"], json!(texts[2]));
    pi.close_stdin();
    pi.wait().await;

    let mut pi = sb.spawn(&["--session", session]);
    let methods = ["getMessages", "getStatus", "getEntries", "getTree", "getForkMessages"];
    let input: String = methods
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"{m}\"}}\n"))
        .collect();
    pi.send_raw(&input).await;
    let raw = lines(&mut pi, methods.len()).await;
    assert!(raw.iter().all(|l| !l.contains('\u{2028}') && !l.contains('\u{2029}')), "separators are escaped");
    let rpc: Vec<Value> = raw.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rpc.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), (0..5).map(|i| json!(i)).collect::<Vec<_>>());
    for (n, i) in [(0, 0), (2, 2), (3, 3), (4, 4)] {
        assert_eq!(rpc[i]["result"], native[n]["data"], "{} answers what the native dialect does", methods[i]);
    }
    pi.close_stdin();
    pi.wait().await;

    let mut pi = sb.spawn(&["--session", session]);
    let body = r#"{"jsonrpc":"2.0","id":"big","method":"getMessages"}"#;
    pi.send_raw(&format!("Content-Length: {}\r\n\r\n{body}", body.len())).await;
    pi.close_stdin();
    while pi.next_line().await.is_some() {}
    let all = pi.transcript.join("\n");
    let (len, rest) = all.split_once("\r\n\r\n").expect("a frame");
    let len: usize = len.trim_start_matches("Content-Length: ").trim().parse().expect("a length");
    assert_eq!(len, rest.len(), "the frame's length is its body's");
    let framed: Value = serde_json::from_str(rest).expect("a JSON body");
    assert_eq!(framed["result"], native[0]["data"]);
}
