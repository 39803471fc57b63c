//! The tools of pi's built-in extensions in `getAllTools()`, without any
//! factory: `codemode` and `tool_search` (`builtin:codemode`,
//! `builtin:tool-search`, `model-only`, inactive until `setActiveTools()`
//! names them) from `session_start` on, and the MCP servers' tools
//! (`builtin:mcp`, a `codemode` server's as `deferred`) once they connect;
//! `--tools` leaves out the two it does not name but not MCP's,
//! `--no-extensions` and `--no-tools` leave out all of them; and the active
//! tools of a new, resumed, cloned or forked session (pi's new runtime: the
//! start-up tools or the branch's recorded loadout, then MCP's). Run by
//! pi-rpc and by pi 1.6.0 side by side with a real MCP server
//! (server-everything over stdio).
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_builtin_factories::{start, start_saved};
use crate::extension_host::write_module;
use crate::extension_provider_events::reference_cli;
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, tool_names, write_mcp};

/// Reports the built-in extensions' tools at `session_start` and in `/tools`
/// (`/tools wait` first waits until an MCP tool is listed), then activates
/// `codemode` and `tool_search` and reports the active tools.
const LISTER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const isBuiltins = (name: string) =>
  name === "codemode" || name === "tool_search" || name.startsWith("mcp__") || name.includes("_mcp_resource");

export default function (pi: ExtensionAPI) {
  const listed = (names: (name: string) => boolean) =>
    pi.getAllTools()
      .filter((t) => names(t.name))
      .map((t) => ({ name: t.name, path: t.sourceInfo.path, source: t.sourceInfo.source, exposure: t.exposure }));
  let atStart: unknown = null;
  pi.on("session_start", () => {
    atStart = listed((name) => name === "codemode" || name === "tool_search");
  });
  pi.registerCommand("tools", {
    handler: async (args, ctx) => {
      for (let i = 0; args === "wait" && i < 600 && !pi.getAllTools().some((t) => t.name.startsWith("mcp__")); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const now = listed(isBuiltins);
      pi.setActiveTools(["read", "codemode", "tool_search"]);
      ctx.ui.notify(JSON.stringify({ atStart, now, active: pi.getActiveTools() }), "info");
    },
  });
}
"#;

/// What one program's `/tools` reported, with `flags`.
async fn listing(reference: bool, servers: &Servers, flags: &[&str]) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"everything": servers.everything("stdio")}));
    let path = write_module(&sb, "lister.ts", LISTER);
    let mut args = flags.to_vec();
    if flags.contains(&"--no-extensions") {
        args.extend(["-e", path.as_str()]);
    }
    let mut pi = start(&sb, reference, &args)?;
    let no_mcp_tools = flags.contains(&"--no-extensions") || flags.contains(&"--no-tools");
    let wait = if no_mcp_tools { "/tools" } else { "/tools wait" };
    // (`--tools` may first bring MCP's warning that no tool reaches its tools.)
    let note = command_note(&mut pi, wait).await;
    pi.close_stdin();
    Some(serde_json::from_str(&note).expect("the note is JSON"))
}

/// Run extension command `command` and return the JSON text of the
/// notification it answers with (no extension error on the way).
pub(crate) async fn command_note(pi: &mut Pi, command: &str) -> String {
    pi.send(json!({"id": "t", "type": "prompt", "message": command})).await;
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with('{'))).await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string()
}

/// [`command_note`] parsed.
async fn json_note(pi: &mut Pi, command: &str) -> Value {
    serde_json::from_str(&command_note(pi, command).await).expect("the note is JSON")
}

/// The tool names of a `{name, path, source, exposure}` listing.
fn names(listed: &Value) -> Vec<String> {
    listed.as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

#[tokio::test]
async fn get_all_tools_lists_the_built_in_extensions_tools_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = listing(false, &servers, &[]).await else { return };
    let Some(theirs) = listing(true, &servers, &[]).await else { return };
    let builtin =
        |name: &str, path: &str| json!({"name": name, "path": path, "source": "builtin", "exposure": "model-only"});
    assert_eq!(
        ours["atStart"],
        json!([builtin("codemode", "builtin:codemode"), builtin("tool_search", "builtin:tool-search")])
    );
    let now = ours["now"].as_array().expect("a listing");
    assert_eq!(now[..2], [builtin("codemode", "builtin:codemode"), builtin("tool_search", "builtin:tool-search")]);
    let echo = now.iter().find(|t| t["name"] == "mcp__everything__echo").expect("the server's tools are listed");
    assert_eq!(echo["path"], "builtin:mcp");
    assert_eq!(echo["exposure"], "deferred", "a codemode server's tools are registered as deferred");
    assert_eq!(ours["active"], json!(["read", "codemode", "tool_search"]), "setActiveTools activates them");
    assert_eq!(ours, theirs, "pi 1.6.0 lists the same");
}

#[tokio::test]
async fn tools_and_no_extensions_leave_the_built_in_extensions_tools_out_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let cases: [(&[&str], Value); 3] = [
        (&["--tools", "read"], json!(["read"])),
        (&["--no-extensions"], json!(["read"])),
        (&["--no-tools"], json!([])),
    ];
    for (flags, active) in cases {
        let Some(ours) = listing(false, &servers, flags).await else { return };
        let Some(theirs) = listing(true, &servers, flags).await else { return };
        assert_eq!(ours["atStart"], json!([]), "{flags:?}");
        assert!(!names(&ours["now"]).iter().any(|n| n == "codemode" || n == "tool_search"), "{flags:?}: {ours}");
        assert_eq!(ours["active"], active, "{flags:?}");
        assert_eq!(ours, theirs, "{flags:?}: as in pi 1.6.0");
    }
}

/// Reports the active tools at `session_start` and in `/active <names>`
/// (once both servers' tools are listed), before and after
/// `setActiveTools(<names>)`, with the `sourceInfo` of the extension's own
/// tool; as pi's `preset.ts` does, it may name MCP tools.
const ACTIVE: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerTool({
    name: "own",
    label: "Own",
    description: "The extension's own tool",
    parameters: Type.Object({}),
    async execute() {
      return { content: [{ type: "text", text: "own" }], details: {} };
    },
  });
  const listed = (name: string) => pi.getAllTools().some((t) => t.name === name);
  let atStart: unknown = null;
  pi.on("session_start", () => {
    atStart = pi.getActiveTools();
  });
  pi.registerCommand("active", {
    handler: async (args, ctx) => {
      for (let i = 0; i < 600 && !(listed("mcp__everything__echo") && listed("mcp__plain__echo")); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const own = pi.getAllTools().find((t) => t.name === "own")?.sourceInfo;
      const before = pi.getActiveTools();
      pi.setActiveTools(args.split(","));
      ctx.ui.notify(JSON.stringify({ atStart, before, after: pi.getActiveTools(), own }), "info");
    },
  });
}
"#;

/// What one program's `/active <names>` reported (the agent directory's
/// path replaced by `<agent>`), and the tools of the next model request.
async fn activated(reference: bool, servers: &Servers, names: &str) -> Option<(Value, Vec<String>)> {
    let sb = Sandbox::with_server().await;
    let mut direct = servers.everything("stdio");
    direct["exposure"] = json!("direct");
    write_mcp(&sb, json!({"everything": servers.everything("stdio"), "plain": direct}));
    write_module(&sb, "active.ts", ACTIVE);
    let mut pi = start(&sb, reference, &[])?;
    let note = command_note(&mut pi, &format!("/active {names}")).await;
    let note = note.replace(&sb.agent_dir.path().display().to_string(), "<agent>");
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    let tools = tool_names(&requests.last().expect("a model call").body);
    pi.close_stdin();
    Some((serde_json::from_str(&note).expect("the note is JSON"), tools))
}

#[tokio::test]
async fn set_active_tools_activates_mcp_tools_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    // A `direct` tool, a `codemode` server's (`deferred`) tool, in another order than the active one's.
    let names = "mcp__plain__get_sum,read,mcp__everything__echo,own";
    let Some(ours) = activated(false, &servers, names).await else { return };
    let Some(theirs) = activated(true, &servers, names).await else { return };
    let (note, tools) = &ours;
    assert_eq!(note["atStart"], json!(["read", "bash", "edit", "write", "own"]));
    let before: Vec<String> = serde_json::from_value(note["before"].clone()).expect("names");
    assert_eq!(before[..6], ["read", "bash", "edit", "write", "own", "codemode"], "MCP activates codemode");
    assert!(before.iter().any(|t| t == "mcp__plain__get_sum"), "direct tools are active once registered");
    assert!(!before.iter().any(|t| t == "mcp__everything__echo"), "{before:?}");
    // The tools that stay active keep their order, the new one follows; codemode is off.
    let after = json!(["read", "own", "mcp__plain__get_sum", "mcp__everything__echo"]);
    assert_eq!(note["after"], after);
    assert_eq!(json!(tools), after, "the model is offered the active tools");
    assert_eq!(
        note["own"],
        json!({"path": "<agent>/extensions/active.ts", "source": "auto", "scope": "user",
        "origin": "top-level", "baseDir": "<agent>"})
    );
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// An extension owning `codemode` through pi's factory registers an MCP
/// server (`{server}`: its config) in its factory; it reports the server
/// names `getMcpServers()` gave there and at `session_start`, and in
/// `/owned` (once the server's tools are listed) its `codemode` as
/// `getAllTools()` lists it and the active tools.
const OWNER: &str = r#"import { createCodemodeExtension } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  createCodemodeExtension()(pi);
  pi.registerMcpServer("reg", {server});
  const names = () => pi.getMcpServers().map((s) => s.name);
  const inFactory = names();
  let atStart: unknown = null;
  pi.on("session_start", () => {
    atStart = names();
  });
  pi.registerCommand("owned", {
    handler: async (_args, ctx) => {
      for (let i = 0; i < 600 && !pi.getAllTools().some((t) => t.name === "mcp__reg__echo"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const tool = pi.getAllTools().find((t) => t.name === "codemode");
      const codemode = tool && { ...tool.sourceInfo, path: tool.sourceInfo.path.split("/").pop(), exposure: tool.exposure };
      ctx.ui.notify(JSON.stringify({ inFactory, atStart, codemode, active: pi.getActiveTools() }), "info");
    },
  });
}
"#;

/// What one program's `/owned` reported (the agent directory's path replaced by `<agent>`).
async fn owned(reference: bool, servers: &Servers) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "owner.ts", &OWNER.replace("{server}", &servers.everything("stdio").to_string()));
    let mut pi = start(&sb, reference, &[])?;
    let note = command_note(&mut pi, "/owned").await;
    pi.close_stdin();
    let note = note.replace(&sb.agent_dir.path().display().to_string(), "<agent>");
    Some(serde_json::from_str(&note).expect("the note is JSON"))
}

#[tokio::test]
async fn a_factory_owned_codemode_and_a_factorys_mcp_server_are_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = owned(false, &servers).await else { return };
    let Some(theirs) = owned(true, &servers).await else { return };
    assert_eq!(ours["inFactory"], json!([]), "the factory's registration counts once it returned");
    assert_eq!(ours["atStart"], json!(["reg"]));
    let codemode = json!({"path": "owner.ts", "source": "auto", "scope": "user", "origin": "top-level",
        "baseDir": "<agent>", "exposure": "model-only"});
    assert_eq!(ours["codemode"], codemode);
    assert_eq!(ours["active"], json!(["read", "bash", "edit", "write", "codemode"]), "MCP activates the owner's");
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// What pi's own `preset.ts` did with a preset naming a `codemode` server's
/// tool: the tools of the first request (which waits for the server, one of
/// its tools being `direct`), `/preset mcp`'s notifications, and the tools
/// of the request after it.
async fn preset(reference: bool, servers: &Servers) -> Option<Value> {
    let example = reference_cli()?.parent()?.parent()?.join("examples/extensions/preset.ts");
    let sb = Sandbox::with_server().await;
    let mut everything = servers.everything("stdio");
    everything["toolExposure"] = json!({"get_sum": "direct"});
    write_mcp(&sb, json!({ "everything": everything }));
    write_module(&sb, "preset.ts", &std::fs::read_to_string(example).expect("pi's preset.ts"));
    let presets = json!({"mcp": {"tools": ["read", "mcp__everything__echo"]}});
    std::fs::write(sb.agent_dir.path().join("presets.json"), presets.to_string()).expect("presets.json");
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "a", "type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    pi.send(json!({"id": "t", "type": "prompt", "message": "/preset mcp"})).await;
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.contains("activated"))).await;
    let notes: Vec<Value> = lines.iter().filter(|v| v["method"] == "notify").map(|v| v["message"].clone()).collect();
    pi.send(json!({"id": "b", "type": "prompt", "message": "go"})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    pi.close_stdin();
    Some(json!({
        "first": tool_names(&requests.first()?.body),
        "notes": notes,
        "after": tool_names(&requests.last()?.body),
    }))
}

#[tokio::test]
async fn pis_preset_example_activates_an_mcp_tool_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = preset(false, &servers).await else { return };
    let Some(theirs) = preset(true, &servers).await else { return };
    assert_eq!(ours["notes"], json!(["Preset \"mcp\" activated"]), "no unknown tool");
    assert_eq!(ours["after"], json!(["read", "mcp__everything__echo"]));
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// `/state [off]` (once the MCP server's tools are listed, so its
/// `session_start` is done) reports the active tools and the extension
/// commands `getCommands()` lists with their `sourceInfo`; with `off` it
/// then deactivates everything but `read`.
const STATE: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("state", {
    description: "Report the active tools and the commands",
    handler: async (args, ctx) => {
      for (let i = 0; i < 600 && !pi.getAllTools().some((t) => t.name === "mcp__everything__echo"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const active = pi.getActiveTools();
      const commands = pi.getCommands().filter((c) => c.source === "extension" && c.sourceInfo.source !== "builtin");
      if (args === "off") pi.setActiveTools(["read"]);
      ctx.ui.notify(JSON.stringify({ active, commands }), "info");
    },
  });
}
"#;

/// How the client replaces the session after `/state off` (these sessions
/// are not saved; `switch_session` is in
/// [`the_active_tools_start_again_in_every_new_resumed_or_forked_session_as_in_pi`]).
#[derive(Clone, Copy, Debug)]
enum Replacement {
    New,
    Fork,
}

/// What one program's `/state` reported before and after the client
/// replaced the session `how` (a `codemode` server configured; paths under
/// the agent directory as `<agent>`).
async fn after_replacement(reference: bool, servers: &Servers, how: Replacement) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"everything": servers.everything("stdio")}));
    write_module(&sb, "state.ts", STATE);
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "a", "type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let before = command_note(&mut pi, "/state off").await;
    let replaced = match how {
        Replacement::New => pi.call("n", json!({"type": "new_session"})).await,
        Replacement::Fork => {
            let forkable = pi.call("m", json!({"type": "get_fork_messages"})).await;
            let entry = forkable["data"]["messages"][0]["entryId"].clone();
            pi.call("f", json!({"type": "fork", "entryId": entry})).await
        }
    };
    assert_eq!(replaced["success"], true, "{how:?}: {replaced}");
    let after = command_note(&mut pi, "/state").await;
    pi.close_stdin();
    let agent = sb.agent_dir.path().display().to_string();
    let parse = |note: &str| serde_json::from_str::<Value>(&note.replace(&agent, "<agent>")).expect("the note is JSON");
    Some(json!({"before": parse(&before), "after": parse(&after)}))
}

#[tokio::test]
async fn codemode_is_active_again_in_every_new_session_and_commands_carry_their_source_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    for how in [Replacement::New, Replacement::Fork] {
        let Some(ours) = after_replacement(false, &servers, how).await else { return };
        let Some(theirs) = after_replacement(true, &servers, how).await else { return };
        let state = json!({"name": "state", "description": "Report the active tools and the commands",
            "source": "extension", "sourceInfo": {"path": "<agent>/extensions/state.ts", "source": "auto",
            "scope": "user", "origin": "top-level", "baseDir": "<agent>"}});
        assert_eq!(ours["before"]["active"], json!(["read", "bash", "edit", "write", "codemode"]), "{how:?}");
        // pi's new runtime starts from the default tools again, and MCP activates codemode.
        let after = json!(["read", "bash", "edit", "write", "codemode"]);
        assert_eq!(ours["after"]["active"], after, "{how:?}: {ours}");
        assert_eq!(ours["before"]["commands"], json!([state]), "{how:?}");
        assert_eq!(ours, theirs, "{how:?}: pi 1.6.0 does the same");
    }
}

/// Registers `own` and `lazy` (`defaultActive: false`); notes the reason of
/// the last `session_start` and the active tools then; `/tools [names]`
/// (once the MCP servers' tools are listed) reports them and the active
/// tools, then with `names` calls `setActiveTools(names)`. When the file
/// `pick` is in the cwd, its `session_start` handler calls
/// `setActiveTools(["read", "lazy"])` first.
const RESETTER: &str = r#"import { existsSync } from "node:fs";
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
  let atStart: unknown = null;
  pi.on("session_start", (event, ctx) => {
    if (existsSync(join(ctx.cwd, "pick"))) pi.setActiveTools(["read", "lazy"]);
    atStart = { reason: event.reason, active: pi.getActiveTools() };
  });
  pi.registerCommand("tools", {
    handler: async (args, ctx) => {
      const listed = (name: string) => pi.getAllTools().some((t) => t.name === name);
      for (let i = 0; i < 600 && !(listed("mcp__everything__echo") && listed("mcp__plain__echo")); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const active = pi.getActiveTools();
      if (args) pi.setActiveTools(args.split(","));
      ctx.ui.notify(JSON.stringify({ atStart, active }), "info");
    },
  });
}
"#;

/// What one program's `/tools` reported along a saved session's
/// replacements (a `codemode` server and a `direct` one configured; the
/// `direct` server's tools as `<direct>`), and the tools of the last model
/// request: `read, own, lazy` are active at the first prompt (its system
/// message records them), then only `read` before each replacement.
async fn replacements(reference: bool, servers: &Servers) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let mut direct = servers.everything("stdio");
    direct["exposure"] = json!("direct");
    write_mcp(&sb, json!({"everything": servers.everything("stdio"), "plain": direct}));
    write_module(&sb, "resetter.ts", RESETTER);
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start_saved(&sb, reference, &[])?;
    let mut seen = serde_json::Map::new();
    seen.insert("start".into(), json_note(&mut pi, "/tools read,own,lazy").await);
    pi.send(json!({"id": "a", "type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let state = pi.call("s", json!({"type": "get_state"})).await;
    let first = state["data"]["sessionFile"].as_str().expect("a saved session").to_string();
    seen.insert("prompted".into(), json_note(&mut pi, "/tools read").await);
    assert_eq!(pi.call("n", json!({"type": "new_session"})).await["success"], true);
    seen.insert("new".into(), json_note(&mut pi, "/tools read").await);
    let switched = pi.call("w", json!({"type": "switch_session", "sessionPath": first})).await;
    assert_eq!(switched["success"], true, "{switched}");
    seen.insert("resumed".into(), json_note(&mut pi, "/tools read").await);
    assert_eq!(pi.call("c", json!({"type": "clone"})).await["success"], true);
    seen.insert("cloned".into(), json_note(&mut pi, "/tools read").await);
    let forkable = pi.call("m", json!({"type": "get_fork_messages"})).await;
    let entry = forkable["data"]["messages"][0]["entryId"].clone();
    assert_eq!(pi.call("f", json!({"type": "fork", "entryId": entry})).await["success"], true);
    seen.insert("forked".into(), json_note(&mut pi, "/tools").await);
    std::fs::write(sb.cwd.path().join("pick"), "").expect("write pick");
    assert_eq!(pi.call("n2", json!({"type": "new_session"})).await["success"], true);
    seen.insert("picked".into(), json_note(&mut pi, "/tools").await);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    seen.insert("offered".into(), json!(tool_names(&requests.last().expect("a model call").body)));
    pi.close_stdin();
    let mut seen = Value::Object(seen);
    collapse_direct(&mut seen);
    Some(seen)
}

/// Each run of the `direct` server's tools (`mcp__plain__…` and the MCP
/// resource tools) in the lists of `value` as one `<direct>`.
fn collapse_direct(value: &mut Value) {
    let is_direct =
        |v: &Value| v.as_str().is_some_and(|n| n.starts_with("mcp__plain__") || n.contains("_mcp_resource"));
    match value {
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let mut out: Vec<Value> = Vec::new();
            for item in items.drain(..) {
                if !is_direct(&item) {
                    out.push(item);
                } else if out.last() != Some(&json!("<direct>")) {
                    out.push(json!("<direct>"));
                }
            }
            *items = out;
        }
        Value::Array(items) => items.iter_mut().for_each(collapse_direct),
        Value::Object(map) => map.values_mut().for_each(collapse_direct),
        _ => {}
    }
}

#[tokio::test]
async fn the_active_tools_start_again_in_every_new_resumed_or_forked_session_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = replacements(false, &servers).await else { return };
    let Some(theirs) = replacements(true, &servers).await else { return };
    let at = |reason: &str, active: &[&str]| json!({"reason": reason, "active": active});
    // A new session: the defaults and the extension's tool, then MCP's.
    assert_eq!(ours["new"]["atStart"], at("new", &["read", "bash", "edit", "write", "own"]), "{ours}");
    assert_eq!(ours["new"]["active"], json!(["read", "bash", "edit", "write", "own", "codemode", "<direct>"]));
    // A resumed, cloned or forked one: the loadout its branch recorded, then MCP's.
    for step in ["resumed", "cloned", "forked"] {
        assert_eq!(ours[step]["atStart"]["active"], json!(["read", "own", "lazy"]), "{step}: {ours}");
        assert_eq!(ours[step]["active"], json!(["read", "own", "lazy", "codemode", "<direct>"]), "{step}");
    }
    // An extension's `setActiveTools()` in its `session_start` handler, then MCP's.
    assert_eq!(ours["picked"]["active"], json!(["read", "lazy", "codemode", "<direct>"]));
    assert_eq!(ours["offered"], ours["picked"]["active"], "the model is offered them");
    assert_eq!(ours, theirs, "pi 1.6.0 does the same");
}

/// The tools one program offered the model with `flags` and a `codemode`
/// server configured.
async fn offered(reference: bool, servers: &Servers, flags: &[&str]) -> Option<Vec<String>> {
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"everything": servers.everything("stdio")}));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference, flags)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    pi.close_stdin();
    Some(tool_names(&requests.last().expect("a model call").body))
}

#[tokio::test]
async fn without_a_codemode_tool_the_model_is_not_offered_one_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    for flags in [&["--tools", "read,bash"][..], &["--no-extensions"]] {
        let Some(ours) = offered(false, &servers, flags).await else { return };
        let Some(theirs) = offered(true, &servers, flags).await else { return };
        assert!(!ours.iter().any(|t| t == "codemode"), "{flags:?}: {ours:?}");
        assert_eq!(ours, theirs, "{flags:?}: as pi 1.6.0");
    }
}
