//! The ACP session lifecycle with real clients — the ACP TypeScript SDK
//! (`acp/sdk_sessions.mjs`: load and resume of a session never prompted,
//! titles, fork, delete) and acpx (a session made in one run, prompted in
//! the next) — and what one connection holds: thousands of sessions opened
//! and closed leave the memory flat, idle sessions sleep and give theirs
//! back, and the number of agents a connection runs is bounded.

use std::path::Path;
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::Sandbox;

fn pi() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_pi"))
}

/// node with the sandbox's environment, in its cwd.
fn node_command(sb: &Sandbox, node: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(node);
    cmd.current_dir(sb.cwd.path()).env_clear();
    let node_dir = node.parent().unwrap_or(Path::new("/"));
    cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir.display()));
    cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path()).env("RUST_LOG", "error");
    cmd.kill_on_drop(true);
    cmd
}

async fn run(mut cmd: tokio::process::Command, what: &str) -> String {
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output()).await.expect("timed out").expect(what);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{what} failed\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

fn said(request: &Value, text: &str) -> bool {
    request["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["content"].to_string().contains(text)))
}

#[tokio::test]
async fn the_acp_sdk_loads_resumes_forks_lists_and_deletes_sessions() {
    let (Some(node), Some(sdk)) = (node22(), installed_tool("acp/node_modules/@agentclientprotocol/sdk")) else {
        return;
    };
    let sb = Sandbox::with_server().await;
    for reply in ["fresh reply", "noted", "it was pear"] {
        sb.server().push(Reply::text(reply));
    }
    let mut cmd = node_command(&sb, &node);
    cmd.arg(repo_root().join("tests/e2e/acp/sdk_sessions.mjs")).arg(&sdk).arg(pi()).arg(sb.cwd.path());
    let stdout = run(cmd, "the SDK session client").await;
    let out: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let r = &out["report"];
    let (fresh, named, fork) = (&out["ids"]["fresh"], &out["ids"]["named"], &out["ids"]["fork"]);

    let caps = &r["init"]["agentCapabilities"]["sessionCapabilities"];
    for cap in ["list", "close", "resume", "delete", "fork"] {
        assert_eq!(caps[cap], json!({}), "{cap}: {caps}");
    }
    // Never prompted, closed: it can be loaded, resumed while open, then prompted.
    assert_eq!(r["closeFresh"], json!({}), "{r}");
    assert!(r["loadFresh"]["configOptions"].is_array(), "{r}");
    assert!(r["resumeOpen"]["configOptions"].is_array(), "{r}");
    assert_eq!(r["promptFresh"]["stopReason"], "end_turn", "{r}");
    // The fork starts from the source's history, and a resume replays nothing.
    assert!(fork.is_string() && fork != named, "{out}");
    assert_eq!(r["promptFork"]["stopReason"], "end_turn", "{r}");
    let requests = sb.server().requests();
    let to_fork = &requests[2].body;
    assert!(said(to_fork, "what was the word?") && said(to_fork, "the secret word is pear"), "{to_fork}");
    assert_eq!(r["resumeFork"]["modes"]["currentModeId"], "ask", "{r}");
    assert_eq!(r["updatesDuringResume"], 0, "{r}");
    // Titles: the first prompt (the fork's is its source's).
    let listed = r["listed"]["sessions"].as_array().unwrap();
    let title = |id: &Value| listed.iter().find(|s| &s["sessionId"] == id).map(|s| s["title"].clone());
    assert_eq!(title(fresh), Some(json!("now it has words")), "{listed:?}");
    assert_eq!(title(named), Some(json!("the secret word is pear")), "{listed:?}");
    assert_eq!(title(fork), Some(json!("the secret word is pear")), "{listed:?}");
    // Deleted: gone from the list, and from the disk.
    assert_eq!(r["delete"], json!({}), "{r}");
    let after: Vec<&Value> = r["listedAfter"]["sessions"].as_array().unwrap().iter().map(|s| &s["sessionId"]).collect();
    assert_eq!(after.len(), 2, "{r}");
    assert!(!after.contains(&named), "{r}");
    assert_eq!(r["loadDeleted"]["error"]["code"], -32002, "{r}");
    assert_eq!(sb.session_files().len(), 2);
}

#[tokio::test]
async fn acpx_prompts_a_session_it_made_in_an_earlier_run() {
    let (Some(node), Some(cli)) = (node22(), installed_tool("acp/node_modules/acpx/dist/cli.js")) else { return };
    let sb = Sandbox::offline();
    let acpx = |args: &[&str]| {
        let mut cmd = node_command(&sb, &node);
        cmd.arg(&cli).args(["--ttl", "1", "--format", "json", "--agent"]).arg(pi()).args(args);
        cmd
    };
    let made = run(acpx(&["sessions", "new"]), "acpx sessions new").await;
    assert!(made.contains("\"created\":true"), "{made}");
    assert_eq!(sb.session_files().len(), 1, "the new session is stored before its first prompt");
    let prompted = run(acpx(&["--approve-all", "hello from the second run"]), "acpx prompt").await;
    let lines: Vec<Value> = prompted.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let resumed = lines.iter().find(|v| v["method"] == "session/resume").expect("acpx resumed the session");
    let id = resumed["params"]["sessionId"].clone();
    let answered = lines.iter().any(|v| v["id"] == resumed["id"] && v["result"].is_object());
    assert!(answered, "{prompted}");
    let stop = lines.iter().rev().find_map(|v| v["result"].get("stopReason").cloned());
    assert_eq!(stop, Some(json!("end_turn")), "{prompted}");
    let files = sb.session_files();
    assert_eq!(files.len(), 1, "the same session, not a new one");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains(id.as_str().unwrap()) && text.contains("hello from the second run"), "{text}");
    // Let acpx's queue owner see its one-second TTL out.
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// `pi --protocol acp` driven line by line.
struct Acp {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
    cwd: String,
}

impl Acp {
    async fn start(sb: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> Acp {
        let mut cmd = sb.command(&["--protocol", "acp"]);
        cmd.args(args).env("RUST_LOG", "error").stderr(std::process::Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start pi");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acp = Acp { child, stdin, lines, next_id: 0, cwd: sb.cwd.path().display().to_string() };
        acp.request("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
        acp
    }

    /// Send a request; its response (other messages are skipped).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n";
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("no answer")
                .unwrap()
                .expect("pi ended");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == id && value.get("method").is_none() {
                return value;
            }
        }
    }

    async fn new_session(&mut self) -> Value {
        let cwd = self.cwd.clone();
        self.request("session/new", json!({"cwd": cwd, "mcpServers": []})).await
    }

    async fn prompt(&mut self, session: &Value, text: &str) -> Value {
        self.request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})).await
    }

    /// Resident memory, in KiB.
    fn rss(&self) -> u64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    async fn finish(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await.unwrap().unwrap();
        assert!(status.success());
    }
}

/// One session opened, prompted one time in five, and closed.
async fn open_and_close(acp: &mut Acp, n: usize) {
    let session = acp.new_session().await["result"]["sessionId"].clone();
    if n.is_multiple_of(5) {
        assert_eq!(acp.prompt(&session, "hello there").await["result"]["stopReason"], "end_turn");
    }
    assert_eq!(acp.request("session/close", json!({"sessionId": session})).await["result"], json!({}));
}

#[tokio::test]
async fn thousands_of_sessions_opened_and_closed_leave_the_memory_flat() {
    let sb = Sandbox::offline();
    let mut acp = Acp::start(&sb, &[], &[]).await;
    for n in 0..300 {
        open_and_close(&mut acp, n).await;
    }
    let warm = acp.rss();
    for n in 300..2000 {
        open_and_close(&mut acp, n).await;
    }
    let end = acp.rss();
    assert!(end < warm + 8 * 1024, "RSS grew from {warm} KiB to {end} KiB over 1,700 sessions");
    acp.finish().await;
}

#[tokio::test]
async fn idle_sessions_sleep_give_their_memory_back_and_wake_when_asked() {
    let sb = Sandbox::offline();
    let env = [("PI_ACP_IDLE_SECONDS", "1"), ("PI_ACP_MAX_SESSIONS", "1000")];
    let mut acp = Acp::start(&sb, &env, &[]).await;
    let long = "hello there ".repeat(200);
    let mut first = Value::Null;
    let mut after_batch = Vec::new();
    for batch in 0..4 {
        for n in 0..60 {
            let session = acp.new_session().await["result"]["sessionId"].clone();
            assert_eq!(acp.prompt(&session, &long).await["result"]["stopReason"], "end_turn");
            if batch == 0 && n == 0 {
                first = session;
            }
        }
        tokio::time::sleep(Duration::from_millis(2500)).await;
        after_batch.push(acp.rss());
    }
    // 60 sessions with a conversation cost about 8 MiB while awake; asleep,
    // the next batches reuse that memory (the first batch settles the heap).
    assert!(after_batch[3] < after_batch[1] + 3 * 1024, "RSS after each batch (KiB): {after_batch:?}");
    // The first session sleeps; a prompt wakes it with its history.
    assert_eq!(acp.prompt(&first, "still there?").await["result"]["stopReason"], "end_turn");
    let file = sb.session_files().into_iter().find(|f| f.to_string_lossy().contains(first.as_str().unwrap())).unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(text.matches("\"role\":\"user\"").count(), 2, "one session, both prompts: {text}");
    acp.finish().await;
}

#[tokio::test]
async fn one_connection_runs_a_bounded_number_of_agents() {
    // Stored sessions: the least recently used idle one sleeps to make room.
    let sb = Sandbox::with_server().await;
    for reply in ["one", "two", "three", "back"] {
        sb.server().push(Reply::text(reply));
    }
    let mut acp = Acp::start(&sb, &[("PI_ACP_MAX_SESSIONS", "2")], &[]).await;
    let mut sessions = Vec::new();
    for word in ["alpha", "beta", "gamma"] {
        let session = acp.new_session().await["result"]["sessionId"].clone();
        assert_eq!(acp.prompt(&session, word).await["result"]["stopReason"], "end_turn");
        sessions.push(session);
    }
    assert_eq!(acp.prompt(&sessions[0], "and alpha again").await["result"]["stopReason"], "end_turn");
    let woken = &sb.server().requests()[3].body;
    assert!(said(woken, "alpha") && said(woken, "and alpha again") && !said(woken, "beta"), "{woken}");
    acp.finish().await;

    // Sessions kept in memory only cannot sleep: the third is refused.
    let sb = Sandbox::offline();
    let mut acp = Acp::start(&sb, &[("PI_ACP_MAX_SESSIONS", "2")], &["--no-session"]).await;
    for _ in 0..2 {
        assert!(acp.new_session().await["result"]["sessionId"].is_string());
    }
    let refused = acp.new_session().await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(refused["error"]["data"].as_str().unwrap().contains("close one"), "{refused}");
    acp.finish().await;
}
