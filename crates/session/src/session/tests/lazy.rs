//! Entries kept by their place in the file: read back when needed, given up
//! by `release_memory` and at appends, and the conversation read from the
//! file giving exactly the messages of the eager context.

use serde_json::json;

use super::{assistant, fixture, user};
use crate::message::AgentMessage;
use crate::session::Session;

/// A copy of a fixture in a temporary directory, opened.
fn open_copy(name: &str) -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::copy(fixture(name), &path).unwrap();
    let (session, _) = Session::open(&path, "/w").unwrap();
    (dir, session)
}

/// Entries whose bodies are in memory.
fn loaded(session: &Session) -> usize {
    session.slots.iter().filter(|s| s.loaded().is_some()).count()
}

/// Entries kept by their place in the file.
fn in_file(session: &Session) -> usize {
    session.slots.iter().filter(|s| s.span().is_some()).count()
}

fn json_of(messages: &[AgentMessage]) -> String {
    serde_json::to_string(messages).unwrap()
}

#[test]
fn messages_of_an_opened_file_are_read_when_needed_and_given_up_again() {
    for name in ["crafted.jsonl", "pi16_session.jsonl"] {
        let (_dir, mut session) = open_copy(name);
        let lazy = in_file(&session);
        assert!(lazy > 0, "{name}: no entry kept by its place");
        let resident = session.entry_count() - lazy;
        assert_eq!(loaded(&session), resident, "{name}: opening reads no message body");
        // Reading every entry loads them; releasing gives them up; reading again gives the same.
        let first: Vec<_> = session.entries().cloned().collect();
        assert_eq!(loaded(&session), session.entry_count());
        let text = session.file_text().unwrap();
        session.release_memory();
        assert_eq!(loaded(&session), resident, "{name}");
        let again: Vec<_> = session.entries().cloned().collect();
        assert_eq!(first, again, "{name}");
        assert_eq!(session.file_text().unwrap(), text, "{name}");
        // The file itself is unchanged by reading it.
        assert_eq!(std::fs::read_to_string(session.file_path().unwrap()).unwrap(), text, "{name}");
    }
}

#[test]
fn the_conversation_read_from_the_file_is_the_eager_context() {
    for name in ["crafted.jsonl", "pi16_session.jsonl"] {
        let (_dir, session) = open_copy(name);
        let eager = session.context().messages;
        let mut fresh = session.clone();
        fresh.release_memory();
        let list = fresh.context_messages();
        assert_eq!(list.len(), eager.len(), "{name}");
        // Written out one message at a time: the same JSON, and nothing built.
        assert_eq!(serde_json::to_string(&list).unwrap(), json_of(&eager), "{name}");
        let messages_in_memory =
            fresh.slots.iter().filter(|s| s.span().is_some() && s.type_name() == "message" && s.loaded().is_some());
        assert_eq!(messages_in_memory.count(), 0, "{name}: writing it out keeps no message");
        for k in 0..eager.len() {
            let target = &eager[k];
            let tail = list.tail_from_last(|m| m == target);
            let from = eager.iter().rposition(|m| m == target).unwrap();
            assert_eq!(tail, eager[from..], "{name}: tail from {k}");
        }
        assert_eq!(list.tail_from_last(|_| false), eager, "{name}");
        // Built whole on demand.
        assert_eq!(&list[..], &eager[..], "{name}");
    }
}

#[test]
fn edits_of_messages_kept_in_the_file_apply_when_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    let u = s.append_message(user("question")).unwrap();
    let a = s.append_message(assistant("answer")).unwrap();
    let gone = s.append_message(user("hidden")).unwrap();
    s.append_message(assistant("last")).unwrap();
    s.append_context_edit(&a, Some(json!({"content": "edited"}))).unwrap();
    s.append_context_edit(&gone, None).unwrap();
    let (opened, _) = Session::open(s.file_path().unwrap(), "/w").unwrap();
    assert!(in_file(&opened) >= 4);
    let eager = opened.context().messages;
    let list = opened.context_messages();
    assert_eq!(list.len(), 3);
    assert_eq!(serde_json::to_string(&list).unwrap(), json_of(&eager));
    assert_eq!(super::text_of(&list[1]), "edited");
    assert!(opened.contains(&u));
}

#[test]
fn a_long_conversation_read_on_helper_threads_comes_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    let mut edited = None;
    for n in 0..300 {
        s.append_message(user(&format!("question {n}"))).unwrap();
        // About 1.8 MB in all: runs of a MiB go to the helper threads.
        let a = s.append_message(assistant(&format!("answer {n} {}", "x".repeat(n * 37 % 12_000)))).unwrap();
        if n == 150 {
            edited = Some(a);
        }
    }
    s.append_context_edit(&edited.unwrap(), Some(json!({"content": "edited"}))).unwrap();
    let path = s.file_path().unwrap().to_path_buf();
    let (opened, _) = Session::open(&path, "/w").unwrap();
    let eager = opened.context().messages;
    let list = opened.context_messages();
    assert_eq!(list.len(), 600);
    // Written out and built whole: the messages in their order, the edit applied.
    assert_eq!(serde_json::to_string(&list).unwrap(), json_of(&eager));
    assert_eq!(&list[..], &eager[..]);
    assert_eq!(super::text_of(&list[301]), "edited");
    // The file cut short under a reader: writing the list out fails, it does not hang or make up messages.
    let cut = opened.context_messages();
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 2).unwrap();
    assert!(serde_json::to_string(&cut).is_err());
}

#[test]
fn appended_entries_are_read_back_from_the_file_after_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    s.append_message(user("first")).unwrap();
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(s.append_message(user(&format!("q{n} \"é\" \\ {}", "x".repeat(n * 1000)))).unwrap());
        ids.push(s.append_message(assistant(&format!("a{n}"))).unwrap());
    }
    s.append_custom("ext", Some(json!({"big": "y".repeat(10_000)}))).unwrap();
    s.append_session_info("named").unwrap();
    // Everything but the last entry and those of the first write is kept by its place.
    assert!(in_file(&s) >= 10, "{}", in_file(&s));
    assert!(loaded(&s) < s.entry_count());
    let (reopened, _) = Session::open(s.file_path().unwrap(), "/w").unwrap();
    let ours: Vec<_> = s.entries().cloned().collect();
    let theirs: Vec<_> = reopened.entries().cloned().collect();
    assert_eq!(ours, theirs);
    assert_eq!(s.context().messages, reopened.context().messages);
    assert_eq!(s.name().as_deref(), Some("named"));
    assert_eq!(s.entry_id_of_message(&assistant("a3")), Some(ids[7].as_str()));
}

#[test]
fn a_file_that_vanished_is_written_again_whole_from_what_was_kept_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    s.append_message(user("one")).unwrap();
    s.append_message(assistant("two")).unwrap();
    s.append_message(user("three")).unwrap();
    s.append_message(assistant("four")).unwrap();
    let before = s.file_text().unwrap();
    let path = s.file_path().unwrap().to_path_buf();
    s.release_memory();
    std::fs::remove_file(&path).unwrap();
    s.append_message(user("five")).unwrap();
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&before), "the old entries are read from the open file");
    assert_eq!(s.context().messages.len(), 5);
    s.release_memory();
    assert_eq!(super::text_of(&s.context().messages[3]), "four");
}
