//! pi's `DefaultResourceLoader` discovery for an extension (the `lib`
//! function `discoverResources`): the skills, prompt templates, context files
//! and system-prompt files pi-rpc finds for a working directory and agent
//! directory, found by the same code as its own session's, and answered as
//! pi's objects (`Skill`, `PromptTemplate`, `{path, content}`, diagnostics
//! `{type, message, path}`).
//!
//! `{cwd, agentDir, projectTrusted?, packages?, noSkills?, noPromptTemplates?,
//! noContextFiles?, additionalSkillPaths?, additionalPromptTemplatePaths?}`
//! answers `{skills, skillDiagnostics, prompts, promptDiagnostics,
//! agentsFiles, systemPromptPath?, appendSystemPromptPath?, projectTrusted,
//! packageThemes, packageExtensions, installFailures}`; with `packages` the
//! settings' pi packages are resolved by pi-rpc's package manager (the one
//! its own session loads them with) and their resources included.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use pi_extensions::packages::{Kind, PackageManager, Resolved};

use crate::resources::{Diagnostic, DiagnosticKind, ResourceOptions, Resources, SourceInfo, SourceKind};

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

/// pi's `sourceInfo` of a package's resource `path`: the metadata of the
/// package resource that is `path` or holds it (a skill directory holds its `SKILL.md`).
fn package_source_info(path: &Path, resolved: &Resolved) -> Option<Value> {
    let all = || resolved.extensions.iter().chain(&resolved.skills).chain(&resolved.prompts).chain(&resolved.themes);
    let resource = all().find(|r| r.path == path).or_else(|| all().find(|r| path.starts_with(&r.path)))?;
    let mut info = json!({
        "path": path.display().to_string(),
        "source": resource.package,
        "scope": resource.scope.as_str(),
        "origin": "package",
    });
    if let Some(dir) = &resource.base_dir {
        info["baseDir"] = json!(dir.display().to_string());
    }
    Some(info)
}

/// The enabled resources of one kind of the settings' packages, `{path, sourceInfo}` each.
fn package_files(resolved: &Resolved, kind: Kind) -> Value {
    resolved
        .enabled(kind)
        .iter()
        .map(|path| json!({"path": path.display().to_string(), "sourceInfo": package_source_info(path, resolved)}))
        .collect()
}

/// A discovered skill's or template's `sourceInfo`: its package's when a package brought it.
fn source_info_of(info: &SourceInfo, resolved: Option<&Resolved>) -> Value {
    let of_package = (info.source == SourceKind::Package).then_some(resolved).flatten();
    of_package.and_then(|r| package_source_info(&info.path, r)).unwrap_or_else(|| source_info_json(info))
}

/// Discover as pi's `DefaultResourceLoader.reload()` does; with `packages`,
/// the settings' pi packages are resolved (installed when missing, as pi
/// does) and their skills and templates found with the others, their enabled
/// themes and extensions answered as `packageThemes`, `packageExtensions`
/// (`{path, sourceInfo}`), and `installFailures`.
pub(crate) fn discover(options: &Value) -> Result<Value, String> {
    let here = std::env::current_dir().unwrap_or_default();
    let cwd = absolute(options, "cwd", &here)?;
    let agent_dir = absolute(options, "agentDir", &here)?;
    let trust = options.get("projectTrusted").and_then(Value::as_bool);
    let (mut base, _) = ResourceOptions::new(&agent_dir, &cwd, trust);
    let resolved = flag(options, "packages")
        .then(|| PackageManager::new(&cwd, &agent_dir, base.project_trusted).resolve_settings());
    if let Some(resolved) = &resolved {
        base.packages.skills = resolved.enabled(Kind::Skills);
        base.packages.prompts = resolved.enabled(Kind::Prompts);
    }

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
                "sourceInfo": source_info_of(&s.source_info, resolved.as_ref()),
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
                "sourceInfo": source_info_of(&t.source_info, resolved.as_ref()),
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
    let failures: Vec<Value> = resolved
        .iter()
        .flat_map(|r| &r.failures)
        .map(|f| json!({"source": f.source, "message": f.message, "warning": f.description()}))
        .collect();
    let (themes, extensions) = match &resolved {
        Some(r) => (package_files(r, Kind::Themes), package_files(r, Kind::Extensions)),
        None => (json!([]), json!([])),
    };
    Ok(json!({
        "packageThemes": themes,
        "packageExtensions": extensions,
        "installFailures": failures,
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

/// pi's settings-array rules for the SDK loader's extensions and themes:
/// `{entries, base, files?, auto?}` answers `{plain, enabled}`, the plain
/// entries (paths to look in) and the `files` the entries leave enabled
/// (`auto`: files of an auto-discovered directory, only `!`/`+`/`-` count).
pub fn settings_enabled(args: &Value) -> Result<Value, String> {
    let strings = |key: &str| -> Vec<String> {
        args[key]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    let entries = strings("entries");
    let files: Vec<PathBuf> = strings("files").into_iter().map(PathBuf::from).collect();
    let base = PathBuf::from(args["base"].as_str().unwrap_or_default());
    let auto = args["auto"].as_bool().unwrap_or(false);
    let enabled = crate::resources::discovery::settings_enabled(&files, &entries, &base, auto);
    let enabled: Vec<String> = enabled.iter().map(|p| p.display().to_string()).collect();
    Ok(json!({ "plain": crate::resources::discovery::plain_entries(&entries), "enabled": enabled }))
}

/// pi's listing of a resource directory for the SDK loader, its ignore files
/// (`.gitignore`, `.ignore`, `.fdignore`) honoured: `{dir, suffix}` answers
/// `{files}`, the files under `dir` whose name ends with `suffix` (a settings
/// entry naming a directory); `{dir}` answers `{children: [{path, dir}]}`,
/// its direct children (an auto-discovered directory).
pub fn resource_dir(args: &Value) -> Result<Value, String> {
    let dir = PathBuf::from(args["dir"].as_str().ok_or("resourceDir: dir is required")?);
    if let Some(suffix) = args["suffix"].as_str() {
        let files = crate::resources::walk::collect_files_recursive(&dir, suffix);
        let files: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        return Ok(json!({ "files": files }));
    }
    let children: Vec<Value> = crate::resources::walk::visible_children(&dir)
        .into_iter()
        .map(|(path, is_dir)| json!({"path": path.display().to_string(), "dir": is_dir}))
        .collect();
    Ok(json!({ "children": children }))
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

    #[test]
    fn the_settings_packages_bring_their_resources_with_pis_source_info() {
        let root = tempfile::tempdir().unwrap();
        let (agent, cwd, pkg) = (root.path().join("agent"), root.path().join("proj"), root.path().join("pkg"));
        write(&agent.join("settings.json"), &json!({"packages": [pkg]}).to_string());
        write(
            &agent.join("skills/mine/SKILL.md"),
            "---
description: Mine.
---
Body
",
        );
        write(&pkg.join("package.json"), r#"{"name": "pkg"}"#);
        write(
            &pkg.join("skills/theirs/SKILL.md"),
            "---
description: Theirs.
---
Body
",
        );
        write(&pkg.join("prompts/hello.md"), "Hello $1\n");
        write(&pkg.join("themes/t.json"), "{}");
        write(&pkg.join("extensions/e.ts"), "export default () => {};\n");
        let ask = |packages: bool| discover(&json!({"cwd": cwd, "agentDir": agent, "packages": packages})).unwrap();
        let found = ask(true);
        let names: Vec<&str> = found["skills"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
        assert_eq!(names, ["mine", "theirs"]);
        let info = |path: PathBuf| {
            json!({"path": path.display().to_string(), "source": pkg.display().to_string(), "scope": "user",
                   "origin": "package", "baseDir": pkg.display().to_string()})
        };
        assert_eq!(found["skills"][1]["sourceInfo"], info(pkg.join("skills/theirs/SKILL.md")));
        assert_eq!(found["prompts"][0]["sourceInfo"], info(pkg.join("prompts/hello.md")));
        let file = |p: PathBuf| json!([{"path": p.display().to_string(), "sourceInfo": info(p)}]);
        assert_eq!(found["packageThemes"], file(pkg.join("themes/t.json")));
        assert_eq!(found["packageExtensions"], file(pkg.join("extensions/e.ts")));
        // Without `packages` (context files only), the settings' packages are left alone.
        let plain = ask(false);
        assert_eq!(plain["skills"].as_array().unwrap().len(), 1);
        assert_eq!(plain["packageThemes"], json!([]));
    }
}
