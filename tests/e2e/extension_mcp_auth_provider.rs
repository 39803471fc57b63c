//! `createMcpExtension({ createTransport })`'s third argument, pi's OAuth
//! `authProvider`, pi-rpc and pi 1.6.0 side by side: the extension's own
//! HTTP transport (fetch, JSON or SSE answers) asks the provider for the
//! token of each request and, after a 401, calls its `onUnauthorized`. The
//! server is server-everything behind the fake OAuth server's guard, with
//! credentials stored in `mcp-auth.json` whose access token the server no
//! longer accepts: the provider refreshes them (the new tokens written back)
//! and the retried request goes through.
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_builtin_factories::start;
use crate::extension_host::write_module;
use crate::harness::Sandbox;
use crate::mcp::{Servers, result, result_text, results, start_http_everything};
use crate::mcp_oauth::guarded_sandbox;

/// An extension whose transport speaks streamable HTTP with `fetch`,
/// authorized by the `authProvider` it is given; `/auth` tells what it saw.
const FETCH_TRANSPORT: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";

const seen: any = { unauthorized: 0, methods: [], tokens: [] };

function httpTransport(url: string, auth: any) {
  const listeners: Record<string, any[]> = { message: [], error: [], close: [] };
  const on = (kind: string) => (fn: any) => { listeners[kind].push(fn); return () => {}; };
  let session: string | undefined;
  let version: string | undefined;
  async function post(message: any, retried: boolean): Promise<void> {
    const token = await auth.token();
    if (seen.provider && !seen.tokens.includes(token)) seen.tokens.push(token);
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (session) headers["mcp-session-id"] = session;
    if (version) headers["mcp-protocol-version"] = version;
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(message) });
    if (response.status === 401 && !retried) {
      seen.unauthorized++;
      await auth.onUnauthorized({ response, serverUrl: new URL(url), fetch, token });
      return post(message, true);
    }
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    session = response.headers.get("mcp-session-id") ?? session;
    const emit = (m: any) => { for (const fn of listeners.message) fn(m); };
    if (!(response.headers.get("content-type") ?? "").includes("event-stream")) {
      const text = await response.text();
      if (text.trim()) emit(JSON.parse(text));
      return;
    }
    // Server-sent events, read until the answer to this request came.
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let at;
      let answered = false;
      while ((at = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, at).trim();
        buffer = buffer.slice(at + 1);
        if (!line.startsWith("data:") || !line.slice(5).trim()) continue;
        const m = JSON.parse(line.slice(5));
        emit(m);
        if (m.id === message.id && !m.method) answered = true;
      }
      if (answered) {
        await reader.cancel();
        return;
      }
    }
  }
  return {
    async start() {},
    async send(message: any) {
      if (message.method && !seen.methods.includes(message.method)) seen.methods.push(message.method);
      await post(message, false);
    },
    async close() { for (const fn of listeners.close) fn(); },
    setProtocolVersion(v: string) { version = v; },
    onMessage: on("message"),
    onError: on("error"),
    onClose: on("close"),
  };
}

export default function (pi: any) {
  createMcpExtension({
    createTransport: (entry: any, _cwd: string, authProvider: any) => {
      seen.token = typeof authProvider?.token;
      seen.onUnauthorized = typeof authProvider?.onUnauthorized;
      seen.settled = typeof authProvider?.settled;
      seen.provider = entry.config.auth?.provider;
      return httpTransport(entry.config.url, authProvider);
    },
  })(pi);
  pi.registerCommand("auth", {
    handler: async (_args: string, ctx: any) => ctx.ui.notify(JSON.stringify(seen), "info"),
  });
}
"#;

/// What one program's extension saw, and the echo tool's answer, after a prompt and `/auth`.
async fn echo_and_seen(sb: &Sandbox, reference: bool) -> Option<(String, Value)> {
    write_module(sb, "fetch-transport.ts", FETCH_TRANSPORT);
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"through the extension"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(sb, reference, &[])?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let echo = result_text(result(&results(&lines), "c1"));
    pi.send(json!({"id": "a", "type": "prompt", "message": "/auth"})).await;
    let notes = pi
        .until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.contains("unauthorized")))
        .await;
    let seen: Value =
        notes.last().and_then(|v| v["message"].as_str()).and_then(|m| serde_json::from_str(m).ok()).unwrap_or_default();
    Some((echo.to_string(), seen))
}

async fn auth_provider_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let before = oauth.mcp_state(now + 3_600_000);
    guarded_sandbox(&sb, &oauth, Some(before.clone()));
    oauth.reject_access_tokens();
    let (echo, seen) = echo_and_seen(&sb, reference).await?;
    let auth: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.agent_dir.path().join("mcp-auth.json")).unwrap_or_default())
            .unwrap_or_default();
    let after = auth.as_object().and_then(|m| m.values().next().cloned()).unwrap_or_default();
    Some(json!({
        "echo": echo,
        "seen": seen,
        "refreshes": oauth.refreshes("mcp"),
        "access token replaced": after["tokens"]["access_token"] != before["tokens"]["access_token"],
    }))
}

#[tokio::test]
async fn create_transport_gets_pis_oauth_auth_provider_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = auth_provider_run(&srv, false).await else { return };
    assert_eq!(ours["echo"], "Echo: through the extension", "{ours:#}");
    assert_eq!(ours["seen"]["token"], "function", "{ours:#}");
    assert_eq!(ours["refreshes"], 1, "{ours:#}");
    assert_eq!(ours["access token replaced"], true, "{ours:#}");
    if let Some(theirs) = auth_provider_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// A server with `auth.provider` (its requests carry a provider's API key):
/// the provider's key from `auth.json`, with no `onUnauthorized`.
async fn provider_token_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let sb = Sandbox::with_server().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    crate::mcp::write_mcp(
        &sb,
        json!({"remote": {"url": url, "exposure": "direct", "auth": {"provider": "anthropic"}}}),
    );
    let auth = json!({"anthropic": {"type": "api_key", "key": "sk-ant-for-the-mcp-server"}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).unwrap();
    let (echo, seen) = echo_and_seen(&sb, reference).await?;
    Some(json!({"echo": echo, "seen": seen}))
}

#[tokio::test]
async fn create_transport_gets_the_providers_token_for_an_auth_provider_server_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = provider_token_run(&srv, false).await else { return };
    assert_eq!(ours["echo"], "Echo: through the extension", "{ours:#}");
    assert_eq!(ours["seen"]["tokens"], json!(["sk-ant-for-the-mcp-server"]), "{ours:#}");
    assert_eq!(ours["seen"]["onUnauthorized"], "undefined", "{ours:#}");
    if let Some(theirs) = provider_token_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}
