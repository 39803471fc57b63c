//! pi's prompt expansion for an SDK session inside an extension (the `lib`
//! function `expandInput`): `/skill:name args` then `/template args`, by the
//! same code that expands the top-level session's input
//! ([`crate::resources::expand_input`]), over the skills and templates the
//! session's resource loader holds.
//!
//! `{text, skills: [{name, filePath, baseDir}], prompts: [{name, content}]}`
//! answers `{text, error?: {path, message}}`: `error` when a known skill's
//! file could not be read (the text is then left as typed, and pi reports
//! `skill_expansion` to the session's extensions).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::resources::{Resources, Scope, Skill, SourceInfo, SourceKind, Template};

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn list<'a>(request: &'a Value, key: &str) -> &'a [Value] {
    request.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Where a loader's resource came from does not change its expansion.
fn source_info(path: &str) -> SourceInfo {
    SourceInfo {
        path: PathBuf::from(path),
        source: SourceKind::Local,
        scope: Scope::Temporary,
        base_dir: None,
        extension: None,
    }
}

/// The loader's skills and templates as pi-rpc's resources, in the loader's order.
fn resources_of(request: &Value) -> Resources {
    let skills = list(request, "skills")
        .iter()
        .filter(|s| !text_of(s, "name").is_empty())
        .map(|s| Skill {
            name: text_of(s, "name").to_string(),
            description: text_of(s, "description").to_string(),
            path: PathBuf::from(text_of(s, "filePath")),
            base_dir: PathBuf::from(text_of(s, "baseDir")),
            disable_model_invocation: false,
            source_info: source_info(text_of(s, "filePath")),
        })
        .collect();
    let templates = list(request, "prompts")
        .iter()
        .filter(|t| !text_of(t, "name").is_empty())
        .map(|t| Template {
            name: text_of(t, "name").to_string(),
            description: text_of(t, "description").to_string(),
            argument_hint: None,
            content: text_of(t, "content").to_string(),
            path: PathBuf::from(text_of(t, "filePath")),
            source_info: source_info(text_of(t, "filePath")),
        })
        .collect();
    Resources { templates, skills, ..Resources::default() }
}

/// pi's expansion of one input of an SDK session.
pub(crate) fn expand(request: &Value) -> Result<Value, String> {
    let text = request.get("text").and_then(Value::as_str).ok_or("expandInput: text is required")?;
    let expanded = crate::resources::expand_input(text, &resources_of(request));
    let mut out = json!({"text": expanded.text});
    if let Some(error) = expanded.error {
        out["error"] = json!({"path": error.path.display().to_string(), "message": error.message});
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_then_templates_expand_as_the_top_level_session_does() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("x/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        std::fs::write(&skill, "---\nname: x\ndescription: X.\n---\n\nDo x.\n").unwrap();
        let request = |text: &str| {
            json!({
                "text": text,
                "skills": [{"name": "x", "filePath": skill, "baseDir": skill.parent().unwrap()},
                           {"name": "gone", "filePath": dir.path().join("gone/SKILL.md"), "baseDir": dir.path()}],
                "prompts": [{"name": "t", "content": "A $1, B $2, all $@."}],
            })
        };
        let answer = |text: &str| expand(&request(text)).unwrap();
        assert_eq!(answer("/t one 'two three'")["text"], "A one, B two three, all one two three.");
        let block = format!(
            "<skill name=\"x\" location=\"{}\">\nReferences are relative to {}.\n\nDo x.\n</skill>",
            skill.display(),
            skill.parent().unwrap().display()
        );
        assert_eq!(answer("/skill:x  go  ")["text"], format!("{block}\n\ngo"));
        assert_eq!(answer("/skill:x")["text"], block);
        for kept in ["/nobody here", "plain /t", "/skill:nobody"] {
            assert_eq!(answer(kept), json!({"text": kept}));
        }
        let unreadable = answer("/skill:gone now");
        assert_eq!(unreadable["text"], "/skill:gone now");
        assert!(unreadable["error"]["message"].as_str().unwrap().starts_with("ENOENT"), "{unreadable}");
        assert!(expand(&json!({})).is_err());
    }
}
