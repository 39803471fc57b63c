//! Unit tests of the session module (fixtures in `../testdata`).

mod context;
mod deep;
mod fast_line;
mod fork;
mod interop;
mod lazy;
mod load;
mod lookup;
mod paths;
mod spaced;
mod store;
mod tree;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason, Usage};

/// A user message with one text block.
pub(super) fn user(text: &str) -> AgentMessage {
    AgentMessage::user(text, &[])
}

/// A finished assistant message with one text block.
pub(super) fn assistant(text: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        api: "openai-completions".into(),
        provider: "fake".into(),
        model: "fake-model".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 1,
        response_id: None,
        error_message: None,
        raw_stop_reason: None,
        duration_ms: None,
        thinking_level: None,
        extra: Default::default(),
    })
}

/// The text of a context message (user, assistant, custom), for assertions.
pub(super) fn text_of(m: &AgentMessage) -> String {
    match m {
        AgentMessage::User(u) => u.content.text(),
        AgentMessage::Assistant(a) => a.text(),
        AgentMessage::Custom(c) => c.content.text(),
        AgentMessage::CompactionSummary(c) => format!("summary:{}", c.summary),
        AgentMessage::BranchSummary(b) => format!("branch:{}", b.summary),
        other => other.role().to_string(),
    }
}

/// The JSON records of a session file (header first).
pub(super) fn read_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "file must end with a newline");
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The `.jsonl` files of a directory, sorted.
pub(super) fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// Path of a fixture file.
pub(super) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session/testdata").join(name)
}

/// Write `lines` (joined with newlines, trailing newline) into `dir/name`.
pub(super) fn write_fixture(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{}\n", lines.join("\n"))).unwrap();
    path
}
