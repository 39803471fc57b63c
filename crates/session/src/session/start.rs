//! Sessions the command line starts: one with a chosen id (`--session-id`)
//! and a copy of another session file in the session directory (`--fork`).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::error::SessionError;
use super::store::{Session, new_header, session_file_name, write_new_file};

/// The session file of `dir` whose header id is exactly `id`.
pub fn find_by_id(dir: &Path, id: &str) -> Option<PathBuf> {
    let read = std::fs::read_dir(dir).ok()?;
    let mut files: Vec<PathBuf> =
        read.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
    files.sort();
    files.into_iter().find(|p| super::read_session_header(p).is_some_and(|h| h.id == id))
}

/// A fresh session id (UUID v7, as the sessions pi-rpc creates).
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl Session {
    /// A new session in `session_dir` with this id (written on its first message).
    pub fn create_with_id(session_dir: &Path, cwd: &Path, id: &str) -> Result<Session, SessionError> {
        std::fs::create_dir_all(session_dir).map_err(|e| SessionError::io(session_dir, e))?;
        let mut header = new_header(&cwd.to_string_lossy(), None);
        header.id = id.to_string();
        let file = session_file_name(session_dir, &header);
        Ok(Session::empty(header, Some(file), Some(session_dir.to_path_buf())))
    }

    /// A new session file in `session_dir` with this id, written at once
    /// with its header only: the session exists before its first message
    /// (an ACP `session/new` may be loaded before it is prompted). Its path.
    pub fn write_empty(session_dir: &Path, cwd: &Path, id: &str) -> Result<PathBuf, SessionError> {
        std::fs::create_dir_all(session_dir).map_err(|e| SessionError::io(session_dir, e))?;
        let mut header = new_header(&cwd.to_string_lossy(), None);
        header.id = id.to_string();
        let path = session_file_name(session_dir, &header);
        let line = serde_json::to_string(&header).map_err(|e| SessionError::io(&path, e.into()))?;
        write_new_file(&path, &format!("{line}\n"))?;
        Ok(path)
    }

    /// The same session with `parentSession` set in its header (before it is written).
    pub fn with_parent(mut self, parent_session: Option<String>) -> Session {
        if parent_session.is_some() {
            std::sync::Arc::make_mut(&mut self.header).parent_session = parent_session;
        }
        self
    }

    /// pi's `forkFrom`: a new file in `session_dir` holding every entry of
    /// `source` under a new header (new id, or `id`; this `cwd`; the source as
    /// `parentSession`); then opened.
    pub fn fork_file(
        source: &Path,
        session_dir: &Path,
        cwd: &Path,
        id: Option<&str>,
    ) -> Result<(Session, Vec<String>), SessionError> {
        let file = std::fs::File::open(source).map_err(|e| SessionError::io(source, e))?;
        let mut has_header = false;
        let mut entries = String::new();
        for line in std::io::BufReader::new(file).lines() {
            let line = line.map_err(|e| SessionError::io(source, e))?;
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if value.get("type").and_then(serde_json::Value::as_str) == Some("session") {
                has_header = true;
                continue;
            }
            entries.push_str(line.trim_end());
            entries.push('\n');
        }
        if !has_header {
            return Err(SessionError::NotASession(source.to_path_buf()));
        }
        std::fs::create_dir_all(session_dir).map_err(|e| SessionError::io(session_dir, e))?;
        let mut header = new_header(&cwd.to_string_lossy(), Some(source.to_string_lossy().into_owned()));
        if let Some(id) = id {
            header.id = id.to_string();
        }
        let path = session_file_name(session_dir, &header);
        let header_line = serde_json::to_string(&header).map_err(|e| SessionError::io(&path, e.into()))?;
        write_new_file(&path, &format!("{header_line}\n{entries}"))?;
        Session::open(&path, cwd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forked_file_copies_entries_under_a_new_header() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("src.jsonl");
        let header =
            r#"{"type":"session","version":3,"id":"orig","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/elsewhere"}"#;
        let entry = r#"{"type":"session_info","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","name":"named"}"#;
        std::fs::write(&source, format!("{header}\n{entry}\n")).unwrap();
        let target = dir.path().join("sessions");
        let (session, _) = Session::fork_file(&source, &target, dir.path(), Some("my-id")).unwrap();
        assert_eq!(session.session_id(), "my-id");
        assert_eq!(session.header().parent_session.as_deref(), Some(source.to_str().unwrap()));
        assert_eq!(session.name().as_deref(), Some("named"));
        let written = std::fs::read_to_string(session.file_path().unwrap()).unwrap();
        assert!(written.ends_with(&format!("{entry}\n")), "{written}");
        assert_eq!(find_by_id(&target, "my-id").as_deref(), session.file_path());
        assert!(find_by_id(&target, "other").is_none());
    }

    #[test]
    fn an_empty_session_file_opens_and_takes_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = Session::write_empty(dir.path(), Path::new("/work"), "empty-id").unwrap();
        assert_eq!(find_by_id(dir.path(), "empty-id").as_deref(), Some(path.as_path()));
        let (mut session, warnings) = Session::open(&path, dir.path()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!((session.session_id(), session.cwd()), ("empty-id", "/work"));
        session.append_session_info("named").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
