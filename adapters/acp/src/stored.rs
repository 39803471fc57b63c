//! The stored sessions `session/list` shows: each file's id, cwd, last
//! change and title — the session's name (its latest `session_info`) or else
//! its first prompt, as pi-acp shows them.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::host::StoredSession;

/// Titles longer than this many characters are cut.
const TITLE_CHARS: usize = 80;

/// The sessions stored in `dirs`, newest first, of `cwd` (or of any cwd):
/// what a host's [`crate::SessionHost::stored`] lists.
pub fn stored_in(dirs: &[PathBuf], cwd: Option<&Path>) -> Vec<StoredSession> {
    let mut found: Vec<(std::time::SystemTime, StoredSession)> = Vec::new();
    for dir in dirs {
        let Ok(read) = std::fs::read_dir(dir) else { continue };
        for path in read.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
            let Some(header) = pi_core::session::read_session_header(&path) else { continue };
            if cwd.is_some_and(|c| Path::new(&header.cwd) != c) {
                continue;
            }
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            let updated_at =
                chrono::DateTime::<chrono::Utc>::from(modified).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let session = StoredSession {
                session_id: header.id,
                cwd: PathBuf::from(header.cwd),
                title: title_of(&path),
                updated_at: Some(updated_at),
            };
            found.push((modified, session));
        }
    }
    found.sort_by_key(|s| std::cmp::Reverse(s.0));
    found.into_iter().map(|(_, s)| s).collect()
}

/// A session file's title: its latest name (an empty one clears it), else
/// the text of its first user message, on one line and cut to 80 characters.
pub fn title_of(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut name: Option<String> = None;
    let mut first_prompt: Option<String> = None;
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Most lines are neither: skip them without parsing.
        let maybe_name = line.contains("\"session_info\"");
        let maybe_prompt = first_prompt.is_none() && line.contains("\"user\"");
        if !maybe_name && !maybe_prompt {
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(&line) else { continue };
        match entry.get("type").and_then(Value::as_str) {
            Some("session_info") => {
                name = entry.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty()).map(one_line);
            }
            Some("message") if maybe_prompt => {
                let message = &entry["message"];
                if message.get("role").and_then(Value::as_str) == Some("user") {
                    first_prompt = prompt_text(&message["content"]).map(|t| one_line(&t)).filter(|t| !t.is_empty());
                }
            }
            _ => {}
        }
    }
    name.or(first_prompt)
}

/// A user message's text: the string, or its first text block.
fn prompt_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|b| b.get("text").and_then(Value::as_str))
            .map(str::to_string),
        _ => None,
    }
}

/// Whitespace runs as one space, cut to [`TITLE_CHARS`] characters.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    const HEADER: &str =
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

    #[test]
    fn titles_are_the_name_or_the_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let user = |text: &str| {
            format!(
                r#"{{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{{"role":"user","content":{text},"timestamp":1}}}}"#
            )
        };
        let first = user(r#""fix the\n  build please""#);
        let second = user(r#"[{"type":"image","data":"","mimeType":"image/png"},{"type":"text","text":"later"}]"#);
        let prompted = write(dir.path(), "a.jsonl", &[HEADER, &first, &second]);
        assert_eq!(title_of(&prompted).as_deref(), Some("fix the build please"));

        let named = r#"{"type":"session_info","id":"b","parentId":"a","timestamp":"t","name":"Release notes"}"#;
        let renamed = write(dir.path(), "b.jsonl", &[HEADER, &first, named]);
        assert_eq!(title_of(&renamed).as_deref(), Some("Release notes"));
        let cleared = r#"{"type":"session_info","id":"c","parentId":"b","timestamp":"t","name":""}"#;
        let unnamed = write(dir.path(), "c.jsonl", &[HEADER, &first, named, cleared]);
        assert_eq!(title_of(&unnamed).as_deref(), Some("fix the build please"), "an empty name clears it");

        let long = user(&serde_json::to_string(&"word ".repeat(40)).unwrap());
        let cut = title_of(&write(dir.path(), "d.jsonl", &[HEADER, &long])).unwrap();
        assert_eq!(cut.chars().count(), TITLE_CHARS + 1, "{cut}");
        assert!(cut.ends_with('…'));
        assert_eq!(title_of(&write(dir.path(), "e.jsonl", &[HEADER])), None, "never prompted");

        let listed = stored_in(&[dir.path().to_path_buf()], Some(Path::new("/w")));
        assert_eq!(listed.len(), 5);
        assert!(listed.iter().all(|s| s.session_id == "s1" && s.updated_at.is_some()));
        assert!(stored_in(&[dir.path().to_path_buf()], Some(Path::new("/elsewhere"))).is_empty());
    }
}
