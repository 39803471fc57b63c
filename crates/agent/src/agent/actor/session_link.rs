//! The actor's side of the tools' session link (`crate::agent::session_link`):
//! the branch's `custom` entries, and custom entries appended and announced
//! as an extension's `pi.appendEntry()` appends them (one path for both).

use serde_json::Value;

use super::Agent;
use crate::agent::session_link::SessionRequest;
use crate::event::AgentEvent;
use crate::session::SessionEntry;
use crate::session::entry::KnownEntry;

impl Agent {
    pub(super) async fn session_request(&mut self, request: SessionRequest) {
        match request {
            SessionRequest::BranchCustom { custom_type, reply } => {
                let data = self
                    .session
                    .record()
                    .branch()
                    .into_iter()
                    .filter_map(|entry| match entry {
                        SessionEntry::Known(KnownEntry::Custom(c)) if c.custom_type == custom_type => {
                            Some(c.data.clone().unwrap_or(Value::Null))
                        }
                        _ => None,
                    })
                    .collect();
                let _ = reply.send(data);
            }
            SessionRequest::AppendCustom { custom_type, data, reply } => {
                let data = Some(data).filter(|d| !d.is_null());
                let _ = reply.send(self.append_announced_custom(&custom_type, data).await);
            }
        }
    }

    /// Append a `custom` entry at the leaf and announce it with
    /// `entry_appended`, as pi 1.6.0's `pi.appendEntry()` does: its id.
    pub(super) async fn append_announced_custom(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String, String> {
        let id = self.session.append_custom_entry(custom_type, data).map_err(|e| e.to_string())?;
        if let Some(entry) = self.session.record().get(&id).and_then(|e| serde_json::to_value(e).ok()) {
            self.emit(AgentEvent::EntryAppended { entry: Box::new(entry) }).await;
        }
        Ok(id)
    }
}
