//! Shell process execution shared by the `bash` tool and the RPC `bash` command:
//! `bash -c` in its own process group, stdout+stderr merged in arrival order,
//! abort and timeout kill the whole group, and the wait ends when the shell
//! has exited and its pipes are closed or idle for 100 ms (background
//! processes may keep them open). Also: streaming UTF-8 decoding, ANSI
//! stripping, and pi's output temp files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Quiet time after the shell exits before pipes still held open are abandoned.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);
/// Largest timeout pi accepts, in milliseconds.
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// The shell pi uses: `/bin/bash`, else `bash` on `PATH`, else `sh`.
pub fn shell_program() -> PathBuf {
    if Path::new("/bin/bash").exists() {
        return PathBuf::from("/bin/bash");
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("bash");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from("sh")
}

/// The settings' `shellPath` and `shellCommandPrefix`, as pi applies them
/// to the session's `bash` tool and the RPC `bash` command.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShellSettings {
    /// The shell to run commands with instead of the default one.
    pub path: Option<PathBuf>,
    /// Lines run before every command (e.g. `shopt -s expand_aliases`).
    pub command_prefix: Option<String>,
}

impl ShellSettings {
    /// `command` after the prefix, on a line of its own (pi's joining).
    pub fn prefixed(&self, command: &str) -> String {
        match self.command_prefix.as_deref().filter(|p| !p.is_empty()) {
            Some(prefix) => format!("{prefix}\n{command}"),
            None => command.to_string(),
        }
    }

    /// The shell to run: the configured one when it exists (pi's error
    /// when it does not), else [`shell_program`].
    pub fn program(&self) -> Result<PathBuf, String> {
        match &self.path {
            Some(path) if path.exists() => Ok(path.clone()),
            Some(path) => Err(format!("Custom shell path not found: {}", path.display())),
            None => Ok(shell_program()),
        }
    }
}

/// How a run ended when it did not end normally.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecError {
    /// The cancel token fired.
    Aborted,
    /// The timeout fired. `shell_exit` is set when the shell itself had
    /// exited before the deadline (background processes kept writing):
    /// its exit code and seconds after start (one decimal).
    Timeout { shell_exit: Option<(i32, f64)> },
    /// The command could not run (text as pi words it).
    Failed(String),
}

/// Receives a run's output and may ask to be woken at a deadline (update throttling).
pub trait ExecSink: Send {
    /// A chunk of raw output (stdout or stderr, as it arrived).
    fn data(&mut self, chunk: &[u8]);
    /// When to call [`ExecSink::tick`] next, if ever.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn tick(&mut self) {}
}

/// Check pi's timeout rules; the timeout as a duration.
pub fn resolve_timeout(timeout: Option<f64>) -> Result<Option<Duration>, String> {
    let Some(t) = timeout else { return Ok(None) };
    if !t.is_finite() || t <= 0.0 {
        return Err("Invalid timeout: must be a finite number of seconds".into());
    }
    let ms = t * 1000.0;
    if ms > MAX_TIMEOUT_MS {
        return Err("Invalid timeout: maximum is 2147483.647 seconds".into());
    }
    Ok(Some(Duration::from_secs_f64(t)))
}

/// Kill a process group with SIGKILL (falling back to the process alone).
pub fn kill_process_group(pid: u32) {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    let pid = Pid::from_raw(pid as i32);
    if killpg(pid, Signal::SIGKILL).is_err() {
        let _ = kill(pid, Signal::SIGKILL);
    }
}

/// Kills the process group if the run is dropped before the shell exited
/// (the caller stopped waiting without cancelling).
struct GroupGuard {
    pid: u32,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed && self.pid != 0 {
            kill_process_group(self.pid);
        }
    }
}

fn spawn_reader<R>(mut pipe: R, tx: mpsc::UnboundedSender<Vec<u8>>) -> tokio::task::JoinHandle<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    })
}

fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Run `command` with the default shell ([`shell_program`]); see [`exec_with`].
pub async fn exec(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
    timeout: Option<Duration>,
    sink: &mut dyn ExecSink,
) -> Result<i32, ExecError> {
    exec_with(&shell_program(), command, cwd, env, cancel, timeout, sink).await
}

/// Run `command` with `shell -c` in `cwd` (process env plus `env`), feeding
/// output to `sink`; the exit code (128+N when killed by signal N).
pub async fn exec_with(
    shell: &Path,
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
    timeout: Option<Duration>,
    sink: &mut dyn ExecSink,
) -> Result<i32, ExecError> {
    if cancel.is_cancelled() {
        return Err(ExecError::Aborted);
    }
    if !cwd.exists() {
        return Err(ExecError::Failed(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            cwd.display()
        )));
    }
    // stdout and stderr share one pipe, so output keeps the order it was written in.
    let pipe_failed = |e: std::io::Error| ExecError::Failed(format!("cannot create a pipe: {e}"));
    let (reader, writer) = std::io::pipe().map_err(pipe_failed)?;
    let writer_err = writer.try_clone().map_err(pipe_failed)?;
    let mut cmd = tokio::process::Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .process_group(0);
    let spawned = cmd.spawn();
    // The command holds our copies of the write end: drop it so the reader sees EOF.
    drop(cmd);
    let mut child = spawned.map_err(|e| {
        let code = super::path::errno_code(&e).unwrap_or_else(|| e.to_string());
        ExecError::Failed(format!("spawn {} {code}", shell.display()))
    })?;
    let pid = child.id().unwrap_or(0);
    let mut guard = GroupGuard { pid, armed: true };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut readers = Vec::new();
    let output = tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))
        .map_err(|e| ExecError::Failed(format!("cannot read the command's output: {e}")))?;
    readers.push(spawn_reader(output, tx.clone()));
    drop(tx);

    let started = Instant::now();
    let timeout_at = timeout.map(|t| started + t);
    let mut exited_at: Option<Instant> = None;
    let mut exit_code = 1;
    let mut streams_done = false;
    let mut grace_at: Option<Instant> = None;
    let mut killed = false;
    let mut timed_out: Option<Option<(i32, f64)>> = None;
    loop {
        let sink_deadline = sink.deadline();
        tokio::select! {
            chunk = rx.recv(), if !streams_done => match chunk {
                Some(c) => {
                    sink.data(&c);
                    if exited_at.is_some() {
                        grace_at = Some(Instant::now() + EXIT_STDIO_GRACE);
                    }
                }
                None => {
                    streams_done = true;
                    if exited_at.is_some() {
                        break;
                    }
                }
            },
            status = child.wait(), if exited_at.is_none() => {
                exited_at = Some(Instant::now());
                guard.armed = false;
                exit_code = status.map(exit_code_of).unwrap_or(1);
                if streams_done {
                    break;
                }
                grace_at = Some(Instant::now() + EXIT_STDIO_GRACE);
            },
            _ = sleep_until_opt(grace_at) => break,
            _ = sleep_until_opt(sink_deadline) => sink.tick(),
            _ = cancel.cancelled(), if !killed => {
                killed = true;
                kill_process_group(pid);
            },
            _ = sleep_until_opt(timeout_at), if timed_out.is_none() => {
                let shell_exit = exited_at.map(|at| {
                    let ms = at.duration_since(started).as_secs_f64() * 1000.0;
                    (exit_code, (ms / 100.0).round() / 10.0)
                });
                timed_out = Some(shell_exit);
                // Also after the shell exited: the group kill reaches background writers.
                kill_process_group(pid);
            },
        }
    }
    for r in readers {
        r.abort();
    }
    if cancel.is_cancelled() {
        return Err(ExecError::Aborted);
    }
    if let Some(shell_exit) = timed_out {
        return Err(ExecError::Timeout { shell_exit });
    }
    Ok(exit_code)
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Streaming UTF-8 decoding (like `TextDecoder` with `stream: true`): a
/// sequence split across chunks is completed by the next chunk; invalid bytes
/// become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(chunk);
        let mut out = String::new();
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{fffd}');
                            rest = &rest[valid + n..];
                        }
                        None => {
                            self.pending = rest[valid..].to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// Flush an incomplete trailing sequence.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        self.pending.clear();
        "\u{fffd}".to_string()
    }
}

/// A new output file `<dir>/<prefix>-<16 hex>.log`, readable only by the user.
pub fn create_output_file(dir: &Path, prefix: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if !dir.is_dir() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let bytes = uuid::Uuid::new_v4();
    let hex: String = bytes.as_bytes()[..8].iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{prefix}-{hex}.log"));
    let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    Ok((path, file))
}

/// Write to an output file, ignoring failures (the output still reaches the model).
pub fn write_quietly(file: &mut Option<std::fs::File>, bytes: &[u8]) {
    if let Some(f) = file.as_mut()
        && f.write_all(bytes).is_err()
    {
        *file = None;
    }
}

const CSI_START: &str = r"(?:(?:\x1B\[|\x{9B})[<=>]|[\x1B\x{9B}][\[\]()#;?]*)(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?";
static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(r"(?:\x1B\][\s\S]*?(?:\x07|\x1B\\|\x{{9C}}))|{CSI_START}[0-9A-PR-TZcf-nq-uy=><~]")).ok()
});
static UNFINISHED_CSI: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(&format!("^{CSI_START}$")).ok());

/// Remove ANSI escape sequences (OSC and CSI), as pi's `stripAnsi`.
pub fn strip_ansi(text: &str) -> String {
    if !text.contains(['\u{1b}', '\u{9b}']) {
        return text.to_string();
    }
    match ANSI.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_string(),
    }
}

/// Whether `s` is an escape sequence still waiting for its end.
fn is_unfinished_escape(s: &str) -> bool {
    if let Some(body) = s.strip_prefix("\u{1b}]") {
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\u{7}' | '\u{9c}' => return false,
                '\u{1b}' if chars.peek() == Some(&'\\') => return false,
                _ => {}
            }
        }
        return true;
    }
    UNFINISHED_CSI.as_ref().is_some_and(|re| re.is_match(s))
}

/// Split streamed text into what can be stripped now and an unfinished
/// escape sequence at its end (held back for the next chunk, up to 256 chars).
pub fn split_incomplete_ansi_suffix(text: &str) -> (String, String) {
    if !text.contains(['\u{1b}', '\u{9b}']) {
        return (text.to_string(), String::new());
    }
    let window_start = text.char_indices().rev().nth(255).map(|(i, _)| i).unwrap_or(0);
    for (i, c) in text[window_start..].char_indices() {
        let at = window_start + i;
        if matches!(c, '\u{1b}' | '\u{9b}') && is_unfinished_escape(&text[at..]) {
            return (text[..at].to_string(), text[at..].to_string());
        }
    }
    (text.to_string(), String::new())
}

/// Drop control characters that break displays (keeps tab, newline, CR) and U+FFF9..U+FFFB.
pub fn sanitize_binary_output(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(*c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fff9}'..='\u{fffb}'))
        .collect()
}

#[cfg(test)]
mod tests;
