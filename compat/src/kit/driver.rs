//! Driving the agent under test: spawn it in its sandbox, play the steps
//! (send lines, wait for output, pause, signal), then close stdin and collect
//! everything it wrote until it exits.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::normalize::Normalizer;
use super::pattern;
use super::sandbox::Sandbox;
use super::scenario::{Scenario, Step};
use crate::fake_server::FakeServer;

/// Default time limit of a `waitFor` step.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the agent may take to exit after stdin closes.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// One output line as read and as normalised.
#[derive(Debug, Clone)]
pub struct Line {
    pub raw: String,
    /// The parsed line (a JSON string holding the raw text when it is not JSON).
    pub value: Value,
    pub normalized: Value,
    pub is_json: bool,
}

/// Everything observed in one run.
pub struct Observed {
    /// What was written to the agent (as text, lossy for invalid UTF-8).
    pub sent: Vec<String>,
    pub lines: Vec<Line>,
    pub exit_code: Option<i32>,
    /// True when the agent had to be killed after stdin closed.
    pub killed: bool,
    pub stderr: String,
    /// A step that could not complete (e.g. a `waitFor` timed out).
    pub step_error: Option<String>,
    /// The agent ended before the kit closed its stdin: during which step
    /// (1-based; 0: before the first, steps + 1: after the last) and with
    /// what code.
    pub early_exit: Option<(usize, Option<i32>)>,
    /// Methods of JSON-RPC requests by id.
    pub methods: Vec<(Value, String)>,
}

struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::UnboundedReceiver<String>,
    stderr: tokio::task::JoinHandle<String>,
    reader: tokio::task::JoinHandle<()>,
}

fn spawn(command: &str, sb: &Sandbox, args: &[String]) -> Result<Agent, String> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(format!("exec {command} \"$@\"")).arg("pi-compat").args(args);
    cmd.current_dir(&sb.cwd);
    cmd.env_clear();
    for keep in ["PATH", "LANG", "LC_ALL", "NODE_PATH"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", &sb.home)
        .env("PI_CODING_AGENT_DIR", &sb.agent)
        .env("TMPDIR", &sb.tmp)
        .env("PI_OFFLINE", "1")
        .env("RUST_LOG", "warn");
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start the agent: {e}"))?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        // LF is the only record separator; nothing else is stripped.
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                    }
                    let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
                }
            }
        }
    });
    let stderr = tokio::spawn(async move {
        let mut out = Vec::new();
        let mut s = stderr;
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    });
    Ok(Agent { child, stdin, rx, stderr, reader })
}

/// The state of a run in progress.
struct Run<'a> {
    sb: &'a Sandbox,
    server: &'a FakeServer,
    agent: Agent,
    norm: &'a mut Normalizer,
    observed: Observed,
    cursor: usize,
    vars: BTreeMap<String, Value>,
}

impl Run<'_> {
    fn push_line(&mut self, raw: String) {
        let (value, is_json) = match serde_json::from_str::<Value>(&raw) {
            Ok(v) => (v, true),
            Err(_) => (Value::String(raw.clone()), false),
        };
        let normalized = if is_json { self.norm.value(&value) } else { Value::String(self.norm.text(&raw)) };
        self.observed.lines.push(Line { raw, value, normalized, is_json });
    }

    /// Take every line that has arrived, without waiting.
    fn drain_ready(&mut self) {
        while let Ok(line) = self.agent.rx.try_recv() {
            self.push_line(line);
        }
    }

    /// Wait for the next line until `deadline`; false on timeout or end of output.
    async fn next_line(&mut self, deadline: Instant) -> bool {
        matches!(self.next_line_or_end(deadline).await, Next::Line)
    }

    async fn next_line_or_end(&mut self, deadline: Instant) -> Next {
        match tokio::time::timeout_at(deadline, self.agent.rx.recv()).await {
            Ok(Some(line)) => {
                self.push_line(line);
                Next::Line
            }
            Ok(None) => Next::Closed,
            Err(_) => Next::Timeout,
        }
    }

    /// The agent's exit code if it has exited (waiting a moment for a
    /// process that just closed its output).
    async fn exited(&mut self) -> Option<Option<i32>> {
        let wait = tokio::time::timeout(Duration::from_secs(2), self.agent.child.wait()).await;
        match wait {
            Ok(Ok(status)) => Some(status.code().or_else(|| signal_code(&status))),
            _ => None,
        }
    }

    /// Why a step failed when the agent is gone: its exit, not the symptom.
    async fn gone(&mut self, symptom: String) -> String {
        match self.exited().await {
            Some(code) => format!("the agent exited ({}) — {symptom}", describe_exit(code)),
            None => symptom,
        }
    }

    fn interpolate_text(&self, text: &str) -> String {
        let mut out = self.sb.interpolate_paths(text);
        out = out.replace("${url}", &self.server.url());
        for (name, v) in &self.vars {
            let key = format!("${{{name}}}");
            if out.contains(&key) {
                let s = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out = out.replace(&key, &s);
            }
        }
        out
    }

    fn interpolate(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => {
                if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
                    && let Some(val) = self.vars.get(name)
                {
                    return val.clone();
                }
                Value::String(self.interpolate_text(s))
            }
            Value::Array(items) => Value::Array(items.iter().map(|x| self.interpolate(x)).collect()),
            Value::Object(obj) => Value::Object(obj.iter().map(|(k, x)| (k.clone(), self.interpolate(x))).collect()),
            other => other.clone(),
        }
    }

    fn note_requests(&mut self, value: &Value) {
        let items = match value {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for item in items {
            if let (Some(id), Some(Value::String(method))) = (item.get("id"), item.get("method")) {
                // An id used twice is ambiguous: its results are not checked per method.
                let reused = self.observed.methods.iter().any(|(known, m)| known == id && m != method);
                self.observed.methods.retain(|(known, _)| known != id);
                let method = if reused { String::new() } else { method.clone() };
                self.observed.methods.push((id.clone(), method));
            }
        }
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let text = String::from_utf8_lossy(bytes).into_owned();
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                self.note_requests(&v);
            }
        }
        self.observed.sent.push(text);
        let stdin = self.agent.stdin.as_mut().ok_or("stdin is already closed")?;
        let written = match stdin.write_all(bytes).await {
            Ok(()) => stdin.flush().await,
            Err(e) => Err(e),
        };
        match written {
            Ok(()) => Ok(()),
            Err(e) => Err(self.gone(format!("cannot write to the agent: {e}")).await),
        }
    }

    async fn step(&mut self, step: &Step) -> Result<(), String> {
        if let Some(v) = &step.send {
            let line = format!("{}\n", self.interpolate(v));
            self.write(line.as_bytes()).await?;
        }
        if let Some(text) = &step.send_raw {
            let text = self.interpolate_text(text);
            self.write(text.as_bytes()).await?;
        }
        if let Some(b64) = &step.send_base64 {
            let bytes =
                base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| format!("bad base64: {e}"))?;
            self.write(&bytes).await?;
        }
        if let Some(r) = &step.send_repeat {
            let mut text = String::with_capacity(r.prefix.len() + r.fill.len() * r.times + r.suffix.len());
            text.push_str(&r.prefix);
            for _ in 0..r.times {
                text.push_str(&r.fill);
            }
            text.push_str(&r.suffix);
            let stdin = self.agent.stdin.as_mut().ok_or("stdin is already closed")?;
            stdin.write_all(text.as_bytes()).await.map_err(|e| format!("cannot write to the agent: {e}"))?;
            stdin.flush().await.map_err(|e| e.to_string())?;
            self.observed.sent.push(format!("<{} bytes: {}…>", text.len(), &r.prefix));
        }
        if let Some(f) = &step.write_file {
            let content = self.interpolate(&f.content);
            self.sb.write_file(&f.path, &content)?;
        }
        if let Some(p) = &step.wait_for {
            self.wait_for(p, step).await?;
        }
        if let Some(n) = step.wait_requests {
            let limit = step.timeout_ms.map(Duration::from_millis).unwrap_or(WAIT_TIMEOUT);
            if !self.server.wait_for_requests(n, limit).await {
                return Err(format!("the model server got {} request(s), not {n}", self.server.request_count()));
            }
        }
        if let Some(ms) = step.sleep_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            self.drain_ready();
        }
        if let Some(sig) = &step.signal {
            self.signal(sig)?;
        }
        if step.close_stdin {
            self.agent.stdin = None;
        }
        Ok(())
    }

    fn signal(&self, name: &str) -> Result<(), String> {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let sig = match name {
            "TERM" | "SIGTERM" => Signal::SIGTERM,
            "INT" | "SIGINT" => Signal::SIGINT,
            "HUP" | "SIGHUP" => Signal::SIGHUP,
            other => return Err(format!("unknown signal {other}")),
        };
        let pid = self.agent.child.id().ok_or("the agent has exited")?;
        kill(Pid::from_raw(pid as i32), sig).map_err(|e| format!("kill: {e}"))
    }

    async fn wait_for(&mut self, p: &Value, step: &Step) -> Result<(), String> {
        let pattern = self.interpolate(p);
        let deadline = Instant::now() + step.timeout_ms.map(Duration::from_millis).unwrap_or(WAIT_TIMEOUT);
        let mut i = if step.from_start { 0 } else { self.cursor };
        loop {
            while i < self.observed.lines.len() {
                let line = &self.observed.lines[i];
                if line.is_json && pattern::matches(&pattern, &line.normalized) {
                    let raw = line.value.clone();
                    for (name, pointer) in &step.capture {
                        let v = raw.pointer(pointer).cloned().ok_or_else(|| format!("capture {name}: no {pointer}"))?;
                        self.vars.insert(name.clone(), v);
                    }
                    self.cursor = i + 1;
                    return Ok(());
                }
                i += 1;
            }
            match self.next_line_or_end(deadline).await {
                Next::Line => {}
                Next::Timeout => return Err(format!("timed out waiting for a line matching {pattern}")),
                Next::Closed => {
                    let symptom = format!("its output ended before a line matching {pattern}");
                    return Err(self.gone(symptom).await);
                }
            }
        }
    }
}

/// Play `scenario` against `command` in `sb`, with `server` as the model.
pub async fn play(
    scenario: &Scenario,
    command: &str,
    sb: &Sandbox,
    server: &FakeServer,
    norm: &mut Normalizer,
) -> Result<Observed, String> {
    let args = sb.args(&scenario.setup);
    let agent = spawn(command, sb, &args)?;
    let observed = Observed {
        sent: Vec::new(),
        lines: Vec::new(),
        exit_code: None,
        killed: false,
        stderr: String::new(),
        step_error: None,
        early_exit: None,
        methods: Vec::new(),
    };
    let mut run = Run { sb, server, agent, norm, observed, cursor: 0, vars: BTreeMap::new() };
    let mut stdin_closed_by_steps = false;
    for (i, step) in scenario.steps.iter().enumerate() {
        let ended_before = run.agent.child.try_wait().ok().flatten();
        if let Some(status) = ended_before.filter(|_| !stdin_closed_by_steps) {
            run.observed.early_exit = Some((i, status.code().or_else(|| signal_code(&status))));
        }
        if let Err(e) = run.step(step).await {
            run.observed.step_error = Some(format!("step {}: {e}", i + 1));
            if run.observed.early_exit.is_none() && !stdin_closed_by_steps {
                run.observed.early_exit = run
                    .agent
                    .child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map(|status| (i + 1, status.code().or_else(|| signal_code(&status))));
            }
            break;
        }
        stdin_closed_by_steps |= step.close_stdin || step.signal.is_some();
    }
    if run.observed.early_exit.is_none()
        && !stdin_closed_by_steps
        && let Ok(Some(status)) = run.agent.child.try_wait()
    {
        run.observed.early_exit = Some((scenario.steps.len() + 1, status.code().or_else(|| signal_code(&status))));
    }
    // End: close stdin, let the agent finish, collect the rest.
    run.agent.stdin = None;
    let deadline = Instant::now() + EXIT_TIMEOUT;
    let status = tokio::time::timeout_at(deadline, run.agent.child.wait()).await;
    match status {
        Ok(Ok(s)) => run.observed.exit_code = s.code().or_else(|| signal_code(&s)),
        _ => {
            run.observed.killed = true;
            let _ = run.agent.child.start_kill();
            let _ = run.agent.child.wait().await;
        }
    }
    let drain_deadline = Instant::now() + Duration::from_secs(2);
    while run.next_line(drain_deadline).await {}
    run.agent.reader.abort();
    if let Ok(Ok(text)) = tokio::time::timeout(Duration::from_secs(2), &mut run.agent.stderr).await {
        run.observed.stderr = text;
    } else {
        run.agent.stderr.abort();
    }
    Ok(run.observed)
}

/// Whether the next line came, the wait timed out, or the output ended.
enum Next {
    Line,
    Timeout,
    Closed,
}

/// `code 127`, `signal 6 (SIGABRT)`, … for an exit code as [`signal_code`] reports it.
pub fn describe_exit(code: Option<i32>) -> String {
    match code {
        Some(c) if c > 128 && c < 160 => {
            let name = nix::sys::signal::Signal::try_from(c - 128).map(|s| s.as_str()).unwrap_or("?");
            format!("killed by signal {} ({name})", c - 128)
        }
        Some(c) => format!("code {c}"),
        None => "no exit code".to_string(),
    }
}

/// 128 + signal number for a process killed by a signal (as shells report it).
fn signal_code(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(|s| 128 + s)
}
