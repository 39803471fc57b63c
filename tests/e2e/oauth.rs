//! Subscription logins end to end, offline: the fake OAuth server
//! (`pi_compat::fake_oauth`) stands in for every provider's endpoints
//! through `PI_RPC_ORIGIN_OVERRIDES`, and the fake model server for the
//! Anthropic and ChatGPT (Codex) APIs (models.json `baseUrl`). Covered: `pi login` with PKCE and
//! with a device code, the stored credential then read and used by pi 1.6.0
//! itself; a Claude and a ChatGPT session that stay logged in across a
//! token expiry and a 401;
//! a revoked login's error; a refresh racing pi's own (its lock and refresh
//! code, driven from node) on the same auth.json; 20 sessions of `pi serve`
//! making one refresh; the JSON-RPC `login` method and ACP `authenticate`.

use std::path::PathBuf;
use std::time::Duration;

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::{LINE_TIMEOUT, Pi, Sandbox};

/// A sandbox whose default model is Anthropic's, served by the fake model
/// server, with every OAuth origin sent to a fake OAuth server.
pub(crate) struct Login {
    pub(crate) sb: Sandbox,
    pub(crate) fake: FakeOAuth,
}

impl Login {
    pub(crate) async fn new() -> Login {
        let sb = Sandbox::with_server().await;
        let models = json!({"providers": {
            "fake": {"baseUrl": sb.server().base_url(), "api": "openai-completions", "apiKey": "k",
                     "models": [{"id": "fake-model"}]},
            "anthropic": {"baseUrl": sb.server().url()},
            "openai-codex": {"baseUrl": format!("{}/backend-api", sb.server().url())}
        }});
        std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).unwrap();
        sb.write_settings(json!({"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5",
                                 "retry": {"baseDelayMs": 20}}));
        Login { sb, fake: FakeOAuth::start().await.unwrap() }
    }

    pub(crate) fn auth_path(&self) -> PathBuf {
        self.sb.agent_dir.path().join("auth.json")
    }

    pub(crate) fn auth(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.auth_path()).unwrap()).unwrap()
    }

    /// auth.json with a login of `provider` expiring `in_ms` from now.
    fn store(&self, provider: &str, in_ms: i64) -> Value {
        let cred = self.fake.credential(provider, now_ms() + in_ms);
        std::fs::write(self.auth_path(), serde_json::to_string_pretty(&json!({provider: cred})).unwrap()).unwrap();
        cred
    }

    /// `pi` with these arguments, the overrides set and no browser.
    pub(crate) fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = self.sb.command(args);
        cmd.env("PI_RPC_ORIGIN_OVERRIDES", crate::harness::origin_overrides(&self.fake.overrides()));
        cmd.env("BROWSER", "none");
        cmd
    }

    fn rpc(&self, extra: &[&str]) -> Pi {
        let mut args = vec!["--mode", "rpc"];
        args.extend_from_slice(extra);
        Pi::start(self.command(&args))
    }

    /// The bearer tokens of the model calls (the Codex WebSocket upgrade
    /// tried first, which the fake server refuses, left out).
    fn bearers(&self) -> Vec<String> {
        let requests = self.sb.server().requests();
        requests
            .iter()
            .filter(|r| r.method != "GET")
            .filter_map(|r| r.header("authorization").map(|a| a.trim_start_matches("Bearer ").to_string()))
            .collect()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// node and the reference pi's CLI, or None (skip).
pub(crate) fn reference() -> Option<(PathBuf, PathBuf)> {
    let node = node22()?;
    let cli = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js")?;
    Some((node, cli))
}

/// pi 1.6.0 with these arguments in the sandbox: (exit code, stdout, stderr).
async fn run_reference(login: &Login, args: &[&str]) -> Option<(i32, String, String)> {
    let (node, cli) = reference()?;
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(cli).args(args).current_dir(login.sb.cwd.path()).env_clear();
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd.env("HOME", login.sb.home.path()).env("PI_CODING_AGENT_DIR", login.sb.agent_dir.path());
    cmd.env("PI_OFFLINE", "1").stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("pi 1.6.0 ended").unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some((out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr)))
}

/// A `pi` whose output is read as plain lines (no schema checks: `pi
/// login` prints text, ACP is not a seed dialect).
struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: Vec<String>,
}

impl Raw {
    fn start(mut cmd: tokio::process::Command) -> Raw {
        cmd.stderr(std::process::Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn pi");
        let stdin = child.stdin.take().unwrap();
        let lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
        Raw { child, stdin, lines, seen: Vec::new() }
    }

    async fn line(&mut self) -> Option<String> {
        let next = tokio::time::timeout(LINE_TIMEOUT, self.lines.next_line()).await;
        let line = next.unwrap_or_else(|_| panic!("no output in time; so far: {:?}", self.seen)).ok().flatten()?;
        self.seen.push(line.clone());
        Some(line)
    }

    /// The next JSON line that `pred` accepts.
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self.line().await.unwrap_or_else(|| panic!("output ended: {:?}", self.seen));
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && pred(&v)
            {
                return v;
            }
        }
    }

    async fn send(&mut self, value: Value) {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(format!("{value}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The line after "Open this URL to sign in:" (the sign-in page).
    async fn sign_in_url(&mut self) -> String {
        loop {
            let line = self.line().await.unwrap_or_else(|| panic!("no sign-in URL: {:?}", self.seen));
            if line.starts_with("Open this URL to sign in:") {
                return self.line().await.expect("the URL").trim().to_string();
            }
        }
    }

    /// The rest of the output, then the exit code.
    async fn finish(&mut self) -> i32 {
        while self.line().await.is_some() {}
        let status = tokio::time::timeout(LINE_TIMEOUT, self.child.wait()).await.expect("pi ended").unwrap();
        status.code().unwrap_or(-1)
    }
}

#[tokio::test]
async fn pi_login_with_pkce_stores_a_login_pi_1_6_reads_and_uses() {
    let login = Login::new().await;
    let mut pi = Raw::start(login.command(&["login", "anthropic"]));
    let url = pi.sign_in_url().await;
    assert!(url.starts_with("https://claude.ai/oauth/authorize?code=true&client_id="), "{url}");
    assert_eq!(login.fake.browse(&url).await, Ok(200), "the callback page");
    assert_eq!(pi.finish().await, 0, "{:?}", pi.seen);
    assert!(pi.seen.last().unwrap().starts_with("Logged in to Anthropic (Claude Pro/Max). Credentials saved to "));
    let cred = login.auth()["anthropic"].clone();
    assert_eq!(cred["type"], "oauth");
    assert!(cred["access"].as_str().unwrap().starts_with("sk-ant-oat01-"));
    let text = std::fs::read_to_string(login.auth_path()).unwrap();
    assert!(text.starts_with("{\n  \"anthropic\": {\n    \"type\": \"oauth\",\n    \"refresh\": "), "{text}");

    let Some((code, out, err)) = run_reference(&login, &["--list-models", "anthropic"]).await else { return };
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("anthropic  claude-sonnet-4-5 "), "pi 1.6.0 lists the login's models:\n{out}");
    login.sb.server().push(Reply::text("hello from the fake model"));
    let (code, out, err) =
        run_reference(&login, &["-p", "--model", "anthropic/claude-sonnet-4-5", "hi"]).await.unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("hello from the fake model"), "{out}");
    assert_eq!(login.bearers(), [cred["access"].as_str().unwrap()], "pi 1.6.0 sent the token pi-rpc stored");
}

#[tokio::test]
async fn pi_login_with_a_device_code_then_logout() {
    let login = Login::new().await;
    let mut pi = Raw::start(login.command(&["login", "openai-codex", "--no-browser"]));
    let first = pi.line().await.unwrap_or_default();
    assert_eq!(first, "Open https://auth.openai.com/codex/device and enter code: WXYZ-1234");
    assert_eq!(pi.finish().await, 0, "{:?}", pi.seen);
    let cred = login.auth()["openai-codex"].clone();
    assert_eq!(cred["accountId"], "acct-fake-1");
    if let Some((code, out, err)) = run_reference(&login, &["--list-models", "openai-codex"]).await {
        assert_eq!(code, 0, "{err}");
        assert!(out.lines().any(|l| l.starts_with("openai-codex ")), "pi 1.6.0 lists the login's models:\n{out}");
    }
    let (code, out, _) = login.sb.run(&["login", "--list"], "").await;
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.starts_with("openai-codex") && l.ends_with("logged in")), "{out}");
    let (code, out, _) = login.sb.run(&["logout", "openai-codex"], "").await;
    assert_eq!((code, out.trim()), (0, "Logged out of OpenAI (ChatGPT Plus/Pro)."));
    assert!(login.auth().get("openai-codex").is_none());
}

/// A session on `model` (the login of `provider`) stays logged in: the
/// token expires between two prompts and is refreshed before the second,
/// then the provider refuses a token and the request is made again once
/// with a fresh one. Every refresh is written back to auth.json.
async fn session_stays_logged_in(provider: &str, model: &str, unauthorized: &str) {
    let login = Login::new().await;
    // Valid for five minutes and two seconds: good for the first prompt only.
    let first = login.store(provider, 5 * 60 * 1000 + 2_000);
    let mut pi = login.rpc(&["--model", model]);
    login.sb.server().push(Reply::text("one"));
    pi.call("p1", json!({"type": "prompt", "message": "first"})).await;
    let events = pi.until_type("agent_settled").await;
    let end = events.iter().rev().find(|e| e["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["content"][0]["text"], "one", "{events:?}");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    login.sb.server().push(Reply::text("two"));
    pi.call("p2", json!({"type": "prompt", "message": "second"})).await;
    let events = pi.until_type("agent_settled").await;
    assert!(events.iter().all(|e| e["type"] != "auto_retry_start"), "{events:?}");
    let second = login.auth()[provider].clone();
    assert_ne!(second["access"], first["access"], "refreshed and written back");
    assert_eq!(login.bearers(), [first["access"].as_str().unwrap(), second["access"].as_str().unwrap()]);
    assert_eq!(login.fake.refreshes(provider), 1);

    // The provider rejects the token: one refresh, the same request again.
    login.sb.server().push(Reply::error(401, unauthorized));
    login.sb.server().push(Reply::text("three"));
    pi.call("p3", json!({"type": "prompt", "message": "third"})).await;
    let events = pi.until_type("agent_settled").await;
    let end = events.iter().rev().find(|e| e["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["content"][0]["text"], "three", "{events:?}");
    let third = login.auth()[provider].clone();
    let bearers = login.bearers();
    assert_eq!(&bearers[2..], [second["access"].as_str().unwrap(), third["access"].as_str().unwrap()]);
    assert_eq!(login.fake.refreshes(provider), 2);
}

#[tokio::test]
async fn a_claude_session_stays_logged_in_across_a_token_expiry_and_a_401() {
    session_stays_logged_in(
        "anthropic",
        "anthropic/claude-sonnet-4-5",
        r#"{"type":"error","error":{"type":"authentication_error","message":"expired"}}"#,
    )
    .await;
}

#[tokio::test]
async fn a_chatgpt_codex_session_stays_logged_in_across_a_token_expiry_and_a_401() {
    session_stays_logged_in(
        "openai-codex",
        "openai-codex/gpt-6.2-sol",
        r#"{"error":{"code":"token_expired","message":"Provided authentication token is expired."}}"#,
    )
    .await;
}

#[tokio::test]
async fn a_revoked_login_ends_the_prompt_with_the_command_to_log_in_again() {
    let login = Login::new().await;
    login.store("anthropic", -1_000);
    login.fake.revoke();
    let mut pi = login.rpc(&[]);
    pi.call("p", json!({"type": "prompt", "message": "hi"})).await;
    let events = pi.until_type("agent_settled").await;
    let end = events.iter().rev().find(|e| e["type"] == "message_end").unwrap();
    let error = end["message"]["errorMessage"].as_str().unwrap_or_default();
    assert!(error.starts_with("OAuth refresh failed for anthropic: "), "{error}");
    assert!(error.ends_with("Log in again with `pi login anthropic`."), "{error}");
    assert!(events.iter().all(|e| e["type"] != "auto_retry_start"), "a refused login is not retried");
    assert!(login.sb.server().requests().is_empty(), "no model call without a valid token");
}

/// Which program refreshes first while the other wants the same login.
#[derive(Clone, Copy, PartialEq, Debug)]
enum First {
    Pi,
    PiRpc,
}

/// pi 1.6.0's refresh (its AuthStorage lock and pi-ai's refresh, driven from
/// node) and a pi-rpc prompt need the same expired login: the second waits
/// for the first's lock, reads the file again and uses what it wrote.
async fn race_pi_refresh(first: First) {
    let Some(node) = node22() else { return };
    let Some(reference) = installed_tool("reference") else { return };
    let login = Login::new().await;
    login.store("anthropic", -1_000);
    // The first refresh is slow: the other program comes while it holds the lock.
    login.fake.set_refresh_delay(Duration::from_millis(1_500));
    let mut theirs = tokio::process::Command::new(node);
    theirs.arg(repo_root().join("tests/oauth/pi_refresh.mjs")).arg(&reference).arg(login.auth_path()).arg("anthropic");
    theirs
        .env("PI_RPC_ORIGIN_OVERRIDES", crate::harness::origin_overrides(&login.fake.overrides()))
        .env("PI_CODING_AGENT_DIR", login.sb.agent_dir.path());
    theirs.kill_on_drop(true);
    let mut ours = login.rpc(&[]);
    login.sb.server().push(Reply::text("ok"));
    let refreshing = || async {
        while login.fake.refreshes("anthropic") == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let (their_out, _) = if first == First::Pi {
        let node_run = tokio::spawn(async move { theirs.output().await });
        tokio::time::timeout(Duration::from_secs(30), refreshing()).await.expect("pi refreshes");
        ours.call("p", json!({"type": "prompt", "message": "hi"})).await;
        let events = ours.until_type("agent_settled").await;
        (node_run.await.unwrap(), events)
    } else {
        ours.call("p", json!({"type": "prompt", "message": "hi"})).await;
        tokio::time::timeout(Duration::from_secs(30), refreshing()).await.expect("pi-rpc refreshes");
        let out = theirs.output().await;
        (out, ours.until_type("agent_settled").await)
    };
    let their_out = their_out.unwrap();
    assert!(their_out.status.success(), "{}", String::from_utf8_lossy(&their_out.stderr));
    let theirs: Value = serde_json::from_slice(&their_out.stdout).unwrap();
    let stored = login.auth()["anthropic"].clone();
    assert_eq!(login.fake.refreshes("anthropic"), 1, "{first:?} first: one refresh between the two programs");
    assert_eq!(theirs["access"], stored["access"], "pi ends with the stored credential");
    assert_eq!(login.bearers(), [stored["access"].as_str().unwrap()], "pi-rpc used it too");
    let spent: Vec<String> =
        login.fake.requests().iter().filter_map(|r| r.fields.get("refresh_token").cloned()).collect();
    assert!(
        !spent.contains(&stored["refresh"].as_str().unwrap().to_string()),
        "the stored refresh token is the live one"
    );
}

#[tokio::test]
async fn pi_rpc_waits_for_pi_1_6_s_refresh_under_its_lock_and_uses_it() {
    race_pi_refresh(First::Pi).await;
}

#[tokio::test]
async fn pi_1_6_waits_for_pi_rpc_s_refresh_under_the_same_lock_and_uses_it() {
    race_pi_refresh(First::PiRpc).await;
}

#[tokio::test]
async fn twenty_sessions_of_pi_serve_make_one_refresh() {
    let Some(node) = node22() else { return };
    let Some(ws) = installed_tool("ws/node_modules/ws") else { return };
    let login = Login::new().await;
    login.store("anthropic", -1_000);
    login.fake.set_refresh_delay(Duration::from_millis(500));
    login.sb.server().set_fallback(Reply::text("answered"));
    let mut cmd = login.command(&["serve", "--listen", "127.0.0.1:0"]);
    cmd.env("RUST_LOG", "info");
    let mut served = Pi::start(cmd);
    let url = served.next_line().await.expect("the address");
    let mut client = tokio::process::Command::new(node);
    client.arg(repo_root().join("tests/oauth/serve_sessions.mjs")).arg(&url).arg("20");
    client.env("PI_WS_DIR", ws.parent().unwrap().parent().unwrap()).kill_on_drop(true);
    let out =
        tokio::time::timeout(Duration::from_secs(120), client.output()).await.expect("the clients ended").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}\n{}", String::from_utf8_lossy(&out.stderr), served.stderr());
    assert_eq!(stdout.trim(), "ok 20");
    assert_eq!(login.fake.refreshes("anthropic"), 1, "one refresh for twenty sessions");
    let access = login.auth()["anthropic"]["access"].as_str().unwrap().to_string();
    let bearers = login.bearers();
    assert_eq!(bearers.len(), 20);
    assert!(bearers.iter().all(|b| *b == access), "every session used the fresh token");
}

#[tokio::test]
async fn the_json_rpc_login_method_returns_the_url_then_notifies_completion() {
    let login = Login::new().await;
    let mut pi = login.rpc(&["--protocol", "jsonrpc", "--no-session"]);
    pi.send(json!({"jsonrpc": "2.0", "id": 1, "method": "login", "params": {"provider": "anthropic"}})).await;
    let reply = pi.until(|v| v["id"] == 1).await.pop().unwrap();
    assert!(reply.get("error").is_none(), "{reply}");
    let result = &reply["result"];
    assert_eq!(
        (result["provider"].as_str(), result["method"].as_str()),
        (Some("anthropic"), Some("browser")),
        "{reply}"
    );
    let url = result["url"].as_str().unwrap();
    assert_eq!(login.fake.browse(url).await, Ok(200));
    let done = pi.until(|v| v["method"] == "loginCompleted").await.pop().unwrap();
    assert_eq!(done["params"], json!({"provider": "anthropic", "success": true}));
    assert_eq!(login.auth()["anthropic"]["type"], "oauth");
    pi.send(json!({"jsonrpc": "2.0", "id": 2, "method": "getAvailableModels"})).await;
    let models = pi.until(|v| v["id"] == 2).await.pop().unwrap();
    assert!(models.to_string().contains("claude-sonnet-4-5"), "{models}");

    pi.send(json!({"jsonrpc": "2.0", "id": 3, "method": "login", "params": {"provider": "nope"}})).await;
    let error = pi.until(|v| v["id"] == 3).await.pop().unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("Unknown login provider \"nope\""), "{error}");
}

#[tokio::test]
async fn acp_offers_the_logins_and_authenticate_runs_one() {
    let login = Login::new().await;
    let mut pi = Raw::start(login.command(&["--mode", "rpc", "--protocol", "acp"]));
    pi.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    let init = pi.until(|v| v["id"] == 1).await;
    let ids: Vec<&str> =
        init["result"]["authMethods"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
    assert!(ids.contains(&"pi-config") && ids.contains(&"login:anthropic") && ids.contains(&"login:xai"), "{ids:?}");
    pi.send(json!({"jsonrpc": "2.0", "id": 2, "method": "authenticate", "params": {"methodId": "login:xai"}})).await;
    let done = pi.until(|v| v["id"] == 2).await;
    assert_eq!(done["result"], json!({}), "{done}");
    assert!(login.auth()["xai"]["access"].as_str().unwrap().starts_with("xai-access-"));
}

#[tokio::test]
async fn a_login_made_while_a_session_runs_counts_at_its_next_prompt() {
    let login = Login::new().await;
    let mut pi = login.rpc(&["--model", "anthropic/claude-sonnet-4-5"]);
    let refused = pi.call("p1", json!({"type": "prompt", "message": "hi"})).await;
    assert_eq!(refused["success"], false, "no credential yet: {refused}");
    assert!(refused["error"].as_str().unwrap_or_default().contains("No API key"), "{refused}");
    // pi (or `pi login` in another terminal) logs in meanwhile.
    let cred = login.store("anthropic", 60 * 60 * 1000);
    login.sb.server().push(Reply::text("now logged in"));
    pi.call("p2", json!({"type": "prompt", "message": "hi again"})).await;
    pi.until_type("agent_settled").await;
    assert_eq!(login.bearers(), [cred["access"].as_str().unwrap()]);
}
