//! Sessions far deeper and wider than any stack: a 100,000-entry chain and a
//! 100,000-leaf fan-out, each walked by every tree operation on a thread
//! whose stack is far too small for a recursive walk.

use super::{assistant, text_of, user};
use crate::export_html::{ExportOptions, render_session_html};
use crate::session::Session;

const N: usize = 100_000;

/// An in-memory session of `N` alternating user/assistant messages; entry
/// `i > 0` hangs under the previous entry (`chain`) or under the first one.
fn session(chain: bool) -> Session {
    let mut s = Session::in_memory("/p");
    let root = s.append_message(user("q0")).unwrap();
    for i in 1..N {
        if !chain {
            s.set_leaf(&root).unwrap();
        }
        let message = if i % 2 == 0 { user(&format!("q{i}")) } else { assistant(&format!("a{i}")) };
        s.append_message(message).unwrap();
    }
    s
}

/// Runs `f` on a thread with a 256 KiB stack: a walk that recursed once per
/// level would need megabytes here.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).unwrap().join().unwrap();
}

#[test]
fn a_100k_entry_chain_is_walked_without_recursion() {
    on_small_stack(|| {
        let s = session(true);
        let tree = s.tree();
        assert_eq!(tree.roots.len(), 1);
        let (mut node, mut depth) = (tree.roots().next().unwrap(), 0);
        while let Some(child) = tree.children(node).next() {
            node = child;
            depth += 1;
        }
        assert_eq!((depth, node.entry.id()), (N - 1, s.leaf_id()));
        let copy = tree.clone();
        assert_eq!(copy, tree);
        drop((tree, copy));
        assert_eq!(s.branch().len(), N);
        let context = s.context();
        assert_eq!(context.messages.len(), N);
        assert_eq!(text_of(&context.messages[N - 1]), "a99999");
        assert_eq!(s.fork_messages().len(), N / 2);
        let second_last = s.branch()[N - 2].id().unwrap().to_string();
        assert_eq!(s.branch_from(&second_last).len(), N - 1);
        let html = render_session_html(&s, &ExportOptions::default());
        assert!(html.contains("a99999"));
    });
}

#[test]
fn a_100k_leaf_fan_out_is_walked_without_recursion() {
    on_small_stack(|| {
        let s = session(false);
        let tree = s.tree();
        let root = tree.roots().next().unwrap();
        assert_eq!(tree.children(root).count(), N - 1);
        assert!(tree.children(root).all(|leaf| leaf.children.is_empty()));
        assert_eq!(s.branch().len(), 2);
        assert_eq!(s.context().messages.len(), 2);
        assert_eq!(s.fork_messages().len(), N / 2);
    });
}

#[test]
fn parent_cycles_become_roots_so_the_tree_stays_finite() {
    let dir = tempfile::tempdir().unwrap();
    let path = super::write_fixture(
        dir.path(),
        "c.jsonl",
        &[
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"r1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"root","timestamp":1}}"#,
            r#"{"type":"message","id":"c1","parentId":"c2","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"one","timestamp":2}}"#,
            r#"{"type":"message","id":"c2","parentId":"c1","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"two","timestamp":3}}"#,
        ],
    );
    let (s, _) = Session::open(&path, "/p").unwrap();
    let tree = s.tree();
    let roots: Vec<_> = tree.roots().map(|n| n.entry.id().unwrap()).collect();
    assert_eq!(roots, ["r1", "c1"]);
    let c1 = tree.roots().nth(1).unwrap();
    let under: Vec<_> = tree.children(c1).map(|n| n.entry.id().unwrap()).collect();
    assert_eq!(under, ["c2"]);
    assert!(tree.children(tree.children(c1).next().unwrap()).next().is_none());
    assert_eq!(s.branch().len(), 2, "the leaf's path stops where the cycle closes");
}
