//! `pi.registerMcpServer` / `unregisterMcpServer` / `getMcpServers` and the
//! `mcp_servers_change` event, run by pi-rpc and by pi 1.6.0 side by side on
//! the same TypeScript extension, the same MCP server (server-everything over
//! stdio) and the same fake model server: a server registered while the
//! extension loads connects with the session and its tools are offered on the
//! first request and run; one registered later is announced; unregistering
//! makes the tools unreachable; invalid registrations throw.
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::json;

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, result, result_text, results, tool_names};

/// `SERVER` is replaced by server-everything's stdio config.
const REGISTRAR: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const SERVER: any = SERVER_CONFIG;

export default function (pi: ExtensionAPI) {
  const seen: string[] = [];
  const names = () => pi.getMcpServers().map((s) => `${s.name}:${s.config.exposure}:${s.extensionPath.endsWith("registrar.ts")}`).join(",");
  pi.registerMcpServer("everything", SERVER);
  pi.on("session_start", () => { seen.push(`start [${names()}]`); });
  pi.on("mcp_servers_change", (event) => {
    seen.push(`change [${event.servers.map((s: any) => s.name).join(",")}]`);
  });
  const attempt = (label: string, name: string, config: unknown) => {
    try {
      pi.registerMcpServer(name, config as any);
      seen.push(`${label} accepted`);
    } catch {
      seen.push(`${label} throws`);
    }
  };
  pi.registerCommand("later", {
    handler: async () => {
      pi.registerMcpServer("second", { ...SERVER, exposure: "hidden" });
      attempt("bad name", "no spaces allowed", SERVER);
      attempt("no command", "third", { exposure: "direct" });
      seen.push(`after later [${names()}]`);
    },
  });
  pi.registerCommand("drop", {
    handler: async () => {
      pi.unregisterMcpServer("everything");
      pi.unregisterMcpServer("second");
      seen.push(`after drop [${names()}]`);
    },
  });
  pi.registerCommand("seen", { handler: async (_args, ctx) => ctx.ui.notify(seen.join("; "), "info") });
}
"#;

/// What one program did: the `/seen` note, the tools of the first and last requests, the sum's result.
struct Run {
    note: String,
    first_tools: Vec<String>,
    last_tools: Vec<String>,
    sum: String,
}

async fn command(pi: &mut Pi, text: &str) {
    pi.send(json!({"id": text, "type": "prompt", "message": text})).await;
    pi.until(|v| v["type"] == "response" && v["id"] == text).await;
}

async fn run(mut pi: Pi, sb: &Sandbox) -> Run {
    pi.send(json!({"id": "p", "type": "prompt", "message": "sum"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let sum = result_text(result(&results(&lines), "c1"));
    command(&mut pi, "/later").await;
    command(&mut pi, "/drop").await;
    pi.send(json!({"id": "q", "type": "prompt", "message": "again"})).await;
    pi.until_type("agent_settled").await;
    pi.send(json!({"id": "s", "type": "prompt", "message": "/seen"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().map(|v| v["message"].as_str().unwrap_or_default().to_string()).unwrap_or_default();
    let requests = sb.server().requests();
    let first_tools = tool_names(&requests[0].body);
    let last_tools = tool_names(&requests.last().expect("a request").body);
    pi.close_stdin();
    Run { note, first_tools, last_tools, sum }
}

#[tokio::test]
async fn registered_mcp_servers_connect_and_go_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(servers) = Servers::find() else { return };
    let Some(cli) = reference_cli() else { return };
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let config = json!({"command": servers.node, "args": [script, "stdio"], "exposure": "direct"});
    let source = REGISTRAR.replace("SERVER_CONFIG", &config.to_string());
    let mut runs = Vec::new();
    for reference in [false, true] {
        let sb = Sandbox::with_server().await;
        sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__everything__get_sum", r#"{"a":1,"b":2}"#)]));
        sb.server().set_fallback(Reply::text("done"));
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "registrar.ts", &source);
        let pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
        runs.push(run(pi, &sb).await);
    }
    let (ours, theirs) = (&runs[0], &runs[1]);
    assert_eq!(
        ours.note,
        "start [everything:direct:true]; change [everything,second]; bad name throws; no command throws; \
         after later [everything:direct:true,second:hidden:true]; change [second]; change []; after drop []"
    );
    assert_eq!(ours.note, theirs.note, "the extension saw the same in pi 1.6.0");
    for run in [ours, theirs] {
        assert!(run.first_tools.iter().any(|t| t == "mcp__everything__get_sum"), "{:?}", run.first_tools);
        assert_eq!(run.sum, "The sum of 1 and 2 is 3.");
        assert!(!run.last_tools.iter().any(|t| t.starts_with("mcp__")), "unregistered: {:?}", run.last_tools);
    }
    // server-everything offers `get_roots_list` only to a client that declares MCP roots, as pi does.
    let mcp_tools =
        |tools: &[String]| -> Vec<String> { tools.iter().filter(|t| t.starts_with("mcp__")).cloned().collect() };
    assert!(ours.first_tools.iter().any(|t| t == "mcp__everything__get_roots_list"), "{:?}", ours.first_tools);
    assert_eq!(mcp_tools(&ours.first_tools), mcp_tools(&theirs.first_tools), "the same MCP tools offered");
}
