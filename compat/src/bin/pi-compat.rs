//! `pi-compat`: the conformance kit's command line.
//!
//! ```text
//! pi-compat run --agent '<command line>' --dialect jsonl|jsonrpc|acp [--only NAME…] [--record DIR]
//!               [--profile strict|reference] [--expect-fail FILE] [--jobs N] [--scenarios DIR]
//!               [--schemas strict|open|off] [--junit FILE]
//! pi-compat list --dialect jsonl|jsonrpc|acp
//! pi-compat coverage --dialect jsonl|jsonrpc|acp
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use pi_compat::kit::{self, Dialect, Options, Profile};
use pi_compat::schemas::Strictness;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DialectArg {
    Jsonl,
    Jsonrpc,
    Acp,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ProfileArg {
    /// Hold the agent to the seeds and to pi-rpc's schemas.
    Strict,
    /// The reference pi 1.6.0: global tolerances of DEVIATIONS.md, deviation-tagged scenarios expected to fail.
    Reference,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SchemaArg {
    Strict,
    Open,
    Off,
}

#[derive(Debug, Parser)]
#[command(name = "pi-compat", about = "Conformance kit for the pi RPC dialects (native JSONL, JSON-RPC 2.0, ACP)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Play the scenarios against an agent and report.
    Run {
        /// The agent's command line (run with `sh -c`); the kit appends `--session-dir DIR` or `--no-session`.
        #[arg(long)]
        agent: String,
        #[arg(long, value_enum)]
        dialect: DialectArg,
        /// Run only these scenarios (names, or prefixes ending in `*`).
        #[arg(long, num_args = 1..)]
        only: Vec<String>,
        /// Write each scenario's observed transcript (normalised) to DIR/<name>.log.
        #[arg(long)]
        record: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ProfileArg::Strict)]
        profile: ProfileArg,
        /// A file of scenario names expected to fail (`name  # reason` per line).
        #[arg(long)]
        expect_fail: Option<PathBuf>,
        /// Scenarios run at a time.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Directory of scenario files (default: the kit's own for the dialect).
        #[arg(long)]
        scenarios: Option<PathBuf>,
        /// Validate output lines and session files against the schemas: `strict` (default
        /// with the strict profile), `open` (unknown members allowed) or `off` (default with
        /// the reference profile, whose 1.6 additions are listed in DEVIATIONS.md).
        #[arg(long, value_enum)]
        schemas: Option<SchemaArg>,
        /// pi's `examples/` directory, for scenarios that copy pi's example
        /// extensions (`{"example": "extensions/x.ts"}` files). Default: the
        /// reference package installed into `target/tools/reference`; without
        /// either, those scenarios are reported SKIPPED.
        #[arg(long)]
        examples: Option<PathBuf>,
        /// Also write the results as JUnit XML to FILE (one testcase per scenario).
        #[arg(long)]
        junit: Option<PathBuf>,
    },
    /// List the scenarios of a dialect with their descriptions.
    List {
        #[arg(long, value_enum)]
        dialect: DialectArg,
        #[arg(long)]
        scenarios: Option<PathBuf>,
    },
    /// Show which seed items (commands, methods, events, notifications, codes) the scenarios cover.
    Coverage {
        #[arg(long, value_enum)]
        dialect: DialectArg,
        #[arg(long)]
        scenarios: Option<PathBuf>,
    },
}

fn scenario_dir(dialect: DialectArg, given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(|| {
        let name = match dialect {
            DialectArg::Jsonl => "jsonl",
            DialectArg::Jsonrpc => "jsonrpc",
            DialectArg::Acp => "acp",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
    })
}

/// pi's examples in the reference package `compat/run-reference.sh` installs.
fn default_examples() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/tools/reference/node_modules/@earendil-works/pi-coding-agent/examples");
    dir.is_dir().then_some(dir)
}

fn load(dialect: DialectArg, dir: Option<PathBuf>) -> Vec<kit::Scenario> {
    match kit::load_dir(&scenario_dir(dialect, dir)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pi-compat: {e}");
            std::process::exit(2);
        }
    }
}

fn selected(name: &str, only: &[String]) -> bool {
    only.is_empty()
        || only.iter().any(|o| match o.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == o,
        })
}

fn read_expected(path: Option<PathBuf>) -> HashMap<String, String> {
    let Some(path) = path else { return HashMap::new() };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pi-compat: cannot read {}: {e}", path.display());
            std::process::exit(2);
        }
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('#') {
            Some((name, reason)) => (name.trim().to_string(), reason.trim().to_string()),
            None => (l.to_string(), "listed as an expected failure".to_string()),
        })
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            agent,
            dialect,
            only,
            record,
            profile,
            expect_fail,
            jobs,
            scenarios,
            schemas,
            examples,
            junit,
        } => {
            let all = load(dialect, scenarios);
            let chosen: Vec<_> = all.into_iter().filter(|s| selected(&s.name, &only)).collect();
            if chosen.is_empty() {
                eprintln!("pi-compat: no scenario selected");
                std::process::exit(2);
            }
            let opts = Options {
                agent,
                dialect: match dialect {
                    DialectArg::Jsonl => Dialect::Jsonl,
                    DialectArg::Jsonrpc => Dialect::Jsonrpc,
                    DialectArg::Acp => Dialect::Acp,
                },
                profile: match profile {
                    ProfileArg::Strict => Profile::Strict,
                    ProfileArg::Reference => Profile::Reference,
                },
                jobs,
                record,
                expected_failures: read_expected(expect_fail),
                schemas: match (schemas, profile) {
                    (Some(SchemaArg::Strict), _) | (None, ProfileArg::Strict) => Some(Strictness::Strict),
                    (Some(SchemaArg::Open), _) => Some(Strictness::Open),
                    (Some(SchemaArg::Off), _) | (None, ProfileArg::Reference) => None,
                },
                examples: examples.or_else(default_examples),
                junit,
            };
            let failed = kit::run_all(chosen, opts, &mut std::io::stdout()).await;
            std::process::exit(if failed > 0 { 1 } else { 0 });
        }
        Command::List { dialect, scenarios } => {
            for s in load(dialect, scenarios) {
                let dev = s.deviation.as_deref().map(|d| format!("  [deviation: {d}]")).unwrap_or_default();
                println!("{:<40} {}{dev}", s.name, s.description);
            }
        }
        Command::Coverage { dialect: DialectArg::Acp, .. } => {
            eprintln!("pi-compat: coverage lists the seeds' and the protocol table's commands; ACP has neither");
            std::process::exit(2);
        }
        Command::Coverage { dialect, scenarios } => {
            let all = load(dialect, scenarios);
            let report = kit::coverage::coverage(&all, matches!(dialect, DialectArg::Jsonrpc));
            let missing = report.iter().filter(|(_, by)| by.is_empty()).count();
            for (item, by) in &report {
                let who = if by.is_empty() { "-- not covered --".to_string() } else { by.join(", ") };
                println!("{item:<45} {who}");
            }
            println!("{} of {} seed items covered", report.len() - missing, report.len());
            let table = kit::coverage::table_items(matches!(dialect, DialectArg::Jsonrpc));
            let report = kit::coverage::coverage_of(&all, &table);
            let missing: Vec<&str> = report.iter().filter(|(_, by)| by.is_empty()).map(|(i, _)| i.as_str()).collect();
            println!("{} of {} pi-rpc table commands sent", report.len() - missing.len(), report.len());
            if !missing.is_empty() {
                println!("not sent: {}", missing.join(", "));
            }
        }
    }
}
