//! A command's `ctx.navigateTree()` (pi 1.6.0's tree navigation, which RPC
//! mode only reaches from extension commands): the `session_before_tree`
//! hooks see pi's preparation (the abandoned entries back to the common
//! ancestor) and may cancel, give the summary, or change the instructions
//! and label; with `summarize` and no summary from a hook, the current model
//! writes one (pi's branch summarization, off the actor); then the leaf
//! moves (a user or custom message: to its parent), a `branch_summary` is
//! written when one is wanted, the label is attached, and `session_tree`
//! tells every subscribed extension.

use super::Agent;
use crate::agent::extension_session_op_state::{ExtReply, Navigation};
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use crate::compaction::branch::{BranchEntry, BranchInput, prepare_branch, summarize_branch};
use crate::compaction::{SummaryError, SummaryOutput};
use crate::event::AgentEvent;
use crate::extensions::CallError;
use crate::session::SessionEntry;
use crate::session::entry::KnownEntry;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A string member of the hooks' decision, else the command's own value.
fn decided_text(decision: &Value, key: &str, own: &Option<String>) -> Option<String> {
    match decision.get(key) {
        Some(Value::String(v)) => Some(v.clone()),
        _ => own.clone(),
    }
}

impl Agent {
    /// `{targetId, summarize?, customInstructions?, replaceInstructions?, label?}` of extension command.
    pub(super) async fn extension_navigate_tree(&mut self, p: &Value, reply: ExtReply) {
        let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_string);
        // pi's prompt reserves the session from its `input` hooks on.
        if self.activity.is_running() || self.ext.prompt_deciding() {
            let _ =
                reply.send(Err("Wait for the current response to finish before navigating the session tree.".into()));
            return;
        }
        if self.activity.work().is_compacting() {
            let error =
                "Wait for the current compaction or tree navigation to finish before navigating the session tree.";
            let _ = reply.send(Err(error.into()));
            return;
        }
        let Some(target_id) = text("targetId") else {
            let _ = reply.send(Err("\"targetId\" is required".into()));
            return;
        };
        let record = self.session.record();
        let old_leaf_id = record.leaf_id().map(str::to_string);
        if old_leaf_id.as_deref() == Some(target_id.as_str()) {
            let _ = reply.send(Ok(json!({"cancelled": false})));
            return;
        }
        if record.get(&target_id).is_none() {
            let _ = reply.send(Err(format!("Entry {target_id} not found")));
            return;
        }
        // From the old leaf back to the deepest entry both paths share.
        let target_path: Vec<String> =
            record.branch_from(&target_id).iter().filter_map(|e| e.id().map(str::to_string)).collect();
        let old_path = old_leaf_id.as_deref().map(|leaf| record.branch_from(leaf)).unwrap_or_default();
        let common = target_path.iter().rev().find(|id| old_path.iter().any(|e| e.id() == Some(id.as_str()))).cloned();
        let abandoned_from = old_path.iter().position(|e| e.id().map(str::to_string) == common).map_or(0, |i| i + 1);
        let entries_to_summarize: Vec<Value> =
            old_path[abandoned_from..].iter().filter_map(|e| serde_json::to_value(e).ok()).collect();
        let mut nav = Navigation {
            target_id,
            old_leaf_id,
            summarize: p.get("summarize").and_then(Value::as_bool) == Some(true),
            custom_instructions: text("customInstructions"),
            replace_instructions: p.get("replaceInstructions").and_then(Value::as_bool),
            label: text("label"),
            entries_to_summarize,
            hooked: false,
            reply,
        };
        let subscribers = self.ext.handle().subscribers("session_before_tree");
        if subscribers.is_empty() {
            return self.finish_navigation(nav, Value::Null).await;
        }
        let mut preparation = json!({
            "targetId": nav.target_id,
            "oldLeafId": nav.old_leaf_id,
            "commonAncestorId": common,
            "entriesToSummarize": nav.entries_to_summarize,
            "userWantsSummary": nav.summarize,
        });
        if let Some(c) = &nav.custom_instructions {
            preparation["customInstructions"] = json!(c);
        }
        if let Some(r) = nav.replace_instructions {
            preparation["replaceInstructions"] = json!(r);
        }
        if let Some(l) = &nav.label {
            preparation["label"] = json!(l);
        }
        nav.hooked = true;
        self.ext.tree_hooks_started();
        let internal = self.channels.internal();
        let params = json!({"type": "session_before_tree", "preparation": preparation});
        tokio::spawn(async move {
            // As pi composes them: the last handler that answers decides; a cancel ends the round.
            let mut decision = Value::Null;
            for ext in subscribers {
                match ext.call("session_before_tree", params.clone(), None).await {
                    Ok(v) if v.get("cancel").and_then(Value::as_bool) == Some(true) => {
                        decision = v;
                        break;
                    }
                    Ok(v) if v.is_object() => decision = v,
                    Ok(_) | Err(CallError::Dead(_) | CallError::Cancelled) => {}
                    Err(CallError::Failed(error)) => {
                        let event = AgentEvent::ExtensionError {
                            extension_path: ext.path_string(),
                            event: "session_before_tree".to_string(),
                            error,
                        };
                        let _ = internal.send(Internal::Event(Box::new(event))).await;
                    }
                }
            }
            let done = ExtSignal::TreeHookDone { nav: Box::new(nav), decision };
            let _ = internal.send(Internal::Extension(Box::new(done))).await;
        });
    }

    /// Navigate as the hooks decided (after the model's summary, when one
    /// is needed), then answer the extension.
    pub(super) async fn finish_navigation(&mut self, nav: Navigation, decision: Value) {
        if nav.hooked {
            self.ext.hook_done();
        }
        let cancelled = decision.get("cancel").and_then(Value::as_bool) == Some(true);
        let hook_summary = nav.summarize && decision.get("summary").is_some_and(Value::is_object);
        if nav.summarize && !cancelled && !hook_summary && !nav.entries_to_summarize.is_empty() {
            let input = self.branch_input(&nav);
            if !input.messages.is_empty() {
                return self.start_branch_summary(nav, decision, input);
            }
        }
        self.complete_navigation(nav, decision, None);
    }

    /// The model's summary came back: navigate with it (an abort cancels,
    /// a failure is the command's error).
    pub(super) async fn summarized_navigation(
        &mut self,
        nav: Navigation,
        decision: Value,
        summary: Result<SummaryOutput, SummaryError>,
    ) {
        self.activity.end_compaction();
        match summary {
            Ok(output) => self.complete_navigation(nav, decision, Some(output)),
            Err(SummaryError::Aborted) => {
                let _ = nav.reply.send(Ok(json!({"cancelled": true})));
            }
            Err(SummaryError::Failed(error)) => {
                let _ = nav.reply.send(Err(error.message));
            }
        }
        self.activity_ended().await;
    }

    /// Navigate, then answer once every extension's `session_tree`
    /// handlers ran (pi awaits them before `navigateTree()` resolves).
    fn complete_navigation(&mut self, nav: Navigation, decision: Value, generated: Option<SummaryOutput>) {
        let outcome = self.navigate(&nav, &decision, generated);
        let event = match &outcome {
            Ok(Some(payload)) => Some(payload.clone()),
            _ => None,
        };
        let subscribers = event.as_ref().map(|_| self.ext.handle().subscribers("session_tree")).unwrap_or_default();
        let answer = outcome.map(|done| json!({"cancelled": done.is_none()}));
        let (Some(event), false) = (event, subscribers.is_empty()) else {
            let _ = nav.reply.send(answer);
            return;
        };
        let reply = nav.reply;
        tokio::spawn(async move {
            for ext in subscribers {
                // Handler errors are reported by the extension host itself.
                let _ = ext.call("session_tree", event.clone(), None).await;
            }
            let _ = reply.send(answer);
        });
    }

    /// The abandoned entries' messages within the model's budget (pi's `prepareBranchEntries`).
    fn branch_input(&self, nav: &Navigation) -> BranchInput {
        let record = self.session.record();
        let entries: Vec<BranchEntry> = nav
            .entries_to_summarize
            .iter()
            .filter_map(|e| e.get("id").and_then(Value::as_str))
            .map(|id| BranchEntry {
                kind: record.get(id).map(|e| e.type_name().to_string()).unwrap_or_default(),
                messages: record.summary_messages_of(id),
                summary_details: match record.get(id) {
                    Some(SessionEntry::Known(KnownEntry::BranchSummary(b))) => {
                        b.details.clone().map(|d| (d, b.from_hook.unwrap_or(false)))
                    }
                    _ => None,
                },
            })
            .collect();
        let window = Some(self.models.model().context_window).filter(|w| *w > 0).unwrap_or(128_000);
        // The settings' `branchSummary.reserveTokens` (pi's default 16,384).
        let reserve = self.prefs.settings().branch_summary_reserve_tokens;
        prepare_branch(&entries, window.saturating_sub(reserve))
    }

    /// Ask the current model for the summary in a task; the navigation
    /// counts as a compaction meanwhile (pi: `isCompacting`), so `abort`
    /// cancels it and client ops wait.
    fn start_branch_summary(&mut self, nav: Navigation, decision: Value, input: BranchInput) {
        let Some(provider) = self.models.provider() else {
            let _ = nav.reply.send(Err("No model available for summarization".to_string()));
            return;
        };
        let summarizer = self.summarizer(provider);
        let custom = decided_text(&decision, "customInstructions", &nav.custom_instructions);
        let replace = match decision.get("replaceInstructions") {
            Some(Value::Bool(r)) => *r,
            _ => nav.replace_instructions == Some(true),
        };
        let cancel = CancellationToken::new();
        self.activity.begin_compaction(cancel.clone(), None);
        let emitter = self.channels.emitter();
        tokio::spawn(async move {
            let summary = summarize_branch(&input, custom.as_deref(), replace, &summarizer, &emitter, &cancel).await;
            let done = ExtSignal::TreeSummaryDone { nav: Box::new(nav), decision, summary: Box::new(summary) };
            emitter.send(Internal::Extension(Box::new(done))).await;
        });
    }

    /// Move the leaf; the `session_tree` payload, or `None` when cancelled.
    fn navigate(
        &mut self,
        nav: &Navigation,
        decision: &Value,
        generated: Option<SummaryOutput>,
    ) -> Result<Option<Value>, String> {
        if decision.get("cancel").and_then(Value::as_bool) == Some(true) {
            return Ok(None);
        }
        let label = match decision.get("label") {
            Some(Value::String(l)) => Some(l.clone()),
            Some(_) => None,
            None => nav.label.clone(),
        };
        let hook_summary = decision.get("summary").filter(|s| nav.summarize && s.is_object());
        // (text, details, usage, from the extension)
        let summary = if let Some(s) = hook_summary {
            let text = s.get("summary").and_then(Value::as_str).unwrap_or_default().to_string();
            let usage = s.get("usage").and_then(|u| serde_json::from_value(u.clone()).ok());
            Some((text, s.get("details").filter(|d| !d.is_null()).cloned(), usage, true))
        } else if let Some(out) = generated {
            Some((out.summary, Some(out.details), out.usage, false))
        } else if nav.summarize && !nav.entries_to_summarize.is_empty() {
            // pi's answer when the abandoned entries hold no messages.
            Some((
                "No content to summarize".to_string(),
                Some(json!({"readFiles": [], "modifiedFiles": []})),
                None,
                false,
            ))
        } else {
            None
        };
        let record = self.session.record();
        let target = record.get(&nav.target_id).ok_or_else(|| format!("Entry {} not found", nav.target_id))?;
        // A user or custom message is re-sent from its parent; anything else becomes the leaf.
        let to_parent = match target {
            SessionEntry::Known(KnownEntry::Message(m)) => {
                matches!(m.message.known(), Some(crate::message::AgentMessage::User(_)))
            }
            SessionEntry::Known(KnownEntry::CustomMessage(_)) => true,
            _ => false,
        };
        let new_leaf = if to_parent { target.parent_id().map(str::to_string) } else { Some(nav.target_id.clone()) };
        let summary_entry = self
            .session
            .navigate(new_leaf.as_deref(), summary.as_ref().map(|(t, d, u, f)| (t.as_str(), d.clone(), u.clone(), *f)))
            .map_err(|e| e.to_string())?;
        // pi restores the loadout the branch recorded before `session_tree`.
        self.restore_tools_after_navigation();
        if let Some(label) = label.filter(|l| !l.is_empty()) {
            let on = summary_entry.as_deref().unwrap_or(&nav.target_id).to_string();
            self.session.label(&on, Some(&label)).map_err(|e| e.to_string())?;
        }
        let mut payload = json!({
            "type": "session_tree",
            "newLeafId": self.session.record().leaf_id(),
            "oldLeafId": nav.old_leaf_id,
        });
        if let Some(id) = &summary_entry {
            let entry = self.session.record().get(id).and_then(|e| serde_json::to_value(e).ok());
            payload["summaryEntry"] = entry.unwrap_or(Value::Null);
            payload["fromExtension"] = json!(summary.as_ref().is_some_and(|s| s.3));
        }
        Ok(Some(payload))
    }
}
