//! Running scenarios: one sandbox and one fake model server per scenario,
//! several scenarios at a time, results printed in scenario order.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use super::driver::{self, Observed};
use super::expect::{self, Context};
use super::normalize::Normalizer;
use super::sandbox::Sandbox;
use super::scenario::Scenario;
use super::tolerance;
use crate::fake_server::FakeServer;
use crate::schemas::{Schemas, Strictness};

/// Which dialect the agent speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Jsonl,
    Jsonrpc,
    /// The Agent Client Protocol (JSON-RPC 2.0 with ACP's methods).
    Acp,
}

/// Which implementation is under test, for its documented global deviations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Hold the agent to the seeds (and pi-rpc's schemas).
    Strict,
    /// The reference pi 1.6.0: schemas read open, and scenarios tagged
    /// with a `deviation` expected to fail (`DEVIATIONS.md`).
    Reference,
}

/// How to run.
pub struct Options {
    pub agent: String,
    pub dialect: Dialect,
    pub profile: Profile,
    pub jobs: usize,
    pub record: Option<PathBuf>,
    /// Scenario name → why it is expected to fail (known gaps of the agent).
    pub expected_failures: HashMap<String, String>,
    /// Validate every line (and session file line) against the schemas, read
    /// this strictly; `None`: no validation.
    pub schemas: Option<Strictness>,
    /// pi's `examples/` directory (files of the form `{"example": "extensions/x.ts"}` are copied from it).
    pub examples: Option<PathBuf>,
    /// Also write a JUnit XML report here.
    pub junit: Option<PathBuf>,
}

/// The outcome of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(String),
    /// Failed as expected (deviation or known gap): (why expected, what failed).
    ExpectedFail(String, String),
    /// Passed although a failure was expected.
    UnexpectedPass(String),
    /// Not run: what it needs is missing here (the reason says what).
    Skipped(String),
}

impl Outcome {
    /// One report line.
    pub fn line(&self, name: &str) -> String {
        match self {
            Outcome::Pass => format!("PASS {name}"),
            Outcome::Fail(why) => format!("FAIL {name}: {why}"),
            Outcome::ExpectedFail(reason, why) => format!("XFAIL {name}: {reason} [{why}]"),
            Outcome::UnexpectedPass(reason) => format!("XPASS {name}: expected to fail ({reason}) but passed"),
            Outcome::Skipped(reason) => format!("SKIPPED {name}: {reason}"),
        }
    }

    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Fail(_))
    }
}

fn schema_errors(
    observed: &Observed,
    values: &[Value],
    sessions: &[(PathBuf, Vec<Value>)],
    dialect: Dialect,
    schemas: &Schemas,
) -> Option<String> {
    for (i, line) in observed.lines.iter().enumerate() {
        let header = line.raw.starts_with("Content-Length") || line.raw == "\r" || line.raw.is_empty();
        let framing_line = dialect == Dialect::Jsonrpc && header;
        if !line.is_json && !framing_line {
            return Some(format!(
                "output line {} is not JSON: {}",
                i + 1,
                line.raw.chars().take(120).collect::<String>()
            ));
        }
    }
    let method_of = |id: &Value| observed.methods.iter().find(|(k, _)| k == id).map(|(_, m)| m.clone());
    for (i, value) in values.iter().enumerate() {
        let checked = match dialect {
            Dialect::Jsonl => schemas.check_native_output(value),
            Dialect::Jsonrpc => schemas.check_jsonrpc_output(value, &method_of),
            Dialect::Acp => schemas.check_acp_output(value, &method_of),
        };
        if let Err(e) = checked {
            return Some(format!("output line {} breaks the schema: {e}", i + 1));
        }
    }
    for (path, lines) in sessions {
        for (i, v) in lines.iter().enumerate() {
            if let Err(e) = schemas.check_session_line(v) {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                return Some(format!("session file {name} line {} breaks the schema: {e}", i + 1));
            }
        }
    }
    None
}

/// One clear line for a failed scenario whose agent could not start, exited
/// early or crashed: the exit and the tail of its stderr, rather than the
/// timeouts and broken pipes that followed.
fn explain_exit(scenario: &Scenario, observed: &Observed) -> Option<String> {
    let signalled = scenario.steps.iter().any(|s| s.signal.is_some());
    let silent = observed.lines.is_empty();
    let (when, code) = match observed.early_exit {
        Some((_, Some(code @ (126 | 127)))) if silent => ("at start: it could not be run".to_string(), Some(code)),
        Some((0, code)) => ("before the first step".to_string(), code),
        Some((step, code)) if step > scenario.steps.len() => ("before the kit closed its stdin".to_string(), code),
        Some((step, code)) => (format!("during step {step}"), code),
        None => match observed.exit_code {
            Some(code) if code > 128 && !signalled && !observed.killed => {
                ("after its stdin closed".to_string(), Some(code))
            }
            _ => return None,
        },
    };
    let tail = stderr_tail(&observed.stderr);
    let stderr = if tail.is_empty() { "nothing on stderr".to_string() } else { format!("stderr: {tail}") };
    Some(format!("the agent exited ({}) {when}; {stderr}", driver::describe_exit(code)))
}

/// The last lines of stderr on one line (at most 3 lines, 400 chars).
fn stderr_tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    let count = tail.chars().count();
    if count <= 400 { tail } else { format!("…{}", tail.chars().skip(count - 400).collect::<String>()) }
}

/// The session files of the run, parsed (lines that are not JSON are kept as strings).
fn read_sessions(sb: &Sandbox) -> Vec<(PathBuf, Vec<Value>)> {
    sb.session_files()
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_string())))
                .collect();
            (path, lines)
        })
        .collect()
}

fn record(
    dir: &std::path::Path,
    scenario: &Scenario,
    observed: &Observed,
    lines: &[Value],
    outcome: &Outcome,
    extra: &str,
) {
    let mut text = String::new();
    text.push_str(&format!("# {}\n# {}\n# {}\n\n", scenario.name, scenario.description, outcome.line(&scenario.name)));
    for s in &observed.sent {
        text.push_str(&format!("> {}\n", s.trim_end_matches('\n').chars().take(2000).collect::<String>()));
    }
    text.push('\n');
    for l in lines {
        text.push_str(&format!("< {l}\n"));
    }
    text.push_str(&format!(
        "\n# exit code: {:?}{}\n",
        observed.exit_code,
        if observed.killed { " (killed)" } else { "" }
    ));
    if !observed.stderr.is_empty() {
        text.push_str(&format!("# stderr:\n{}\n", observed.stderr));
    }
    text.push_str(extra);
    let _ = std::fs::create_dir_all(dir);
    let _ = std::fs::write(dir.join(format!("{}.log", scenario.name)), text);
}

/// Why `scenario` cannot run with these options, if it cannot: it copies
/// pi's example extensions and no `examples/` directory was given (nor found).
pub fn skip_reason(scenario: &Scenario, opts: &Options) -> Option<String> {
    if opts.examples.is_some() {
        return None;
    }
    let examples: Vec<&str> = scenario.setup.files.values().filter_map(|v| v.get("example")?.as_str()).collect();
    let first = examples.first()?;
    Some(format!(
        "needs pi's example {first}{}: pass --examples DIR (the examples/ directory of @earendil-works/pi-coding-agent)",
        if examples.len() > 1 { format!(" and {} more", examples.len() - 1) } else { String::new() }
    ))
}

/// Run one scenario.
pub async fn run_one(scenario: &Scenario, opts: &Options, schemas: &Schemas) -> Outcome {
    if let Some(reason) = skip_reason(scenario, opts) {
        return Outcome::Skipped(reason);
    }
    let outcome = run_inner(scenario, opts, schemas).await.unwrap_or_else(Outcome::Fail);
    let expected = match opts.profile {
        Profile::Reference => scenario.deviation.clone(),
        Profile::Strict => None,
    }
    .or_else(|| opts.expected_failures.get(&scenario.name).cloned());
    match (outcome, expected) {
        (Outcome::Fail(why), Some(reason)) => Outcome::ExpectedFail(reason, why),
        (Outcome::Pass, Some(reason)) => Outcome::UnexpectedPass(reason),
        (o, _) => o,
    }
}

async fn run_inner(scenario: &Scenario, opts: &Options, schemas: &Schemas) -> Result<Outcome, String> {
    let server = FakeServer::start().await.map_err(|e| format!("cannot start the fake model server: {e}"))?;
    server.load_script(scenario.script()?);
    let sb = Sandbox::create(&scenario.setup, &server.url(), opts.examples.as_deref())?;
    let mut live = Normalizer::new(sb.normalizations());
    let limit = Duration::from_millis(scenario.timeout_ms.unwrap_or(30_000));
    let observed = tokio::time::timeout(limit, driver::play(scenario, &opts.agent, &sb, &server, &mut live))
        .await
        .map_err(|_| format!("the scenario took longer than {} ms", limit.as_millis()))??;
    // What the rules see: raw lines and session files, with the profile's
    // tolerances, normalised session files first (so that `<e1>` is the
    // first entry of the first file and `<uuid1>` its session id).
    let raw: Vec<Value> = observed.lines.iter().filter(|l| l.is_json).map(|l| l.value.clone()).collect();
    let (raw, raw_sessions) = if scenario.tags.iter().any(|t| t == "system_messages") {
        (raw, read_sessions(&sb))
    } else {
        tolerance::without_system_messages(raw, read_sessions(&sb))
    };
    let mut norm = Normalizer::new(sb.normalizations());
    let sessions: Vec<(PathBuf, Vec<Value>)> =
        raw_sessions.iter().map(|(p, l)| (p.clone(), l.iter().map(|v| norm.value(v)).collect())).collect();
    let lines: Vec<Value> = raw.iter().map(|v| norm.value(v)).collect();
    let requests = expect::request_values(&server.requests(), &mut norm);
    let stderr = norm.text(&observed.stderr);
    let ctx = Context {
        lines: &lines,
        exit_code: observed.exit_code,
        sandbox: &sb,
        requests: &requests,
        sessions: &sessions,
        stderr: &stderr,
    };
    let mut failure = observed.step_error.clone();
    if failure.is_none() && opts.schemas.is_some() {
        failure = schema_errors(&observed, &raw, &raw_sessions, opts.dialect, schemas);
    }
    if failure.is_none() {
        for (i, rule) in scenario.expect.iter().enumerate() {
            if let Err(e) = expect::check_rule(rule, &ctx) {
                let note = rule.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                failure = Some(format!("rule {}{note}: {e}", i + 1));
                break;
            }
        }
    }
    let outcome = match failure {
        Some(f) => Outcome::Fail(explain_exit(scenario, &observed).unwrap_or(f)),
        None => Outcome::Pass,
    };
    if let Some(dir) = &opts.record {
        let mut extra = String::new();
        for (path, values) in &sessions {
            extra.push_str(&format!("\n# session file {}\n", norm.text(&path.to_string_lossy())));
            for v in values {
                extra.push_str(&format!("{v}\n"));
            }
        }
        extra.push_str(&format!("\n# model requests: {}\n", requests.len()));
        for r in &requests {
            extra.push_str(&format!("{} {}\n", r["method"].as_str().unwrap_or(""), r["path"].as_str().unwrap_or("")));
        }
        record(dir, scenario, &observed, &lines, &outcome, &extra);
    }
    server.shutdown().await;
    Ok(outcome)
}

/// Run every scenario; print one line each (in order) and the summary.
/// Returns the number of failures.
pub async fn run_all(scenarios: Vec<Scenario>, opts: Options, out: &mut dyn Write) -> usize {
    let schemas = match Schemas::embedded(opts.schemas.unwrap_or(Strictness::Strict)) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            let _ = writeln!(out, "FAIL schemas: {e}");
            return 1;
        }
    };
    let opts = Arc::new(opts);
    let permits = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let mut handles = Vec::new();
    for scenario in scenarios {
        let (opts, schemas, permits) = (opts.clone(), schemas.clone(), permits.clone());
        handles.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await;
            let started = std::time::Instant::now();
            let outcome = run_one(&scenario, &opts, &schemas).await;
            (scenario.name, outcome, started.elapsed())
        }));
    }
    let mut cases = Vec::new();
    let (mut passed, mut failed, mut xfail, mut xpass, mut skipped) = (0, 0, 0, 0, 0);
    for h in handles {
        let (name, outcome, time) = match h.await {
            Ok(r) => r,
            Err(e) => ("?".to_string(), Outcome::Fail(format!("the runner crashed: {e}")), Duration::ZERO),
        };
        match &outcome {
            Outcome::Pass => passed += 1,
            Outcome::Fail(_) => failed += 1,
            Outcome::ExpectedFail(..) => xfail += 1,
            Outcome::UnexpectedPass(_) => {
                passed += 1;
                xpass += 1;
            }
            Outcome::Skipped(_) => skipped += 1,
        }
        let _ = writeln!(out, "{}", outcome.line(&name));
        let _ = out.flush();
        cases.push(super::junit::CaseResult { name, outcome, time });
    }
    if let Some(path) = &opts.junit {
        let suite = match opts.dialect {
            Dialect::Jsonl => "pi-compat.jsonl",
            Dialect::Jsonrpc => "pi-compat.jsonrpc",
            Dialect::Acp => "pi-compat.acp",
        };
        if let Err(e) = std::fs::write(path, super::junit::report(suite, &cases)) {
            let _ = writeln!(out, "FAIL junit: cannot write {}: {e}", path.display());
            failed += 1;
        }
    }
    let mut summary = format!("{passed} passed, {failed} failed, {skipped} skipped");
    if xfail > 0 || xpass > 0 {
        summary.push_str(&format!(" ({xfail} expected failures, {xpass} unexpected passes)"));
    }
    let _ = writeln!(out, "{summary}");
    failed
}
