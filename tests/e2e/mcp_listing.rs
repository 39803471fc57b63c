//! The running session's `mcp_servers` system-prompt section, pi-rpc and pi
//! 1.6.0 side by side. pi's MCP extension lists every enabled server some of
//! whose tools are configured `codemode` or `deferred` (its `exposure` or a
//! `toolExposure`), whatever state the server is in (connected, failed,
//! needing sign-in) and whatever discovery tool is active, reaches it by
//! `codemode` when one of those is `codemode`, else by `tool_search`, and
//! sorts the servers by `localeCompare` (ICU's collation: `_` before `-`
//! before digits before letters, case a tertiary difference).
//!
//! `mcp.json` has `autoEnableCodemode: false` (codemode stays inactive) and
//! servers whose names sort differently bytewise and by collation: a
//! connected codemode server, a `direct` one with a `deferred` tool, a
//! `hidden` one with a `codemode` tool, failed ones, one behind the fake
//! OAuth server's guard with no credentials (needs sign-in), a `direct`-only
//! one and a disabled one (neither listed). The first request's section is
//! compared whole.
//!
//! Needs node, the MCP servers and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_submcp::section_lines;
use crate::harness::Sandbox;
use crate::mcp::{Servers, start_http_everything};
use crate::mcp_oauth::start;

/// A server command that cannot start.
fn missing_command(description: &str) -> Value {
    json!({"command": "/nonexistent/mcp-server", "description": description})
}

/// The `mcp_servers` section of one program's first request, line by line.
async fn listing_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    let described = |mut server: Value, description: &str| {
        server["description"] = json!(description);
        server
    };
    let mut alpha = described(srv.everything("stdio"), "Direct, with one deferred tool.");
    alpha["exposure"] = json!("direct");
    alpha["toolExposure"] = json!({"echo": "deferred"});
    let mut docs_v2 = missing_command("Hidden, with one codemode tool.");
    docs_v2["exposure"] = json!("hidden");
    docs_v2["toolExposure"] = json!({"get-sum": "codemode"});
    let mut docs_v1 = missing_command("Deferred, failed.");
    docs_v1["exposure"] = json!("deferred");
    let mut direct_only = missing_command("Direct only.");
    direct_only["exposure"] = json!("direct");
    let mut off = missing_command("Disabled.");
    off["enabled"] = json!(false);
    let servers = json!({
        "zeta": described(srv.everything("stdio"), "Codemode, connected."),
        "Alpha": alpha,
        "docs_v2": docs_v2,
        "docs-v1": docs_v1,
        "docs1": {"url": format!("http://127.0.0.1:{}/mcp", closed_port()), "description": "Codemode, unreachable."},
        "_private": missing_command("Codemode, failed."),
        "remote": {"url": oauth.mcp_url(), "description": "Codemode, needs sign-in."},
        "direct-only": direct_only,
        "off": off,
    });
    let config = json!({"autoEnableCodemode": false, "mcpServers": servers});
    std::fs::write(sb.agent_dir.path().join("mcp.json"), config.to_string()).unwrap();
    sb.server().set_fallback(Reply::text("ok"));
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    pi.close_stdin();
    let requests = sb.server().requests();
    let prompt = requests.first().and_then(|r| r.body["messages"][0]["content"].as_str()).unwrap_or_default();
    Some(json!(section_lines(prompt)))
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn the_running_sessions_mcp_servers_section_lists_and_sorts_servers_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = listing_run(&srv, false).await else { return };
    let expected = json!([
        "MCP servers whose tools are not declared to you. Call the tools of `codemode` servers from codemode scripts. Load the tools of `tool_search` servers with `tool_search`.",
        "- mcp___private (codemode): Codemode, failed.",
        "- mcp__Alpha (tool_search): Direct, with one deferred tool.",
        "- mcp__docs_v2 (codemode): Hidden, with one codemode tool.",
        "- mcp__docs_v1 (tool_search): Deferred, failed.",
        "- mcp__docs1 (codemode): Codemode, unreachable.",
        "- mcp__remote (codemode): Codemode, needs sign-in.",
        "- mcp__zeta (codemode): Codemode, connected.",
    ]);
    assert_eq!(ours, expected, "pi-rpc");
    let Some(theirs) = listing_run(&srv, true).await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
