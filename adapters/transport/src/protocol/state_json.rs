//! `get_state`'s data written straight to bytes: its keys are constants, so
//! only its values go through `serde_json` (a burst of `get_state` spent a
//! third of its time in the serializer's per-key work). The bytes are the
//! ones `serde_json` writes for [`StateData`] (the tests compare them).
//!
//! The state seldom changes between two answers, so the last state written
//! and its bytes are kept (per thread, as the model's bytes are): a state
//! equal to it (the same model `Arc`, every other field equal) is one copy
//! of the bytes. A burst of `get_state` writes its data once.

use std::cell::RefCell;
use std::sync::Arc;

use serde::Serialize;

use super::WireResult;
use super::results::StateData;

/// The model member as [`StateData`]'s field writes it (its cached bytes).
struct ModelJson<'a>(&'a StateData);

impl Serialize for ModelJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        super::model_json::serialize(&self.0.model, s)
    }
}

fn member(out: &mut Vec<u8>, key: &[u8], value: &(impl Serialize + ?Sized)) -> serde_json::Result<()> {
    out.extend_from_slice(key);
    serde_json::to_writer(&mut *out, value)
}

fn flag(out: &mut Vec<u8>, key: &[u8], value: bool) {
    out.extend_from_slice(key);
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

thread_local! {
    /// The last state written and its bytes. The model's `Arc` is held, so
    /// its allocation cannot be reused by another model while it is kept.
    static LAST: RefCell<Option<(StateData, Vec<u8>)>> = const { RefCell::new(None) };
}

impl StateData {
    /// Whether `self` is written as `held` is: the same model (the agent
    /// shares one `Arc` until the model changes), every other field equal.
    fn writes_as(&self, held: &StateData) -> bool {
        // Every field named: a new one must be compared here to compile.
        let StateData {
            model,
            thinking_level,
            is_streaming,
            is_compacting,
            steering_mode,
            follow_up_mode,
            session_file,
            session_id,
            session_name,
            auto_compaction_enabled,
            message_count,
            pending_message_count,
        } = self;
        let same_model = match (model, &held.model) {
            (Some(model), Some(other)) => Arc::ptr_eq(model, other),
            (None, None) => true,
            _ => false,
        };
        same_model
            && *message_count == held.message_count
            && *pending_message_count == held.pending_message_count
            && *is_streaming == held.is_streaming
            && *is_compacting == held.is_compacting
            && *auto_compaction_enabled == held.auto_compaction_enabled
            && *thinking_level == held.thinking_level
            && *steering_mode == held.steering_mode
            && *follow_up_mode == held.follow_up_mode
            && *session_id == held.session_id
            && *session_file == held.session_file
            && *session_name == held.session_name
    }

    /// The data's bytes, written member by member.
    fn write_members(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        member(out, b"{\"model\":", &ModelJson(self))?;
        member(out, b",\"thinkingLevel\":", self.thinking_level)?;
        flag(out, b",\"isStreaming\":", self.is_streaming);
        flag(out, b",\"isCompacting\":", self.is_compacting);
        member(out, b",\"steeringMode\":", self.steering_mode)?;
        member(out, b",\"followUpMode\":", self.follow_up_mode)?;
        if let Some(file) = &self.session_file {
            member(out, b",\"sessionFile\":", file)?;
        }
        member(out, b",\"sessionId\":", &self.session_id)?;
        if let Some(name) = &self.session_name {
            member(out, b",\"sessionName\":", name)?;
        }
        flag(out, b",\"autoCompactionEnabled\":", self.auto_compaction_enabled);
        member(out, b",\"messageCount\":", &self.message_count)?;
        member(out, b",\"pendingMessageCount\":", &self.pending_message_count)?;
        out.push(b'}');
        Ok(())
    }
}

impl WireResult for StateData {
    /// The bytes of the last state written when this one writes as it did.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            if let Some((held, bytes)) = last.as_ref()
                && self.writes_as(held)
            {
                out.extend_from_slice(bytes);
                return Ok(());
            }
            let start = out.len();
            self.write_members(out)?;
            *last = Some((self.clone(), out[start..].to_vec()));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// `state`'s data as `write_json` writes it after `head:`, checked
    /// against serde_json's bytes for the struct.
    fn written(state: &StateData) -> String {
        let mut out = b"head:".to_vec();
        state.write_json(&mut out).unwrap();
        let expected = [&b"head:"[..], &serde_json::to_vec(state).unwrap()].concat();
        let (out, expected) = (String::from_utf8(out).unwrap(), String::from_utf8(expected).unwrap());
        assert_eq!(out, expected);
        out
    }

    fn odd_model() -> Option<Arc<pi_core::model::Model>> {
        let mut model = pi_core::provider::faux::faux_model();
        model.name = "modèle \u{2028} \"faux\" \\ \u{1}".to_string();
        Some(Arc::new(model))
    }

    const ODD: &str = "é \"q\" \\ \n\t\u{1f} \u{2028} 😀 </script>";

    #[test]
    fn the_bytes_are_serde_json_s() {
        let model = odd_model();
        for (model, file, name, flags, counts) in [
            (model.clone(), None, None, false, (0, 0)),
            (model.clone(), Some("/tmp/a b/s.jsonl".to_string()), Some("name".to_string()), true, (7, 3)),
            (None, Some(ODD.to_string()), Some(ODD.to_string()), true, (usize::MAX, 1)),
            (model, None, Some(String::new()), false, (123_456, 0)),
        ] {
            let state = StateData {
                model,
                thinking_level: "medium",
                is_streaming: flags,
                is_compacting: !flags,
                steering_mode: "one-at-a-time",
                follow_up_mode: "all",
                session_file: file,
                session_id: ODD.to_string(),
                session_name: name,
                auto_compaction_enabled: flags,
                message_count: counts.0,
                pending_message_count: counts.1,
            };
            written(&state);
            // Again, from the bytes kept.
            written(&state);
        }
    }

    /// The bytes kept are written again only for a state that writes as
    /// the last one: a change of any field is written anew.
    #[test]
    fn a_changed_state_is_written_anew() {
        let model = odd_model();
        let base = StateData {
            model: model.clone(),
            thinking_level: "medium",
            is_streaming: false,
            is_compacting: false,
            steering_mode: "one-at-a-time",
            follow_up_mode: "all",
            session_file: Some("/tmp/s.jsonl".to_string()),
            session_id: "0192-id".to_string(),
            session_name: None,
            auto_compaction_enabled: true,
            message_count: 4,
            pending_message_count: 0,
        };
        let mut other_model = (**model.as_ref().unwrap()).clone();
        other_model.id = "other".to_string();
        type Change = fn(&mut StateData);
        let changes: [(&str, Change); 14] = [
            ("model", |s| s.model = None),
            ("same model, another Arc", |s| s.model = Some(Arc::new((**s.model.as_ref().unwrap()).clone()))),
            ("thinkingLevel", |s| s.thinking_level = "high"),
            ("isStreaming", |s| s.is_streaming = true),
            ("isCompacting", |s| s.is_compacting = true),
            ("steeringMode", |s| s.steering_mode = "all"),
            ("followUpMode", |s| s.follow_up_mode = "one-at-a-time"),
            ("sessionFile", |s| s.session_file = None),
            ("sessionFile", |s| s.session_file = Some("/tmp/t.jsonl".to_string())),
            ("sessionId", |s| s.session_id = "0192-ie".to_string()),
            ("sessionName", |s| s.session_name = Some(ODD.to_string())),
            ("autoCompactionEnabled", |s| s.auto_compaction_enabled = false),
            ("messageCount", |s| s.message_count = 5),
            ("pendingMessageCount", |s| s.pending_message_count = 1),
        ];
        let first = written(&base);
        for (field, change) in changes {
            let mut changed = base.clone();
            change(&mut changed);
            let after = written(&changed);
            if field == "same model, another Arc" {
                assert_eq!(after, first, "{field}");
            } else {
                assert_ne!(after, first, "{field} changed, the bytes did not");
            }
            assert_eq!(written(&changed), after, "{field}, again");
            assert_eq!(written(&base), first, "back from {field}");
        }
        let switched = StateData { model: Some(Arc::new(other_model)), ..base.clone() };
        assert!(written(&switched).contains("\"id\":\"other\""));
        assert_eq!(written(&base), first);
    }
}
