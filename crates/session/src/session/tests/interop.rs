//! Interop with the reference: files written by pi 1.6.0 and pi's answers about them.
//!
//! Fixtures (`testdata/`), produced by running the reference against a fake
//! OpenAI-compatible server:
//! * `pi16_session.jsonl`: prompt, `set_session_name`, prompt, `compact`,
//!   prompt; `pi16_get_*.json` are pi's `get_entries`/`get_tree`/`get_messages`
//!   answers for it; `pi16_fork.jsonl` is pi's `fork` at the second user
//!   message, `pi16_clone.jsonl` pi's `clone` of that fork.
//! * `crafted.jsonl`: a hand-made file with branches, labels, an orphan,
//!   context edits, a compaction, unknown entries; `crafted_pi_outputs.json`
//!   holds pi's answers after `switch_session` to it, `crafted_pi_clone.jsonl`
//!   and `crafted_pi_fork.jsonl` pi's `clone` and `fork e000000d` of it.
//! * `v1_pi_migrated.jsonl`, `v2_pi_migrated.jsonl`: `v1_session.jsonl` and
//!   `v2_session.jsonl` (with cwd `/tmp/pifx`) after pi opened them.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::{fixture, read_lines};
use crate::op::{SessionTree, TreeNode};
use crate::session::Session;

fn load_json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

/// Copy a fixture into `dir` and open it.
fn open_copy(dir: &Path, name: &str) -> Session {
    let path = dir.join(name);
    std::fs::copy(fixture(name), &path).unwrap();
    let (s, warnings) = Session::open(&path, "/tmp").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    s
}

/// `{id, label?, labelTimestamp?, children}` of our tree, for comparison with pi's.
fn tree_shape<'a>(tree: &'a SessionTree, nodes: impl Iterator<Item = &'a TreeNode>) -> Value {
    Value::Array(
        nodes
            .map(|n| {
                serde_json::json!({
                    "id": n.entry.id(),
                    "label": n.label,
                    "labelTimestamp": n.label_timestamp,
                    "children": tree_shape(tree, tree.children(n)),
                })
            })
            .collect(),
    )
}

fn pi_tree_shape(nodes: &Value) -> Value {
    Value::Array(
        nodes
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                serde_json::json!({
                    "id": n["entry"]["id"],
                    "label": n.get("label"),
                    "labelTimestamp": n.get("labelTimestamp"),
                    "children": pi_tree_shape(&n["children"]),
                })
            })
            .collect(),
    )
}

/// Our context messages vs pi's `get_messages`, system messages included
/// (usage objects ignored: our `Usage` does not model pi 1.6's extra usage
/// fields).
fn assert_same_messages(s: &Session, pi_messages: &Value) {
    let strip = |mut v: Value| {
        if let Some(o) = v.as_object_mut() {
            o.shift_remove("usage");
        }
        v
    };
    let ours: Vec<Value> = s.context().messages.iter().map(|m| strip(serde_json::to_value(m).unwrap())).collect();
    let theirs: Vec<Value> = pi_messages.as_array().unwrap().iter().map(|m| strip(m.clone())).collect();
    assert_eq!(ours, theirs);
}

/// Replace the random ids of entries in `lines` (records after the header)
/// by their position, so two migrations or two clones can be compared.
fn positional_ids(lines: &[Value], random: impl Fn(&Value) -> bool) -> Vec<String> {
    let mut map: HashMap<String, String> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        if random(l)
            && let Some(id) = l["id"].as_str()
        {
            map.insert(id.to_string(), format!("#{i}"));
        }
    }
    lines
        .iter()
        .map(|l| {
            let mut l = l.clone();
            for key in ["id", "parentId", "firstKeptEntryId"] {
                if let Some(new) = l.get(key).and_then(Value::as_str).and_then(|id| map.get(id)) {
                    l[key] = Value::String(new.clone());
                }
            }
            serde_json::to_string(&l).unwrap()
        })
        .collect()
}

#[test]
fn pi_session_is_read_and_rewritten_identically() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_copy(dir.path(), "pi16_session.jsonl");
    let original = std::fs::read_to_string(fixture("pi16_session.jsonl")).unwrap();
    assert_eq!(s.file_text().unwrap(), original, "byte-for-byte re-serialization");
    let entries = load_json("pi16_get_entries.json");
    assert_eq!(Value::Array(s.entries_json().unwrap()), entries["entries"]);
    assert_eq!(s.leaf_id(), entries["leafId"].as_str());
    let tree = load_json("pi16_get_tree.json");
    let ours = s.tree();
    assert_eq!(tree_shape(&ours, ours.roots()), pi_tree_shape(&tree["tree"]));
    assert_same_messages(&s, &load_json("pi16_get_messages.json")["messages"]);
    assert_eq!(s.name().as_deref(), Some("fixture"));
    let ctx = s.context();
    assert_eq!(ctx.model, Some(("fake-openai".into(), "fake-model".into())));
    assert_eq!(ctx.thinking_level.as_deref(), Some("off"));
    let forks: Vec<String> = s.fork_messages().into_iter().map(|f| f.text).collect();
    assert_eq!(forks, ["slow first question", "second question", "third question"]);
}

#[test]
fn pi_fork_and_clone_are_reproduced_line_for_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_copy(dir.path(), "pi16_session.jsonl");
    let (fork, text) = s.fork("5e642ff3").unwrap();
    assert_eq!(text, "second question");
    let ours = std::fs::read_to_string(fork.file_path().unwrap()).unwrap();
    let theirs = std::fs::read_to_string(fixture("pi16_fork.jsonl")).unwrap();
    assert_eq!(ours.lines().skip(1).collect::<Vec<_>>(), theirs.lines().skip(1).collect::<Vec<_>>());
    let header = &read_lines(fork.file_path().unwrap())[0];
    assert_eq!(header["parentSession"], s.file_path().unwrap().to_string_lossy().as_ref());

    let clone = fork.clone_branch().unwrap();
    let ours = std::fs::read_to_string(clone.file_path().unwrap()).unwrap();
    let theirs = std::fs::read_to_string(fixture("pi16_clone.jsonl")).unwrap();
    assert_eq!(ours.lines().skip(1).collect::<Vec<_>>(), theirs.lines().skip(1).collect::<Vec<_>>());
}

#[test]
fn crafted_session_answers_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_copy(dir.path(), "crafted.jsonl");
    let pi = load_json("crafted_pi_outputs.json");
    assert_eq!(s.file_text().unwrap(), std::fs::read_to_string(fixture("crafted.jsonl")).unwrap());
    assert_eq!(Value::Array(s.entries_json().unwrap()), pi["get_entries"]["entries"]);
    assert_eq!(s.leaf_id(), pi["get_entries"]["leafId"].as_str());
    let ours = s.tree();
    assert_eq!(tree_shape(&ours, ours.roots()), pi_tree_shape(&pi["get_tree"]["tree"]));
    assert_same_messages(&s, &pi["get_messages"]["messages"]);
    let forks: Vec<Value> =
        s.fork_messages().into_iter().map(|f| serde_json::json!({"entryId": f.entry_id, "text": f.text})).collect();
    assert_eq!(Value::Array(forks), pi["get_fork_messages"]["messages"]);
    assert_eq!(s.name().as_deref(), pi["sessionName"].as_str());
}

#[test]
fn crafted_fork_and_clone_match_pi_up_to_new_label_ids() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_copy(dir.path(), "crafted.jsonl");
    let is_label = |l: &Value| l["type"] == "label";
    for (made, expected) in [
        (s.clone_branch().unwrap(), "crafted_pi_clone.jsonl"),
        (s.fork("e000000d").unwrap().0, "crafted_pi_fork.jsonl"),
    ] {
        let ours = read_lines(made.file_path().unwrap());
        let theirs = read_lines(&fixture(expected));
        assert_eq!(positional_ids(&ours[1..], is_label), positional_ids(&theirs[1..], is_label), "{expected}");
    }
}

#[test]
fn migrations_match_pi_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    for (input, expected, extra_lines) in
        [("v1_session.jsonl", "v1_pi_migrated.jsonl", 1), ("v2_session.jsonl", "v2_pi_migrated.jsonl", 0)]
    {
        let path = dir.path().join(input);
        let text = std::fs::read_to_string(fixture(input)).unwrap().replace("/home/u/proj", "/tmp/pifx");
        std::fs::write(&path, text).unwrap();
        Session::open(&path, "/tmp").unwrap();
        let ours = read_lines(&path);
        let theirs = read_lines(&fixture(expected));
        // pi also appended a thinking_level_change to the v1 session after loading it.
        let theirs = &theirs[..theirs.len() - extra_lines];
        let all = |_: &Value| true;
        assert_eq!(positional_ids(&ours, all), positional_ids(theirs, all), "{input}");
    }
}
