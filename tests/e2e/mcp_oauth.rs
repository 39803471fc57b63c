//! OAuth for remote MCP servers, pi-rpc and pi 1.6.0 side by side: a real
//! MCP server (server-everything over streamable HTTP) behind the fake OAuth
//! server's guard (`FakeOAuth::guard_mcp`), which accepts only the access
//! tokens it issued and publishes RFC 9728 / RFC 8414 metadata on 127.0.0.1.
//! Covered: credentials pi keeps in `mcp-auth.json` are used, and after a
//! 401 the stored refresh token is, the new tokens written back; a server
//! without credentials is reported as needing sign-in (start-up warning,
//! `/mcp`, a tool call) as pi reports it.
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, result, result_text, results, start_http_everything, write_mcp};

/// The server's name in `mcp.json`, and its key in `mcp-auth.json`.
const SERVER: &str = "remote";

/// A sandbox whose `mcp.json` names the guarded server, with pi's stored
/// credentials for it when `state` is given.
fn guarded_sandbox(sb: &Sandbox, oauth: &FakeOAuth, state: Option<Value>) {
    write_mcp(sb, json!({SERVER: {"url": oauth.mcp_url(), "exposure": "direct"}}));
    if let Some(state) = state {
        let key = format!("mcp__{SERVER}|{}", oauth.mcp_url());
        std::fs::write(auth_path(sb), json!({key: state}).to_string()).unwrap();
    }
}

fn auth_path(sb: &Sandbox) -> std::path::PathBuf {
    sb.agent_dir.path().join("mcp-auth.json")
}

fn stored(sb: &Sandbox) -> Value {
    let key = format!("mcp__{SERVER}|");
    let all: Value =
        serde_json::from_str(&std::fs::read_to_string(auth_path(sb)).unwrap_or_default()).unwrap_or_default();
    all.as_object()
        .and_then(|m| m.iter().find(|(k, _)| k.starts_with(&key)).map(|(_, v)| v.clone()))
        .unwrap_or_default()
}

/// pi-rpc, or pi 1.6.0 (None when it is not installed).
fn start(sb: &Sandbox, reference: bool) -> Option<Pi> {
    if !reference {
        return Some(sb.spawn(&["--no-session"]));
    }
    Some(spawn_reference_with(sb, &node22()?, &reference_cli()?, false))
}

/// One program's run with stored credentials whose access token the server
/// no longer accepts: what the echo tool returned and what became of the
/// stored state.
async fn refreshed_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    let before = oauth.mcp_state(chrono_ms() + 3_600_000);
    guarded_sandbox(&sb, &oauth, Some(before.clone()));
    oauth.reject_access_tokens();
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"signed in"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    let after = stored(&sb);
    let expires_later = after["tokensExpireAt"].as_i64().unwrap_or(0) > chrono_ms();
    Some(json!({
        "echo": result_text(result(&rs, "c1")),
        "refreshes": oauth.refreshes("mcp"),
        "access token replaced": after["tokens"]["access_token"] != before["tokens"]["access_token"],
        "refresh token rotated": after["tokens"]["refresh_token"] != before["tokens"]["refresh_token"],
        "client kept": after["clientInformation"] == before["clientInformation"],
        "scope": after["tokens"]["scope"],
        "expiry from expires_in": expires_later,
        "server url": after["serverUrl"] == json!(oauth.mcp_url()),
    }))
}

fn chrono_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

#[tokio::test]
async fn stored_credentials_are_used_and_refreshed_after_a_401_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = refreshed_run(&srv, false).await.unwrap();
    assert_eq!(
        ours,
        json!({"echo": "Echo: signed in", "refreshes": 1, "access token replaced": true, "refresh token rotated": true,
               "client kept": true, "scope": "mcp", "expiry from expires_in": true, "server url": true}),
        "pi-rpc"
    );
    if let Some(theirs) = refreshed_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// One program's view of a server it has no credentials for: the start-up
/// warning, `/mcp`'s status, and the error of a call to its tool.
async fn unsigned_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    guarded_sandbox(&sb, &oauth, None);
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
    let warning = lines.last().map(|v| v["message"].clone()).unwrap_or_default();
    pi.send(json!({"id": "m", "type": "prompt", "message": "/mcp"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "info").await;
    let status = lines.last().map(|v| v["message"].clone()).unwrap_or_default();
    Some(json!({"warning": warning, "status": status, "stored": auth_path(&sb).exists() && stored(&sb) != Value::Null}))
}

#[tokio::test]
async fn a_server_without_credentials_needs_sign_in_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = unsigned_run(&srv, false).await.unwrap();
    assert_eq!(
        ours,
        json!({
            "warning": "MCP servers need attention:\n  remote: needs sign-in\nRun /mcp to fix.",
            "status": "remote: needs sign-in, run /mcp login remote (direct)",
            "stored": false,
        }),
        "pi-rpc"
    );
    if let Some(theirs) = unsigned_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}
