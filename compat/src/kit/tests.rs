//! Checks of the kit's own data: every scenario file loads, both dialects have
//! at least 40 scenarios, together they cover every command, method, event,
//! notification and error code of the seeds, and the known-gap lists name
//! scenarios that exist; agents that cannot start, exit early or crash are
//! reported in one line each (and in JUnit XML).

use std::path::PathBuf;

use super::coverage::coverage;
use super::scenario::{Scenario, load_dir};

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn scenarios(dialect: &str) -> Vec<Scenario> {
    load_dir(&dir("scenarios").join(dialect)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_scenario_loads_and_there_are_enough() {
    let native = scenarios("jsonl");
    let rpc = scenarios("jsonrpc");
    let acp = scenarios("acp");
    assert!(native.len() >= 40, "{} native scenarios", native.len());
    assert!(rpc.len() >= 40, "{} JSON-RPC scenarios", rpc.len());
    assert!(acp.len() >= 30, "{} ACP scenarios", acp.len());
    for s in native.iter().chain(&rpc).chain(&acp) {
        assert!(!s.description.trim().is_empty(), "{} has no description", s.name);
        assert!(!s.expect.is_empty(), "{} checks nothing", s.name);
    }
    assert!(rpc.iter().all(|s| s.deviation.is_none()), "the reference has no JSON-RPC dialect to deviate from");
}

#[test]
fn the_scenarios_cover_both_seeds() {
    for (dialect, jsonrpc) in [("jsonl", false), ("jsonrpc", true)] {
        let missing: Vec<String> = coverage(&scenarios(dialect), jsonrpc)
            .into_iter()
            .filter(|(_, by)| by.is_empty())
            .map(|(item, _)| item)
            .collect();
        assert!(missing.is_empty(), "{dialect}: not covered: {missing:?}");
    }
}

#[test]
fn the_scenarios_send_every_command_of_the_protocol_table() {
    for (dialect, jsonrpc) in [("jsonl", false), ("jsonrpc", true)] {
        let items = super::coverage::table_items(jsonrpc);
        assert!(items.len() > 30, "{dialect}: {items:?}");
        let missing: Vec<String> = super::coverage::coverage_of(&scenarios(dialect), &items)
            .into_iter()
            .filter(|(_, by)| by.is_empty())
            .map(|(item, _)| item)
            .collect();
        assert!(missing.is_empty(), "{dialect}: table commands no scenario sends: {missing:?}");
    }
}

#[test]
fn known_gaps_name_existing_scenarios() {
    for dialect in ["jsonl", "jsonrpc", "acp"] {
        let names: Vec<String> = scenarios(dialect).into_iter().map(|s| s.name).collect();
        let path = dir("known-gaps").join(format!("pi-rpc-{dialect}.txt"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let name = line.split('#').next().unwrap_or("").trim();
            assert!(names.iter().any(|n| n == name), "{}: no scenario {name}", path.display());
        }
    }
}

/// Run the kit's `prompt_text_stream` against `agent` and return its report.
async fn report_for(agent: &str, junit: Option<PathBuf>) -> String {
    let chosen: Vec<Scenario> = scenarios("jsonl").into_iter().filter(|s| s.name == "prompt_text_stream").collect();
    assert_eq!(chosen.len(), 1);
    let opts = super::Options {
        agent: agent.to_string(),
        dialect: super::Dialect::Jsonl,
        profile: super::Profile::Strict,
        jobs: 1,
        record: None,
        expected_failures: Default::default(),
        schemas: None,
        examples: None,
        junit,
    };
    let mut out = Vec::new();
    super::run_all(chosen, opts, &mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn agents_that_cannot_start_exit_early_or_crash_get_one_clear_line() {
    let started = std::time::Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let missing = report_for("./no/such/agent --mode rpc", Some(junit.clone())).await;
    assert!(
        missing.starts_with(
            "FAIL prompt_text_stream: the agent exited (code 127) at start: it could not be run; stderr: "
        ) && missing.contains("./no/such/agent: not found"),
        "{missing}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"failures="1""#) && xml.contains("<failure message=\"the agent exited (code 127)"), "{xml}");

    let early = report_for("sh -c 'read line; echo giving up >&2; exit 3'", None).await;
    assert!(early.starts_with("FAIL prompt_text_stream: the agent exited (code 3) during step "), "{early}");
    assert!(early.contains("; stderr: giving up\n"), "{early}");

    let crash = report_for("sh -c 'read line; echo boom >&2; kill -ABRT $$'", None).await;
    assert!(crash.contains("the agent exited (killed by signal 6 (SIGABRT)) during step"), "{crash}");
    assert!(crash.contains("stderr: boom"), "{crash}");
    // No waiting out the step timeouts.
    assert!(started.elapsed() < super::driver::WAIT_TIMEOUT, "{:?}", started.elapsed());
}

#[test]
fn acp_messages_are_checked_against_the_acp_types_by_method() {
    use crate::schemas::Schemas;
    use serde_json::json;
    let schemas = Schemas::strict();
    let sent = |id: &serde_json::Value| (id == &json!(2)).then(|| "session/prompt".to_string());
    let chunk = |content| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": content}}});
    assert_eq!(schemas.check_acp_output(&chunk(json!({"type": "text", "text": "hi"})), &sent), Ok(()));
    assert!(schemas.check_acp_output(&chunk(json!(5)), &sent).is_err(), "content must be a content block");
    let result = |reason| json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": reason}});
    assert_eq!(schemas.check_acp_output(&result("end_turn"), &sent), Ok(()));
    assert!(schemas.check_acp_output(&result("finished"), &sent).is_err(), "not a stop reason");
    let unknown = json!({"jsonrpc": "2.0", "method": "session/fly", "params": {}});
    assert!(schemas.check_acp_output(&unknown, &sent).is_err(), "agents do not send session/fly");
    let error = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": "bad", "message": "x"}});
    assert!(schemas.check_acp_output(&error, &sent).is_err(), "an error code is an integer");
}

#[tokio::test]
async fn scenarios_needing_pi_examples_are_skipped_without_them() {
    let chosen: Vec<Scenario> =
        scenarios("jsonl").into_iter().filter(|s| s.name == "example_hello" || s.name == "unknown_command").collect();
    assert_eq!(chosen.len(), 2);
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let opts = super::Options {
        // Exits at once: `unknown_command` fails, `example_hello` is not even started.
        agent: "sh -c 'exit 3'".to_string(),
        dialect: super::Dialect::Jsonl,
        profile: super::Profile::Strict,
        jobs: 2,
        record: None,
        expected_failures: Default::default(),
        schemas: None,
        examples: None,
        junit: Some(junit.clone()),
    };
    let mut out = Vec::new();
    let failures = super::run_all(chosen, opts, &mut out).await;
    let out = String::from_utf8_lossy(&out);
    assert_eq!(failures, 1, "{out}");
    assert!(
        out.contains("SKIPPED example_hello: needs pi's example extensions/hello.ts: pass --examples DIR"),
        "{out}"
    );
    assert!(out.contains("FAIL unknown_command: "), "{out}");
    assert!(out.trim_end().ends_with("0 passed, 1 failed, 1 skipped"), "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"skipped="1""#) && xml.contains("<skipped message=\"not run: needs pi&apos;s example"),
        "{xml}"
    );
}
