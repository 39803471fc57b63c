//! pi's shipped example extensions, each loaded alone with `-e`, run by
//! pi-rpc and by pi 1.6.0 side by side against the fake model server, and
//! compared on four properties: the commands the example registers, its
//! `extension_error`s, the tools the model is offered on the first request,
//! and whether a prompt completes.
//!
//! The examples are read from the installed reference package, so a new
//! example is covered without editing this file. A difference listed in
//! `compat/DEVIATIONS.md` (section "Example extensions", one row per example
//! and property) is accepted; any other fails the test.
//!
//! By default a fixed, seeded sample runs (CI's budget); `PI_EXAMPLES=all`
//! runs every example (`scripts/examples-side-by-side.sh`), and
//! `PI_EXAMPLES=a.ts,plan-mode` names some. `PI_EXAMPLES_SAMPLE=N` sets the
//! sample's size.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::Sandbox;

/// Examples in the default (CI) sample.
const SAMPLE_SIZE: usize = 8;
/// The sample's seed: fixed, so CI runs the same examples every time.
const SAMPLE_SEED: u64 = 25;
/// Longest wait for start-up (`get_commands` answered) and for a prompt to settle.
const STARTUP: Duration = Duration::from_secs(60);
const SETTLE: Duration = Duration::from_secs(30);

/// What one program did with one example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Names of the example's commands (pi's built-in ones left out).
    pub commands: BTreeSet<String>,
    /// `event: error` of each `extension_error` (and of a load failure pi exits on), paths replaced.
    pub errors: BTreeSet<String>,
    /// The tools of the first model request (`None`: no request was made).
    pub tools: Option<BTreeSet<String>>,
    /// The prompt was accepted and its run settled (or an `input` handler handled it).
    pub completed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    PiRpc,
    Reference,
}

/// The examples: `*.ts` files and directories of `examples/extensions`, sorted.
fn examples(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the examples directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "ts"))
        .collect();
    out.sort();
    out
}

fn name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `count` examples picked with a fixed linear congruential sequence.
fn sample(all: &[PathBuf], count: usize, seed: u64) -> Vec<PathBuf> {
    let mut pool: Vec<PathBuf> = all.to_vec();
    let mut state = seed;
    let mut picked = Vec::new();
    while picked.len() < count && !pool.is_empty() {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let index = ((state >> 33) as usize) % pool.len();
        picked.push(pool.remove(index));
    }
    picked.sort();
    picked
}

/// Which examples to run (see the module documentation).
fn selected(all: &[PathBuf]) -> Vec<PathBuf> {
    match std::env::var("PI_EXAMPLES").ok().filter(|v| !v.is_empty()).as_deref() {
        Some("all") => all.to_vec(),
        Some(names) => {
            let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
            all.iter().filter(|p| wanted.contains(&name_of(p).as_str())).cloned().collect()
        }
        None => {
            let size = std::env::var("PI_EXAMPLES_SAMPLE").ok().and_then(|v| v.parse().ok()).unwrap_or(SAMPLE_SIZE);
            sample(all, size, SAMPLE_SEED)
        }
    }
}

/// A deviation of `compat/DEVIATIONS.md`: `(example, property)`.
fn listed_deviations() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("compat/DEVIATIONS.md")).unwrap_or_default();
    let Some(start) = text.find("## Example extensions") else { return Vec::new() };
    let section = &text[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let example = cells.get(1)?.trim_matches('`');
            let property = cells.get(2)?.trim_matches('`');
            (["commands", "errors", "tools", "completed"].contains(&property))
                .then(|| (example.to_string(), property.to_string()))
        })
        .collect()
}

fn host_dir() -> PathBuf {
    repo_root().join("target/tools/extension-host")
}

/// Replace what differs from run to run (paths) in an error text.
fn normalise(text: &str, example: &Path, sb: &Sandbox) -> String {
    let mut t = text.to_string();
    for (path, name) in [
        (example.to_path_buf(), "<example>"),
        (example.parent().map(Path::to_path_buf).unwrap_or_default(), "<examples>"),
        (sb.agent_dir.path().to_path_buf(), "<agent>"),
        (sb.cwd.path().to_path_buf(), "<cwd>"),
        (sb.home.path().to_path_buf(), "<home>"),
    ] {
        t = t.replace(&path.display().to_string(), name);
    }
    t.lines().next().unwrap_or_default().trim().to_string()
}

/// Run `program` on `example` in a fresh sandbox.
async fn observe(program: Program, example: &Path, node: &Path, reference_cli: &Path) -> (Observation, String) {
    let sb = Sandbox::with_server().await;
    sb.server().set_fallback(Reply::text("Hello."));
    sb.write_settings(json!({
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "retry": {"baseDelayMs": 20},
        "extensionHostNode": node,
        "extensionHostDir": host_dir(),
        // pi has no start-up limit; on a loaded machine pi-rpc's default (10 s) is too short for a fair comparison.
        "extensionStartupTimeoutMs": STARTUP.as_millis() as u64,
    }));
    let example_arg = example.display().to_string();
    let mut cmd = match program {
        Program::PiRpc => {
            let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
            c.args(["--mode", "rpc", "-e", &example_arg]);
            c
        }
        Program::Reference => {
            let mut c = tokio::process::Command::new(node);
            c.arg(reference_cli).args(["--mode", "rpc", "--offline", "-e", &example_arg]);
            c
        }
    };
    cmd.current_dir(sb.cwd.path()).env_clear();
    let node_dir = node.parent().map(Path::to_path_buf).unwrap_or_default();
    cmd.env("PATH", format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default()));
    for keep in ["LANG", "TMPDIR"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", sb.home.path())
        .env("PI_CODING_AGENT_DIR", sb.agent_dir.path())
        .env("PI_OFFLINE", "1")
        .env("RUST_LOG", "warn");
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let stdout = child.stdout.take().expect("stdout");
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let stderr = child.stderr.take().expect("stderr");
    let stderr_text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = stderr_text.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(mut s) = sink.lock() {
                s.push_str(&line);
                s.push('\n');
            }
        }
    });

    let mut seen: Vec<Value> = Vec::new();
    // Answer dialogs as a client without a user would: dismissed.
    let dialog = |v: &Value| {
        v["type"] == "extension_ui_request"
            && ["select", "confirm", "input", "editor"].contains(&v["method"].as_str().unwrap_or_default())
    };

    send(&mut stdin, json!({"id": "cmds", "type": "get_commands"})).await;
    let mut commands = None;
    let deadline = tokio::time::Instant::now() + STARTUP;
    while commands.is_none() {
        let Ok(Some(v)) = tokio::time::timeout_at(deadline, rx.recv()).await else { break };
        if dialog(&v) {
            send(&mut stdin, json!({"type": "extension_ui_response", "id": v["id"], "cancelled": true})).await;
        }
        if v["type"] == "response" && v["id"] == "cmds" {
            commands = Some(v["data"]["commands"].clone());
        }
        seen.push(v);
    }

    let mut completed = false;
    if commands.is_some() {
        send(&mut stdin, json!({"id": "p", "type": "prompt", "message": "Say hello."})).await;
        let deadline = tokio::time::Instant::now() + SETTLE;
        let mut accepted = false;
        loop {
            let Ok(Some(v)) = tokio::time::timeout_at(deadline, rx.recv()).await else { break };
            if dialog(&v) {
                send(&mut stdin, json!({"type": "extension_ui_response", "id": v["id"], "cancelled": true})).await;
            }
            if v["type"] == "response" && v["id"] == "p" {
                accepted = v["success"] == true;
                if !accepted || v["data"]["disposition"] == "handled" {
                    completed = accepted;
                    seen.push(v);
                    break;
                }
            }
            if v["type"] == "agent_settled" {
                completed = accepted || seen.iter().any(|s| s["type"] == "response" && s["id"] == "p");
                seen.push(v);
                break;
            }
            seen.push(v);
        }
        // Late errors (a handler failing after the run).
        let quiet = tokio::time::Instant::now() + Duration::from_millis(500);
        while let Ok(Some(v)) = tokio::time::timeout_at(quiet, rx.recv()).await {
            seen.push(v);
        }
    }
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    let _ = child.start_kill();
    let stderr_text = stderr_text.lock().map(|s| s.clone()).unwrap_or_default();

    let mut errors: BTreeSet<String> = seen
        .iter()
        .filter(|v| v["type"] == "extension_error")
        .map(|v| {
            format!(
                "{}: {}",
                v["event"].as_str().unwrap_or_default(),
                normalise(v["error"].as_str().unwrap_or_default(), example, &sb)
            )
        })
        .collect();
    if commands.is_none() {
        // pi exits when an extension fails to load: its stderr says why.
        for line in stderr_text.lines().filter(|l| l.starts_with("Error: Failed to load extension")) {
            let text = line.split_once("\": ").map_or(line, |(_, rest)| rest);
            errors.insert(format!("load: {}", normalise(text, example, &sb)));
        }
        if errors.is_empty() {
            errors.insert("startup: no answer to get_commands".to_string());
        }
    }
    let commands: BTreeSet<String> = commands
        .and_then(|c| c.as_array().cloned())
        .unwrap_or_default()
        .iter()
        // Built-ins: pi marks them `sourceInfo.source: "builtin"`, pi-rpc by a `builtin:` path.
        .filter(|c| {
            let builtin_path = c["path"].as_str().is_some_and(|p| p.starts_with("builtin:"));
            c["source"] == "extension" && c["sourceInfo"]["source"] != "builtin" && !builtin_path
        })
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    let tools = sb.server().requests().first().map(|r| {
        r.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    });
    let transcript = seen.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    (Observation { commands, errors, tools, completed }, format!("{transcript}\n--- stderr ---\n{stderr_text}"))
}

async fn send(stdin: &mut tokio::process::ChildStdin, v: Value) {
    let line = format!("{v}\n");
    let _ = stdin.write_all(line.as_bytes()).await;
    let _ = stdin.flush().await;
}

/// The properties on which two observations differ.
fn differences(a: &Observation, b: &Observation) -> Vec<&'static str> {
    let mut out = Vec::new();
    if a.commands != b.commands {
        out.push("commands");
    }
    if a.errors != b.errors {
        out.push("errors");
    }
    if a.tools != b.tools {
        out.push("tools");
    }
    if a.completed != b.completed {
        out.push("completed");
    }
    out
}

#[tokio::test]
async fn each_example_extension_behaves_as_in_pi() {
    let Some(node) = node22() else { return };
    let Some(package) = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent") else { return };
    if !host_dir().join("node_modules/jiti/package.json").is_file() {
        if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("the extension host's packages are missing: run scripts/install-test-tools.sh");
        }
        eprintln!("SKIP: the extension host's packages are missing");
        return;
    }
    let cli = package.join("dist/cli.js");
    let all = examples(&package.join("examples/extensions"));
    assert!(all.len() >= 70, "the reference ships its examples ({} found)", all.len());
    let chosen = selected(&all);
    let deviations = listed_deviations();
    let mut failures = Vec::new();
    for example in &chosen {
        let name = name_of(example);
        let ((ours, our_log), (theirs, their_log)) = tokio::join!(
            observe(Program::PiRpc, example, &node, &cli),
            observe(Program::Reference, example, &node, &cli)
        );
        let diff = differences(&ours, &theirs);
        let unlisted: Vec<&str> =
            diff.iter().copied().filter(|p| !deviations.contains(&(name.clone(), (*p).to_string()))).collect();
        let stale = diff.is_empty() && deviations.iter().any(|(e, _)| *e == name);
        // Not a failure: a listed difference may depend on timing (dynamic-tools.ts).
        let verdict = if stale {
            "same this time, though listed as a deviation".to_string()
        } else if diff.is_empty() {
            "same".to_string()
        } else if unlisted.is_empty() {
            format!("listed deviation ({})", diff.join(", "))
        } else {
            format!("DIFFERS ({})", unlisted.join(", "))
        };
        eprintln!("{name}: {verdict}");
        if !unlisted.is_empty() {
            eprintln!("  pi-rpc:    {ours:?}\n  pi 1.6.0:  {theirs:?}");
            if std::env::var_os("PI_EXAMPLES_VERBOSE").is_some() {
                eprintln!("--- pi-rpc ---\n{our_log}\n--- pi 1.6.0 ---\n{their_log}");
            }
            failures.push(format!("{name}: {}", unlisted.join(", ")));
        }
    }
    assert!(failures.is_empty(), "examples that differ from pi 1.6.0: {failures:#?}");
}

#[test]
fn the_sample_is_fixed_and_distinct() {
    let all: Vec<PathBuf> = (0..78).map(|i| PathBuf::from(format!("e{i:02}.ts"))).collect();
    let a = sample(&all, 8, SAMPLE_SEED);
    assert_eq!(a, sample(&all, 8, SAMPLE_SEED));
    assert_eq!(a.iter().collect::<BTreeSet<_>>().len(), 8);
    assert_eq!(sample(&all, 100, 1).len(), 78);
}

/// README-extensions.md's table of the examples: (example, result) rows of
/// its section "Example extensions of pi 1.6.0".
fn readme_rows() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("README-extensions.md")).unwrap_or_default();
    let Some(start) = text.find("### Example extensions of pi 1.6.0") else { return Vec::new() };
    text[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(1)?.trim_matches('`');
            let result = cells.get(2)?;
            (name.ends_with(".ts") || name.ends_with('/'))
                .then(|| (name.trim_end_matches('/').to_string(), result.to_string()))
        })
        .collect()
}

/// The README's table names every example the reference ships, and marks as
/// a deviation exactly those `compat/DEVIATIONS.md` accepts a difference for
/// (which the side-by-side test holds to their behaviour).
#[test]
fn the_readme_table_lists_every_example_and_its_deviations() {
    let Some(package) = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent") else { return };
    let shipped: BTreeSet<String> = examples(&package.join("examples/extensions")).iter().map(|p| name_of(p)).collect();
    let rows = readme_rows();
    let listed: BTreeSet<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(listed, shipped, "README-extensions.md's example table names every shipped example");
    let marked: BTreeSet<String> =
        rows.iter().filter(|(_, r)| r.starts_with("deviation")).map(|(n, _)| n.clone()).collect();
    let accepted: BTreeSet<String> = listed_deviations().into_iter().map(|(n, _)| n).collect();
    assert_eq!(marked, accepted, "the README's deviations are compat/DEVIATIONS.md's");
    assert!(rows.iter().all(|(_, r)| r == "same as pi" || r.starts_with("deviation")), "{rows:?}");
}
