//! pi's `auth.provider` on pi-rpc's own MCP HTTP connection (no extension
//! transport), pi-rpc and pi 1.6.0 side by side: server-everything over
//! streamable HTTP behind the flaky proxy (`pi_fake_oauth::flaky`), which
//! records the `Authorization` header of every request. With the provider's
//! API key in `auth.json`, every request carries it as its bearer token;
//! without a credential, requests carry none and still go through.
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_oauth::flaky::FlakyProxy;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, result, result_text, results, start_http_everything, write_mcp};
use crate::mcp_oauth::start;

/// One program's echo through a server with `auth.provider: "anthropic"`
/// (`credential`, if any, stored in `auth.json`; its OAuth origins sent to
/// `oauth` when given): the echo tool's answer and the distinct
/// `Authorization` headers the server was sent.
async fn bearer_run(
    srv: &Servers,
    reference: bool,
    credential: Option<Value>,
    oauth: Option<&FakeOAuth>,
) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let proxy = FlakyProxy::start(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"remote": {"url": proxy.url(), "exposure": "direct", "auth": {"provider": "anthropic"}}}));
    if let Some(credential) = credential {
        let auth = json!({ "anthropic": credential });
        std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).unwrap();
    }
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"with the provider's key"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = match oauth {
        Some(oauth) => start_routed(&sb, reference, &oauth.overrides())?,
        None => start(&sb, reference)?,
    };
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let echo = result_text(result(&results(&lines), "c1")).to_string();
    Some(json!({"echo": echo, "authorizations": proxy.authorizations()}))
}

/// [`start`] with every OAuth origin sent to the fake OAuth server at
/// `overrides` (pi-rpc's test hook `PI_RPC_ORIGIN_OVERRIDES`; pi 1.6.0
/// through `tests/oauth/route_fetch.mjs`).
fn start_routed(sb: &Sandbox, reference: bool, overrides: &str) -> Option<Pi> {
    let overrides = crate::harness::origin_overrides(overrides);
    if !reference {
        return Some(sb.spawn_with_env(&["--no-session"], &[("PI_RPC_ORIGIN_OVERRIDES", Path::new(&overrides))]));
    }
    let (node, cli) = (crate::clients::node22()?, crate::extension_provider_events::reference_cli()?);
    // `reference_command` preloads `route_fetch.mjs`.
    let mut cmd = crate::extension_provider_events::reference_command(sb, &node, &cli);
    cmd.arg("--no-session").env("PI_RPC_ORIGIN_OVERRIDES", overrides);
    Some(Pi::start_unchecked(cmd))
}

async fn both(credential: Option<Value>) -> Option<(Value, Option<Value>)> {
    let srv = Servers::find()?;
    let ours = bearer_run(&srv, false, credential.clone(), None).await?;
    let theirs = bearer_run(&srv, true, credential, None).await;
    if let Some(theirs) = &theirs {
        eprintln!("pi 1.6.0: {theirs:#}");
    }
    Some((ours, theirs))
}

#[tokio::test]
async fn an_auth_provider_server_gets_the_providers_key_as_its_bearer_as_in_pi() {
    let credential = json!({"type": "api_key", "key": "sk-ant-for-the-mcp-server"});
    let Some((ours, theirs)) = both(Some(credential)).await else { return };
    assert_eq!(ours["echo"], "Echo: with the provider's key", "{ours:#}");
    assert_eq!(ours["authorizations"], json!(["Bearer sk-ant-for-the-mcp-server"]), "{ours:#}");
    if let Some(theirs) = theirs {
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

#[tokio::test]
async fn an_auth_provider_server_without_a_credential_gets_no_bearer_as_in_pi() {
    let Some((ours, theirs)) = both(None).await else { return };
    assert_eq!(ours["echo"], "Echo: with the provider's key", "{ours:#}");
    assert_eq!(ours["authorizations"], json!([null]), "{ours:#}");
    if let Some(theirs) = theirs {
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// `pi mcp list` of either program with the server of [`bearer_run`] and the
/// provider's key stored: its exit code and the `Authorization` headers the
/// server was sent.
async fn list_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let proxy = FlakyProxy::start(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
    let sb = Sandbox::offline();
    write_mcp(&sb, json!({"remote": {"url": proxy.url(), "auth": {"provider": "anthropic"}}}));
    let auth = json!({"anthropic": {"type": "api_key", "key": "sk-ant-for-the-list"}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).unwrap();
    let (code, _, _) = crate::mcp_cli::pi_cli(&sb, reference, &["mcp", "list", "--json"]).await?;
    Some(json!({"code": code, "authorizations": proxy.authorizations()}))
}

#[tokio::test]
async fn pi_mcp_list_sends_the_providers_key_of_an_auth_provider_server_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = list_run(&srv, false).await else { return };
    assert_eq!(ours, json!({"code": 0, "authorizations": ["Bearer sk-ant-for-the-list"]}), "pi-rpc");
    if let Some(theirs) = list_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// An expired Anthropic login (an OAuth credential) behind `auth.provider`:
/// it is refreshed at the fake OAuth server, once, and the new access token
/// is the bearer of every request.
async fn oauth_login_run(srv: &Servers, reference: bool) -> Option<Value> {
    let oauth = FakeOAuth::start().await.expect("the fake OAuth server");
    let expired = oauth.credential("anthropic", 1_000);
    let mut run = bearer_run(srv, reference, Some(expired), Some(&oauth)).await?;
    run["refreshes"] = json!(oauth.refreshes("anthropic"));
    Some(run)
}

#[tokio::test]
async fn an_auth_provider_servers_expired_oauth_login_is_refreshed_and_its_access_token_sent_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = oauth_login_run(&srv, false).await else { return };
    // The stored login's access token was sk-ant-oat01-fake-1; its refresh issued -2.
    let expected = json!({
        "echo": "Echo: with the provider's key",
        "authorizations": ["Bearer sk-ant-oat01-fake-2"],
        "refreshes": 1,
    });
    assert_eq!(ours, expected, "pi-rpc");
    if let Some(theirs) = oauth_login_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}
