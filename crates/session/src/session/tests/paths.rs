//! Paths walked through the parent positions the store keeps give the
//! paths an id look-up per step gives, whatever the file holds (parents
//! after their children, repeated ids, missing parents, cycles), also after
//! appends; compactions are given up like messages once written.

use super::{assistant, user, write_fixture};
use crate::session::Session;

/// The root..=`id` path found by looking every parent id up.
fn looked_up_path(s: &Session, id: &str) -> Vec<usize> {
    let mut path = Vec::new();
    let mut seen = vec![false; s.slots.len()];
    let mut current = s.index.get(id).copied();
    while let Some(pos) = current {
        if std::mem::replace(&mut seen[pos], true) {
            break;
        }
        path.push(pos);
        current = s.slots[pos].parent_id().and_then(|p| s.index.get(p).copied());
    }
    path.reverse();
    path
}

fn assert_paths_as_looked_up(s: &Session) {
    for id in s.index.keys() {
        assert_eq!(s.path_positions(id), looked_up_path(s, id), "path to {id}");
    }
}

fn line(id: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{id}","timestamp":1}}}}"#
    )
}

#[test]
fn odd_files_walk_the_paths_an_id_look_up_walks_also_after_appends() {
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
    let cases: Vec<Vec<String>> = vec![
        // A parent written after its child.
        vec![line("a", None), line("c", Some("b")), line("b", Some("a")), line("d", Some("c"))],
        // A repeated id: the later entry is the one children find.
        vec![line("a", None), line("b", Some("a")), line("x", None), line("b", Some("x")), line("c", Some("b"))],
        // A missing parent, and a cycle.
        vec![line("a", Some("gone")), line("c1", Some("c2")), line("c2", Some("c1")), line("e", Some("c2"))],
        // Self-parented.
        vec![line("a", Some("a")), line("b", Some("a"))],
    ];
    for (n, case) in cases.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = vec![header.to_string()];
        lines.extend(case);
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let path = write_fixture(dir.path(), "s.jsonl", &lines);
        let (mut s, _) = Session::open(&path, "/p").unwrap();
        assert_paths_as_looked_up(&s);
        let first = s.append_message(user("more")).unwrap();
        s.append_message(assistant("answer")).unwrap();
        assert_paths_as_looked_up(&s);
        s.set_leaf(&first).unwrap();
        s.append_message(user("side")).unwrap();
        assert_paths_as_looked_up(&s);
        assert_eq!(s.branch().len(), looked_up_path(&s, s.leaf_id().unwrap()).len(), "case {n}");
        let (reopened, _) = Session::open(&path, "/p").unwrap();
        assert_eq!(reopened.context().messages, s.context().messages, "case {n}");
    }
}

#[test]
fn a_written_compaction_is_read_back_from_the_file_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p", None).unwrap();
    s.append_message(user("q1")).unwrap();
    s.append_message(assistant("a1")).unwrap();
    let kept = s.append_message(user("q2")).unwrap();
    s.append_message(assistant("a2")).unwrap();
    let compaction = s.append_compaction("summary", Some(&kept), 100, None, None).unwrap();
    let context = s.context().messages;
    let q3 = user("q3");
    s.append_message(q3.clone()).unwrap();
    let at = s.index[&compaction];
    assert!(s.slots[at].span().is_some() && s.slots[at].loaded().is_none(), "given up once written");
    let mut expected = context.clone();
    expected.push(q3);
    assert_eq!(s.context().messages, expected);
    let (reopened, _) = Session::open(s.file_path().unwrap(), "/p").unwrap();
    let at = reopened.index[&compaction];
    assert!(reopened.slots[at].loaded().is_none(), "opening keeps compactions in the file");
    assert_eq!(reopened.context().messages, expected);
    assert_eq!(reopened.file_text().unwrap(), s.file_text().unwrap());
}
