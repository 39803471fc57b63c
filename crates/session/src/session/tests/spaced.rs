//! Sessions written with JSON spacing (`", "`, `": "`, as Python's
//! `json.dumps` writes by default): read on the fast path, into exactly the
//! session the compact file gives.

use serde_json::Value;

use super::{fixture, jsonl_files};
use crate::session::Session;
use crate::session::store::Record;

/// `line` with a space after every `,` and `:` outside strings (Python's
/// default separators), and around the outer braces.
fn spaced(line: &str) -> String {
    let mut out = String::with_capacity(line.len() * 2);
    let (mut in_string, mut escaped) = (false, false);
    for c in line.chars() {
        out.push(c);
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            ',' | ':' => out.push(' '),
            _ => {}
        }
    }
    format!(" {out} ")
}

/// Every fixture session (current format), and the same file spaced, side by side in a temporary directory.
fn pairs(dir: &std::path::Path) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let mut pairs = Vec::new();
    for path in jsonl_files(&fixture("")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        if header["version"] != 3 {
            continue; // older files are migrated and rewritten, not read lazily
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let compact = dir.join(format!("compact-{name}"));
        let wide = dir.join(format!("spaced-{name}"));
        std::fs::write(&compact, &text).unwrap();
        let lines: Vec<String> = text.lines().map(spaced).collect();
        std::fs::write(&wide, format!("{}\n", lines.join("\n"))).unwrap();
        pairs.push((compact, wide));
    }
    assert!(pairs.len() >= 4, "fixtures: {pairs:?}");
    pairs
}

#[test]
fn the_spacing_helper_keeps_every_line_the_same_json() {
    for path in jsonl_files(&fixture("")) {
        for line in std::fs::read_to_string(&path).unwrap().lines().filter(|l| !l.trim().is_empty()) {
            let Ok(value) = serde_json::from_str::<Value>(line) else { continue };
            let wide = spaced(line);
            assert_ne!(wide, line);
            assert_eq!(serde_json::from_str::<Value>(&wide).unwrap(), value, "{wide}");
        }
    }
}

#[test]
fn spaced_lines_take_the_fast_path_into_the_compact_lines_records() {
    let mut fast = 0;
    for path in jsonl_files(&fixture("")) {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().skip(1).filter(|l| serde_json::from_str::<Value>(l).is_ok()) {
            let wide = spaced(line);
            let careful = Record::from_value(serde_json::from_str(&wide).unwrap());
            match (Record::from_line(line.as_bytes()), Record::from_line(wide.as_bytes())) {
                (Some(compact), Some(spaced)) => {
                    assert_eq!(spaced.entry, compact.entry, "{wide}");
                    assert_eq!(spaced.raw, compact.raw, "{wide}");
                    assert_eq!(spaced.entry, careful.entry, "{wide}");
                    assert_eq!(spaced.raw, careful.raw, "{wide}");
                    fast += 1;
                }
                (None, None) => {}
                (compact, spaced) => {
                    panic!("compact read fast: {}, spaced read fast: {} — {line}", compact.is_some(), spaced.is_some())
                }
            }
        }
    }
    assert!(fast > 30, "only {fast} spaced fixture lines read fast");
}

#[test]
fn a_spaced_session_is_the_compact_session() {
    let dir = tempfile::tempdir().unwrap();
    for (compact, wide) in pairs(dir.path()) {
        let (a, warnings_a) = Session::open(&compact, "/w").unwrap();
        let (b, warnings_b) = Session::open(&wide, "/w").unwrap();
        assert_eq!(warnings_a.len(), warnings_b.len(), "{wide:?}");
        let what = format!("{wide:?}");
        // get_state's parts: id, leaf, name, the context (model, thinking level, messages).
        assert_eq!(a.session_id(), b.session_id(), "{what}");
        assert_eq!(a.leaf_id(), b.leaf_id(), "{what}");
        assert_eq!(a.name(), b.name(), "{what}");
        assert_eq!(a.context(), b.context(), "{what}");
        // get_messages, read from the file one message at a time.
        let (ma, mb) = (a.context_messages(), b.context_messages());
        assert_eq!(serde_json::to_string(&ma).unwrap(), serde_json::to_string(&mb).unwrap(), "{what}");
        // get_entries, get_tree, the fork targets, the file written again.
        assert_eq!(a.entries().collect::<Vec<_>>(), b.entries().collect::<Vec<_>>(), "{what}");
        assert_eq!(a.entries_json().unwrap(), b.entries_json().unwrap(), "{what}");
        assert_eq!(a.tree(), b.tree(), "{what}");
        assert_eq!(a.fork_messages(), b.fork_messages(), "{what}");
        assert_eq!(a.file_text().unwrap(), b.file_text().unwrap(), "{what}");
        if let Some(first) = a.entries().next().and_then(|e| e.id()).map(str::to_string) {
            assert_eq!(a.entries_since(&first).unwrap(), b.entries_since(&first).unwrap(), "{what}");
        }
        if let Some(target) = a.fork_messages().last() {
            let (fa, ta) = a.fork(&target.entry_id).unwrap();
            let (fb, tb) = b.fork(&target.entry_id).unwrap();
            assert_eq!(ta, tb, "{what}");
            // The fork's labels are new entries with new ids; everything else is copied.
            let copied = |s: &Session| -> Vec<Value> {
                s.entries_json().unwrap().into_iter().filter(|e| e["type"] != "label").collect()
            };
            assert_eq!(copied(&fa), copied(&fb), "{what}");
            assert_eq!(fa.entry_count(), fb.entry_count(), "{what}");
            assert_eq!(fa.context(), fb.context(), "{what}");
        }
    }
}
