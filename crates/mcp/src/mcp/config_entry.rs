//! One `mcpServers` entry checked and read, as pi 1.6.0 checks it (pi-mcp's
//! `validateMcpServerConfig` and pi's own fields, in their order and
//! words): an `mcp.json` entry or a config an extension registers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::config::{ConfigSources, ConfigValues, Exposure, ServerConfig, Transport, expand_value};
use super::config_checks::{auth_problem, oauth_problem};

/// One `mcpServers` entry given as a value (an extension's `pi.registerMcpServer()`):
/// its server, `None` when `enabled: false`, or why it is invalid.
pub fn parse_server(
    name: &str,
    entry: &Value,
    source: &str,
    sources: &ConfigSources<'_>,
) -> Result<Option<ServerConfig>, String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(format!("invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"));
    }
    if !entry.is_object() {
        return Err(format!("server \"{name}\" must be an object"));
    }
    parse_entry(name, entry, source, sources)
}

pub(super) fn parse_entry(
    name: &str,
    entry: &Value,
    source: &str,
    sources: &ConfigSources<'_>,
) -> Result<Option<ServerConfig>, String> {
    // pi's words (pi-mcp's `validateMcpServerConfig` and pi's exposure checks).
    let server = |msg: String| format!("server \"{name}\": {msg}");
    let neither = || format!("server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)");
    let enabled = match entry.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(on)) => *on,
        Some(_) => return Err(server("enabled must be a boolean".into())),
    };
    if entry.get("description").is_some_and(|d| !d.is_string() && !d.is_null()) {
        return Err(server("description must be a string".into()));
    }
    let str_field = |key: &str| -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(server(format!("\"{key}\" must be a string"))),
        }
    };
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => Duration::from_secs(60),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
            _ => return Err(server("timeout must be a positive number of seconds".into())),
        },
    };
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
    let (kind, command, url) = (text("type"), text("command"), text("url"));
    // As pi's: a `url` makes an HTTP server unless `type` says otherwise, else a `command` a stdio one.
    let is_http = match (kind.as_deref(), &url, &command) {
        (Some("sse"), _, _) => {
            return Err(server("legacy SSE transport is not supported; use the streamable HTTP URL".into()));
        }
        (None | Some("http" | "streamable-http"), Some(_), _) => true,
        (None | Some("stdio"), _, Some(_)) => false,
        _ => return Err(neither()),
    };
    let expand = |key: &str| -> Result<ConfigValues, String> {
        let wrong = || server(format!("{key} must map names to strings"));
        match entry.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| v.as_str().map(|s| (k.clone(), expand_value(s, sources.env))).ok_or_else(wrong))
                .collect(),
            Some(_) => Err(wrong()),
        }
    };
    let transport = if is_http {
        let Some(url) = url else { return Err(neither()) };
        if !url::Url::parse(&url).is_ok_and(|url| matches!(url.scheme(), "http" | "https")) {
            return Err(server("url must be an http or https URL".into()));
        }
        let headers = expand("headers")?;
        let names: Vec<(String, String)> = headers.iter().map(|(k, _)| (k.clone(), String::new())).collect();
        if let Some(problem) = oauth_problem(entry.get("oauth")) {
            return Err(server(problem));
        }
        let oauth = if super::oauth::OAuthSettings::applies(&names, entry.get("auth").is_some()) {
            Some(super::oauth::OAuthSettings::parse(entry.get("oauth"), sources.env).map_err(server)?)
        } else {
            None
        };
        Transport::Http { url, headers, oauth }
    } else {
        // An empty `command` is taken, as pi takes it; starting it fails.
        let Some(command) = command else { return Err(neither()) };
        let args = match entry.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|a| a.as_str().map(home_prefixed).ok_or_else(|| server("args must be an array of strings".into())))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(server("args must be an array of strings".into())),
        };
        // pi's order: `args`, `env`, `cwd`.
        let env = expand("env")?;
        if entry.get("cwd").is_some_and(|c| !c.is_string() && !c.is_null()) {
            return Err(server("cwd must be a string".into()));
        }
        let cwd = match str_field("cwd")? {
            Some(c) => {
                let c = PathBuf::from(home_prefixed(&c));
                if c.is_absolute() { c } else { sources.cwd.join(c) }
            }
            None => sources.cwd.to_path_buf(),
        };
        Transport::Stdio { command: PathBuf::from(home_prefixed(&command)), args, env, cwd }
    };
    const EXPOSURES: &str = "\"codemode\", \"deferred\", \"direct\", \"hidden\"";
    let exposure = match entry.get("exposure") {
        None | Some(Value::Null) => Exposure::Codemode,
        Some(e) => e
            .as_str()
            .and_then(Exposure::parse)
            .ok_or_else(|| server(format!("exposure must be one of {EXPOSURES}")))?,
    };
    let mut tool_exposure = Vec::new();
    if let Some(map) = entry.get("toolExposure").filter(|m| !m.is_null()) {
        let Some(map) = map.as_object() else {
            return Err(server("toolExposure must map tool names to exposures".into()));
        };
        for (k, v) in map {
            let e = v
                .as_str()
                .and_then(Exposure::parse)
                .ok_or_else(|| server(format!("toolExposure \"{k}\" must be one of {EXPOSURES}")))?;
            tool_exposure.push((k.clone(), e));
        }
    }
    if let Transport::Http { url, .. } = &transport
        && let Some(problem) = auth_problem(entry.get("auth"), url)
    {
        return Err(server(problem.to_string()));
    }
    if !enabled {
        return Ok(None);
    }
    Ok(Some(ServerConfig {
        name: name.to_string(),
        transport,
        exposure,
        tool_exposure,
        timeout,
        description: str_field("description")?.filter(|d| !d.trim().is_empty()),
        source: source.to_string(),
        raw: entry.clone(),
        scope: scope_of(source, sources).map(str::to_string),
        override_path: None,
    }))
}

/// pi's `scope` of an entry read from `source`: the user's or the project's
/// `mcp.json`, else an extension's file (None for servers a front end gave).
fn scope_of(source: &str, sources: &ConfigSources<'_>) -> Option<&'static str> {
    let path = Path::new(source);
    if path == sources.agent_dir.join("mcp.json") {
        Some("global")
    } else if path == sources.cwd.join(".pi").join("mcp.json") {
        Some("project")
    } else {
        path.is_absolute().then_some("extension")
    }
}

fn home_prefixed(text: &str) -> String {
    match text.strip_prefix("~/") {
        Some(rest) => crate::config::home_dir().join(rest).display().to_string(),
        None => text.to_string(),
    }
}
