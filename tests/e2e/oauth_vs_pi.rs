//! `pi login` side by side with pi 1.6.0's own `pi auth login`: each program
//! signs in to the same provider against the fake OAuth server (pi through
//! `tests/oauth/route_fetch.mjs`, which sends its hard-coded origins where
//! `PI_RPC_ORIGIN_OVERRIDES` says, under a pseudo-terminal from `script`,
//! since pi's login wants one), and the two auth.json entries must be the
//! same: the same fields in the same order, the same values but the freshly
//! minted tokens and their expiry. Device-code logins, which need no
//! browser: OpenAI Codex, GitHub Copilot, xAI, Kimi Code, Meta.
//!
//! pi's CLI installs undici's fetch at start-up (`undici.install()`), which
//! replaced a plain fetch wrapper: its logins then went to the real hosts
//! and failed ("fetch failed", exit 1). `route_fetch.mjs` now keeps its
//! wrapper in front of whatever fetch is installed.

use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::clients::repo_root;
use crate::oauth::{Login, reference};

/// What the login asks on the terminal (GitHub Copilot: the Enterprise
/// domain, blank for github.com) and how long it may take.
const INPUT: &str = "\n";
const DEADLINE: Duration = Duration::from_secs(90);

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `pi auth login <provider> --no-browser` of pi 1.6.0 in `login`'s
/// sandbox: (exit code, terminal output), or None when pi 1.6.0 or
/// `script` is not installed.
async fn pi_1_6_login(login: &Login, provider: &str) -> Option<(i32, String)> {
    let (node, cli) = reference()?;
    let script = ["/usr/bin/script", "/bin/script"].into_iter().find(|p| std::path::Path::new(p).exists())?;
    let preload = format!("file://{}", repo_root().join("tests/oauth/route_fetch.mjs").display());
    let line = format!(
        "{} --import {} {} auth login {} --no-browser",
        quote(&node.to_string_lossy()),
        quote(&preload),
        quote(&cli.to_string_lossy()),
        quote(provider)
    );
    let mut cmd = tokio::process::Command::new(script);
    cmd.args(["-qefc", &line, "/dev/null"]).current_dir(login.sb.cwd.path()).env_clear();
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("TERM", "dumb");
    cmd.env("HOME", login.sb.home.path()).env("PI_CODING_AGENT_DIR", login.sb.agent_dir.path());
    cmd.env("PI_RPC_ORIGIN_OVERRIDES", crate::harness::origin_overrides(&login.fake.overrides()))
        .env("BROWSER", "none");
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().ok()?;
    // stdin stays open until pi ends: an end of input would be a ^D on the terminal.
    let mut stdin = child.stdin.take()?;
    stdin.write_all(INPUT.as_bytes()).await.ok()?;
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output()).await.expect("pi 1.6.0 logged in").ok()?;
    drop(stdin);
    Some((out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).replace('\r', "")))
}

/// `pi login <provider> --no-browser` of pi-rpc: (exit code, output).
async fn pi_rpc_login(login: &Login, provider: &str) -> (i32, String) {
    let mut cmd = login.command(&["login", provider, "--no-browser"]);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    cmd.stderr(std::process::Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn pi");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(INPUT.as_bytes()).await.unwrap();
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output()).await.expect("pi-rpc logged in").unwrap();
    drop(stdin);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// Fields whose values are minted per login (compared by kind only).
fn minted(field: &str) -> bool {
    matches!(field, "access" | "refresh" | "expires")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The two stored credentials are the same login.
fn assert_same_login(provider: &str, theirs: &Value, ours: &Value) {
    let fields = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    assert_eq!(fields(ours), fields(theirs), "{provider}: the same fields in pi's order\npi: {theirs}\npi-rpc: {ours}");
    for (field, their_value) in theirs.as_object().unwrap() {
        let our_value = &ours[field];
        if minted(field) {
            assert_eq!(kind(our_value), kind(their_value), "{provider}.{field}\npi: {theirs}\npi-rpc: {ours}");
        } else {
            assert_eq!(our_value, their_value, "{provider}.{field}\npi: {theirs}\npi-rpc: {ours}");
        }
    }
    if let (Some(a), Some(b)) = (theirs["expires"].as_i64(), ours["expires"].as_i64()) {
        assert!((a - b).abs() < 120_000, "{provider}: the same expiry (pi {a}, pi-rpc {b})");
    }
}

async fn compare(provider: &'static str) {
    let (pi, pi_rpc) = (Login::new().await, Login::new().await);
    let (theirs, ours) = tokio::join!(pi_1_6_login(&pi, provider), pi_rpc_login(&pi_rpc, provider));
    let Some((code, output)) = theirs else { return };
    assert_eq!(code, 0, "pi 1.6.0 logs in to {provider}:\n{output}");
    assert_eq!(ours.0, 0, "pi-rpc logs in to {provider}:\n{}", ours.1);
    let (theirs, ours) = (pi.auth(), pi_rpc.auth());
    assert_same_login(provider, &theirs[provider], &ours[provider]);
    let text = |login: &Login| std::fs::read_to_string(login.auth_path()).unwrap();
    let indent = |t: &str| t.lines().map(|l| l.len() - l.trim_start().len()).collect::<Vec<_>>();
    assert_eq!(indent(&text(&pi_rpc)), indent(&text(&pi)), "the file laid out as pi lays it out");

    // Each program uses the other's login: pi-rpc lists pi's as logged in.
    let (code, out, err) = pi.sb.run(&["login", "--list"], "").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with(provider) && l.ends_with("logged in")), "{out}");
}

#[tokio::test]
async fn openai_codex_device_code_login_stores_what_pi_1_6_stores() {
    compare("openai-codex").await;
}

#[tokio::test]
async fn github_copilot_login_stores_what_pi_1_6_stores() {
    compare("github-copilot").await;
}

#[tokio::test]
async fn xai_login_stores_what_pi_1_6_stores() {
    compare("xai").await;
}

#[tokio::test]
async fn kimi_code_login_stores_what_pi_1_6_stores() {
    compare("kimi-coding").await;
}

#[tokio::test]
async fn meta_login_stores_what_pi_1_6_stores() {
    compare("meta").await;
}
