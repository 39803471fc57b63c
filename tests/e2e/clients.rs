//! Real clients drive the binary: the seeds' own client examples (Python and
//! Node, both dialects), jsonrpsee's client over a stdio transport, and
//! vscode-jsonrpc (npm) through Content-Length framing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use jsonrpsee::core::client::{
    ClientBuilder, ClientT, ReceivedMessage, SubscriptionClientT, TransportReceiverT, TransportSenderT,
};
use jsonrpsee::rpc_params;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::harness::Sandbox;
use pi_compat::fake_server::Reply;

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

fn pi_bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_pi")).parent().expect("bin dir").to_path_buf()
}

/// node 22+ from `PI_TEST_NODE` or `target/tools/node` (installed by
/// `scripts/install-test-tools.sh`). Missing: skip, unless `PI_RPC_REQUIRE_TOOLS=1`.
pub(crate) fn node22() -> Option<PathBuf> {
    let candidate = std::env::var_os("PI_TEST_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/tools/node/node_modules/.bin/node"));
    let ok = std::process::Command::new(&candidate)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.trim().trim_start_matches('v').split('.').next().and_then(|m| m.parse::<u32>().ok()))
        .is_some_and(|major| major >= 22);
    if ok {
        return Some(candidate);
    }
    if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("node 22 not found at {}: run scripts/install-test-tools.sh", candidate.display());
    }
    eprintln!("SKIP: node 22 not found at {} (run scripts/install-test-tools.sh)", candidate.display());
    None
}

/// A file installed under `target/tools/` by `scripts/install-test-tools.sh`
/// (`PI_RPC_TOOLS_ROOT` overrides `target/tools`). Missing: skip, unless
/// `PI_RPC_REQUIRE_TOOLS=1`.
pub(crate) fn installed_tool(relative: &str) -> Option<PathBuf> {
    let root =
        std::env::var_os("PI_RPC_TOOLS_ROOT").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target/tools"));
    let path = root.join(relative);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{} not found: run scripts/install-test-tools.sh", path.display());
    }
    eprintln!("SKIP: {} not found (run scripts/install-test-tools.sh)", path.display());
    None
}

/// A command running in the sandbox with `pi` first on PATH.
pub(crate) fn client_command(sb: &Sandbox, program: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.current_dir(sb.cwd.path());
    cmd.env_clear();
    let path = format!("{}:{}", pi_bin_dir().display(), std::env::var("PATH").unwrap_or_default());
    cmd.env("PATH", path);
    cmd.env("HOME", sb.home.path());
    cmd.env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
    cmd.env("RUST_LOG", "error");
    cmd.env("PI_BIN", env!("CARGO_BIN_EXE_pi"));
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.kill_on_drop(true);
    cmd
}

async fn run_to_end(mut cmd: tokio::process::Command) -> (std::process::ExitStatus, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .expect("client timed out")
        .expect("run client");
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Run a client that never exits on its own until `marker` shows on its stdout.
async fn run_until(mut cmd: tokio::process::Command, marker: &str) -> String {
    let mut child = cmd.spawn().expect("spawn client");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = vec![0u8; 4096];
        loop {
            let n = tokio::io::AsyncReadExt::read(&mut stdout, &mut buf).await.unwrap_or(0);
            if n == 0 {
                return false;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if seen.contains(marker) {
                return true;
            }
        }
    })
    .await
    .unwrap_or(false);
    let _ = child.kill().await;
    assert!(found, "client output never showed {marker:?}:\n{seen}");
    seen
}

#[tokio::test]
async fn the_seed_jsonrpc_python_example_runs_without_an_api_key() {
    let sb = Sandbox::offline();
    let mut cmd = client_command(&sb, Path::new("python3"));
    cmd.arg(repo_root().join("tests/clients/seed_python_client.py"));
    let (status, out, err) = run_to_end(cmd).await;
    assert!(status.success(), "{out}\n{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("Initialized: {'jsonrpc': '2.0', 'id': 1"), "{out}");
    assert!(out.contains("You said: Hello!"), "{out}");
    assert!(out.trim_end().ends_with("[Complete]"), "{out}");
}

/// Seed 004's `"model": "claude-sonnet-4"` resolves as in pi 1.6.0 once an
/// Anthropic key is set (anthropic re-routed to the fake server).
#[tokio::test]
async fn the_seed_jsonrpc_python_example_initializes_claude_sonnet_4_with_an_anthropic_key() {
    let sb = Sandbox::with_server().await;
    let models = json!({"providers": {"anthropic": {"baseUrl": sb.server().url()}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).unwrap();
    sb.write_settings(json!({}));
    sb.server().push(Reply::text("Hello from the fake Anthropic."));
    let mut cmd = client_command(&sb, Path::new("python3"));
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-test");
    cmd.arg(repo_root().join("tests/clients/seed_python_client.py"));
    let (status, out, err) = run_to_end(cmd).await;
    assert!(status.success(), "{out}\n{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(first.contains("'result'") && !first.contains("'error'"), "{first}");
    assert!(first.contains("'model': 'claude-sonnet-4-6', 'provider': 'anthropic'"), "{first}");
    assert!(out.contains("Hello from the fake Anthropic."), "{out}");
    assert_eq!(sb.server().requests()[0].body["model"], "claude-sonnet-4-6");
}

#[tokio::test]
async fn the_seed_native_python_example_runs_without_an_api_key() {
    let sb = Sandbox::offline();
    let mut cmd = client_command(&sb, Path::new("python3"));
    cmd.arg(repo_root().join("tests/clients/seed_native_python_client.py"));
    let (status, out, err) = run_to_end(cmd).await;
    assert!(status.success(), "{out}\n{err}");
    assert!(out.starts_with("You said: Hello!"), "{out}");
}

#[tokio::test]
async fn the_seed_jsonrpc_node_example_streams_a_turn() {
    let Some(node) = node22() else { return };
    let sb = Sandbox::offline();
    let mut cmd = client_command(&sb, &node);
    cmd.arg("--experimental-strip-types").arg("--no-warnings");
    cmd.arg(repo_root().join("tests/clients/seed_node_client.mts"));
    let out = run_until(cmd, "--- Turn complete ---").await;
    assert!(out.starts_with("You said: List files in the current directory"), "{out}");
}

#[tokio::test]
async fn the_seed_native_node_example_streams_the_reply() {
    let Some(node) = node22() else { return };
    let sb = Sandbox::offline();
    let mut cmd = client_command(&sb, &node);
    cmd.arg(repo_root().join("tests/clients/seed_native_node_client.cjs"));
    let out = run_until(cmd, "select its model.").await;
    assert!(out.starts_with("You said: Hello"), "{out}");
}

#[tokio::test]
async fn vscode_jsonrpc_drives_the_server_with_content_length_framing() {
    let Some(node) = node22() else { return };
    let sb = Sandbox::offline();
    let mut cmd = client_command(&sb, &node);
    cmd.env("NODE_PATH", repo_root().join("target/tools/node/node_modules"));
    cmd.arg(repo_root().join("tests/clients/vscode_jsonrpc_client.cjs"));
    let (status, out, err) = run_to_end(cmd).await;
    assert!(status.success(), "{out}\n{err}");
    let report: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(report["init"]["provider"], "faux");
    assert_eq!(report["status"]["idle"], true);
    assert_eq!(report["accepted"]["accepted"], true);
    assert!(report["text"].as_str().unwrap().starts_with("You said: hi from vscode-jsonrpc"));
    assert!(report["end"]["totalTokens"].as_u64().unwrap() > 0);
    assert_eq!(report["methodNotFound"], -32601);
    assert_eq!(report["invalidParams"]["code"], -32602);
    assert_eq!(report["invalidParams"]["data"]["field"], "content");
    assert_eq!(report["shutdown"], json!({}));
    assert_eq!(report["exitCode"], 0);
    let methods: Vec<&str> = report["notifications"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert_eq!(methods.first().copied(), Some("initialized"));
    assert!(methods.contains(&"assistantMessage") && methods.contains(&"turnEnd"));
}

pub(crate) struct StdinSender(pub(crate) tokio::process::ChildStdin);

impl TransportSenderT for StdinSender {
    type Error = std::io::Error;

    async fn send(&mut self, msg: String) -> Result<(), Self::Error> {
        self.0.write_all(msg.as_bytes()).await?;
        self.0.write_all(b"\n").await?;
        self.0.flush().await
    }
}

pub(crate) struct StdoutReceiver(pub(crate) BufReader<tokio::process::ChildStdout>);

impl TransportReceiverT for StdoutReceiver {
    type Error = std::io::Error;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        let mut line = String::new();
        if self.0.read_line(&mut line).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        Ok(ReceivedMessage::Text(line))
    }
}

#[tokio::test]
async fn the_jsonrpsee_client_talks_to_the_server_over_stdio() {
    let sb = Sandbox::offline();
    let mut cmd = client_command(&sb, Path::new(env!("CARGO_BIN_EXE_pi")));
    cmd.args(["--mode", "rpc", "--no-session"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn pi");
    let sender = StdinSender(child.stdin.take().expect("stdin"));
    let receiver = StdoutReceiver(BufReader::new(child.stdout.take().expect("stdout")));
    let client = ClientBuilder::default().build_with_tokio(sender, receiver);

    let mut deltas = client.subscribe_to_method::<Value>("assistantMessage").await.expect("subscribe");
    let mut turn_end = client.subscribe_to_method::<Value>("turnEnd").await.expect("subscribe");
    let init: Value = client.request("initialize", jsonrpsee::rpc_params![]).await.expect("initialize");
    assert_eq!(init["provider"], "faux");
    let levels: Value = client.request("getAvailableThinkingLevels", rpc_params![]).await.expect("levels");
    assert_eq!(levels["levels"][0], "off");
    let mut params = jsonrpsee::core::params::ObjectParams::new();
    params.insert("content", "from jsonrpsee").expect("params");
    let accepted: Value = client.request("prompt", params).await.expect("prompt");
    assert_eq!(accepted["accepted"], true);
    // Deltas until the complete message, then turnEnd.
    let (text, complete) = tokio::time::timeout(Duration::from_secs(10), async {
        let mut text = String::new();
        while let Some(Ok(m)) = deltas.next().await {
            match m["type"].as_str() {
                Some("delta") => text.push_str(m["delta"].as_str().unwrap_or("")),
                Some("complete") => return (text, m),
                _ => {}
            }
        }
        (text, Value::Null)
    })
    .await
    .expect("assistant message");
    assert_eq!(complete["content"].as_str(), Some(text.as_str()));
    assert!(text.starts_with("You said: from jsonrpsee"), "{text}");
    let end = tokio::time::timeout(Duration::from_secs(10), turn_end.next()).await.expect("turnEnd").unwrap().unwrap();
    assert!(end["totalTokens"].as_u64().unwrap() > 0);
    let err = client.request::<Value, _>("noSuchMethod", rpc_params![]).await.unwrap_err();
    assert!(err.to_string().contains("-32601") || err.to_string().contains("Method not found"), "{err}");
    let _: Value = client.request("shutdown", rpc_params![]).await.expect("shutdown");
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exit").expect("wait");
    assert!(status.success());
}
