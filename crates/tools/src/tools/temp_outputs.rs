//! Where the full output of a truncated bash run lives, and when it goes.
//!
//! A run whose output exceeds the display limits (2000 lines or 50 KB) keeps
//! its whole output in `<temp>/pi-rpc-<pid>-<8 hex>/pi-bash-<16 hex>.log`,
//! one directory per agent (`<temp>` is `$TMPDIR`, default `/tmp`), made on
//! first use. When a session is closed (switch, new, fork, clone, exit) the
//! files its saved session file mentions are kept, since its transcript
//! points at them; every other file is removed, and the directory too once
//! empty. Only a killed process leaves its files behind.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The full-output files of one agent.
#[derive(Debug)]
pub struct TempOutputs {
    dir: PathBuf,
    /// Files a closed session refers to: never removed.
    kept: HashSet<PathBuf>,
}

impl TempOutputs {
    /// A fresh directory name under `base` (nothing is created yet).
    pub fn new(base: &Path) -> Self {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        TempOutputs { dir: base.join(format!("pi-rpc-{}-{}", std::process::id(), &tag[..8])), kept: HashSet::new() }
    }

    /// The directory full-output files are created in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A session is closed: keep the files `session_file` mentions, remove
    /// the others, and the directory when nothing is left in it.
    pub fn release(&mut self, session_file: Option<&Path>) {
        let Ok(listing) = std::fs::read_dir(&self.dir) else { return };
        let files: Vec<PathBuf> =
            listing.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| !self.kept.contains(p)).collect();
        if files.is_empty() && !self.kept.is_empty() {
            return;
        }
        let transcript = session_file.and_then(|f| std::fs::read_to_string(f).ok()).unwrap_or_default();
        for file in files {
            let mentioned = file.to_str().is_some_and(|p| transcript.contains(&json_text(p)));
            if mentioned {
                self.kept.insert(file);
            } else if let Err(e) = std::fs::remove_file(&file) {
                tracing::debug!("cannot remove {}: {e}", file.display());
            }
        }
        if self.kept.is_empty() {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// `path` as it appears inside a JSON string.
fn json_text(path: &str) -> String {
    let quoted = serde_json::to_string(path).unwrap_or_default();
    quoted.trim_matches('"').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_a_saved_session_mentions_are_kept_and_the_rest_removed() {
        let base = tempfile::tempdir().unwrap();
        let mut outputs = TempOutputs::new(base.path());
        outputs.release(None); // nothing made yet: nothing to do
        assert!(!outputs.dir().exists());
        let (kept, _) = crate::tools::shell::create_output_file(outputs.dir(), "pi-bash").unwrap();
        let (dropped, _) = crate::tools::shell::create_output_file(outputs.dir(), "pi-bash").unwrap();
        let session = base.path().join("s.jsonl");
        let line = serde_json::json!({"details": {"fullOutputPath": kept.display().to_string()}});
        std::fs::write(&session, format!("{line}\n")).unwrap();
        outputs.release(Some(&session));
        assert!(kept.exists());
        assert!(!dropped.exists());
        // A later session that mentions nothing does not take the kept file.
        let (later, _) = crate::tools::shell::create_output_file(outputs.dir(), "pi-bash").unwrap();
        outputs.release(None);
        assert!(kept.exists() && !later.exists());
    }

    #[test]
    fn an_unsaved_session_leaves_nothing_behind() {
        let base = tempfile::tempdir().unwrap();
        let mut outputs = TempOutputs::new(base.path());
        let (file, _) = crate::tools::shell::create_output_file(outputs.dir(), "pi-bash").unwrap();
        outputs.release(None);
        assert!(!file.exists());
        assert!(!outputs.dir().exists(), "the empty directory goes too");
    }
}
