//! `pi mcp add` and `pi mcp remove`, as pi 1.6.0 runs them: a server entry
//! built from the options (stdio after `--`, or `--url`), checked with pi's
//! rules and messages, written into the global `mcp.json` (or the project's
//! with `-l`), every other key and the file's indentation kept; and the
//! option parsing `pi mcp`'s commands share (`--` or the positionals a
//! command takes end the options, so a server's own flags pass through).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::user_lines::{err, out};

/// `pi mcp --help`: the commands and options of pi 1.6.0's `pi mcp`, in pi-rpc's words.
pub const HELP: &str = "Usage:
  pi mcp add <server> [options] -- <command> [args...]
  pi mcp add <server> [options] --url <url>
  pi mcp remove <server> [-l]
  pi mcp list [--json]
  pi mcp login <server> [-l] [--timeout <seconds>]
  pi mcp logout <server> [-l]

Manage the MCP servers of ~/.pi/agent/mcp.json (and of .pi/mcp.json in a
trusted project), check them, and sign in to OAuth servers, outside a session.

Commands:
  add <server>            Write a server into mcp.json (replacing one of that name)
  remove <server>         Delete a server from mcp.json
  list                    Connect to each server and report it (exit status 1 if one fails)
  login <server>          Sign in to an OAuth server in the browser
  logout <server>         Forget the stored OAuth credentials

add, remove, login and logout:
  -l, --local             The project's .pi/mcp.json rather than the global one

add:
  --url <url>             A streamable HTTP server (instead of a command after --)
  --env <KEY=VALUE>       Environment of a stdio server (repeatable)
  --cwd <dir>             Working directory of a stdio server
  --header <KEY=VALUE>    HTTP header (repeatable)
  --bearer-token-env-var <NAME>
                          Authorization: Bearer ${NAME}
  --oauth-client-id <id>  A pre-registered OAuth client
  --oauth-client-secret <secret>
                          Its secret (${NAME} and !command work)
  --oauth-callback-port <port>
                          A fixed port for the OAuth callback
  --oauth-client-name <name>
                          The client name to register with
  --oauth-client-registration <mode>
                          auto (default), cimd or dcr
  --exposure <mode>       codemode (default), deferred, direct or hidden
  --description <text>    What the server is for (shown in the system prompt)

list:
  --json                  The report as JSON

login:
  --timeout <seconds>     How long the sign-in may take (300 by default)";

/// What follows a usage error.
pub const HELP_HINT: &str = "Use \"pi mcp --help\" for usage.";

/// How an option takes its value.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Flag,
    Value,
    List,
}

/// Parsed options: positionals, single values (`"true"` for flags), lists.
#[derive(Default)]
pub struct Parsed {
    pub positional: Vec<String>,
    pub values: HashMap<String, String>,
    pub lists: HashMap<String, Vec<String>>,
}

impl Parsed {
    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name) || self.lists.contains_key(name)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// Parse `--name value` options of `known`; None (reported) for an unknown
/// option or a missing value. `-l` is `--local`.
pub fn parse_options(args: &[String], known: &[(&str, Kind)], max_positionals: usize) -> Option<Parsed> {
    let mut parsed = Parsed::default();
    let mut index = 0;
    while index < args.len() {
        let typed = args[index].as_str();
        let arg = if typed == "-l" { "--local" } else { typed };
        if arg == "--" || parsed.positional.len() >= max_positionals {
            let from = if arg == "--" { index + 1 } else { index };
            parsed.positional.extend(args[from..].iter().cloned());
            break;
        }
        let Some(name) = arg.strip_prefix("--") else {
            parsed.positional.push(arg.to_string());
            index += 1;
            continue;
        };
        let Some((_, kind)) = known.iter().find(|(k, _)| *k == name) else {
            err(&format!("Unknown option {typed}.\n{HELP_HINT}"));
            return None;
        };
        if *kind == Kind::Flag {
            parsed.values.insert(name.to_string(), "true".to_string());
            index += 1;
            continue;
        }
        let Some(value) = args.get(index + 1) else {
            err(&format!("{arg} needs a value."));
            return None;
        };
        if *kind == Kind::List {
            parsed.lists.entry(name.to_string()).or_default().push(value.clone());
        } else {
            parsed.values.insert(name.to_string(), value.clone());
        }
        index += 2;
    }
    Some(parsed)
}

/// `KEY=VALUE` pairs of a repeatable option, in order; None (reported) for a bad one.
fn pairs(option: &str, parsed: &Parsed) -> Option<Map<String, Value>> {
    let mut record = Map::new();
    for pair in parsed.lists.get(option).map(Vec::as_slice).unwrap_or_default() {
        match pair.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                record.insert(key.to_string(), json!(value));
            }
            _ => {
                err(&format!("--{option} expects KEY=VALUE, got \"{pair}\"."));
                return None;
            }
        }
    }
    Some(record)
}

const ADD_OPTIONS: &[(&str, Kind)] = &[
    ("local", Kind::Flag),
    ("url", Kind::Value),
    ("env", Kind::List),
    ("cwd", Kind::Value),
    ("header", Kind::List),
    ("bearer-token-env-var", Kind::Value),
    ("oauth-client-id", Kind::Value),
    ("oauth-client-secret", Kind::Value),
    ("oauth-callback-port", Kind::Value),
    ("oauth-client-name", Kind::Value),
    ("oauth-client-registration", Kind::Value),
    ("exposure", Kind::Value),
    ("description", Kind::Value),
];

const HTTP_ONLY: &[&str] = &[
    "header",
    "bearer-token-env-var",
    "oauth-client-id",
    "oauth-client-secret",
    "oauth-callback-port",
    "oauth-client-name",
    "oauth-client-registration",
];

/// Where `pi mcp` reads and writes: the agent directory and the project.
pub struct Places {
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    pub home: PathBuf,
}

impl Places {
    pub fn project_config(&self) -> PathBuf {
        self.cwd.join(".pi").join("mcp.json")
    }

    pub fn trusted(&self) -> bool {
        pi_core::resources::trust::project_trusted(&self.agent_dir, &self.cwd, &self.home, None).unwrap_or(false)
    }

    /// The file and scope `--local` picks.
    fn target(&self, local: bool) -> (PathBuf, &'static str) {
        if local { (self.project_config(), "project") } else { (self.agent_dir.join("mcp.json"), "global") }
    }
}

/// `pi mcp add <server> [options] (--url <url> | -- <command> [args...])`.
pub fn add(args: &[String], places: &Places) -> u8 {
    let Some(parsed) = parse_options(args, ADD_OPTIONS, 2) else { return 1 };
    let (name, command) = match parsed.positional.split_first() {
        Some((name, command)) => (name.as_str(), command),
        None => ("", &[][..]),
    };
    let url = parsed.value("url");
    if name.is_empty() || url.is_none() == command.is_empty() {
        err(&format!("Usage: pi mcp add <server> [options] (--url <url> | -- <command> [args...])\n{HELP_HINT}"));
        return 1;
    }
    let misplaced = match url {
        Some(_) => ["env", "cwd"].iter().find(|o| parsed.has(o)),
        None => HTTP_ONLY.iter().find(|o| parsed.has(o)),
    };
    if let Some(option) = misplaced {
        let applies = if url.is_none() { "HTTP servers (--url)" } else { "stdio servers" };
        err(&format!("--{option} only applies to {applies}."));
        return 1;
    }
    let mut config = Map::new();
    if let Some(url) = url {
        let Some(mut headers) = pairs("header", &parsed) else { return 1 };
        if let Some(variable) = parsed.value("bearer-token-env-var") {
            headers.insert("Authorization".into(), json!(format!("Bearer ${{{variable}}}")));
        }
        let mut oauth = Map::new();
        for (option, key) in [
            ("oauth-client-id", "clientId"),
            ("oauth-client-secret", "clientSecret"),
            ("oauth-callback-port", "callbackPort"),
            ("oauth-client-name", "clientName"),
            ("oauth-client-registration", "clientRegistration"),
        ] {
            if let Some(value) = parsed.value(option) {
                let value = if key == "callbackPort" { js_number(value) } else { json!(value) };
                oauth.insert(key.into(), value);
            }
        }
        config.insert("url".into(), json!(url));
        if !headers.is_empty() {
            config.insert("headers".into(), Value::Object(headers));
        }
        if !oauth.is_empty() {
            config.insert("oauth".into(), Value::Object(oauth));
        }
    } else {
        let Some(env) = pairs("env", &parsed) else { return 1 };
        config.insert("command".into(), json!(command[0]));
        if command.len() > 1 {
            config.insert("args".into(), json!(command[1..]));
        }
        if !env.is_empty() {
            config.insert("env".into(), Value::Object(env));
        }
        if let Some(cwd) = parsed.value("cwd") {
            config.insert("cwd".into(), json!(cwd));
        }
    }
    if let Some(exposure) = parsed.value("exposure") {
        // pi's older name for codemode.
        let exposure = if exposure == "codemode-deferred" { "codemode" } else { exposure };
        config.insert("exposure".into(), json!(exposure));
    }
    if let Some(description) = parsed.value("description") {
        config.insert("description".into(), json!(description));
    }
    if let Err(problem) = check(name, &config) {
        err(&problem);
        return 1;
    }
    let local = parsed.has("local");
    let (path, scope) = places.target(local);
    let mut replaced = false;
    let edited = edit_servers(&path, |servers| {
        replaced = servers.insert(name.to_string(), Value::Object(config.clone())).is_some();
        true
    });
    if let Err(problem) = edited {
        err(&format!("Could not update {}: {problem}", path.display()));
        return 1;
    }
    out(&format!(
        "{} {scope} MCP server \"{name}\" in {}.",
        if replaced { "Replaced" } else { "Added" },
        path.display()
    ));
    if local && !places.trusted() {
        out(&format!(
            "The project is not trusted, so {} is ignored until you start pi in the project and trust it.",
            path.display()
        ));
    }
    let headers = config.get("headers").and_then(Value::as_object);
    let may_need_sign_in =
        url.is_some() && !headers.is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case("authorization")));
    if may_need_sign_in {
        out(&format!("Check it with: pi mcp list. If it requires sign-in: pi mcp login {name}"));
    } else {
        out("Check it with: pi mcp list");
    }
    0
}

/// `Number(text)` as JavaScript reads it: a number, else NaN (written as null).
fn js_number(text: &str) -> Value {
    let trimmed = text.trim();
    let number = if trimmed.is_empty() { Some(0.0) } else { trimmed.parse::<f64>().ok() };
    match number.filter(|n| n.is_finite()) {
        Some(n) if n.fract() == 0.0 && n.abs() < 9e15 => json!(n as i64),
        Some(n) => json!(n),
        None => Value::Null,
    }
}

/// pi's checks of an entry `add` can build, with pi's messages.
fn check(name: &str, config: &Map<String, Value>) -> Result<(), String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(format!("invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"));
    }
    let problem = |what: &str| Err(format!("server \"{name}\": {what}"));
    if let Some(url) = config.get("url").and_then(Value::as_str)
        && !url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
    {
        return problem("url must be an http or https URL");
    }
    if let Some(oauth) = config.get("oauth") {
        if oauth.get("callbackPort").is_some_and(|p| !p.as_u64().is_some_and(|p| (1..=65535).contains(&p))) {
            return problem("oauth.callbackPort must be a port number");
        }
        if oauth.get("clientName").and_then(Value::as_str).is_some_and(|n| n.trim().is_empty()) {
            return problem("oauth.clientName must be a non-empty string");
        }
        match oauth.get("clientRegistration").and_then(Value::as_str) {
            None | Some("auto" | "dcr") => {}
            Some("cimd") if oauth.get("clientId").is_some() || oauth.get("clientName").is_some() => {
                return problem(
                    "oauth.clientRegistration \"cimd\" cannot be combined with oauth.clientId or oauth.clientName",
                );
            }
            Some("cimd") => {}
            Some(_) => return problem("oauth.clientRegistration must be \"auto\", \"dcr\", or \"cimd\""),
        }
    }
    if let Some(exposure) = config.get("exposure").and_then(Value::as_str)
        && !["codemode", "deferred", "direct", "hidden"].contains(&exposure)
    {
        return problem("exposure must be one of \"codemode\", \"deferred\", \"direct\", \"hidden\"");
    }
    Ok(())
}

/// Read `path` (an empty config when missing), let `edit` change its
/// `mcpServers`, and write it back with its own indentation when `edit`
/// returns true. Other content is kept, in its order.
fn edit_servers(path: &Path, edit: impl FnOnce(&mut Map<String, Value>) -> bool) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => Some(text.trim_start_matches('\u{feff}').to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.to_string()),
    };
    let mut parsed: Value = match &text {
        // pi reports the message of its `JSON.parse` error.
        Some(text) => serde_json::from_str(text)
            .map_err(|e| pi_core::js_json_error::json_parse_error(text).unwrap_or_else(|| e.to_string()))?,
        None => json!({}),
    };
    let shape_error = || format!("{}: expected an object with an \"mcpServers\" object", path.display());
    let Some(file) = parsed.as_object_mut() else { return Err(shape_error()) };
    let servers = file.entry("mcpServers").or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else { return Err(shape_error()) };
    if !edit(servers) {
        return Ok(());
    }
    let indent = text.as_deref().and_then(first_indent).unwrap_or_else(|| "  ".to_string());
    let pretty = serde_json::to_string_pretty(&parsed).map_err(|e| e.to_string())?;
    let mut written = String::new();
    for line in pretty.lines() {
        // serde_json indents by two spaces a level; strings hold no raw line breaks.
        let rest = line.trim_start_matches(' ');
        written.push_str(&indent.repeat((line.len() - rest.len()) / 2));
        written.push_str(rest);
        written.push('\n');
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, written).map_err(|e| e.to_string())
}

/// The leading blanks of the first indented line (pi keeps a file's indentation).
fn first_indent(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim_start_matches([' ', '\t']);
        let blanks = &line[..line.len() - rest.len()];
        (!blanks.is_empty() && rest.chars().next().is_some_and(|c| !c.is_whitespace())).then(|| blanks.to_string())
    })
}

/// `pi mcp remove <server> [-l]`.
pub fn remove(args: &[String], places: &Places) -> u8 {
    let Some(parsed) = parse_options(args, &[("local", Kind::Flag)], usize::MAX) else { return 1 };
    let [name] = parsed.positional.as_slice() else {
        err(&format!("Usage: pi mcp remove <server> [-l]\n{HELP_HINT}"));
        return 1;
    };
    let (path, scope) = places.target(parsed.has("local"));
    let mut removed = false;
    if path.exists() {
        let edited = edit_servers(&path, |servers| {
            removed = servers.shift_remove(name).is_some();
            removed
        });
        if let Err(problem) = edited {
            err(&format!("Could not update {}: {problem}", path.display()));
            return 1;
        }
    }
    if removed {
        out(&format!("Removed {scope} MCP server \"{name}\" from {}.", path.display()));
        return 0;
    }
    let sources = pi_core::mcp::ConfigSources {
        agent_dir: &places.agent_dir,
        cwd: &places.cwd,
        project_trusted: true,
        env: None,
    };
    let config = pi_core::mcp::McpConfig::load(&sources);
    let other = config
        .servers
        .iter()
        .chain(&config.disabled)
        .find(|s| &s.name == name && s.scope.as_deref().unwrap_or("global") != scope);
    let hint = other.map_or(String::new(), |o| {
        let local = if o.scope.as_deref() == Some("project") { "use --local" } else { "omit --local" };
        format!(" It is defined in {}; {local}.", o.source)
    });
    err(&format!("No {scope} MCP server named \"{name}\" in {}.{hint}", path.display()));
    1
}
