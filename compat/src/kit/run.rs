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
use crate::fake_server::FakeServer;
use crate::schemas::{Schemas, Strictness};

/// Which dialect the agent speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Jsonl,
    Jsonrpc,
}

/// Which implementation is under test, for its documented global deviations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Hold the agent to the seeds (and pi-rpc's schemas).
    Strict,
    /// The reference pi 1.6.0: apply the global tolerances listed in
    /// `DEVIATIONS.md` (system messages dropped, `message_update.usage`
    /// dropped, schemas read open), and expect scenarios tagged with a
    /// `deviation` to fail.
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
}

impl Outcome {
    /// One report line.
    pub fn line(&self, name: &str) -> String {
        match self {
            Outcome::Pass => format!("PASS {name}"),
            Outcome::Fail(why) => format!("FAIL {name}: {why}"),
            Outcome::ExpectedFail(reason, why) => format!("XFAIL {name}: {reason} [{why}]"),
            Outcome::UnexpectedPass(reason) => format!("XPASS {name}: expected to fail ({reason}) but passed"),
        }
    }

    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Fail(_))
    }
}

/// Global tolerances of the reference profile, applied to normalised lines.
fn reference_filter(lines: Vec<Value>) -> Vec<Value> {
    fn is_system(m: &Value) -> bool {
        m.get("role").and_then(Value::as_str) == Some("system")
            || m.pointer("/message/role").and_then(Value::as_str) == Some("system")
    }
    fn strip(v: &mut Value) {
        match v {
            Value::Object(obj) => {
                for key in ["messages", "entries"] {
                    if let Some(Value::Array(items)) = obj.get_mut(key) {
                        items.retain(|m| !is_system(m));
                    }
                }
                obj.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    lines
        .into_iter()
        .filter(|l| !is_system(l))
        .map(|mut l| {
            if l.get("type").and_then(Value::as_str) == Some("message_update")
                && let Some(obj) = l.as_object_mut()
            {
                obj.remove("usage");
            }
            strip(&mut l);
            l
        })
        .collect()
}

fn schema_errors(
    observed: &Observed,
    dialect: Dialect,
    schemas: &Schemas,
    filter: &(dyn Fn(Vec<Value>) -> Vec<Value> + Sync),
) -> Option<String> {
    for (i, line) in observed.lines.iter().enumerate() {
        if !line.is_json {
            if dialect == Dialect::Jsonl || !line.raw.starts_with("Content-Length") {
                return Some(format!(
                    "output line {} is not JSON: {}",
                    i + 1,
                    line.raw.chars().take(120).collect::<String>()
                ));
            }
            continue;
        }
        let Some(value) = filter(vec![line.value.clone()]).pop() else { continue };
        let checked = match dialect {
            Dialect::Jsonl => schemas.check_native_output(&value),
            Dialect::Jsonrpc => {
                let method_of = |id: &Value| observed.methods.iter().find(|(k, _)| k == id).map(|(_, m)| m.clone());
                schemas.check_jsonrpc_output(&value, &method_of)
            }
        };
        if let Err(e) = checked {
            return Some(format!("output line {} breaks the schema: {e}", i + 1));
        }
    }
    None
}

fn session_schema_errors(
    sb: &Sandbox,
    schemas: &Schemas,
    filter: &(dyn Fn(Vec<Value>) -> Vec<Value> + Sync),
) -> Option<String> {
    for path in sb.session_files() {
        let text = std::fs::read_to_string(&path).ok()?;
        for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let checked = match serde_json::from_str::<Value>(l) {
                Err(e) => Err(format!("not JSON: {e}")),
                Ok(v) => match filter(vec![v]).pop() {
                    Some(v) => schemas.check_session_line(&v),
                    None => Ok(()),
                },
            };
            if let Err(e) = checked {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                return Some(format!("session file {name} line {} breaks the schema: {e}", i + 1));
            }
        }
    }
    None
}

fn record(dir: &std::path::Path, scenario: &Scenario, observed: &Observed, outcome: &Outcome, extra: &str) {
    let mut text = String::new();
    text.push_str(&format!("# {}\n# {}\n# {}\n\n", scenario.name, scenario.description, outcome.line(&scenario.name)));
    for s in &observed.sent {
        text.push_str(&format!("> {}\n", s.trim_end_matches('\n').chars().take(2000).collect::<String>()));
    }
    text.push('\n');
    for l in &observed.lines {
        text.push_str(&format!("< {}\n", l.normalized));
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

/// Run one scenario.
pub async fn run_one(scenario: &Scenario, opts: &Options, schemas: &Schemas) -> Outcome {
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
    let sb = Sandbox::create(&scenario.setup, &server.url())?;
    let mut norm = Normalizer::new(sb.normalizations());
    let limit = Duration::from_millis(scenario.timeout_ms.unwrap_or(30_000));
    let observed = tokio::time::timeout(limit, driver::play(scenario, &opts.agent, &sb, &server, &mut norm))
        .await
        .map_err(|_| format!("the scenario took longer than {} ms", limit.as_millis()))??;
    let filter: &(dyn Fn(Vec<Value>) -> Vec<Value> + Sync) = match opts.profile {
        Profile::Reference => &reference_filter,
        Profile::Strict => &|v| v,
    };
    let lines: Vec<Value> = filter(observed.lines.iter().filter(|l| l.is_json).map(|l| l.normalized.clone()).collect());
    let requests = expect::request_values(&server.requests(), &mut norm);
    let ctx = Context {
        lines: &lines,
        exit_code: observed.exit_code,
        sandbox: &sb,
        requests: &requests,
        session_filter: filter,
    };
    let mut failure = observed.step_error.clone();
    if failure.is_none() && opts.schemas.is_some() {
        failure = schema_errors(&observed, opts.dialect, schemas, filter)
            .or_else(|| session_schema_errors(&sb, schemas, filter));
    }
    if failure.is_none() {
        for (i, rule) in scenario.expect.iter().enumerate() {
            if let Err(e) = expect::check_rule(rule, &ctx, &mut norm) {
                let note = rule.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                failure = Some(format!("rule {}{note}: {e}", i + 1));
                break;
            }
        }
    }
    let outcome = match failure {
        Some(f) => Outcome::Fail(f),
        None => Outcome::Pass,
    };
    if let Some(dir) = &opts.record {
        let mut extra = String::new();
        for path in sb.session_files() {
            extra.push_str(&format!("\n# session file {}\n", norm.text(&path.to_string_lossy())));
            if let Ok(text) = std::fs::read_to_string(&path) {
                for l in text.lines() {
                    let v = serde_json::from_str::<Value>(l).map(|v| norm.value(&v).to_string());
                    extra.push_str(&format!("{}\n", v.unwrap_or_else(|_| l.to_string())));
                }
            }
        }
        extra.push_str(&format!("\n# model requests: {}\n", requests.len()));
        for r in &requests {
            extra.push_str(&format!("{} {}\n", r["method"].as_str().unwrap_or(""), r["path"].as_str().unwrap_or("")));
        }
        record(dir, scenario, &observed, &outcome, &extra);
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
            let outcome = run_one(&scenario, &opts, &schemas).await;
            (scenario.name, outcome)
        }));
    }
    let (mut passed, mut failed, mut xfail, mut xpass) = (0, 0, 0, 0);
    for h in handles {
        let (name, outcome) = match h.await {
            Ok(r) => r,
            Err(e) => ("?".to_string(), Outcome::Fail(format!("the runner crashed: {e}"))),
        };
        match &outcome {
            Outcome::Pass => passed += 1,
            Outcome::Fail(_) => failed += 1,
            Outcome::ExpectedFail(..) => xfail += 1,
            Outcome::UnexpectedPass(_) => {
                passed += 1;
                xpass += 1;
            }
        }
        let _ = writeln!(out, "{}", outcome.line(&name));
        let _ = out.flush();
    }
    let mut summary = format!("{passed} passed, {failed} failed");
    if xfail > 0 || xpass > 0 {
        summary.push_str(&format!(" ({xfail} expected failures, {xpass} unexpected passes)"));
    }
    let _ = writeln!(out, "{summary}");
    failed
}
