//! pi's PowerShell tool (`powershell`), side by side with pi 1.6.0: pi
//! registers it with its built-ins, inactive, on every platform, so an
//! extension's `pi.getAllTools()` and an SDK session's `getAllTools()` list
//! it in pi's place (after `bash`) with its schema and `builtin:powershell`
//! source; `pi.setActiveTools()`, an SDK session's `tools` option and
//! `setActiveToolsByName` accept it, and once active it is offered to the
//! model. Off Windows running it fails with pi's reason, also through
//! `createPowerShellTool` and `createLocalPowerShellOperations`, and
//! `getPowerShellConfig()` throws it; given operations of an extension's own,
//! `createPowerShellToolDefinition` runs the command through them. An
//! extension command notifies a JSON summary at the end of the run it starts
//! (helpers of extension_sdk_runner.rs); pi-rpc's is compared with pi 1.6.0's.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;

const POWERSHELL: &str = r#"import {
  createAgentSession, createLocalPowerShellOperations, createPowerShellTool, createPowerShellToolDefinition,
  DefaultResourceLoader, getAgentDir, getPowerShellConfig, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const failure = async (f: () => unknown) => {
  try {
    await f();
    return "ok";
  } catch (e: any) {
    return String(e?.message ?? e);
  }
};
const text = (content: any[]) => (content ?? []).map((c: any) => c.text ?? c.type).join("");
/** A tool as the registry lists it (the built-ins' descriptions are pi-rpc's own words: compat/DEVIATIONS.md). */
const listed = (t: any) => ({ name: t.name, exposure: t.exposure, parameters: t.parameters, sourceInfo: t.sourceInfo });

export default function (pi: ExtensionAPI) {
  const note: any = { results: [] };
  pi.on("tool_result", (e: any) => { note.results.push([e.toolName, e.isError, text(e.content)]); });
  pi.on("agent_end", (_e: any, ctx: any) => { ctx.ui.notify(JSON.stringify(note), "info"); });

  pi.registerCommand("ps", {
    handler: async (_args, ctx) => {
      const all = pi.getAllTools();
      note.outer = {
        names: all.map((t: any) => t.name),
        powershell: listed(all.find((t: any) => t.name === "powershell")),
        before: pi.getActiveTools(),
      };
      pi.setActiveTools([...pi.getActiveTools(), "powershell"]);
      note.outer.after = pi.getActiveTools();

      // An SDK session: listed, inactive by default; the `tools` option and setActiveToolsByName take it.
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true });
      await resourceLoader.reload();
      const { session: plain } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model } as any);
      const plainActive = plain.getActiveToolNames();
      plain.setActiveToolsByName(["read", "powershell"]);
      note.sdk = { names: plain.getAllTools().map((t: any) => t.name), active: plainActive, set: plain.getActiveToolNames() };
      plain.dispose();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, tools: ["read", "powershell"] } as any);
      note.sdk.listed = session.getAllTools().map((t: any) => t.name);
      note.sdk.chosen = session.getActiveToolNames();
      await session.prompt("run it in the sub-session");
      note.sdk.results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => [m.toolName, m.isError, text(m.content)]);
      session.dispose();

      // The factories: pi's failure off Windows, or an extension's own operations.
      const definition = createPowerShellToolDefinition(ctx.cwd, {
        operations: { exec: async (command: string, _cwd: string, { onData }: any) => { onData(Buffer.from(`remote ran ${command}\n`)); return { exitCode: 0 }; } },
      } as any);
      const ran: any = await definition.execute("ps-1", { command: "Get-Location" } as any, undefined, undefined, ctx);
      note.factories = {
        definition: { name: definition.name, label: definition.label, parameters: definition.parameters },
        operations: [text(ran.content), ran.isError ?? false, ran.structuredContent?.output, ran.structuredContent?.exit_code],
        local: await failure(() => createPowerShellTool(ctx.cwd).execute("ps-2", { command: "Get-Date" } as any)),
        localOperations: await failure(() => createLocalPowerShellOperations().exec("Get-Date", ctx.cwd, { onData: () => {} } as any)),
        config: await failure(() => getPowerShellConfig()),
      };

      // The running session's model is offered it, and its call fails as pi's does off Windows.
      pi.sendUserMessage("run it here");
    },
  });
}
"#;

#[tokio::test]
async fn pis_powershell_tool_is_registered_inactive_and_fails_off_windows_as_in_pi() {
    let call = |id: &str| Reply::tool_calls([FakeToolCall::new(id, "powershell", r#"{"command":"Get-ChildItem"}"#)]);
    let replies = [call("call_sub"), Reply::text("Sub done."), call("call_main"), Reply::text("Done.")];
    let run = |reference, command: String| {
        let replies = replies.to_vec();
        async move { run_module(reference, ("powershell.ts", POWERSHELL), &command, &replies).await }
    };
    let Some((ours, theirs)): Option<(Value, Value)> = side_by_side(run, "ps").await else { return };
    // Listed after bash, inactive until asked for; then offered to the model, which gets pi's reason.
    assert_eq!(ours["outer"]["names"][2], "powershell", "{ours}");
    assert!(!ours["outer"]["before"].as_array().is_some_and(|a| a.contains(&json!("powershell"))), "{ours}");
    assert_eq!(ours["sdk"]["chosen"], json!(["read", "powershell"]), "{ours}");
    let reason = "The powershell tool is only available on Windows.";
    assert_eq!(ours["results"], json!([["powershell", true, reason]]), "{ours}");
    assert_eq!(ours["factories"]["config"], reason, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
