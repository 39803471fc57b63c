//! pi 1.6.0's own `RpcClient` (from the reference package) drives pi-rpc and
//! pi 1.6.0 through every public method (`tests/clients/rpc_client_driver.mjs`)
//! in two configurations, and the two reports must hold the same data: the
//! full value each method returned, compared after the normalisation of
//! `rpc_client/compare.rs` (ids, times, paths), apart from the
//! [`KNOWN_DIFFERENCES`], each listed with its reason in compat/DEVIATIONS.md.
//! pi-rpc is started through `tests/clients/pi_rpc_shim.cjs`, since
//! `RpcClient` spawns `node <cliPath>`.

mod compare;

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_compat::fake_server::{FakeUsage, Reply};
use serde_json::{Value, json};

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::Sandbox;
use compare::{Difference, KnownDifference, RunPlaces, always, differences, normalised};

/// One configuration of the side-by-side run.
struct Config {
    /// A reasoning model (thinking levels up to `high`) or a plain one.
    reasoning: bool,
    /// Session files on disk, or `--no-session`.
    sessions: bool,
    /// A user prompt template and a user skill (listed by `get_commands`).
    resources: bool,
}

/// Reasoning model, sessions on disk, no prompt templates or skills.
const ON_DISK: Config = Config { reasoning: true, sessions: true, resources: false };
/// Plain model, `--no-session`, a prompt template and a skill.
const IN_MEMORY: Config = Config { reasoning: false, sessions: false, resources: true };

/// Differences kept on purpose (compat/DEVIATIONS.md, "pi's RpcClient side by side").
const KNOWN_DIFFERENCES: &[KnownDifference] = &[
    KnownDifference {
        paths: &["/**/sections/preamble", "/**/sections/tools", "/**/sections/rules", "/**/sections/docs"],
        when: always,
        reason: "the system prompt's sections carry pi's information in pi-rpc's own words (issue 27: never copy pi's text); a unit test holds each section within 15% of pi's size",
    },
    KnownDifference {
        paths: &["/getCommands/*/description"],
        when: |d| d.reference.as_ref().is_some_and(|v| v.as_str().is_some_and(|t| t.starts_with("Manage MCP servers"))),
        reason: "pi-rpc's built-in /mcp shows the servers' state and reconnects one; it has no sign-in or exposure changes, so its description says what it does",
    },
    KnownDifference {
        paths: &["/getCommands/*/location", "/getCommands/*/path"],
        when: |d| d.reference.is_none(),
        reason: "seed 000 documents `location` and `path` on get_commands entries; pi-rpc sends them beside pi 1.6.0's `sourceInfo`",
    },
    KnownDifference {
        paths: &["/**/message/stopReason"],
        when: |d| d.reference == Some(Value::from("pending")) && d.ours == Some(Value::from("stop")),
        reason: "pi 1.6.0 says `stopReason: \"pending\"` on the assistant `message_start`; seed 000 lists five stop reasons and `pending` is not one of them",
    },
    KnownDifference {
        paths: &["/promptAndWait/*/usage/**", "/collectAbort/*/usage/**"],
        when: message_update_usage_before_the_end,
        reason: "pi 1.6.0 serialises `message_update.usage` from the live message, so updates written after the final chunk arrived already show its usage; pi-rpc sends the usage as it stood at each update",
    },
    KnownDifference {
        paths: &["/compact/estimatedTokensAfter"],
        when: always,
        reason: "an estimate over the compacted context, which leads with the system message: its sections are in pi-rpc's own words (see above)",
    },
];

/// One side's update carries no usage yet (zeros before the provider
/// reported any), the other the final one: pi's shows it once the final
/// chunk has arrived, whichever update it serialises; the chunks' timing decides.
fn message_update_usage_before_the_end(d: &Difference) -> bool {
    let zero = |v: &Option<Value>| {
        v.as_ref().is_none_or(|v| v == &Value::from(0) || v == &Value::from(0.0) || v == &Value::from(false))
    };
    zero(&d.ours) || zero(&d.reference)
}

fn slow(words: &[&str], ms: u64) -> Reply {
    Reply::text_chunks(words.iter().copied()).delay_ms(ms)
}

/// What one run of the driver left: its report, normalised, and the raw one.
struct Run {
    raw: Value,
    normalised: Value,
    _sandbox: Sandbox,
}

/// Run the driver with `RpcClient` spawning `node <cli> <args>`.
async fn drive(node: &Path, package: &Path, cli: &Path, args: Value, config: &Config) -> Run {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": config.reasoning}));
    sb.write_settings(json!({
        "defaultProvider": "fake", "defaultModel": "fake-model",
        "retry": {"baseDelayMs": 20}, "compaction": {"keepRecentTokens": 10}
    }));
    if config.resources {
        let agent = sb.agent_dir.path();
        std::fs::create_dir_all(agent.join("prompts")).unwrap();
        std::fs::write(agent.join("prompts/greet.md"), "---\ndescription: Greet someone\n---\nSay hello to $1.\n")
            .unwrap();
        std::fs::create_dir_all(agent.join("skills/demo")).unwrap();
        std::fs::write(
            agent.join("skills/demo/SKILL.md"),
            "---\nname: demo\ndescription: A demo skill\n---\nDemo skill instructions.\n",
        )
        .unwrap();
    }
    // Each reply reports its own usage: the fake server's estimate would
    // count the system prompt, whose words are pi-rpc's own.
    let server = sb.server();
    let replies = [
        Reply::text("Hello back."),
        slow(&["slow ", "words ", "one ", "by ", "one"], 150),
        Reply::text("after steer"),
        Reply::text("after follow-up"),
        slow(&["never ", "finished ", "at ", "all ", "here ", "no"], 400),
        Reply::text("Summary of the talk."),
        Reply::text("The turn so far."),
    ];
    for (n, reply) in (1..).zip(replies) {
        let usage =
            FakeUsage { prompt_tokens: 600 + 40 * n, completion_tokens: 5 + n, cached_tokens: 0, reasoning_tokens: 0 };
        server.push(reply.with_usage(usage));
    }

    let mut args = args.as_array().cloned().unwrap_or_default();
    if !config.sessions {
        args.push(json!("--no-session"));
    }
    let node_dir = node.parent().expect("node dir").to_path_buf();
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(repo_root().join("tests/clients/rpc_client_driver.mjs"));
    cmd.current_dir(sb.cwd.path()).env_clear();
    cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir.display()));
    cmd.env("HOME", sb.home.path());
    cmd.env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
    cmd.env("PI_OFFLINE", "1");
    cmd.env("RUST_LOG", "error");
    cmd.env("PI_BIN", env!("CARGO_BIN_EXE_pi"));
    cmd.env("PI_CLI_PATH", cli);
    cmd.env("PI_CLIENT_ARGS", Value::Array(args).to_string());
    cmd.env("PI_DRIVER_SESSIONS", if config.sessions { "1" } else { "0" });
    cmd.env("PI_REFERENCE_PKG", package);
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output()).await.expect("driver timed out").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "driver failed\n{stdout}\n{stderr}");
    let raw: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("report");
    let places = RunPlaces {
        cwd: sb.cwd.path(),
        home: sb.home.path(),
        agent_dir: sb.agent_dir.path(),
        server_url: &sb.server().base_url(),
    };
    let normalised = normalised(&raw, &places);
    Run { raw, normalised, _sandbox: sb }
}

fn reference() -> Option<(PathBuf, PathBuf)> {
    let node = node22()?;
    let package = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent")?;
    Some((node, package))
}

/// Both programs driven by the same script in `config`; pi-rpc's report
/// checked on its own, then against pi 1.6.0's.
async fn side_by_side(config: &Config) -> Run {
    let (node, package) = reference().expect("checked by the caller");
    let ours = drive(&node, &package, &repo_root().join("tests/clients/pi_rpc_shim.cjs"), json!([]), config).await;
    let theirs = drive(&node, &package, &package.join("dist/cli.js"), json!(["--offline"]), config).await;
    let all = differences(&without_llama(theirs.normalised.clone()), &ours.normalised);
    let mut unknown = Vec::new();
    let mut excused = vec![Vec::new(); KNOWN_DIFFERENCES.len()];
    for d in &all {
        match KNOWN_DIFFERENCES.iter().position(|k| k.covers(d)) {
            Some(k) => excused[k].push(d.path.as_str()),
            None => unknown.push(d),
        }
    }
    for (known, paths) in KNOWN_DIFFERENCES.iter().zip(&excused).filter(|(_, p)| !p.is_empty()) {
        eprintln!("known difference at {} place(s), first {}: {}", paths.len(), paths[0], known.reason);
    }
    let listed: Vec<String> = unknown.iter().map(|d| d.to_string()).collect();
    assert!(listed.is_empty(), "{} differences from pi 1.6.0:\n{}", listed.len(), listed.join("\n"));
    ours
}

/// pi 1.6.0's report without its built-in `llama` command, which pi-rpc
/// does not have: in RPC mode pi's `/llama` only answers that it needs the
/// terminal UI (compat/DEVIATIONS.md, `prompt_templates_and_skills`).
fn without_llama(mut report: Value) -> Value {
    if let Some(commands) = report["getCommands"].as_array_mut() {
        commands.retain(|c| c["name"] != "llama");
    }
    report
}

/// Steps that fail on either program (both reports hold `{"error": …}`).
fn failed_steps(report: &Value) -> Vec<&String> {
    report.as_object().unwrap().iter().filter(|(_, v)| v.get("error").is_some()).map(|(k, _)| k).collect()
}

fn roles(messages: &Value) -> Vec<&str> {
    messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap_or("?")).collect()
}

#[tokio::test]
async fn rpc_client_on_disk_session_returns_what_pi_1_6_0_returns() {
    if reference().is_none() {
        return;
    }
    let run = side_by_side(&ON_DISK).await;
    let r = &run.raw;
    // What the comparison stands on: every step ran and returned real data.
    assert!(failed_steps(r).is_empty(), "steps that failed: {:?}", failed_steps(r));
    assert_eq!(r["getState"]["model"]["id"], "fake-model");
    let events = r["promptAndWait"].as_array().unwrap();
    assert_eq!(events.first().map(|e| &e["type"]), Some(&json!("agent_start")));
    assert!(events.iter().any(|e| e["type"] == "message_end" && e["message"]["role"] == "system"));
    assert_eq!(r["getLastAssistantText"], "Hello back.");
    assert_eq!(
        roles(&r["getMessagesAfterSteering"]),
        ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    );
    assert_eq!(r["clearQueue"], json!({"steering": [], "followUp": ["never sent", "also never sent"]}));
    assert_eq!(r["cycleThinkingLevel"], json!({"level": "off"}));
    let summary = "Summary of the talk.\n\n---\n\n**Turn Context (split turn):**\n\nThe turn so far.";
    assert_eq!(r["compact"]["summary"], summary);
    assert_eq!(r["bash"]["output"], "from-bash\n");
    assert_eq!(r["stateAfterName"]["sessionName"], "rpc client run");
    assert_eq!(r["fork"], json!({"text": "hello", "cancelled": false}));
    assert!(
        r["getEntriesSince"]["entries"].as_array().unwrap().len() + 2
            == r["getEntries"]["entries"].as_array().unwrap().len()
    );
    assert_eq!(r["messagesInNewSession"], json!([]));
    assert!(!r["messagesAfterSwitch"].as_array().unwrap().is_empty());
    assert_eq!(r["stopped"], true);
}

#[tokio::test]
async fn rpc_client_without_session_file_returns_what_pi_1_6_0_returns() {
    if reference().is_none() {
        return;
    }
    let run = side_by_side(&IN_MEMORY).await;
    let r = &run.raw;
    assert_eq!(r["getState"]["sessionFile"], Value::Null, "{}", r["getState"]);
    assert_eq!(r["getLastAssistantText"], "Hello back.");
    assert_eq!(r["getAvailableThinkingLevels"], json!(["off"]), "a plain model has no thinking levels");
    let commands: Vec<&str> =
        r["getCommands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(commands.contains(&"greet") && commands.contains(&"skill:demo"), "{commands:?}");
    assert_eq!(r["stopped"], true);
}
