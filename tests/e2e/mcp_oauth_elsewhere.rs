//! A sign-in made by another process, pi-rpc and pi 1.6.0 side by side: a
//! session starts against a real MCP server (server-everything) behind the
//! fake OAuth server's guard with no credentials, so the server needs
//! sign-in; then `pi mcp login` of the same program runs in its own process
//! and stores tokens in `mcp-auth.json`. At the next `turn_start` the
//! session connects the server again, as pi does: calls to its tools work
//! in that turn, and they are offered from the next turn's request on (pi
//! took the turn's tools before `turn_start`).
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::Sandbox;
use crate::mcp::{Servers, result, result_text, results, start_http_everything, tool_names};
use crate::mcp_oauth::{cli_sign_in, guarded_sandbox, start};

async fn signed_in_elsewhere_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    guarded_sandbox(&sb, &oauth, None);
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"signed in elsewhere"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
    let warning = lines.last().map(|v| v["message"].clone()).unwrap_or_default();
    let login = cli_sign_in(&sb, &oauth, reference).await?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let offered = |n: usize| tool_names(&sb.server().requests()[n].body).iter().any(|t| t == "mcp__remote__echo");
    pi.send(json!({"id": "m", "type": "prompt", "message": "/mcp"})).await;
    let status = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "info").await;
    Some(json!({
        "warning": warning,
        "login exit": login["exit"],
        "echo offered in that turn's request": offered(0),
        "echo offered in the next turn's": offered(1),
        "echo": result_text(result(&results(&lines), "c1")),
        "status": status.last().map(|v| v["message"].clone()).unwrap_or_default(),
    }))
}

#[tokio::test]
async fn a_sign_in_by_another_process_is_picked_up_at_the_next_turn_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = signed_in_elsewhere_run(&srv, false).await.unwrap();
    assert_eq!(
        ours,
        json!({
            "warning": "MCP servers need attention:\n  remote: needs sign-in\nRun /mcp to fix.",
            "login exit": 0,
            "echo offered in that turn's request": false,
            "echo offered in the next turn's": true,
            "echo": "Echo: signed in elsewhere",
            "status": "remote: connected, 14 tools (direct)",
        }),
        "pi-rpc"
    );
    if let Some(theirs) = signed_in_elsewhere_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}
