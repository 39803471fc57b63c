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

/// The TypeScript helpers the extensions use: an SDK session over the given
/// factories, its UI's notes and its extension errors collected; and
/// `eventually(done)`, whether `done()` came true, checked every 50 ms for 6 s
/// (what each program does in the background).
macro_rules! sub_session_ts {
    () => {
        r#"async function eventually(done: () => boolean) {
  for (let i = 0; i < 120 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return done();
}

async function subSession(ctx: any, factories: any[], notes: any[], errors: string[], moreUi: any = {}) {
  const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: factories } as any);
  await resourceLoader.reload();
  const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
  const ui: any = { notify: (message: string, level: string) => { notes.push([message, level ?? null]); }, ...moreUi };
  await session.bindExtensions({ uiContext: ui, mode: "rpc", onError: (e: any) => errors.push(`${e.event}: ${e.error}`) } as any);
  return session;
}
"#
    };
}

const SDK_SUBMCP: &str = concat!(
    r#"import {
  createAgentSession, createCodemodeExtension, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const stable = (text: string) => text.replace(/Wall time [0-9.]+ seconds/g, "Wall time N seconds");

"#,
    sub_session_ts!(),
    r#"
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
"#
);

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
    // The sub-session's first request: pi's `mcp_servers` section of its system prompt.
    summary["section"] = json!(servers_section(&first_system_prompt(&sb)));
    Some(summary)
}

/// The `mcp_servers` section in a system prompt, line by line: its introduction and one line per
/// server (`- <namespace> (<how>): <summary>`).
pub(crate) fn section_lines(prompt: &str) -> Option<Vec<String>> {
    let start = prompt.find("MCP servers whose tools are not declared to you.")?;
    let mut lines = prompt[start..].lines();
    let intro = lines.next()?.to_string();
    let servers = lines.take_while(|line| line.starts_with("- ")).map(str::to_string);
    Some(std::iter::once(intro).chain(servers).collect())
}

/// The `mcp_servers` section in a system prompt: its introduction and the head of each server
/// line (`- <namespace> (<how>)`; the summary after it is the server's instructions once it
/// connected, which may fall after the first prompt started in either program).
fn servers_section(prompt: &str) -> Option<Vec<String>> {
    let mut lines = section_lines(prompt)?;
    for line in lines.iter_mut().skip(1) {
        *line = line.split(':').next().unwrap_or(line).to_string();
    }
    Some(lines)
}

/// The system prompt of the first model request `sb`'s fake server got.
fn first_system_prompt(sb: &Sandbox) -> String {
    let requests = sb.server().requests();
    let first_prompt = requests.first().and_then(|r| r.body["messages"][0]["content"].as_str().map(str::to_string));
    first_prompt.unwrap_or_default()
}

/// The JSON summary `/<command>` of `module` notifies last in one program (pi 1.6.0 with
/// `reference`) whose sandbox `setup` prepared, the fake model answering `replies` first.
pub(crate) async fn command_summary(
    reference: bool,
    module: (&str, &str),
    command: &str,
    replies: &[Reply],
    setup: &dyn Fn(&Sandbox),
) -> Option<Value> {
    let (mut pi, sb) = start_module(reference, module, replies, setup).await?;
    let mut notified = notified_where(&mut pi, &sb, command, |message| message.starts_with('{')).await;
    pi.close_stdin();
    let note = notified.pop().unwrap_or_default();
    Some(serde_json::from_str(&note).unwrap_or_else(|e| panic!("/{command} notified {note}: {e}")))
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
    assert_eq!(ours["section"][1], "- mcp__everything (codemode)", "{ours}");
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

/// An extension command that runs an SDK session with pi's MCP extension over `grower` (the
/// list-change fixture, `direct`): the model calls `grow`, the session waits for the tool `grown`
/// the changed list adds and the model calls it; then an extension of the sub-session registers
/// `late` (the fixture again, its pids in `<pid file>.late`) and the session waits for its tools;
/// `/mcp` is prompted there; the session is disposed.
const SDK_SUBCONN: &str = concat!(
    r#"import { createAgentSession, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { readFileSync } from "node:fs";
import { join } from "node:path";

"#,
    sub_session_ts!(),
    r#"
export default function (pi: ExtensionAPI) {
  pi.registerCommand("subconn", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      let subPi: any;
      // The sub-session's extension registers a server that cannot start: reported there once the servers settled.
      const capture = (p: any) => { subPi = p; p.registerMcpServer("broken", { command: "/nonexistent/broken-mcp-server", exposure: "direct" }); };
      const session = await subSession(ctx, [createMcpExtension(), capture], notes, errors);
      const has = (name: string) => session.getAllTools().some((t: any) => t.name === name);
      await session.prompt("grow");
      const grownThere = await eventually(() => has("mcp__grower__grown"));
      await session.prompt("call grown");
      const grower = JSON.parse(readFileSync(join(getAgentDir(), "mcp.json"), "utf8")).mcpServers.grower;
      const pidFile = `${grower.env.LIST_CHANGE_PID_FILE}.late`;
      subPi.registerMcpServer("late", { ...grower, env: { ...grower.env, LIST_CHANGE_PID_FILE: pidFile } });
      const lateThere = await eventually(() => has("mcp__late__grow"));
      // A second SDK session meanwhile: its own grower process, whose list never grew.
      const second = await subSession(ctx, [createMcpExtension()], notes, errors);
      const secondConnected = await eventually(() => second.getAllTools().some((t: any) => t.name === "mcp__grower__grow"));
      const secondGrown = second.getAllTools().some((t: any) => t.name === "mcp__grower__grown");
      second.dispose();
      const statusAt = notes.length;
      await session.prompt("/mcp");
      const status = notes.splice(statusAt).map((note) => note[0]).join("\n");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        name: m.toolName, text: m.content.map((c: any) => c.text ?? c.type), isError: m.isError,
      }));
      const subTools = session.getAllTools().filter((t: any) => t.name.startsWith("mcp__")).map((t: any) => t.name).sort();
      const titled = session.getToolDefinition("mcp__grower__titled")?.description ?? null;
      const active = session.getActiveToolNames().filter((name: string) => name.startsWith("mcp__")).sort();
      session.dispose();
      const statusNames = ["grower", "late"].filter((name) => status.includes(name));
      // How a failure is worded is each program's own (DEVIATIONS, MCP).
      const reported = notes.map(([message, level]) => [message.replace(/failed: .*/g, "failed: <error>"), level]);
      ctx.ui.notify(JSON.stringify({ errors, notes: reported, grownThere, lateThere, secondConnected, secondGrown, results, subTools, active, titled, statusNames }), "info");
    },
  });
}
"#
);

/// The list-change fixture server's entry, its pids written to `pid_file`.
fn grower(servers: &Servers, pid_file: &std::path::Path) -> Value {
    json!({
        "command": servers.node,
        "args": [crate::mcp::repo_root().join("tests/mcp/list-change-server.mjs")],
        "env": {"MCP_SDK_DIR": servers.modules.join("@modelcontextprotocol/sdk"), "LIST_CHANGE_PID_FILE": pid_file},
    })
}

/// Whether process `pid` still runs (a zombie does not count).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
    matches!(state, Some(s) if s != "Z" && s != "X")
}

/// The pids `what` (`start` / `grow`) of the fixture's lines in `file`.
fn fixture_pids(file: &std::path::Path, what: &str) -> Vec<u32> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines().filter_map(|line| line.strip_prefix(what)?.trim().parse().ok()).collect()
}

/// `/subconn`'s summary in one program, with how many fixture processes started (`processes`:
/// the running session's grower, each SDK session's, `late`) and how many still run once both SDK
/// sessions were disposed (`running`, waited for up to 20 s to come down to the running
/// session's one), read before the program ends.
async fn subconn_summary(reference: bool, servers: &Servers) -> Option<Value> {
    let pid_file = std::sync::Mutex::new(std::path::PathBuf::new());
    let setup = |sb: &Sandbox| {
        let file = sb.cwd.path().join("list-change.pids");
        let mut grower = grower(servers, &file);
        grower["exposure"] = json!("direct");
        *pid_file.lock().unwrap() = file;
        write_mcp(sb, json!({ "grower": grower }));
    };
    let replies = [
        Reply::tool_call("call_1", "mcp__grower__grow", "{}"),
        Reply::text("Grew."),
        Reply::tool_call("call_2", "mcp__grower__grown", "{}"),
        Reply::text("Called."),
    ];
    let (mut pi, sb) = start_module(reference, ("sdk-subconn.ts", SDK_SUBCONN), &replies, &setup).await?;
    let mut notified = notified_where(&mut pi, &sb, "subconn", |message| message.starts_with('{')).await;
    let note = notified.pop().unwrap_or_default();
    let mut summary: Value = serde_json::from_str(&note).unwrap_or_else(|e| panic!("/subconn notified {note}: {e}"));
    let file = pid_file.lock().unwrap().clone();
    let pids: Vec<u32> = fixture_pids(&file, "start")
        .into_iter()
        .chain(fixture_pids(&file.with_extension("pids.late"), "start"))
        .collect();
    let still_running = || pids.iter().filter(|pid| running(**pid)).count();
    for _ in 0..200 {
        if still_running() <= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    summary["processes"] = json!(pids.len());
    summary["running"] = json!(still_running());
    pi.close_stdin();
    Some(summary)
}

#[tokio::test]
async fn an_sdk_session_connects_the_servers_again_and_follows_their_tool_list_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(mut ours) = subconn_summary(false, &servers).await else { return };
    let Some(mut theirs) = subconn_summary(true, &servers).await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["grownThere"], true, "{ours}");
    assert_eq!(ours["results"][1]["text"][0], "grown in this process", "{ours}");
    assert_eq!((&ours["secondConnected"], &ours["secondGrown"]), (&json!(true), &json!(false)), "{ours}");
    assert_eq!(ours["lateThere"], true, "{ours}");
    assert_eq!(ours["titled"], "A tool with a title only", "{ours}");
    assert_eq!(ours["statusNames"], json!(["grower", "late"]), "{ours}");
    let report = "MCP servers need attention:\n  broken: failed: <error>\nRun /mcp to fix.";
    assert_eq!(ours["notes"], json!([[report, "warning"]]), "{ours}");
    // The running session's grower, each SDK session's and late: only the running session's
    // still runs once the SDK sessions were disposed. pi 1.6.0 keeps them all (its dispose()
    // closes no MCP connection; they end with pi).
    assert_eq!((&ours["processes"], &ours["running"]), (&json!(4), &json!(1)), "{ours}");
    assert_eq!((&theirs["processes"], &theirs["running"]), (&json!(4), &json!(4)), "{theirs}");
    for summary in [&mut ours, &mut theirs] {
        summary.as_object_mut().unwrap().remove("running");
    }
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// An extension command that runs an SDK session over pi's MCP extension made with
/// `createMcpExtension({ loadConfig, logPath })` (`loadConfig` answers the servers of
/// `<agent dir>/loaded.json`, which `mcp.json` does not name) and two more extensions that note
/// the `mcp_servers_change` events they get. After a first prompt, one of them registers
/// `late-broken`, which cannot start, and, once that is reported, the other tries to unregister
/// it (not its own), then its owner does. Then a sub-session without pi's MCP extension whose
/// extension registers a server: pi reports it to `onError`, as no extension connects it.
const SDK_SUBREACH: &str = concat!(
    r#"import { createAgentSession, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

"#,
    sub_session_ts!(),
    r#"
export default function (pi: ExtensionAPI) {
  pi.registerCommand("subreach", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      const events: any[] = [];
      const loaded = JSON.parse(readFileSync(join(getAgentDir(), "loaded.json"), "utf8"));
      const logPath = join(ctx.cwd, "sub-mcp.log");
      let loadCalls = 0;
      const mcp = createMcpExtension({ loadConfig: () => { loadCalls++; return loaded; }, logPath } as any);
      let observer: any;
      let registrar: any;
      const noting = (who: string) => (p: any) => p.on("mcp_servers_change", (event: any) => { events.push([who, event.servers.map((s: any) => s.name)]); });
      const observe = (p: any) => { observer = p; noting("observer")(p); };
      const register = (p: any) => { registrar = p; noting("registrar")(p); };
      const session = await subSession(ctx, [mcp, observe, register], notes, errors);
      await session.prompt("hello");
      registrar.registerMcpServer("late-broken", { command: "/nonexistent/late-broken-mcp-server", exposure: "direct" });
      const reported = await eventually(() => notes.some(([message]) => message.includes("late-broken")));
      await eventually(() => events.length >= 2);
      observer.unregisterMcpServer("late-broken");
      const afterOthers = registrar.getMcpServers().map((s: any) => s.name);
      registrar.unregisterMcpServer("late-broken");
      await eventually(() => events.length >= 4);
      const logged = await eventually(() => existsSync(logPath));
      session.dispose();
      // A sub-session whose extension registers a server that no extension there connects.
      const unconnected: string[] = [];
      const alone = await subSession(ctx, [(p: any) => p.registerMcpServer("unconnected", { command: "unconnected-mcp-server" })], [], unconnected);
      alone.dispose();
      // How a failure is worded is each program's own (DEVIATIONS, MCP).
      const said = notes.map(([message, level]) => [message.replace(/failed: .*/g, "failed: <error>"), level]);
      ctx.ui.notify(JSON.stringify({ errors, notes: said, reported, events, afterOthers, logged, loadCalls, unconnected }), "info");
    },
  });
}
"#
);

/// `/subreach`'s summary in one program, with the `mcp_servers` section of the sub-session's
/// first request (`section`), whole: `loadConfig` answers `zeta` (server-everything, `codemode`,
/// described), `Alpha` (the list-change fixture, `direct` but its `grow` `deferred`, described at
/// length) and `beta-docs` (the fixture, `deferred`, without description or instructions).
async fn subreach_summary(reference: bool, servers: &Servers) -> Option<Value> {
    let setup = |sb: &Sandbox| {
        let file = sb.cwd.path().join("list-change.pids");
        let mut zeta = servers.everything("stdio");
        zeta["description"] = json!("Last server.");
        let mut alpha = grower(servers, &file);
        alpha["exposure"] = json!("direct");
        alpha["toolExposure"] = json!({"grow": "deferred"});
        alpha["description"] = json!("An alpha server whose description runs long. ".repeat(8));
        let mut beta = grower(servers, &file);
        beta["exposure"] = json!("deferred");
        let entry = |name: &str, config: Value| json!({"name": name, "config": config, "source": "loadConfig", "scope": "global"});
        let servers = [entry("zeta", zeta), entry("Alpha", alpha), entry("beta-docs", beta)];
        let loaded = json!({"servers": servers, "errors": []});
        std::fs::write(sb.agent_dir.path().join("loaded.json"), loaded.to_string()).unwrap();
    };
    let replies = [Reply::text("Hi.")];
    let (mut pi, sb) = start_module(reference, ("sdk-subreach.ts", SDK_SUBREACH), &replies, &setup).await?;
    let mut notified = notified_where(&mut pi, &sb, "subreach", |message| message.starts_with('{')).await;
    pi.close_stdin();
    let note = notified.pop().unwrap_or_default();
    let mut summary: Value = serde_json::from_str(&note).unwrap_or_else(|e| panic!("/subreach notified {note}: {e}"));
    summary["section"] = json!(section_lines(&first_system_prompt(&sb)));
    // pi 1.6.0's start-up report names every server failed by then: when the servers the
    // sub-session started with settle after `late-broken` failed, pi reports it twice (a race of
    // pi's, about one run in four here). A note said again counts once in both programs.
    if let Some(notes) = summary["notes"].as_array_mut() {
        let mut seen = Vec::new();
        notes.retain(|note| {
            !seen.contains(note) && {
                seen.push(note.clone());
                true
            }
        });
    }
    Some(summary)
}

#[tokio::test]
async fn an_sdk_sessions_mcp_extension_takes_its_options_announces_changes_to_all_and_reports_late_servers_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = subreach_summary(false, &servers).await else { return };
    let Some(theirs) = subreach_summary(true, &servers).await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    let report = "MCP servers need attention:\n  late-broken: failed: <error>\nRun /mcp to fix.";
    assert!(ours["notes"].as_array().unwrap().contains(&json!([report, "warning"])), "{ours}");
    let events =
        json!([["observer", ["late-broken"]], ["registrar", ["late-broken"]], ["observer", []], ["registrar", []]]);
    assert_eq!(ours["events"], events, "{ours}");
    assert_eq!(ours["afterOthers"], json!(["late-broken"]), "{ours}");
    assert_eq!((&ours["logged"], &ours["loadCalls"]), (&json!(true), &json!(1)), "{ours}");
    let unconnected = "register_mcp_server: MCP server \"unconnected\" is registered, but no loaded extension connects MCP servers; another extension may have replaced the built-in MCP support";
    assert_eq!(ours["unconnected"], json!([unconnected]), "{ours}");
    let alpha = "An alpha server whose description runs long. ".repeat(8);
    let cut: String = alpha.chars().take(249).collect();
    let section = json!([
        "MCP servers whose tools are not declared to you. Call the tools of `codemode` servers from codemode scripts. Load the tools of `tool_search` servers with `tool_search`.",
        format!("- mcp__Alpha (tool_search): {}…", cut.trim_end()),
        "- mcp__beta_docs (tool_search)",
        "- mcp__zeta (codemode): Last server.",
    ]);
    assert_eq!(ours["section"], section, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// An extension command that runs an SDK session over `createMcpExtension({ createTransport })`
/// (the shared fetch transport, `fixtures/mcp_fetch_transport.ts`): the model calls `echo` of
/// `remote` (server-everything over HTTP, `direct`), which goes through the transports the
/// sub-session's factory made; `opened` says for which servers `createTransport` was called and
/// whether its `cwd` is the sub-session's.
const SDK_SUBTRANSPORT: &str = concat!(
    r#"import { createAgentSession, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

"#,
    sub_session_ts!(),
    r#"
export default function (pi: ExtensionAPI) {
  pi.registerCommand("subtransport", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      const opened: any[] = [];
      const sent: string[] = [];
      const createTransport = (entry: any, cwd: string) => {
        opened.push([entry.name, cwd === ctx.cwd]);
        return fetchTransport(entry.config.url, { sending: (message: any) => { if (message.method === "tools/call") sent.push(message.params.name); } });
      };
      const session = await subSession(ctx, [createMcpExtension({ createTransport } as any)], notes, errors);
      await session.prompt("echo");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        name: m.toolName, text: m.content.map((c: any) => c.text ?? c.type), isError: m.isError,
      }));
      session.dispose();
      ctx.ui.notify(JSON.stringify({ errors, notes, opened, sent, results }), "info");
    },
  });
}
"#
);

#[tokio::test]
async fn an_sdk_sessions_servers_connect_through_its_mcp_extensions_create_transport_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let mut summaries = Vec::new();
    for reference in [false, true] {
        let (_everything, port) = crate::mcp::start_http_everything(&servers).await;
        let setup = |sb: &Sandbox| {
            write_mcp(sb, json!({"remote": {"url": format!("http://127.0.0.1:{port}/mcp"), "exposure": "direct"}}));
        };
        let replies =
            [Reply::tool_call("call_1", "mcp__remote__echo", r#"{"message":"through"}"#), Reply::text("Echoed.")];
        let source = crate::mcp_fetch_transport::with_fetch_transport(SDK_SUBTRANSPORT);
        let module = ("sdk-subtransport.ts", source.as_str());
        let Some(summary) = command_summary(reference, module, "subtransport", &replies, &setup).await else {
            return;
        };
        summaries.push(summary);
    }
    let (ours, theirs) = (&summaries[0], &summaries[1]);
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["opened"], json!([["remote", true]]), "{ours}");
    assert_eq!(ours["sent"], json!(["echo"]), "{ours}");
    assert_eq!(ours["results"][0]["text"][0], "Echo: through", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// An extension command that runs an SDK session over `createMcpExtension({ credentials })`: the
/// store (pi's `McpOAuthCredentialStore` shape, in memory) starts with the state in `state.json`,
/// whose access token the guarded server no longer accepts. The model calls `echo` of `remote`
/// (`direct`); `ops` are the store calls the sub-session's client made (`load`, `save`, `lock`,
/// each once), `refreshed` whether the state saved holds a new access token.
const SDK_SUBCREDS: &str = concat!(
    r#"import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createAgentSession, createMcpExtension, DefaultResourceLoader, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

"#,
    sub_session_ts!(),
    r#"
export default function (pi: ExtensionAPI) {
  pi.registerCommand("subcreds", {
    handler: async (_args, ctx) => {
      const errors: string[] = [];
      const notes: any[] = [];
      const first = JSON.parse(readFileSync(join(ctx.cwd, "state.json"), "utf8"));
      let state: any = first;
      const ops = new Set<string>();
      const credentials = {
        forServer(name: string, _url: string) {
          return {
            load: () => { ops.add(`load ${name}`); return state; },
            save: (next: any) => { ops.add(`save ${name}`); state = next; },
            withRefreshLock: async <T>(fn: () => Promise<T>) => { ops.add(`lock ${name}`); return fn(); },
          };
        },
        remove: (name: string) => { ops.add(`remove ${name}`); state = undefined; return true; },
      };
      const session = await subSession(ctx, [createMcpExtension({ credentials } as any)], notes, errors);
      await session.prompt("echo");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        name: m.toolName, text: m.content.map((c: any) => c.text ?? c.type), isError: m.isError,
      }));
      session.dispose();
      const refreshed = state?.tokens?.access_token !== first.tokens.access_token;
      ctx.ui.notify(JSON.stringify({ errors, notes, results, ops: [...ops].sort(), refreshed }), "info");
    },
  });
}
"#
);

#[tokio::test]
async fn an_sdk_sessions_servers_sign_in_with_its_mcp_extensions_credentials_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let mut summaries = Vec::new();
    for reference in [false, true] {
        let (_everything, port) = crate::mcp::start_http_everything(&servers).await;
        let oauth = pi_compat::fake_oauth::FakeOAuth::start().await.unwrap();
        oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        let state = oauth.mcp_state(now_ms + 3_600_000);
        oauth.reject_access_tokens();
        let setup = |sb: &Sandbox| {
            write_mcp(sb, json!({"remote": {"url": oauth.mcp_url(), "exposure": "direct"}}));
            std::fs::write(sb.cwd.path().join("state.json"), state.to_string()).unwrap();
        };
        let replies =
            [Reply::tool_call("call_1", "mcp__remote__echo", r#"{"message":"signed in"}"#), Reply::text("Echoed.")];
        let module = ("sdk-subcreds.ts", SDK_SUBCREDS);
        let Some(mut summary) = command_summary(reference, module, "subcreds", &replies, &setup).await else {
            return;
        };
        summary["refreshes"] = json!(oauth.refreshes("mcp"));
        summaries.push(summary);
    }
    let (ours, theirs) = (&summaries[0], &summaries[1]);
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["results"][0]["text"][0], "Echo: signed in", "{ours}");
    assert_eq!((&ours["refreshed"], &ours["refreshes"]), (&json!(true), &json!(1)), "{ours}");
    assert_eq!(ours["ops"], json!(["load remote", "lock remote", "save remote"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
