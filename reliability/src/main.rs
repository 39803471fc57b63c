//! `pi-reliability`: the fuzz, crash and fault suites of pi-rpc, driving the
//! real `pi` binary.
//!
//! ```text
//! pi-reliability ci                           # what scripts/test.sh runs: all suites, bounded (a seeded sample)
//! pi-reliability fuzz [--dialect native|jsonrpc|lsp|acp|all] [--seed S] [--records N] [--cases N | --lines N | --seconds N]
//! pi-reliability ws [--dialect native|jsonrpc|acp|all] [--seed S] [--records N] [--cases N | --seconds N]
//! pi-reliability crash [--kills N | --seconds N] [--seed S]
//! pi-reliability faults
//! pi-reliability known                         # the framing cases left to issue 12
//! pi-reliability long --seconds N              # a developer's long run of everything
//! ```
//! `--pi PATH` picks the binary (default: `target/debug/pi` beside this one).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod acp_inputs;
mod agent;
mod check;
mod crash;
mod faults;
mod fuzz;
mod inputs;
mod known;
mod rng;
mod ws;

use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand};

use inputs::Dialect;

/// Records fuzzed per dialect in CI (`PI_RELIABILITY_FUZZ_LINES` overrides):
/// about 45 s per dialect on 2 cores with the debug binary.
const CI_FUZZ_LINES: usize = 100_000;
/// ACP records fuzzed in CI (`PI_RELIABILITY_ACP_LINES` overrides): about
/// 40 s on 2 cores with the debug binary (each prompt runs a turn).
const CI_ACP_FUZZ_LINES: usize = 10_000;

/// The WebSocket fuzzer's seeded sample in CI: cases per dialect, messages per case.
const CI_WS_CASES: usize = 2;
const CI_WS_RECORDS: usize = 400;

/// Print one report line (and flush, so CI logs show progress).
pub fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", text.trim_end());
    let _ = out.flush();
}

#[derive(Debug, Parser)]
#[command(name = "pi-reliability", about = "Fuzz, crash and fault suites of pi-rpc")]
struct Cli {
    /// The pi binary to test.
    #[arg(long, global = true)]
    pi: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// All suites with the CI's bounds (100,000 fuzzed records per seed dialect, 10,000 ACP records, 2 WebSocket cases per dialect, 20 kills, the fault matrix).
    Ci,
    /// Fuzz the dialects.
    Fuzz {
        #[arg(long, default_value = "all")]
        dialect: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Records per case (one pi process each).
        #[arg(long, default_value_t = 2000)]
        records: usize,
        /// Cases per dialect.
        #[arg(long)]
        cases: Option<usize>,
        /// Records per dialect in all (sets the number of cases).
        #[arg(long)]
        lines: Option<usize>,
        /// Run until this many seconds have passed.
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Fuzz `pi serve`'s WebSocket endpoint (random disconnects and reconnects with afterSeq).
    Ws {
        #[arg(long, default_value = "all")]
        dialect: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Messages per case (one pi serve each).
        #[arg(long, default_value_t = 400)]
        records: usize,
        /// Cases per dialect.
        #[arg(long)]
        cases: Option<usize>,
        /// Run until this many seconds have passed.
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// kill -9 during tool-calling runs, then reopen and check the session.
    Crash {
        #[arg(long, default_value_t = 20)]
        kills: usize,
        #[arg(long)]
        seconds: Option<u64>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// The provider fault matrix against the fake model server.
    Faults,
    /// The framing cases whose fixes belong to issue 12 (listed ones are reported, not failed).
    Known,
    /// Everything, for a developer: fuzz for most of the time, then 100 kills and the faults.
    Long {
        #[arg(long, default_value_t = 1800)]
        seconds: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn default_pi() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent().map(|d| d.join("pi")).unwrap_or_else(|| PathBuf::from("pi"))
}

fn dialects(name: &str) -> Vec<Dialect> {
    match Dialect::parse(name) {
        Some(d) => vec![d],
        None => Dialect::ALL.to_vec(),
    }
}

async fn fuzz_suite(
    pi: &std::path::Path,
    ds: &[Dialect],
    seed: u64,
    records: usize,
    cases: Option<usize>,
    seconds: Option<u64>,
) -> bool {
    let started = Instant::now();
    let totals = fuzz::run(pi, ds, seed, records, cases, seconds, 4).await;
    let secs = started.elapsed().as_secs_f64();
    say(&format!(
        "fuzz: {} cases, {} records ({:.1} MB) in {:.0} s ({:.0} records/s), {} output records, peak RSS {} MiB, {} failed",
        totals.cases,
        totals.records,
        totals.bytes as f64 / 1e6,
        secs,
        totals.records as f64 / secs.max(0.001),
        totals.output_records,
        totals.peak_rss_kib / 1024,
        totals.failures.len()
    ));
    totals.failures.is_empty()
}

async fn ws_suite(
    pi: &std::path::Path,
    ds: &[Dialect],
    seed: u64,
    records: usize,
    cases: Option<usize>,
    seconds: Option<u64>,
) -> bool {
    let started = Instant::now();
    let totals = ws::run(pi, ds, seed, records, cases, seconds, 2).await;
    say(&format!(
        "ws fuzz: {} cases, {} messages in {:.0} s, {} frames received, {} failed",
        totals.cases,
        totals.records,
        started.elapsed().as_secs_f64(),
        totals.output_records,
        totals.failures.len()
    ));
    totals.failures.is_empty()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cli = Cli::parse();
    let pi = cli.pi.unwrap_or_else(default_pi);
    if !pi.exists() {
        say(&format!("pi-reliability: no pi binary at {} (build it, or pass --pi)", pi.display()));
        std::process::exit(2);
    }
    let ok = match cli.command {
        Command::Ci => {
            let lines =
                std::env::var("PI_RELIABILITY_FUZZ_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(CI_FUZZ_LINES);
            let seed_dialects = [Dialect::Native, Dialect::JsonRpc, Dialect::Lsp];
            let fuzzed = fuzz_suite(&pi, &seed_dialects, 1, 2000, Some(lines.div_ceil(2000)), None).await;
            // ACP cases run turns on many sessions: a smaller sample.
            let acp_lines = std::env::var("PI_RELIABILITY_ACP_LINES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(CI_ACP_FUZZ_LINES);
            let fuzzed_acp = fuzz_suite(&pi, &[Dialect::Acp], 1, 2000, Some(acp_lines.div_ceil(2000)), None).await;
            let fuzzed = fuzzed && fuzzed_acp;
            let sockets = ws_suite(&pi, &Dialect::ALL, 1, CI_WS_RECORDS, Some(CI_WS_CASES), None).await;
            let crashed = crash::run(&pi, 1, Some(20), None).await;
            let faulted = faults::run(&pi).await;
            let framing = known::run(&pi).await;
            fuzzed && sockets && crashed && faulted && framing
        }
        Command::Ws { dialect, seed, records, cases, seconds } => {
            let cases = cases.or(seconds.is_none().then_some(1));
            ws_suite(&pi, &dialects(&dialect), seed, records, cases, seconds).await
        }
        Command::Fuzz { dialect, seed, records, cases, lines, seconds } => {
            let cases = cases.or(lines.map(|l| l.div_ceil(records.max(1)))).or(seconds.is_none().then_some(1));
            fuzz_suite(&pi, &dialects(&dialect), seed, records, cases, seconds).await
        }
        Command::Crash { kills, seconds, seed } => {
            crash::run(&pi, seed, seconds.is_none().then_some(kills), seconds).await
        }
        Command::Faults => faults::run(&pi).await,
        Command::Known => known::run(&pi).await,
        Command::Long { seconds, seed } => {
            let fuzz_secs = seconds.saturating_sub(seconds / 6).max(1);
            let fuzzed = fuzz_suite(&pi, &Dialect::ALL, seed, 2000, None, Some(fuzz_secs / 2)).await;
            let sockets = ws_suite(&pi, &Dialect::ALL, seed, 400, None, Some(fuzz_secs / 2)).await;
            let crashed = crash::run(&pi, seed, Some(100), None).await;
            let faulted = faults::run(&pi).await;
            let framing = known::run(&pi).await;
            fuzzed && sockets && crashed && faulted && framing
        }
    };
    say(if ok { "pi-reliability: all checks passed" } else { "pi-reliability: FAILED" });
    std::process::exit(if ok { 0 } else { 1 });
}
