//! The fuzzer's ACP input: the session lifecycle, prompts, cancels, config
//! changes and answers to requests pi-rpc never made, well formed or
//! mutated like the other dialects' messages (wrong types, truncation, bad
//! UTF-8, deep nesting, long lines, junk). Session ids and the working
//! directory are placeholders, filled in by the runner once the opening's
//! two `session/new`s are answered.

use serde_json::{Value, json};

use crate::inputs::{Expect, Record, frame, id_text, mutate};
use crate::rng::Rng;

/// The sandbox's working directory.
pub const CWD: &str = "@CWD@";
/// The two sessions the opening makes.
pub const SESSIONS: [&str; 2] = ["@S0@", "@S1@"];
/// Their `session/new` request ids (raw JSON).
pub const OPENING_IDS: [&str; 2] = ["\"open-s0\"", "\"open-s1\""];

const TEXTS: &[&str] = &[
    "hello",
    "list files",
    "ünïcödé 🦀",
    "line\nbreak",
    "quote \" and \\ slash",
    "\u{2028}sep\u{2029}",
    "",
    "a much longer sentence that keeps going for a while to make a bigger answer",
];

fn session(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => json!("no-such-session"),
        1 => json!(uuid_like(rng)),
        n => json!(SESSIONS[n % 2]),
    }
}

fn uuid_like(rng: &mut Rng) -> String {
    format!("0190{:04x}-0000-7000-8000-{:012x}", rng.below(0xffff), rng.below(1 << 40))
}

fn prompt_blocks(rng: &mut Rng) -> Value {
    let text = json!({"type": "text", "text": rng.pick(TEXTS)});
    match rng.below(12) {
        0 => json!([text, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]),
        1 => json!([{"type": "resource_link", "uri": "file:///etc/hosts", "name": "hosts"}, text]),
        2 => json!([{"type": "resource", "resource": {"uri": "file:///x.txt", "text": "embedded"}}]),
        3 => json!([]),
        4 => json!([{"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}]),
        _ => json!([text]),
    }
}

/// A well-formed ACP message: (method, params, whether it is a request).
fn message(rng: &mut Rng) -> (&'static str, Value, bool) {
    let sid = session(rng);
    let opened = json!({"sessionId": sid, "cwd": CWD, "mcpServers": []});
    match rng.below(100) {
        0..=24 => ("session/prompt", json!({"sessionId": sid, "prompt": prompt_blocks(rng)}), true),
        25..=32 => ("session/cancel", json!({"sessionId": sid}), false),
        33..=35 => ("session/cancel", json!({"sessionId": sid}), true),
        36..=38 => ("$/cancel_request", json!({"requestId": rng.below(200)}), false),
        39..=43 => {
            let mode = rng.pick(&["ask", "auto", "read-only", "bogus"]);
            ("session/set_mode", json!({"sessionId": sid, "modeId": mode}), true)
        }
        44..=48 => {
            let (config, value) = match rng.below(4) {
                0 => ("mode", *rng.pick(&["ask", "auto", "read-only", "nope"])),
                1 => ("model", *rng.pick(&["faux/faux-1", "faux-1", "nobody/none"])),
                2 => ("thought_level", *rng.pick(&["off", "low", "high", "xhigh", "bogus"])),
                _ => ("bogus", "x"),
            };
            ("session/set_config_option", json!({"sessionId": sid, "configId": config, "value": value}), true)
        }
        49..=54 => ("session/new", json!({"cwd": CWD, "mcpServers": []}), true),
        55..=57 => ("session/load", opened, true),
        58..=60 => ("session/resume", opened, true),
        61..=62 => ("session/fork", opened, true),
        63..=67 => ("session/list", if rng.chance(50) { json!({}) } else { json!({"cwd": CWD}) }, true),
        68..=69 => ("session/close", json!({"sessionId": if rng.chance(70) { json!(SESSIONS[1]) } else { sid }}), true),
        70 => ("session/delete", json!({"sessionId": uuid_like(rng)}), true),
        71..=72 => ("authenticate", json!({"methodId": rng.pick(&["pi-config", "other"])}), true),
        73 => ("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}), true),
        74..=77 => (*rng.pick(&["session/unknown", "fs/read_text_file", "_ext/method", ""]), json!({}), true),
        78..=80 => {
            ("session/new", json!({"cwd": rng.pick(&["relative/dir", "/no/such/dir", ""]), "mcpServers": []}), true)
        }
        _ => ("session/prompt", json!({"sessionId": sid, "prompt": prompt_blocks(rng)}), true),
    }
}

/// An answer to a request pi-rpc may or may not have made (never answered).
fn response(rng: &mut Rng) -> String {
    let id = rng.below(40);
    match rng.below(4) {
        0 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32800,"message":"Request cancelled"}}}}"#),
        1 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"outcome":{{"outcome":"selected","optionId":"allow_once"}}}}}}"#
        ),
        2 => format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":null}}"#),
        _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
    }
}

/// The opening: `initialize`, then the two sessions the placeholders name.
pub fn opening() -> Record {
    let mut bytes = frame(
        crate::inputs::Dialect::Acp,
        br#"{"jsonrpc":"2.0","id":"open","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}}"#,
    );
    let mut expects = vec![Expect::Reply("\"open\"".into())];
    for id in OPENING_IDS {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"{CWD}","mcpServers":[]}}}}"#
        );
        bytes.extend(frame(crate::inputs::Dialect::Acp, text.as_bytes()));
        expects.push(Expect::Reply(id.into()));
    }
    Record { bytes, expects }
}

/// The last record: a listing whose answer ends the case.
pub fn closing() -> Record {
    let text = r#"{"jsonrpc":"2.0","id":"final","method":"session/list","params":{}}"#;
    Record {
        bytes: frame(crate::inputs::Dialect::Acp, text.as_bytes()),
        expects: vec![Expect::Reply("\"final\"".into())],
    }
}

/// Record number `n` of an ACP case.
pub fn record(rng: &mut Rng, n: usize) -> Record {
    if rng.chance(6) {
        let text = response(rng);
        return match rng.chance(70) {
            true => {
                Record { bytes: frame(crate::inputs::Dialect::Acp, text.as_bytes()), expects: vec![Expect::Silent] }
            }
            // Mutated, it may read as a request with that id (or not at all).
            false => {
                let (bytes, _) = mutate(rng, &text);
                let id = text.split("\"id\":").nth(1).and_then(|r| r.split(',').next()).unwrap_or("0").to_string();
                Record {
                    bytes: frame(crate::inputs::Dialect::Acp, &bytes),
                    expects: vec![Expect::MaybeReply(id), Expect::Broken],
                }
            }
        };
    }
    let (method, params, request) = message(rng);
    let id = request.then(|| id_text(rng, n));
    let mut text = String::from("{\"jsonrpc\":\"2.0\",");
    if let Some(id) = &id {
        text.push_str(&format!("\"id\":{id},"));
    }
    text.push_str(&format!("\"method\":{},\"params\":{params}}}", json!(method)));
    if rng.chance(60) {
        let expect = id.map(Expect::Reply).unwrap_or(Expect::Silent);
        return Record { bytes: frame(crate::inputs::Dialect::Acp, text.as_bytes()), expects: vec![expect] };
    }
    let (bytes, id_survives) = mutate(rng, &text);
    let expects = match (id, id_survives) {
        (Some(id), true) => vec![Expect::Reply(id)],
        (Some(id), false) => vec![Expect::MaybeReply(id), Expect::Broken],
        (None, _) => vec![Expect::Broken],
    };
    Record { bytes: frame(crate::inputs::Dialect::Acp, &bytes), expects }
}

/// Fill in the placeholders: the working directory and the two sessions.
pub fn fill(bytes: &[u8], cwd: &str, sessions: &[String; 2]) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    // Only valid UTF-8 inputs can be filled in as text; others keep their bytes.
    if text.as_bytes() != bytes {
        return replace_bytes(bytes, cwd, sessions);
    }
    text = text.replace(CWD, cwd);
    for (placeholder, id) in SESSIONS.iter().zip(sessions) {
        text = text.replace(placeholder, id);
    }
    text.into_bytes()
}

fn replace_bytes(bytes: &[u8], cwd: &str, sessions: &[String; 2]) -> Vec<u8> {
    let pairs = [(CWD, cwd), (SESSIONS[0], sessions[0].as_str()), (SESSIONS[1], sessions[1].as_str())];
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    'outer: while i < bytes.len() {
        for (from, to) in pairs {
            if bytes[i..].starts_with(from.as_bytes()) {
                out.extend_from_slice(to.as_bytes());
                i += from.len();
                continue 'outer;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_in_text_and_in_bytes() {
        let sessions = ["a-1".to_string(), "b-2".to_string()];
        let text = br#"{"sessionId":"@S0@","cwd":"@CWD@","x":"@S1@"}"#;
        assert_eq!(fill(text, "/w", &sessions), br#"{"sessionId":"a-1","cwd":"/w","x":"b-2"}"#);
        let mut bad = text.to_vec();
        bad.insert(2, 0xFF);
        let filled = fill(&bad, "/w", &sessions);
        assert!(filled.windows(3).any(|w| w == b"a-1") && filled.contains(&0xFF));
    }

    #[test]
    fn records_are_deterministic_and_owe_answers() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for n in 0..300 {
            let (x, y) = (record(&mut a, n), record(&mut b, n));
            assert_eq!(x.bytes, y.bytes);
            assert!(!x.expects.is_empty());
        }
    }
}
