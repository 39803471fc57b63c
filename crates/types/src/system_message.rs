//! The prompt and tools a conversation declares through its system messages
//! (pi 1.6.0's transcript model): replaying them, and the system message
//! that brings the model from what it was told to what it should have now.
//!
//! Replaying goes in order: non-empty `content` is appended to the prompt,
//! `sections` are patched by name (a new name goes last, `null` removes
//! one), `toolsRemoved` then `toolsAdded` change the tool set. The prompt
//! text is the content, then each section, separated by blank lines.

use serde_json::{Map, Value};

use crate::message::{AgentMessage, SystemMessage, ToolDeclaration, ToolReference, UserContent, now_ms};

/// What the system messages of a conversation declare.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    /// Appended instructions (`content` of the system messages), in order.
    pub content: Vec<String>,
    /// Prompt sections by name, in prompt order (string values only).
    pub sections: Map<String, Value>,
    /// The tools, in first-declaration order.
    pub tools: Vec<ToolDeclaration>,
    /// The timestamp of the first system message.
    pub timestamp: Option<i64>,
}

fn content_text(content: &UserContent) -> String {
    content.text()
}

/// Replay the system messages among `messages`.
pub fn replay<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> Declared {
    let mut declared = Declared::default();
    for message in messages {
        if let AgentMessage::System(system) = message {
            declared.apply(system);
        }
    }
    declared
}

impl Declared {
    /// Apply one system message.
    pub fn apply(&mut self, message: &SystemMessage) {
        self.timestamp.get_or_insert(message.timestamp);
        let text = content_text(&message.content);
        if !text.is_empty() {
            self.content.push(text);
        }
        for (name, value) in message.sections.iter().flatten() {
            match value {
                Value::String(_) => match self.sections.get_mut(name) {
                    Some(slot) => *slot = value.clone(),
                    None => {
                        self.sections.insert(name.clone(), value.clone());
                    }
                },
                _ => {
                    self.sections.shift_remove(name);
                }
            }
        }
        for removed in message.tools_removed.iter().flatten() {
            self.tools.retain(|t| t.name != removed.name);
        }
        for added in message.tools_added.iter().flatten() {
            match self.tools.iter_mut().find(|t| t.name == added.name) {
                Some(slot) => *slot = added.clone(),
                None => self.tools.push(added.clone()),
            }
        }
    }

    /// Nothing declared yet.
    pub fn is_empty(&self) -> bool {
        self.timestamp.is_none() && self.tools.is_empty()
    }

    /// The prompt text the model has: the content, then the sections.
    pub fn prompt(&self) -> String {
        let sections = self.sections.values().filter_map(Value::as_str);
        let parts: Vec<&str> =
            self.content.iter().map(String::as_str).chain(sections).filter(|p| !p.is_empty()).collect();
        parts.join("\n\n")
    }

    /// One system message declaring all of it (pi's checkpoint, as a
    /// compaction records it); `None` when nothing is declared.
    pub fn checkpoint(&self, timestamp: i64) -> Option<SystemMessage> {
        if self.is_empty() {
            return None;
        }
        Some(SystemMessage {
            content: UserContent::Text(self.content.join("\n\n")),
            sections: (!self.sections.is_empty()).then(|| self.sections.clone()),
            timestamp,
            tools_added: (!self.tools.is_empty()).then(|| self.tools.clone()),
            tools_removed: None,
            extra: Map::new(),
        })
    }

    /// The system message that changes what is declared into `sections` and
    /// `tools`, or `None` when they are what the model already has. Sections
    /// missing from `sections` are removed; a tool whose declaration changed
    /// is removed and added again.
    pub fn update(&self, sections: &[(String, String)], tools: &[ToolDeclaration]) -> Option<SystemMessage> {
        let mut patch = Map::new();
        for (name, text) in sections {
            if self.sections.get(name).and_then(Value::as_str) != Some(text.as_str()) {
                patch.insert(name.clone(), Value::String(text.clone()));
            }
        }
        for name in self.sections.keys() {
            if !sections.iter().any(|(n, _)| n == name) {
                patch.insert(name.clone(), Value::Null);
            }
        }
        let added: Vec<ToolDeclaration> =
            tools.iter().filter(|t| !self.tools.iter().any(|d| same_declaration(d, t))).cloned().collect();
        let removed: Vec<ToolReference> = self
            .tools
            .iter()
            .filter(|d| !tools.iter().any(|t| same_declaration(d, t)))
            .map(|d| ToolReference { name: d.name.clone(), extra: Map::new() })
            .collect();
        if patch.is_empty() && added.is_empty() && removed.is_empty() {
            return None;
        }
        Some(SystemMessage {
            content: UserContent::Text(String::new()),
            sections: (!patch.is_empty()).then_some(patch),
            timestamp: now_ms(),
            tools_added: (!added.is_empty()).then_some(added),
            tools_removed: (!removed.is_empty()).then_some(removed),
            extra: Map::new(),
        })
    }
}

/// Two declarations tell the model the same thing (name, description,
/// parameters and constrained sampling; other fields are not sent).
fn same_declaration(a: &ToolDeclaration, b: &ToolDeclaration) -> bool {
    a.name == b.name
        && a.description == b.description
        && a.parameters == b.parameters
        && a.constrained_sampling == b.constrained_sampling
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}),
            constrained_sampling: None,
            extra: Map::new(),
        }
    }

    fn sections(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
    }

    #[test]
    fn the_first_update_declares_everything_and_replays_to_it() {
        let empty = Declared::default();
        let wanted = sections(&[("preamble", "P"), ("tools", "<tools>\nT\n</tools>"), ("cwd", "<cwd>\n/w\n</cwd>")]);
        let tools = vec![tool("read", "r"), tool("bash", "b")];
        let first = empty.update(&wanted, &tools).unwrap();
        assert_eq!(first.sections.as_ref().unwrap().len(), 3);
        assert_eq!(first.tools_added.as_ref().unwrap().len(), 2);
        assert!(first.tools_removed.is_none());
        let line = serde_json::to_value(AgentMessage::System(first.clone())).unwrap();
        assert_eq!(line["role"], "system");
        assert_eq!(line["content"], "");
        let declared = replay(&[AgentMessage::System(first)]);
        assert_eq!(declared.prompt(), "P\n\n<tools>\nT\n</tools>\n\n<cwd>\n/w\n</cwd>");
        assert_eq!(declared.update(&wanted, &tools), None, "nothing changed");
    }

    #[test]
    fn later_updates_patch_sections_and_tools() {
        let mut declared = Declared::default();
        let tools = vec![tool("read", "r"), tool("bash", "b")];
        declared.apply(&declared.update(&sections(&[("preamble", "P"), ("cwd", "A")]), &tools).unwrap());
        // cwd changed, skills added, bash's description changed, read gone, grep new.
        let now = sections(&[("preamble", "P"), ("cwd", "B"), ("skills", "S")]);
        let new_tools = vec![tool("bash", "b2"), tool("grep", "g")];
        let update = declared.update(&now, &new_tools).unwrap();
        assert_eq!(serde_json::to_value(&update.sections).unwrap(), json!({"cwd": "B", "skills": "S"}));
        let removed: Vec<&str> = update.tools_removed.iter().flatten().map(|t| t.name.as_str()).collect();
        let added: Vec<&str> = update.tools_added.iter().flatten().map(|t| t.name.as_str()).collect();
        assert_eq!((removed, added), (vec!["read", "bash"], vec!["bash", "grep"]));
        declared.apply(&update);
        assert_eq!(declared.prompt(), "P\n\nB\n\nS");
        assert_eq!(declared.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["bash", "grep"]);
        // A section left out is removed with null.
        let fewer = declared.update(&sections(&[("preamble", "P"), ("cwd", "B")]), &new_tools).unwrap();
        assert_eq!(serde_json::to_value(&fewer.sections).unwrap(), json!({"skills": null}));
        declared.apply(&fewer);
        assert_eq!(declared.prompt(), "P\n\nB");
    }

    #[test]
    fn content_and_checkpoints_replay_like_the_messages() {
        let line =
            json!({"role": "system", "content": "You are a coding assistant.", "toolsAdded": [], "timestamp": 5});
        let message: AgentMessage = serde_json::from_value(line).unwrap();
        let declared = replay(&[message]);
        assert_eq!(declared.prompt(), "You are a coding assistant.");
        let checkpoint = declared.checkpoint(9).unwrap();
        assert_eq!(replay(&[AgentMessage::System(checkpoint)]).prompt(), "You are a coding assistant.");
        assert_eq!(Declared::default().checkpoint(1), None);
    }
}
