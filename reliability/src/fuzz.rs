//! The fuzzer: cases of generated records (see `gen`) written to a fresh
//! `pi --mode rpc` on the scripted faux model, its output held to the
//! invariants of `check`, then a final state request that must be answered
//! and a clean exit at end of input. Deterministic per (dialect, seed).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use crate::agent::{Agent, Framing, Sandbox};
use crate::check;
use crate::inputs::{self, Dialect, Expect};
use crate::rng::Rng;

/// The most memory one case may make pi hold: a case is 2,000 records
/// (ACP: up to 2,000 sessions opened), which must not add up.
const PEAK_RSS_LIMIT_KIB: u64 = 512 * 1024;

/// What one case did.
#[derive(Debug, Default, Clone, Copy)]
pub struct CaseStats {
    pub records: usize,
    pub bytes: usize,
    pub output_records: usize,
    /// Peak resident memory of pi, KiB.
    pub peak_rss_kib: u64,
}

/// A failed case, with everything needed to replay it.
#[derive(Debug)]
pub struct CaseFailure {
    pub dialect: Dialect,
    pub seed: u64,
    pub records: usize,
    pub problems: Vec<String>,
    pub saved_input: Option<PathBuf>,
    /// The subcommand that reproduces it (`fuzz`, `ws`).
    pub command: &'static str,
}

impl CaseFailure {
    pub fn report(&self) -> String {
        let mut out = format!("FAIL {} {} seed {}:\n", self.command, self.dialect.name(), self.seed);
        for p in self.problems.iter().take(20) {
            out.push_str(&format!("  - {p}\n"));
        }
        out.push_str(&format!(
            "  reproduce: cargo run -p pi-reliability -- {} --dialect {} --seed {} --records {} --cases 1\n",
            self.command,
            self.dialect.name(),
            self.seed,
            self.records
        ));
        if let Some(path) = &self.saved_input {
            out.push_str(&format!("  saved to {}\n", path.display()));
        }
        out
    }
}

/// The bytes of one case and what they are owed, the faux model's script,
/// and how many of the bytes are the opening.
pub fn build_case(dialect: Dialect, seed: u64, records: usize) -> (Vec<u8>, Vec<Expect>, String, usize) {
    let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(dialect as u64));
    let script = inputs::faux_script(&mut rng);
    let mut bytes = Vec::new();
    let mut expects = Vec::new();
    let mut push = |r: inputs::Record| {
        bytes.extend_from_slice(&r.bytes);
        expects.extend(r.expects);
    };
    let first = inputs::opening(dialect);
    let opening = first.bytes.len();
    push(first);
    for n in 0..records {
        push(inputs::record(&mut rng, dialect, n));
    }
    push(inputs::closing(dialect));
    (bytes, expects, script, opening)
}

/// Run one case against `pi`.
pub async fn run_case(pi: &Path, dialect: Dialect, seed: u64, records: usize) -> Result<CaseStats, CaseFailure> {
    let (input, expects, script, opening) = build_case(dialect, seed, records);
    let mut to_send = input.clone();
    let fail = |problems: Vec<String>| CaseFailure {
        dialect,
        seed,
        records,
        problems,
        saved_input: save_input(dialect, seed, &input),
        command: "fuzz",
    };
    let sb = Sandbox::new().map_err(|e| fail(vec![format!("sandbox: {e}")]))?;
    let settings = serde_json::json!({"retry": {"baseDelayMs": 5, "maxRetries": 2}});
    sb.configure(&settings, None).map_err(|e| fail(vec![format!("sandbox: {e}")]))?;
    let script_path = sb.path("faux.jsonl");
    std::fs::write(&script_path, &script).map_err(|e| fail(vec![format!("sandbox: {e}")]))?;
    let mut args = vec!["--faux-script".to_string(), script_path.display().to_string()];
    // ACP sessions are stored, so that load, resume, fork and delete have files to work on.
    if dialect != Dialect::Acp {
        args.push("--no-session".to_string());
    }
    let framing = if dialect == Dialect::Lsp { Framing::Headers } else { Framing::Lines };
    let mut agent = Agent::spawn(pi, &sb, &args, framing).map_err(|e| fail(vec![format!("cannot start pi: {e}")]))?;
    let mut output = Vec::new();
    if dialect == Dialect::Acp {
        // The opening makes two sessions; the rest of the case names them.
        let cwd = sb.path("cwd").display().to_string();
        let opened = crate::acp_inputs::fill(&input[..opening], &cwd, &[String::new(), String::new()]);
        if !agent.write(&opened).await {
            return Err(fail(vec!["pi stopped reading its input during the opening".into()]));
        }
        let (seen, sessions) = acp_sessions(&mut agent).await;
        output.extend(seen);
        let Some(sessions) = sessions else {
            return Err(fail(vec!["the opening's session/new requests were not answered with sessions".into()]));
        };
        to_send = crate::acp_inputs::fill(&input[opening..], &cwd, &sessions);
    }

    // Write in uneven chunks while the output is read.
    let mut stdin = agent.take_stdin().ok_or_else(|| fail(vec!["no stdin".into()]))?;
    let mut chunk_rng = Rng::new(seed ^ 0xC0FFEE);
    let to_write = to_send;
    let writer = tokio::spawn(async move {
        let mut at = 0;
        while at < to_write.len() {
            let end = (at + 1 + chunk_rng.below(64 * 1024)).min(to_write.len());
            if stdin.write_all(&to_write[at..end]).await.is_err() {
                return false;
            }
            at = end;
        }
        stdin.flush().await.is_ok()
        // stdin dropped here: end of input once everything is written.
    });

    let limit = Duration::from_secs(60) + Duration::from_millis(records as u64 * 20);
    let (rest, answered) = agent.until(limit, |r| contains(r, br#""id":"final""#)).await;
    output.extend(rest);
    let mut problems = Vec::new();
    let peak = agent.peak_rss_kib();
    if let Some(peak) = peak.filter(|kib| *kib > PEAK_RSS_LIMIT_KIB) {
        problems.push(format!("pi held {} MiB at its peak (limit {} MiB)", peak / 1024, PEAK_RSS_LIMIT_KIB / 1024));
    }
    if !answered {
        problems.push(format!("the final state request was not answered within {} s", limit.as_secs()));
    }
    let wrote_all = writer.await.unwrap_or(false);
    let (rest, _) = agent.until(Duration::from_secs(30), |_| false).await;
    output.extend(rest);
    match agent.wait(Duration::from_secs(15)).await {
        Some(status) if status.success() => {}
        Some(status) => problems.push(format!("pi ended with {status} at end of input")),
        None => problems.push("pi did not exit at end of input".into()),
    }
    if !wrote_all && answered {
        problems.push("pi stopped reading its input".into());
    }
    let stderr = agent.stderr();
    for marker in ["panicked at", "overflowed its stack", "fatal runtime error"] {
        if let Some(line) = stderr.lines().find(|l| l.contains(marker)) {
            problems.push(format!("stderr: {line}"));
        }
    }
    match check::answers(dialect, &output) {
        Ok(answers) => problems.extend(check::violations(dialect, &expects, &answers)),
        Err(e) => problems.push(e),
    }
    if problems.is_empty() {
        Ok(CaseStats {
            records: records + 2,
            bytes: input.len(),
            output_records: output.len(),
            peak_rss_kib: peak.unwrap_or(0),
        })
    } else {
        Err(fail(problems))
    }
}

/// Read until both opening `session/new`s are answered: what was read, and
/// the two session ids.
async fn acp_sessions(agent: &mut Agent) -> (Vec<Vec<u8>>, Option<[String; 2]>) {
    let mut found: [Option<String>; 2] = [None, None];
    let (seen, _) = agent
        .until(Duration::from_secs(60), |record| {
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(record) else { return false };
            for (slot, id) in found.iter_mut().zip(crate::acp_inputs::OPENING_IDS) {
                if value.get("id").map(|v| v.to_string()).as_deref() == Some(id) {
                    *slot = value.pointer("/result/sessionId").and_then(|s| s.as_str()).map(str::to_string);
                }
            }
            found.iter().all(Option::is_some)
        })
        .await;
    let [Some(a), Some(b)] = found else { return (seen, None) };
    (seen, Some([a, b]))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn save_input(dialect: Dialect, seed: u64, input: &[u8]) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/reliability");
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("fuzz-{}-{seed}.in", dialect.name()));
    std::fs::write(&path, input).ok()?;
    Some(path)
}

/// Totals of a fuzz run.
#[derive(Debug, Default)]
pub struct Totals {
    pub cases: usize,
    pub records: usize,
    pub bytes: usize,
    pub output_records: usize,
    /// The highest peak memory of pi over the cases, KiB.
    pub peak_rss_kib: u64,
    pub failures: Vec<CaseFailure>,
}

/// Run cases of `dialects` from `first_seed` on: `cases` per dialect, or
/// until `seconds` have passed (round robin over the dialects), `jobs` at a
/// time (a case mostly waits for the faux model's runs to finish).
pub async fn run(
    pi: &Path,
    dialects: &[Dialect],
    first_seed: u64,
    records: usize,
    cases: Option<usize>,
    seconds: Option<u64>,
    jobs: usize,
) -> Totals {
    let plan = Plan { dialects, first_seed, cases, seconds, jobs };
    let pi = pi.to_path_buf();
    run_plan(plan, move |dialect, seed| {
        let pi = pi.clone();
        async move { run_case(&pi, dialect, seed, records).await }
    })
    .await
}

/// Which cases a run plays, and how many at a time.
pub struct Plan<'a> {
    pub dialects: &'a [Dialect],
    pub first_seed: u64,
    pub cases: Option<usize>,
    pub seconds: Option<u64>,
    pub jobs: usize,
}

/// Play `plan` with `case` (one case per dialect and seed), reporting each failure as it comes.
pub async fn run_plan<F, C>(plan: Plan<'_>, case: C) -> Totals
where
    C: Fn(Dialect, u64) -> F,
    F: std::future::Future<Output = Result<CaseStats, CaseFailure>> + Send + 'static,
{
    let Plan { dialects, first_seed, cases, seconds, jobs } = plan;
    let started = Instant::now();
    let mut totals = Totals::default();
    let mut order = (0u64..).flat_map(|n| dialects.iter().map(move |&d| (d, first_seed + n)));
    let limit = cases.map(|c| c * dialects.len());
    let mut running = tokio::task::JoinSet::new();
    let mut launched = 0usize;
    loop {
        let time_left = seconds.is_none_or(|s| started.elapsed().as_secs() < s);
        let more = limit.is_none_or(|l| launched < l) && time_left && (cases.is_some() || seconds.is_some());
        if more
            && running.len() < jobs.max(1)
            && let Some((dialect, seed)) = order.next()
        {
            running.spawn(case(dialect, seed));
            launched += 1;
            continue;
        }
        let Some(done) = running.join_next().await else { return totals };
        totals.cases += 1;
        match done {
            Ok(Ok(stats)) => {
                totals.records += stats.records;
                totals.bytes += stats.bytes;
                totals.output_records += stats.output_records;
                totals.peak_rss_kib = totals.peak_rss_kib.max(stats.peak_rss_kib);
            }
            Ok(Err(failure)) => {
                crate::say(&failure.report());
                totals.failures.push(failure);
            }
            Err(e) => crate::say(&format!("FAIL: a case task failed: {e}")),
        }
    }
}
