//! The fuzzer's input: well-formed commands of each dialect with unique ids,
//! and mutations of them (wrong types, huge/negative/fractional ids, deep
//! nesting, long lines, invalid UTF-8, U+2028/U+2029, truncated JSON,
//! batches, junk), each with what the agent must answer.

use serde_json::{Map, Value, json};

use crate::rng::Rng;

/// Which dialect and framing the records are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// pi's JSONL dialect.
    Native,
    /// JSON-RPC 2.0, one message per line.
    JsonRpc,
    /// JSON-RPC 2.0 in `Content-Length` frames.
    Lsp,
    /// The Agent Client Protocol (JSON-RPC 2.0 lines, many sessions).
    Acp,
}

impl Dialect {
    pub const ALL: [Dialect; 4] = [Dialect::Native, Dialect::JsonRpc, Dialect::Lsp, Dialect::Acp];

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Native => "native",
            Dialect::JsonRpc => "jsonrpc",
            Dialect::Lsp => "lsp",
            Dialect::Acp => "acp",
        }
    }

    pub fn parse(name: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// What the agent owes for one message sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// Exactly one response with this id (its raw JSON text).
    Reply(String),
    /// At most one response with this id, and maybe an error without one
    /// (a mutated message whose id may or may not be read).
    MaybeReply(String),
    /// A native command without id: one response without id.
    Anonymous,
    /// Unreadable: at most one error response without a usable id.
    Broken,
    /// Never answered: a JSON-RPC notification, a native UI response.
    Silent,
}

/// One record written to the agent.
#[derive(Debug, Clone)]
pub struct Record {
    pub bytes: Vec<u8>,
    pub expects: Vec<Expect>,
}

const WORDS: &[&str] = &[
    "hello",
    "list files",
    "ünïcödé",
    "emoji 🦀",
    "tab\there",
    "line\nbreak",
    "quote \" and \\ slash",
    "\u{2028}sep\u{2029}",
    "#marker",
    "",
    " ",
    "a much longer sentence that keeps going for a while to make a bigger delta",
];
const BASH: &[&str] = &["echo hi", "seq 1 3000", "printf 'a\\r\\nb'", "echo err >&2; exit 3", "sleep 0.05", "true"];
const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh", "bogus"];

/// Native commands: (type, fields); JSON-RPC uses the mapped method names.
fn native_command(rng: &mut Rng) -> (&'static str, Map<String, Value>) {
    let mut f = Map::new();
    let word = |rng: &mut Rng| Value::String(rng.pick(WORDS).to_string());
    let kind = match rng.below(100) {
        0..=11 => "get_state",
        12..=17 => "get_messages",
        18..=21 => "get_session_stats",
        22..=24 => "get_commands",
        25..=27 => "get_last_assistant_text",
        28..=30 => "get_fork_messages",
        31..=33 => "get_tree",
        34..=36 => "get_entries",
        37..=39 => "get_available_thinking_levels",
        40..=43 => {
            f.insert("level".into(), Value::String(rng.pick(LEVELS).to_string()));
            "set_thinking_level"
        }
        44..=45 => "cycle_thinking_level",
        46..=47 => {
            f.insert("mode".into(), json!(if rng.chance(50) { "all" } else { "one-at-a-time" }));
            if rng.chance(50) { "set_steering_mode" } else { "set_follow_up_mode" }
        }
        48..=49 => {
            f.insert("enabled".into(), json!(rng.chance(50)));
            if rng.chance(50) { "set_auto_compaction" } else { "set_auto_retry" }
        }
        50..=61 => {
            f.insert("message".into(), word(rng));
            if rng.chance(60) {
                f.insert("streamingBehavior".into(), json!(if rng.chance(50) { "steer" } else { "followUp" }));
            }
            "prompt"
        }
        62..=65 => {
            f.insert("message".into(), word(rng));
            "steer"
        }
        66..=69 => {
            f.insert("message".into(), word(rng));
            "follow_up"
        }
        70..=75 => "abort",
        76..=77 => "abort_retry",
        78..=79 => "clear_queue",
        80 => {
            f.insert("command".into(), json!(rng.pick(BASH)));
            "bash"
        }
        81..=84 => "get_state",
        85..=86 => "abort_bash",
        87..=88 => {
            f.insert("name".into(), word(rng));
            "set_session_name"
        }
        89 => "new_session",
        90..=91 => "export_html",
        _ => "get_state",
    };
    (kind, f)
}

/// The JSON-RPC method of a native command type, from the protocol table.
fn method_of(kind: &str) -> &'static str {
    pi_transport::protocol::COMMANDS
        .iter()
        .find(|c| c.native.is_some_and(|b| b.name == kind))
        .and_then(|c| c.jsonrpc)
        .map_or("getState", |b| b.name)
}

/// A unique id, as raw JSON text: mostly strings, also integers, negative,
/// fractional and beyond-64-bit numbers.
pub(crate) fn id_text(rng: &mut Rng, n: usize) -> String {
    match rng.below(10) {
        0 => format!("{n}"),
        1 => format!("-{n}"),
        2 => format!("{n}.25"),
        3 => format!("1844674407370955161{n}"),
        4 => format!("{n}e2"),
        _ => format!("\"f{n}\""),
    }
}

/// A well-formed message: (JSON text, id raw text or None).
fn well_formed(rng: &mut Rng, dialect: Dialect, n: usize, with_id: bool) -> (String, Option<String>) {
    let (kind, fields) = native_command(rng);
    let id = with_id.then(|| id_text(rng, n));
    let text = match dialect {
        Dialect::Native => {
            let mut obj = String::from("{");
            if let Some(id) = &id {
                obj.push_str(&format!("\"id\":{id},"));
            }
            obj.push_str(&format!("\"type\":\"{kind}\""));
            for (k, v) in &fields {
                obj.push_str(&format!(",{}:{}", json!(k), v));
            }
            obj.push('}');
            obj
        }
        Dialect::JsonRpc | Dialect::Lsp | Dialect::Acp => {
            let mut obj = String::from("{\"jsonrpc\":\"2.0\",");
            if let Some(id) = &id {
                obj.push_str(&format!("\"id\":{id},"));
            }
            obj.push_str(&format!("\"method\":\"{}\",\"params\":{}}}", method_of(kind), Value::Object(fields)));
            obj
        }
    };
    (text, id)
}

/// Mutate a well-formed message. Returns the bytes and whether the id
/// certainly survives in a readable message (else the answer may lack it).
pub(crate) fn mutate(rng: &mut Rng, text: &str) -> (Vec<u8>, bool) {
    let close = text.len() - 1; // position of the final `}`
    match rng.below(11) {
        // A field of the wrong type.
        0 => {
            let junk = rng.pick(&["1", "-1.5", "[]", "{}", "null", "true", "\"x\"", "[1,{\"a\":[]}]"]).to_string();
            let key = rng.pick(&["type", "method", "message", "level", "params", "mode", "enabled", "command"]);
            (format!("{},\"{key}\":{junk}}}", &text[..close]).into_bytes(), true)
        }
        // Truncated JSON.
        1 => (text.as_bytes()[..rng.below(close.max(1))].to_vec(), false),
        // Invalid UTF-8 inside.
        2 => {
            let mut bytes = text.as_bytes().to_vec();
            let at = rng.below(bytes.len());
            const BAD: [&[u8]; 4] = [&[0xFF], &[0xC3, 0x28], &[0x80], &[0xED, 0xA0, 0x80]];
            let bad: &[u8] = BAD[rng.below(BAD.len())];
            bytes.splice(at..at, bad.iter().copied());
            (bytes, false)
        }
        // Deep nesting.
        3 => {
            let depth = 100 + rng.below(4000);
            (format!("{},\"deep\":{}{}}}", &text[..close], "[".repeat(depth), "]".repeat(depth)).into_bytes(), false)
        }
        // A long line.
        4 => {
            let len = 1_000 + if rng.chance(3) { rng.below(1_000_000) } else { rng.below(20_000) };
            (format!("{},\"long\":\"{}\"}}", &text[..close], "x".repeat(len)).into_bytes(), true)
        }
        // Raw U+2028 / U+2029 inside a string (valid JSON, not a line break).
        5 => (format!("{},\"sep\":\"a\u{2028}b\u{2029}c\"}}", &text[..close]).into_bytes(), true),
        // Unknown members and odd whitespace, CRLF.
        6 => (format!(" {} ,\"zz\":{{\"q\":[1,2,3]}}}}\r", &text[..close]).into_bytes(), true),
        // Junk that is not JSON, or JSON that is not an object.
        7 => {
            let junk =
                rng.pick(&["garbage", "{", "}", "[", "\"str\"", "42", "null", "{\"a\":", "\u{feff}", "\t", "[1,2]"]);
            (junk.as_bytes().to_vec(), false)
        }
        // Control characters raw inside a string.
        8 => (format!("{},\"ctl\":\"a\u{1}b\u{7f}\"}}", &text[..close]).into_bytes(), false),
        // A duplicate unknown member (never `id`: duplicate ids belong to issue 12).
        9 => (format!("{},\"zz\":1,\"zz\":2}}", &text[..close]).into_bytes(), true),
        // NUL bytes.
        _ => {
            let mut bytes = text.as_bytes().to_vec();
            let at = rng.below(bytes.len());
            bytes.insert(at, 0);
            (bytes, false)
        }
    }
}

/// Frame one message for the dialect.
pub fn frame(dialect: Dialect, body: &[u8]) -> Vec<u8> {
    match dialect {
        Dialect::Native | Dialect::JsonRpc | Dialect::Acp => {
            let mut out = body.to_vec();
            out.push(b'\n');
            out
        }
        Dialect::Lsp => {
            let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(body);
            out
        }
    }
}

/// The first record: a plain well-formed request, so the dialect is detected.
pub fn opening(dialect: Dialect) -> Record {
    if dialect == Dialect::Acp {
        return crate::acp_inputs::opening();
    }
    let (text, id) = match dialect {
        Dialect::Native => (r#"{"id":"open","type":"get_state"}"#.to_string(), "\"open\""),
        _ => (r#"{"jsonrpc":"2.0","id":"open","method":"initialize","params":{}}"#.to_string(), "\"open\""),
    };
    Record { bytes: frame(dialect, text.as_bytes()), expects: vec![Expect::Reply(id.to_string())] }
}

/// The last record: a state request whose answer ends the case.
pub fn closing(dialect: Dialect) -> Record {
    if dialect == Dialect::Acp {
        return crate::acp_inputs::closing();
    }
    let text = match dialect {
        Dialect::Native => r#"{"id":"final","type":"get_state"}"#,
        _ => r#"{"jsonrpc":"2.0","id":"final","method":"getState"}"#,
    };
    Record { bytes: frame(dialect, text.as_bytes()), expects: vec![Expect::Reply("\"final\"".into())] }
}

/// Record number `n` of a case.
pub fn record(rng: &mut Rng, dialect: Dialect, n: usize) -> Record {
    if dialect == Dialect::Acp {
        return crate::acp_inputs::record(rng, n);
    }
    let rpc = dialect != Dialect::Native;
    if rpc && rng.chance(4) {
        return batch(rng, dialect, n);
    }
    let anonymous = rng.chance(5);
    let (text, id) = well_formed(rng, dialect, n, !anonymous);
    let unanswered = if rpc { Expect::Silent } else { Expect::Anonymous };
    if rng.chance(60) {
        let expect = id.map(Expect::Reply).unwrap_or(unanswered);
        return Record { bytes: frame(dialect, text.as_bytes()), expects: vec![expect] };
    }
    let (bytes, id_survives) = mutate(rng, &text);
    let mut expects = match (id, id_survives) {
        (Some(id), true) => vec![Expect::Reply(id)],
        (Some(id), false) => vec![Expect::MaybeReply(id), Expect::Broken],
        (None, true) if !rpc => vec![Expect::Anonymous],
        (None, _) => vec![Expect::Broken],
    };
    if rpc && bytes == b"[1,2]" {
        // A batch of two junk items: two errors without id.
        expects.push(Expect::Broken);
    }
    Record { bytes: frame(dialect, &bytes), expects }
}

/// A JSON-RPC batch of requests, notifications and junk (or an empty one).
fn batch(rng: &mut Rng, dialect: Dialect, n: usize) -> Record {
    let size = rng.below(6);
    if size == 0 {
        return Record { bytes: frame(dialect, b"[]"), expects: vec![Expect::Broken] };
    }
    let mut items = Vec::new();
    let mut expects = Vec::new();
    for k in 0..size {
        if rng.chance(15) {
            items.push(rng.pick(&["1", "\"x\"", "{}", "[]", "{\"jsonrpc\":\"2.0\"}"]).to_string());
            expects.push(Expect::Broken);
            continue;
        }
        let notification = rng.chance(25);
        let (text, id) = well_formed(rng, dialect, n * 10 + k, !notification);
        items.push(text);
        expects.push(id.map(Expect::Reply).unwrap_or(Expect::Silent));
    }
    let body = format!("[{}]", items.join(","));
    Record { bytes: frame(dialect, body.as_bytes()), expects }
}

/// A faux model script (JSONL) for the case: text, thinking, tool calls and
/// scripted errors, with small delays.
pub fn faux_script(rng: &mut Rng) -> String {
    let mut out = String::new();
    for _ in 0..200 {
        let delay = rng.below(2);
        let line = match rng.below(10) {
            0..=3 => json!({"text": rng.pick(WORDS), "delayMs": delay}),
            4 => json!({"thinking": "hmm", "text": "thought", "delayMs": delay}),
            5..=6 => {
                json!({"toolCalls": [{"name": "bash", "arguments": {"command": rng.pick(BASH)}}], "delayMs": delay})
            }
            7 => {
                json!({"toolCalls": [{"name": "read", "arguments": {"path": "missing.txt"}}, {"name": "ls", "arguments": {}}]})
            }
            8 => json!({"error": {"message": "503 flaky upstream", "kind": "transient"}}),
            _ => json!({"error": rng.pick(&["400 bad request", "overloaded_error"])}),
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}
