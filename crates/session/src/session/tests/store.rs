//! Store tests: creation, lazy file creation, appends, reload, damage, migration, unknown entries.

use serde_json::{Value, json};

use super::{assistant, fixture, jsonl_files, read_lines, user, write_fixture};
use crate::message::UserContent;
use crate::session::entry::{KnownEntry, SessionEntry};
use crate::session::{Session, SessionError};

#[test]
fn file_appears_with_the_first_user_message_then_grows_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/work/proj", None).unwrap();
    let path = s.file_path().unwrap().to_path_buf();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let expected = format!("{}_{}.jsonl", s.header().timestamp.replace([':', '.'], "-"), s.session_id());
    assert_eq!(name, expected);
    assert_eq!(s.session_id().len(), 36);
    assert!(s.is_persisted() && !s.is_saved());

    let m = s.append_model_change("fake", "fake-model").unwrap();
    let t = s.append_thinking_level_change("off").unwrap();
    assert!(!path.exists(), "setup entries alone must not create the file");

    let u = s.append_message(user("hello")).unwrap();
    assert!(path.exists() && s.is_saved());
    let lines = read_lines(&path);
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[0]["cwd"], "/work/proj");
    assert!(lines[0].get("parentSession").is_none());
    assert_eq!(lines[1]["id"], m.as_str());
    assert_eq!(lines[1]["parentId"], Value::Null);
    assert_eq!(lines[2]["parentId"], m.as_str());
    assert_eq!(lines[3]["parentId"], t.as_str());
    assert_eq!(lines[3]["message"]["content"][0]["text"], "hello");

    let a = s.append_message(assistant("hi")).unwrap();
    let lines = read_lines(&path);
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[4]["id"], a.as_str());
    assert_eq!(lines[4]["parentId"], u.as_str());
    for id in [&m, &t, &u, &a] {
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    }
    let ts = lines[4]["timestamp"].as_str().unwrap();
    assert_eq!(ts.len(), "2024-12-03T14:00:00.000Z".len(), "{ts}");
}

#[test]
fn reload_gives_the_same_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", Some("/old.jsonl".into())).unwrap();
    s.append_model_change("fake", "fake-model").unwrap();
    s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    s.append_session_info("  my\r\nname ").unwrap();
    s.append_custom("ext", Some(json!({"n": 1}))).unwrap();
    s.append_custom_message("ext", UserContent::Text("injected".into()), true, None).unwrap();
    let target = s.entries().nth(1).and_then(|e| e.id()).unwrap().to_string();
    s.append_label(&target, Some("bookmark")).unwrap();
    s.append_compaction("sum", Some(&target), 42, Some(json!({"readFiles": []})), None).unwrap();

    let (r, warnings) = Session::open(s.file_path().unwrap(), "/elsewhere").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(r.header(), s.header());
    assert_eq!(r.cwd(), "/p");
    assert_eq!(r.header().parent_session.as_deref(), Some("/old.jsonl"));
    assert_eq!(r.entries().collect::<Vec<_>>(), s.entries().collect::<Vec<_>>());
    assert_eq!(r.leaf_id(), s.leaf_id());
    assert_eq!(r.name().as_deref(), Some("my name"));
    assert_eq!(r.label(&target), Some("bookmark"));
    assert_eq!(r.context(), s.context());
    assert!(r.is_saved());
}

#[test]
fn in_memory_sessions_never_touch_the_disk() {
    let mut s = Session::in_memory("/p");
    s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    assert!(s.file_path().is_none());
    assert!(!s.is_persisted() && !s.is_saved());
    assert_eq!(s.entry_count(), 2);
}

#[test]
fn opening_a_missing_path_binds_a_new_session_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.jsonl");
    let (mut s, warnings) = Session::open(&path, "/p").unwrap();
    assert!(warnings.is_empty());
    assert_eq!(s.file_path(), Some(path.as_path()));
    assert_eq!(s.cwd(), "/p");
    assert_eq!(s.entry_count(), 0);
    assert_eq!(s.leaf_id(), None);
    s.append_model_change("fake", "m").unwrap();
    assert!(!path.exists());
    s.append_message(user("q")).unwrap();
    assert_eq!(read_lines(&path).len(), 3);
}

#[test]
fn an_empty_file_gets_a_header_and_a_non_session_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let (mut s, _) = Session::open(&empty, "/p").unwrap();
    assert_eq!(read_lines(&empty).len(), 1);
    s.append_model_change("fake", "m").unwrap();
    assert_eq!(read_lines(&empty).len(), 2, "a saved session appends every entry");

    let bogus = write_fixture(dir.path(), "bogus.jsonl", &[r#"{"type":"message","id":"x"}"#]);
    let err = Session::open(&bogus, "/p").unwrap_err();
    assert!(matches!(err, SessionError::NotASession(_)));
    assert_eq!(err.to_string(), format!("Session file is not a valid pi session: {}", bogus.display()));
}

#[test]
fn damaged_lines_are_skipped_with_warnings_and_the_file_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.jsonl");
    let good = [
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"model_change","id":"aaaa0001","parentId":null,"timestamp":"2025-01-01T00:00:00.001Z","provider":"f","modelId":"m"}"#,
        r#"{"type":"model_change","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2025-01-01T00:00:00.002Z","provider":"f","modelId":"m2"}"#,
    ];
    let text = format!(
        "{}\n{}\nnot json at all\n\n{}\n{}",
        good[0], good[1], good[2], r#"{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timest"#
    );
    std::fs::write(&path, text).unwrap();
    let (mut s, warnings) = Session::open(&path, "/p").unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("line 3: invalid JSON"), "{}", warnings[0]);
    assert!(warnings[1].contains("line 6: truncated last line"), "{}", warnings[1]);
    assert_eq!(s.entry_count(), 2);
    assert_eq!(s.leaf_id(), Some("aaaa0002"));
    // The next entry starts on a line of its own.
    let id = s.append_model_change("f", "m3").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let last = text.lines().last().unwrap();
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["parentId"], "aaaa0002");
    let (again, warnings) = Session::open(&path, "/p").unwrap();
    assert_eq!(again.entry_count(), 3);
    assert_eq!(warnings.len(), 2);
}

#[test]
fn unknown_entries_and_fields_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"type":"session","version":3,"id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p","future":{"x":1}}"#,
        r#"{"type":"message","id":"b0000001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"q","timestamp":1}}"#,
        r#"{"type":"usage","id":"b0000002","parentId":"b0000001","timestamp":"2025-01-01T00:00:02.000Z","kind":"cache_warm","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":5,"cacheWrite":0,"reasoning":0,"totalTokens":5,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}}}"#,
        r#"{"type":"custom","customType":"ext","data":{"k":[1,2]},"id":"b0000003","parentId":"b0000002","timestamp":"2025-01-01T00:00:03.000Z"}"#,
        r#"{"type":"message","id":"b0000004","parentId":"b0000003","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a"}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"stop","timestamp":2,"durationMs":7}}"#,
    ];
    let path = write_fixture(dir.path(), "unknown.jsonl", &lines);
    let (s, warnings) = Session::open(&path, "/p").unwrap();
    assert!(warnings.is_empty());
    assert!(matches!(s.get("b0000002"), Some(SessionEntry::Unknown(_))));
    assert!(matches!(s.get("b0000003"), Some(SessionEntry::Known(KnownEntry::Custom(_)))));
    assert!(s.get("b0000004").and_then(SessionEntry::message).is_some());
    // The file text is reproduced byte for byte (header and entries).
    assert_eq!(s.file_text().unwrap(), format!("{}\n", lines.join("\n")));
    let json = s.entries_json().unwrap();
    assert_eq!(json[2], serde_json::from_str::<Value>(lines[3]).unwrap());
    // And a clone copies them exactly.
    let c = s.clone_branch().unwrap();
    let copied = std::fs::read_to_string(c.file_path().unwrap()).unwrap();
    assert_eq!(copied.lines().skip(1).collect::<Vec<_>>(), lines[1..].to_vec());
}

#[test]
fn entries_since_is_strictly_after_the_cursor() {
    let mut s = Session::in_memory("/p");
    let a = s.append_model_change("f", "m").unwrap();
    let b = s.append_message(user("q")).unwrap();
    let c = s.append_message(assistant("a")).unwrap();
    let ids = |v: Vec<SessionEntry>| v.iter().map(|e| e.id().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(ids(s.entries_since(&a).unwrap()), vec![b.clone(), c.clone()]);
    assert_eq!(ids(s.entries_since(&c).unwrap()), Vec::<String>::new());
    // Append order, not branch order: entries on another branch count too.
    s.set_leaf(&a).unwrap();
    let d = s.append_message(user("other")).unwrap();
    assert_eq!(ids(s.entries_since(&b).unwrap()), vec![c, d]);
    let err = s.entries_since("nope").unwrap_err();
    assert_eq!(err.to_string(), "Entry not found: nope");
    assert_eq!(s.entries_since("").unwrap_err().to_string(), "Entry not found: ");
}

#[test]
fn v1_files_are_migrated_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.jsonl");
    std::fs::copy(fixture("v1_session.jsonl"), &path).unwrap();
    let (s, warnings) = Session::open(&path, "/x").unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("migrated from session version 1 to 3"), "{}", warnings[0]);
    assert_eq!(s.header().version, 3);
    assert_eq!(s.cwd(), "/home/u/proj");
    let entries: Vec<_> = s.entries().collect();
    assert_eq!(entries.len(), 7);
    assert_eq!(entries[0].parent_id(), None);
    for w in entries.windows(2) {
        assert_eq!(w[1].parent_id(), w[0].id());
    }
    let SessionEntry::Known(KnownEntry::Compaction(c)) = entries[5] else { panic!("not a compaction") };
    assert_eq!(Some(c.first_kept_entry_id.as_str()), entries[3].id());
    assert!(c.extra.get("firstKeptEntryIndex").is_none());
    // Context: summary, then the kept second exchange, then the third question.
    let texts: Vec<String> = s.context().messages.iter().map(super::text_of).collect();
    assert_eq!(texts, ["summary:They asked two questions.", "second question", "second answer", "third question"]);
    // The file on disk is now v3 with the same ids.
    let lines = read_lines(&path);
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[3]["id"], entries[2].id().unwrap());
    let (again, warnings) = Session::open(&path, "/x").unwrap();
    assert!(warnings.is_empty());
    assert_eq!(again.entries().collect::<Vec<_>>(), entries);
    assert_eq!(jsonl_files(dir.path()).len(), 1, "no temporary file left behind");
}

#[test]
fn v2_files_get_custom_roles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.jsonl");
    std::fs::copy(fixture("v2_session.jsonl"), &path).unwrap();
    let (s, warnings) = Session::open(&path, "/x").unwrap();
    assert_eq!(warnings.len(), 1);
    let custom = s.get("a0000003").and_then(SessionEntry::message).unwrap();
    assert_eq!(custom.role(), "custom");
    let ctx = s.context();
    assert_eq!(ctx.thinking_level.as_deref(), Some("low"));
    assert_eq!(ctx.model, Some(("openai".into(), "gpt-4o".into())));
    assert_eq!(ctx.messages.len(), 3);
    let lines = read_lines(&path);
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[3]["message"]["role"], "custom");
    // Only the role changed.
    let original: Vec<Value> = std::fs::read_to_string(fixture("v2_session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[4], original[4]);
}

#[test]
fn a_failed_write_leaves_memory_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sessions");
    let mut s = Session::create(&sub, "/p", None).unwrap();
    s.append_message(user("q")).unwrap();
    let leaf = s.leaf_id().unwrap().to_string();
    std::fs::remove_dir_all(&sub).unwrap();
    assert!(matches!(s.append_message(assistant("a")), Err(SessionError::Io { .. })));
    assert_eq!(s.leaf_id(), Some(leaf.as_str()));
    assert_eq!(s.entry_count(), 1);
}

#[test]
fn context_edits_follow_pi_rules() {
    let mut s = Session::in_memory("/p");
    let m = s.append_model_change("f", "m").unwrap();
    let u = s.append_message(user("q")).unwrap();
    let a = s.append_message(assistant("a")).unwrap();
    let err = |r: Result<String, SessionError>| r.unwrap_err().to_string();
    assert_eq!(err(s.append_context_edit("zzz", None)), "Entry zzz not found");
    assert_eq!(err(s.append_context_edit(&m, None)), format!("Entry {m} does not contribute editable model content"));
    assert_eq!(
        err(s.append_context_edit(&u, Some(json!({"text": 1})))),
        "Context edit replacement must be null or contain string/array content"
    );
    let e = s.append_context_edit(&a, Some(json!({"content": "short"}))).unwrap();
    let SessionEntry::Unknown(v) = s.get(&e).unwrap() else { panic!("context_edit must stay an unknown entry") };
    assert_eq!(v["replacement"], json!({"content": [{"type": "text", "text": "short"}]}));
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "id", "parentId", "timestamp", "targetId", "replacement"]);
    s.set_leaf(&m).unwrap();
    s.append_message(user("other branch")).unwrap();
    assert_eq!(err(s.append_context_edit(&u, None)), format!("Entry {u} is not on the active branch"));
}

#[test]
fn session_name_is_the_latest_info_of_the_whole_file() {
    let mut s = Session::in_memory("/p");
    assert_eq!(s.name(), None);
    let root = s.append_model_change("f", "m").unwrap();
    s.append_session_info("first").unwrap();
    s.set_leaf(&root).unwrap();
    s.append_session_info("second").unwrap();
    assert_eq!(s.name().as_deref(), Some("second"));
    s.append_session_info("   ").unwrap();
    assert_eq!(s.name(), None);
}

/// A line read the fast way (straight into a typed record) gives the record
/// the careful way (a `Value`, classified, its text kept when the typed form
/// differs) gives; lines the fast way refuses are left to the careful one.
#[test]
fn lines_parsed_straight_into_records_match_the_careful_reading() {
    use crate::session::store::Record;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session/testdata");
    let mut fast = 0;
    for name in ["pi16_session.jsonl", "crafted.jsonl", "pi16_fork.jsonl", "crafted_pi_clone.jsonl"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        for line in text.lines().skip(1) {
            let careful = Record::from_value(serde_json::from_str::<Value>(line).unwrap());
            if let Some(record) = Record::from_line(line.as_bytes()) {
                fast += 1;
                assert_eq!(record.entry, careful.entry, "{name}: {line}");
                assert_eq!(record.raw, careful.raw, "{name}: {line}");
            }
        }
    }
    assert!(fast > 10, "the fast way took only {fast} lines");
    // JSON spacing is read as the compact line (what the careful way writes again).
    let spaced = r#"{"type": "label","id":"a1","parentId":null,"timestamp":"t","targetId":"x","label":"l"}"#;
    let (record, careful) =
        (Record::from_line(spaced.as_bytes()).unwrap(), Record::from_value(serde_json::from_str(spaced).unwrap()));
    assert_eq!((&record.entry, &record.raw), (&careful.entry, &careful.raw));
    assert_eq!(record.to_line().unwrap(), spaced.replace(": ", ":"));
    // Shapes it must refuse: escapes or numbers written differently,
    // duplicate keys, unknown types, a header.
    for line in [
        r#"{"type":"label","id":"a\u0031","parentId":null,"timestamp":"t","targetId":"x","label":"l"}"#,
        r#"{"type":"label","id":"a1","id":"a2","parentId":null,"timestamp":"t","targetId":"x","label":"l"}"#,
        r#"{"type":"label","id":"a1","parentId":null,"timestamp":"t","targetId":"x","label":"l","id":"a2"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1,"role":"user"}}"#,
        r#"{"type":"context_edit","id":"a1","parentId":null,"timestamp":"t"}"#,
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#,
    ] {
        assert!(Record::from_line(line.as_bytes()).is_none(), "{line}");
    }
}
