//! `export_html`: one self-contained HTML page of a session (pi's `export_html` command).
//!
//! * [`render_session_html`] turns a [`Session`] into a complete HTML5
//!   document: inline CSS, a tiny optional inline script, images as `data:`
//!   URIs, nothing fetched from anywhere (a Content-Security-Policy in the
//!   page forbids it too). The page is fully readable with scripts disabled.
//! * [`export_session_html`] renders and writes it where pi would:
//!   `pi-session-<session file basename without .jsonl>.html` in the
//!   working directory unless an output path is given.
//!
//! Sub-modules: `render` (the document and every entry kind, as `maud`
//! templates), `tools` (tool calls and results), `stats` (header totals),
//! `markdown` (`Esc`, session text escaped through `html-escape`, and safe
//! markdown rendering); `style.css` and `script.js` are inlined. The golden
//! pages (`golden`) hold the output byte for byte.

mod markdown;
mod render;
mod stats;
mod tools;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{CoreError, ErrorKind};
use crate::session::Session;

pub use render::render_session_html;

/// A tool the agent offers the model, listed at the top of the page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportTool {
    pub name: String,
    pub description: String,
}

/// What the page shows besides the session file itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The agent's current system prompt, shown collapsed above the transcript
    /// (pi shows the exporting agent's prompt the same way).
    pub system_prompt: Option<String>,
    /// The agent's current tools, listed collapsed above the transcript.
    pub tools: Vec<ExportTool>,
}

/// Why an export failed. Texts follow pi where pi has one.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// `--no-session`: there is no session file to name the export after.
    #[error("Cannot export in-memory session to HTML")]
    InMemory,
    /// The session file has not been written yet (no user or assistant message).
    #[error("Nothing to export yet - start a conversation first")]
    NothingToExport,
    /// The output file could not be written. The text reads like Node's
    /// (`ENOENT: no such file or directory, open '<path>'`), as pi reports it.
    #[error("{}, open '{}'", node_error_text(source), path.display())]
    Write {
        /// The output path as the caller gave it (relative paths stay relative).
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ExportError {
    /// Protocol-neutral classification.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ExportError::InMemory | ExportError::NothingToExport => ErrorKind::InvalidParams,
            ExportError::Write { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound
                | std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::IsADirectory
                | std::io::ErrorKind::NotADirectory
                | std::io::ErrorKind::ReadOnlyFilesystem => ErrorKind::InvalidParams,
                _ => ErrorKind::Internal,
            },
        }
    }
}

impl From<ExportError> for CoreError {
    fn from(e: ExportError) -> Self {
        let mut core = CoreError::new(e.kind(), e.to_string());
        if matches!(e, ExportError::Write { .. }) {
            core.field = Some("outputPath".to_string());
        }
        core
    }
}

/// Node's `<CODE>: <description>` for the usual file-writing failures.
fn node_error_text(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let known = match e.kind() {
        K::NotFound => Some("ENOENT: no such file or directory"),
        K::PermissionDenied => Some("EACCES: permission denied"),
        K::IsADirectory => Some("EISDIR: illegal operation on a directory"),
        K::NotADirectory => Some("ENOTDIR: not a directory"),
        K::ReadOnlyFilesystem => Some("EROFS: read-only file system"),
        K::StorageFull => Some("ENOSPC: no space left on device"),
        _ => None,
    };
    match known {
        Some(text) => text.to_string(),
        None => format!("cannot write file: {e}"),
    }
}

/// Render `session` and write it to `output_path` (or pi's default name),
/// relative paths being taken from `cwd`. Returns the path the way pi
/// reports it: as given (after `~` and `file://` expansion), so the default
/// is the relative `pi-session-<basename>.html`.
pub fn export_session_html(
    session: &Session,
    output_path: Option<&str>,
    cwd: &Path,
    options: &ExportOptions,
) -> Result<PathBuf, ExportError> {
    let session_file = session.file_path().ok_or(ExportError::InMemory)?;
    if !session_file.exists() {
        return Err(ExportError::NothingToExport);
    }
    let reported = match output_path.filter(|p| !p.is_empty()) {
        Some(p) => normalize_output_path(p),
        None => default_output_name(session_file),
    };
    let target = if reported.is_absolute() { reported.clone() } else { cwd.join(&reported) };
    let html = render_session_html(session, options);
    write_whole_file(&target, html.as_bytes())
        .map_err(|source| ExportError::Write { path: reported.clone(), source })?;
    Ok(reported)
}

/// pi's default export name: `pi-session-<file name without ".jsonl">.html`.
pub fn default_output_name(session_file: &Path) -> PathBuf {
    let name = session_file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Like Node's `basename(p, ".jsonl")`: the suffix goes unless it is the whole name.
    let stem = match name.strip_suffix(".jsonl") {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => name,
    };
    PathBuf::from(format!("pi-session-{stem}.html"))
}

/// pi's `normalizePath` on an output path: `~` and `~/…` expand to the home
/// directory, a `file://` URL becomes its path; anything else is kept as is.
fn normalize_output_path(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    if path == "~" {
        if let Some(home) = home() {
            return home;
        }
    } else if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = home()
    {
        return home.join(rest);
    }
    if let Some(rest) = path.strip_prefix("file://") {
        // `file:///a/b` and `file://localhost/a/b` name `/a/b`.
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return PathBuf::from(percent_decode(rest));
    }
    PathBuf::from(path)
}

/// Decode `%XX` escapes (invalid escapes are kept literally).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Write `contents` so that nobody sees half a page: into a temporary file
/// beside `target`, then renamed over it. A target that exists but is not a
/// plain file (a symlink, a device) is written through directly instead, as
/// Node's `writeFileSync` would.
fn write_whole_file(target: &Path, contents: &[u8]) -> std::io::Result<()> {
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory)),
        Ok(meta) if !meta.file_type().is_file() => return std::fs::write(target, contents),
        _ => {}
    }
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = target.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut file| file.write_all(contents).and_then(|()| file.sync_all()));
    let result = written.and_then(|()| std::fs::rename(&tmp, target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
