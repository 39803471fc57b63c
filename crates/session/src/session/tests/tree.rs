//! Tree tests: branches, labels, orphans, fork messages, paths.

use super::{assistant, user, write_fixture};
use crate::message::ImageContent;
use crate::op::TreeNode;
use crate::session::Session;

fn ids<'a>(nodes: impl Iterator<Item = &'a TreeNode>) -> Vec<String> {
    nodes.map(|n| n.entry.id().unwrap().to_string()).collect()
}

#[test]
fn tree_has_branches_labels_and_orphan_roots() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_fixture(
        dir.path(),
        "t.jsonl",
        &[
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"r0000001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"root q","timestamp":1}}"#,
            r#"{"type":"message","id":"a0000001","parentId":"r0000001","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"branch a","timestamp":2}}"#,
            // Appended later but older timestamp: sorted before a0000001.
            r#"{"type":"message","id":"b0000001","parentId":"r0000001","timestamp":"2025-01-01T00:00:01.500Z","message":{"role":"user","content":"branch b","timestamp":3}}"#,
            r#"{"type":"label","id":"l0000001","parentId":"a0000001","timestamp":"2025-01-01T00:00:03.000Z","targetId":"r0000001","label":"start"}"#,
            r#"{"type":"label","id":"l0000002","parentId":"l0000001","timestamp":"2025-01-01T00:00:04.000Z","targetId":"b0000001","label":"tmp"}"#,
            r#"{"type":"label","id":"l0000003","parentId":"l0000002","timestamp":"2025-01-01T00:00:05.000Z","targetId":"b0000001"}"#,
            r#"{"type":"label","id":"l0000004","parentId":"l0000003","timestamp":"2025-01-01T00:00:06.000Z","targetId":"r0000001","label":"begin"}"#,
            r#"{"type":"message","id":"o0000001","parentId":"missing1","timestamp":"2025-01-01T00:00:07.000Z","message":{"role":"user","content":"orphan","timestamp":4}}"#,
            r#"{"type":"message","id":"o0000002","parentId":"o0000001","timestamp":"2025-01-01T00:00:08.000Z","message":{"role":"user","content":[{"type":"text","text":"orphan "},{"type":"text","text":"child"}],"timestamp":5}}"#,
        ],
    );
    let (s, _) = Session::open(&path, "/p").unwrap();
    assert_eq!(s.leaf_id(), Some("o0000002"));
    let tree = s.tree();
    assert_eq!(ids(tree.roots()), ["r0000001", "o0000001"]);
    let root = tree.roots().next().unwrap();
    assert_eq!(root.label.as_deref(), Some("begin"));
    assert_eq!(root.label_timestamp.as_deref(), Some("2025-01-01T00:00:06.000Z"));
    assert_eq!(ids(tree.children(root)), ["b0000001", "a0000001"]);
    let b = tree.children(root).next().unwrap();
    assert_eq!(b.label, None, "a label entry without label clears it");
    assert_eq!(b.label_timestamp, None);
    // Label entries stay nodes of the tree.
    assert_eq!(ids(tree.children(tree.children(root).nth(1).unwrap())), ["l0000001"]);
    assert_eq!(ids(tree.children(tree.roots().nth(1).unwrap())), ["o0000002"]);
    // The branch of the leaf stops at the missing parent.
    let branch: Vec<_> = s.branch().iter().map(|e| e.id().unwrap().to_string()).collect();
    assert_eq!(branch, ["o0000001", "o0000002"]);
    // Fork messages: every user message of every branch, in append order.
    let forks: Vec<(String, String)> = s.fork_messages().into_iter().map(|f| (f.entry_id, f.text)).collect();
    assert_eq!(
        forks,
        [
            ("r0000001".to_string(), "root q".to_string()),
            ("a0000001".into(), "branch a".into()),
            ("b0000001".into(), "branch b".into()),
            ("o0000001".into(), "orphan".into()),
            ("o0000002".into(), "orphan child".into()),
        ]
    );
    assert_eq!(s.children("r0000001").len(), 2);
}

#[test]
fn branching_moves_the_leaf() {
    let mut s = Session::in_memory("/p");
    let q1 = s.append_message(user("q1")).unwrap();
    let a1 = s.append_message(assistant("a1")).unwrap();
    s.append_message(user("q2")).unwrap();
    s.set_leaf(&a1).unwrap();
    let q3 = s.append_message(user("q3")).unwrap();
    assert_eq!(s.get(&q3).unwrap().parent_id(), Some(a1.as_str()));
    let path: Vec<_> = s.branch().iter().map(|e| e.id().unwrap().to_string()).collect();
    assert_eq!(path, [q1.clone(), a1.clone(), q3]);
    assert_eq!(s.set_leaf("nope").unwrap_err().to_string(), "Entry nope not found");
    s.reset_leaf();
    assert!(s.branch().is_empty());
    let new_root = s.append_message(user("again")).unwrap();
    assert_eq!(s.get(&new_root).unwrap().parent_id(), None);
    assert_eq!(s.tree().roots.len(), 2);
    // branch_with_summary records where we came from.
    let bs = s.branch_with_summary(Some(&q1), "tried something", None, None).unwrap();
    let e = s.get(&bs).unwrap();
    assert_eq!(e.parent_id(), Some(q1.as_str()));
    let json = serde_json::to_value(e).unwrap();
    assert_eq!(json["fromId"], new_root.as_str());
    assert_eq!(s.leaf_id(), Some(bs.as_str()));
}

#[test]
fn fork_messages_skip_messages_without_text() {
    let mut s = Session::in_memory("/p");
    let image = ImageContent { data: "AAAA".into(), mime_type: "image/png".into() };
    // An empty text block plus an image: no text to show.
    let only_image = crate::message::AgentMessage::user("", &[image]);
    s.append_message(only_image).unwrap();
    s.append_message(user("text")).unwrap();
    assert_eq!(s.fork_messages().len(), 1);
}

#[test]
fn a_type_on_the_branch_is_found_from_the_leaf_and_one_on_another_branch_is_not() {
    let mut s = Session::in_memory("/p");
    assert!(!s.branch_has_type("message"));
    let root = s.append_message(user("q")).unwrap();
    s.append_model_change("p", "side").unwrap();
    s.set_leaf(&root).unwrap();
    s.append_message(assistant("a")).unwrap();
    for kind in ["message", "model_change", "compaction", "label"] {
        let on_path = s.branch_heads().iter().any(|(_, k)| *k == kind);
        assert_eq!(s.branch_has_type(kind), on_path, "{kind}");
    }
    assert!(!s.branch_has_type("model_change"), "the model change is on the other branch");
    s.append_model_change("p", "main").unwrap();
    assert!(s.branch_has_type("model_change"));
}
