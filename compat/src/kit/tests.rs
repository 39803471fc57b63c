//! Checks of the kit's own data: every scenario file loads, both dialects have
//! at least 40 scenarios, together they cover every command, method, event,
//! notification and error code of the seeds, and the known-gap lists name
//! scenarios that exist.

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
    assert!(native.len() >= 40, "{} native scenarios", native.len());
    assert!(rpc.len() >= 40, "{} JSON-RPC scenarios", rpc.len());
    for s in native.iter().chain(&rpc) {
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
    for dialect in ["jsonl", "jsonrpc"] {
        let names: Vec<String> = scenarios(dialect).into_iter().map(|s| s.name).collect();
        let path = dir("known-gaps").join(format!("pi-rpc-{dialect}.txt"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let name = line.split('#').next().unwrap_or("").trim();
            assert!(names.iter().any(|n| n == name), "{}: no scenario {name}", path.display());
        }
    }
}
