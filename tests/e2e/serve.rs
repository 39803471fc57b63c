//! `pi serve` end to end: the binary listens on 127.0.0.1:0 (or a unix
//! socket) and real WebSocket clients drive it, Python's `websockets`
//! (native dialect, `tests/serve/native_client.py`) and node's `ws` (seed
//! JSON-RPC, `tests/serve/jsonrpc_client.mjs`), one scenario per test. The
//! clients are installed by `scripts/install-serve-tools.sh`; missing, the
//! tests skip (unless `PI_RPC_REQUIRE_TOOLS=1`).

use std::path::PathBuf;
use std::time::Duration;

use pi_compat::fake_server::Reply;

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::{Pi, Sandbox};

/// How long one client scenario may take.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `pi serve` and the address it printed first.
pub struct Served {
    pub pi: Pi,
    pub url: String,
}

/// Start `pi serve --listen 127.0.0.1:0` with `args`; reads the bound address.
pub async fn serve(sb: &Sandbox, args: &[&str]) -> Served {
    serve_with_env(sb, args, &[]).await
}

pub async fn serve_with_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut full = vec!["serve"];
    if !args.contains(&"--listen") {
        full.extend(["--listen", "127.0.0.1:0"]);
    }
    full.extend_from_slice(args);
    let mut cmd = sb.command(&full);
    cmd.env("RUST_LOG", "info");
    cmd.envs(env.iter().copied());
    let mut pi = Pi::start(cmd);
    let url = pi.next_line().await.unwrap_or_else(|| panic!("pi serve printed no address: {}", pi.stderr()));
    assert!(url.starts_with("ws://127.0.0.1:") || url.starts_with("unix:"), "first line: {url}");
    Served { pi, url }
}

/// Python 3 with `websockets` on its path, or None (skip).
pub fn python() -> Option<(PathBuf, PathBuf)> {
    let lib = installed_tool("python/websockets")?;
    let dir = lib.parent()?.to_path_buf();
    Some((PathBuf::from("python3"), dir))
}

/// node 22 and the directory `ws` was installed into, or None (skip).
fn node_ws() -> Option<(PathBuf, PathBuf)> {
    let node = node22()?;
    let ws = installed_tool("ws/node_modules/ws")?;
    Some((node, ws.parent()?.parent()?.to_path_buf()))
}

/// Run a client to its end; panics (with its output and the server's log) unless it succeeds.
async fn run_client(mut cmd: tokio::process::Command, served: &Served, what: &str) -> String {
    cmd.kill_on_drop(true).stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(SCENARIO_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{what}: timed out\nserver log:\n{}", served.pi.stderr()))
        .expect("spawn the client");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        served.pi.stderr()
    );
    stdout
}

/// Run a scenario of the Python client (native dialect).
pub async fn python_scenario(served: &Served, scenario: &str, args: &[&str]) -> Option<String> {
    python_script(served, "native_client.py", scenario, args).await
}

/// Run a scenario of a Python client of `tests/serve/`.
pub async fn python_script(served: &Served, script: &str, scenario: &str, args: &[&str]) -> Option<String> {
    let (python, path) = python()?;
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(repo_root().join("tests/serve").join(script)).arg(scenario).args(args);
    cmd.env("PYTHONPATH", path);
    Some(run_client(cmd, served, &format!("{script} {scenario}")).await)
}

/// Run a scenario of the node client (JSON-RPC dialect).
pub async fn node_scenario(served: &Served, scenario: &str, args: &[&str]) -> Option<String> {
    let (node, ws_dir) = node_ws()?;
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(repo_root().join("tests/serve/jsonrpc_client.mjs")).arg(scenario).args(args);
    cmd.env("PI_WS_DIR", ws_dir);
    Some(run_client(cmd, served, &format!("jsonrpc_client.mjs {scenario}")).await)
}

/// A reply streamed slowly enough to drop the connection in the middle.
fn slow_reply() -> Reply {
    let mut reply = Reply::text_chunks((0..50).map(|i| format!("w{i} ")));
    reply.delay = Duration::from_millis(15);
    reply
}

#[tokio::test]
async fn native_clients_on_two_sessions_attach_detach_and_reattach() {
    let sb = Sandbox::offline();
    let served = serve(&sb, &[]).await;
    let url = served.url.clone();
    python_scenario(&served, "flows", &[&url]).await;
}

#[tokio::test]
async fn jsonrpc_clients_initialize_resume_and_share_the_server() {
    let sb = Sandbox::offline();
    let served = serve(&sb, &[]).await;
    let url = served.url.clone();
    node_scenario(&served, "flows", &[&url]).await;
}

#[tokio::test]
async fn native_client_reconnects_mid_run_and_misses_nothing() {
    let sb = Sandbox::with_server().await;
    sb.server().push(slow_reply());
    let served = serve(&sb, &[]).await;
    let url = served.url.clone();
    python_scenario(&served, "reconnect", &[&url]).await;
}

#[tokio::test]
async fn jsonrpc_client_resumes_mid_run_with_after_seq_and_misses_nothing() {
    let sb = Sandbox::with_server().await;
    sb.server().push(slow_reply());
    let served = serve(&sb, &[]).await;
    let url = served.url.clone();
    node_scenario(&served, "reconnect", &[&url]).await;
}

#[tokio::test]
async fn a_pending_dialog_is_resent_on_attach_and_answered_once() {
    let sb = Sandbox::offline();
    let demo = crate::extensions::demo_path();
    let served = serve(&sb, &["-e", &demo]).await;
    let url = served.url.clone();
    python_scenario(&served, "dialog", &[&url]).await;
}

/// The environment `pi serve` (process `pid`) runs with, as the kernel shows it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn environ_of(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).expect("read the server's environment");
    raw.split(|b| *b == 0).map(|v| String::from_utf8_lossy(v).into_owned()).collect()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test]
async fn the_server_runs_with_bounded_allocator_thread_caches_unless_told_otherwise() {
    let sb = Sandbox::offline();
    // Started plainly: the same process runs on with glibc's thread caches bounded, and serves.
    let mut served = serve(&sb, &[]).await;
    let pid = served.pi.child.id().expect("server pid");
    let expected = format!("GLIBC_TUNABLES={}", pi_serve::THREAD_CACHE_TUNABLE);
    assert!(environ_of(pid).contains(&expected), "{:?}", environ_of(pid));
    let port = served.url.trim_start_matches("ws://127.0.0.1:").split('/').next().and_then(|p| p.parse().ok());
    let (status, body) = crate::serve_faults::ready(port.expect("the port in the address")).await;
    assert_eq!(status, 200, "{body}");
    served.pi.child.start_kill().expect("stop");
    // A value the user gave (empty: glibc's defaults) is kept as it is.
    let served = serve_with_env(&sb, &[], &[("GLIBC_TUNABLES", "")]).await;
    let pid = served.pi.child.id().expect("server pid");
    let env = environ_of(pid);
    assert!(env.iter().any(|v| v == "GLIBC_TUNABLES=") && !env.contains(&expected), "{env:?}");
}

#[tokio::test]
async fn idle_sessions_are_unloaded_and_reloaded_from_their_file() {
    let sb = Sandbox::offline();
    let served = serve(&sb, &["--idle-unload", "0.3"]).await;
    let url = served.url.clone();
    if python_scenario(&served, "unload", &[&url]).await.is_some() {
        assert!(served.pi.stderr().contains("unloaded after"), "{}", served.pi.stderr());
    }
}

#[tokio::test]
async fn tokens_and_origins_are_checked_on_the_upgrade() {
    let sb = Sandbox::offline();
    let token_file = sb.home.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").expect("token file");
    let token_file = token_file.display().to_string();
    let served = serve(&sb, &["--token-file", &token_file, "--allow-origin", "http://ok.example"]).await;
    let url = served.url.clone();
    python_scenario(&served, "auth", &[&url, "s3cret-token", "http://ok.example"]).await;
    // The same from the environment.
    let served = serve_with_env(&sb, &[], &[("PI_SERVE_TOKEN", "from-env")]).await;
    let url = served.url.clone();
    python_scenario(&served, "auth", &[&url, "from-env", "-"]).await;
}

#[tokio::test]
async fn without_a_token_only_loopback_is_served() {
    let sb = Sandbox::offline();
    let (code, _, stderr) = sb.run(&["serve", "--listen", "0.0.0.0:0"], "").await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("refusing to listen") && stderr.contains("PI_SERVE_TOKEN"), "{stderr}");
    let empty = sb.home.path().join("empty");
    std::fs::write(&empty, "\n").expect("empty token file");
    let (code, _, stderr) = sb.run(&["serve", "--token-file", &empty.display().to_string()], "").await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("token is empty"), "{stderr}");
}

#[tokio::test]
async fn an_oversized_message_closes_the_connection_with_1009() {
    let sb = Sandbox::offline();
    let served = serve(&sb, &["--max-message-bytes", "4096"]).await;
    let url = served.url.clone();
    python_scenario(&served, "oversize", &[&url, "4096"]).await;
}

#[tokio::test]
async fn a_client_that_does_not_read_is_disconnected_and_others_go_on() {
    let sb = Sandbox::with_server().await;
    // 12 MB in 1,500 deltas, paced (1 ms each) so a client that reads keeps up.
    let line = format!("{}\n", "x".repeat(8191));
    let mut flood = Reply::text_chunks(std::iter::repeat_n(line, 1500));
    flood.delay = Duration::from_millis(1);
    sb.server().on_marker("flood", flood);
    sb.server().set_fallback(Reply::text("a short answer for the other session"));
    let served = serve(&sb, &["--replay-events", "64", "--queue-messages", "600"]).await;
    let url = served.url.clone();
    if python_scenario(&served, "slow", &[&url]).await.is_some() {
        let log = served.pi.stderr();
        assert!(log.contains("disconnected: the client does not read"), "{log}");
    }
}

#[tokio::test]
async fn serves_on_a_unix_socket() {
    let sb = Sandbox::offline();
    let path = sb.home.path().join("pi.sock");
    let listen = format!("unix:{}", path.display());
    let served = serve(&sb, &["--listen", &listen]).await;
    assert_eq!(served.url, listen);
    python_scenario(&served, "unix", &[&path.display().to_string()]).await;
}

#[tokio::test]
async fn sigterm_closes_connections_with_1001_and_keeps_the_session() {
    let sb = Sandbox::offline();
    let mut served = serve(&sb, &[]).await;
    let url = served.url.clone();
    let pid = served.pi.child.id().expect("pid").to_string();
    if python_scenario(&served, "stop", &[&url, &pid]).await.is_none() {
        return;
    }
    let status = tokio::time::timeout(Duration::from_secs(20), served.pi.child.wait()).await.expect("pi serve stops");
    assert_eq!(status.expect("wait").code(), Some(0), "{}", served.pi.stderr());
    let files = sb.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).expect("session file");
    assert!(text.contains("written before the stop"), "{text}");
}

#[tokio::test]
async fn acp_clients_prompt_and_load_a_shared_session_over_websocket() {
    let sb = Sandbox::offline();
    let served = serve(&sb, &[]).await;
    let url = served.url.clone();
    if let Some(out) = python_scenario(&served, "acp", &[&url]).await {
        assert!(out.contains("acp ok"), "{out}");
    }
}
