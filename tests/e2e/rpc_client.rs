//! pi 1.6.0's own `RpcClient` (from the reference package) drives pi-rpc
//! through every public method (`tests/clients/rpc_client_driver.mjs`);
//! pi-rpc is started through `tests/clients/pi_rpc_shim.cjs`, since
//! `RpcClient` spawns `node <cliPath>`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::Sandbox;

fn slow(words: &[&str], ms: u64) -> Reply {
    Reply::text_chunks(words.iter().copied()).delay_ms(ms)
}

/// Run the driver with `RpcClient` spawning `node <cli>`; its report.
async fn drive(node: &Path, package: &Path, cli: &Path, extra_args: Value) -> (Value, Sandbox) {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    sb.write_settings(json!({
        "defaultProvider": "fake", "defaultModel": "fake-model",
        "retry": {"baseDelayMs": 20}, "compaction": {"keepRecentTokens": 10}
    }));
    let server = sb.server();
    server.push(Reply::text("Hello back."));
    server.push(slow(&["slow ", "words ", "one ", "by ", "one"], 150));
    server.push(Reply::text("after steer"));
    server.push(Reply::text("after follow-up"));
    server.push(slow(&["never ", "finished ", "at ", "all ", "here ", "no"], 400));
    server.push(Reply::text("Summary of the talk."));
    server.push(Reply::text("The turn so far."));

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
    cmd.env("PI_CLIENT_ARGS", extra_args.to_string());
    cmd.env("PI_REFERENCE_PKG", package);
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output()).await.expect("driver timed out").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "driver failed\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("report");
    eprintln!("report: {report:#}");
    let errors: Vec<(&String, &Value)> =
        report.as_object().unwrap().iter().filter(|(_, v)| v.get("error").is_some()).collect();
    assert!(errors.is_empty(), "methods that failed: {errors:?}\n{stderr}");
    (report, sb)
}

fn reference() -> Option<(PathBuf, PathBuf)> {
    let node = node22()?;
    let package = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent")?;
    Some((node, package))
}

#[tokio::test]
async fn pi_rpc_client_drives_every_method() {
    let Some((node, package)) = reference() else { return };
    let (r, sb) = drive(&node, &package, &repo_root().join("tests/clients/pi_rpc_shim.cjs"), json!([])).await;
    assert_eq!(r["getState"]["model"]["id"], "fake-model");
    let run = r["promptAndWait"].as_array().unwrap();
    assert_eq!((run.first(), run.last()), (Some(&json!("agent_start")), Some(&json!("agent_settled"))));
    assert!(run.contains(&json!("message_end:assistant")));
    assert!(run.contains(&json!("message_end:system")), "the first run records the system message: {run:?}");
    assert_eq!(r["getLastAssistantText"], "Hello back.");
    assert_eq!(
        (r["prompt"].as_str(), r["steer"].as_str(), r["followUp"].as_str()),
        (Some("started"), Some("queued"), Some("queued"))
    );
    assert_eq!(r["waitForIdle"], "idle");
    assert_eq!(
        r["getMessagesAfterSteering"],
        json!(["system", "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]),
        "the system message, then slow one, steer me, follow me: one run, each answered"
    );
    assert_eq!(r["clearQueue"], json!({"steering": [], "followUp": ["never sent"]}));
    assert_eq!(r["collectAbort"], json!([{"type": "agent_settled", "aborted": true}]));
    assert_eq!(r["setModel"], "fake-other");
    assert_eq!(r["cycleModel"], json!({"id": "fake-model", "isScoped": false, "thinkingLevel": "off"}));
    assert_eq!(r["getAvailableModels"], json!(["fake/fake-model", "fake/fake-other"]));
    // `high` is the last level of a plain reasoning model: cycling wraps to `off`.
    assert_eq!(r["getAvailableThinkingLevels"], json!(["off", "minimal", "low", "medium", "high"]));
    assert_eq!(r["cycleThinkingLevel"], json!({"level": "off"}));
    assert_eq!(
        r["stateAfterSetters"],
        json!({"model": "fake-model", "thinkingLevel": "off", "steeringMode": "all", "followUpMode": "all",
               "autoCompactionEnabled": false})
    );
    // The cut splits the last turn: a history summary and a turn-prefix summary.
    let summary = "Summary of the talk.\n\n---\n\n**Turn Context (split turn):**\n\nThe turn so far.";
    assert_eq!(r["compact"], json!({"summary": summary, "hasFirstKept": true, "tokensBefore": true}));
    assert_eq!((r["bash"]["output"].as_str(), r["bash"]["exitCode"].as_i64()), (Some("from-bash\n"), Some(0)));
    assert_eq!(r["getSessionStats"]["hasFile"], true);
    assert!(r["getSessionStats"]["userMessages"].as_u64().unwrap() >= 4);
    assert!(r["exportHtml"]["path"].as_str().unwrap().ends_with("export.html"));
    assert!(sb.cwd.path().join("export.html").exists());
    assert_eq!(r["sessionName"], "rpc client run");
    assert!(r["getCommands"].is_array());
    assert_eq!(r["getForkMessages"][0]["text"], "hello");
    assert_eq!(r["fork"], json!({"text": "hello", "cancelled": false}));
    assert_eq!(r["getEntries"]["leaf"], true);
    assert!(r["getEntries"]["types"].as_array().is_some_and(|t| !t.is_empty()));
    assert_eq!(r["getTree"]["leaf"], true);
    assert_eq!(r["clone"], json!({"cancelled": false}));
    assert_eq!(r["newSession"], json!({"cancelled": false}));
    assert_eq!(r["messagesInNewSession"], 0);
    assert_eq!(r["switchSession"], json!({"cancelled": false}));
    assert_eq!(r["messagesAfterSwitch"], true);
    for event in ["agent_settled", "message_update", "queue_update", "compaction_end", "thinking_level_changed"] {
        assert!(r["eventTypes"].as_array().unwrap().contains(&json!(event)), "{event} seen: {}", r["eventTypes"]);
    }
    assert_eq!((r["stderrIsText"].clone(), r["stopped"].clone()), (json!(true), json!(true)));
}

/// What two runs may differ in (ids, paths, ports), and pi 1.6.0's
/// `/llama` command, which pi-rpc leaves out (compat/DEVIATIONS.md,
/// `prompt_templates_and_skills`).
fn comparable(mut report: Value) -> Value {
    if let Some(state) = report["getState"].as_object_mut() {
        for volatile in ["sessionFile", "sessionId"] {
            state.remove(volatile);
        }
        if let Some(model) = state.get_mut("model").and_then(Value::as_object_mut) {
            model.remove("baseUrl");
        }
    }
    for item in report["getForkMessages"].as_array_mut().into_iter().flatten() {
        item["entryId"] = json!("<id>");
    }
    if let Some(commands) = report["getCommands"].as_array_mut() {
        commands.retain(|c| c != "llama");
    }
    report
}

/// The same script against pi 1.6.0 itself gives the same report.
#[tokio::test]
async fn the_same_script_reports_the_same_on_pi_1_6_0() {
    let Some((node, package)) = reference() else { return };
    let (ours, _a) = drive(&node, &package, &repo_root().join("tests/clients/pi_rpc_shim.cjs"), json!([])).await;
    let (theirs, _b) = drive(&node, &package, &package.join("dist/cli.js"), json!(["--offline"])).await;
    let (ours, theirs) = (comparable(ours), comparable(theirs));
    let mut differ = Vec::new();
    for (key, value) in theirs.as_object().unwrap() {
        if ours.get(key) != Some(value) {
            differ.push(format!("{key}: pi 1.6.0 {value}, pi-rpc {}", ours.get(key).unwrap_or(&Value::Null)));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
