//! The `pi` binary: parses pi's command line, sets up logging on stderr,
//! builds the agent core from configuration, and runs one front end on it:
//! the RPC server (native JSONL or JSON-RPC, by flag or by the first record),
//! or pi's one-shot `--print` / `--mode json` runs; `pi serve` runs many
//! sessions over WebSocket.

mod acp_host;
mod args;
mod commands;
mod dialect;
mod login;
mod mcp_config;
mod mcp_list;
mod mcp_login;
mod model_catalogs;
mod packages;
mod print;
mod project_trust;
mod serve;
mod setup;
mod user_lines;

use std::process::ExitCode;

use clap::Parser;

use args::{Args, Mode};
use pi_core::extensions::provider_refreshes::RefreshRule;

fn main() -> ExitCode {
    let argv = args::normalize_args(std::env::args_os());
    if argv.get(1).is_some_and(|a| a == "serve") {
        return main_serve(argv);
    }
    if let Some(code) = packages::command(&argv) {
        return code;
    }
    if let Some(code) = mcp_login::command(&argv, || init_tracing(false)) {
        return code;
    }
    if let Some((command, args)) = login::command(&argv) {
        return main_login(command, args);
    }
    let (argv, extension_flags) = args::split_extension_flags(argv);
    let mut args = Args::parse_from(argv);
    args.extension_flags = extension_flags;
    if args.version {
        // pi prints the bare version number.
        say(env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    init_tracing(args.verbose);
    // When every ready task has run, the output queued so far is one batch: one write.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(pi_transport::writer::runtime_idle)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Boxed: the whole front end's future (every dialect's state) would sit
    // in this frame, below which every start-up call runs (clap's parser,
    // the agent's set-up): each page that depth reaches stays resident.
    let outcome = runtime.block_on(Box::pin(run(args)));
    // A read of stdin may still be parked in a blocking thread: don't wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(e) => {
            // The one place the binary reports a fatal startup error.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{}", startup_error_line(&e));
            }
            ExitCode::from(1)
        }
    }
}

/// How a fatal start-up error is printed: one pi reports as a start-up
/// diagnostic (`--api-key` without a model) in pi's form, `Error: …`;
/// any other with pi-rpc's `pi: ` prefix.
fn startup_error_line(e: &anyhow::Error) -> String {
    match e.downcast_ref::<pi_core::error::CoreError>() {
        Some(core) if core.field.as_deref() == Some("apiKey") => format!("Error: {}", core.message),
        _ => format!("pi: {e:#}"),
    }
}

/// `pi serve …`: a multi-threaded runtime (many sessions share the cores).
fn main_serve(mut argv: Vec<std::ffi::OsString>) -> ExitCode {
    argv.remove(0);
    let args = serve::ServeArgs::parse_from(argv);
    init_tracing(args.agent.verbose);
    // Before any thread: glibc's per-thread caches bounded (an exec of this
    // same program when they are not yet; see pi_serve's trim module).
    pi_serve::bound_thread_caches();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(serve::run(args));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("pi serve: {e:#}");
            }
            ExitCode::from(1)
        }
    }
}

/// `pi login …` / `pi logout …` (also `pi auth login …`).
fn main_login(command: &str, argv: Vec<std::ffi::OsString>) -> ExitCode {
    init_tracing(false);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = if command == "login" {
        runtime.block_on(login::run_login(login::LoginArgs::parse_from(argv)))
    } else {
        runtime.block_on(login::run_logout(login::LogoutArgs::parse_from(argv)))
    };
    // A question may still wait on stdin in a blocking thread: don't wait for it.
    runtime.shutdown_background();
    code
}

/// One line on stdout (the print-and-exit options).
#[allow(clippy::print_stdout)]
fn say(text: &str) {
    println!("{text}");
}

/// What to run, from `--mode`, `--print` and the messages (pi-rpc's default
/// is the RPC server; pi's default, its terminal UI, does not exist here).
fn headless_mode(args: &Args) -> Mode {
    match args.mode {
        Some(mode) => mode,
        None if args.print || !args.messages.is_empty() => Mode::Text,
        None => Mode::Rpc,
    }
}

async fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.check().map_err(anyhow::Error::msg)?;
    args.log_ignored();
    let cwd = std::env::current_dir()?;
    if let Some(file) = &args.export {
        say(&commands::export(file, args.messages.first().map(String::as_str), &cwd)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(search) = &args.list_models {
        say(&commands::list_models(&pi_core::config::default_agent_dir(), search)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mode = headless_mode(&args);
    if mode == Mode::Rpc && args.messages.iter().any(|m| m.starts_with('@')) {
        anyhow::bail!("@file arguments are not supported in RPC mode");
    }
    model_catalogs::set_extension_refresh_rule(match mode {
        Mode::Rpc if args.protocol == args::Protocol::Acp => RefreshRule::PerWindow,
        Mode::Rpc => RefreshRule::OncePerProcess,
        Mode::Text | Mode::Json => RefreshRule::Never,
    });
    let prompts = match mode {
        Mode::Rpc => None,
        Mode::Text | Mode::Json => Some(print::prompts_from(&args.messages, &cwd)?),
    };
    // ACP sessions choose their own cwd; the others start here, with the
    // extensions asked about trust (pi keeps them for the session).
    let mut preloaded = pi_core::extensions::PreloadedExtensions::default();
    if args.protocol != args::Protocol::Acp {
        let (trusted, asked) = project_trust::decide(&args, &cwd).await;
        preloaded = asked;
        if let Some(trusted) = trusted {
            (args.approve, args.no_approve) = (trusted, !trusted);
        }
    }
    if let Some(prompts) = prompts {
        let mut config = setup::build_agent_config(&args)?;
        config.extensions.preloaded = preloaded;
        let (handle, outputs) = pi_core::agent::spawn(config)?;
        let print_mode = if mode == Mode::Json { print::PrintMode::Json } else { print::PrintMode::Text };
        return print::run(print_mode, prompts, handle, outputs).await;
    }
    // pi's RPC mode refreshes the catalogs once its session (extensions included) is made.
    let catalogs = if mode == Mode::Rpc { model_catalogs::background_refreshes(&args) } else { None };
    let agent = if args.protocol == args::Protocol::Acp {
        // Each ACP session starts its own agent (and asks for its refresh).
        if let Some(catalogs) = &catalogs {
            catalogs.start();
        }
        None
    } else {
        // The connection writes a run's events together: they come together.
        let mut config = setup::build_agent_config(&args)?;
        config.extensions.preloaded = preloaded;
        config.catalog_refreshes = catalogs.clone();
        Some(pi_core::agent::spawn_batched(config)?)
    };
    if mode == Mode::Rpc && !offline(&args) && !args.no_extensions {
        tokio::spawn(list_llama_models());
    }
    let end = dialect::serve_stdio(args.protocol, std::sync::Arc::new(args), agent, catalogs).await?;
    Ok(match end {
        dialect::End::Finished => ExitCode::SUCCESS,
        dialect::End::Signalled(sig) => ExitCode::from(128 + sig),
    })
}

/// `--offline` or a true `PI_OFFLINE` (`1`, `true`, `yes`), as pi reads them.
pub(crate) fn offline(args: &Args) -> bool {
    args.offline
        || std::env::var("PI_OFFLINE").is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// pi's RPC mode lists the configured llama.cpp server's models in the
/// background at start (so does `pi serve`); sessions see them once
/// `models-store.json` has them. A failure leaves the kept list as it was
/// (pi says nothing either).
pub(crate) async fn list_llama_models() {
    let agent_dir = pi_core::config::default_agent_dir();
    let settings = pi_core::config::Settings::load(&agent_dir, &std::env::current_dir().unwrap_or_default());
    if settings.is_ok_and(|s| !s.builtin_extension_enabled("llama.cpp")) {
        return;
    }
    let listed = match pi_core::provider::http::HttpClient::new() {
        Ok(http) => pi_core::config::llama::refresh(&agent_dir, &http).await,
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = listed {
        tracing::debug!("llama.cpp: {e}");
    }
}

/// Logs on stderr, filtered by `RUST_LOG` (`level` and `target=level` lists)
/// or by `--verbose`. A `Targets` filter is parsed by hand; tracing's
/// `EnvFilter` compiles regular expressions at every start (the regex
/// engine's code resident before the first command).
fn init_tracing(verbose: bool) {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let default = if verbose { "debug" } else { "info,rmcp=warn" };
    let from_env = std::env::var("RUST_LOG").ok().filter(|spec| !spec.trim().is_empty());
    let from_env = from_env.and_then(|spec| spec.parse::<Targets>().ok());
    let filter = from_env.unwrap_or_else(|| default.parse().unwrap_or_default());
    let output = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false).with_target(false);
    let _ = tracing_subscriber::registry().with(output).with(filter).try_init();
}
