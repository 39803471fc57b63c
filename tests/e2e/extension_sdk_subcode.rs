//! pi's `codemode` and `/mcp` inside an SDK session, side by side with pi
//! 1.6.0: `createCodemodeExtension()` / `createMcpExtension()` loaded in the
//! sub-session's resource loader. The script runs in pi-rpc's codemode and
//! its nested calls run the sub-session's tools (a built-in `read`, an
//! extension tool, one that throws, one a `tool_call` handler blocks)
//! through the sub-session's pipeline, two calls of a sequential tool one
//! after the other; `store()` / `load()` keep values on
//! the sub-session's branch. `/mcp` prompted in the sub-session answers
//! through its UI as the running session's `/mcp` answers (server-everything
//! in `mcp.json`). An extension
//! command notifies a JSON summary (helpers of extension_sdk_runner.rs);
//! pi-rpc's is compared with pi 1.6.0's whole.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::{run_module, start_module};
use crate::extension_sdk_services::{notified_text, side_by_side};
use crate::harness::Sandbox;
use crate::mcp::{Servers, write_mcp};

const SDK_SUBCODE: &str = r#"import {
  createAgentSession, createCodemodeExtension, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import * as fs from "node:fs";
import * as path from "node:path";

const withoutTimes = (value: any): any => JSON.parse(JSON.stringify(value ?? null, (k, v) => (k === "durationMs" ? undefined : v)));
const stable = (text: string) => text.replace(/Wall time [0-9.]+ seconds/g, "Wall time N seconds");

export default function (pi: ExtensionAPI) {
  pi.registerCommand("scripted", {
    handler: async (_args, ctx) => {
      fs.writeFileSync(path.join(ctx.cwd, "notes.txt"), "alpha\nbeta\n");
      const hooks: any[] = [];
      const own = (sub: ExtensionAPI) => {
        sub.registerTool({ name: "shout", label: "shout", description: "Shouts a text", parameters: Type.Object({ text: Type.String() }),
          execute: async (_id: string, p: any) => ({ content: [{ type: "text", text: String(p.text).toUpperCase() }], details: { shouted: true } }) } as any);
        sub.registerTool({ name: "fails", label: "fails", description: "Always fails", parameters: Type.Object({}),
          execute: async () => { throw new Error("no luck"); } } as any);
        sub.registerTool({ name: "alone", label: "alone", description: "Runs alone", parameters: Type.Object({ n: Type.Number() }), executionMode: "sequential",
          execute: async (_id: string, p: any) => {
            hooks.push(["alone starts", p.n]);
            for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
            hooks.push(["alone ends", p.n]);
            return { content: [{ type: "text", text: `alone ${p.n}` }], details: {} };
          } } as any);
        sub.on("tool_call", (e: any) => {
          hooks.push(["tool_call", e.toolName, e.toolCallId, e.parentToolCallId ?? null, e.input]);
          if (e.toolName === "shout" && e.input.text === "blocked") return { block: true, reason: "not that one" };
        });
        sub.on("tool_result", (e: any) => { hooks.push(["tool_result", e.toolName, e.toolCallId, e.parentToolCallId ?? null, e.isError]); });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [createCodemodeExtension(), own] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      const errors: string[] = [];
      await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
      session.setActiveToolsByName([...session.getActiveToolNames(), "read", "codemode"]);
      const events: any[] = [];
      session.subscribe((e: any) => {
        // When the second call of the sequential tool starts (before it waits for the first) is left to timing.
        if (e.type === "tool_execution_start" && e.toolName === "alone") return;
        if (e.type === "tool_execution_start" || e.type === "tool_execution_end") events.push([e.type, e.toolName, e.toolCallId, e.parentToolCallId ?? null, e.isError ?? null]);
      });
      await session.prompt("run the script");
      await session.prompt("load it back");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        name: m.toolName,
        text: m.content.map((c: any) => stable(c.text ?? c.type)),
        isError: m.isError,
        calls: withoutTimes(m.details?.calls),
        nestedCalls: withoutTimes(m.nestedCalls),
      }));
      const stored = session.sessionManager.getBranch().filter((e: any) => e.type === "custom").map((e: any) => [e.customType, e.data]);
      ctx.ui.notify(JSON.stringify({ errors, active: session.getActiveToolNames(), results, hooks, events, stored, roles: session.messages.map((m: any) => m.role) }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("submcp", {
    handler: async (_args, ctx) => {
      const notes: any[] = [];
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [createCodemodeExtension(), createMcpExtension()] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      const errors: string[] = [];
      const ui: any = { notify: (message: string, level: string) => { notes.push([message, level ?? null]); } };
      // The servers' tools reachable from the session's codemode.
      session.setActiveToolsByName(["codemode"]);
      await session.bindExtensions({ uiContext: ui, mode: "rpc", onError: (e: any) => errors.push(`${e.event}: ${e.error}`) } as any);
      await session.prompt("/mcp");
      // The sub-session's `/mcp` is described as the running session's own `/mcp` (pi's words in pi).
      const described = (list: any[]) => list.find((c: any) => (c.invocationName ?? c.name) === "mcp")?.description ?? null;
      const sub = described(session.extensionRunner.getRegisteredCommands());
      const sameDescription = sub !== null && sub === described(pi.getCommands());
      ctx.ui.notify(JSON.stringify({ errors, notes, requests: session.messages.length, sameDescription }), "info");
      session.dispose();
    },
  });
}
"#;

/// `createAgentSession`'s tool options: each session's active and registered tools, and what
/// `setActiveToolsByName` can add, for an allowlist, patterns, `+name`/`-name`, `noTools`,
/// `excludeTools` and `customTools`.
const SDK_TOOL_OPTIONS: &str = r#"import { createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const tool = (name: string, more: any = {}) => ({ name, label: name, description: `The ${name} tool`, parameters: Type.Object({}),
  execute: async () => ({ content: [{ type: "text", text: name }], details: {} }), ...more }) as any;

export default function (pi: ExtensionAPI) {
  pi.registerCommand("tooloptions", {
    handler: async (_args, ctx) => {
      const own = (sub: ExtensionAPI) => {
        sub.registerTool(tool("shout"));
        sub.registerTool(tool("shy", { defaultActive: false }));
        sub.registerTool(tool("extra"));
        sub.registerTool(tool("later_one", { exposure: "deferred" }));
      };
      const customTools = [tool("custom_a"), tool("custom_b", { defaultActive: false })];
      const cases: [string, any][] = [
        ["allowlist", { tools: ["read", "shout", "shy", "custom_b", "nope"] }],
        ["patterns", { tools: ["sh*", "custom_*", "gr*"] }],
        ["modifiers", { tools: ["+shy", "-bash", "+grep"] }],
        ["noTools builtin", { noTools: "builtin" }],
        ["noTools all", { noTools: "all" }],
        ["noTools all with modifiers", { noTools: "all", tools: ["+shout", "+read"] }],
        ["excluded", { tools: ["read", "bash", "shout", "extra", "custom_a"], excludeTools: ["ex*", "bash"] }],
        ["defaults excluded", { excludeTools: ["custom_*", "write"] }],
        ["mixed", { tools: ["read", "+shout"] }],
        ["pattern modifier", { tools: ["+sh*"] }],
      ];
      const out: any = {};
      for (const [name, options] of cases) {
        try {
          const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [own] } as any);
          await resourceLoader.reload();
          const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, customTools, ...options } as any);
          await session.bindExtensions({});
          const active = session.getActiveToolNames();
          const all = session.getAllTools().map((t: any) => t.name).sort();
          session.setActiveToolsByName([...active, "extra", "shy", "custom_a", "custom_b", "later_one", "ls"]);
          out[name] = { active, all, widened: session.getActiveToolNames().sort(), definition: ["extra", "shy", "custom_a"].map((n) => !!session.getToolDefinition(n)) };
          session.dispose();
        } catch (e: any) {
          out[name] = { error: String(e?.message ?? e) };
        }
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

#[tokio::test]
async fn an_sdk_sessions_tool_options_select_and_allow_tools_as_in_pi() {
    let module = ("sdk-tool-options.ts", SDK_TOOL_OPTIONS);
    let run = |reference, command: String| async move { run_module(reference, module, &command, &[]).await };
    let Some((ours, theirs)) = side_by_side(run, "tooloptions").await else { return };
    // An allowlist registers only what it names: `extra` cannot be activated, a named `shy` is active.
    assert_eq!(ours["allowlist"]["active"], json!(["read", "shout", "shy", "custom_b"]), "{ours}");
    assert_eq!(ours["allowlist"]["definition"], json!([false, true, false]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// The first script: the sub-session's tools called back, a failure and a block caught, a value stored.
const SCRIPT: &str = r#"const notes = await tools.read({ path: "notes.txt" });
text(JSON.stringify(notes));
text(await tools.shout({ text: "hi" }));
try { await tools.shout({ text: "blocked" }); } catch (e) { text("blocked: " + e.message); }
try { await tools.fails({}); } catch (e) { text("failed: " + e.message); }
text((await Promise.all([tools.alone({ n: 1 }), tools.alone({ n: 2 })])).join(", "));
store("count", 2);
return "done";"#;

/// The second script: the value stored on the sub-session's branch.
const LOAD: &str = r#"text(JSON.stringify(load("count")));"#;

#[tokio::test]
async fn codemode_inside_an_sdk_session_calls_its_tools_as_in_pi() {
    let script = |code: &str| json!({ "code": code }).to_string();
    let replies = [
        Reply::tool_call("call_1", "codemode", &script(SCRIPT)),
        Reply::text("Ran."),
        Reply::tool_call("call_2", "codemode", &script(LOAD)),
        Reply::text("Loaded."),
    ];
    let module = ("sdk-subcode.ts", SDK_SUBCODE);
    let run = |reference, command: String| {
        let replies = replies.clone();
        async move { run_module(reference, module, &command, &replies).await }
    };
    let Some((ours, theirs)) = side_by_side(run, "scripted").await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    let first = &ours["results"][0];
    assert_eq!(first["isError"], false, "{ours}");
    let text = first["text"].to_string();
    for part in ["HI", "blocked: not that one", "failed: no luck", "alpha"] {
        assert!(text.contains(part), "{part} in {ours}");
    }
    assert_eq!(ours["results"][1]["text"][1], "2", "{ours}");
    assert_eq!(ours["stored"], json!([["codemode-store", {"set": {"count": 2}, "delete": []}]]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// `/submcp`'s note, then what the running session's own `/mcp` notified, in one program whose
/// `mcp.json` names server-everything.
async fn sub_and_main_mcp(reference: bool, servers: &Servers) -> Option<(Value, String)> {
    let setup = |sb: &Sandbox| write_mcp(sb, json!({"everything": servers.everything("stdio")}));
    let (mut pi, sb) = start_module(reference, ("sdk-subcode.ts", SDK_SUBCODE), &[], &setup).await?;
    let note = notified_text(&mut pi, &sb, "submcp").await;
    let note: Value = serde_json::from_str(&note).unwrap_or_else(|e| panic!("/submcp notified {note}: {e}"));
    let main = notified_text(&mut pi, &sb, "mcp").await;
    pi.close_stdin();
    Some((note, main))
}

#[tokio::test]
async fn mcp_inside_an_sdk_session_answers_as_the_sessions_own_mcp_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some((ours, ours_main)) = sub_and_main_mcp(false, &servers).await else { return };
    let Some((theirs, theirs_main)) = sub_and_main_mcp(true, &servers).await else { return };
    assert!(ours_main.contains("everything: connected"), "{ours_main}");
    // Each program's sub-session answers through its UI what its own `/mcp` answers (pi-rpc's words are its own).
    assert_eq!(ours["notes"], json!([[ours_main, "info"]]), "{ours}");
    assert_eq!(theirs["notes"], json!([[theirs_main, "info"]]), "{theirs}");
    assert_eq!(ours["sameDescription"], true, "{ours}");
    let without_text = |mut note: Value| {
        note["notes"][0][0] = json!("<the session's /mcp text>");
        note
    };
    assert_eq!(without_text(ours), without_text(theirs), "pi-rpc, then pi 1.6.0");
}
