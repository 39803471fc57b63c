//! The MCP servers' tools inside pi's SDK session, side by side with pi
//! 1.6.0: `createMcpExtension()` loaded in the sub-session's resource loader
//! registers the servers' tools there. `mcp.json` names server-everything
//! twice, once with the default `codemode` exposure and once `direct`. In a
//! sub-session that also has `createCodemodeExtension()`:
//! - no server tool is registered yet when `bindExtensions` returns (pi
//!   connects in the background and registers them as each server connects);
//! - the model calls the direct server's `get_sum` itself and a codemode
//!   script calls the other server's; the tools carry pi's labels
//!   (`server/tool`);
//! - the model calls the slow `trigger-long-running-operation`: its first
//!   MCP progress notification reaches the session as pi's
//!   `tool_execution_update`, whose listener aborts the session, which
//!   cancels the call (pi's abort error, not the operation's result).
//!
//! A sub-session without codemode or `tool_search` is warned at
//! `session_start` that the tools cannot be called; with `autoEnableCodemode:
//! false` in `mcp.json`, a sub-session with codemode is warned with pi's
//! reason, and so is the running session at start. An extension command notifies a JSON summary (helpers of
//! extension_sdk_runner.rs); pi-rpc's is compared with pi 1.6.0's whole.
//!
//! Needs node 22, the host's packages, server-everything and the reference
//! pi from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::start_module;
use crate::extension_sdk_services::notified_where;
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
      const mcpAtStart = session.getAllTools().filter((t: any) => t.name.startsWith("mcp__")).length;
      const updates: any[] = [];
      session.subscribe((event: any) => {
        if (event.type !== "tool_execution_update" || event.toolName !== "mcp__direct__trigger_long_running_operation") return;
        updates.push(event);
        void session.abort();
      });
      await session.prompt("sum directly");
      await session.prompt("sum in a script");
      await session.prompt("run the slow operation");
      const labels = ["mcp__direct__get_sum", "mcp__everything__get_sum", "list_mcp_resources"].map((name) => session.getToolDefinition(name)?.label ?? null);
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
      ctx.ui.notify(JSON.stringify({ errors, notes, mcpAtStart, results, updates, labels, mcpTools, active, directActive, warned, roles }), "info");
    },
  });
  pi.registerCommand("submcpwarn", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const warned: any[] = [];
      const session = await subSession(ctx, [createCodemodeExtension(), createMcpExtension()], warned, errors);
      const active = session.getActiveToolNames().sort();
      session.dispose();
      ctx.ui.notify(JSON.stringify({ errors, warned, active }), "info");
    },
  });
}
"#;

/// The script: the codemode server's `get_sum` called from codemode.
const SCRIPT: &str = r#"const sum = await tools.mcp__everything__get_sum({ a: 2, b: 3 });
text(JSON.stringify(sum));
return "done";"#;

/// The summary `/<command>` notifies in one program whose `mcp.json` names server-everything as
/// `everything` (codemode exposure) and `direct`, with `autoEnableCodemode` as given (default: unset).
async fn submcp_summary(
    reference: bool,
    servers: &Servers,
    command: &str,
    auto_enable_codemode: Option<bool>,
) -> Option<Value> {
    let setup = |sb: &Sandbox| {
        let mut direct = servers.everything("stdio");
        direct["exposure"] = json!("direct");
        write_mcp(sb, json!({"everything": servers.everything("stdio"), "direct": direct}));
        if let Some(auto) = auto_enable_codemode {
            let path = sb.agent_dir.path().join("mcp.json");
            let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            config["autoEnableCodemode"] = json!(auto);
            std::fs::write(&path, config.to_string()).unwrap();
        }
    };
    let replies = [
        Reply::tool_call("call_1", "mcp__direct__get_sum", r#"{"a":1,"b":2}"#),
        Reply::text("Summed."),
        Reply::tool_call("call_2", "codemode", &json!({ "code": SCRIPT }).to_string()),
        Reply::text("Ran."),
        Reply::tool_call("call_3", "mcp__direct__trigger_long_running_operation", r#"{"duration":5,"steps":5}"#),
    ];
    let (mut pi, sb) = start_module(reference, ("sdk-submcp.ts", SDK_SUBMCP), &replies, &setup).await?;
    // The summary comes last; the running session's own notifications (its MCP warnings) before it.
    let mut notified = notified_where(&mut pi, &sb, command, |message| message.starts_with('{')).await;
    pi.close_stdin();
    let note = notified.pop().unwrap_or_default();
    let mut summary: Value = serde_json::from_str(&note).unwrap_or_else(|e| panic!("/{command} notified {note}: {e}"));
    summary["running"] = json!(notified);
    Some(summary)
}

#[tokio::test]
async fn mcp_tools_inside_an_sdk_session_are_called_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = submcp_summary(false, &servers, "submcptools", None).await else { return };
    let Some(theirs) = submcp_summary(true, &servers, "submcptools", None).await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["mcpAtStart"], 0, "{ours}");
    assert_eq!(ours["results"][0]["name"], "mcp__direct__get_sum", "{ours}");
    assert!(ours["results"][0]["text"].to_string().contains('3'), "{ours}");
    assert!(ours["results"][1]["text"].to_string().contains('5'), "{ours}");
    assert_eq!(ours["labels"][0], "direct/get-sum", "{ours}");
    assert_eq!(ours["updates"][0]["partialResult"]["content"][0]["text"], "Progress 1/5", "{ours}");
    assert_eq!(ours["results"][2]["isError"], true, "{ours}");
    assert_eq!(ours["warned"][0][1], "warning", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_is_warned_with_pis_reason_when_auto_enable_codemode_is_false() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = submcp_summary(false, &servers, "submcpwarn", Some(false)).await else { return };
    let Some(theirs) = submcp_summary(true, &servers, "submcpwarn", Some(false)).await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert!(ours["warned"][0][0].as_str().unwrap_or_default().contains("(autoEnableCodemode is false)"), "{ours}");
    assert!(ours["running"][0].as_str().unwrap_or_default().contains("(autoEnableCodemode is false)"), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
