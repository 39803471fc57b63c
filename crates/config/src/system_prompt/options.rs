//! The system prompt of pi 1.6.0's `BuildSystemPromptOptions`, the object
//! `before_agent_start` handlers see and change as `systemPromptOptions`
//! (and `ctx.getSystemPromptOptions()` returns): pi-rpc's sections built
//! from the options' fields the way pi builds its own from them — a custom
//! prompt replaces the preamble, tools, rules and docs; the declared tools
//! are the selected ones that are not hidden, listed with their snippets,
//! their guidelines and the options' `promptGuidelines` make the rules;
//! `appendSystemPrompt` is the addendum, `contextFiles` the project
//! context, `skills` the skills block (when a reader tool is selected),
//! `cwd` the last section, then the options' own `sections`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{PREAMBLE, PromptTool, Sections, docs, finish_sections, project_context, rules_with, tool_list};
use crate::resources::{SkillReader, skills_block};

/// The strings of an array (others and non-arrays: none).
fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// pi's section names: a lowercase letter, then lowercase letters, digits, `_` or `-`.
fn is_section_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The sections of the prompt `options` describe (without `forceSystemPrompt`,
/// which replaces the whole prompt). An invalid name among the options'
/// `sections` is pi's error.
pub fn sections(options: &Value, docs_root: Option<&Path>) -> Result<Sections, String> {
    let custom: Vec<(String, String)> = match options.get("sections").and_then(Value::as_object) {
        Some(map) => {
            if let Some(bad) = map.keys().find(|name| !is_section_name(name) || *name == "preamble") {
                return Err(format!("Invalid system prompt section name: {bad}"));
            }
            map.iter().filter_map(|(name, text)| Some((name.clone(), text.as_str()?.to_string()))).collect()
        }
        None => Vec::new(),
    };
    let selected = match options.get("selectedTools") {
        Some(list) => strings(Some(list)),
        None => ["read", "bash", "edit", "write"].map(str::to_string).to_vec(),
    };
    let hidden = strings(options.get("hiddenTools"));
    let declared: Vec<&String> = selected.iter().filter(|name| !hidden.contains(name)).collect();

    let mut out: Sections = Vec::new();
    match options.get("customPrompt").and_then(Value::as_str).filter(|text| !text.is_empty()) {
        Some(text) => out.push(("preamble".into(), text.to_string())),
        None => {
            let tools: Vec<PromptTool> = declared
                .iter()
                .map(|name| PromptTool {
                    name: name.to_string(),
                    snippet: options["toolSnippets"][name.as_str()].as_str().map(str::to_string),
                    guidelines: strings(options["toolGuidelines"].get(name.as_str())),
                })
                .collect();
            out.push(("preamble".into(), PREAMBLE.into()));
            out.push(("tools".into(), tool_list(&tools)));
            out.push(("rules".into(), rules_with(&tools, &strings(options.get("promptGuidelines")))));
            if let Some(root) = docs_root {
                out.push(("docs".into(), docs(root)));
            }
        }
    }
    if let Some(addendum) = options.get("appendSystemPrompt").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        out.push(("addendum".into(), addendum.to_string()));
    }
    let files: Vec<(PathBuf, String)> = options
        .get("contextFiles")
        .and_then(Value::as_array)
        .map(|files| {
            let file = |f: &Value| Some((PathBuf::from(f["path"].as_str()?), f["content"].as_str()?.to_string()));
            files.iter().filter_map(file).collect()
        })
        .unwrap_or_default();
    if !files.is_empty() {
        out.push(("project_context".into(), project_context(&files)));
    }
    let reader = if declared.iter().any(|t| *t == "read") {
        Some(SkillReader::Read)
    } else if declared.iter().any(|t| *t == "bash") {
        Some(SkillReader::Bash)
    } else {
        selected.iter().any(|t| t == "read" || t == "bash").then_some(SkillReader::Indirect)
    };
    if let Some(reader) = reader {
        let skills = options.get("skills").and_then(Value::as_array).cloned().unwrap_or_default();
        let visible: Vec<(&str, &str, String)> = skills
            .iter()
            .filter(|s| s["disableModelInvocation"] != Value::Bool(true))
            .filter_map(|s| {
                Some((
                    s["name"].as_str()?,
                    s["description"].as_str().unwrap_or_default(),
                    s["filePath"].as_str()?.to_string(),
                ))
            })
            .collect();
        if let Some(block) = skills_block(&visible, reader).map(|b| b.trim().to_string()).filter(|b| !b.is_empty()) {
            out.push(("skills".into(), block));
        }
    }
    let cwd = options.get("cwd").and_then(Value::as_str).unwrap_or_default();
    Ok(finish_sections(out, cwd, &custom))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::system_prompt::render;

    fn names(sections: &Sections) -> Vec<&str> {
        sections.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn the_options_make_each_section_as_pi_does() {
        let options = json!({
            "selectedTools": ["read", "bash", "lookup"],
            "hiddenTools": ["bash"],
            "toolSnippets": {"read": "Open a file", "bash": "Run it", "lookup": "Look a word up"},
            "toolGuidelines": {"lookup": ["Use lookup for words."], "bash": ["Hidden rule."]},
            "promptGuidelines": ["Mind the notes.", "Use lookup for words."],
            "appendSystemPrompt": "Answer in French.",
            "contextFiles": [{"path": "/p/AGENTS.md", "content": "Rules.\n"}],
            "skills": [
                {"name": "review", "description": "Reviews", "filePath": "/s/review/SKILL.md"},
                {"name": "quiet", "description": "Hidden", "filePath": "/s/q/SKILL.md", "disableModelInvocation": true}
            ],
            "sections": {"house_style": "Short sentences.", "empty": ""},
            "cwd": "C:\\work",
        });
        let s = sections(&options, None).unwrap();
        assert_eq!(
            names(&s),
            ["preamble", "tools", "rules", "addendum", "project_context", "skills", "cwd", "house_style"]
        );
        let text = render(&s);
        assert!(text.contains("- read: Open a file\n- lookup: Look a word up\n"), "{text}");
        assert!(!text.contains("Run it") && !text.contains("Hidden rule."), "hidden tools are not declared: {text}");
        assert_eq!(text.matches("- Use lookup for words.").count(), 1, "{text}");
        assert!(text.contains("- Mind the notes."), "{text}");
        assert!(text.contains("<addendum>\nAnswer in French.\n</addendum>"), "{text}");
        assert!(text.contains("path=\"/p/AGENTS.md\">\nRules.\n"), "{text}");
        assert!(text.contains("<name>review</name>") && !text.contains("quiet"), "{text}");
        assert!(text.ends_with("<cwd>\nC:/work\n</cwd>\n\n<house_style>\nShort sentences.\n</house_style>"), "{text}");
    }

    #[test]
    fn a_custom_prompt_replaces_the_preamble_tools_rules_and_docs() {
        let options =
            json!({"customPrompt": "Custom.", "selectedTools": ["bash"], "toolSnippets": {"bash": "x"}, "cwd": "/w"});
        let s = sections(&options, Some(Path::new("/opt"))).unwrap();
        assert_eq!(names(&s), ["preamble", "cwd"]);
        assert_eq!(render(&s), "Custom.\n\n<cwd>\n/w\n</cwd>");
    }

    #[test]
    fn a_section_of_an_invalid_name_is_refused_and_one_of_a_known_name_replaces_it() {
        for bad in ["preamble", "Big", "1st", "a b"] {
            let options = json!({"sections": {bad: "x"}, "cwd": "/w"});
            assert_eq!(sections(&options, None).unwrap_err(), format!("Invalid system prompt section name: {bad}"));
        }
        let s = sections(&json!({"sections": {"rules": "- Only this."}, "cwd": "/w"}), None).unwrap();
        assert_eq!(names(&s), ["preamble", "tools", "rules", "cwd"]);
        assert_eq!(s[2].1, "<rules>\n- Only this.\n</rules>");
    }

    #[test]
    fn skills_need_a_reader_tool_and_name_none_when_it_is_hidden() {
        let skill = json!([{"name": "review", "description": "Reviews", "filePath": "/s/SKILL.md"}]);
        let without = sections(&json!({"selectedTools": ["edit"], "skills": skill, "cwd": "/w"}), None).unwrap();
        assert!(!names(&without).contains(&"skills"));
        let hidden = json!({"selectedTools": ["read"], "hiddenTools": ["read"], "skills": skill, "cwd": "/w"});
        let text = render(&sections(&hidden, None).unwrap());
        assert!(text.contains("Load a skill's file when the task matches its description."), "{text}");
    }
}
