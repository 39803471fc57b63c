//! pi's MCP extension inside an SDK session, side by side with pi 1.6.0 (the
//! helpers of extension_sdk_submcp.rs): `createMcpExtension({ openUrl })`
//! gets the sign-in URL of `/mcp login` run in the sub-session, and the
//! sign-in completes through it; `createMcpExtension({ startupWaitMs })`
//! bounds how long the first prompt waits for a `direct` server that never
//! answers (pi's "still connecting" note); and `registerMcpServer` of the
//! sub-session's extensions is checked as pi checks it (an invalid config,
//! a name another extension took, a namespace clash, not with the
//! factory's own earlier names), the config kept with current exposure names.
//!
//! Needs node 22, the host's packages, server-everything and the reference
//! pi from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::json;

use crate::extension_sdk_submcp::command_summary;
use crate::harness::Sandbox;
use crate::mcp::{Servers, start_http_everything, write_mcp};

const SDK_SUBOPTIONS: &str = concat!(
    r#"import { createAgentSession, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const urls = (text: string) => text.replace(/https?:\/\/127\.0\.0\.1:\d+\S*/g, "<url>");
const results = (session: any) => session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
  name: m.toolName, text: m.content.map((c: any) => c.text ?? c.type), isError: m.isError,
}));
const attempt = (p: any, name: string, config: any) => {
  try { p.registerMcpServer(name, config); return "registered"; } catch (e: any) { return e.message; }
};

"#,
    sub_session_ts!(),
    r#"
export default function (pi: ExtensionAPI) {
  pi.registerCommand("subopen", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      const opened: string[] = [];
      const pages: number[] = [];
      const asked: string[] = [];
      // The browser: the fake OAuth server signs in at once and redirects to pi's loopback callback.
      const openUrl = async (url: string) => { opened.push(new URL(url).pathname); pages.push((await fetch(url)).status); };
      const input = (title: string, _placeholder: string, options: any) => {
        asked.push(title);
        return new Promise((resolve) => options?.signal?.addEventListener("abort", () => resolve(undefined)));
      };
      const session = await subSession(ctx, [createMcpExtension({ openUrl } as any)], notes, errors, { input });
      await session.prompt("/mcp login remote");
      await session.prompt("echo");
      const summary = { errors, notes: notes.map(([message, level]) => [urls(message), level]), opened, pages, asked, results: results(session) };
      session.dispose();
      ctx.ui.notify(JSON.stringify(summary), "info");
    },
  });
  pi.registerCommand("subwait", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      const session = await subSession(ctx, [createMcpExtension({ startupWaitMs: 1 } as any)], notes, errors);
      await session.prompt("hi");
      const answer = session.messages.filter((m: any) => m.role === "assistant").map((m: any) => m.content.map((c: any) => c.text));
      session.dispose();
      ctx.ui.notify(JSON.stringify({ errors, notes, answer }), "info");
    },
  });
  pi.registerCommand("subcheck", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const calls: any[] = [];
      const missing = { command: "/nonexistent/mcp-server" };
      const first = (p: any) => {
        calls.push(["first", "shared", attempt(p, "shared", missing)]);
        calls.push(["first", "my-docs", attempt(p, "my-docs", missing)]);
        // Taken too: pi checks a factory's registrations against those applied before it only.
        calls.push(["first", "one-space", attempt(p, "one-space", { ...missing, enabled: false })]);
        calls.push(["first", "one_space", attempt(p, "one_space", { ...missing, enabled: false })]);
      };
      const second = (p: any) => {
        calls.push(["second", "shared", attempt(p, "shared", missing)]);
        calls.push(["second", "my_docs", attempt(p, "my_docs", missing)]);
        calls.push(["second", "empty", attempt(p, "empty", {})]);
        calls.push(["second", "dotted.name", attempt(p, "dotted.name", missing)]);
        calls.push(["second", "sideways", attempt(p, "sideways", { ...missing, exposure: "sideways" })]);
        calls.push(["second", "tools", attempt(p, "tools", { ...missing, toolExposure: { echo: "nope" } })]);
        calls.push(["second", "slow", attempt(p, "slow", { ...missing, timeout: -1 })]);
        calls.push(["second", "old", attempt(p, "old", { ...missing, exposure: "codemode-deferred", enabled: false })]);
        p.on("session_start", () => {
          calls.push(["second", "servers", p.getMcpServers().map((s: any) => [s.name, s.config.exposure ?? null, s.extensionPath])]);
        });
      };
      const session = await subSession(ctx, [first, second], [], errors);
      session.dispose();
      ctx.ui.notify(JSON.stringify({ errors, calls }), "info");
    },
  });
}
"#
);

#[tokio::test]
async fn an_sdk_sessions_mcp_login_opens_its_mcp_extensions_open_url_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let mut summaries = Vec::new();
    for reference in [false, true] {
        let (_everything, port) = start_http_everything(&servers).await;
        let oauth = FakeOAuth::start().await.unwrap();
        oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
        let setup = |sb: &Sandbox| write_mcp(sb, json!({"remote": {"url": oauth.mcp_url(), "exposure": "direct"}}));
        let replies =
            [Reply::tool_call("call_1", "mcp__remote__echo", r#"{"message":"signed in"}"#), Reply::text("Echoed.")];
        let module = ("sdk-suboptions.ts", SDK_SUBOPTIONS);
        let Some(summary) = command_summary(reference, module, "subopen", &replies, &setup).await else { return };
        summaries.push(summary);
    }
    let (ours, theirs) = (&summaries[0], &summaries[1]);
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["opened"], json!(["/mcp-as/authorize"]), "{ours}");
    assert_eq!(ours["results"][0]["text"][0], "Echo: signed in", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_sessions_first_prompt_waits_its_mcp_extensions_startup_wait_ms_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let mut summaries = Vec::new();
    for reference in [false, true] {
        // A `direct` server that never answers `initialize`.
        let silent =
            json!({"command": servers.node, "args": ["-e", "setInterval(() => {}, 1000)"], "exposure": "direct"});
        let setup = |sb: &Sandbox| write_mcp(sb, json!({"silent": silent}));
        let module = ("sdk-suboptions.ts", SDK_SUBOPTIONS);
        let replies = [Reply::text("Answered.")];
        let Some(summary) = command_summary(reference, module, "subwait", &replies, &setup).await else { return };
        summaries.push(summary);
    }
    let (ours, theirs) = (&summaries[0], &summaries[1]);
    let still = json!(["MCP servers are still connecting; their tools become available once connected.", "info"]);
    assert_eq!(ours["notes"], json!([still]), "{ours}");
    assert_eq!(ours["answer"], json!([["Answered."]]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_sessions_mcp_registrations_are_checked_as_in_pi() {
    let mut summaries = Vec::new();
    for reference in [false, true] {
        let module = ("sdk-suboptions.ts", SDK_SUBOPTIONS);
        let Some(summary) = command_summary(reference, module, "subcheck", &[], &|_| {}).await else { return };
        summaries.push(summary);
    }
    let (ours, theirs) = (&summaries[0], &summaries[1]);
    let calls = ours["calls"].as_array().cloned().unwrap_or_default();
    let outcome = |who: &str, name: &str| {
        calls.iter().find(|c| c[0] == who && c[1] == name).map(|c| c[2].clone()).unwrap_or_default()
    };
    assert_eq!(outcome("first", "shared"), "registered", "{ours}");
    assert!(outcome("second", "shared").as_str().unwrap_or_default().contains("is already registered by"), "{ours}");
    assert!(outcome("second", "my_docs").as_str().unwrap_or_default().contains("conflicts with"), "{ours}");
    assert!(outcome("second", "empty").as_str().unwrap_or_default().starts_with("Invalid MCP server"), "{ours}");
    assert_eq!(outcome("first", "one_space"), "registered", "one factory's names of one namespace: {ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
