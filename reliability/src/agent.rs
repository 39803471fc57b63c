//! The `pi` binary under test: spawned in a sandbox of its own (agent dir,
//! cwd, home and temp dir), its stdout cut into records (JSONL lines or
//! `Content-Length` frames), its stderr kept for the report.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// How the agent's output is cut into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Lines,
    Headers,
}

/// A private directory tree for one agent.
pub struct Sandbox {
    pub root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> std::io::Result<Sandbox> {
        let root = tempfile::tempdir()?;
        for dir in ["agent", "cwd", "home", "tmp", "sessions"] {
            std::fs::create_dir_all(root.path().join(dir))?;
        }
        Ok(Sandbox { root })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// Write `settings.json` (and `models.json` when given) into the agent dir.
    pub fn configure(&self, settings: &serde_json::Value, models: Option<&serde_json::Value>) -> std::io::Result<()> {
        std::fs::write(self.path("agent").join("settings.json"), settings.to_string())?;
        if let Some(models) = models {
            std::fs::write(self.path("agent").join("models.json"), models.to_string())?;
        }
        Ok(())
    }
}

/// A running agent.
pub struct Agent {
    pub child: Child,
    stdin: Option<ChildStdin>,
    pub records: mpsc::UnboundedReceiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Agent {
    /// Start `pi --mode rpc ARGS` in `sb`.
    pub fn spawn(pi: &Path, sb: &Sandbox, args: &[String], framing: Framing) -> std::io::Result<Agent> {
        let mut full = vec!["--mode".to_string(), "rpc".to_string()];
        full.extend_from_slice(args);
        Agent::spawn_with(pi, sb, &full, framing)
    }

    /// Start `pi serve --listen 127.0.0.1:0 ARGS` in `sb`: its first stdout line is the address.
    pub fn spawn_serve(pi: &Path, sb: &Sandbox, args: &[String]) -> std::io::Result<Agent> {
        let mut full = vec!["serve".to_string(), "--listen".to_string(), "127.0.0.1:0".to_string()];
        full.extend_from_slice(args);
        Agent::spawn_with(pi, sb, &full, Framing::Lines)
    }

    fn spawn_with(pi: &Path, sb: &Sandbox, args: &[String], framing: Framing) -> std::io::Result<Agent> {
        let mut cmd = tokio::process::Command::new(pi);
        cmd.args(args).current_dir(sb.path("cwd")).env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd.env("HOME", sb.path("home"))
            .env("PI_CODING_AGENT_DIR", sb.path("agent"))
            .env("TMPDIR", sb.path("tmp"))
            .env("RUST_LOG", "warn")
            .env("PI_RPC_ORIGIN_OVERRIDES", pi_compat::NO_CATALOG_SERVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
        let mut stderr_pipe = child.stderr.take().ok_or_else(|| std::io::Error::other("no stderr"))?;
        let (tx, records) = mpsc::unbounded_channel();
        tokio::spawn(read_records(stdout, framing, tx));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = sink.lock() {
                    s.extend_from_slice(&buf[..n]);
                }
            }
        });
        Ok(Agent { child, stdin, records, stderr })
    }

    /// Write bytes to stdin; false once the agent no longer reads.
    pub async fn write(&mut self, bytes: &[u8]) -> bool {
        let Some(stdin) = self.stdin.as_mut() else { return false };
        stdin.write_all(bytes).await.is_ok() && stdin.flush().await.is_ok()
    }

    /// Hand stdin to a writer task.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next record, or `None` at end of output or after `limit`.
    pub async fn next(&mut self, limit: Duration) -> Option<Vec<u8>> {
        tokio::time::timeout(limit, self.records.recv()).await.ok().flatten()
    }

    /// Read records until one satisfies `done`; all records read, and whether it was found.
    pub async fn until(&mut self, limit: Duration, mut done: impl FnMut(&[u8]) -> bool) -> (Vec<Vec<u8>>, bool) {
        let deadline = tokio::time::Instant::now() + limit;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Some(record) = self.next(left).await else { return (seen, false) };
            let hit = done(&record);
            seen.push(record);
            if hit {
                return (seen, true);
            }
        }
    }

    /// The most memory the agent has held so far (`VmHWM`, KiB), while it runs.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| String::from_utf8_lossy(&s).into_owned()).unwrap_or_default()
    }

    /// Wait for the exit; `None` after `limit` (the agent is then killed).
    pub async fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                None
            }
        }
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        if let Some(pid) = self.child.id() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

async fn read_records(stdout: ChildStdout, framing: Framing, tx: mpsc::UnboundedSender<Vec<u8>>) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    loop {
        let record = match framing {
            Framing::Lines => {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        line
                    }
                }
            }
            Framing::Headers => match read_frame(&mut reader).await {
                Some(body) => body,
                None => return,
            },
        };
        if tx.send(record).is_err() {
            return;
        }
    }
}

/// One `Content-Length` frame's body; a malformed header is returned as the
/// record itself (which then fails the JSON check).
async fn read_frame<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<Vec<u8>> {
    let mut length = None;
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line).await.ok()? == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        match text.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                length = value.trim().parse::<usize>().ok();
            }
            Some(_) => {}
            None => return Some(line),
        }
    }
    let mut body = vec![0u8; length?];
    reader.read_exact(&mut body).await.ok()?;
    Some(body)
}
