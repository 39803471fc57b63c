//! pi 1.6.0's MCP client when the server no longer knows the session, and
//! when an extension's transport says the server wants authentication,
//! pi-rpc and pi side by side: server-everything over streamable HTTP behind
//! the flaky proxy (`pi_fake_oauth::flaky`), which ends sessions when told
//! to (every later request of an ended session is answered 404, as by a
//! server whose sessions expire) and records every request.
//!
//! A request whose session expired is sent once more in a new session: the
//! old connection is let go (not closed), the server connected again
//! (`initialize`, `notifications/initialized`, `tools/list`), whether over
//! pi-rpc's own HTTP transport or an extension's `createTransport` whose
//! `send` threw pi-mcp's `McpSessionExpiredError`. A transport that threw
//! pi-mcp's `McpAuthRequiredError` makes a server pi gives an auth provider
//! need sign-in.
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::flaky::{Failure, FlakyProxy};
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_host::write_module;
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, result, result_text, results, start_http_everything, write_mcp};

/// An extension whose `createTransport` is the shared fetch transport,
/// throwing pi-mcp's errors as pi-mcp's own transport does: 404 of a
/// session → `McpSessionExpiredError`, 401 → `McpAuthRequiredError`.
/// `/transports` tells how many it opened and how many were closed.
const SESSION_TRANSPORT: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";

const transports = { opened: 0, closed: 0 };
const refused = (response: Response, body: string, session: string | undefined) => {
  const { McpHttpError, McpSessionExpiredError, McpAuthRequiredError } = piMcp();
  if (response.status === 404 && session) return new McpSessionExpiredError(body);
  if (response.status === 401) return new McpAuthRequiredError(response, body);
  return new McpHttpError(response.status, `the proxy answered ${response.status}`);
};

export default function (pi: any) {
  createMcpExtension({
    createTransport: (entry: any) => {
      transports.opened++;
      const transport = fetchTransport(entry.config.url, { refused });
      const close = transport.close;
      transport.close = async () => {
        transports.closed++;
        await close();
      };
      return transport;
    },
  })(pi);
  pi.registerCommand("transports", {
    handler: async (_args: string, ctx: any) => ctx.ui.notify(JSON.stringify(transports), "info"),
  });
}
"#;

/// Start one program in `sb`: through [`SESSION_TRANSPORT`] when `extension`.
fn start(sb: &Sandbox, reference: bool, extension: bool) -> Option<Pi> {
    if !extension {
        return crate::mcp_oauth::start(sb, reference);
    }
    let source = crate::mcp_fetch_transport::with_fetch_transport(SESSION_TRANSPORT);
    write_module(sb, "session-transport.ts", &source);
    crate::extension_builtin_factories::start(sb, reference, &[])
}

/// The text of the next `notify` after `command`.
async fn notified(pi: &mut Pi, command: &str) -> Value {
    pi.send(json!({"id": command, "type": "prompt", "message": command})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    lines.last().map(|v| v["message"].clone()).unwrap_or_default()
}

/// Echo `id` through the server: the tool result's error flag and text.
async fn echo(pi: &mut Pi, id: &str) -> Value {
    pi.send(json!({"id": format!("p-{id}"), "type": "prompt", "message": id})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    let r = result(&rs, id);
    json!({"isError": r["isError"], "text": result_text(r)})
}

/// The proxy's record of the client's requests: without the
/// server-to-client streams (GET) and the answers to the server's own
/// requests (`roots/list`), whose timing is not the client's.
fn posts(proxy: &FlakyProxy) -> Vec<String> {
    proxy.requests().into_iter().filter(|r| !r.starts_with("GET") && !r.starts_with("POST reply")).collect()
}

/// Echo calls, four unless `end`: c1 in the first session; c2's session ends
/// at its call (started again, the call sent again); c3's ends at its call
/// and the new one at the call sent again (the call fails); c4 meets c3's
/// ended session. With `end`, c1 and c3 only, then the program's input ends
/// and its requests are read once it exited (the session that expired while
/// current is closed then).
async fn expiry_run(srv: &Servers, reference: bool, extension: bool, end: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let proxy = FlakyProxy::start(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"remote": {"url": proxy.url(), "exposure": "direct"}}));
    let calls: &[&str] = if end { &["c1", "c3"] } else { &["c1", "c2", "c3", "c4"] };
    for &id in calls {
        sb.server().push(Reply::tool_call(id, "mcp__remote__echo", &format!(r#"{{"message":"{id}"}}"#)));
        sb.server().push(Reply::text("ok"));
    }
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference, extension)?;
    let mut summary = serde_json::Map::new();
    for &id in calls {
        match id {
            "c2" => proxy.fail_next_of("tools/call", 1, Failure::ExpireSession),
            "c3" => proxy.fail_next_of("tools/call", 2, Failure::ExpireSession),
            _ => {}
        }
        summary.insert(id.to_string(), echo(&mut pi, id).await);
    }
    if end {
        pi.close_stdin();
        pi.wait().await;
    }
    summary.insert("requests".into(), json!(posts(&proxy)));
    if extension {
        summary.insert("transports".into(), notified(&mut pi, "/transports").await);
    }
    Some(Value::Object(summary))
}

/// What the server sees of each call in [`expiry_run`], and what the model reads.
fn expected_expiry() -> Value {
    let connect = ["POST initialize", "POST notifications/initialized", "POST tools/list"];
    let (call, expired) = ("POST tools/call", "POST tools/call -> 404");
    let mut requests: Vec<&str> = connect.to_vec();
    requests.push(call); // c1
    for again in [call, expired, call] {
        // c2, c3 and c4: the ended session's call, a new session, the call sent again.
        requests.push(expired);
        requests.extend(connect);
        requests.push(again);
    }
    let ok = |id: &str| json!({"isError": false, "text": format!("Echo: {id}")});
    json!({
        "c1": ok("c1"),
        "c2": ok("c2"),
        "c3": {"isError": true, "text": "MCP session expired"},
        "c4": ok("c4"),
        "requests": requests,
    })
}

async fn expiry_side_by_side(extension: bool, end: bool, mut expected: Value) {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = expiry_run(&srv, false, extension, end).await else { return };
    if extension {
        // Three sessions ended: three transports let go unclosed, three opened for the new sessions.
        expected["transports"] = json!(r#"{"opened":4,"closed":0}"#);
    }
    assert_eq!(ours, expected, "pi-rpc");
    if let Some(theirs) = expiry_run(&srv, true, extension, end).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

#[tokio::test]
async fn a_call_whose_session_expired_is_sent_again_once_in_a_new_session_as_in_pi() {
    expiry_side_by_side(false, false, expected_expiry()).await;
}

#[tokio::test]
async fn an_extensions_transport_throwing_pi_mcps_session_expired_error_is_started_again_as_in_pi() {
    expiry_side_by_side(true, false, expected_expiry()).await;
}

/// c3's new session expired too and stays the current one: when the program
/// ends, its closing client deletes that session (the server answers 404),
/// while the session let go at c3's first failure is never deleted.
#[tokio::test]
async fn a_session_that_expired_while_current_is_deleted_when_the_program_ends_as_in_pi() {
    let connect = ["POST initialize", "POST notifications/initialized", "POST tools/list"];
    let (call, expired) = ("POST tools/call", "POST tools/call -> 404");
    let mut requests: Vec<&str> = connect.to_vec();
    requests.push(call);
    requests.push(expired);
    requests.extend(connect);
    requests.extend([expired, "DELETE -> 404"]);
    let expected = json!({
        "c1": {"isError": false, "text": "Echo: c1"},
        "c3": {"isError": true, "text": "MCP session expired"},
        "requests": requests,
    });
    expiry_side_by_side(false, true, expected).await;
}

/// The server behind [`SESSION_TRANSPORT`] answers 401 (its transport throws
/// pi-mcp's `McpAuthRequiredError`) to the first `initialize` (`at_connect`)
/// or to the first tool call: the start-up warning or the call's result,
/// then `/mcp` and `/transports`. `auth` is the server's `auth` entry.
async fn auth_required_run(srv: &Servers, reference: bool, at_connect: bool, auth: Option<Value>) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let proxy = FlakyProxy::start(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
    let sb = Sandbox::with_server().await;
    let mut entry = json!({"url": proxy.url(), "exposure": "direct"});
    if let Some(auth) = auth {
        entry["auth"] = auth;
    }
    write_mcp(&sb, json!({"remote": entry}));
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"c1"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut summary = serde_json::Map::new();
    if at_connect {
        proxy.fail_next(1, Failure::Status(401));
        let mut pi = start(&sb, reference, true)?;
        pi.send(json!({"id": "s", "type": "get_state"})).await;
        let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
        summary.insert("warning".into(), lines.last().map(|v| v["message"].clone()).unwrap_or_default());
        summary.insert("mcp".into(), notified(&mut pi, "/mcp").await);
        summary.insert("transports".into(), notified(&mut pi, "/transports").await);
    } else {
        let mut pi = start(&sb, reference, true)?;
        proxy.fail_next_of("tools/call", 1, Failure::Status(401));
        summary.insert("c1".into(), echo(&mut pi, "c1").await);
        summary.insert("mcp".into(), notified(&mut pi, "/mcp").await);
        summary.insert("transports".into(), notified(&mut pi, "/transports").await);
    }
    summary.insert("requests".into(), json!(posts(&proxy)));
    Some(Value::Object(summary))
}

async fn auth_required_side_by_side(at_connect: bool, auth: Option<Value>, expected: Value) {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = auth_required_run(&srv, false, at_connect, auth.clone()).await else { return };
    for (key, value) in expected.as_object().into_iter().flatten() {
        assert_eq!(&ours[key], value, "pi-rpc's {key}: {ours:#}");
    }
    if let Some(theirs) = auth_required_run(&srv, true, at_connect, auth).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// A call refused for want of authentication: the server (one pi signs in
/// with OAuth, so pi gives it an auth provider) needs sign-in, its transport closed.
#[tokio::test]
async fn an_extensions_transport_throwing_pi_mcps_auth_required_error_makes_the_server_need_sign_in_as_in_pi() {
    let sign_in = "MCP server \"remote\" requires sign-in. Run /mcp to sign in.";
    auth_required_side_by_side(
        false,
        None,
        json!({
            "c1": {"isError": true, "text": sign_in},
            "transports": r#"{"opened":1,"closed":1}"#,
        }),
    )
    .await;
    // An `auth.provider` server is signed in to with `/login <provider>`.
    let provider = json!({"provider": "anthropic"});
    let sign_in = "MCP server \"remote\" requires sign-in. Run /login anthropic to sign in.";
    auth_required_side_by_side(false, Some(provider), json!({"c1": {"isError": true, "text": sign_in}})).await;
    // Refused at connect: the start-up warning's `needs sign-in`.
    let warning = "MCP servers need attention:\n  remote: needs sign-in\nRun /mcp to fix.";
    auth_required_side_by_side(true, None, json!({"warning": warning, "requests": ["POST initialize -> 401"]})).await;
}
