//! More of `createMcpExtension`'s behaviour, run by pi-rpc and by pi 1.6.0
//! side by side (the same extension, fake model server and real
//! server-everything): the start-up warning pi writes when a factory's copy
//! replaces one of its built-in extensions, `createMcpExtension` with
//! `--no-tools` (the servers connect, `/mcp` is the extension's, no MCP tool
//! is offered, and pi's warning that the tools cannot be reached), and its
//! `createTransport` (the extension's own transport carries the client's
//! messages to the server it starts itself), and its `startupWaitMs` (the
//! first prompt stops waiting for a `direct` server then, with pi's "still
//! connecting" note, given once).
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::extension_builtin_factories::{ROOTS_LOGGED, logged_roots, start};
use crate::extension_host::write_module;
use crate::harness::Sandbox;
use crate::mcp::{Servers, result, result_text, results, tool_names, write_mcp};

/// One extension applying all three factories.
const ALL_THREE: &str = r#"import { createCodemodeExtension, createMcpExtension, createToolSearchExtension } from "@earendil-works/pi-coding-agent";
export default function (pi: any) {
  createToolSearchExtension()(pi);
  createCodemodeExtension()(pi);
  createMcpExtension()(pi);
}
"#;

/// The replacement warnings one program wrote to stderr with `flags`, from
/// `Extension package` on, sorted (pi writes them in its built-ins' order,
/// pi-rpc as the factories are applied).
async fn replacement_warnings(reference: bool, flags: &[&str]) -> Option<Vec<String>> {
    let sb = Sandbox::with_server().await;
    let path = write_module(&sb, "all-three.ts", ALL_THREE);
    let mut pi = start(&sb, reference, flags)?;
    pi.send(json!({"id": "g", "type": "get_commands"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "g").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    pi.close_stdin();
    pi.wait().await;
    let stderr = pi.stderr();
    let mut warnings: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains("was not loaded"))
        .filter_map(|l| l.find("Extension package").map(|at| l[at..].replace(&path, "<extension>")))
        .collect();
    warnings.sort();
    Some(warnings)
}

#[tokio::test]
async fn a_factory_that_replaces_a_built_in_is_warned_about_as_in_pi() {
    for (flags, replaced) in [(&[][..], 3), (&["--no-mcp"][..], 2)] {
        let Some(ours) = replacement_warnings(false, flags).await else { return };
        let Some(theirs) = replacement_warnings(true, flags).await else { return };
        assert_eq!(ours.len(), replaced, "{flags:?}: {ours:#?}");
        assert!(
            ours[0].starts_with(
                "Extension package \"builtin:codemode\": Extension <extension> registers tool `codemode`, so \
                 built-in extension `codemode` was not loaded."
            ),
            "{flags:?}: {ours:#?}"
        );
        assert_eq!(ours, theirs, "{flags:?}: pi 1.6.0 writes the same warnings");
    }
}

/// With `--no-tools` and [`ALL_THREE`]'s MCP part alone: `/mcp`'s owner,
/// the warnings notified before the first prompt, the tools of the model
/// call, and whether `/mcp` says the server connected.
async fn no_tools(reference: bool, servers: &Servers) -> Option<(String, Vec<String>, Vec<String>, bool)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    write_mcp(&sb, json!({"everything": {"command": servers.node, "args": [script, "stdio"]}}));
    let source = "import { createMcpExtension } from \"@earendil-works/pi-coding-agent\";\n\
                  export default createMcpExtension();\n";
    let path = write_module(&sb, "my-mcp.ts", source);
    let mut pi = start(&sb, reference, &["--no-tools"])?;
    pi.send(json!({"id": "g", "type": "get_commands"})).await;
    let mut lines = pi.until(|v| v["type"] == "response" && v["id"] == "g").await;
    let commands = lines.last().expect("the response")["data"]["commands"].clone();
    let mcp = commands.as_array().into_iter().flatten().find(|c| c["name"] == "mcp").cloned().unwrap_or(Value::Null);
    let owner = mcp["sourceInfo"]["path"].as_str().unwrap_or_default().replace(&path, "<extension>");
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    lines.extend(pi.until_type("agent_settled").await);
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let warnings = lines
        .iter()
        .filter(|v| v["method"] == "notify" && v["notifyType"] == "warning")
        .map(|v| v["message"].as_str().unwrap_or_default().to_string())
        .collect();
    let tools = tool_names(&sb.server().requests()[0].body);
    // `/mcp` answers once the server settled; pi-rpc's status text is its own (DEVIATIONS).
    let mut connected = false;
    for _ in 0..40 {
        pi.send(json!({"id": "m", "type": "prompt", "message": "/mcp"})).await;
        let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "info").await;
        let status = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
        connected = status.contains("everything: connected");
        if connected || !status.contains("connecting") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    pi.close_stdin();
    Some((owner, warnings, tools, connected))
}

#[tokio::test]
async fn create_mcp_extension_with_no_tools_connects_the_servers_without_tools_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = no_tools(false, &servers).await else { return };
    let Some(theirs) = no_tools(true, &servers).await else { return };
    assert_eq!(ours.0, "<extension>", "/mcp is the extension's command");
    assert_eq!(
        ours.1,
        ["MCP tools are only reachable from the codemode or tool_search tool, but neither is active; they cannot \
          be called."]
    );
    assert_eq!(ours.2, Vec::<String>::new(), "no tool is offered with --no-tools");
    assert!(ours.3, "/mcp shows the server connected");
    assert_eq!(ours, theirs, "as in pi 1.6.0");
}

/// `createMcpExtension({ createTransport })` whose transport starts the
/// entry's command itself and speaks JSON lines with it; `/transports`
/// tells what the factory was given and which methods went through.
const OWN_TRANSPORT: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
import { spawn } from "node:child_process";

const seen: any[] = [];
const methods = new Set<string>();
let answers = 0;

function lineTransport(entry: any) {
  const listeners: Record<string, any[]> = { message: [], error: [], close: [] };
  const on = (kind: string) => (fn: any) => {
    listeners[kind].push(fn);
    return () => { listeners[kind] = listeners[kind].filter((f) => f !== fn); };
  };
  let child: any;
  return {
    async start() {
      child = spawn(entry.config.command, entry.config.args ?? [], { stdio: ["pipe", "pipe", "ignore"] });
      let buffer = "";
      child.stdout.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        let at;
        while ((at = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, at).trim();
          buffer = buffer.slice(at + 1);
          if (!line) continue;
          const message = JSON.parse(line);
          if ("result" in message) answers++;
          for (const fn of listeners.message) fn(message);
        }
      });
      child.on("exit", () => { for (const fn of listeners.close) fn(); });
    },
    async send(message: any) {
      if (message.method) methods.add(message.method);
      child.stdin.write(JSON.stringify(message) + "\n");
    },
    async close() { child?.kill(); },
    onMessage: on("message"),
    onError: on("error"),
    onClose: on("close"),
  };
}

export default function (pi: any) {
  createMcpExtension({
    createTransport: (entry: any, cwd: string) => {
      seen.push({
        name: entry.name,
        keys: Object.keys(entry).sort(),
        scope: entry.scope,
        source: entry.source.split("/").pop(),
        args: entry.config.args.length,
        cwd: cwd === process.cwd(),
      });
      return lineTransport(entry);
    },
  })(pi);
  pi.registerCommand("transports", {
    handler: async (_args: string, ctx: any) => {
      const wanted = ["initialize", "notifications/initialized", "tools/list", "tools/call"];
      ctx.ui.notify(JSON.stringify({ seen, methods: wanted.filter((m) => methods.has(m)), answered: answers > 0 }), "info");
    },
  });
}
"#;

/// What one program did with [`OWN_TRANSPORT`] and server-everything in
/// `mcp.json` (`direct`): the MCP tools of the first model call, the sum's
/// result, then the `/transports` note.
async fn own_transport(reference: bool, servers: &Servers) -> Option<(Vec<String>, String, Value)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    write_mcp(&sb, json!({"everything": {"command": servers.node, "args": [script, "stdio"], "exposure": "direct"}}));
    write_module(&sb, "transported.ts", OWN_TRANSPORT);
    let mut pi = start(&sb, reference, &[])?;
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__everything__get_sum", r#"{"a":2,"b":3}"#)]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "sum"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let sum = result_text(result(&results(&lines), "c1"));
    let first = tool_names(&sb.server().requests()[0].body).into_iter().filter(|t| t.contains("mcp")).collect();
    pi.send(json!({"id": "t", "type": "prompt", "message": "/transports"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    pi.close_stdin();
    Some((first, sum, serde_json::from_str(&note).unwrap_or(Value::String(note))))
}

#[tokio::test]
async fn create_transport_carries_the_clients_messages_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = own_transport(false, &servers).await else { return };
    let Some(theirs) = own_transport(true, &servers).await else { return };
    assert!(ours.0.iter().any(|t| t == "mcp__everything__get_sum"), "listed through the transport: {:?}", ours.0);
    assert_eq!(ours.1, "The sum of 2 and 3 is 5.", "called through the transport");
    assert_eq!(
        ours.2,
        json!({
            "seen": [{"name": "everything", "keys": ["config", "name", "scope", "source"], "scope": "global",
                      "source": "mcp.json", "args": 2, "cwd": true}],
            "methods": ["initialize", "notifications/initialized", "tools/list", "tools/call"],
            "answered": true,
        })
    );
    assert_eq!(ours, theirs, "as in pi 1.6.0");
}

/// `createMcpExtension({ updateConfig })`, with `/calls` telling whether it was called.
const UPDATE_CONFIG: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
const calls: any[] = [];
export default function (pi: any) {
  createMcpExtension({ updateConfig: (entry: any, patch: any) => { calls.push({ name: entry.name, patch }); } })(pi);
  pi.registerCommand("calls", { handler: async (_args: string, ctx: any) => ctx.ui.notify(JSON.stringify(calls), "info") });
}
"#;

/// `/mcp` and the changes pi's TUI manager makes (enable, disable,
/// exposure) asked for in RPC mode: the `updateConfig` calls, and whether
/// `mcp.json` is as it was.
async fn mcp_changes(reference: bool, servers: &Servers) -> Option<(Value, bool)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    write_mcp(&sb, json!({"everything": {"command": servers.node, "args": [script, "stdio"]}}));
    let mcp_json = sb.agent_dir.path().join("mcp.json");
    let before = std::fs::read(&mcp_json).expect("mcp.json");
    write_module(&sb, "updating.ts", UPDATE_CONFIG);
    let mut pi = start(&sb, reference, &[])?;
    for (id, text) in [
        ("a", "/mcp"),
        ("b", "/mcp disable everything"),
        ("c", "/mcp enable everything"),
        ("d", "/mcp exposure everything direct"),
    ] {
        pi.send(json!({"id": id, "type": "prompt", "message": text})).await;
        let lines = pi.until(|v| v["type"] == "response" && v["id"] == id).await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    }
    pi.send(json!({"id": "e", "type": "prompt", "message": "/calls"})).await;
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with('['))).await;
    let calls = lines.last().and_then(|v| v["message"].as_str()).and_then(|m| serde_json::from_str(m).ok());
    pi.close_stdin();
    Some((calls.unwrap_or(Value::Null), std::fs::read(&mcp_json).ok() == Some(before)))
}

#[tokio::test]
async fn mcp_changes_nothing_and_calls_no_update_config_in_rpc_mode_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = mcp_changes(false, &servers).await else { return };
    let Some(theirs) = mcp_changes(true, &servers).await else { return };
    // pi's `/mcp` in RPC mode shows the servers and signs in or reconnects
    // one; enabling, disabling and exposure are its terminal UI's only.
    assert_eq!(ours, (json!([]), true), "no updateConfig call, mcp.json unchanged");
    assert_eq!(ours, theirs, "as in pi 1.6.0");
}

/// server-everything in `mcp.json` (`direct`), an extension with
/// `createMcpExtension({ logPath })`, `get_roots_list` called: the roots
/// lines of `logPath`, and whether `<agent dir>/mcp.log` exists.
async fn mcp_json_log(reference: bool, servers: &Servers) -> Option<((Vec<String>, bool), bool)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    write_mcp(&sb, json!({"everything": {"command": servers.node, "args": [script, "stdio"], "exposure": "direct"}}));
    let custom_log = sb.agent_dir.path().join("logs/servers.log");
    let source = format!(
        "import {{ createMcpExtension }} from \"@earendil-works/pi-coding-agent\";\n\
         export default createMcpExtension({{ logPath: {} }});\n",
        json!(custom_log.to_string_lossy())
    );
    write_module(&sb, "logged.ts", &source);
    let mut pi = start(&sb, reference, &[])?;
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__everything__get_roots_list", "{}")]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "roots"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let logged = logged_roots(&custom_log).await;
    pi.close_stdin();
    pi.wait().await;
    Some((logged, sb.agent_dir.path().join("mcp.log").exists()))
}

#[tokio::test]
async fn mcp_json_servers_connect_after_the_factory_and_log_only_to_its_log_path_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = mcp_json_log(false, &servers).await else { return };
    let Some(theirs) = mcp_json_log(true, &servers).await else { return };
    assert_eq!(ours.0.0, [ROOTS_LOGGED], "the roots line is in logPath");
    assert!(ours.0.1, "each line starts with an ISO time");
    assert!(!ours.1, "nothing went to <agent dir>/mcp.log: the server connected after the factory applied");
    assert_eq!(ours, theirs, "as in pi 1.6.0");
}

/// An extension that is pi's MCP extension with a 1 ms `startupWaitMs`.
const SHORT_WAIT: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
export default function (pi: any) {
  createMcpExtension({ startupWaitMs: 1 })(pi);
}
"#;

/// The notifications of two prompts in one program whose only server is a `direct` one that never
/// answers `initialize`, and the first answer's text.
async fn short_wait(srv: &Servers, reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "short-wait.ts", SHORT_WAIT);
    let silent = json!({"command": srv.node, "args": ["-e", "setInterval(() => {}, 1000)"], "exposure": "direct"});
    write_mcp(&sb, json!({"silent": silent}));
    sb.server().set_fallback(Reply::text("Answered."));
    let mut pi = start(&sb, reference, &[])?;
    let mut notes = Vec::new();
    for id in ["p1", "p2"] {
        pi.send(json!({"id": id, "type": "prompt", "message": "hi"})).await;
        let lines = pi.until_type("agent_settled").await;
        let notified = lines.iter().filter(|v| v["method"] == "notify");
        notes.push(notified.map(|v| json!([v["message"], v["notifyType"]])).collect::<Vec<_>>());
    }
    pi.close_stdin();
    Some(json!({"notes": notes, "requests": sb.server().request_count()}))
}

#[tokio::test]
async fn the_first_prompt_notes_a_direct_server_still_connecting_after_start_up_wait_ms_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = short_wait(&srv, false).await else { return };
    let still = json!(["MCP servers are still connecting; their tools become available once connected.", "info"]);
    assert_eq!(ours, json!({"notes": [[still], []], "requests": 2}), "pi-rpc");
    let Some(theirs) = short_wait(&srv, true).await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
