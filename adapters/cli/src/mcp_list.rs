//! `pi mcp list [--json]`, as pi 1.6.0 runs it: every server of `mcp.json`
//! (the project's when trusted) connected once, in parallel, and reported
//! with its state, transport, tools (with the exposures that differ from
//! the server's), resources and error; config errors and the note about an
//! untrusted project's file follow. Exits 1 when a config error or an
//! enabled server that did not connect is reported.

use std::sync::Arc;

use pi_core::mcp::connection::{Connection, Status};
use pi_core::mcp::factories::FactoryState;
use pi_core::mcp::{ConfigSources, McpConfig, ServerConfig};
use serde_json::{Map, Value, json};

use crate::mcp_config::{HELP_HINT, Kind, Places, parse_options};
use crate::user_lines::{err, out};

pub async fn list(args: &[String], places: &Places) -> u8 {
    let Some(parsed) = parse_options(args, &[("json", Kind::Flag)], usize::MAX) else { return 1 };
    if !parsed.positional.is_empty() {
        err(&format!("Usage: pi mcp list [--json]\n{HELP_HINT}"));
        return 1;
    }
    let trusted = places.trusted();
    let sources = ConfigSources { agent_dir: &places.agent_dir, cwd: &places.cwd, project_trusted: trusted, env: None };
    let config = McpConfig::load(&sources);
    let project_config = places.project_config();
    let untrusted_note = (!trusted && project_config.exists()).then(|| {
        format!(
            "{} is ignored because the project is not trusted. Start pi in the project to trust it.",
            project_config.display()
        )
    });
    let shared = Arc::new(FactoryState::default());
    shared.use_credentials_file(&places.agent_dir);
    shared.set_provider_token(provider_tokens(places.agent_dir.clone()));
    let root: pi_core::mcp::SharedRoot = Arc::new(std::sync::Mutex::new(Some(places.cwd.clone())));
    // In the order of the files, the disabled ones where they stand.
    let mut entries: Vec<(&ServerConfig, bool)> = config.servers.iter().map(|s| (s, true)).collect();
    entries.extend(config.disabled.iter().map(|s| (s, false)));
    entries.sort_by_key(|(s, _)| order_in_files(s, &places.agent_dir, &project_config));
    let reports = futures::future::join_all(
        entries.iter().map(|(server, enabled)| report(server, *enabled, root.clone(), shared.clone())),
    )
    .await;
    let failed = !config.errors.is_empty() || reports.iter().any(|r| r["enabled"] == true && r["state"] != "connected");
    if parsed.has("json") {
        let mut all = json!({"servers": reports, "errors": config.errors});
        if let Some(note) = &untrusted_note {
            all["note"] = json!(note);
        }
        out(&serde_json::to_string_pretty(&all).unwrap_or_default());
        return u8::from(failed);
    }
    if reports.is_empty() && config.errors.is_empty() {
        out(&format!(
            "No MCP servers configured. Add them to {} or .pi/mcp.json.",
            places.agent_dir.join("mcp.json").display()
        ));
    }
    for report in &reports {
        print_report(report);
    }
    for error in &config.errors {
        out(&format!("config error: {error}"));
    }
    if let Some(note) = untrusted_note {
        out(&note);
    }
    u8::from(failed)
}

/// Where a server's entry stands: the global file's entries first, then the project's, each in file order.
/// pi's provider-token reader of `pi mcp`: an `auth.provider` server's
/// token is its provider's credential (an OAuth login's access token,
/// refreshed when it expires soon, else the API key) from the agent
/// directory's model registry, loaded at the first request as pi loads it.
fn provider_tokens(agent_dir: std::path::PathBuf) -> pi_core::mcp::factories::ProviderToken {
    use pi_core::config::models::ModelRegistry;
    let registry: Arc<tokio::sync::OnceCell<Option<ModelRegistry>>> = Arc::default();
    Arc::new(move |provider: String| {
        let (registry, agent_dir) = (registry.clone(), agent_dir.clone());
        Box::pin(async move {
            let registry = registry.get_or_init(|| async { ModelRegistry::load(&agent_dir).ok() }).await.as_ref()?;
            match pi_core::auth::login_of(registry, &provider) {
                Some(login) => login.current().await.ok().flatten().and_then(|auth| auth.api_key),
                None => registry.provider_auth(&provider).and_then(|auth| auth.api_key),
            }
        })
    })
}

pub(crate) fn order_in_files(
    server: &ServerConfig,
    agent_dir: &std::path::Path,
    project: &std::path::Path,
) -> (usize, usize) {
    let position = |path: &std::path::Path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let file: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap_or_default();
        file["mcpServers"].as_object().and_then(|m| m.keys().position(|k| *k == server.name))
    };
    match (position(&agent_dir.join("mcp.json")), position(project)) {
        (Some(at), _) => (0, at),
        (None, Some(at)) => (1, at),
        (None, None) => (2, 0),
    }
}

/// One server's report (pi's keys and order); an enabled one is connected to find out.
async fn report(
    server: &ServerConfig,
    enabled: bool,
    root: pi_core::mcp::SharedRoot,
    shared: Arc<FactoryState>,
) -> Value {
    let raw = &server.raw;
    let exposure = raw.get("exposure").and_then(Value::as_str).unwrap_or("codemode");
    let transport = match raw.get("url").and_then(Value::as_str) {
        Some(url) => url.to_string(),
        None => {
            let mut words = vec![raw.get("command").and_then(Value::as_str).unwrap_or_default().to_string()];
            let args = raw.get("args").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            words.extend(args.iter().filter_map(Value::as_str).map(str::to_string));
            words.join(" ")
        }
    };
    let mut report = Map::new();
    report.insert("name".into(), json!(server.name));
    report.insert("scope".into(), json!(server.scope.as_deref().unwrap_or("global")));
    report.insert("source".into(), json!(server.source));
    if let Some(path) = &server.override_path {
        report.insert("override".into(), json!(path));
    }
    report.insert("enabled".into(), json!(enabled));
    report.insert("exposure".into(), json!(exposure));
    report.insert("transport".into(), json!(transport));
    if let Some(provider) = raw.get("auth").and_then(|a| a.get("provider")).and_then(Value::as_str) {
        report.insert("authProvider".into(), json!(provider));
    }
    report.insert("state".into(), json!("disabled"));
    report.insert("tools".into(), json!([]));
    if !enabled {
        return Value::Object(report);
    }
    let conn = Connection::with_root(server.clone(), root, shared);
    conn.connect().await;
    let state = conn.state();
    let (name, error) = match &state.status {
        Status::Connected => ("connected", None),
        Status::NeedsAuth => ("needs-auth", None),
        Status::Failed(e) => ("failed", Some(e.clone())),
        Status::Disconnected(e) => ("disconnected", Some(e.clone())),
        Status::Connecting => ("connecting", None),
        Status::Stopped => ("closed", None),
    };
    report.insert("state".into(), json!(name));
    report.insert("tools".into(), json!(state.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()));
    let overrides: Map<String, Value> = state
        .tools
        .iter()
        .map(|t| (t.name.clone(), server.exposure_of(&t.name).as_str()))
        .filter(|(_, e)| *e != exposure)
        .map(|(tool, e)| (tool, json!(e)))
        .collect();
    if !overrides.is_empty() {
        report.insert("toolExposure".into(), Value::Object(overrides));
    }
    if state.has_resources {
        report.insert("resources".into(), json!(true));
    }
    if let Some(error) = error {
        report.insert("error".into(), json!(error));
    }
    conn.shutdown().await;
    Value::Object(report)
}

/// A report as pi prints it.
fn print_report(report: &Value) {
    let text = |key: &str| report[key].as_str().unwrap_or_default().to_string();
    let tools: Vec<&str> =
        report["tools"].as_array().map(|t| t.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let state = match text("state").as_str() {
        "connected" => format!("connected, {} tool{}", tools.len(), if tools.len() == 1 { "" } else { "s" }),
        "needs-auth" => "needs sign-in".to_string(),
        other => other.to_string(),
    };
    out(&format!("{}: {state} ({}, {})", text("name"), text("exposure"), text("scope")));
    out(&format!("  {}", text("transport")));
    if let Some(path) = report["override"].as_str() {
        out(&format!("  project override: {path}"));
    }
    if report["state"] == "needs-auth" {
        out(&match report["authProvider"].as_str() {
            Some(provider) => format!("  sign in with: /login {provider} in pi"),
            None => format!("  sign in with: pi mcp login {}", text("name")),
        });
    }
    if !tools.is_empty() {
        let named: Vec<String> = tools
            .iter()
            .map(|tool| match report["toolExposure"][*tool].as_str() {
                Some(exposure) => format!("{tool} [{exposure}]"),
                None => tool.to_string(),
            })
            .collect();
        out(&format!("  tools: {}", named.join(", ")));
    }
    if report["resources"] == true {
        out("  offers resources");
    }
    if let Some(error) = report["error"].as_str() {
        out(&format!("  {}", error.split('\n').collect::<Vec<_>>().join("\n  ")));
    }
}
