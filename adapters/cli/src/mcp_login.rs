//! `pi mcp login <server>` and `pi mcp logout <server>`, as pi 1.6.0 runs
//! them without a session: the server from `mcp.json` (the project's when
//! trusted), its stored OAuth credentials in `<agent dir>/mcp-auth.json`.
//! Login connects first (already signed in: said so), else signs in (the
//! authorization URL printed and opened, the loopback callback or a pasted
//! redirect URL on a terminal, `--timeout` seconds at most, 300 by default)
//! and reconnects. `pi mcp add|remove` are in [`crate::mcp_config`], `pi
//! mcp list` in [`crate::mcp_list`]; this module routes every `pi mcp` word.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use pi_core::mcp::connection::{Connection, Status};
use pi_core::mcp::factories::FactoryState;
use pi_core::mcp::oauth::sign_in::{SignInPrompt, sign_in};
use pi_core::mcp::{ConfigSources, McpConfig};
use tokio_util::sync::CancellationToken;

use crate::user_lines::{err, out};

const DEFAULT_TIMEOUT_SECONDS: f64 = 300.0;

/// `pi mcp …`: its exit code, or None for any other command line.
/// `init_logging` runs first when it is one.
pub fn command(argv: &[std::ffi::OsString], init_logging: impl FnOnce()) -> Option<ExitCode> {
    let words: Vec<String> = argv.iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    if words.first().map(String::as_str) != Some("mcp") {
        return None;
    }
    let action = words.get(1).cloned().unwrap_or_default();
    let rest = words.get(2..).unwrap_or_default();
    if action.is_empty() || action == "help" || words.iter().any(|w| w == "--help" || w == "-h") {
        out(crate::mcp_config::HELP);
        return Some(ExitCode::SUCCESS);
    }
    init_logging();
    let (Ok(cwd), agent_dir, home) =
        (std::env::current_dir(), pi_core::config::default_agent_dir(), pi_core::config::home_dir())
    else {
        err("cannot read the current directory");
        return Some(ExitCode::from(1));
    };
    let places = crate::mcp_config::Places { agent_dir, cwd, home };
    let code = match action.as_str() {
        "add" => crate::mcp_config::add(rest, &places),
        "remove" => crate::mcp_config::remove(rest, &places),
        "list" | "login" | "logout" => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            let code = match action.as_str() {
                "list" => runtime.block_on(crate::mcp_list::list(rest, &places)),
                _ => runtime.block_on(run(&action, rest, &places)),
            };
            runtime.shutdown_background();
            code
        }
        other => {
            err(&format!("Unknown mcp command \"{other}\".\n{}", crate::mcp_config::HELP_HINT));
            1
        }
    };
    Some(ExitCode::from(code))
}

async fn run(action: &str, rest: &[String], places: &crate::mcp_config::Places) -> u8 {
    use crate::mcp_config::{HELP_HINT, Kind, parse_options};
    let known: &[(&str, Kind)] =
        if action == "login" { &[("local", Kind::Flag), ("timeout", Kind::Value)] } else { &[("local", Kind::Flag)] };
    let Some(parsed) = parse_options(rest, known, usize::MAX) else { return 1 };
    let [name] = parsed.positional.as_slice() else {
        err(&format!("Usage: pi mcp {action} <server> [-l]\n{HELP_HINT}"));
        return 1;
    };
    let trusted = places.trusted();
    let sources = ConfigSources { agent_dir: &places.agent_dir, cwd: &places.cwd, project_trusted: trusted, env: None };
    let config = McpConfig::load(&sources);
    // pi's list of servers holds the disabled ones too, in the files' order.
    let mut all: Vec<&pi_core::mcp::ServerConfig> = config.servers.iter().chain(&config.disabled).collect();
    all.sort_by_key(|s| crate::mcp_list::order_in_files(s, &places.agent_dir, &places.project_config()));
    let Some(server) = all.iter().find(|s| &s.name == name).map(|s| (*s).clone()) else {
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        let suggestion = names.iter().find(|candidate| edit_distance(candidate, name) <= 2);
        let suggestion = suggestion.map(|s| format!(" Did you mean \"{s}\"?")).unwrap_or_default();
        let project_config = places.project_config();
        let note = if !trusted && project_config.exists() {
            format!(
                " {} is ignored because the project is not trusted. Start pi in the project to trust it.",
                project_config.display()
            )
        } else {
            String::new()
        };
        let configured = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        err(&format!("No MCP server named \"{name}\".{suggestion}{note} Configured: {configured}."));
        return 1;
    };
    if parsed.has("local") && server.scope.as_deref() != Some("project") {
        err(&format!("MCP server \"{name}\" is defined in {}, not in the project; omit --local.", server.source));
        return 1;
    }
    if let Some(provider) = server.raw.get("auth").and_then(|a| a.get("provider")).and_then(|p| p.as_str()) {
        err(&format!(
            "MCP server \"{name}\" uses the credentials of provider \"{provider}\". Run \"pi auth {action} {provider}\"."
        ));
        return 1;
    }
    let shared = Arc::new(FactoryState::default());
    shared.use_credentials_file(&places.agent_dir);
    let conn = Connection::with_root(server, Arc::default(), shared.clone());
    let Some(auth) = conn.auth.clone() else {
        err(&format!(
            "MCP server \"{name}\" does not use OAuth. Only HTTP servers without an Authorization header do."
        ));
        return 1;
    };
    let code = if action == "logout" {
        let removed = auth.store().remove(name, &auth.url).await.unwrap_or(false);
        out(&if removed {
            format!("Signed out of MCP server \"{name}\".")
        } else {
            format!("No stored credentials for MCP server \"{name}\".")
        });
        0
    } else {
        let timeout = parsed.values.get("timeout").map_or(Some(DEFAULT_TIMEOUT_SECONDS), |t| js_number(t));
        match timeout.filter(|t| t.is_finite() && *t > 0.0) {
            Some(timeout) => login(&conn, name, timeout).await,
            None => {
                err("--timeout must be a positive number of seconds.");
                1
            }
        }
    };
    conn.shutdown().await;
    code
}

async fn login(conn: &Arc<Connection>, name: &str, timeout: f64) -> u8 {
    // Connecting first answers whether a sign-in is needed and records the server's challenge.
    conn.connect().await;
    match conn.state().status {
        Status::Connected => {
            out(&format!("Already signed in to MCP server \"{name}\" ({} tools).", conn.state().tools.len()));
            return 0;
        }
        Status::NeedsAuth => {}
        Status::Failed(e) | Status::Disconnected(e) => {
            err(&format!("MCP server \"{name}\" failed to connect: {e}"));
            return 1;
        }
        _ => {
            err(&format!("MCP server \"{name}\" failed to connect: unknown error"));
            return 1;
        }
    }
    let Some(auth) = conn.auth.clone() else { return 1 };
    let cancel = CancellationToken::new();
    let prompt = Terminal { name: name.to_string() };
    let signed = tokio::select! {
        r = sign_in(&auth, &prompt, &cancel) => r,
        _ = tokio::time::sleep(Duration::from_secs_f64(timeout)) => {
            cancel.cancel();
            Err(pi_core::mcp::oauth::sign_in::CANCELLED.to_string())
        }
    };
    if let Err(failure) = signed {
        if failure == pi_core::mcp::oauth::sign_in::CANCELLED {
            err(&format!(
                "Sign-in to MCP server \"{name}\" was cancelled or not completed within {} seconds.",
                timeout.round()
            ));
        } else {
            let why = failure.strip_prefix("Sign-in failed: ").unwrap_or(&failure);
            err(&format!("Sign-in to MCP server \"{name}\" failed: {why}"));
        }
        return 1;
    }
    conn.connect().await;
    match conn.state().status {
        Status::Connected => {
            out(&format!("Signed in to MCP server \"{name}\" ({} tools).", conn.state().tools.len()));
            0
        }
        Status::Failed(e) | Status::Disconnected(e) => {
            err(&format!("Signed in, but {e}"));
            1
        }
        _ => {
            err(&format!("Signed in, but {}", pi_core::mcp::oauth::sign_in_required(name)));
            1
        }
    }
}

/// Levenshtein distance, for the configured name a mistyped one may mean.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            current.push((previous[j + 1] + 1).min(current[j] + 1).min(previous[j] + usize::from(ca != *cb)));
        }
        previous = current;
    }
    previous[b.len()]
}

/// A number as JavaScript's `Number(text)` reads it (blank is 0; hex, `Infinity`).
fn js_number(text: &str) -> Option<f64> {
    let text = text.trim();
    if text.is_empty() {
        return Some(0.0);
    }
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|n| n as f64);
    }
    match text {
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ if text.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) => text.parse().ok(),
        _ => None,
    }
}

/// The terminal: the URL printed (and opened); a pasted redirect URL read
/// from stdin when it is a terminal, else only the callback can finish.
struct Terminal {
    name: String,
}

#[async_trait::async_trait]
impl SignInPrompt for Terminal {
    fn show_authorization_url(&self, url: &str) {
        out(&format!("Sign in to MCP server \"{}\" in your browser:\n{url}", self.name));
        pi_core::auth::login::open_in_browser(url);
    }

    async fn redirect_url(&self) -> Option<String> {
        if !std::io::stdin().is_terminal() {
            return std::future::pending().await;
        }
        {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "If the browser cannot reach this machine, paste the URL it was redirected to: ");
            let _ = stderr.flush();
        }
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).ok().filter(|n| *n > 0).map(|_| line)
        })
        .await
        .ok()
        .flatten();
        match line {
            Some(line) => Some(line.trim().to_string()),
            None => std::future::pending().await,
        }
    }
}
