//! The `write` tool (create or overwrite a file, creating parent directories),
//! and the per-file lock that serializes write/edit calls on the same file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::path::{node_fs_error, resolve_to_cwd};
use super::validate::coerce;
use super::{Tool, ToolContext, ToolOutput};

const DESCRIPTION: &str = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.";

type LockMap = HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>;
static FILE_LOCKS: LazyLock<Mutex<LockMap>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// Holds the mutation lock of one file; released on drop.
pub struct FileLock {
    key: PathBuf,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for FileLock {
    fn drop(&mut self) {
        self.guard.take();
        if let Ok(mut map) = FILE_LOCKS.lock() {
            // Two references remain when nobody else waits: ours and the map's.
            if Arc::strong_count(&self.lock) <= 2 {
                map.remove(&self.key);
            }
        }
    }
}

/// Serialize mutations of the same file (pi's file mutation queue): wait for
/// earlier writers of `path` (keyed by its real path when it exists), in order.
pub async fn lock_file(path: &Path) -> FileLock {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let lock = match FILE_LOCKS.lock() {
        Ok(mut map) => map.entry(key.clone()).or_default().clone(),
        Err(_) => Arc::new(tokio::sync::Mutex::new(())),
    };
    let guard = lock.clone().lock_owned().await;
    FileLock { key, lock, guard: Some(guard) }
}

/// The `write` tool.
pub struct WriteTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
}

impl WriteTool {
    pub fn new() -> Self {
        WriteTool { parameters: OnceLock::new() }
    }
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> &Value {
        self.parameters.get_or_init(schema)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let args = coerce(self.parameters(), args);
        let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
        let content = args.get("content").and_then(Value::as_str).unwrap_or_default();
        let absolute = resolve_to_cwd(path, &ctx.cwd);
        let _lock = lock_file(&absolute).await;
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Operation aborted");
        }
        if let Some(ops) = ctx.ops() {
            // An extension's operations (pi's `WriteOperations`): the parent directory, then the file.
            let dir = absolute.parent().unwrap_or(&absolute);
            if let Err(e) = ops.mkdir(dir).await {
                return ToolOutput::error(e.message());
            }
            if ctx.cancel.is_cancelled() {
                return ToolOutput::error("Operation aborted");
            }
            if let Err(e) = ops.write_file(&absolute, content).await {
                return ToolOutput::error(e.message());
            }
            if ctx.cancel.is_cancelled() {
                return ToolOutput::error("Operation aborted");
            }
            return ToolOutput::text(format!("Successfully wrote to {path}"));
        }
        if let Some(client) = ctx.client_writes() {
            // The editor writes (and creates) the file: the edit lands in its buffer.
            return match client.write_text_file(absolute.clone(), content.to_string(), &ctx.cancel).await {
                Ok(()) => ToolOutput::text(format!("Successfully wrote to {path}")),
                Err(crate::client::ClientFailure::Cancelled) => ToolOutput::error("Operation aborted"),
                Err(e) => ToolOutput::error(format!("Could not write {path} through the client: {e}")),
            };
        }
        if let Some(dir) = absolute.parent()
            && let Err(e) = tokio::fs::create_dir_all(dir).await
        {
            return ToolOutput::error(node_fs_error(&e, "mkdir", Some(dir)));
        }
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Operation aborted");
        }
        if let Err(e) = tokio::fs::write(&absolute, content.as_bytes()).await {
            return ToolOutput::error(node_fs_error(&e, "open", Some(&absolute)));
        }
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Operation aborted");
        }
        ToolOutput::text(format!("Successfully wrote to {path}"))
    }
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["path", "content"],
        "properties": {
            "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
            "content": {"type": "string", "description": "Content to write to the file"}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::join_text;

    async fn run(dir: &Path, args: Value) -> ToolOutput {
        WriteTool::new().execute(args, ToolContext::new(dir.to_path_buf())).await
    }

    #[tokio::test]
    async fn creates_parent_directories_and_reports_the_given_path() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), json!({"path": "out/deep/new.txt", "content": "hello world"})).await;
        assert!(!out.is_error);
        assert_eq!(join_text(&out.content), "Successfully wrote to out/deep/new.txt");
        assert_eq!(out.details, None);
        assert_eq!(std::fs::read_to_string(dir.path().join("out/deep/new.txt")).unwrap(), "hello world");
    }

    #[tokio::test]
    async fn overwrites_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old content that is longer").unwrap();
        let out = run(dir.path(), json!({"path": "a.txt", "content": "new"})).await;
        assert!(!out.is_error);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "new");
    }

    #[tokio::test]
    async fn errors_are_worded_like_node() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let out = run(dir.path(), json!({"path": "d", "content": "x"})).await;
        assert!(out.is_error);
        assert_eq!(out.details, Some(json!({})));
        let d = dir.path().join("d");
        assert_eq!(
            join_text(&out.content),
            format!("EISDIR: illegal operation on a directory, open '{}'", d.display())
        );
        let out = run(dir.path(), json!({"path": "a.txt/x", "content": "x"})).await;
        let a = dir.path().join("a.txt");
        assert_eq!(join_text(&out.content), format!("EEXIST: file already exists, mkdir '{}'", a.display()));
    }

    #[tokio::test]
    async fn coerces_non_string_content_like_pi() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), json!({"path": "n.txt", "content": 42})).await;
        assert!(!out.is_error);
        assert_eq!(std::fs::read_to_string(dir.path().join("n.txt")).unwrap(), "42");
    }

    #[tokio::test]
    async fn file_lock_serializes_writers_of_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let first = lock_file(&path).await;
        let p2 = path.clone();
        let waiter = tokio::spawn(async move {
            let _second = lock_file(&p2).await;
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.unwrap().unwrap();
        // Other files are not blocked.
        let _a = lock_file(&dir.path().join("a")).await;
        let _b = lock_file(&dir.path().join("b")).await;
    }
}
