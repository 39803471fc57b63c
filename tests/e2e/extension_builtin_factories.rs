//! pi's built-in extension factories (`createCodemodeExtension`,
//! `createMcpExtension`, `createToolSearchExtension`) in an extension, run by
//! pi-rpc and by pi 1.6.0 side by side on the same extension, the same fake
//! model server and a real MCP server (server-everything over stdio): the
//! extension owns `codemode`, `tool_search` and `/mcp` (pi loads it in place
//! of its own built-in), the tools are offered once activated, codemode's
//! `models: false` takes `models` away from scripts, and the MCP servers of
//! `mcp.json` connect and run. Every option pi takes loads, as in pi.
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, result, result_text, results, tool_names, write_mcp};

/// Composes two factories and reports what `getAllTools()` says of their tools.
const COMPOSED: &str = r#"import { createCodemodeExtension, createToolSearchExtension } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  createToolSearchExtension()(pi);
  createCodemodeExtension({ models: false })(pi);
  const summary = () => {
    const active = pi.getActiveTools();
    return pi.getAllTools()
      .filter((t) => t.name === "codemode" || t.name === "tool_search")
      .map((t) => ({ name: t.name, owner: t.sourceInfo.path.split("/").pop(), active: active.includes(t.name) }));
  };
  pi.registerCommand("tools", {
    handler: async (_args, ctx) => {
      const before = summary();
      pi.setActiveTools([...pi.getActiveTools(), "codemode", "tool_search"]);
      ctx.ui.notify(JSON.stringify({ before, after: summary(), active: pi.getActiveTools() }), "info");
    },
  });
}
"#;

/// The whole extension is pi's MCP extension, with an option pi-rpc honours.
const MCP_ONLY: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
export default createMcpExtension({ startupWaitMs: 30000 });
"#;

pub(crate) fn start(sb: &Sandbox, reference: bool, args: &[&str]) -> Option<Pi> {
    let mut all = vec!["--no-session"];
    all.extend_from_slice(args);
    start_saved(sb, reference, &all)
}

/// [`start`] with the sessions saved (in the agent directory's `sessions`).
pub(crate) fn start_saved(sb: &Sandbox, reference: bool, args: &[&str]) -> Option<Pi> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    host_settings(sb, &node, &dir, json!({}));
    Some(if reference {
        let mut cmd = reference_command(sb, &node, &cli);
        cmd.arg("--offline").args(args).env("PI_OFFLINE", "1");
        Pi::start_unchecked(cmd)
    } else {
        sb.spawn(args)
    })
}

/// What one program did with [`COMPOSED`]: the `/tools` note, the tools of
/// the model call, the codemode script's last output line.
async fn composed(reference: bool) -> Option<(Value, Vec<String>, String)> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "composed.ts", COMPOSED);
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "t", "type": "prompt", "message": "/tools"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "codemode", r#"{"code":"return typeof models"}"#)]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let output = result_text(result(&results(&lines), "c1"));
    let last = output.lines().last().unwrap_or_default().to_string();
    let requests = sb.server().requests();
    let tools = tool_names(&requests.last().expect("a model call").body);
    pi.close_stdin();
    Some((serde_json::from_str(&note).expect("the note is JSON"), tools, last))
}

#[tokio::test]
async fn composed_codemode_and_tool_search_factories_work_as_in_pi() {
    let Some(ours) = composed(false).await else { return };
    let Some(theirs) = composed(true).await else { return };
    assert_eq!(
        ours.0,
        json!({
            "before": [{"name": "tool_search", "owner": "composed.ts", "active": false},
                       {"name": "codemode", "owner": "composed.ts", "active": false}],
            "after": [{"name": "tool_search", "owner": "composed.ts", "active": true},
                      {"name": "codemode", "owner": "composed.ts", "active": true}],
            "active": ["read", "bash", "edit", "write", "codemode", "tool_search"],
        })
    );
    assert_eq!(ours.0, theirs.0, "pi 1.6.0 reports the same");
    assert_eq!(ours.1, ["read", "bash", "edit", "write", "codemode", "tool_search"]);
    assert_eq!(ours.1, theirs.1, "the same tools offered");
    assert_eq!(ours.2, "undefined", "models: false leaves `models` out of scripts");
    assert_eq!(ours.2, theirs.2);
}

/// What one program did with [`MCP_ONLY`]: where `/mcp` comes from, the
/// MCP tools of the first model call, the sum's result.
/// `flags` may turn pi's built-in MCP off (`--no-extensions` also loads the
/// extension with `-e`, as discovery is off then).
async fn mcp_only(reference: bool, servers: &Servers, flags: &[&str]) -> Option<(String, Vec<String>, String)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    write_mcp(&sb, json!({"everything": {"command": servers.node, "args": [script, "stdio"], "exposure": "direct"}}));
    let path = write_module(&sb, "my-mcp.ts", MCP_ONLY);
    let mut args = flags.to_vec();
    if flags.contains(&"--no-extensions") {
        args.extend(["-e", path.as_str()]);
    }
    let mut pi = start(&sb, reference, &args)?;
    pi.send(json!({"id": "g", "type": "get_commands"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "g").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let commands = lines.last().expect("the response")["data"]["commands"].clone();
    let mcp = commands.as_array().into_iter().flatten().find(|c| c["name"] == "mcp").cloned().unwrap_or(Value::Null);
    let owner = mcp["sourceInfo"]["path"].as_str().unwrap_or_default().replace(&path, "<extension>");
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__everything__get_sum", r#"{"a":1,"b":2}"#)]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "sum"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let sum = result_text(result(&results(&lines), "c1"));
    let first = tool_names(&sb.server().requests()[0].body).into_iter().filter(|t| t.contains("mcp")).collect();
    pi.close_stdin();
    Some((owner, first, sum))
}

#[tokio::test]
async fn an_extension_that_is_pis_mcp_extension_owns_mcp_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = mcp_only(false, &servers, &[]).await else { return };
    let Some(theirs) = mcp_only(true, &servers, &[]).await else { return };
    assert_eq!(ours.0, "<extension>", "/mcp is the extension's command");
    assert_eq!(ours.0, theirs.0);
    assert!(ours.1.iter().any(|t| t == "mcp__everything__get_sum"), "{:?}", ours.1);
    assert_eq!(ours.1, theirs.1, "the same MCP tools offered");
    assert_eq!(ours.2, "The sum of 1 and 2 is 3.");
    assert_eq!(ours.2, theirs.2);
}

#[tokio::test]
async fn mcp_turned_off_as_a_built_in_comes_back_with_the_extensions_copy() {
    let Some(servers) = Servers::find() else { return };
    for flags in [&["--no-mcp"][..], &["--no-extensions"]] {
        let Some(ours) = mcp_only(false, &servers, flags).await else { return };
        let Some(theirs) = mcp_only(true, &servers, flags).await else { return };
        assert_eq!(ours.0, "<extension>", "{flags:?}: /mcp is the extension's command");
        assert!(ours.1.iter().any(|t| t == "mcp__everything__get_sum"), "{flags:?}: {:?}", ours.1);
        assert_eq!(ours.2, "The sum of 1 and 2 is 3.", "{flags:?}");
        assert_eq!(ours, theirs, "{flags:?}: as in pi 1.6.0");
    }
}

/// The `extension_error`s pi-rpc reports while loading `source`, and whether
/// the extension's `/alive` command exists afterwards.
async fn load_errors(source: &str, reference: bool) -> Option<(Vec<String>, bool)> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "factory.ts", source);
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "g", "type": "get_commands"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "g").await;
    let errors = lines
        .iter()
        .filter(|v| v["type"] == "extension_error")
        .map(|v| format!("{}: {}", v["event"].as_str().unwrap_or_default(), v["error"].as_str().unwrap_or_default()))
        .collect();
    let commands = lines.last().expect("the response")["data"]["commands"].as_array().cloned().unwrap_or_default();
    pi.close_stdin();
    Some((errors, commands.iter().any(|c| c["name"] == "alive")))
}

#[tokio::test]
async fn every_option_pi_takes_loads_as_in_pi() {
    // Each of pi's `createMcpExtension` options, given at once: neither program refuses one.
    let options = "{ credentials: { forServer: () => ({}) }, createTransport: () => { throw new Error(\"unused\") }, \
                   openUrl: () => {}, updateConfig: () => {}, startupWaitMs: 10, loadConfig: () => ({ servers: [], errors: [] }) }";
    let source = format!(
        "import {{ createMcpExtension }} from \"@earendil-works/pi-coding-agent\";\n\
         export default function (pi: any) {{\n  pi.registerCommand(\"alive\", {{ handler: async () => {{}} }});\n  \
         createMcpExtension({options})(pi);\n}}\n"
    );
    let Some(ours) = load_errors(&source, false).await else { return };
    let Some(theirs) = load_errors(&source, true).await else { return };
    assert_eq!(ours, (Vec::<String>::new(), true), "pi-rpc loads the extension");
    assert_eq!(ours, theirs, "as pi 1.6.0 does");
}

/// The extension commands `get_commands` lists but `llama`, as `name file` (in order),
/// with `modules` (file, source) loaded.
async fn listed_commands(modules: &[(&str, &str)], reference: bool) -> Option<Vec<String>> {
    let sb = Sandbox::with_server().await;
    for (file, source) in modules {
        write_module(&sb, file, source);
    }
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "g", "type": "get_commands"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "g").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let commands = lines.last().expect("the response")["data"]["commands"].as_array().cloned().unwrap_or_default();
    pi.close_stdin();
    Some(
        commands
            .iter()
            // pi's `llama` needs the terminal UI; pi-rpc leaves it out (DEVIATIONS).
            .filter(|c| c["source"] == "extension" && c["name"] != "llama")
            .map(|c| {
                let path = c["sourceInfo"]["path"].as_str().unwrap_or_default();
                format!("{} {}", c["name"].as_str().unwrap_or_default(), path.rsplit('/').next().unwrap_or_default())
            })
            .collect(),
    )
}

#[tokio::test]
async fn the_factorys_mcp_command_is_listed_where_pi_lists_it() {
    let commands = |names: &str| {
        names
            .split(' ')
            .map(|name| format!("  pi.registerCommand(\"{name}\", {{ handler: async () => {{}} }});\n"))
            .collect::<String>()
    };
    let within = format!(
        "import {{ createMcpExtension }} from \"@earendil-works/pi-coding-agent\";\n\
         export default function (pi: any) {{\n{}  createMcpExtension()(pi);\n{}}}\n",
        commands("alpha"),
        commands("omega")
    );
    let plain = |names: &str| format!("export default function (pi: any) {{\n{}}}\n", commands(names));
    let (plain_before, plain_after) = (plain("beta gamma"), plain("zeta"));
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: [Case; 2] = [
        (
            &[("a-owner.ts", &within), ("b-plain.ts", &plain_before)],
            &["alpha a-owner.ts", "mcp a-owner.ts", "omega a-owner.ts", "beta b-plain.ts", "gamma b-plain.ts"],
        ),
        (
            &[("a-plain.ts", &plain_before), ("b-mcp.ts", MCP_ONLY), ("c-plain.ts", &plain_after)],
            &["beta a-plain.ts", "gamma a-plain.ts", "mcp b-mcp.ts", "zeta c-plain.ts"],
        ),
    ];
    for (modules, expected) in cases {
        let Some(ours) = listed_commands(modules, false).await else { return };
        let Some(theirs) = listed_commands(modules, true).await else { return };
        assert_eq!(ours, theirs, "pi 1.6.0 lists them the same");
        assert_eq!(ours, expected);
    }
}

/// The roots line server-everything logs once it has the client's roots.
pub(crate) const ROOTS_LOGGED: &str =
    "[everything] info everything-server: Roots updated: 1 root(s) received from client";

/// Wait (at most about 20 s) until `path` holds a line ending in
/// [`ROOTS_LOGGED`]; its lines without their time, and whether each time is
/// an ISO time in UTC.
pub(crate) async fn logged_roots(path: &std::path::Path) -> (Vec<String>, bool) {
    for _ in 0..400 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(ROOTS_LOGGED) {
            let lines: Vec<(&str, &str)> = text.lines().filter_map(|l| l.split_once(' ')).collect();
            let iso =
                lines.iter().all(|(time, _)| chrono::DateTime::parse_from_rfc3339(time).is_ok() && time.ends_with('Z'));
            let mut rest: Vec<String> =
                lines.iter().map(|(_, rest)| rest.to_string()).filter(|l| l.contains("Roots")).collect();
            rest.dedup();
            return (rest, iso);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (Vec::new(), false)
}

/// server-everything connected (from mcp.json through pi's built-in, or
/// registered by an extension after its `createMcpExtension({ logPath })`
/// when `log_path`), its `get-roots-list`
/// called: what the log says, and whether `<agent dir>/mcp.log` exists.
async fn server_log(reference: bool, servers: &Servers, log_path: bool) -> Option<((Vec<String>, bool), bool)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let everything = json!({"command": servers.node, "args": [script, "stdio"], "exposure": "direct"});
    let default_log = sb.agent_dir.path().join("mcp.log");
    let custom_log = sb.agent_dir.path().join("logs/servers.log");
    if log_path {
        // The extension registers the server after applying the factory, so
        // it connects once `logPath` is known (see DEVIATIONS for mcp.json's).
        let source = format!(
            "import {{ createMcpExtension }} from \"@earendil-works/pi-coding-agent\";\n\
             export default function (pi: any) {{\n  createMcpExtension({{ logPath: {} }})(pi);\n  \
             pi.registerMcpServer(\"everything\", {everything});\n}}\n",
            json!(custom_log.to_string_lossy())
        );
        write_module(&sb, "logged.ts", &source);
    } else {
        write_mcp(&sb, json!({ "everything": everything }));
    }
    let mut pi = start(&sb, reference, &[])?;
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__everything__get_roots_list", "{}")]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "roots"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let logged = logged_roots(if log_path { &custom_log } else { &default_log }).await;
    pi.close_stdin();
    Some((logged, log_path && default_log.exists()))
}

#[tokio::test]
async fn server_log_messages_go_to_mcp_log_or_the_factorys_log_path_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    for log_path in [false, true] {
        let Some(ours) = server_log(false, &servers, log_path).await else { return };
        let Some(theirs) = server_log(true, &servers, log_path).await else { return };
        assert_eq!(ours.0.0, [ROOTS_LOGGED], "logPath {log_path}");
        assert!(ours.0.1, "logPath {log_path}: each line starts with an ISO time");
        assert!(!ours.1, "logPath {log_path}: nothing in the default mcp.log");
        assert_eq!(ours, theirs, "logPath {log_path}: as pi 1.6.0 writes it");
    }
}

/// pi's codemode extension with `mode: "only"`, activated by `/on`.
const CODEMODE_ONLY: &str = r#"import { createCodemodeExtension } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  createCodemodeExtension({ mode: "only" })(pi);
  pi.registerCommand("on", {
    handler: async (_args, ctx) => {
      pi.setActiveTools([...pi.getActiveTools(), "codemode"]);
      ctx.ui.notify(JSON.stringify(pi.getActiveTools()), "info");
    },
  });
}
"#;

/// The system prompt of a model request.
fn system_text(request: &Value) -> String {
    match &request["messages"][0]["content"] {
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        other => other.as_str().unwrap_or_default().to_string(),
    }
}

/// How the skills section says to load a skill's file: (section there, names `read`, names `bash`).
fn skill_reader(request: &Value) -> (bool, bool, bool) {
    let text = system_text(request);
    let line = text.lines().find(|l| l.contains("skill's file")).unwrap_or_default();
    (text.contains("tidy"), line.contains("read"), line.contains("bash"))
}

/// The tools the system prompt's `<tools>` section of a model request lists
/// (their names; the snippets are each program's own text).
pub(crate) fn prompt_tools(request: &Value) -> Vec<String> {
    let text = system_text(request);
    let start = text.find("<tools>").unwrap_or(text.len());
    let end = text.find("</tools>").unwrap_or(text.len()).max(start);
    text[start..end].lines().filter_map(|line| line.strip_prefix("- ")?.split(':').next().map(str::to_string)).collect()
}

/// What one program did with [`CODEMODE_ONLY`]: the active tools after
/// `/on`, the tools and `<tools>` section of the model call, and the
/// output of a script that calls the hidden `read`.
async fn codemode_only(reference: bool) -> Option<(Value, Vec<String>, Vec<String>, String, (bool, bool, bool))> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "only.ts", CODEMODE_ONLY);
    std::fs::write(sb.cwd.path().join("note.txt"), "hidden but callable\n").unwrap();
    let skill = sb.agent_dir.path().join("skills/tidy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), "---\nname: tidy\ndescription: Tidy a file.\n---\nTidy it.\n").unwrap();
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "t", "type": "prompt", "message": "/on"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    let code = r#"{"code":"const r = await tools.read({path: \"note.txt\"}); return JSON.stringify(r)"}"#;
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "codemode", code)]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let output = result_text(result(&results(&lines), "c1"));
    let requests = sb.server().requests();
    let first = &requests.first().expect("a model call").body;
    pi.close_stdin();
    Some((
        serde_json::from_str(&note).expect("the note is JSON"),
        tool_names(first),
        prompt_tools(first),
        output,
        skill_reader(first),
    ))
}

#[tokio::test]
async fn codemode_only_offers_the_model_codemode_alone_as_in_pi() {
    let Some(ours) = codemode_only(false).await else { return };
    let Some(theirs) = codemode_only(true).await else { return };
    assert_eq!(ours.0, json!(["read", "bash", "edit", "write", "codemode"]));
    assert_eq!(ours.0, theirs.0, "pi 1.6.0 has the same active tools");
    assert_eq!(ours.1, ["codemode"], "only codemode is declared");
    assert_eq!(ours.1, theirs.1, "pi 1.6.0 declares the same");
    assert_eq!(ours.2, ["codemode"], "the prompt lists the tools offered");
    assert_eq!(ours.2, theirs.2, "pi 1.6.0's prompt lists the same");
    assert!(ours.3.contains("hidden but callable"), "scripts still call the hidden tools: {}", ours.3);
    assert!(theirs.3.contains("hidden but callable"), "{}", theirs.3);
    assert_eq!(ours.4, (true, false, false), "the skills section names no hidden reader");
    assert_eq!(ours.4, theirs.4, "pi 1.6.0's names none either");
}

/// pi's MCP extension with `loadConfig`: one server (`loaded`) in place of
/// mcp.json's; `/calls` tells how often `loadConfig` ran, and with a `ctx`.
fn load_config_source(node: &str, script: &str) -> String {
    format!(
        r#"import {{ createMcpExtension }} from "@earendil-works/pi-coding-agent";
import type {{ ExtensionAPI }} from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {{
  const calls: string[] = [];
  createMcpExtension({{
    loadConfig: (ctx) => {{
      calls.push(typeof ctx.cwd);
      const config = {{ command: {node:?}, args: [{script:?}, "stdio"], exposure: "direct" }};
      return {{ servers: [{{ name: "loaded", config, source: "from-extension" }}], errors: [] }};
    }},
  }})(pi);
  pi.registerCommand("calls", {{ handler: async (_args, ctx) => ctx.ui.notify(JSON.stringify(calls), "info") }});
}}
"#
    )
}

/// What one program did with [`load_config_source`]: `loadConfig`'s calls,
/// the MCP tools of the first model call, the `loaded` server's sum.
async fn load_config(reference: bool, servers: &Servers) -> Option<(Value, Vec<String>, String)> {
    let sb = Sandbox::with_server().await;
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let script = script.to_string_lossy().into_owned();
    let node = servers.node.to_string_lossy().into_owned();
    write_mcp(&sb, json!({"everything": {"command": node, "args": [script, "stdio"], "exposure": "direct"}}));
    write_module(&sb, "loaded.ts", &load_config_source(&node, &script));
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "c", "type": "prompt", "message": "/calls"})).await;
    // The note of `/calls` (another notify, such as a server warning, may come first).
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with('['))).await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let calls = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    let others: Vec<&Value> = lines.iter().filter(|v| v["method"] == "notify").collect();
    assert_eq!(others.len(), 1, "reference {reference}: no other notify: {others:?}");
    sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__loaded__get_sum", r#"{"a":1,"b":2}"#)]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "sum"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let sum = result_text(result(&results(&lines), "c1"));
    let first = tool_names(&sb.server().requests()[0].body).into_iter().filter(|t| t.starts_with("mcp__")).collect();
    pi.close_stdin();
    Some((serde_json::from_str(&calls).expect("the note is JSON"), first, sum))
}

#[tokio::test]
async fn mcp_load_config_replaces_mcp_json_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = load_config(false, &servers).await else { return };
    let Some(theirs) = load_config(true, &servers).await else { return };
    assert_eq!(ours.0, json!(["string"]), "loadConfig ran once, at session_start, with a ctx");
    assert_eq!(ours.0, theirs.0, "pi 1.6.0 calls it the same");
    assert!(!ours.1.is_empty() && ours.1.iter().all(|t| t.starts_with("mcp__loaded__")), "{:?}", ours.1);
    assert_eq!(ours.1, theirs.1, "the same MCP tools offered (none of mcp.json's)");
    assert!(ours.2.contains('3'), "{}", ours.2);
    assert_eq!(ours.2, theirs.2);
}
