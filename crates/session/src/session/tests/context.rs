//! Context tests: compaction, context edits, summaries, model and thinking level.

use serde_json::json;

use super::{assistant, text_of, user, write_fixture};
use crate::message::{AgentMessage, UserContent};
use crate::session::Session;

fn texts(s: &Session) -> Vec<String> {
    s.context().messages.iter().map(text_of).collect()
}

#[test]
fn empty_session_has_empty_context() {
    let s = Session::in_memory("/p");
    let ctx = s.context();
    assert!(ctx.messages.is_empty());
    assert_eq!(ctx.model, None);
    assert_eq!(ctx.thinking_level, None);
}

#[test]
fn compaction_keeps_from_first_kept_entry() {
    let mut s = Session::in_memory("/p");
    s.append_model_change("p1", "m1").unwrap();
    s.append_thinking_level_change("high").unwrap();
    s.append_message(user("q1")).unwrap();
    s.append_message(assistant("a1")).unwrap();
    let q2 = s.append_message(user("q2")).unwrap();
    s.append_model_change("p2", "m2").unwrap();
    s.append_message(assistant("a2")).unwrap();
    s.append_compaction("first summary", Some(&q2), 100, None, None).unwrap();
    s.append_message(user("q3")).unwrap();
    assert_eq!(texts(&s), ["summary:first summary", "q2", "a2", "q3"]);
    let ctx = s.context();
    // The assistant message names its model, and it is later than the change.
    assert_eq!(ctx.model, Some(("fake".into(), "fake-model".into())));
    assert_eq!(ctx.thinking_level.as_deref(), Some("high"));
    let AgentMessage::CompactionSummary(c) = &ctx.messages[0] else { panic!("summary first") };
    assert_eq!(c.tokens_before, 100);
    assert!(c.timestamp > 0);

    // A second compaction wins; the first one inside its kept range adds nothing.
    let a3 = s.append_message(assistant("a3")).unwrap();
    let first = s.entries().find(|e| e.type_name() == "compaction").and_then(|e| e.id()).unwrap().to_string();
    s.append_compaction("second summary", Some(&first), 200, None, None).unwrap();
    assert_eq!(texts(&s), ["summary:second summary", "q3", "a3"]);
    // Retain-none compaction.
    s.append_compaction("third", None, 300, None, None).unwrap();
    assert_eq!(texts(&s), ["summary:third"]);
    // Going back before the compactions restores the original context.
    s.set_leaf(&a3).unwrap();
    assert_eq!(texts(&s), ["summary:first summary", "q2", "a2", "q3", "a3"]);
}

#[test]
fn context_edits_hide_or_replace_content_on_their_branch() {
    let mut s = Session::in_memory("/p");
    let q1 = s.append_message(user("q1")).unwrap();
    let a1 = s.append_message(assistant("failed attempt")).unwrap();
    let fork_point = s.leaf_id().unwrap().to_string();
    s.append_context_edit(&a1, None).unwrap();
    s.append_message(assistant("good answer")).unwrap();
    assert_eq!(texts(&s), ["q1", "good answer"]);
    s.append_context_edit(&q1, Some(json!({"content": "rewritten"}))).unwrap();
    assert_eq!(texts(&s), ["rewritten", "good answer"]);
    // The latest edit of a target wins.
    s.append_context_edit(&q1, Some(json!({"content": [{"type": "text", "text": "again"}]}))).unwrap();
    assert_eq!(texts(&s), ["again", "good answer"]);
    // Edits are branch-relative.
    s.set_leaf(&fork_point).unwrap();
    assert_eq!(texts(&s), ["q1", "failed attempt"]);
}

#[test]
fn summaries_custom_messages_and_unknown_roles() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_fixture(
        dir.path(),
        "c.jsonl",
        &[
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"s0000001","parentId":null,"timestamp":"2025-01-01T00:00:00.500Z","message":{"role":"system","content":"","sections":{"preamble":"x"},"timestamp":1}}"#,
            r#"{"type":"message","id":"u0000001","parentId":"s0000001","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"q","timestamp":2}}"#,
            r#"{"type":"branch_summary","id":"b0000001","parentId":"u0000001","timestamp":"2025-01-01T00:00:02.000Z","fromId":"zzz","summary":"explored A"}"#,
            r#"{"type":"branch_summary","id":"b0000002","parentId":"b0000001","timestamp":"2025-01-01T00:00:02.500Z","fromId":"zzz","summary":""}"#,
            r#"{"type":"custom","customType":"state","data":{},"id":"c0000001","parentId":"b0000002","timestamp":"2025-01-01T00:00:03.000Z"}"#,
            r#"{"type":"custom_message","customType":"note","content":"injected","display":false,"id":"c0000002","parentId":"c0000001","timestamp":"2025-01-01T00:00:04.000Z"}"#,
            r#"{"type":"message","id":"u0000002","parentId":"c0000002","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"user","content":null,"timestamp":3}}"#,
        ],
    );
    let (s, _) = Session::open(&path, "/p").unwrap();
    let ctx = s.context();
    // The system message is part of the context: it declares the prompt.
    let AgentMessage::System(system) = &ctx.messages[0] else { panic!("system message first") };
    assert_eq!(system.sections.as_ref().unwrap()["preamble"], "x");
    let rest = &ctx.messages[1..];
    assert_eq!(rest.iter().map(text_of).collect::<Vec<_>>(), ["q", "branch:explored A", "injected", ""]);
    let AgentMessage::BranchSummary(b) = &rest[1] else { panic!("branch summary") };
    assert_eq!(b.from_id, "zzz");
    assert_eq!(b.timestamp, 1735689602000);
    let AgentMessage::Custom(c) = &rest[2] else { panic!("custom") };
    assert_eq!(c.custom_type, "note");
    assert!(!c.display);
    assert_eq!(c.timestamp, 1735689604000);
    let AgentMessage::User(u) = &rest[3] else { panic!("user") };
    assert_eq!(u.content, UserContent::Blocks(vec![]), "null content becomes []");
}

/// A long context made in parts on several threads is the one made in order.
#[test]
fn a_long_context_made_in_parts_is_the_one_made_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), dir.path(), None).unwrap();
    let mut ids = Vec::new();
    for n in 0..300 {
        ids.push(session.append_message(user(&format!("question {n}"))).unwrap());
        ids.push(session.append_message(assistant(&format!("answer {n}"))).unwrap());
    }
    // Hidden and replaced messages, and a compaction half-way.
    session.append_context_edit(&ids[260], None).unwrap();
    session.append_context_edit(&ids[501], Some(json!({"content": "edited"}))).unwrap();
    session.append_compaction("summary", Some(&ids[250]), 1234, None, None).unwrap();
    for n in 0..50 {
        session.append_message(user(&format!("after {n}"))).unwrap();
    }
    let in_order = session.projected_entries_in_parts(usize::MAX, 1);
    assert!(in_order.len() > 350, "{}", in_order.len());
    let messages: Vec<_> = in_order.iter().flat_map(|(_, m)| m).collect();
    assert!(messages.iter().any(|m| text_of(m) == "edited"));
    assert!(!messages.iter().any(|m| text_of(m) == "question 130"));
    for (min_part, most) in [(1, 2), (1, 3), (7, 4), (100, 2), (1000, 4)] {
        assert_eq!(session.projected_entries_in_parts(min_part, most), in_order, "{min_part}, {most}");
    }
    assert_eq!(session.projected_entries(), in_order);
}
