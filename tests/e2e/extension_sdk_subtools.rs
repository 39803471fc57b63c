//! pi's `tool_search` inside an SDK session, side by side with pi 1.6.0:
//! `createToolSearchExtension()` loaded in the sub-session searches that
//! session's tools of `deferred` / `codemode` exposure not active yet
//! (pi-rpc's own ranking, through the `lib` request `toolSearch`) and
//! activates the matches, so the next request offers them. An extension
//! command notifies a JSON summary (helpers of extension_sdk_runner.rs);
//! pi-rpc's is compared with pi 1.6.0's whole.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::json;

use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;

const SDK_SUBTOOLS: &str = r#"import {
  createAgentSession, createToolSearchExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("searched", {
    handler: async (_args, ctx) => {
      const deferred = (sub: ExtensionAPI) => {
        for (const [name, description] of [["weather_forecast", "Forecasts the weather of a city"], ["stock_quote", "Quotes a stock price"]]) {
          sub.registerTool({ name, label: name, description, parameters: Type.Object({}), exposure: "deferred",
            execute: async () => ({ content: [{ type: "text", text: name }], details: {} }) } as any);
        }
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [createToolSearchExtension(), deferred] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      const errors: string[] = [];
      await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
      session.setActiveToolsByName(["tool_search"]);
      const results: any[] = [];
      session.subscribe((e: any) => { if (e.type === "tool_execution_end") results.push([e.toolName, e.isError, e.result.content.map((c: any) => c.text), e.result.details]); });
      await session.prompt("what is the weather");
      ctx.ui.notify(JSON.stringify({ errors, results, active: session.getActiveToolNames(), roles: session.messages.map((m: any) => m.role) }), "info");
      session.dispose();
    },
  });
}
"#;

#[tokio::test]
async fn tool_search_inside_an_sdk_session_loads_its_deferred_tools_as_in_pi() {
    let replies = [Reply::tool_call("call_1", "tool_search", r#"{"query":"weather forecast"}"#), Reply::text("Sunny.")];
    let module = ("sdk-subtools.ts", SDK_SUBTOOLS);
    let run = |reference, command: String| {
        let replies = replies.clone();
        async move { run_module(reference, module, &command, &replies).await }
    };
    let Some((ours, theirs)) = side_by_side(run, "searched").await else { return };
    // The match loaded and offered from the next request on; the other deferred tool not.
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["results"][0][0], "tool_search", "{ours}");
    assert_eq!(ours["results"][0][1], false, "{ours}");
    assert_eq!(ours["results"][0][3], json!({"loaded": ["weather_forecast"]}), "{ours}");
    assert_eq!(ours["active"], json!(["tool_search", "weather_forecast"]), "{ours}");
    assert_eq!(ours["offered"][1], json!(["tool_search", "weather_forecast"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
