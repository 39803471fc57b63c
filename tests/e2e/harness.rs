//! Test harness: a sandbox (agent dir, cwd, home), the fake model server, and a
//! client that drives the `pi` binary over its stdin/stdout.
//!
//! Every JSON line read from the binary, and every session file line read with
//! [`read_jsonl`], is validated against the committed JSON Schemas
//! (`schemas/`, via `pi_compat::schemas`): a field added or dropped by
//! accident fails the test that saw it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use pi_compat::fake_server::FakeServer;
use pi_compat::schemas::Schemas;

use crate::clients::repo_root;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

/// How long to wait for one line before failing the test.
pub const LINE_TIMEOUT: Duration = Duration::from_secs(20);

/// Every pi-rpc the harness starts has [`NO_CATALOG_SERVER`]
/// ([`Sandbox::command`]), and so has pi 1.6.0 started with
/// [`route_reference`]; a test that sets `PI_RPC_ORIGIN_OVERRIDES` itself
/// adds it with [`origin_overrides`].
pub use pi_compat::NO_CATALOG_SERVER;

/// `PI_RPC_ORIGIN_OVERRIDES` of a test: its `rules` (`origin=replacement,…`,
/// the first match wins), then [`NO_CATALOG_SERVER`].
pub fn origin_overrides(rules: &str) -> String {
    if rules.is_empty() { NO_CATALOG_SERVER.to_string() } else { format!("{rules},{NO_CATALOG_SERVER}") }
}

/// pi 1.6.0 (node running its CLI) made to send its requests where
/// `PI_RPC_ORIGIN_OVERRIDES` says, as pi-rpc does (`tests/oauth/route_fetch.mjs`
/// preloaded), with [`NO_CATALOG_SERVER`] until the test sets its own.
pub fn route_reference(cmd: &mut tokio::process::Command) {
    let preload = repo_root().join("tests/oauth/route_fetch.mjs");
    cmd.env("NODE_OPTIONS", format!("--import=file://{}", preload.display()));
    cmd.env("PI_RPC_ORIGIN_OVERRIDES", NO_CATALOG_SERVER);
}

/// A sandbox for one test.
pub struct Sandbox {
    pub agent_dir: tempfile::TempDir,
    pub cwd: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub server: Option<FakeServer>,
}

impl Sandbox {
    /// No model server, no credentials: the offline faux model.
    pub fn offline() -> Sandbox {
        Sandbox {
            agent_dir: tempfile::tempdir().expect("agent dir"),
            cwd: tempfile::tempdir().expect("cwd"),
            home: tempfile::tempdir().expect("home"),
            server: None,
        }
    }

    /// A fake OpenAI-compatible server, configured as provider `fake`, model
    /// `fake-model`, the default; fast retries.
    pub async fn with_server() -> Sandbox {
        let mut sb = Sandbox::offline();
        let server = FakeServer::start().await.expect("fake server");
        sb.write_models(&server.base_url(), json!({}));
        sb.write_settings(json!({
            "defaultProvider": "fake",
            "defaultModel": "fake-model",
            "retry": {"baseDelayMs": 20}
        }));
        sb.server = Some(server);
        sb
    }

    pub fn server(&self) -> &FakeServer {
        self.server.as_ref().expect("this sandbox has no fake server")
    }

    /// models.json with provider `fake`; `extra` is merged into the model entry.
    pub fn write_models(&self, base_url: &str, extra: Value) {
        let mut model = json!({
            "id": "fake-model",
            "name": "Fake Model",
            "contextWindow": 128000,
            "maxTokens": 16384,
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
        });
        if let (Value::Object(m), Value::Object(e)) = (&mut model, extra) {
            m.extend(e);
        }
        let models = json!({
            "providers": {
                "fake": {
                    "baseUrl": base_url,
                    "api": "openai-completions",
                    "apiKey": "test-key-123",
                    "models": [model, {"id": "fake-other", "contextWindow": 64000}]
                }
            }
        });
        std::fs::write(self.agent_dir.path().join("models.json"), models.to_string()).expect("write models.json");
    }

    pub fn write_settings(&self, settings: Value) {
        std::fs::write(self.agent_dir.path().join("settings.json"), settings.to_string()).expect("write settings.json");
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.agent_dir.path().join("sessions")
    }

    /// Every session file under the agent dir.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.sessions_dir()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else { continue };
            for entry in read.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "jsonl") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    /// Start `pi` with these arguments (after `--mode rpc`).
    pub fn spawn(&self, args: &[&str]) -> Pi {
        self.spawn_with_env(args, &[])
    }

    /// Start `pi` with these arguments (after `--mode rpc`) and extra environment variables.
    pub fn spawn_with_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Pi {
        let mut full = vec!["--mode", "rpc"];
        full.extend_from_slice(args);
        let mut cmd = self.command(&full);
        cmd.envs(env.iter().copied());
        Pi::start(cmd)
    }

    /// `pi` with exactly these arguments, in the sandbox, stdio piped.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
        cmd.args(args);
        cmd.current_dir(self.cwd.path());
        cmd.env_clear();
        for keep in ["PATH", "LANG", "TMPDIR"] {
            if let Some(v) = std::env::var_os(keep) {
                cmd.env(keep, v);
            }
        }
        cmd.env("HOME", self.home.path());
        cmd.env("PI_CODING_AGENT_DIR", self.agent_dir.path());
        cmd.env("RUST_LOG", "warn");
        cmd.env("PI_RPC_ORIGIN_OVERRIDES", NO_CATALOG_SERVER);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.kill_on_drop(true);
        cmd
    }

    /// Run `pi` with these arguments and this stdin to the end: (exit code, stdout, stderr).
    pub async fn run(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        let mut child = self.command(args).spawn().expect("spawn pi");
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin.as_bytes()).await.expect("write stdin");
        }
        let out = tokio::time::timeout(LINE_TIMEOUT, child.wait_with_output()).await.expect("pi ended").expect("wait");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }
}

/// A running `pi --mode rpc` and its output.
pub struct Pi {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
    /// Everything read so far (for failure messages).
    pub transcript: Vec<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stderr_done: Option<tokio::task::JoinHandle<()>>,
    /// Methods of the JSON-RPC requests sent, by id (to check results per method).
    methods: Vec<(Value, String)>,
    /// Whether output lines are checked against the schemas (not for pi 1.6.0).
    validating: bool,
}

impl Pi {
    pub fn start(mut cmd: tokio::process::Command) -> Pi {
        let mut child = cmd.spawn().expect("spawn pi");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            // Split on LF only, as a conforming client must.
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
        let err_buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let err_sink = err_buf.clone();
        let stderr_done = tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            let mut line = String::new();
            while let Ok(n) = reader.read_line(&mut line).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut b) = err_sink.lock() {
                    b.push_str(&line);
                }
                line.clear();
            }
        });
        Pi {
            child,
            stdin,
            lines: rx,
            transcript: Vec::new(),
            stderr: err_buf,
            stderr_done: Some(stderr_done),
            methods: Vec::new(),
            validating: true,
        }
    }

    /// Start another program (pi 1.6.0) whose output is not checked against pi-rpc's schemas.
    pub fn start_unchecked(cmd: tokio::process::Command) -> Pi {
        Pi { validating: false, ..Pi::start(cmd) }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Send one JSON value as a line.
    pub async fn send(&mut self, value: Value) {
        self.send_raw(&format!("{value}\n")).await;
    }

    /// Send raw bytes.
    pub async fn send_raw(&mut self, text: &str) {
        self.send_bytes(text.as_bytes()).await;
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.note_requests(bytes);
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(bytes).await.expect("write to pi");
        stdin.flush().await.expect("flush to pi");
    }

    /// Remember the method of every JSON-RPC request in `bytes`.
    fn note_requests(&mut self, bytes: &[u8]) {
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
            let items = match value {
                Value::Array(items) => items,
                other => vec![other],
            };
            for item in items {
                if let (Some(id), Some(Value::String(method))) = (item.get("id"), item.get("method")) {
                    self.methods.retain(|(known, _)| known != id);
                    self.methods.push((id.clone(), method.clone()));
                }
            }
        }
    }

    /// Check one output line against the schemas (lines that are not JSON,
    /// such as `Content-Length` headers, are left to the test).
    fn validate(&self, line: &str) {
        let Ok(value) = serde_json::from_str::<Value>(line) else { return };
        let jsonrpc = value.is_array() || value.get("jsonrpc").is_some();
        let checked = if jsonrpc {
            let method_of = |id: &Value| self.methods.iter().find(|(k, _)| k == id).map(|(_, m)| m.clone());
            Schemas::strict().check_jsonrpc_output(&value, &method_of)
        } else {
            Schemas::strict().check_native_output(&value)
        };
        if let Err(e) = checked {
            self.fail(&format!("output line does not match the schemas: {e}\nline: {line}"));
        }
    }

    /// Close stdin (end of commands).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "{what}\n--- transcript ({} lines) ---\n{}\n--- stderr ---\n{}",
            self.transcript.len(),
            self.transcript.join("\n"),
            self.stderr()
        );
    }

    /// The next output line, raw.
    pub async fn next_line(&mut self) -> Option<String> {
        match tokio::time::timeout(LINE_TIMEOUT, self.lines.recv()).await {
            Ok(Some(line)) => {
                self.transcript.push(line.clone());
                if self.validating {
                    self.validate(&line);
                }
                Some(line)
            }
            Ok(None) => None,
            Err(_) => self.fail("timed out waiting for output"),
        }
    }

    /// The next output line, parsed.
    pub async fn next(&mut self) -> Value {
        let Some(line) = self.next_line().await else { self.fail("output ended") };
        match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => self.fail(&format!("output line is not JSON ({e}): {line}")),
        }
    }

    /// Read lines until `pred` matches one; returns all lines read (the match last).
    pub async fn until(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let v = self.next().await;
            let done = pred(&v);
            seen.push(v);
            if done {
                return seen;
            }
        }
    }

    /// Read until the event of this type.
    pub async fn until_type(&mut self, ty: &str) -> Vec<Value> {
        self.until(|v| v["type"] == ty).await
    }

    /// Read until the response with this id; returns that response.
    pub async fn response(&mut self, id: &str) -> Value {
        let lines = self.until(|v| v["type"] == "response" && v["id"] == id).await;
        lines.into_iter().last().unwrap_or(Value::Null)
    }

    /// Send a command with an id and return its response (events in between are skipped).
    pub async fn call(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = json!(id);
        self.send(command).await;
        self.response(id).await
    }

    /// All remaining output until the process closes stdout.
    pub async fn drain(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(line) = self.next_line().await {
            match serde_json::from_str(&line) {
                Ok(v) => out.push(v),
                Err(e) => self.fail(&format!("output line is not JSON ({e}): {line}")),
            }
        }
        out
    }

    /// Wait for the process to exit.
    pub async fn wait(&mut self) -> std::process::ExitStatus {
        let status = match tokio::time::timeout(LINE_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) => status,
            _ => self.fail("pi did not exit"),
        };
        if let Some(done) = self.stderr_done.take() {
            let _ = tokio::time::timeout(LINE_TIMEOUT, done).await;
        }
        status
    }
}

/// Types of a list of events, for order assertions.
pub fn types(values: &[Value]) -> Vec<String> {
    values.iter().map(|v| v["type"].as_str().unwrap_or("?").to_string()).collect()
}

/// Read a session file as JSON lines. Lines of current (v3) files are checked
/// against the session schema; legacy v1/v2 fixtures are read as they are.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let mut current = false;
    std::fs::read_to_string(path)
        .expect("read session file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let value: Value = serde_json::from_str(l).expect("session line is JSON");
            if i == 0 {
                current = value["type"] == "session" && value["version"] == 3;
            }
            if current && let Err(e) = Schemas::strict().check_session_line(&value) {
                panic!("session line does not match the schema: {e}\nline: {l}");
            }
            value
        })
        .collect()
}
