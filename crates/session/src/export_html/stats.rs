//! Session-wide figures for the page header: models used, message counts,
//! token and cost totals over every entry of the session (all branches).

use crate::message::{AgentMessage, Usage};
use crate::session::Session;
use crate::session::entry::{KnownEntry, SessionEntry};

/// What the header shows about the whole session.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct SessionTotals {
    /// `provider/model`, in order of first appearance, without duplicates.
    pub models: Vec<String>,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub bash_executions: usize,
    pub compactions: usize,
    pub branch_summaries: usize,
    pub custom_messages: usize,
    /// Usage of assistant messages, tool-reported usage and compaction and
    /// branch-summary generation (what `get_session_stats` counts).
    pub usage: Usage,
    /// Sum of each record's total cost (its parts when no total was recorded).
    pub cost: f64,
}

impl SessionTotals {
    fn add_model(&mut self, provider: &str, model: &str) {
        let name = if provider.is_empty() { model.to_string() } else { format!("{provider}/{model}") };
        if !model.is_empty() && !self.models.contains(&name) {
            self.models.push(name);
        }
    }

    fn add_usage(&mut self, usage: &Usage) {
        self.usage.add(usage);
        let c = &usage.cost;
        self.cost += if c.total != 0.0 { c.total } else { c.input + c.output + c.cache_read + c.cache_write };
    }
}

/// Totals over every entry of `session`.
pub(super) fn session_totals(session: &Session) -> SessionTotals {
    let mut t = SessionTotals::default();
    for entry in session.entries() {
        let SessionEntry::Known(known) = entry else { continue };
        match known {
            KnownEntry::Message(m) => match m.message.known() {
                Some(AgentMessage::User(_)) => t.user_messages += 1,
                Some(AgentMessage::Assistant(a)) => {
                    t.assistant_messages += 1;
                    t.tool_calls += a.tool_calls().count();
                    t.add_model(&a.provider, &a.model);
                    t.add_usage(&a.usage);
                }
                Some(AgentMessage::ToolResult(r)) => {
                    t.tool_results += 1;
                    if let Some(u) = &r.usage {
                        t.add_usage(u);
                    }
                }
                Some(AgentMessage::BashExecution(_)) => t.bash_executions += 1,
                Some(AgentMessage::Custom(_)) => t.custom_messages += 1,
                Some(AgentMessage::CompactionSummary(_)) => t.compactions += 1,
                Some(AgentMessage::BranchSummary(_)) => t.branch_summaries += 1,
                Some(AgentMessage::System(_)) | None => {}
            },
            KnownEntry::ModelChange(c) => t.add_model(&c.provider, &c.model_id),
            KnownEntry::Compaction(c) => {
                t.compactions += 1;
                if let Some(u) = &c.usage {
                    t.add_usage(u);
                }
            }
            KnownEntry::BranchSummary(b) => {
                t.branch_summaries += 1;
                if let Some(u) = &b.usage {
                    t.add_usage(u);
                }
            }
            KnownEntry::CustomMessage(_) => t.custom_messages += 1,
            KnownEntry::ThinkingLevelChange(_) | KnownEntry::Custom(_) | KnownEntry::Label(_) => {}
            KnownEntry::SessionInfo(_) => {}
        }
    }
    t
}

/// `1234567` -> `1,234,567`.
pub(super) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars with four decimals (`$0.0123`), so that cheap sessions do not read as free.
pub(super) fn format_cost(cost: f64) -> String {
    format!("${cost:.4}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_grouped() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(1234567), "1,234,567");
    }

    #[test]
    fn cost_has_four_decimals() {
        assert_eq!(format_cost(0.0), "$0.0000");
        assert_eq!(format_cost(1.23456), "$1.2346");
    }
}
