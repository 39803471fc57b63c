//! Operations a built-in tool may run somewhere else (pi's `ReadOperations`,
//! `BashOperations`, `WriteOperations`, …): an extension builds `read` or
//! `bash` with its own operations (`createReadTool(cwd, {operations})`), and
//! the tool then reads, writes, lists and runs through them, as pi's `ssh.ts`
//! example runs them on another machine, while everything else the tool does
//! (path resolution, line selection, truncation, edits, diffs, output
//! limits, notices) stays the same.
//!
//! As in pi, a tool given operations uses them for every operation of its
//! kind; an optional one that is not supplied (`detectImageMimeType`) is
//! simply not done. Names and arguments are pi's:
//!
//! | operation | arguments | result |
//! |---|---|---|
//! | `readFile` | `path` | `{"base64"}`: the bytes |
//! | `access` | `path` | `null` (an error when not accessible) |
//! | `detectImageMimeType` | `path` | a MIME type or `null` |
//! | `writeFile` | `path, content` | `null` |
//! | `mkdir` | `path` | `null` |
//! | `exec` | `command, cwd, env?, timeout?` | `{"exitCode"}` (output streamed) |
//! | `isDirectory`, `exists` | `path` | a boolean |
//! | `stat` | `path` | `{"isDirectory"}` |
//! | `readdir` | `path` | entry names |
//! | `glob` | `pattern, cwd, ignore, limit` | paths |

use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::shell::ExecSink;

/// Why an operation did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationError {
    /// The call was cancelled (abort).
    Aborted,
    /// It failed; the text is what the operation said (pi shows it as the
    /// tool's error, the way it shows a thrown error's message).
    Failed(String),
}

impl OperationError {
    /// The error's text for a tool result.
    pub fn message(&self) -> String {
        match self {
            OperationError::Aborted => "Operation aborted".to_string(),
            OperationError::Failed(m) => m.clone(),
        }
    }
}

/// A supplier of a tool's operations.
#[async_trait]
pub trait ToolOperations: Send + Sync {
    /// Whether the optional operation `name` is supplied.
    fn supplies(&self, name: &str) -> bool;

    /// Run operation `name` (not `exec`) with pi's arguments.
    async fn call(&self, name: &str, args: Value, cancel: &CancellationToken) -> Result<Value, OperationError>;

    /// Run a command, streaming its output into `sink`; the exit code
    /// (`None`: it ended without one). Fails with pi's texts: `aborted`,
    /// `timeout:<seconds>`, or the supplier's own.
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        timeout: Option<f64>,
        sink: &mut (dyn ExecSink + '_),
        cancel: &CancellationToken,
    ) -> Result<Option<i64>, OperationError>;
}

/// Typed helpers over [`ToolOperations::call`].
pub(crate) struct Ops<'a> {
    pub ops: &'a dyn ToolOperations,
    pub cancel: &'a CancellationToken,
}

impl Ops<'_> {
    fn path(path: &Path) -> Value {
        Value::String(path.display().to_string())
    }

    pub async fn read_file(&self, path: &Path) -> Result<Vec<u8>, OperationError> {
        let v = self.ops.call("readFile", json!({"path": Self::path(path)}), self.cancel).await?;
        let text = v.get("base64").and_then(Value::as_str).unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| OperationError::Failed(format!("readFile returned bad data: {e}")))
    }

    pub async fn access(&self, path: &Path) -> Result<(), OperationError> {
        self.ops.call("access", json!({"path": Self::path(path)}), self.cancel).await.map(drop)
    }

    /// The image type of the file, when the supplier detects images.
    pub async fn image_mime_type(&self, path: &Path) -> Result<Option<String>, OperationError> {
        if !self.ops.supplies("detectImageMimeType") {
            return Ok(None);
        }
        let v = self.ops.call("detectImageMimeType", json!({"path": Self::path(path)}), self.cancel).await?;
        Ok(v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
    }

    pub async fn write_file(&self, path: &Path, content: &str) -> Result<(), OperationError> {
        let args = json!({"path": Self::path(path), "content": content});
        self.ops.call("writeFile", args, self.cancel).await.map(drop)
    }

    pub async fn mkdir(&self, dir: &Path) -> Result<(), OperationError> {
        self.ops.call("mkdir", json!({"path": Self::path(dir)}), self.cancel).await.map(drop)
    }

    pub async fn is_directory(&self, path: &Path) -> Result<bool, OperationError> {
        let v = self.ops.call("isDirectory", json!({"path": Self::path(path)}), self.cancel).await?;
        Ok(v.as_bool().unwrap_or(false))
    }

    pub async fn exists(&self, path: &Path) -> Result<bool, OperationError> {
        let v = self.ops.call("exists", json!({"path": Self::path(path)}), self.cancel).await?;
        Ok(v.as_bool().unwrap_or(false))
    }

    /// Whether the path is a directory (`stat(path).isDirectory()`).
    pub async fn stat_is_directory(&self, path: &Path) -> Result<bool, OperationError> {
        let v = self.ops.call("stat", json!({"path": Self::path(path)}), self.cancel).await?;
        Ok(v.get("isDirectory").and_then(Value::as_bool).unwrap_or(false))
    }

    pub async fn readdir(&self, path: &Path) -> Result<Vec<String>, OperationError> {
        let v = self.ops.call("readdir", json!({"path": Self::path(path)}), self.cancel).await?;
        Ok(strings(&v))
    }

    pub async fn glob(
        &self,
        pattern: &str,
        cwd: &Path,
        ignore: &[&str],
        limit: usize,
    ) -> Result<Vec<String>, OperationError> {
        let args = json!({"pattern": pattern, "cwd": Self::path(cwd), "ignore": ignore, "limit": limit});
        let v = self.ops.call("glob", args, self.cancel).await?;
        Ok(strings(&v))
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
