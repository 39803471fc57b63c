//! The `pi` binary: parses pi's command line, sets up logging on stderr,
//! builds the agent core from configuration, picks the front end (native JSONL
//! or JSON-RPC, by flag or by the first record) and serves it on stdin/stdout.

mod args;
mod dialect;
mod setup;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = args::Args::parse_from(args::normalize_args(std::env::args_os()));
    init_tracing(args.verbose);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(run(args));
    // A read of stdin may still be parked in a blocking thread: don't wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(e) => {
            // The one place the binary reports a fatal startup error.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("pi: {e:#}");
            }
            ExitCode::from(1)
        }
    }
}

async fn run(args: args::Args) -> anyhow::Result<ExitCode> {
    if let Some(mode) = args.mode.as_deref()
        && mode != "rpc"
    {
        anyhow::bail!("unsupported --mode {mode}: pi-rpc only serves --mode rpc");
    }
    let config = setup::build_agent_config(&args)?;
    let (handle, outputs) = pi_core::agent::spawn(config).map_err(|e| anyhow::anyhow!("{e}"))?;
    let end = dialect::serve_stdio(args.protocol, handle, outputs).await?;
    Ok(match end {
        dialect::End::Finished => ExitCode::SUCCESS,
        dialect::End::Signalled(sig) => ExitCode::from(128 + sig),
    })
}

fn init_tracing(verbose: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if verbose { "debug" } else { "info,rmcp=warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}
