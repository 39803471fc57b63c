//! `get_state`'s data written straight to bytes: its keys are constants, so
//! only its values go through `serde_json` (a burst of `get_state` spent a
//! third of its time in the serializer's per-key work). The bytes are the
//! ones `serde_json` writes for [`StateData`] (the tests compare them).

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

impl WireResult for StateData {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_bytes_are_serde_json_s() {
        let mut model = pi_core::provider::faux::faux_model();
        model.name = "modèle \u{2028} \"faux\" \\ \u{1}".to_string();
        let model = Some(Arc::new(model));
        let odd = "é \"q\" \\ \n\t\u{1f} \u{2028} 😀 </script>".to_string();
        for (model, file, name, flags, counts) in [
            (model.clone(), None, None, false, (0, 0)),
            (model.clone(), Some("/tmp/a b/s.jsonl".to_string()), Some("name".to_string()), true, (7, 3)),
            (None, Some(odd.clone()), Some(odd.clone()), true, (usize::MAX, 1)),
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
                session_id: odd.clone(),
                session_name: name,
                auto_compaction_enabled: flags,
                message_count: counts.0,
                pending_message_count: counts.1,
            };
            let mut out = b"head:".to_vec();
            state.write_json(&mut out).unwrap();
            let expected = [&b"head:"[..], &serde_json::to_vec(&state).unwrap()].concat();
            assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(expected).unwrap());
        }
    }
}
