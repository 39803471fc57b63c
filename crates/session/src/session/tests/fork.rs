//! Fork and clone tests: new files checked entry by entry.

use serde_json::Value;

use super::{assistant, jsonl_files, read_lines, user};
use crate::session::{Session, SessionError};

/// A saved session: model, thinking, q1, a1, q2, a2 (ids returned in that order).
fn saved(dir: &std::path::Path) -> (Session, Vec<String>) {
    let mut s = Session::create(dir, "/p", None).unwrap();
    let ids = vec![
        s.append_model_change("f", "m").unwrap(),
        s.append_thinking_level_change("off").unwrap(),
        s.append_message(user("q1")).unwrap(),
        s.append_message(assistant("a1")).unwrap(),
        s.append_message(user("q2")).unwrap(),
        s.append_message(assistant("a2")).unwrap(),
    ];
    (s, ids)
}

#[test]
fn fork_copies_the_branch_before_the_user_message() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ids) = saved(dir.path());
    let original = read_lines(s.file_path().unwrap());
    let (f, text) = s.fork(&ids[4]).unwrap();
    assert_eq!(text, "q2");
    assert_ne!(f.session_id(), s.session_id());
    assert_eq!(f.leaf_id(), Some(ids[3].as_str()));
    let path = f.file_path().unwrap();
    assert_eq!(path.parent(), s.file_path().unwrap().parent());
    assert!(f.is_saved(), "the branch holds a conversation: written at once");
    let lines = read_lines(path);
    assert_eq!(lines[0]["parentSession"], s.file_path().unwrap().to_string_lossy().as_ref());
    assert_eq!(lines[0]["cwd"], "/p");
    assert_eq!(lines[0]["id"], f.session_id());
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[1..], original[1..5], "same entries, same ids");
    assert_eq!(jsonl_files(dir.path()).len(), 2);
}

#[test]
fn fork_errors_and_root_messages() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ids) = saved(dir.path());
    assert!(matches!(s.fork("nope"), Err(SessionError::InvalidForkEntry)));
    let err = s.fork(&ids[3]).unwrap_err();
    assert_eq!(err.to_string(), "Invalid entry ID for forking");

    // A user message at the root: an empty child session, not written yet.
    let mut m = Session::create(dir.path(), "/p", None).unwrap();
    let q = m.append_message(user("only")).unwrap();
    let (f, text) = m.fork(&q).unwrap();
    assert_eq!(text, "only");
    assert_eq!(f.entry_count(), 0);
    assert_eq!(f.header().parent_session.as_deref(), m.file_path().map(|p| p.to_string_lossy()).as_deref());
    assert!(!f.file_path().unwrap().exists());
}

#[test]
fn unsaved_sessions_cannot_be_cloned_or_forked() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    assert!(matches!(s.clone_branch(), Err(SessionError::NoLeaf)));
    assert_eq!(s.clone_branch().unwrap_err().to_string(), "Cannot clone session: no current entry selected");
    s.append_model_change("f", "m").unwrap();
    let err = s.clone_branch().unwrap_err();
    assert_eq!(err.to_string(), "This session has not been saved yet. Send a message before cloning or forking it.");
}

#[test]
fn fork_into_a_branch_without_conversation_is_written_later() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    s.append_model_change("f", "m").unwrap();
    let q = s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    let (mut f, _) = s.fork(&q).unwrap();
    assert_eq!(f.entry_count(), 1);
    let path = f.file_path().unwrap().to_path_buf();
    assert!(!path.exists());
    f.append_message(user("q again")).unwrap();
    let lines = read_lines(&path);
    assert_eq!(lines.len(), 3);
    assert!(lines[0]["parentSession"].is_string());
}

#[test]
fn clone_copies_the_branch_and_recreates_labels() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, ids) = saved(dir.path());
    // A side branch with a label on a main-path entry, and a label on the path.
    s.set_leaf(&ids[3]).unwrap();
    s.append_message(user("side")).unwrap();
    s.append_label(&ids[2], Some("from side")).unwrap();
    s.set_leaf(&ids[5]).unwrap();
    let label_on_path = s.append_label(&ids[4], Some("q2 mark")).unwrap();
    let after_label = s.append_message(user("q3")).unwrap();
    let comp = s.append_compaction("sum", Some(&label_on_path), 9, None, None).unwrap();

    let c = s.clone_branch().unwrap();
    let lines = read_lines(c.file_path().unwrap());
    assert_eq!(lines[0]["parentSession"], s.file_path().unwrap().to_string_lossy().as_ref());
    let ids_in_file: Vec<&str> = lines[1..].iter().map(|l| l["id"].as_str().unwrap()).collect();
    // The path without its label entry, then the two labels re-created.
    assert_eq!(ids_in_file[..8], [&ids[0], &ids[1], &ids[2], &ids[3], &ids[4], &ids[5], &after_label, &comp]);
    assert_eq!(ids_in_file.len(), 10);
    // Re-chained: q3's parent is now a2 (the label is gone).
    assert_eq!(lines[7]["parentId"], ids[5].as_str());
    // The compaction that kept from the label keeps from the entry after it.
    assert_eq!(lines[8]["firstKeptEntryId"], after_label.as_str());
    let labels: Vec<(&str, &str, &Value)> = lines[9..]
        .iter()
        .map(|l| (l["targetId"].as_str().unwrap(), l["label"].as_str().unwrap(), &l["parentId"]))
        .collect();
    assert_eq!(labels[0].0, ids[2]);
    assert_eq!(labels[0].1, "from side");
    assert_eq!(labels[0].2, &Value::String(comp.clone()));
    assert_eq!(labels[1].0, ids[4]);
    assert_eq!(labels[1].2, &lines[9]["id"]);
    assert_eq!(c.label(&ids[2]), Some("from side"));
    assert_eq!(c.leaf_id(), lines[10]["id"].as_str());
    // Unchanged entries are copied verbatim.
    let original = read_lines(s.file_path().unwrap());
    assert_eq!(lines[1..6], original[1..6]);
}

#[test]
fn in_memory_fork_and_clone_stay_in_memory() {
    let mut s = Session::in_memory("/p");
    let q1 = s.append_message(user("q1")).unwrap();
    s.append_message(assistant("a1")).unwrap();
    let q2 = s.append_message(user("q2")).unwrap();
    let (f, text) = s.fork(&q2).unwrap();
    assert_eq!(text, "q2");
    assert!(f.file_path().is_none());
    assert_eq!(f.header().parent_session, None);
    assert_eq!(f.entry_count(), 2);
    let c = s.clone_branch().unwrap();
    assert_eq!(c.entry_count(), 3);
    assert_eq!(c.entries().next().and_then(|e| e.id()), Some(q1.as_str()));
}
