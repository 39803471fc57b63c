//! `createMcpExtension({ createTransport })`'s third argument, pi's OAuth
//! `authProvider`, pi-rpc and pi 1.6.0 side by side: the extension's own
//! HTTP transport (fetch, JSON or SSE answers) asks the provider for the
//! token of each request and, after a 401, calls its `onUnauthorized`. The
//! server is server-everything behind the fake OAuth server's guard, with
//! credentials stored in `mcp-auth.json` whose access token the server no
//! longer accepts: the provider refreshes them (the new tokens written back;
//! `settled()` waits for that) and the retried request goes through.
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

/// An extension whose transport (the shared test transport over `fetch`) is
/// authorized by the `authProvider` it is given; `/auth` tells what it saw.
/// After a 401 it calls `onUnauthorized` and, without waiting for it,
/// `settled()`, then notes whether the stored access token (in `AUTH_FILE`)
/// had been replaced by then: pi's `settled()` waits for the refresh.
const FETCH_TRANSPORT: &str = r#"import { readFileSync } from "node:fs";
import { createMcpExtension } from "@earendil-works/pi-coding-agent";

const seen: any = { unauthorized: 0, methods: [], tokens: [] };

function storedAccessToken(): string | undefined {
  try {
    const state: any = Object.values(JSON.parse(readFileSync("AUTH_FILE", "utf8")))[0];
    return state?.tokens?.access_token;
  } catch {
    return undefined;
  }
}

function httpTransport(url: string, auth: any) {
  return fetchTransport(url, {
    token: async () => {
      const token = await auth.token();
      if (seen.provider && !seen.tokens.includes(token)) seen.tokens.push(token);
      return token;
    },
    unauthorized: async (response: Response, token: string | undefined) => {
      seen.unauthorized++;
      const refreshing = auth.onUnauthorized({ response, serverUrl: new URL(url), fetch, token });
      await auth.settled();
      seen.replacedWhenSettled = storedAccessToken() !== token;
      await refreshing;
    },
    sending: (message: any) => {
      if (message.method && !seen.methods.includes(message.method)) seen.methods.push(message.method);
    },
  });
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
    let auth_file = sb.agent_dir.path().join("mcp-auth.json").display().to_string();
    let source = crate::mcp_fetch_transport::with_fetch_transport(FETCH_TRANSPORT).replace("AUTH_FILE", &auth_file);
    write_module(sb, "fetch-transport.ts", &source);
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
    // A refresh that takes a while: `settled()` must wait for it.
    oauth.set_refresh_delay(std::time::Duration::from_millis(500));
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

/// The provider refreshes the stored tokens after a 401, and its
/// `settled()` returns once that refresh is over (the new access token stored).
#[tokio::test]
async fn create_transport_gets_pis_oauth_auth_provider_whose_settled_waits_for_the_refresh_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = auth_provider_run(&srv, false).await else { return };
    assert_eq!(ours["echo"], "Echo: through the extension", "{ours:#}");
    assert_eq!(ours["seen"]["token"], "function", "{ours:#}");
    assert_eq!(ours["seen"]["replacedWhenSettled"], true, "{ours:#}");
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
