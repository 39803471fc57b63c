//! The fast line reader (`fast_line`) against the careful reading: same records, contexts and bytes.

use serde_json::{Value, json};

use super::{fixture, jsonl_files};
use crate::session::Session;
use crate::session::fast_line::read_known_entry;
use crate::session::store::Record;

/// The careful reading of one line (a `Value`, classified, its text kept
/// when the typed form differs), as the loader does for lines it refuses.
fn careful(line: &str) -> Record {
    Record::from_value(serde_json::from_str::<Value>(line).unwrap())
}

/// Whatever `Record::from_line` makes of `line` equals the careful record,
/// in the entry, the kept text, the line it writes back and its JSON.
fn assert_same_as_careful(line: &str) -> bool {
    let Some(fast) = Record::from_line(line.as_bytes()) else { return false };
    let careful = careful(line);
    assert_eq!(fast.entry, careful.entry, "{line}");
    assert_eq!(fast.raw, careful.raw, "{line}");
    assert_eq!(fast.to_line().unwrap(), careful.to_line().unwrap(), "{line}");
    // A line with JSON spacing is written again without it.
    let compact = crate::session::compact::compact_json(line.as_bytes()).map(|c| String::from_utf8(c).unwrap());
    assert_eq!(fast.to_line().unwrap(), compact.as_deref().unwrap_or(line), "{line}");
    assert_eq!(fast.to_value().unwrap(), careful.to_value().unwrap(), "{line}");
    assert_eq!(serde_json::to_string(&fast.entry).unwrap(), serde_json::to_string(&careful.entry).unwrap());
    true
}

/// Every entry line of every fixture: the fast reader's record is the careful one.
#[test]
fn fixture_lines_read_fast_are_the_careful_records() {
    let mut read_fast = 0;
    for path in jsonl_files(&fixture("")) {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            if serde_json::from_str::<Value>(line).is_err() {
                assert!(Record::from_line(line.as_bytes()).is_none(), "{line}");
                continue;
            }
            let fast = read_known_entry(line.as_bytes()).is_some();
            let taken = assert_same_as_careful(line);
            read_fast += usize::from(fast && taken);
        }
    }
    assert!(read_fast > 30, "the fast reader took only {read_fast} fixture lines");
}

/// A line like the ones pi writes for a tool result of a source file:
/// quotes, backslashes, tabs, control and non-ASCII characters.
fn tool_result_line(text: &str) -> String {
    let message = json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 1_700_000_000_123_i64});
    let entry = json!({"type": "message", "id": "a1b2c3d4", "parentId": "00ff00ff",
        "timestamp": "2026-11-30T01:11:43.548Z", "message": message});
    serde_json::to_string(&entry).unwrap()
}

#[test]
fn shapes_pi_writes_are_read_fast_and_odd_ones_carefully() {
    let source = "fn main() {\n\tformat!(\"a \\\\ b\"); // é ü 💡 \u{1} \u{8}\u{c}\r\n}\n";
    let plain = [
        tool_result_line(source),
        tool_result_line(""),
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#.into(),
        r#"{"type":"message","id":"a1","parentId":"p","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"q"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":1},"extraKey":[1,{"b":null}]}"#.into(),
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"s"},{"type":"text","text":"a","textSignature":"x"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a.rs"}}],"api":"openai-completions","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.0015,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.0015}},"stopReason":"toolUse","timestamp":5,"responseId":"r","durationMs":42,"thinkingLevel":"medium"}}"#.into(),
        r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"x"}],"details":{"diff":"-a\n+b"},"isError":true,"timestamp":6,"unknown":true}}"#.into(),
        r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":7}}"#.into(),
        r#"{"type":"message","id":"a5","parentId":"a4","timestamp":"t","message":{"role":"custom","customType":"x","content":"c","display":true,"timestamp":8}}"#.into(),
        r#"{"type":"label","id":"a6","parentId":"a5","timestamp":"t","targetId":"a1","label":"l"}"#.into(),
        r#"{"type":"branch_summary","id":"a7","parentId":"a6","timestamp":"t","fromId":"a1","summary":"s"}"#.into(),
    ];
    for line in &plain {
        assert!(read_known_entry(line.as_bytes()).is_some(), "not read fast: {line}");
        assert!(assert_same_as_careful(line), "refused: {line}");
    }
    // The fast reader refuses these; whatever the loader then keeps is the careful record.
    let odd = [
        // tags not first, keys and texts written with escapes
        r#"{"id":"a1","type":"message","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"content":"hi","role":"user","timestamp":1}}"#,
        r#"{"type":"message","i\u0064":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"caf\u00e9"}],"timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a\/b"}],"timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"\u001F"}],"timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"\ud83d\udca1"}],"timestamp":1}}"#,
        // duplicates: tags, fields, texts
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1},"type":"message"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1,"role":"user"}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"custom","customType":"x","content":"c","display":true,"timestamp":8,"role":"custom"}}"#,
        r#"{"type":"label","id":"a6","parentId":"a5","timestamp":"t","targetId":"a1","label":"l","type":"label"}"#,
        r#"{"type":"message","id":"a1","id":"a2","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1},"x":1,"x":2}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a","text":"b"}],"timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a","type":"text"}],"timestamp":1}}"#,
        // unknown fields where the typed form drops them, unknown roles and types
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a","cache":true}],"timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"system","content":"","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"video","url":"u"}],"timestamp":1}}"#,
        r#"{"type":"context_edit","id":"a1","parentId":null,"timestamp":"t","targetId":"x","replacement":null}"#,
    ];
    for line in odd {
        assert!(read_known_entry(line.as_bytes()).is_none(), "read fast: {line}");
        assert_same_as_careful(line);
    }
    // Shapes the typed form writes differently, missing or broken fields:
    // refused by the reader or by the byte comparison after it, or kept as
    // the careful reading keeps them (a message of a broken shape is kept raw).
    let written_differently = [
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1.0}}"#,
        r#"{"type":"message","id":"a1","timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":null,"api":"a","provider":"p","model":"m","usage":{},"stopReason":"stop","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"details":null,"isError":false,"timestamp":6}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","timestamp":1}}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t"}"#,
        r#"{"type": "message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#,
    ];
    for line in written_differently {
        assert_same_as_careful(line);
    }
    // Damaged lines are nobody's records.
    for line in [&plain[0][..plain[0].len() - 9], "{\"type\":\"message\"", "[1,2]", "", "\"text\""] {
        assert!(read_known_entry(line.as_bytes()).is_none(), "{line}");
        assert!(Record::from_line(line.as_bytes()).is_none(), "{line}");
    }
}

/// An assistant line as pi 1.6 writes it, with `usage` given as text.
fn assistant_line(usage: &str) -> String {
    format!(
        r#"{{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"hm\n\"q\""}},{{"type":"toolCall","id":"c","name":"read","arguments":{{"path":"a.rs"}}}}],"api":"openai-completions","provider":"p","model":"m","usage":{usage},"stopReason":"toolUse","timestamp":5,"responseId":"r","rawStopReason":"tool_calls","durationMs":42,"thinkingLevel":"medium"}}}}"#
    )
}

/// Usages whose keys come in another order than our `Usage` writes them
/// (pi 1.6.0's: `reasoning` right before `totalTokens`) are read fast and
/// kept as their text, exactly as the careful reading keeps them; usages
/// whose text is not what `serde_json` writes (spacing, numbers, duplicates,
/// escapes) are left to the careful path.
#[test]
fn assistant_lines_with_pis_usage_order_are_kept_as_the_careful_records() {
    let cost = r#"{"input":0.0015,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.0015,"totalFromProvider":false}"#;
    let other_orders = [
        format!(
            r#"{{"input":70513,"output":199,"cacheRead":0,"cacheWrite":0,"totalTokens":70712,"cost":{cost},"reasoning":0}}"#
        ),
        format!(
            r#"{{"input":1,"output":2,"reasoning":7,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost},"x":[1.5,{{"y":null}}]}}"#
        ),
        format!(r#"{{"reasoning":0,"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#),
    ];
    for usage in &other_orders {
        let line = assistant_line(usage);
        let record = Record::from_line(line.as_bytes()).unwrap_or_else(|| panic!("not read fast: {line}"));
        assert_eq!(record.raw.as_deref(), Some(line.as_str()));
        assert!(assert_same_as_careful(&line));
    }
    // Our own order (pi 1.6.0's) needs no kept text.
    let ours = assistant_line(&format!(
        r#"{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":3,"cost":{cost}}}"#
    ));
    assert_eq!(Record::from_line(ours.as_bytes()).map(|r| r.raw), Some(None));
    assert!(assert_same_as_careful(&ours));
    let odd = [
        format!(
            r#"{{"input":1, "reasoning":0,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        format!(
            r#"{{"input":1,"reasoning":0.50,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        format!(
            r#"{{"input":1,"reasoning":1e2,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        format!(
            r#"{{"input":1,"reasoning":0,"reasoning":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        format!(
            r#"{{"input":1,"input":2,"reasoning":0,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        format!(
            r#"{{"input":1,"re\u0061soning":0,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        format!(
            r#"{{"input":1,"reasoning":"caf\u00e9","output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{cost}}}"#
        ),
        r#"{"input":1,"reasoning":0,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"total":1.0,"input":0}}"#.to_string(),
        r#"{"input":1.0,"reasoning":0,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3}"#.to_string(),
        r#"{"reasoning":0}"#.to_string(),
        "{}".to_string(),
        "null".to_string(),
    ];
    for usage in &odd {
        let line = assistant_line(usage);
        let record = Record::from_line(line.as_bytes());
        // What the loader keeps is the careful record, read fast or not.
        if record.is_some() {
            assert!(assert_same_as_careful(&line));
        } else {
            let careful = careful(&line);
            assert!(
                careful.raw.is_some() || !matches!(careful.entry, crate::session::SessionEntry::Known(_)),
                "{line}"
            );
        }
    }
    // JSON spacing is taken out first (the careful path writes the line again without it).
    let compact = assistant_line(&other_orders[0]);
    let spaced = compact.replace(r#""api":"#, r#""api": "#);
    let record = Record::from_line(spaced.as_bytes()).unwrap();
    let careful = careful(&spaced);
    assert_eq!((&record.entry, &record.raw), (&careful.entry, &careful.raw));
    assert_eq!(record.to_line().unwrap(), compact);
    // The rest of the line must still be exactly what the typed entry writes.
    let escaped = compact.replace(r#""responseId":"r""#, r#""responseId":"\u0072""#);
    assert!(Record::from_line(escaped.as_bytes()).is_none());
    assert!(Record::from_line(format!(" {escaped}").as_bytes()).is_none());
    let duplicate = assistant_line(&other_orders[0]).replace(r#""stopReason":"#, r#""durationMs":1,"stopReason":"#);
    assert!(Record::from_line(duplicate.as_bytes()).is_none());
}

/// A whole session opened (fast reader) and the same file built from
/// careful records: the same entries, context, model context bytes and file.
#[test]
fn sessions_opened_fast_equal_sessions_read_carefully() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = ["pi16_session.jsonl", "crafted.jsonl", "pi16_fork.jsonl", "crafted_pi_clone.jsonl"]
        .iter()
        .map(|name| fixture(name))
        .collect();
    let mut lines = vec![
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#.to_string(),
    ];
    let mut parent = "null".to_string();
    for n in 0..20 {
        let id = format!("{n:08x}");
        let text = format!("turn {n}\n\t\"quoted\" \\ é {}", "x".repeat(n * 100));
        let mut line = tool_result_line(&text).replace("\"a1b2c3d4\"", &format!("\"{id}\""));
        line = line.replace("\"00ff00ff\"", &parent);
        if n % 5 == 4 {
            line = line.replace("\"toolName\"", "\"toolName\" ");
        }
        parent = format!("\"{id}\"");
        lines.push(line);
    }
    let generated = dir.path().join("generated.jsonl");
    std::fs::write(&generated, format!("{}\n", lines.join("\n"))).unwrap();
    files.push(generated);
    for path in files {
        let copy = dir.path().join("open.jsonl");
        std::fs::copy(&path, &copy).unwrap();
        let (opened, _) = Session::open(&copy, "/w").unwrap();
        let text = std::fs::read_to_string(&copy).unwrap();
        let mut values =
            text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str::<Value>(l).unwrap());
        let header = values.next().unwrap();
        let records = values.map(Record::from_value).collect();
        let carefully = Session::from_file_records(header, records, Some(copy.clone()), None, "/w");
        assert_eq!(opened.entries().collect::<Vec<_>>(), carefully.entries().collect::<Vec<_>>(), "{path:?}");
        assert_eq!(opened.file_text().unwrap(), carefully.file_text().unwrap(), "{path:?}");
        assert_eq!(opened.entries_json().unwrap(), carefully.entries_json().unwrap(), "{path:?}");
        let (fast, slow) = (opened.context(), carefully.context());
        assert_eq!(fast, slow, "{path:?}");
        assert_eq!(serde_json::to_string(&fast.messages).unwrap(), serde_json::to_string(&slow.messages).unwrap());
        assert!(!fast.messages.is_empty(), "{path:?}");
    }
}

/// A tool result with the record of the calls its tool made (pi 1.6.0's
/// `nestedCalls`), and one whose record another program wrote oddly: the
/// fast reader's record is the careful one, and the line is written back as read.
#[test]
fn nested_calls_read_fast_are_the_careful_records() {
    let nested = json!({"calls": [
        {"id": "call_1/1", "name": "read", "status": "ok", "arguments": {"path": "a.txt"}, "durationMs": 3},
        {"id": "call_1/2", "name": "bash", "status": "error", "argumentsBytes": 9000, "durationMs": 1, "error": "no"}],
        "complete": false});
    for (nested, typed) in [(nested, true), (json!({"calls": "odd"}), false), (json!(null), false)] {
        let message = json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "orchestrate",
            "content": [{"type": "text", "text": "done"}], "isError": false, "timestamp": 1_700_000_000_123_i64,
            "nestedCalls": nested});
        let entry = json!({"type": "message", "id": "a1b2c3d4", "parentId": "00ff00ff",
            "timestamp": "2026-11-30T01:11:43.548Z", "message": message});
        let line = serde_json::to_string(&entry).unwrap();
        // An odd record is left to the careful reading, which keeps the line's text.
        assert_eq!(assert_same_as_careful(&line), typed, "{line}");
        assert_eq!(careful(&line).to_line().unwrap(), line);
        let Record { entry, .. } = careful(&line);
        let kept = serde_json::to_value(&entry).unwrap()["message"]["nestedCalls"]["calls"].as_array().map(Vec::len);
        assert_eq!(kept, typed.then_some(2), "{line}");
    }
}
