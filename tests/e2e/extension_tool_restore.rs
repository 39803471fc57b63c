//! The active tools a branch recorded, restored as pi 1.6.0 restores them
//! (`_restoreToolsFromTranscript`): for the session a program starts with
//! (`--session`, `--continue`), after a command's `navigateTree()`; a
//! recorded tool not registered yet is active once it registers, unless a
//! run starts first; and a `--tools` list: no `direct` MCP tool it does not
//! name is active, and the tools it names are active again whenever the
//! registry changes (an MCP server's tools registering). Side by side with
//! pi 1.6.0: `getActiveTools()` and the tools of the model's requests.
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_builtin_factories::{start, start_saved};
use crate::extension_builtin_tools::command_note;
use crate::extension_host::write_module;
use crate::harness::Sandbox;
use crate::mcp::{Servers, tool_names, write_mcp};

/// Registers `own` and `lazy` (`defaultActive: false`), and `ghost`
/// (`defaultActive: false`) when the file `ghost` is in the cwd or `/ghost`
/// asks, or from a `before_agent_start` handler when the file `late` is;
/// notes the reason of the last `session_start` and the active tools
/// then (with the file `pick` in the cwd, its handler first calls
/// `setActiveTools(["read"])`). `/tools [names]` (with `wait`: once an MCP
/// tool is listed; `/tools until name`: once `name` is active, or after 8 s) reports them and the active tools, then with `names`
/// calls `setActiveTools(names)`; `/nav` moves the leaf to the branch's
/// first user message (`navigateTree`) and reports the active tools.
const RESTORER: &str = r#"import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  const tool = (name: string, defaultActive: boolean) => ({
    name,
    label: name,
    description: `The extension's ${name} tool`,
    parameters: Type.Object({}),
    defaultActive,
    async execute() {
      return { content: [{ type: "text" as const, text: name }], details: {} };
    },
  });
  pi.registerTool(tool("own", true));
  pi.registerTool(tool("lazy", false));
  if (existsSync(join(process.cwd(), "ghost"))) pi.registerTool(tool("ghost", false));
  if (existsSync(join(process.cwd(), "late"))) {
    pi.on("before_agent_start", () => {
      if (!pi.getAllTools().some((t) => t.name === "ghost")) pi.registerTool(tool("ghost", false));
    });
  }
  let atStart: unknown = null;
  pi.on("session_start", (event, ctx) => {
    if (existsSync(join(ctx.cwd, "pick"))) pi.setActiveTools(["read"]);
    atStart = { reason: event.reason, active: pi.getActiveTools() };
  });
  pi.registerCommand("tools", {
    handler: async (args, ctx) => {
      const wait = args.startsWith("wait");
      const until = args.startsWith("until");
      const names = wait ? args.slice(4).trim() : until ? "" : args;
      for (let i = 0; wait && i < 600 && !pi.getAllTools().some((t) => t.name.startsWith("mcp__")); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      for (let i = 0; until && i < 160 && !pi.getActiveTools().includes(args.slice(5).trim()); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const active = pi.getActiveTools();
      if (names) pi.setActiveTools(names.split(","));
      ctx.ui.notify(JSON.stringify({ atStart, active }), "info");
    },
  });
  pi.registerCommand("ghost", {
    handler: async (_args, ctx) => {
      pi.registerTool(tool("ghost", false));
      ctx.ui.notify(JSON.stringify({ active: pi.getActiveTools() }), "info");
    },
  });
  pi.registerCommand("nav", {
    handler: async (_args, ctx) => {
      const first = ctx.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "user");
      const result = await ctx.navigateTree(first.id, { summarize: false });
      ctx.ui.notify(JSON.stringify({ cancelled: result.cancelled, active: pi.getActiveTools() }), "info");
    },
  });
}
"#;

/// [`command_note`] parsed.
async fn note(pi: &mut crate::harness::Pi, command: &str) -> Value {
    serde_json::from_str(&command_note(pi, command).await).expect("the note is JSON")
}

/// One prompt, answered; the tools its (last) model request offered.
async fn prompt(pi: &mut crate::harness::Pi, sb: &Sandbox, id: &str) -> Vec<String> {
    pi.send(json!({"id": id, "type": "prompt", "message": id})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    tool_names(&requests.last().expect("a model call").body)
}

/// What one program reported along three runs over one saved session: the
/// first records `read, own, lazy, ghost` (its prompt) with `ghost`
/// registered; the second starts with `--session` (no `ghost` now) and
/// registers `ghost` before any prompt; the third starts with `--continue`,
/// prompts, then registers `ghost`.
async fn resumed_at_start(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "restorer.ts", RESTORER);
    sb.server().set_fallback(Reply::text("done"));
    let ghost = sb.cwd.path().join("ghost");
    std::fs::write(&ghost, "").expect("write ghost");
    let mut seen = serde_json::Map::new();
    let mut pi = start_saved(&sb, reference, &[])?;
    note(&mut pi, "/tools read,own,lazy,ghost").await;
    seen.insert("first".into(), json!(prompt(&mut pi, &sb, "one").await));
    note(&mut pi, "/tools read").await;
    let state = pi.call("s", json!({"type": "get_state"})).await;
    let file = state["data"]["sessionFile"].as_str().expect("a saved session").to_string();
    pi.close_stdin();
    pi.wait().await;
    std::fs::remove_file(&ghost).expect("remove ghost");

    let mut pi = start_saved(&sb, reference, &["--session", &file])?;
    seen.insert("session".into(), note(&mut pi, "/tools").await);
    seen.insert("ghost before a run".into(), note(&mut pi, "/ghost").await);
    pi.close_stdin();
    pi.wait().await;

    let mut pi = start_saved(&sb, reference, &["--continue"])?;
    seen.insert("continue".into(), note(&mut pi, "/tools").await);
    seen.insert("offered".into(), json!(prompt(&mut pi, &sb, "two").await));
    seen.insert("ghost after a run".into(), note(&mut pi, "/ghost").await);
    pi.close_stdin();
    pi.wait().await;
    Some(Value::Object(seen))
}

#[tokio::test]
async fn a_session_started_with_session_or_continue_restores_its_recorded_tools_as_in_pi() {
    let Some(ours) = resumed_at_start(false).await else { return };
    let Some(theirs) = resumed_at_start(true).await else { return };
    let restored = json!(["read", "own", "lazy"]);
    assert_eq!(ours["first"], json!(["read", "own", "lazy", "ghost"]), "{ours}");
    for run in ["session", "continue"] {
        // The loadout the branch recorded; `ghost`, not registered, is not active.
        assert_eq!(ours[run]["atStart"], json!({"reason": "startup", "active": restored}), "{run}: {ours}");
        assert_eq!(ours[run]["active"], restored, "{run}: {ours}");
    }
    // A recorded tool is active once it registers, unless a run started first.
    assert_eq!(ours["ghost before a run"]["active"], json!(["read", "own", "lazy", "ghost"]), "{ours}");
    assert_eq!(ours["offered"], restored, "{ours}");
    assert_eq!(ours["ghost after a run"]["active"], restored, "{ours}");
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// What one program reported with `flags`: `read, own` active at the first
/// prompt, `read, lazy` at the second, then `/nav` back to the first user
/// message, and the tools of the prompt after it.
async fn navigated(reference: bool, flags: &[&str]) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "restorer.ts", RESTORER);
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference, flags)?;
    let mut seen = serde_json::Map::new();
    note(&mut pi, "/tools read,own").await;
    seen.insert("one".into(), json!(prompt(&mut pi, &sb, "one").await));
    note(&mut pi, "/tools read,lazy").await;
    seen.insert("two".into(), json!(prompt(&mut pi, &sb, "two").await));
    seen.insert("navigated".into(), note(&mut pi, "/nav").await);
    seen.insert("three".into(), json!(prompt(&mut pi, &sb, "three").await));
    pi.close_stdin();
    Some(Value::Object(seen))
}

#[tokio::test]
async fn navigating_the_tree_restores_the_tools_the_branch_recorded_as_in_pi() {
    for flags in [&[][..], &["--tools", "read,own,lazy"]] {
        let Some(ours) = navigated(false, flags).await else { return };
        let Some(theirs) = navigated(true, flags).await else { return };
        assert_eq!(ours["two"], json!(["read", "lazy"]), "{flags:?}: {ours}");
        // Back on the first prompt's branch: its loadout, `--tools` or not.
        assert_eq!(ours["navigated"], json!({"cancelled": false, "active": ["read", "own"]}), "{flags:?}: {ours}");
        assert_eq!(ours["three"], json!(["read", "own"]), "{flags:?}: {ours}");
        assert_eq!(ours, theirs, "{flags:?}: pi 1.6.0 does the same");
    }
}

/// What one program reported with `--tools read,bash,own` and a `direct`
/// MCP server (whose tools the list does not name): the active tools once
/// the server's tools are listed and the tools of a prompt, with a
/// `session_start` handler that leaves only `read` active (the file `pick`),
/// at start-up and in a new session.
async fn named_tools(reference: bool, servers: &Servers) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let mut direct = servers.everything("stdio");
    direct["exposure"] = json!("direct");
    write_mcp(&sb, json!({"plain": direct}));
    write_module(&sb, "restorer.ts", RESTORER);
    sb.server().set_fallback(Reply::text("done"));
    std::fs::write(sb.cwd.path().join("pick"), "").expect("write pick");
    let mut pi = start(&sb, reference, &["--tools", "read,bash,own"])?;
    let mut seen = serde_json::Map::new();
    seen.insert("start".into(), note(&mut pi, "/tools wait").await);
    seen.insert("offered".into(), json!(prompt(&mut pi, &sb, "one").await));
    assert_eq!(pi.call("n", json!({"type": "new_session"})).await["success"], true);
    seen.insert("new".into(), note(&mut pi, "/tools wait").await);
    seen.insert("offered after".into(), json!(prompt(&mut pi, &sb, "two").await));
    pi.close_stdin();
    Some(Value::Object(seen))
}

#[tokio::test]
async fn a_tools_list_activates_only_the_tools_it_names_again_as_mcp_tools_register_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = named_tools(false, &servers).await else { return };
    let Some(theirs) = named_tools(true, &servers).await else { return };
    let named = json!(["read", "bash", "own"]);
    assert_eq!(ours["start"]["atStart"]["active"], json!(["read"]), "{ours}");
    assert_eq!(ours["start"]["active"], named, "no direct MCP tool it does not name: {ours}");
    assert_eq!(ours["offered"], named, "{ours}");
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// What one program reported over a saved session that recorded `read,
/// own, lazy, ghost`, started again with `--session` where `ghost` is
/// registered by a `before_agent_start` handler only: the active tools at
/// start-up, the tools of the first prompt, the active tools after it.
async fn registered_before_the_run(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "restorer.ts", RESTORER);
    sb.server().set_fallback(Reply::text("done"));
    let ghost = sb.cwd.path().join("ghost");
    std::fs::write(&ghost, "").expect("write ghost");
    let mut pi = start_saved(&sb, reference, &[])?;
    note(&mut pi, "/tools read,own,lazy,ghost").await;
    prompt(&mut pi, &sb, "one").await;
    let state = pi.call("s", json!({"type": "get_state"})).await;
    let file = state["data"]["sessionFile"].as_str().expect("a saved session").to_string();
    pi.close_stdin();
    pi.wait().await;
    std::fs::remove_file(&ghost).expect("remove ghost");
    std::fs::write(sb.cwd.path().join("late"), "").expect("write late");

    let mut pi = start_saved(&sb, reference, &["--session", &file])?;
    let mut seen = serde_json::Map::new();
    seen.insert("session".into(), note(&mut pi, "/tools").await["active"].clone());
    seen.insert("offered".into(), json!(prompt(&mut pi, &sb, "two").await));
    seen.insert("after".into(), note(&mut pi, "/tools").await["active"].clone());
    pi.close_stdin();
    pi.wait().await;
    Some(Value::Object(seen))
}

#[tokio::test]
async fn a_restored_tool_a_before_agent_start_handler_registers_is_the_runs_as_in_pi() {
    let Some(ours) = registered_before_the_run(false).await else { return };
    let Some(theirs) = registered_before_the_run(true).await else { return };
    assert_eq!(ours["session"], json!(["read", "own", "lazy"]), "{ours}");
    // pi drops the pending restored tools after the `before_agent_start` handlers.
    let all = json!(["read", "own", "lazy", "ghost"]);
    assert_eq!(ours["offered"], all, "{ours}");
    assert_eq!(ours["after"], all, "{ours}");
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// What one program reported with `--tools read,bash,own` and a server
/// whose tools are all `hidden`, with a `session_start` handler that leaves
/// only `read` active: the active tools once `bash` is active again (or
/// after 8 s), and the tools of a prompt.
async fn hidden_server_registered(reference: bool, servers: &Servers) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let mut hidden = servers.everything("stdio");
    hidden["exposure"] = json!("hidden");
    write_mcp(&sb, json!({"quiet": hidden}));
    write_module(&sb, "restorer.ts", RESTORER);
    sb.server().set_fallback(Reply::text("done"));
    std::fs::write(sb.cwd.path().join("pick"), "").expect("write pick");
    let mut pi = start(&sb, reference, &["--tools", "read,bash,own"])?;
    let mut seen = serde_json::Map::new();
    seen.insert("registered".into(), note(&mut pi, "/tools until bash").await);
    seen.insert("offered".into(), json!(prompt(&mut pi, &sb, "one").await));
    pi.close_stdin();
    Some(Value::Object(seen))
}

#[tokio::test]
async fn a_server_whose_tools_are_all_hidden_changes_the_registry_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = hidden_server_registered(false, &servers).await else { return };
    let Some(theirs) = hidden_server_registered(true, &servers).await else { return };
    let named = json!(["read", "bash", "own"]);
    assert_eq!(ours["registered"]["atStart"]["active"], json!(["read"]), "{ours}");
    // Its hidden tools registering activates the tools `--tools` names again.
    assert_eq!(ours["registered"]["active"], named, "{ours}");
    assert_eq!(ours["offered"], named, "{ours}");
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}
