//! `pi.registerMcpServer()` and `mcp.json` checked as pi 1.6.0 checks
//! them, side by side: every invalid `oauth` block and `auth` block in
//! pi's words (also with an `Authorization` header, which makes OAuth
//! unused), a project's `mcp.json` refused `auth`, and what one factory
//! registers checked against the servers registered before it only (pi
//! applies a factory's registrations when it returns): two names that
//! differ only in `-` and `_`, or one name twice, are both taken, where a
//! loaded extension's second such call throws.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::extension_builtin_factories::start;
use crate::extension_host::write_module;
use crate::harness::Sandbox;
use crate::mcp::write_mcp;

/// Registers pi's shapes of invalid `oauth` and `auth` blocks while it loads;
/// at `session_start` notifies each call's outcome and the servers registered.
const OAUTH_SHAPES: &str = r#"const url = "https://example.com/mcp";
const shapes: [string, any][] = [
  ["not-object", { url, oauth: "x" }],
  ["null", { url, oauth: null }],
  ["client-id", { url, oauth: { clientId: 1, scope: 2 } }],
  ["secret", { url, oauth: { clientSecret: true } }],
  ["port-range", { url, oauth: { callbackPort: 70000 } }],
  ["port-text", { url, oauth: { callbackPort: "8080" } }],
  ["port-fraction", { url, oauth: { callbackPort: 80.5 } }],
  ["callback-https", { url, oauth: { callbackUrl: "https://localhost/callback" } }],
  ["callback-host", { url, oauth: { callbackUrl: "http://example.com/callback" } }],
  ["callback-query", { url, oauth: { callbackUrl: "http://127.0.0.1/callback?x=1" } }],
  ["callback-fragment", { url, oauth: { callbackUrl: "http://127.0.0.1/callback#x" } }],
  ["callback-number", { url, oauth: { callbackUrl: 3000 } }],
  ["ports", { url, oauth: { callbackUrl: "http://localhost:3000/callback", callbackPort: 3001 } }],
  ["scope", { url, oauth: { scope: ["a"] } }],
  ["client-name", { url, oauth: { clientName: "  " } }],
  ["registration", { url, oauth: { clientRegistration: "manual" } }],
  ["cimd-client", { url, oauth: { clientRegistration: "cimd", clientName: "n" } }],
  ["cimd-callback", { url, oauth: { clientRegistration: "cimd", callbackUrl: "http://[::1]:4000/callback" } }],
  ["cimd-path", { url, oauth: { clientRegistration: "cimd", callbackUrl: "http://localhost:4000/back" } }],
  ["metadata", { url, oauth: { authServerMetadataUrl: "http://example.com/.well-known/oauth" } }],
  ["metadata-text", { url, oauth: { authServerMetadataUrl: "not a url" } }],
  ["with-header", { url, headers: { Authorization: "Bearer x" }, oauth: { clientId: 5 } }],
  ["with-auth", { url, auth: { provider: "openai" }, oauth: { callbackPort: 0 } }],
  ["before-exposure", { url, oauth: { scope: 1 }, exposure: "sideways" }],
  ["auth-empty", { url, auth: { provider: "" } }],
  ["auth-null", { url, auth: null }],
  ["auth-http", { url: "http://example.com/mcp", auth: { provider: "openai" } }],
  ["auth-after-exposure", { url: "http://example.com/mcp", auth: {}, exposure: "sideways" }],
  ["valid", { url, enabled: false, oauth: { clientId: "id", clientSecret: "s", callbackPort: 3000, callbackUrl: "http://localhost:3000/cb", scope: "a b", clientName: "n", clientRegistration: "dcr", authServerMetadataUrl: "https://as.example.com/x" } }],
  ["valid-cimd", { url, enabled: false, oauth: { clientRegistration: "cimd", callbackUrl: "http://127.0.0.1:4000/callback" } }],
  ["valid-auth", { url: "http://127.0.0.1:9/mcp", enabled: false, auth: { provider: "openai" } }],
  ["upper-scheme", { url: "HTTPS://example.com/mcp", enabled: false }],
];
export default function (pi: any) {
  const outcomes: [string, string][] = [];
  for (const [name, config] of shapes) {
    try { pi.registerMcpServer(name, config); outcomes.push([name, "registered"]); }
    catch (e: any) { outcomes.push([name, e.message.replace(/".*shapes\.ts"/, '"<ext>"')]); }
  }
  pi.on("session_start", (_event: any, ctx: any) => {
    ctx.ui.notify(JSON.stringify({ outcomes, servers: pi.getMcpServers().map((s: any) => s.name) }), "info");
  });
}
"#;

/// One program's outcomes of [`OAUTH_SHAPES`] and its start-up warning
/// about `mcp.json` (a global file with invalid `oauth` and `auth` blocks,
/// a trusted project's file giving a server `auth`).
async fn oauth_shapes(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "shapes.ts", OAUTH_SHAPES);
    write_mcp(
        &sb,
        json!({
            "bad-port": {"url": "https://example.com/mcp", "oauth": {"callbackPort": 0}},
            "bad-auth": {"url": "http://example.com/mcp", "auth": {"provider": "openai"}},
        }),
    );
    let project = sb.cwd.path().join(".pi");
    std::fs::create_dir_all(&project).expect("project dir");
    let entry = json!({"url": "https://example.com/mcp", "auth": {"provider": "openai"}});
    std::fs::write(project.join("mcp.json"), json!({"mcpServers": {"project-auth": entry}}).to_string())
        .expect("project mcp.json");
    let mut pi = start(&sb, reference, &["--approve"])?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let mut notes = Vec::new();
    while notes.len() < 2 {
        let lines = pi.until(|v| v["method"] == "notify").await;
        notes.extend(lines.into_iter().filter(|v| v["method"] == "notify"));
    }
    pi.close_stdin();
    let outcomes = notes.iter().find(|v| v["notifyType"] == "info").map(|v| v["message"].clone())?;
    let warning = notes.iter().find(|v| v["notifyType"] == "warning").map(|v| v["message"].clone())?;
    let agent_dir = sb.agent_dir.path().display().to_string();
    let cwd = sb.cwd.path().display().to_string();
    let warning = warning.as_str()?.replace(&agent_dir, "<agent>").replace(&cwd, "<cwd>");
    Some(json!({"registered": serde_json::from_str::<Value>(outcomes.as_str()?).ok()?, "warning": warning}))
}

#[tokio::test]
async fn invalid_oauth_and_auth_blocks_are_reported_in_pis_words() {
    let Some(ours) = oauth_shapes(false).await else { return };
    let outcome = |name: &str| {
        let outcomes = ours["registered"]["outcomes"].as_array().cloned().unwrap_or_default();
        outcomes.iter().find(|o| o[0] == name).map(|o| o[1].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(
        outcome("with-header").as_deref(),
        Some(
            "Invalid MCP server registered by extension \"<ext>\": server \"with-header\": oauth.clientId must be a string"
        ),
        "{ours:#}"
    );
    assert_eq!(outcome("valid").as_deref(), Some("registered"), "{ours:#}");
    let warning = ours["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("server \"project-auth\": auth is only allowed in the global mcp.json"), "{warning}");
    let Some(theirs) = oauth_shapes(true).await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// Loaded first: registers two names of one namespace and one name twice
/// while it loads, then the same at `session_start`, once loaded.
const FIRST: &str = r#"const off = (description: string) => ({ command: "/nonexistent/mcp-server", description, enabled: false });
export default function (pi: any) {
  const outcomes: [string, string][] = [];
  const attempt = (name: string, config: any) => {
    try { pi.registerMcpServer(name, config); outcomes.push([name, "registered"]); }
    catch (e: any) { outcomes.push([name, e.message.replace(/"[^"]*\/(\w+)\.ts"/g, '"<$1>"')]); }
  };
  attempt("a-b", off("dash"));
  attempt("a_b", off("underscore"));
  attempt("twice", off("first"));
  attempt("twice", off("second"));
  attempt("c-d", off("dash"));
  pi.unregisterMcpServer("c-d");
  attempt("c_d", off("underscore"));
  pi.on("session_start", (_event: any, ctx: any) => {
    attempt("x-y", off("dash"));
    attempt("x_y", off("underscore"));
    attempt("a-b", off("again"));
    const servers = pi.getMcpServers().map((s: any) => [s.name, s.config.description, s.extensionPath.replace(/.*\//, "")]);
    ctx.ui.notify(JSON.stringify({ outcomes, servers }), "info");
  });
}
"#;

/// Loaded second: its factory meets the first one's registrations.
const SECOND: &str = r#"export default function (pi: any) {
  const outcomes: [string, string][] = [];
  for (const name of ["a_b", "a-b", "twice", "c-d"]) {
    try { pi.registerMcpServer(name, { command: "/nonexistent/mcp-server", enabled: false }); outcomes.push([name, "registered"]); }
    catch (e: any) { outcomes.push([name, e.message.replace(/"[^"]*\/(\w+)\.ts"/g, '"<$1>"')]); }
  }
  pi.on("session_start", (_event: any, ctx: any) => ctx.ui.notify(JSON.stringify({ second: outcomes }), "info"));
}
"#;

/// The two notes of [`FIRST`] and [`SECOND`] in one program, as one
/// object (`outcomes`, `servers`, `second`: the notes' order is not compared).
async fn one_factorys_names(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "first.ts", FIRST);
    write_module(&sb, "second.ts", SECOND);
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let mut notes = Vec::new();
    while notes.len() < 2 {
        let lines = pi.until(|v| v["method"] == "notify").await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
        notes.extend(lines.into_iter().filter(|v| v["method"] == "notify"));
    }
    pi.close_stdin();
    let mut merged = serde_json::Map::new();
    for note in &notes {
        let Ok(Value::Object(fields)) = serde_json::from_str(note["message"].as_str()?) else { return None };
        merged.extend(fields);
    }
    Some(Value::Object(merged))
}

#[tokio::test]
async fn names_one_factory_registers_are_checked_against_the_earlier_extensions_only_as_in_pi() {
    let Some(ours) = one_factorys_names(false).await else { return };
    let registered = |name: &str| ours["outcomes"].as_array().is_some_and(|o| o.contains(&json!([name, "registered"])));
    assert!(registered("a_b") && registered("c_d"), "one factory's names of one namespace: {ours:#}");
    assert!(!registered("x_y"), "a loaded extension's clash throws: {ours:#}");
    let Some(theirs) = one_factorys_names(true).await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
