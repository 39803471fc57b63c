//! The MCP servers' tools inside pi's SDK session, side by side with pi
//! 1.6.0: `createMcpExtension()` loaded in the sub-session's resource loader
//! registers the servers' tools there. `mcp.json` names server-everything
//! twice, once with the default `codemode` exposure and once `direct`. In a
//! sub-session that also has `createCodemodeExtension()`, the model calls
//! the direct server's `get_sum` itself and a codemode script calls the other
//! server's; a sub-session without codemode or `tool_search` is warned at
//! `session_start` that the tools cannot be called. An extension command
//! notifies a JSON summary (helpers of extension_sdk_runner.rs); pi-rpc's is
//! compared with pi 1.6.0's whole.
//!
//! Needs node 22, the host's packages, server-everything and the reference
//! pi from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::start_module;
use crate::extension_sdk_services::notified_text;
use crate::harness::Sandbox;
use crate::mcp::{Servers, write_mcp};

const SDK_SUBMCP: &str = r#"import {
  createAgentSession, createCodemodeExtension, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const stable = (text: string) => text.replace(/Wall time [0-9.]+ seconds/g, "Wall time N seconds");

async function subSession(ctx: any, factories: any[], notes: any[], errors: string[]) {
  const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: factories } as any);
  await resourceLoader.reload();
  const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
  const ui: any = { notify: (message: string, level: string) => { notes.push([message, level ?? null]); } };
  await session.bindExtensions({ uiContext: ui, mode: "rpc", onError: (e: any) => errors.push(`${e.event}: ${e.error}`) } as any);
  return session;
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("submcptools", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      const session = await subSession(ctx, [createCodemodeExtension(), createMcpExtension()], notes, errors);
      await session.prompt("sum directly");
      await session.prompt("sum in a script");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        name: m.toolName, text: m.content.map((c: any) => stable(c.text ?? c.type)), isError: m.isError,
      }));
      const mcpTools = session.getAllTools().filter((t: any) => t.name.startsWith("mcp__")).map((t: any) => t.name).sort();
      // pi registers a server's tools whenever it connects: when that falls after the first prompt (a
      // loaded machine), a system message about them comes before the next one. Left out: timing.
      const roles = session.messages.map((m: any) => m.role).filter((role: string) => role !== "system");
      const active = session.getActiveToolNames().filter((name: string) => !name.startsWith("mcp__")).sort();
      const directActive = session.getActiveToolNames().includes("mcp__direct__get_sum");
      session.dispose();
      const warned: any[] = [];
      const alone = await subSession(ctx, [createMcpExtension()], warned, errors);
      alone.dispose();
      ctx.ui.notify(JSON.stringify({ errors, notes, results, mcpTools, active, directActive, warned, roles }), "info");
    },
  });
}
"#;

/// The script: the codemode server's `get_sum` called from codemode.
const SCRIPT: &str = r#"const sum = await tools.mcp__everything__get_sum({ a: 2, b: 3 });
text(JSON.stringify(sum));
return "done";"#;

/// `/submcptools`' summary in one program whose `mcp.json` names server-everything as `everything`
/// (codemode exposure) and `direct`.
async fn submcp_tools(reference: bool, servers: &Servers) -> Option<Value> {
    let setup = |sb: &Sandbox| {
        let mut direct = servers.everything("stdio");
        direct["exposure"] = json!("direct");
        write_mcp(sb, json!({"everything": servers.everything("stdio"), "direct": direct}));
    };
    let replies = [
        Reply::tool_call("call_1", "mcp__direct__get_sum", r#"{"a":1,"b":2}"#),
        Reply::text("Summed."),
        Reply::tool_call("call_2", "codemode", &json!({ "code": SCRIPT }).to_string()),
        Reply::text("Ran."),
    ];
    let (mut pi, sb) = start_module(reference, ("sdk-submcp.ts", SDK_SUBMCP), &replies, &setup).await?;
    let note = notified_text(&mut pi, &sb, "submcptools").await;
    pi.close_stdin();
    Some(serde_json::from_str(&note).unwrap_or_else(|e| panic!("/submcptools notified {note}: {e}")))
}

#[tokio::test]
async fn mcp_tools_inside_an_sdk_session_are_called_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = submcp_tools(false, &servers).await else { return };
    let Some(theirs) = submcp_tools(true, &servers).await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["results"][0]["name"], "mcp__direct__get_sum", "{ours}");
    assert!(ours["results"][0]["text"].to_string().contains('3'), "{ours}");
    assert!(ours["results"][1]["text"].to_string().contains('5'), "{ours}");
    assert_eq!(ours["warned"][0][1], "warning", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
