//! Session statistics and the context-usage estimate.

use super::Agent;
use crate::compaction::estimate;
use crate::message::{AgentMessage, Usage};
use crate::op::{ContextUsageStats, SessionStats, TokenTotals};
use crate::session::SessionEntry;
use crate::session::entry::KnownEntry;

impl Agent {
    /// Context tokens in use: the last reply's usage plus an estimate of what came after.
    pub(super) fn context_tokens(&self) -> Option<u64> {
        if self.session.is_usage_unknown() || crate::compaction::awaiting_usage(self.session.record()) {
            return None;
        }
        // pi's estimate: the last usable reply's usage plus the messages after
        // it; without one, everything including the system prompt.
        // pi 1.6.0 counts the system prompt once it is part of the
        // conversation (from the first prompt on): an empty session is 0.
        if self.session.messages().is_empty() {
            return Some(0);
        }
        // Only the messages from the last usable reply on are read.
        let tail = self.session.messages().tail_from_last(|m| estimate::valid_usage(m).is_some());
        let (tokens, anchor) = estimate::estimate_context(&tail);
        // The system messages are the prompt once recorded; before, a stand-in.
        // (No usable reply: the tail is the whole conversation.)
        let declared = tail.iter().any(|m| matches!(m, crate::message::AgentMessage::System(_)));
        Some(match anchor {
            Some(_) => tokens,
            None if declared => tokens,
            None => tokens + estimate::estimate_system_prompt(&self.system_prompt(), &self.active_tool_set().1),
        })
    }

    pub(super) fn context_usage(&self) -> Option<ContextUsageStats> {
        let window = self.models.model().context_window;
        if window == 0 {
            return None;
        }
        let tokens = self.context_tokens();
        Some(ContextUsageStats {
            tokens,
            context_window: window,
            percent: tokens.map(|t| t as f64 / window as f64 * 100.0),
        })
    }

    /// Counts and totals over every entry of the session (all branches,
    /// history before a compaction included), as pi 1.6 computes them.
    pub(super) fn session_stats(&self) -> SessionStats {
        let mut user = 0;
        let mut assistant = 0;
        let mut tool_calls = 0;
        let mut tool_results = 0;
        let mut total_messages = 0;
        let mut usage = Usage::default();
        for entry in self.session.record().entries() {
            match entry {
                SessionEntry::Known(KnownEntry::Message(e)) => {
                    total_messages += 1;
                    match e.message.known() {
                        Some(AgentMessage::User(_)) => user += 1,
                        Some(AgentMessage::Assistant(a)) => {
                            assistant += 1;
                            tool_calls += a.tool_calls().count();
                            usage.add(&a.usage);
                        }
                        Some(AgentMessage::ToolResult(t)) => {
                            tool_results += 1;
                            if let Some(u) = &t.usage {
                                usage.add(u);
                            }
                        }
                        _ => {}
                    }
                }
                SessionEntry::Unknown(v) if entry.type_name() == "usage" => {
                    if let Some(u) = v.get("usage").and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok()) {
                        usage.add(&u);
                    }
                }
                SessionEntry::Known(KnownEntry::Compaction(c)) => {
                    if let Some(u) = &c.usage {
                        usage.add(u);
                    }
                }
                SessionEntry::Known(KnownEntry::BranchSummary(b)) => {
                    if let Some(u) = &b.usage {
                        usage.add(u);
                    }
                }
                _ => {}
            }
        }
        SessionStats {
            session_file: self.session.record().file_path().map(|p| p.display().to_string()),
            session_id: self.session.record().session_id().to_string(),
            user_messages: user,
            assistant_messages: assistant,
            tool_calls,
            tool_results,
            total_messages,
            tokens: TokenTotals {
                input: usage.input,
                output: usage.output,
                cache_read: usage.cache_read,
                cache_write: usage.cache_write,
                total: usage.input + usage.output + usage.cache_read + usage.cache_write,
            },
            cost: usage.cost.total,
            context_usage: self.context_usage(),
        }
    }
}
