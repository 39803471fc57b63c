//! pi 1.6.0's retries of MCP HTTP requests, pi-rpc and pi side by side:
//! server-everything over streamable HTTP behind the flaky proxy
//! (`pi_fake_oauth::flaky`), which fails the requests it is told to fail and
//! records every request. Connecting is tried three times after network
//! errors and 408/429/5xx (not 501), a resource read twice after such a
//! status, a tool call once; the last failure reads as pi's. What each
//! program did is read from the proxy's record, never from a clock.
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::flaky::{Failure, FlakyProxy};
use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::extension_host::write_module;
use crate::harness::Sandbox;
use crate::mcp::{Servers, result, result_text, results, start_http_everything, write_mcp};
use crate::mcp_oauth::start;

/// A sandbox whose `mcp.json` names the server behind `proxy` as `remote`.
async fn sandbox_behind(proxy: &FlakyProxy) -> Sandbox {
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"remote": {"url": proxy.url(), "exposure": "direct"}}));
    sb
}

/// One program's start against a proxy that fails the first requests as
/// `failures` say (through `extension`'s transport when given): the echo
/// tool's answer, or the start-up warning when the server could not be
/// reached; and the requests the proxy saw until then.
async fn connect_run(
    srv: &Servers,
    reference: bool,
    failures: &[(usize, Failure)],
    reached: bool,
    extension: Option<&str>,
) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let proxy = FlakyProxy::start(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
    for (count, failure) in failures {
        proxy.fail_next(*count, *failure);
    }
    let sb = sandbox_behind(&proxy).await;
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"again"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = match extension {
        Some(source) => {
            write_module(&sb, "fetch-transport.ts", source);
            crate::extension_builtin_factories::start(&sb, reference, &[])?
        }
        None => start(&sb, reference)?,
    };
    if reached {
        pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
        let lines = pi.until_type("agent_settled").await;
        let echo = result_text(result(&results(&lines), "c1"));
        let mut requests = proxy.requests();
        // Up to the initialize that went through.
        if let Some(at) = requests.iter().position(|r| r == "POST initialize") {
            requests.truncate(at + 1);
        }
        return Some(json!({"echo": echo, "requests": requests}));
    }
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
    let warning = lines.last().map(|v| v["message"].clone()).unwrap_or_default();
    Some(json!({"warning": warning, "requests": proxy.requests()}))
}

/// pi-rpc's summary is `expected`, and pi 1.6.0's (when it runs here) the same.
async fn side_by_side(srv: &Servers, failures: &[(usize, Failure)], reached: bool, expected: Value) {
    side_by_side_through(srv, None, failures, reached, expected).await;
}

/// [`side_by_side`], through `extension`'s transport when given.
async fn side_by_side_through(
    srv: &Servers,
    extension: Option<&str>,
    failures: &[(usize, Failure)],
    reached: bool,
    expected: Value,
) {
    let Some(ours) = connect_run(srv, false, failures, reached, extension).await else { return };
    assert_eq!(ours, expected, "pi-rpc");
    if let Some(theirs) = connect_run(srv, true, failures, reached, extension).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

#[tokio::test]
async fn connecting_is_tried_again_after_transient_http_failures_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let initialize = |status: u16| format!("POST initialize -> {status}");
    side_by_side(
        &srv,
        &[(2, Failure::Status(503))],
        true,
        json!({"echo": "Echo: again", "requests": [initialize(503), initialize(503), "POST initialize"]}),
    )
    .await;
    side_by_side(
        &srv,
        &[(1, Failure::Status(429)), (1, Failure::Status(408))],
        true,
        json!({"echo": "Echo: again", "requests": [initialize(429), initialize(408), "POST initialize"]}),
    )
    .await;
    side_by_side(
        &srv,
        &[(2, Failure::Drop)],
        true,
        json!({"echo": "Echo: again", "requests": ["dropped connection", "dropped connection", "POST initialize"]}),
    )
    .await;
}

#[tokio::test]
async fn the_third_failure_or_a_501_is_reported_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let warning = |status: u16| {
        format!(
            "MCP servers need attention:\n  remote: failed: MCP HTTP request failed with status {status}\nRun /mcp to fix."
        )
    };
    side_by_side(
        &srv,
        &[(3, Failure::Status(503))],
        false,
        json!({"warning": warning(503), "requests": ["POST initialize -> 503", "POST initialize -> 503", "POST initialize -> 503"]}),
    )
    .await;
    // 501 (Not Implemented) is not worth another attempt; neither is a 4xx.
    side_by_side(
        &srv,
        &[(1, Failure::Status(501)), (2, Failure::Status(503))],
        false,
        json!({"warning": warning(501), "requests": ["POST initialize -> 501"]}),
    )
    .await;
    side_by_side(
        &srv,
        &[(1, Failure::Status(400)), (2, Failure::Status(503))],
        false,
        json!({"warning": warning(400), "requests": ["POST initialize -> 400"]}),
    )
    .await;
}

/// One program's session where, once connected, a tool call (answered
/// `c2_failure`) and then a resource read (503) fail once each.
async fn calls_run(srv: &Servers, reference: bool, c2_failure: Failure) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let proxy = FlakyProxy::start(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
    let sb = sandbox_behind(&proxy).await;
    let read = r#"{"server":"remote","uri":"demo://resource/dynamic/text/1"}"#;
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"one"}"#));
    sb.server().push(Reply::text("ok"));
    sb.server().push(Reply::tool_call("c2", "mcp__remote__echo", r#"{"message":"two"}"#));
    sb.server().push(Reply::text("ok"));
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c3", "read_mcp_resource", read)]));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference)?;
    let mut summary = serde_json::Map::new();
    for (n, id) in ["c1", "c2", "c3"].into_iter().enumerate() {
        match id {
            "c2" => proxy.fail_next_of("tools/call", 1, c2_failure),
            "c3" => proxy.fail_next_of("resources/read", 1, Failure::Status(503)),
            _ => {}
        }
        pi.send(json!({"id": format!("p{n}"), "type": "prompt", "message": id})).await;
        let lines = pi.until_type("agent_settled").await;
        let rs = results(&lines);
        let r = result(&rs, id);
        let text = result_text(r);
        let text = if id == "c3" { json!(text.contains("Resource 1")) } else { json!(text) };
        summary.insert(id.to_string(), json!({"isError": r["isError"], "text": text}));
    }
    let requests: Vec<String> =
        proxy.requests().into_iter().filter(|r| r.contains("tools/call") || r.contains("resources/read")).collect();
    summary.insert("requests".into(), json!(requests));
    Some(Value::Object(summary))
}

#[tokio::test]
async fn a_resource_read_is_sent_again_after_a_503_and_a_tool_call_is_not_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = calls_run(&srv, false, Failure::Status(503)).await.unwrap();
    assert_eq!(
        ours,
        json!({
            "c1": {"isError": false, "text": "Echo: one"},
            "c2": {"isError": true, "text": "MCP HTTP request failed with status 503"},
            "c3": {"isError": false, "text": true},
            "requests": ["POST tools/call", "POST tools/call -> 503", "POST resources/read -> 503", "POST resources/read"],
        }),
        "pi-rpc"
    );
    if let Some(theirs) = calls_run(&srv, true, Failure::Status(503)).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// pi quotes the start of a refused request's body after its status,
/// whatever the status (429 and non-JSON 5xx included) and type.
#[tokio::test]
async fn the_answers_body_is_quoted_after_the_status_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let warning = "MCP servers need attention:\n  remote: failed: MCP HTTP request failed with status 503: the upstream is down\nRun /mcp to fix.";
    side_by_side(
        &srv,
        &[(3, Failure::Answer(503, "the upstream is down\n"))],
        false,
        json!({"warning": warning, "requests": ["POST initialize -> 503", "POST initialize -> 503", "POST initialize -> 503"]}),
    )
    .await;
    let ours = calls_run(&srv, false, Failure::Answer(429, "slow down, please")).await.unwrap();
    assert_eq!(
        ours["c2"],
        json!({"isError": true, "text": "MCP HTTP request failed with status 429: slow down, please"})
    );
    if let Some(theirs) = calls_run(&srv, true, Failure::Answer(429, "slow down, please")).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// An extension whose `createTransport` speaks streamable HTTP with `fetch`
/// (the shared test transport) and throws pi-mcp's `McpHttpError` for a
/// refused request; fetch throws a `TypeError` when the connection drops.
/// `probe`, when set, is what the transport's `start()` does.
const THROWING_TRANSPORT: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";

const probe: ((url: string) => Promise<void>) | undefined = undefined;
const refused = (response: Response, body: string) => {
  const { McpHttpError } = piMcp();
  return new McpHttpError(response.status, `the proxy answered ${response.status}${body ? `: ${body}` : ""}`);
};

export default createMcpExtension({
  createTransport: (entry: any) => fetchTransport(entry.config.url, { refused, start: () => probe?.(entry.config.url) ?? Promise.resolve() }),
});
"#;

/// [`THROWING_TRANSPORT`] after the shared transport (pi 1.6.0's pi-mcp named).
fn throwing_transport() -> String {
    crate::mcp_fetch_transport::with_fetch_transport(THROWING_TRANSPORT)
}

/// pi retries connecting through an extension's transport as through its
/// own, when the transport threw pi-mcp's HTTP error of a transient status
/// or fetch's `TypeError`; the failure is then what the transport threw.
#[tokio::test]
async fn an_extensions_transport_is_retried_after_pi_mcps_http_errors_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let source = throwing_transport();
    let initialize = |status: u16| format!("POST initialize -> {status}");
    side_by_side_through(
        &srv,
        Some(&source),
        &[(2, Failure::Answer(503, "busy"))],
        true,
        json!({"echo": "Echo: again", "requests": [initialize(503), initialize(503), "POST initialize"]}),
    )
    .await;
    side_by_side_through(
        &srv,
        Some(&source),
        &[(2, Failure::Drop)],
        true,
        json!({"echo": "Echo: again", "requests": ["dropped connection", "dropped connection", "POST initialize"]}),
    )
    .await;
    let warning = |text: &str| format!("MCP servers need attention:\n  remote: failed: {text}\nRun /mcp to fix.");
    side_by_side_through(
        &srv,
        Some(&source),
        &[(3, Failure::Answer(502, "still busy"))],
        false,
        json!({"warning": warning("the proxy answered 502: still busy"), "requests": [initialize(502), initialize(502), initialize(502)]}),
    )
    .await;
    side_by_side_through(
        &srv,
        Some(&source),
        &[(1, Failure::Status(400)), (2, Failure::Status(503))],
        false,
        json!({"warning": warning("the proxy answered 400"), "requests": [initialize(400)]}),
    )
    .await;
}

/// A `start()` for [`THROWING_TRANSPORT`] that asks the server first (a GET
/// the proxy records) and throws pi-mcp's HTTP error after a 5xx; fetch
/// throws a `TypeError` when the connection drops.
const PROBING_START: &str = r#"const probe = async (url: string) => {
  const response = await fetch(url, { method: "GET", headers: { accept: "text/event-stream" } });
  await response.body?.cancel();
  if (response.status >= 500) {
    const { McpHttpError } = piMcp();
    throw new McpHttpError(response.status, `the probe got ${response.status}`);
  }
};"#;

/// pi retries connecting when the extension's transport's `start()` throws
/// pi-mcp's HTTP error of a transient status or fetch's `TypeError`, as
/// when `send` throws; the failure is then what `start()` threw.
#[tokio::test]
async fn an_extensions_transport_whose_start_throws_is_retried_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let source = throwing_transport()
        .replace("const probe: ((url: string) => Promise<void>) | undefined = undefined;", PROBING_START);
    side_by_side_through(
        &srv,
        Some(&source),
        &[(2, Failure::Status(503))],
        true,
        json!({"echo": "Echo: again", "requests": ["GET -> 503", "GET -> 503", "GET", "POST initialize"]}),
    )
    .await;
    side_by_side_through(
        &srv,
        Some(&source),
        &[(2, Failure::Drop)],
        true,
        json!({"echo": "Echo: again", "requests": ["dropped connection", "dropped connection", "GET", "POST initialize"]}),
    )
    .await;
    let warning = |text: &str| format!("MCP servers need attention:\n  remote: failed: {text}\nRun /mcp to fix.");
    side_by_side_through(
        &srv,
        Some(&source),
        &[(3, Failure::Status(502))],
        false,
        json!({"warning": warning("the probe got 502"), "requests": ["GET -> 502", "GET -> 502", "GET -> 502"]}),
    )
    .await;
    side_by_side_through(
        &srv,
        Some(&source),
        &[(1, Failure::Status(501)), (2, Failure::Status(503))],
        false,
        json!({"warning": warning("the probe got 501"), "requests": ["GET -> 501"]}),
    )
    .await;
}
