//! `pi login <provider>`, `pi logout <provider>`, `pi login --list` (and
//! pi's own spelling, `pi auth login` / `pi auth logout`): the subscription
//! logins of pi-ai 1.6.0, stored in `auth.json` where pi reads them.
//!
//! The sign-in URL or device code is printed on stdout (and the URL opened
//! in the browser: `$BROWSER`, else `xdg-open`/`open`, unless
//! `--no-browser` or `BROWSER=none`). Questions (a GitHub Enterprise
//! domain, a pasted redirect URL when the browser cannot reach this
//! machine) are read from stdin, a terminal or a pipe.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use async_trait::async_trait;
use clap::Parser;
use pi_core::auth::login::{self, LoginRequest};
use pi_core::auth::oauth::{self, LoginEvent, LoginIo, Net, Question, QuestionKind};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::user_lines::{err, out};

/// pi login: sign in to a provider with its subscription (OAuth) and store the credential in auth.json.
#[derive(Debug, Parser)]
#[command(name = "pi login", bin_name = "pi login", disable_version_flag = true)]
pub struct LoginArgs {
    /// The provider (`pi login --list` shows them).
    #[arg(value_name = "PROVIDER")]
    pub provider: Option<String>,

    /// List the providers one can log in to, and the logins stored.
    #[arg(long)]
    pub list: bool,

    /// The sign-in method: browser, device_code, copy_code (default: the provider's first).
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,

    /// Do not open a browser; use the provider's other sign-in (device code, copied code).
    #[arg(long)]
    pub no_browser: bool,
}

/// pi logout: remove a provider's stored credential from auth.json.
#[derive(Debug, Parser)]
#[command(name = "pi logout", bin_name = "pi logout", disable_version_flag = true)]
pub struct LogoutArgs {
    #[arg(value_name = "PROVIDER")]
    pub provider: String,
}

/// Which command argv names, with its arguments: `login …`, `logout …`,
/// `auth login …`, `auth logout …`.
pub fn command(argv: &[std::ffi::OsString]) -> Option<(&'static str, Vec<std::ffi::OsString>)> {
    let word = |i: usize| argv.get(i).and_then(|a| a.to_str());
    let (name, skip) = match (word(1), word(2)) {
        (Some("login"), _) => ("login", 2),
        (Some("logout"), _) => ("logout", 2),
        (Some("auth"), Some("login")) => ("login", 3),
        (Some("auth"), Some("logout")) => ("logout", 3),
        _ => return None,
    };
    let mut args = vec![std::ffi::OsString::from(format!("pi {name}"))];
    args.extend(argv.iter().skip(skip).cloned());
    Some((name, args))
}

fn auth_path() -> PathBuf {
    pi_core::auth::auth_path(&pi_core::config::default_agent_dir())
}

/// `pi login …`.
pub async fn run_login(args: LoginArgs) -> ExitCode {
    let path = auth_path();
    if args.list || args.provider.is_none() {
        let listed = list(&path).await;
        if args.provider.is_none() && !args.list {
            err("Usage: pi login <provider> [--method <method>] [--no-browser]");
            err(&listed);
            return ExitCode::from(1);
        }
        out(&listed);
        return ExitCode::SUCCESS;
    }
    let request = LoginRequest {
        provider: args.provider.unwrap_or_default(),
        method: args.method,
        no_browser: args.no_browser,
        answer: None,
    };
    let (flow, _) = match login::resolve(&request) {
        Ok(found) => found,
        Err(e) => {
            err(&e.to_string());
            return ExitCode::from(1);
        }
    };
    let cancel = CancellationToken::new();
    let interrupted = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupted.cancel();
        }
    });
    let io = Terminal { open_browser: !args.no_browser, stdin: Mutex::new(None) };
    match login::login(&path, &request, &Net::new(), &io, cancel).await {
        Ok(_) => {
            out(&format!("Logged in to {}. Credentials saved to {}", flow.name(), path.display()));
            ExitCode::SUCCESS
        }
        Err(e) => {
            err(&if e == login::LoginError::Cancelled { "Login cancelled.".to_string() } else { e.to_string() });
            ExitCode::from(1)
        }
    }
}

/// `pi logout …`.
pub async fn run_logout(args: LogoutArgs) -> ExitCode {
    let path = auth_path();
    let name = oauth::flow(&args.provider).map_or(args.provider.as_str(), |f| f.name());
    match login::logout(&path, &args.provider).await {
        Ok(Some(kind)) if kind == "oauth" => {
            out(&format!("Logged out of {name}."));
            ExitCode::SUCCESS
        }
        Ok(Some(_)) => {
            out(&format!(
                "Removed stored API key for {name}. Environment variables and models.json config are unchanged."
            ));
            ExitCode::SUCCESS
        }
        Ok(None) if oauth::flow(&args.provider).is_some() || known_provider(&args.provider) => {
            out(&format!(
                "No stored credentials for {name}. Environment variables and models.json config are unchanged."
            ));
            ExitCode::SUCCESS
        }
        Ok(None) => {
            err(&format!("Unknown provider \"{}\".", args.provider));
            let stored = stored(&path).await.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
            err(&format!("Stored credentials: {}", if stored.is_empty() { "none".into() } else { stored.join(", ") }));
            ExitCode::from(1)
        }
        Err(e) => {
            err(&format!("Logout failed: {e}"));
            ExitCode::from(1)
        }
    }
}

fn known_provider(id: &str) -> bool {
    pi_core::config::catalog::catalog_providers().any(|p| p == id)
}

/// Stored credentials: (provider, credential), in file order.
async fn stored(path: &Path) -> Vec<(String, Value)> {
    let file = pi_core::auth::file::AuthFile::new(path.to_path_buf());
    file.read().await.map(|m| m.into_iter().collect()).unwrap_or_default()
}

/// The `--list` table: every login, its sign-in methods, and what is stored.
async fn list(path: &Path) -> String {
    let stored = stored(path).await;
    let mut rows = vec![["provider".to_string(), "login".to_string(), "methods".to_string(), "stored".to_string()]];
    for flow in oauth::flows() {
        let methods = flow.methods().iter().map(|m| m.id).collect::<Vec<_>>().join(", ");
        let status = match stored.iter().find(|(id, _)| id == flow.provider()).map(|(_, c)| c) {
            Some(c) if oauth::is_oauth(c) => match oauth::expires(c) {
                Some(at) if at > oauth::now_ms() as f64 => "logged in".to_string(),
                Some(_) => "logged in (token expired; refreshed on use)".to_string(),
                None => "logged in".to_string(),
            },
            Some(_) => "API key".to_string(),
            None => "-".to_string(),
        };
        rows.push([flow.provider().to_string(), flow.name().to_string(), methods, status]);
    }
    let mut widths = [0usize; 4];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let lines: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect();
    lines.join("\n")
}

/// The terminal side of a login.
struct Terminal {
    open_browser: bool,
    stdin: Mutex<Option<tokio::io::Lines<BufReader<tokio::io::Stdin>>>>,
}

#[async_trait]
impl LoginIo for Terminal {
    fn notify(&self, event: LoginEvent) {
        match event {
            LoginEvent::AuthUrl { url, instructions } => {
                out(&format!("Open this URL to sign in:\n  {url}"));
                if let Some(text) = instructions {
                    out(&text);
                }
                if self.open_browser {
                    login::open_in_browser(&url);
                }
            }
            LoginEvent::DeviceCode { user_code, verification_uri, .. } => {
                out(&format!("Open {verification_uri} and enter code: {user_code}"));
                out("Waiting for authentication...");
            }
            LoginEvent::Progress(text) => out(&text),
        }
    }

    async fn ask(&self, question: Question) -> Option<String> {
        let placeholder = question.placeholder.map(|p| format!(" ({p})")).unwrap_or_default();
        out(&format!("{}{placeholder}:", question.message));
        let mut stdin = self.stdin.lock().await;
        let lines = stdin.get_or_insert_with(|| BufReader::new(tokio::io::stdin()).lines());
        match lines.next_line().await {
            Ok(Some(line)) => Some(line),
            // No more input: a pasted code never comes, the callback may.
            _ if question.kind == QuestionKind::ManualCode => std::future::pending().await,
            _ => None,
        }
    }
}
