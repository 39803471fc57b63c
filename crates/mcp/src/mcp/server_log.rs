//! The log MCP servers write to with `notifications/message`: appended to
//! `mcp.log` in the agent directory (or the `logPath` an extension's
//! `createMcpExtension` gave), one line a message as pi 1.6.0 writes them,
//! and moved to `<file>.1` once it grows past [`MAX_LOG_BYTES`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

/// Past this size the log is moved to `<file>.1` before the next line.
pub const MAX_LOG_BYTES: u64 = 5 * 1024 * 1024;

/// One message as a log line: `<ISO time> [server] level logger: text`,
/// continuation lines indented by four spaces.
pub fn format_line(server: &str, params: &Value, now: &str) -> String {
    let level = params.get("level").and_then(Value::as_str).unwrap_or("info");
    let logger = match params.get("logger").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => format!(" {name}:"),
        _ => String::new(),
    };
    let text = match params.get("data") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "undefined".to_string(),
    };
    let text = text.replace("\r\n", "\n").replace('\n', "\n    ");
    format!("{now} [{server}] {level}{logger} {text}\n")
}

/// The session's server log; writing is best effort (a failure is only traced).
#[derive(Debug, Default)]
pub struct ServerLog {
    /// Where lines go; none: nowhere (only traced).
    path: Mutex<Option<PathBuf>>,
}

impl ServerLog {
    pub fn set_path(&self, path: PathBuf) {
        if let Ok(mut slot) = self.path.lock() {
            *slot = Some(path);
        }
    }

    pub fn path(&self) -> Option<PathBuf> {
        self.path.lock().ok().and_then(|p| p.clone())
    }

    /// Append `server`'s message `params` (the notification's params).
    pub fn write(&self, server: &str, params: &Value) {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let line = format_line(server, params, &now);
        tracing::debug!("MCP server log: {}", line.trim_end());
        // Held while writing: lines of several servers do not interleave.
        let Ok(path) = self.path.lock() else { return };
        let Some(path) = path.as_deref() else { return };
        if let Err(error) = append(path, &line) {
            tracing::debug!("MCP server log {}: {error}", path.display());
        }
    }
}

fn append(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) > MAX_LOG_BYTES {
        let mut rotated = path.as_os_str().to_owned();
        rotated.push(".1");
        std::fs::rename(path, rotated)?;
    }
    std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_formatted_as_pi_writes_them() {
        let now = "2026-12-05T05:00:00.000Z";
        assert_eq!(
            format_line("everything", &json!({"level": "info", "logger": "srv", "data": "a\nb"}), now),
            "2026-12-05T05:00:00.000Z [everything] info srv: a\n    b\n"
        );
        assert_eq!(
            format_line("s", &json!({"level": "error", "data": {"k": 1}}), now),
            format!("{now} [s] error {{\"k\":1}}\n")
        );
    }

    #[test]
    fn lines_are_appended_and_a_full_log_is_rotated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/mcp.log");
        let log = ServerLog::default();
        log.write("s", &json!({"data": "dropped: no path yet"}));
        log.set_path(path.clone());
        log.write("s", &json!({"data": "one"}));
        log.write("s", &json!({"data": "two"}));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().next().unwrap().ends_with("[s] info one"), "{text}");
        std::fs::write(&path, vec![b'x'; MAX_LOG_BYTES as usize + 1]).unwrap();
        log.write("s", &json!({"data": "three"}));
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("[s] info three\n"));
        assert_eq!(std::fs::metadata(dir.path().join("logs/mcp.log.1")).unwrap().len(), MAX_LOG_BYTES + 1);
    }
}
