//! pi's `DefaultResourceLoader` discovery for an extension (the `lib`
//! function `discoverResources`): the skills, prompt templates, context files
//! and system-prompt files pi-rpc finds for a working directory and agent
//! directory, found by the same code as its own session's, and answered as
//! pi's objects (`Skill`, `PromptTemplate`, `{path, content}`, diagnostics
//! `{type, message, path}`).
//!
//! `{cwd, agentDir, projectTrusted?, noSkills?, noPromptTemplates?,
//! noContextFiles?, additionalSkillPaths?, additionalPromptTemplatePaths?}`
//! answers `{skills, skillDiagnostics, prompts, promptDiagnostics,
//! agentsFiles, systemPromptPath?, appendSystemPromptPath?, projectTrusted}`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::resources::{Diagnostic, DiagnosticKind, ResourceOptions, Resources, SourceInfo};

/// pi's `sourceInfo` of a discovered resource.
fn source_info_json(info: &SourceInfo) -> Value {
    let mut out = json!({
        "path": info.path.display().to_string(),
        "source": info.source.as_str(),
        "scope": info.scope.as_str(),
        "origin": info.origin(),
    });
    if let Some(dir) = &info.base_dir {
        out["baseDir"] = json!(dir.display().to_string());
    }
    out
}

fn diagnostics_json(diagnostics: &[Diagnostic]) -> Value {
    diagnostics
        .iter()
        .map(|d| {
            let kind = match d.kind {
                DiagnosticKind::Warning => "warning",
                DiagnosticKind::Error => "error",
                DiagnosticKind::Collision => "collision",
            };
            json!({"type": kind, "message": d.message, "path": d.path.display().to_string()})
        })
        .collect()
}

fn strings(options: &Value, key: &str) -> Vec<String> {
    options
        .get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn flag(options: &Value, key: &str) -> bool {
    options.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A path option made absolute against `base` (`~` expanded).
fn absolute(options: &Value, key: &str, base: &Path) -> Result<PathBuf, String> {
    let raw =
        options.get(key).and_then(Value::as_str).ok_or_else(|| format!("discoverResources: {key} is required"))?;
    let path = crate::config::expand_home(Path::new(raw));
    Ok(if path.is_absolute() { path } else { base.join(path) })
}

/// Discover as pi's `DefaultResourceLoader.reload()` does (no packages, no extensions).
pub(crate) fn discover(options: &Value) -> Result<Value, String> {
    let here = std::env::current_dir().unwrap_or_default();
    let cwd = absolute(options, "cwd", &here)?;
    let agent_dir = absolute(options, "agentDir", &here)?;
    let trust = options.get("projectTrusted").and_then(Value::as_bool);
    let (base, _) = ResourceOptions::new(&agent_dir, &cwd, trust);

    // Skills and templates discovered apart, so that each keeps its own diagnostics.
    let mut skills_only = base.clone();
    skills_only.no_templates = true;
    skills_only.no_skills = flag(options, "noSkills");
    skills_only.extra_skill_paths = strings(options, "additionalSkillPaths");
    let (skills, _) = Resources::discover(&skills_only);
    let mut templates_only = base.clone();
    templates_only.no_skills = true;
    templates_only.no_templates = flag(options, "noPromptTemplates");
    templates_only.extra_template_paths = strings(options, "additionalPromptTemplatePaths");
    let (templates, _) = Resources::discover(&templates_only);

    let skills_json: Vec<Value> = skills
        .skills
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "description": s.description,
                "filePath": s.path.display().to_string(),
                "baseDir": s.base_dir.display().to_string(),
                "sourceInfo": source_info_json(&s.source_info),
                "disableModelInvocation": s.disable_model_invocation,
            })
        })
        .collect();
    let prompts_json: Vec<Value> = templates
        .templates
        .iter()
        .map(|t| {
            let mut out = json!({
                "name": t.name,
                "description": t.description,
                "content": t.content,
                "sourceInfo": source_info_json(&t.source_info),
                "filePath": t.path.display().to_string(),
            });
            if let Some(hint) = &t.argument_hint {
                out["argumentHint"] = json!(hint);
            }
            out
        })
        .collect();
    let agents_files: Vec<Value> = if flag(options, "noContextFiles") {
        Vec::new()
    } else {
        crate::system_prompt::context_files(&agent_dir, &cwd)
            .into_iter()
            .map(|(path, content)| json!({"path": path.display().to_string(), "content": content}))
            .collect()
    };
    // The project's SYSTEM.md / APPEND_SYSTEM.md count only in a trusted project.
    let project = base.project_trusted.then_some(cwd.as_path());
    let system = crate::system_prompt::system_prompt_file(&agent_dir, project);
    let append = crate::system_prompt::append_system_prompt_file(&agent_dir, project);
    Ok(json!({
        "skills": skills_json,
        "skillDiagnostics": diagnostics_json(&skills.diagnostics),
        "prompts": prompts_json,
        "promptDiagnostics": diagnostics_json(&templates.diagnostics),
        "agentsFiles": agents_files,
        "systemPromptPath": system.map(|(path, _)| path.display().to_string()),
        "appendSystemPromptPath": append.map(|(path, _)| path.display().to_string()),
        "projectTrusted": base.project_trusted,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn discovery_answers_pis_objects_and_honours_trust() {
        let root = tempfile::tempdir().unwrap();
        let (agent, cwd) = (root.path().join("agent"), root.path().join("proj"));
        write(&agent.join("skills/mine/SKILL.md"), "---\ndescription: Mine.\n---\nBody\n");
        write(&cwd.join(".pi/prompts/fix.md"), "---\ndescription: Fix\nargument-hint: <x>\n---\nFix $1\n");
        write(&cwd.join("AGENTS.md"), "rules\n");
        write(&cwd.join(".pi/SYSTEM.md"), "project prompt\n");
        write(&agent.join("SYSTEM.md"), "user prompt\n");
        let ask = |trusted: bool| {
            let options = json!({"cwd": cwd, "agentDir": agent, "projectTrusted": trusted});
            discover(&options).unwrap()
        };
        let found = ask(true);
        assert_eq!(found["skills"][0]["name"], "mine");
        assert_eq!(found["skills"][0]["sourceInfo"]["scope"], "user");
        assert_eq!(found["prompts"][0]["name"], "fix");
        assert_eq!(found["prompts"][0]["argumentHint"], "<x>");
        assert_eq!(found["prompts"][0]["content"], "Fix $1");
        let agents = found["agentsFiles"].as_array().unwrap();
        assert_eq!(agents.last().unwrap()["content"], "rules\n");
        assert_eq!(found["systemPromptPath"], cwd.join(".pi/SYSTEM.md").display().to_string());
        // An untrusted project's resources and SYSTEM.md do not count.
        let untrusted = ask(false);
        assert_eq!(untrusted["prompts"], json!([]));
        assert_eq!(untrusted["systemPromptPath"], agent.join("SYSTEM.md").display().to_string());
        assert!(discover(&json!({"cwd": "/"})).is_err(), "agentDir is required");
    }
}
