//! `before_agent_start`'s `systemPromptOptions` changes, applied to the
//! run's system prompt. The host shows handlers pi's structured options and
//! reports what they changed; pi-rpc carries the changes to the next
//! extension (they chain as in pi) and, at the end, renders them onto its
//! prompt: custom `sections` as pi renders them (`<name>\ncontent\n</name>`,
//! after the rest), added `promptGuidelines` as rule bullets,
//! `appendSystemPrompt` as a last paragraph, and `forceSystemPrompt` as the
//! whole prompt. `selectedTools` is applied by the host (`setActiveTools`).

use serde_json::{Map, Value};

/// Merge one extension's `changes` into the run's accumulated `overrides`.
pub(super) fn merge(overrides: &mut Map<String, Value>, changes: Option<&Value>) {
    if let Some(Value::Object(changes)) = changes {
        for (key, value) in changes {
            overrides.insert(key.clone(), value.clone());
        }
    }
}

/// `prompt` with the accumulated `overrides` rendered onto it.
pub(super) fn apply(prompt: &str, overrides: &Map<String, Value>) -> String {
    if let Some(forced) = overrides.get("forceSystemPrompt").and_then(Value::as_str) {
        return forced.to_string();
    }
    let mut out = prompt.to_string();
    let rules: Vec<&str> = overrides
        .get("promptGuidelines")
        .and_then(Value::as_array)
        .map(|g| g.iter().filter_map(Value::as_str).map(str::trim).filter(|g| !g.is_empty()).collect())
        .unwrap_or_default();
    if !rules.is_empty() {
        out.push_str("\n\nAdditional rules:");
        for rule in rules {
            out.push_str("\n- ");
            out.push_str(rule);
        }
    }
    if let Some(extra) = overrides.get("appendSystemPrompt").and_then(Value::as_str).filter(|t| !t.trim().is_empty()) {
        out.push_str("\n\n");
        out.push_str(extra.trim_end());
    }
    if let Some(Value::Object(sections)) = overrides.get("sections") {
        for (name, content) in sections {
            let Some(content) = content.as_str().filter(|c| !c.is_empty()) else { continue };
            if name == "preamble" || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                continue;
            }
            out.push_str(&format!("\n\n<{name}>\n{content}\n</{name}>"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn overrides(v: Value) -> Map<String, Value> {
        let mut m = Map::new();
        merge(&mut m, Some(&v));
        m
    }

    #[test]
    fn sections_guidelines_and_appended_text_are_rendered_after_the_prompt() {
        let o = overrides(json!({
            "sections": {"tool_guidance": "- Use read.", "empty": "", "bad name": "x"},
            "promptGuidelines": ["Be brief", " "],
            "appendSystemPrompt": "Last words.\n",
        }));
        assert_eq!(
            apply("Base.", &o),
            "Base.\n\nAdditional rules:\n- Be brief\n\nLast words.\n\n<tool_guidance>\n- Use read.\n</tool_guidance>"
        );
    }

    #[test]
    fn a_forced_prompt_replaces_everything_and_later_changes_win() {
        let mut o = overrides(json!({"sections": {"a": "1"}}));
        merge(&mut o, Some(&json!({"sections": {"b": "2"}})));
        assert_eq!(apply("P", &o), "P\n\n<b>\n2\n</b>");
        merge(&mut o, Some(&json!({"forceSystemPrompt": "Only this."})));
        assert_eq!(apply("P", &o), "Only this.");
        assert_eq!(apply("P", &Map::new()), "P");
    }
}
