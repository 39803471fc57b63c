//! `pi serve --cluster` on a real NATS JetStream: Debian's `nats-server`
//! (unpacked into `target/tools/nats` by `scripts/install-serve-tools.sh`)
//! on 127.0.0.1 with JetStream in a temporary directory, two workers
//! sharing one session directory; clients in `tests/serve/cluster_client.py`.
//! Skipped without nats-server or Python `websockets` (unless
//! `PI_RPC_REQUIRE_TOOLS=1`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::clients::{installed_tool, repo_root};
use crate::harness::Sandbox;
use crate::serve::{Served, python_scenario, python_script, serve};

/// A nats-server with JetStream, stopped when dropped.
pub struct Nats {
    child: tokio::process::Child,
    pub url: String,
    binary: std::path::PathBuf,
    port: u16,
    store: tempfile::TempDir,
    /// A configuration file the server reads (`-c`), if any.
    config: Option<PathBuf>,
}

impl Nats {
    pub async fn start() -> Option<Nats> {
        Nats::start_with_config(None).await
    }

    /// [`Nats::start`] reading the configuration file `config` too.
    pub async fn start_with_config(config: Option<PathBuf>) -> Option<Nats> {
        let binary = installed_tool("nats/usr/sbin/nats-server")?;
        let store = tempfile::tempdir().expect("store dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let child = Nats::spawn(&binary, port, store.path(), config.as_deref()).await;
        Some(Nats { child, url: format!("nats://127.0.0.1:{port}"), binary, port, store, config })
    }

    async fn spawn(binary: &Path, port: u16, store: &Path, config: Option<&Path>) -> tokio::process::Child {
        let mut command = tokio::process::Command::new(binary);
        if let Some(config) = config {
            command.arg("-c").arg(config);
        }
        let child = command
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(store)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start nats-server");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return child;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("nats-server did not start on {port}");
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("nats-server pid")
    }

    /// Wait until the server has exited (killed by a client), then start it
    /// again on the same port with the same store.
    pub async fn restart_once_dead(&mut self, within: Duration) {
        let status = tokio::time::timeout(within, self.child.wait()).await;
        assert!(status.is_ok(), "nats-server was not stopped within {within:?}");
        self.child = Nats::spawn(&self.binary, self.port, self.store.path(), self.config.as_deref()).await;
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A worker of the cluster on `shared`, named `name`, lease TTL `ttl` seconds.
pub async fn worker(sb: &Sandbox, nats: &Nats, shared: &Path, name: &str, ttl: &str) -> Served {
    worker_with(sb, nats, shared, name, ttl, &[]).await
}

/// [`worker`] with more arguments.
pub async fn worker_with(sb: &Sandbox, nats: &Nats, shared: &Path, name: &str, ttl: &str, more: &[&str]) -> Served {
    let dir = shared.display().to_string();
    let mut args = vec!["--session-dir", &dir, "--worker-name", name, "--cluster", &nats.url, "--lease-ttl", ttl];
    args.extend_from_slice(more);
    serve(sb, &args).await
}

/// The session directory the workers of a test share.
pub fn shared_dir(sb: &Sandbox) -> PathBuf {
    let shared = sb.home.path().join("shared");
    std::fs::create_dir_all(&shared).expect("shared dir");
    shared
}

/// The text of session `id`'s file in the workers' shared directory.
pub fn session_file_text(shared: &Path, id: &str) -> String {
    let file = std::fs::read_dir(shared)
        .expect("shared")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&format!("_{id}.jsonl")))
        .expect("session file");
    std::fs::read_to_string(&file).expect("session file")
}

/// Two workers (lease TTL 5 s, `more` arguments each) and a client on the second one running
/// `scenario` against both.
async fn two_workers_run(sb: &Sandbox, nats: &Nats, more: &[&str], scenario: &str) {
    let shared = shared_dir(sb);
    let a = worker_with(sb, nats, &shared, "wa", "5", more).await;
    let b = worker_with(sb, nats, &shared, "wb", "5", more).await;
    let (url_a, url_b) = (a.url.clone(), b.url.clone());
    cluster(&b, scenario, &[&url_a, &url_b]).await;
}

/// A `nats://` URL on a loopback port nothing listens on.
fn unused_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    format!("nats://127.0.0.1:{port}")
}

pub fn signal(served: &Served, signal: nix::sys::signal::Signal) {
    let pid = served.pi.child.id().expect("pid");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("signal");
}

#[tokio::test]
async fn a_killed_owners_lease_expires_and_another_worker_takes_the_session_over() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let mut a = worker(&sb, &nats, &shared, "wa", "2").await;
    let b = worker(&sb, &nats, &shared, "wb", "2").await;
    let session = "cluster-takeover-1";
    let (url_a, url_b) = (a.url.clone(), b.url.clone());
    if python_scenario(&a, "scale_write", &[&url_a, session]).await.is_none() {
        return;
    }
    // While its owner lives, the other worker serves it through the owner.
    python_scenario(&b, "scale_continue", &[&url_b, session]).await;
    a.pi.child.start_kill().expect("kill -9 the owner");
    let _ = a.pi.child.wait().await;
    let killed = Instant::now();
    // The lease expires within its TTL (2 s) and the next attach takes over.
    loop {
        let (python, path) = crate::serve::python().expect("python");
        let out = tokio::process::Command::new(python)
            .arg(repo_root().join("tests/serve/cluster_client.py"))
            .args(["resume", &url_b, session, "and now?"])
            .env("PYTHONPATH", path)
            .output()
            .await
            .expect("client");
        if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("resume ok") {
            break;
        }
        // A bounded wait (the failover time is a figure of bench/cluster.py, not asserted here).
        assert!(killed.elapsed() < Duration::from_secs(60), "no takeover: {}", b.pi.stderr());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn a_stale_owner_paused_past_its_lease_cannot_append() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let a = worker(&sb, &nats, &shared, "wa", "1").await;
    let b = worker(&sb, &nats, &shared, "wb", "1").await;
    let session = "cluster-stale-1";
    let (url_a, url_b) = (a.url.clone(), b.url.clone());
    if python_scenario(&a, "scale_write", &[&url_a, session]).await.is_none() {
        return;
    }
    // A client stays attached to the owner A.
    let go = sb.home.path().join("go");
    let (python, path) = crate::serve::python().expect("python");
    let mut held = tokio::process::Command::new(python)
        .arg(repo_root().join("tests/serve/faults_client.py"))
        .args(["hold_then_prompt", &url_a, session, &go.display().to_string()])
        .env("PYTHONPATH", path)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("client");
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A is paused past its lease; B takes the session over and writes to it.
    signal(&a, nix::sys::signal::Signal::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    python_scenario(&b, "scale_continue", &[&url_b, session]).await;
    signal(&a, nix::sys::signal::Signal::SIGCONT);
    // A's client prompts: A may not write the file any more.
    std::fs::write(&go, "go").expect("go file");
    let out = tokio::time::timeout(Duration::from_secs(40), held.wait()).await.expect("client ends");
    assert!(out.expect("client").success());
    let text = session_file_text(&shared, session);
    assert!(text.contains("and now?"), "B's turn is in the file: {text}");
    // A's client may have been relayed to B once A saw its lease was gone (B
    // then wrote its prompt), but A itself never appended: the file is one
    // chain, each entry on the one before (a stale append would hang on A's
    // older leaf).
    let entries: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    for pair in entries.windows(2).skip(1) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "the session file forks:\n{text}");
    }
    let log = a.pi.stderr();
    assert!(log.contains("taken over by another worker") || log.contains("lease lost"), "{log}");
}

/// A NATS credentials file: a user JWT (not checked by a nats-server that asks
/// for no authentication) and a user nkey seed made for this test, which the
/// client signs the server's nonce with.
const CREDS: &str = "-----BEGIN NATS USER JWT-----
eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln
------END NATS USER JWT------

-----BEGIN USER NKEY SEED-----
SUAMQSFMACZ3TMTO5VUKXTLKHFNMM42ABDVUGRDORYVLMYCG23ULGOHC7I
------END USER NKEY SEED------
";

#[tokio::test]
async fn a_credentials_file_is_read_at_start_and_one_that_is_not_is_refused() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let good = sb.home.path().join("worker.creds");
    std::fs::write(&good, CREDS).expect("creds file");
    let good = good.display().to_string();
    let a = worker_with(&sb, &nats, &shared, "wa", "3", &["--cluster-credentials", &good]).await;
    let url = a.url.clone();
    cluster(&a, "touch", &[&url, "creds-1"]).await;
    // Not a credentials file: the worker stops at start and names the option.
    let bad = sb.home.path().join("bad.creds");
    std::fs::write(&bad, "not a credentials file\n").expect("bad file");
    let dir = shared.display().to_string();
    let bad = bad.display().to_string();
    let args = ["serve", "--listen", "127.0.0.1:0", "--session-dir", &dir, "--cluster", &nats.url];
    let mut cmd = sb.command(&args);
    cmd.args(["--cluster-credentials", &bad]).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("in time").expect("pi serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a worker started with {bad}: {stderr}");
    assert!(stderr.contains(&format!("--cluster-credentials {bad}")), "{stderr}");
}

/// Run a scenario of `tests/serve/cluster_client.py` (None: no Python `websockets`).
pub async fn cluster(served: &Served, scenario: &str, args: &[&str]) -> Option<String> {
    python_script(served, "cluster_client.py", scenario, args).await
}

#[tokio::test]
async fn any_worker_serves_any_session_with_the_owners_numbers() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let a = worker(&sb, &nats, &shared, "wa", "3").await;
    let b = worker(&sb, &nats, &shared, "wb", "3").await;
    // Several servers: --cluster repeated and comma-separated, two of them not
    // listening (the client tries the next).
    let more = [unused_url(), unused_url()].join(",");
    let c = worker_with(&sb, &nats, &shared, "wc", "3", &["--cluster", &more]).await;
    let (url_a, url_b, url_c) = (a.url.clone(), b.url.clone(), c.url.clone());
    if cluster(&a, "relay", &[&url_a, &url_b]).await.is_none() {
        return;
    }
    cluster(&b, "spread", &["12", &url_a, &url_b, &url_c]).await;
}

/// Two workers, wa and wb (lease TTL 2 s), sharing a session directory, and
/// a model that answers "stream slowly" with 60 words 40 ms apart.
pub struct SlowPair {
    pub a: Served,
    pub b: Served,
    /// A's process id.
    pub pid_a: String,
    pub shared: PathBuf,
    pub sb: Sandbox,
}

pub async fn slow_pair(nats: &Nats) -> SlowPair {
    let sb = Sandbox::with_server().await;
    let mut slow = pi_compat::fake_server::Reply::text_chunks((0..60).map(|i| format!("w{i} ")));
    slow.delay = Duration::from_millis(40);
    sb.server().on_marker("stream slowly", slow);
    let shared = shared_dir(&sb);
    let a = worker(&sb, nats, &shared, "wa", "2").await;
    let b = worker(&sb, nats, &shared, "wb", "2").await;
    let pid_a = a.pi.child.id().expect("pid").to_string();
    SlowPair { a, b, pid_a, shared, sb }
}

#[tokio::test]
async fn a_killed_owner_mid_stream_loses_no_stored_event_and_the_turn_is_reported_interrupted() {
    let Some(nats) = Nats::start().await else { return };
    let mut pair = slow_pair(&nats).await;
    let (url_a, url_b) = (pair.a.url.clone(), pair.b.url.clone());
    let Some(out) = cluster(&pair.b, "killed", &[&url_a, &url_b, &pair.pid_a]).await else { return };
    let _ = pair.a.pi.child.wait().await;
    let session = out.lines().find_map(|l| l.strip_prefix("SESSION ")).expect("session id").to_string();
    // The dead worker comes back under its name: nothing is refused.
    let a = worker(&pair.sb, &nats, &pair.shared, "wa", "2").await;
    let url_a = a.url.clone();
    cluster(&a, "resume", &[&url_a, &session, "after the loss"]).await;
}

#[tokio::test]
async fn a_killed_owner_mid_stream_is_reported_through_the_json_rpc_and_acp_error_paths() {
    let Some(nats) = Nats::start().await else { return };
    let pair = slow_pair(&nats).await;
    let (url_a, url_b) = (pair.a.url.clone(), pair.b.url.clone());
    cluster(&pair.b, "interrupted_dialects", &[&url_a, &url_b, &pair.pid_a]).await;
}

#[tokio::test]
async fn a_replay_reaching_past_the_event_retention_says_gap_and_sends_the_kept_events() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let keep = ["--event-retention", "4"];
    let a = worker_with(&sb, &nats, &shared, "wa", "2", &keep).await;
    let b = worker_with(&sb, &nats, &shared, "wb", "2", &keep).await;
    let pid = a.pi.child.id().expect("pid").to_string();
    let (url_a, url_b) = (a.url.clone(), b.url.clone());
    cluster(&b, "retention", &[&url_a, &url_b, &pid, "4"]).await;
}

#[tokio::test]
async fn three_workers_behind_round_robin_nginx_serve_every_session_and_drain_without_a_gap() {
    let Some(nats) = Nats::start().await else { return };
    let Some(nginx) = installed_tool("nginx/usr/sbin/nginx") else { return };
    let sb = Sandbox::with_server().await;
    // Each turn streams for 3 s: the drain's /readyz and refusal are checked meanwhile.
    let mut slow = pi_compat::fake_server::Reply::text_chunks((0..60).map(|i| format!("w{i} ")));
    slow.delay = Duration::from_millis(50);
    sb.server().on_marker("stream slowly", slow);
    let shared = shared_dir(&sb);
    let dir = shared.display().to_string();
    let mut workers = Vec::new();
    for name in ["w1", "w2", "w3"] {
        let args = ["--session-dir", &dir, "--worker-name", name, "--cluster", &nats.url, "--drain-seconds", "30"];
        workers.push(serve(&sb, &args).await);
    }
    let ports: Vec<u16> = workers.iter().map(|w| crate::serve_nginx::port_of(&w.url)).collect();
    let (mut balancer, front) = crate::serve_nginx::start_nginx(&nginx, &sb, "nginx-cluster.conf", &ports).await;
    // 50 sessions created without a key, each resumed by id through nginx.
    if cluster(&workers[0], "spread", &["50", &front]).await.is_none() {
        return;
    }
    // SIGTERM to w1 while 20 of its sessions stream to clients on w2 and w3.
    let pid = workers[0].pi.child.id().expect("pid").to_string();
    let (v, b, c) = (workers[0].url.clone(), workers[1].url.clone(), workers[2].url.clone());
    cluster(&workers[1], "drain", &["20", &pid, &v, &b, &c]).await;
    let status = tokio::time::timeout(Duration::from_secs(30), workers[0].pi.child.wait()).await;
    assert!(matches!(status, Ok(Ok(s)) if s.success()), "the drained worker: {status:?}");
    let log = workers[0].pi.stderr();
    assert!(log.contains("sessions handed over"), "{log}");
    let _ = balancer.start_kill();
    let _ = balancer.wait().await;
}

#[tokio::test]
async fn the_local_cluster_script_brings_it_all_up_and_down_in_one_command() {
    if installed_tool("nats/usr/sbin/nats-server").is_none() || installed_tool("nginx/usr/sbin/nginx").is_none() {
        return;
    }
    let Some((python, path)) = crate::serve::python() else { return };
    let sb = Sandbox::offline();
    let dir = sb.home.path().join("local-cluster");
    let port = free_port_range().to_string();
    let script = |action: &str| {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(repo_root().join("deploy/local-cluster.sh")).args(action.split(' '));
        cmd.env_clear();
        for keep in ["PATH", "LANG", "TMPDIR"] {
            if let Some(v) = std::env::var_os(keep) {
                cmd.env(keep, v);
            }
        }
        cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
        cmd.env("PI_BIN", env!("CARGO_BIN_EXE_pi")).env("PI_CLUSTER_DIR", &dir).env("PI_CLUSTER_PORT", &port);
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        cmd
    };
    let run = |action: &'static str| {
        let mut cmd = script(action);
        async move {
            let out =
                tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("in time").expect("bash");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "local-cluster.sh {action}: {text}{}", String::from_utf8_lossy(&out.stderr));
            text
        }
    };
    let printed = run("up 3").await;
    let front = printed.lines().next().expect("the entry URL").to_string();
    assert_eq!(front, format!("ws://127.0.0.1:{port}/rpc"));
    let token = dir.join("token");
    assert!(printed.contains(&format!("token file: {}", token.display())), "{printed}");
    // Idempotent: the same cluster again.
    assert_eq!(run("up 3").await, printed);
    let out = tokio::process::Command::new(python)
        .arg(repo_root().join("tests/serve/cluster_client.py"))
        .args(["spread", "6", &front])
        .env("PYTHONPATH", path)
        .env("PI_TOKEN_FILE", &token)
        .output()
        .await
        .expect("client");
    let status = run("status").await;
    run("down").await;
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(status.lines().filter(|l| l.contains("running (pid")).count(), 5, "{status}");
    run("down").await;
    assert_eq!(run("status").await.trim(), "not running");
}

#[tokio::test]
async fn a_nats_restart_mid_run_loses_no_event_and_requests_meanwhile_are_answered() {
    let Some(mut nats) = Nats::start().await else { return };
    let sb = Sandbox::with_server().await;
    let mut slow = pi_compat::fake_server::Reply::text_chunks((0..60).map(|i| format!("w{i} ")));
    slow.delay = Duration::from_millis(60);
    sb.server().on_marker("stream slowly", slow);
    let shared = shared_dir(&sb);
    // The lease outlives the outage: A stays the owner.
    let a = worker(&sb, &nats, &shared, "wa", "8").await;
    let b = worker(&sb, &nats, &shared, "wb", "8").await;
    let Some((python, path)) = crate::serve::python() else { return };
    let flag = sb.home.path().join("nats-restarted");
    let mut client = tokio::process::Command::new(python);
    client.arg(repo_root().join("tests/serve/cluster_client.py"));
    client.args(["nats_restart", &a.url, &b.url, &nats.pid().to_string(), &flag.display().to_string()]);
    client.env("PYTHONPATH", path).kill_on_drop(true).stdin(std::process::Stdio::null());
    client.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let client = client.spawn().expect("the client");
    // The client kills nats-server mid-stream; it comes back half a second later.
    nats.restart_once_dead(Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(&flag, "restarted").expect("flag file");
    let out = tokio::time::timeout(Duration::from_secs(180), client.wait_with_output()).await.expect("in time");
    let out = out.expect("the client");
    assert!(
        out.status.success(),
        "{}{}\nA:\n{}\nB:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        a.pi.stderr(),
        b.pi.stderr()
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
}

#[tokio::test]
async fn dialogs_reach_clients_on_every_worker_and_the_first_answer_wins() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let demo = crate::extensions::demo_path();
    two_workers_run(&sb, &nats, &["-e", &demo], "dialogs").await;
}

#[tokio::test]
async fn acp_loads_resumes_and_lists_a_session_owned_by_another_worker() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    two_workers_run(&sb, &nats, &[], "acp").await;
}

#[tokio::test]
async fn a_full_replay_through_a_new_owners_mirror_has_no_gap() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let mut a = worker(&sb, &nats, &shared, "wa", "2").await;
    let b = worker(&sb, &nats, &shared, "wb", "2").await;
    let c = worker(&sb, &nats, &shared, "wc", "2").await;
    let pid = a.pi.child.id().expect("pid").to_string();
    let (url_a, url_b, url_c) = (a.url.clone(), b.url.clone(), c.url.clone());
    cluster(&c, "takeover_replay", &[&url_a, &url_b, &url_c, &pid]).await;
    let _ = a.pi.child.wait().await;
}

#[tokio::test]
async fn approvals_reach_clients_on_every_worker_and_the_first_answer_wins() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::with_server().await;
    let call = pi_compat::fake_server::Reply::tool_call("call_1", "bash", r#"{"command":"echo approved-ran"}"#);
    sb.server().on_marker("run the tool", call);
    two_workers_run(&sb, &nats, &["--tool-approval"], "approvals").await;
}

/// An entry port whose neighbours the script uses (nats-server at +1, the
/// workers at +10 on) are free too: another test's server there would answer
/// in a worker's place.
fn free_port_range() -> u16 {
    let free = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let port = port.clamp(20_000, 60_000);
        if [0, 1, 10, 11, 12].iter().all(|offset| free(port + offset)) {
            return port;
        }
    }
}
