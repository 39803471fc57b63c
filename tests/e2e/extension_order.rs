//! The session's extension order, side by side with pi 1.6.0: the
//! command-line (`-e`) extensions load first, then the discovered ones
//! (here a user-level one), so where both handle one event the `-e`
//! extension's handler runs first: `input` transforms and
//! `before_agent_start` system prompts chain in that order, its `tool_call`
//! block wins, and `get_commands` lists its command first. The extensions
//! load one after another as in pi: each factory sees the MCP servers, taken
//! names and `pi.events` listeners of those loaded before it, however long
//! their modules take to import, and none of the session's actions.
//! A reload and a new session run the factories again, in turns as well.

use serde_json::{Value, json};

use crate::clients::{node22, repo_root};
use crate::extension_project_trust::{spawn_either, tools_ready};
use crate::harness::Sandbox;

/// An extension named `NAME` that marks every event it handles with its name.
const MARKING_EXTENSION: &str = r#"export default function (pi: any) {
  pi.registerCommand("NAME-cmd", { description: "NAME's command", handler: async () => {} });
  pi.on("input", async (event: any) => ({ action: "transform", text: `${event.text} <NAME>` }));
  pi.on("before_agent_start", async (event: any) => ({ systemPrompt: `${event.systemPrompt} [NAME]` }));
  pi.on("tool_call", async () => ({ block: true, reason: "blocked by NAME" }));
}
"#;

/// The order of `markers` in `text` (those found).
fn order_in(text: &str, markers: &[&str]) -> Vec<String> {
    let mut found: Vec<(usize, &str)> = markers.iter().filter_map(|m| text.find(m).map(|at| (at, *m))).collect();
    found.sort();
    found.into_iter().map(|(_, m)| m.to_string()).collect()
}

/// What pi-rpc (or pi 1.6.0) shows of the order, with a user-level
/// extension `user` and an `-e` extension `cli`.
async fn observe(reference: bool) -> Value {
    use pi_compat::fake_server::{FakeToolCall, Reply};
    let node = node22().expect("node 22");
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "read", r#"{"path":"notes.txt"}"#)]));
    sb.server().set_fallback(Reply::text("done"));
    crate::extension_host::host_settings(&sb, &node, &repo_root().join("target/tools/extension-host"), json!({}));
    crate::extension_host::write_module(&sb, "user.ts", &MARKING_EXTENSION.replace("NAME", "user"));
    let cli = sb.home.path().join("cli.ts");
    std::fs::write(&cli, MARKING_EXTENSION.replace("NAME", "cli")).expect("cli extension");
    let mut pi = spawn_either(&sb, &node, reference, &["-e", &cli.display().to_string()]);
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    let names: Vec<Value> = commands["data"]["commands"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|c| c["name"].as_str().is_some_and(|n| n.ends_with("-cmd")))
                .map(|c| c["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    let lines = pi.until_type("agent_settled").await;
    pi.close_stdin();
    let blocked = crate::mcp::result_text(crate::mcp::result(&crate::mcp::results(&lines), "c1"));
    let first = sb.server().requests().first().map(|r| r.body.to_string()).unwrap_or_default();
    json!({
        "commands": names,
        "input": order_in(&first, &["<cli>", "<user>"]),
        "systemPrompt": order_in(&first, &["[cli]", "[user]"]),
        "blocked": blocked,
    })
}

#[tokio::test]
async fn command_line_extensions_run_before_the_discovered_ones_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let (ours, theirs) = tokio::join!(observe(false), observe(true));
    assert_eq!(ours["commands"], json!(["cli-cmd", "user-cmd"]), "{ours}");
    assert_eq!(ours["input"], json!(["<cli>", "<user>"]), "{ours}");
    assert_eq!(ours["systemPrompt"], json!(["[cli]", "[user]"]), "{ours}");
    assert!(ours["blocked"].as_str().is_some_and(|t| t.contains("blocked by cli")), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}

/// Extension `NAME` of three loaded in order (`a`, `b`, `c`): what its
/// factory sees of the others. `a` takes long to import, registers the MCP
/// server `shared` and listens on `pi.events`; `b` and `c` list the servers,
/// try to register `shared` too and emit on `pi.events`, all in their
/// factories. `/order-NAME` reports it. Each factory writes its start and
/// end to the log at `LOG_PATH` (`a`'s waits a while in between);
/// `/reload-NAME` reloads.
const ORDERED_EXTENSION: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync } from "node:fs";

const SERVER: any = SERVER_CONFIG;
const LOG: string = LOG_PATH;
if ("NAME" === "a") {
  const until = Date.now() + 1500;
  while (Date.now() < until) {}
}

export default async function (pi: ExtensionAPI) {
  appendFileSync(LOG, "NAME+ ");
  const seen: Record<string, unknown> = {};
  const names = () => pi.getMcpServers().map((s) => s.name);
  const heard: unknown[] = [];
  pi.events.on("ping", (data) => heard.push(data));
  seen.servers = names();
  try {
    pi.registerMcpServer("shared", SERVER);
    seen.shared = "registered";
  } catch (error) {
    seen.shared = String((error as Error).message).replace(/"[^"]*[/\\]([^/\\"]+)"/g, '"$1"');
  }
  seen.ownVisible = names();
  pi.events.emit("ping", "NAME");
  // The session's actions are not bound while the extensions load.
  const unbound = (action: () => unknown) => {
    try {
      action();
      return "answered";
    } catch (error) {
      return (error as Error).message;
    }
  };
  seen.unbound = [unbound(() => pi.getAllTools()), unbound(() => pi.getCommands()), unbound(() => pi.getActiveTools())];
  pi.registerCommand("order-NAME", {
    handler: async (_args, ctx) => ctx.ui.notify(JSON.stringify({ ...seen, heard }), "info"),
  });
  pi.registerCommand("reload-NAME", {
    handler: async (_args, ctx) => {
      await ctx.reload();
    },
  });
  // The factories take turns, at start-up, at a reload and in a new session:
  // `a`'s ends before `b`'s starts, however long it waits.
  if ("NAME" === "a") await new Promise((resolve) => setTimeout(resolve, 300));
  appendFileSync(LOG, "NAME- ");
}
"#;

/// What each of the three extensions' factory saw, in pi-rpc or pi 1.6.0.
async fn factory_views(reference: bool, servers: &crate::mcp::Servers) -> Option<Value> {
    let (_sb, mut pi) = start_ordered(reference, servers).await?;
    let views = views_of(&mut pi).await;
    pi.close_stdin();
    Some(views)
}

/// pi-rpc or pi 1.6.0 with the three extensions `a`, `b`, `c`.
async fn start_ordered(reference: bool, servers: &crate::mcp::Servers) -> Option<(Sandbox, crate::harness::Pi)> {
    let sb = Sandbox::with_server().await;
    let server = servers.everything("stdio").to_string();
    let log = Value::from(sb.cwd.path().join("factories.log").display().to_string()).to_string();
    for name in ["a", "b", "c"] {
        let source =
            ORDERED_EXTENSION.replace("NAME", name).replace("SERVER_CONFIG", &server).replace("LOG_PATH", &log);
        crate::extension_host::write_module(&sb, &format!("{name}.ts"), &source);
    }
    let pi = crate::extension_builtin_factories::start(&sb, reference, &[])?;
    Some((sb, pi))
}

/// What the three factories saw, each told by its `/order-NAME`.
async fn views_of(pi: &mut crate::harness::Pi) -> Value {
    let mut views = serde_json::Map::new();
    for name in ["a", "b", "c"] {
        let note = crate::extension_builtin_tools::command_note(pi, &format!("/order-{name}")).await;
        views.insert(name.to_string(), serde_json::from_str(&note).expect("the note is JSON"));
    }
    Value::Object(views)
}

/// The factories' views after a reload and after a new session, and the
/// order in which the factories ran (start-up, reload, new session).
async fn rerun_views(reference: bool, servers: &crate::mcp::Servers) -> Option<Value> {
    let (sb, mut pi) = start_ordered(reference, servers).await?;
    let log = || std::fs::read_to_string(sb.cwd.path().join("factories.log")).expect("the factories' log");
    let reloaded = pi.call("r", json!({"type": "prompt", "message": "/reload-c"})).await;
    assert_eq!(reloaded["success"], true, "{reloaded}");
    let after_reload = views_of(&mut pi).await;
    let log_at_reload = log();
    assert_eq!(pi.call("n", json!({"type": "new_session"})).await["success"], true);
    let after_new = views_of(&mut pi).await;
    pi.close_stdin();
    Some(json!({"logAtReload": log_at_reload, "log": log(), "reload": after_reload, "new": after_new}))
}

#[tokio::test]
async fn each_factory_sees_the_extensions_loaded_before_it_as_in_pi() {
    let Some(servers) = crate::mcp::Servers::find() else { return };
    let Some(ours) = factory_views(false, &servers).await else { return };
    let Some(theirs) = factory_views(true, &servers).await else { return };
    // `a` loads first however long its module takes: `b` finds its server and its name taken.
    assert_eq!(ours["b"]["servers"], json!(["shared"]), "{ours}");
    assert_eq!(ours["b"]["shared"], json!("MCP server \"shared\" is already registered by extension \"a.ts\""));
    assert_eq!(ours["c"]["servers"], json!(["shared"]), "{ours}");
    // A factory's own registration counts once it returned; `a` hears those loaded after it, `c` only itself.
    assert_eq!(ours["a"]["ownVisible"], json!([]), "{ours}");
    assert_eq!(ours["a"]["heard"], json!(["a", "b", "c"]), "{ours}");
    assert_eq!(ours["c"]["heard"], json!(["c"]), "{ours}");
    let unbound = "Extension runtime not initialized. Action methods cannot be called during extension loading.";
    assert_eq!(ours["b"]["unbound"], json!([unbound, unbound, unbound]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}

#[tokio::test]
async fn factories_run_again_by_a_reload_or_a_new_session_take_turns_as_in_pi() {
    let Some(servers) = crate::mcp::Servers::find() else { return };
    let Some(ours) = rerun_views(false, &servers).await else { return };
    let Some(theirs) = rerun_views(true, &servers).await else { return };
    let turns = "a+ a- b+ b- c+ c- ";
    assert_eq!(ours["logAtReload"], json!(turns.repeat(2)), "{ours}");
    assert_eq!(ours["log"], json!(turns.repeat(3)), "{ours}");
    // A new runtime starts empty: `a`'s factory does not see its old instance's server.
    assert_eq!(ours["reload"]["a"]["servers"], json!([]), "{ours}");
    assert_eq!(ours["new"]["a"]["ownVisible"], json!([]), "{ours}");
    assert_eq!(ours["reload"]["a"]["heard"], json!(["a", "b", "c"]), "{ours}");
    assert_eq!(ours["new"]["b"]["servers"], json!(["shared"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}
