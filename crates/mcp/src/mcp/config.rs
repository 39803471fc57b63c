//! `mcp.json`: the `mcpServers` shape other MCP clients share, read from the
//! user's agent directory and (in a trusted project) `.pi/mcp.json`, merged and
//! validated as pi 1.6.0 does. Invalid entries are reported and skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::config_entry::parse_entry;
pub use super::config_entry::parse_server;

/// `*` matches any run of characters (globset, through pi-types).
pub use pi_types::tool_name::wildcard_match;

/// How a server's tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Callable from `codemode` scripts (pi's default).
    Codemode,
    /// Loaded through `tool_search`, then declared on that branch.
    Deferred,
    /// Declared to the model like a built-in tool.
    Direct,
    /// Registered but unreachable.
    Hidden,
}

impl Exposure {
    pub fn parse(text: &str) -> Option<Exposure> {
        match text {
            "codemode" | "codemode-deferred" => Some(Exposure::Codemode),
            "deferred" => Some(Exposure::Deferred),
            "direct" => Some(Exposure::Direct),
            "hidden" => Some(Exposure::Hidden),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Direct => "direct",
            Exposure::Hidden => "hidden",
        }
    }
}

/// An `env` or `headers` value: text (`${VAR}` already expanded), or a
/// `!command` run when the server connects, so start-up never waits for it.
/// Its `Debug` form hides the value: these hold secrets.
#[derive(Clone, PartialEq)]
pub enum ConfigValue {
    Text(String),
    Command(String),
}

impl ConfigValue {
    /// The value to send (runs a command value; blocking).
    pub fn resolve(&self) -> Result<String, String> {
        match self {
            ConfigValue::Text(t) => Ok(t.clone()),
            ConfigValue::Command(c) => run_value_command(c),
        }
    }
}

impl std::fmt::Debug for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigValue::Text(_) => f.write_str("Text(<hidden>)"),
            ConfigValue::Command(_) => f.write_str("Command(<hidden>)"),
        }
    }
}

/// Name/value pairs of `env` or `headers`.
pub type ConfigValues = Vec<(String, ConfigValue)>;

/// Where a server runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio { command: PathBuf, args: Vec<String>, env: ConfigValues, cwd: PathBuf },
    /// Streamable HTTP. `oauth` is set when the server signs in with OAuth
    /// (as pi: no `Authorization` header and no `auth`), from its `oauth` settings.
    Http { url: String, headers: ConfigValues, oauth: Option<super::oauth::OAuthSettings> },
}

fn texts(pairs: Vec<(String, String)>) -> ConfigValues {
    pairs.into_iter().map(|(k, v)| (k, ConfigValue::Text(v))).collect()
}

/// Resolve every value (commands run here; blocking).
pub fn resolve_values(values: &ConfigValues) -> Result<Vec<(String, String)>, String> {
    values.iter().map(|(k, v)| v.resolve().map(|v| (k.clone(), v)).map_err(|e| format!("{k}: {e}"))).collect()
}

/// One server, ready to connect (variables expanded, paths resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub exposure: Exposure,
    /// Per-tool overrides: exact names first, then `*` patterns in order.
    pub tool_exposure: Vec<(String, Exposure)>,
    /// Per-request timeout (progress notifications reset it).
    pub timeout: Duration,
    pub description: Option<String>,
    /// Where the entry came from (a file path, `session`, …).
    pub source: String,
    /// The entry as configured (null for servers a front end handed over):
    /// what an extension's transport factory is given as pi's `config`.
    pub raw: Value,
    /// pi's `scope` of the entry: `global` (the user's `mcp.json`),
    /// `project` (the project's), `extension` (`pi.registerMcpServer()`).
    pub scope: Option<String>,
    /// pi's `override`: the project `mcp.json` whose entry (without
    /// `command`/`url`/`type`) changed this global entry's `enabled`,
    /// `exposure` or `toolExposure`.
    pub override_path: Option<String>,
}

impl ServerConfig {
    /// pi's `auth.provider` of an HTTP server: the model provider whose
    /// credential its requests carry as their bearer token.
    pub fn auth_provider(&self) -> Option<&str> {
        match self.transport {
            Transport::Http { .. } => self.raw.get("auth")?.get("provider")?.as_str().filter(|p| !p.is_empty()),
            Transport::Stdio { .. } => None,
        }
    }

    /// A stdio server with pi's defaults (for servers a front end hands over,
    /// such as ACP's `session/new` `mcpServers`).
    pub fn stdio(
        name: &str,
        command: PathBuf,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: PathBuf,
    ) -> ServerConfig {
        ServerConfig::with_transport(name, Transport::Stdio { command, args, env: texts(env), cwd })
    }

    /// A streamable HTTP server with pi's defaults.
    pub fn http(name: &str, url: String, headers: Vec<(String, String)>) -> ServerConfig {
        let oauth = super::oauth::OAuthSettings::applies(&headers, false).then(Default::default);
        ServerConfig::with_transport(name, Transport::Http { url, headers: texts(headers), oauth })
    }

    fn with_transport(name: &str, transport: Transport) -> ServerConfig {
        ServerConfig {
            name: name.to_string(),
            transport,
            exposure: Exposure::Codemode,
            tool_exposure: Vec::new(),
            timeout: Duration::from_secs(60),
            description: None,
            source: "session".to_string(),
            raw: Value::Null,
            scope: None,
            override_path: None,
        }
    }

    /// A server's effective exposure for one of its tools.
    pub fn exposure_of(&self, tool: &str) -> Exposure {
        if let Some((_, e)) = self.tool_exposure.iter().find(|(k, _)| !k.contains('*') && k == tool) {
            return *e;
        }
        self.tool_exposure
            .iter()
            .find(|(k, _)| k.contains('*') && wildcard_match(k, tool))
            .map_or(self.exposure, |(_, e)| *e)
    }

    /// Secret-free description for logs and errors.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, .. } => format!("{} (stdio: {})", self.name, command.display()),
            Transport::Http { url, .. } => format!("{} (http: {})", self.name, strip_userinfo(url)),
        }
    }
}

fn strip_userinfo(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}{}", &url[..scheme + 3], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// The merged configuration: servers to connect, and problems to report once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    pub servers: Vec<ServerConfig>,
    /// `file: message` lines for invalid entries.
    pub errors: Vec<String>,
    /// `autoEnableCodemode` (default true).
    pub auto_enable_codemode: bool,
    /// Valid entries with `enabled: false` (`pi mcp list` shows them).
    pub disabled: Vec<ServerConfig>,
}

/// Where to read configuration from.
pub struct ConfigSources<'a> {
    pub agent_dir: &'a Path,
    pub cwd: &'a Path,
    /// Read `.pi/mcp.json` (the project is trusted).
    pub project_trusted: bool,
    /// Environment for `${VAR}` (None: the process environment).
    pub env: Option<&'a BTreeMap<String, String>>,
}

impl McpConfig {
    /// Read `<agent_dir>/mcp.json` and, when trusted, `<cwd>/.pi/mcp.json`,
    /// one file after the other as pi does: a file's own errors, then its
    /// entries', each entry checked as it is read (a project override's
    /// merged entry too, named by the project file).
    pub fn load(sources: &ConfigSources<'_>) -> McpConfig {
        let mut loading = Loading::default();
        let user_path = sources.agent_dir.join("mcp.json");
        let project_path = sources.cwd.join(".pi").join("mcp.json");
        let mut auto = None;
        let mut files = vec![(user_path, false)];
        if sources.project_trusted {
            files.push((project_path, true));
        }
        for (path, project) in files {
            let Some(file) = read_file(&path, &mut loading.errors) else { continue };
            // A later file's valid value wins.
            auto = file.get("autoEnableCodemode").and_then(Value::as_bool).or(auto);
            let source = path.display().to_string();
            let servers = file.get("mcpServers").and_then(Value::as_object).cloned().unwrap_or_default();
            for (name, entry) in servers {
                loading.read_entry(&name, entry, &source, project, sources);
            }
        }
        let mut config =
            McpConfig { errors: loading.errors, auto_enable_codemode: auto.unwrap_or(true), ..Default::default() };
        for (server, enabled) in loading.servers {
            if enabled {
                config.servers.push(server);
            } else {
                config.disabled.push(server);
            }
        }
        config
    }

    /// Parse servers given as an `mcpServers` object (e.g. per session).
    pub fn from_value(servers: &Value, source: &str, sources: &ConfigSources<'_>) -> McpConfig {
        let mut config = McpConfig { auto_enable_codemode: true, ..Default::default() };
        let mut entries = Vec::new();
        collect(&serde_json::json!({ "mcpServers": servers }), Path::new(source), &mut entries, &mut config.errors);
        for (name, entry, source) in entries {
            config.add_entry(&name, &entry, &source, sources);
        }
        config
    }

    /// The config pi's `createMcpExtension({ loadConfig })` returned (pi's
    /// `LoadedMcpConfig`: `servers: [{name, config, source}]`, `errors`,
    /// `autoEnableCodemode`), which replaces `mcp.json`. Each entry is read
    /// as an `mcp.json` entry from its `source`; what is not an entry is an error.
    pub fn from_loaded(loaded: &Value, sources: &ConfigSources<'_>) -> McpConfig {
        let mut config = McpConfig {
            auto_enable_codemode: loaded.get("autoEnableCodemode").and_then(Value::as_bool).unwrap_or(true),
            ..Default::default()
        };
        let entries = loaded.get("servers").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for entry in entries {
            let source = entry.get("source").and_then(Value::as_str).unwrap_or("loadConfig");
            let Some(name) = entry.get("name").and_then(Value::as_str) else {
                config.errors.push(format!("{source}: loadConfig server entry without a name"));
                continue;
            };
            let one = McpConfig::from_value(&serde_json::json!({ name: entry.get("config") }), source, sources);
            config.errors.extend(one.errors);
            for mut server in one.servers {
                if let Some(scope) = entry.get("scope").and_then(Value::as_str) {
                    server.scope = Some(scope.to_string());
                }
                config.add_server(server);
            }
        }
        let errors = loaded.get("errors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        config.errors.extend(errors.iter().map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string)));
        config
    }

    /// Add servers, skipping those whose name another server already has.
    pub fn add_server(&mut self, server: ServerConfig) {
        if !self.conflicts(&server) {
            self.servers.push(server);
        }
    }

    /// Whether another server (a disabled one too) has `server`'s
    /// namespace, noted as an error in pi's words.
    fn conflicts(&mut self, server: &ServerConfig) -> bool {
        let key = namespace_key(&server.name);
        let Some(other) = self.servers.iter().chain(&self.disabled).find(|s| namespace_key(&s.name) == key) else {
            return false;
        };
        self.errors.push(format!("{}: server \"{}\" conflicts with \"{}\"", server.source, server.name, other.name));
        true
    }

    fn add_entry(&mut self, name: &str, entry: &Value, source: &str, sources: &ConfigSources<'_>) {
        match parse_entry(name, entry, source, sources) {
            Ok(Some(server)) => self.add_server(server),
            Ok(None) => {
                let mut enabled = entry.clone();
                if let Some(map) = enabled.as_object_mut() {
                    map.remove("enabled");
                }
                match parse_entry(name, &enabled, source, sources) {
                    Ok(Some(mut server)) if !self.conflicts(&server) => {
                        server.raw = entry.clone();
                        self.disabled.push(server);
                    }
                    Ok(_) => {}
                    Err(e) => self.errors.push(format!("{source}: {e}")),
                }
            }
            Err(e) => self.errors.push(format!("{source}: {e}")),
        }
    }
}

fn namespace_key(name: &str) -> String {
    name.replace('-', "_")
}

/// A file's object, or None (its error noted in pi's words: one that is
/// not an object with an `mcpServers` object, if any, is left out whole).
fn read_file(path: &Path, errors: &mut Vec<String>) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() && v.get("mcpServers").is_none_or(Value::is_object) => {
            if v.get("autoEnableCodemode").is_some_and(|auto| !auto.is_boolean()) {
                errors.push(format!("{}: autoEnableCodemode must be a boolean", path.display()));
            }
            Some(v)
        }
        Ok(_) => {
            errors.push(format!("{}: expected an object with an \"mcpServers\" object", path.display()));
            None
        }
        Err(_) => {
            // pi reports the message of its `JSON.parse` error.
            let message = pi_types::js_json_error::json_parse_error(text).unwrap_or_default();
            errors.push(format!("{}: {message}", path.display()));
            None
        }
    }
}

fn collect(file: &Value, path: &Path, out: &mut Vec<(String, Value, String)>, errors: &mut Vec<String>) {
    let source = path.display().to_string();
    let Some(servers) = file.get("mcpServers").and_then(Value::as_object) else { return };
    for (name, entry) in servers {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            errors.push(format!("{source}: invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"));
            continue;
        }
        if !entry.is_object() {
            errors.push(format!("{source}: server \"{name}\" must be an object"));
            continue;
        }
        out.push((name.clone(), entry.clone(), source.clone()));
    }
}

/// The keys a project entry without `command`/`url`/`type` may set.
const OVERRIDE_KEYS: [&str; 3] = ["enabled", "exposure", "toolExposure"];

/// The entries read so far (pi's `servers` map: each with whether it is
/// enabled; a later entry of the same name takes its place) and the errors.
#[derive(Default)]
struct Loading {
    servers: Vec<(ServerConfig, bool)>,
    errors: Vec<String>,
}

impl Loading {
    /// One entry of the file `source` (`project`: the project's), checked
    /// as pi checks it; kept, or its error noted.
    fn read_entry(&mut self, name: &str, entry: Value, source: &str, project: bool, sources: &ConfigSources<'_>) {
        let is_override = ["command", "url", "type"].iter().all(|k| entry.get(*k).is_none());
        if project && entry.is_object() && is_override {
            return self.read_override(name, &entry, source, sources);
        }
        let server = match read_server(name, &entry, source, sources) {
            Ok(server) => server,
            Err(e) => return self.errors.push(format!("{source}: {e}")),
        };
        // Names that differ only in `-` and `_` would share a namespace.
        let key = namespace_key(name);
        if let Some((other, _)) = self.servers.iter().find(|(s, _)| s.name != name && namespace_key(&s.name) == key) {
            let error = format!("{source}: server \"{name}\" conflicts with \"{}\"", other.name);
            return self.errors.push(error);
        }
        let truthy = |v: &Value| {
            !matches!(v, Value::Null | Value::Bool(false)) && v.as_str() != Some("") && v.as_f64() != Some(0.0)
        };
        if project && entry.get("url").is_some() && entry.get("auth").is_some_and(truthy) {
            let error = format!("{source}: server \"{name}\": auth is only allowed in the global mcp.json");
            return self.errors.push(error);
        }
        self.keep(server);
    }

    /// A project entry without `command`/`url`/`type`: it overrides only
    /// `enabled`, `exposure` and `toolExposure` of the entry of that name
    /// read before (pi's `override`), any other key is an error, and the
    /// merged entry is checked as the project file's.
    fn read_override(&mut self, name: &str, entry: &Value, source: &str, sources: &ConfigSources<'_>) {
        let Some((base, _)) = self.servers.iter().find(|(s, _)| s.name == name) else {
            let error =
                format!("{source}: server \"{name}\" needs \"command\" or \"url\", or a global server to override");
            return self.errors.push(error);
        };
        if entry.as_object().is_some_and(|o| o.keys().any(|k| !OVERRIDE_KEYS.contains(&k.as_str()))) {
            let error = format!("{source}: server \"{name}\": an override can only set {}", OVERRIDE_KEYS.join(", "));
            return self.errors.push(error);
        }
        let mut merged = base.raw.clone();
        if let (Some(merged), Some(entry)) = (merged.as_object_mut(), entry.as_object()) {
            merged.extend(entry.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let base_source = base.source.clone();
        match read_server(name, &merged, &base_source, sources) {
            Ok((mut server, enabled)) => {
                server.override_path = Some(source.to_string());
                self.keep((server, enabled));
            }
            Err(e) => self.errors.push(format!("{source}: {e}")),
        }
    }

    /// Keep a server, in the place of the one of its name if any.
    fn keep(&mut self, (server, enabled): (ServerConfig, bool)) {
        match self.servers.iter_mut().find(|(s, _)| s.name == server.name) {
            Some(slot) => *slot = (server, enabled),
            None => self.servers.push((server, enabled)),
        }
    }
}

/// An entry's server and whether it is enabled (a disabled one is read
/// without its `enabled`, and keeps the entry as configured), or its error.
fn read_server(
    name: &str,
    entry: &Value,
    source: &str,
    sources: &ConfigSources<'_>,
) -> Result<(ServerConfig, bool), String> {
    if let Some(server) = parse_server(name, entry, source, sources)? {
        return Ok((server, true));
    }
    let mut enabled = entry.clone();
    if let Some(map) = enabled.as_object_mut() {
        map.remove("enabled");
    }
    let mut server =
        parse_server(name, &enabled, source, sources)?.ok_or_else(|| format!("server \"{name}\" is disabled"))?;
    server.raw = entry.clone();
    Ok((server, false))
}

/// Whether two server names are one namespace (`-` and `_` count as the same).
pub fn same_server_name(a: &str, b: &str) -> bool {
    namespace_key(a) == namespace_key(b)
}

/// A command value's output (trimmed).
fn run_value_command(command: &str) -> Result<String, String> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run a value command: {e}"))?;
    if !output.status.success() {
        return Err(format!("a value command failed ({})", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// `${VAR}` from the environment (unset: empty); a value that starts with `!`
/// is a shell command, run when the server connects.
pub fn expand_value(value: &str, env: Option<&BTreeMap<String, String>>) -> ConfigValue {
    if let Some(command) = value.strip_prefix('!') {
        return ConfigValue::Command(command.to_string());
    }
    let lookup = |name: &str| match env {
        Some(env) => env.get(name).cloned(),
        None => std::env::var(name).ok(),
    };
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                out.push_str(&lookup(&after[..end]).unwrap_or_default());
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    ConfigValue::Text(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(user: Option<Value>, project: Option<Value>, trusted: bool, env: &[(&str, &str)]) -> McpConfig {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        if let Some(u) = user {
            std::fs::write(agent.path().join("mcp.json"), u.to_string()).unwrap();
        }
        if let Some(p) = project {
            std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
            std::fs::write(cwd.path().join(".pi/mcp.json"), p.to_string()).unwrap();
        }
        let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let sources =
            ConfigSources { agent_dir: agent.path(), cwd: cwd.path(), project_trusted: trusted, env: Some(&env) };
        McpConfig::load(&sources)
    }

    #[test]
    fn a_loaded_config_keeps_its_entries_order_sources_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let sources = ConfigSources { agent_dir: dir.path(), cwd: dir.path(), project_trusted: false, env: None };
        let loaded = json!({
            "servers": [
                {"name": "ze_ta", "config": {"command": "z", "exposure": "direct"}, "source": "/ext/a.ts"},
                {"name": "alpha", "config": {"url": "http://127.0.0.1:1/mcp"}, "source": "/ext/b.ts"},
                {"config": {"command": "nameless"}, "source": "/ext/c.ts"},
                {"name": "ze-ta", "config": {"command": "again"}, "source": "/ext/d.ts"}
            ],
            "errors": ["/ext/a.ts: the loader's own error"],
            "autoEnableCodemode": false
        });
        let c = McpConfig::from_loaded(&loaded, &sources);
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ze_ta", "alpha"], "in the loader's order");
        assert_eq!(c.servers[0].exposure, Exposure::Direct);
        assert_eq!(c.servers[1].source, "/ext/b.ts", "each entry keeps its source");
        assert_eq!(c.servers[1].scope.as_deref(), Some("extension"));
        assert!(!c.auto_enable_codemode);
        assert_eq!(c.errors.len(), 3, "{:?}", c.errors);
        assert!(c.errors[0].contains("without a name"), "{:?}", c.errors);
        assert!(c.errors[1].contains("ze-ta"), "a clash of names is an error: {:?}", c.errors);
        assert_eq!(c.errors[2], "/ext/a.ts: the loader's own error");
        let defaults = McpConfig::from_loaded(&json!({"servers": []}), &sources);
        assert!(defaults.servers.is_empty() && defaults.errors.is_empty() && defaults.auto_enable_codemode);
    }

    #[test]
    fn user_servers_with_expansion_and_defaults() {
        let user = json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server", "~/docs"], "env": {"TOKEN": "${GH}", "PLAIN": "a${MISSING}b"}, "cwd": "sub"},
            "docs": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${DOCS}"}, "timeout": 5, "exposure": "direct", "description": "Docs"},
            "cmd": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "!printf 'from command'"}},
            "off": {"command": "x", "enabled": false}
        }});
        let c = load(Some(user), None, false, &[("GH", "gh-token"), ("DOCS", "d0cs")]);
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert_eq!(c.servers.len(), 3);
        let fs = &c.servers[0];
        let Transport::Stdio { command, args, env, cwd } = &fs.transport else { panic!() };
        assert_eq!(command, &PathBuf::from("npx"));
        assert_eq!(args[2], crate::config::home_dir().join("docs").display().to_string());
        assert_eq!(
            resolve_values(env).unwrap(),
            vec![("TOKEN".into(), "gh-token".into()), ("PLAIN".into(), "ab".into())]
        );
        assert!(!format!("{fs:?}").contains("gh-token"), "Debug hides values");
        assert!(cwd.ends_with("sub"));
        assert_eq!((fs.exposure, fs.timeout), (Exposure::Codemode, Duration::from_secs(60)));
        let docs = &c.servers[1];
        assert_eq!(
            docs.transport,
            Transport::Http {
                url: "https://example.invalid/mcp".into(),
                headers: texts(vec![("Authorization".into(), "Bearer d0cs".into())]),
                oauth: None
            }
        );
        assert_eq!(
            (docs.exposure, docs.timeout, docs.description.as_deref()),
            (Exposure::Direct, Duration::from_secs(5), Some("Docs"))
        );
        let Transport::Http { headers, .. } = &c.servers[2].transport else { panic!() };
        assert!(matches!(&headers[0].1, ConfigValue::Command(_)), "commands run at connect time, not at start-up");
        assert_eq!(resolve_values(headers).unwrap(), vec![("X".into(), "from command".into())]);
        assert!(!docs.describe().contains("d0cs"), "descriptions carry no secrets");
    }

    #[test]
    fn invalid_entries_are_reported_and_skipped() {
        let user = json!({"mcpServers": {
            "bad name": {"command": "x"},
            "legacy": {"type": "sse", "url": "http://h/sse"},
            "neither": {"args": []},
            "both": {"command": "x", "url": "http://h/mcp"},
            "weird": {"command": "x", "exposure": "sometimes"},
            "slow": {"command": "x", "timeout": 0, "enabled": false},
            "a-b": {"command": "x"},
            "a_b": {"command": "y"},
            "ok": {"command": "z", "toolExposure": {"get_*": "direct", "get_secret": "hidden", "*": "deferred"}}
        }});
        let c = load(Some(user), None, false, &[]);
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["both", "a-b", "ok"], "a `url` makes an HTTP server, as pi's");
        let errors = c.errors.join("\n");
        for needle in [
            "invalid server name \"bad name\"",
            "legacy SSE transport",
            "server \"neither\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)",
            "server \"weird\": exposure must be one of \"codemode\", \"deferred\", \"direct\", \"hidden\"",
            "server \"slow\": timeout must be a positive number of seconds",
            "server \"a_b\" conflicts with \"a-b\"",
        ] {
            assert!(errors.contains(needle), "{needle} in {errors}");
        }
        let ok = &c.servers[2];
        assert_eq!(ok.exposure_of("get_secret"), Exposure::Hidden, "exact names win");
        assert_eq!(ok.exposure_of("get_thing"), Exposure::Direct, "first matching pattern");
        assert_eq!(ok.exposure_of("other"), Exposure::Deferred);
        let broken = load(Some(json!({"mcpServers": [1]})), None, false, &[]);
        assert!(broken.errors[0].ends_with(": expected an object with an \"mcpServers\" object"));
    }

    #[test]
    fn project_entries_need_trust_and_override_or_replace() {
        let user = json!({"mcpServers": {
            "internal": {"command": "tool", "env": {"K": "v"}, "exposure": "codemode"},
            "shared": {"command": "old"}
        }, "autoEnableCodemode": true});
        let project = json!({"mcpServers": {
            "internal": {"exposure": "direct", "toolExposure": {"x": "hidden"}},
            "shared": {"command": "new"},
            "extra": {"url": "http://127.0.0.1:9/mcp"}
        }, "autoEnableCodemode": false});
        let untrusted = load(Some(user.clone()), Some(project.clone()), false, &[]);
        assert_eq!(untrusted.servers.len(), 2);
        assert!(untrusted.auto_enable_codemode);
        assert_eq!(untrusted.servers[0].exposure, Exposure::Codemode);
        let trusted = load(Some(user), Some(project), true, &[]);
        let names: Vec<&str> = trusted.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["internal", "shared", "extra"]);
        let scopes: Vec<Option<&str>> = trusted.servers.iter().map(|s| s.scope.as_deref()).collect();
        assert_eq!(scopes, [Some("global"), Some("project"), Some("project")], "pi's scope of each entry");
        let internal = &trusted.servers[0];
        assert_eq!(internal.exposure, Exposure::Direct);
        assert_eq!(internal.exposure_of("x"), Exposure::Hidden);
        let Transport::Stdio { env, command, .. } = &internal.transport else { panic!() };
        assert_eq!(
            (command.to_str(), resolve_values(env).unwrap()),
            (Some("tool"), vec![("K".to_string(), "v".to_string())]),
            "the rest is kept"
        );
        let Transport::Stdio { command, .. } = &trusted.servers[1].transport else { panic!() };
        assert_eq!(command, &PathBuf::from("new"));
        assert!(!trusted.auto_enable_codemode);
        let disabled = load(
            Some(json!({"mcpServers": {"s": {"command": "x"}}})),
            Some(json!({"mcpServers": {"s": {"enabled": false}}})),
            true,
            &[],
        );
        assert!(disabled.servers.is_empty() && disabled.errors.is_empty());
    }

    #[test]
    fn each_file_is_read_whole_before_the_next_and_an_override_is_checked_as_the_projects() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let user = json!({"mcpServers": {"slow": {"command": "x", "timeout": 0}, "s": {"command": "x"}}});
        std::fs::write(agent.path().join("mcp.json"), user.to_string()).unwrap();
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        let project = cwd.path().join(".pi/mcp.json");
        let sources = ConfigSources { agent_dir: agent.path(), cwd: cwd.path(), project_trusted: true, env: None };
        std::fs::write(&project, "{\"mcpServers\": x}").unwrap();
        let c = McpConfig::load(&sources);
        assert!(c.errors[0].contains("server \"slow\""), "{:?}", c.errors);
        assert_eq!(
            c.errors[1],
            format!("{}: Unexpected token 'x', \"{{\"mcpServers\": x}}\" is not valid JSON", project.display())
        );
        std::fs::write(&project, json!({"mcpServers": {"s": {"exposure": "sometimes"}}}).to_string()).unwrap();
        let c = McpConfig::load(&sources);
        assert!(c.errors[1].starts_with(&format!("{}: server \"s\": exposure", project.display())), "{:?}", c.errors);
        assert_eq!(c.servers.len(), 1, "the global entry stays");
        assert_eq!(c.servers[0].override_path, None);
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("mcp__*", "mcp__a__b"));
        assert!(wildcard_match("*__b", "mcp__a__b"));
        assert!(wildcard_match("mcp__*__b*", "mcp__a__bc"));
        assert!(!wildcard_match("mcp__x*", "mcp__a"));
        assert!(wildcard_match("exact", "exact") && !wildcard_match("exact", "exactly"));
    }
}
