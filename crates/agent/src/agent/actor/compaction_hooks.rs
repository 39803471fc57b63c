//! Extensions around a compaction, in pi's order: `session_before_compact`
//! is asked with the preparation before the summary is written (see
//! `CompactionJob::run`); once the entry is written the `session_compact`
//! handlers are awaited before `compaction_end` and the reply, and after a
//! failed or cancelled compaction the `session_compact_failed` handlers are
//! awaited after `compaction_end` and before the reply. The actor never
//! waits on them: the handlers run in a task, and the rest of the ending
//! ([`CompactionEnd`]) comes back as a message.

use serde_json::{Value, json};

use super::Agent;
use super::compacting::failure_prefix;
use crate::agent::compaction_msg::{CompactHook, CompactionEnd, CompactionMsg, CompactionState};
use crate::agent::internal::Internal;
use crate::compaction::Preparation;
use crate::error::{CoreError, ErrorKind};
use crate::event::CompactionReason;
use crate::op::Reply;

impl Agent {
    /// pi's `session_before_compact` event for `prep`, when an extension listens.
    pub(super) fn compact_hook(
        &self,
        prep: &Preparation,
        reason: CompactionReason,
        will_retry: bool,
        custom_instructions: Option<&str>,
    ) -> Option<CompactHook> {
        let extensions = self.ext.handle();
        if !extensions.listens("session_before_compact") {
            return None;
        }
        let (reserve, keep) = self.prefs.settings().compaction.tokens_for(&self.models.model().full_id());
        let record = self.session.record();
        let branch: Vec<Value> =
            record.branch_positions().iter().filter_map(|&i| serde_json::to_value(record.entry_at(i)).ok()).collect();
        let preparation = json!({
            "firstKeptEntryId": prep.first_kept_entry_id,
            "messagesToSummarize": prep.messages_to_summarize,
            "turnPrefixMessages": prep.turn_prefix_messages,
            "isSplitTurn": prep.is_split_turn,
            "tokensBefore": prep.tokens_before,
            "previousSummary": prep.previous_summary,
            "fileOps": {"read": prep.file_ops.read, "written": prep.file_ops.written, "edited": prep.file_ops.edited},
            "settings": {"enabled": self.prefs.auto_compaction(), "reserveTokens": reserve, "keepRecentTokens": keep},
        });
        let mut event = json!({"preparation": preparation, "branchEntries": branch});
        if let Some(text) = custom_instructions {
            event["customInstructions"] = json!(text);
        }
        event["reason"] = json!(reason.as_str());
        event["willRetry"] = json!(will_retry);
        Some(CompactHook { extensions: extensions.clone(), event })
    }

    /// pi's `session_compact` for the entry `entry_id`, when an extension listens.
    pub(super) fn compacted_event(
        &self,
        entry_id: &str,
        from_extension: bool,
        reason: CompactionReason,
        will_retry: bool,
    ) -> Option<Value> {
        if !self.ext.handle().listens("session_compact") {
            return None;
        }
        let entry = self.session.record().get(entry_id).and_then(|e| serde_json::to_value(e).ok());
        Some(json!({
            "type": "session_compact",
            "compactionEntry": entry,
            "fromExtension": from_extension,
            "reason": reason.as_str(),
            "willRetry": will_retry,
        }))
    }

    /// pi's `session_compact_failed` for a compaction that ended with `error`, when an extension listens.
    pub(super) fn compaction_failed_event(
        &self,
        reason: CompactionReason,
        error: &CoreError,
        from_extension: bool,
    ) -> Option<Value> {
        if !self.ext.handle().listens("session_compact_failed") {
            return None;
        }
        let aborted = error.kind == ErrorKind::Aborted;
        let mut event = json!({"type": "session_compact_failed", "reason": reason.as_str()});
        if !aborted {
            event["errorMessage"] = json!(format!("{}{}", failure_prefix(reason), error.message));
        }
        event["aborted"] = json!(aborted);
        event["willRetry"] = json!(false);
        event["fromExtension"] = json!(from_extension);
        Some(event)
    }

    /// Give `event` to its subscribers, each awaited in load order, then end
    /// the compaction (at once when there is no event).
    pub(super) async fn after_compaction_hook(&mut self, event: Option<Value>, end: CompactionEnd) {
        let name = event.as_ref().and_then(|e| e.get("type")).and_then(Value::as_str).unwrap_or_default().to_string();
        let subscribers = self.ext.handle().subscribers(&name);
        let Some(event) = event.filter(|_| !subscribers.is_empty()) else {
            // Boxed: ending a compaction replays the ops held meanwhile, which may start one.
            Box::pin(self.complete_compaction(end)).await;
            return;
        };
        let internal = self.channels.internal();
        tokio::spawn(async move {
            for ext in subscribers {
                // Handler errors are reported by the extension host itself.
                let _ = ext.call(&name, event.clone(), None).await;
            }
            let _ = internal.send(Internal::Compaction(Box::new(CompactionMsg::Ended(Box::new(end))))).await;
        });
    }

    /// The end of a compaction: leave the compaction state, `compaction_end`
    /// (unless emitted already), the `compact` reply, the run's answer.
    pub(super) async fn complete_compaction(&mut self, end: CompactionEnd) {
        let manual = match end.state {
            CompactionState::Left(manual) => manual,
            CompactionState::Active => self.activity.end_compaction(),
        };
        if let Some(event) = end.event {
            self.emit(event).await;
        }
        if manual == Some(None) {
            self.tell_compaction_waiters(&end.reply);
        }
        if let Some(tag) = manual {
            self.reply(tag, end.reply).await;
            self.activity_ended().await;
        }
        if let Some(reply) = end.run_reply {
            let _ = reply.send(end.context);
        }
    }

    /// The outcome of a compaction an extension asked for (`ctx.compact()`),
    /// as `compactDone` notifications to the extensions waiting for it.
    fn tell_compaction_waiters(&mut self, reply: &Result<Reply, CoreError>) {
        for (id, ticket) in self.ext.take_compaction_waiters() {
            let Some(ext) = self.ext.handle().get(id) else { continue };
            let mut params = json!({"ticket": ticket});
            match reply {
                Ok(Reply::Compaction(r)) => {
                    // pi's `CompactionResult`, as `onComplete` receives it.
                    let mut result = json!({
                        "summary": r.summary,
                        "firstKeptEntryId": r.first_kept_entry_id,
                        "tokensBefore": r.tokens_before,
                        "estimatedTokensAfter": r.estimated_tokens_after,
                    });
                    if let Some(usage) = &r.usage {
                        result["usage"] = json!(usage);
                    }
                    if !r.details.is_null() {
                        result["details"] = r.details.clone();
                    }
                    params["result"] = result;
                }
                Ok(_) => {}
                Err(error) => params["error"] = json!(error.message),
            }
            ext.send(&json!({"type": "request", "method": "compactDone", "params": params}));
        }
    }
}
