//! The per-session API with a real server: servers handed over in code (as
//! ACP's `session/new` does), not read from `mcp.json`.

use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::tools::ToolContext;

fn fault_server() -> Option<ServerConfig> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let node = root.join("target/tools/node/node_modules/.bin/node");
    let sdk = root.join("target/tools/mcp/node_modules/@modelcontextprotocol/sdk");
    if !node.exists() || !sdk.exists() {
        assert!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() != Ok("1"), "run scripts/install-mcp-servers.sh");
        return None;
    }
    let env = vec![("MCP_SDK_DIR".to_string(), sdk.display().to_string())];
    let script = root.join("tests/mcp/fault-server.mjs").display().to_string();
    Some(ServerConfig::stdio("per-session", node, vec![script], env, std::env::temp_dir()))
}

#[tokio::test]
async fn servers_given_per_session_connect_and_answer() {
    let Some(mut server) = fault_server() else { return };
    server.exposure = Exposure::Direct;
    let mut config = McpConfig::default();
    config.add_server(server);
    let mcp = McpManager::start(McpOptions { config, ..Default::default() });
    assert!(mcp.tools().is_empty(), "connecting happens in the background");
    mcp.wait_for(None).await;
    let tools = mcp.tools();
    let echo = tools.iter().find(|t| t.tool.name() == "mcp__per_session__echo").expect("echo tool");
    assert_eq!(echo.exposure, Exposure::Direct);
    let out = echo.tool.execute(json!({"text": "hi"}), ToolContext::new(std::env::temp_dir())).await;
    assert_eq!(out.content, vec![crate::message::ContentBlock::text("echo: hi")]);
    assert_eq!(out.structured_content, Some(json!({"content": [{"type": "text", "text": "echo: hi"}]})));
    let reach = turn::Reach::of(&[], Some(&mcp));
    // pi activates a `direct` tool as it registers: it is then among the active tools.
    let active = vec!["mcp__per_session__echo".to_string()];
    let registry = crate::tools::ToolRegistry::default();
    let specs = turn::turn_tools(&registry, &[], &[], &active, Some(&mcp), reach, &[], None).offered();
    assert!(specs.iter().any(|s| s.name == "mcp__per_session__echo"));
    assert!(
        !specs.iter().any(|s| s.name == "codemode"),
        "no codemode server: {:?}",
        specs.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    mcp.shutdown().await;
}

/// server-everything over stdio, when installed (scripts/install-mcp-servers.sh).
fn everything_server() -> Option<ServerConfig> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let node = root.join("target/tools/node/node_modules/.bin/node");
    let script = root.join("target/tools/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !node.exists() || !script.exists() {
        assert!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() != Ok("1"), "run scripts/install-mcp-servers.sh");
        return None;
    }
    let args = vec![script.display().to_string(), "stdio".to_string()];
    Some(ServerConfig::stdio("everything", node, args, Vec::new(), std::env::temp_dir()))
}

#[tokio::test]
async fn the_root_a_server_is_given_is_the_sessions_working_directory() {
    let Some(mut server) = everything_server() else { return };
    server.exposure = Exposure::Direct;
    let mut config = McpConfig::default();
    config.add_server(server);
    // Not the process's working directory: the session's (an ACP session's, `initialize`'s `cwd`).
    let session_dir = tempfile::tempdir().unwrap();
    let session_root = session_dir.path().join("project-of-the-session");
    std::fs::create_dir_all(&session_root).unwrap();
    let mcp = McpManager::start(McpOptions { config, root: Some(session_root.clone()), ..Default::default() });
    mcp.begin();
    mcp.wait_for(None).await;
    let tools = mcp.tools();
    let roots = tools.iter().find(|t| t.tool.name() == "mcp__everything__get_roots_list").expect("roots tool");
    let out = roots.tool.execute(json!({}), ToolContext::new(std::env::temp_dir())).await;
    let text = format!("{:?}", out.content);
    let uri = reqwest::Url::from_directory_path(&session_root).unwrap().as_str().trim_end_matches('/').to_string();
    assert!(text.contains(&uri), "{text}");
    assert!(text.contains("project-of-the-session"), "named by its last component: {text}");
    let process_cwd = std::env::current_dir().unwrap();
    let process_uri =
        reqwest::Url::from_directory_path(&process_cwd).unwrap().as_str().trim_end_matches('/').to_string();
    assert!(session_root.starts_with(&process_cwd) || !text.contains(&process_uri), "{text}");
    mcp.shutdown().await;
}

/// The agent answers its first command, then calls `begin`: on a
/// single-threaded runtime the answer must reach the runtime's main future
/// (the stdio connection loop, which hands it to the writer thread) before
/// any server is started, since starting one blocks the thread until the
/// kernel has loaded the server's program.
#[tokio::test(flavor = "current_thread")]
async fn the_answer_that_lets_servers_start_goes_out_before_they_start() {
    let missing = ServerConfig::stdio("missing", PathBuf::from("/nonexistent/mcp-server"), vec![], vec![], ".".into());
    let mut config = McpConfig::default();
    config.add_server(missing);
    let mcp = McpManager::start(McpOptions { config, ..Default::default() });
    let (answer, mut answered) = tokio::sync::mpsc::channel(1);
    let agent = mcp.clone();
    tokio::spawn(async move {
        let _ = answer.send(()).await;
        agent.begin();
    });
    answered.recv().await;
    // The failed spawn of the missing server settles its status at once: not yet.
    assert_eq!(mcp.conns()[0].state().status, Status::Connecting);
    mcp.wait_for(None).await;
    let status = mcp.conns()[0].state().status;
    assert!(matches!(&status, Status::Failed(e) if e.contains("cannot start")), "{status:?}");
}

/// With a start gate (the front end's output flushed), servers start only
/// once it opens, however long after `begin` that is (within START_DELAY).
// Paused time: START_DELAY cannot pass while the test yields, however loaded the machine.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn servers_start_once_the_gate_opens() {
    let missing = ServerConfig::stdio("missing", PathBuf::from("/nonexistent/mcp-server"), vec![], vec![], ".".into());
    let mut config = McpConfig::default();
    config.add_server(missing);
    let (open, opened) = tokio::sync::watch::channel(false);
    let gate = StartGate::new(move || {
        let mut opened = opened.clone();
        Box::pin(async move {
            let _ = opened.wait_for(|open| *open).await;
        })
    });
    let mcp = McpManager::start(McpOptions { config, start_gate: Some(gate), ..Default::default() });
    mcp.begin();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // The failed spawn of the missing server would settle its status at once: not started.
    assert_eq!(mcp.conns()[0].state().status, Status::Connecting);
    open.send_replace(true);
    mcp.wait_for(None).await;
    let status = mcp.conns()[0].state().status;
    assert!(matches!(&status, Status::Failed(e) if e.contains("cannot start")), "{status:?}");
}

#[tokio::test]
async fn auto_enable_codemode_false_warns_with_pis_reason_unless_codemode_or_tool_search_is_on() {
    let server = |name: &str, exposure: Exposure| {
        let mut server =
            ServerConfig::stdio(name, PathBuf::from("never-started"), vec![], vec![], std::env::temp_dir());
        server.exposure = exposure;
        server
    };
    let manager = |servers: Vec<ServerConfig>, auto_enable_codemode: bool| {
        let mut config = McpConfig { auto_enable_codemode, ..Default::default() };
        for server in servers {
            config.add_server(server);
        }
        // Held for good: nothing connects.
        let hold = Some(CancellationToken::new());
        let loaded_builtins = vec!["codemode".to_string(), "tool-search".to_string()];
        McpManager::start(McpOptions { config, hold, loaded_builtins, ..Default::default() })
    };
    let active = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
    let off = manager(vec![server("docs", Exposure::Codemode)], false);
    assert_eq!(off.unreachable_warning(&active(&["read"])), Some(UNREACHABLE_WARNING_AUTO_OFF));
    assert_eq!(off.unreachable_warning(&active(&["codemode"])), None, "codemode named active");
    assert_eq!(off.unreachable_warning(&active(&["tool_search"])), None, "tool_search named active");
    let with_deferred = manager(vec![server("docs", Exposure::Codemode), server("more", Exposure::Deferred)], false);
    assert_eq!(with_deferred.unreachable_warning(&[]), None, "a deferred server activates tool_search");
    assert_eq!(manager(vec![server("docs", Exposure::Codemode)], true).unreachable_warning(&[]), None);
    assert_eq!(manager(vec![server("docs", Exposure::Direct)], false).unreachable_warning(&[]), None);
}
