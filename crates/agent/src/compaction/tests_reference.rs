//! Compaction checked against pi 1.6.0 itself: `testdata/pi_outputs.json`
//! holds what pi's own `prepareCompaction` and `compact` did with the session
//! files next to it (recorded by `tests/interop/compaction_reference.mjs`):
//! cut point, split turn, token estimate, previous summary, the exact
//! summarisation requests and the final summary.

use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::tests::{Events, Script, Scripted, summarizer};
use super::{Projection, prepare, summarize};
use crate::event::{CompactionReason, SummarizationSource};
use crate::message::AgentMessage;
use crate::session::Session;

fn testdata(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compaction/testdata").join(name)
}

#[tokio::test]
async fn preparation_and_requests_match_pi() {
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(testdata("pi_outputs.json")).unwrap()).unwrap();
    assert!(cases.len() >= 8);
    let dir = tempfile::tempdir().unwrap();
    for case in cases {
        let file = case["file"].as_str().unwrap();
        let keep = case["keepRecentTokens"].as_u64().unwrap();
        let custom = case["customInstructions"].as_str();
        let label = format!("{file} keep={keep}");
        let copy = dir.path().join(file);
        std::fs::copy(testdata(file), &copy).unwrap();
        let (session, warnings) = Session::open(&copy, "/work/proj").unwrap();
        assert!(warnings.is_empty(), "{label}: {warnings:?}");
        let prep = prepare(&Projection::of(&session), keep, 0);
        let expected = &case["preparation"];
        if expected.is_null() {
            assert!(prep.is_err(), "{label}: pi had nothing to compact");
            continue;
        }
        let prep = prep.unwrap_or_else(|e| panic!("{label}: {e:?}"));
        let roles = |ms: &[AgentMessage]| ms.iter().map(|m| m.role().to_string()).collect::<Vec<_>>();
        assert_eq!(prep.first_kept_entry_id, expected["firstKeptEntryId"].as_str().unwrap(), "{label}");
        assert_eq!(prep.is_split_turn, expected["isSplitTurn"].as_bool().unwrap(), "{label}");
        assert_eq!(serde_json::json!(roles(&prep.messages_to_summarize)), expected["summarizeRoles"], "{label}");
        assert_eq!(serde_json::json!(roles(&prep.turn_prefix_messages)), expected["turnPrefixRoles"], "{label}");
        assert_eq!(prep.tokens_before, expected["tokensBefore"].as_u64().unwrap(), "{label}");
        assert_eq!(prep.previous_summary.as_deref(), expected["previousSummary"].as_str(), "{label}");

        let provider = Scripted::default();
        provider.script.lock().unwrap().extend([Script::Text("SUMMARY-1"), Script::Text("SUMMARY-2")]);
        let source = SummarizationSource::Compaction(CompactionReason::Manual);
        let out =
            summarize(&prep, custom, &summarizer(&provider, 0), source, &Events::default(), &CancellationToken::new())
                .await
                .unwrap_or_else(|e| panic!("{label}: {e:?}"));
        let requests = provider.requests.lock().unwrap().clone();
        let pi_requests = case["requests"].as_array().unwrap();
        assert_eq!(requests.len(), pi_requests.len(), "{label}: number of requests");
        for (ours, theirs) in requests.iter().zip(pi_requests) {
            assert_eq!(ours.system_prompt, theirs["systemPrompt"].as_str().unwrap(), "{label}: system prompt");
            let AgentMessage::User(u) = &ours.messages[0] else { panic!("{label}: user message expected") };
            assert_eq!(u.content.text(), theirs["user"].as_str().unwrap(), "{label}: request text");
        }
        assert_eq!(out.summary, case["summary"].as_str().unwrap(), "{label}: summary");
        assert_eq!(out.details, case["details"], "{label}: details");
    }
}
