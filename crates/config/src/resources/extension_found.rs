//! Skills and prompt templates an extension found (pi's `resources_discover`
//! event, after `session_start`): loaded after the others, as pi extends its
//! resource loader, so a name already taken stays with its first owner
//! (reported as a collision). Their source is `extension:<name>`, their
//! scope `temporary`, their base directory the extension's.

use std::path::{Path, PathBuf};

use super::discovery::collision;
use super::skills;
use super::templates;
use super::walk::{self, Kind, SkillDirMode};
use super::{Diagnostic, Resources, Scope, SourceInfo, SourceKind};

/// pi's label of an extension file: its name without `.ts` / `.js`.
fn extension_name(extension_path: &Path) -> String {
    let base = extension_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    base.strip_suffix(".ts").or_else(|| base.strip_suffix(".js")).unwrap_or(&base).to_string()
}

impl Resources {
    /// Drop the skills and templates extensions found: a new session asks
    /// them again, as pi's replaced runtime does.
    pub fn forget_found_by_extensions(&mut self) {
        self.skills.retain(|s| s.source_info.extension.is_none());
        self.templates.retain(|t| t.source_info.extension.is_none());
    }

    /// Load the skills (`skill_paths`: files or directories) and templates
    /// (`prompt_paths`) extension `extension_path` returned; the problems
    /// found are added to the diagnostics and returned as lines.
    pub fn add_found_by_extension(
        &mut self,
        extension_path: &Path,
        skill_paths: &[PathBuf],
        prompt_paths: &[PathBuf],
    ) -> Vec<String> {
        let info = |file: &Path| SourceInfo {
            path: file.to_path_buf(),
            source: SourceKind::Local,
            scope: Scope::Temporary,
            base_dir: extension_path.parent().map(Path::to_path_buf),
            extension: Some(extension_name(extension_path)),
        };
        let mut found: Vec<Diagnostic> = Vec::new();
        for path in skill_paths {
            let files = match walk::kind(path) {
                Some(Kind::Dir) => walk::collect_skill_files(path, SkillDirMode::Pi),
                Some(Kind::File) if path.to_string_lossy().ends_with(".md") => vec![path.clone()],
                Some(_) => {
                    found.push(Diagnostic::warning("skill path is not a markdown file", path));
                    continue;
                }
                None => {
                    found.push(Diagnostic::warning("skill path does not exist", path));
                    continue;
                }
            };
            for file in files {
                let (skill, diagnostics) = skills::load_skill(&file, |_| info(&file));
                found.extend(diagnostics);
                let Some(skill) = skill else { continue };
                let key = walk::path_key(&skill.path);
                if self.skills.iter().any(|s| walk::path_key(&s.path) == key) {
                    continue;
                }
                if self.skills.iter().any(|s| s.name == skill.name) {
                    found.push(collision(format!("name \"{}\" collision", skill.name), &skill.path));
                } else {
                    self.skills.push(skill);
                }
            }
        }
        for path in prompt_paths {
            let files = match walk::kind(path) {
                Some(Kind::Dir) => walk::collect_prompt_dir_plain(path),
                Some(Kind::File) if path.to_string_lossy().ends_with(".md") => vec![path.clone()],
                _ => continue,
            };
            for file in files {
                match templates::load_template(&file, info(&file)) {
                    Ok(t) if self.templates.iter().any(|e| e.name == t.name) => {
                        found.push(collision(format!("name \"/{}\" collision", t.name), &t.path));
                    }
                    Ok(t) => self.templates.push(t),
                    Err(d) => found.push(d),
                }
            }
        }
        let lines = found.iter().map(ToString::to_string).collect();
        self.diagnostics.extend(found);
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extensions_skills_and_templates_join_after_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let skill_dir = dir.path().join("skills").join("dyn-skill");
        std::fs::create_dir_all(&skill_dir).unwrap();
        std::fs::write(skill_dir.join("SKILL.md"), "---\nname: dyn-skill\ndescription: Found\n---\n\nBody\n").unwrap();
        let prompt = dir.path().join("dyn.md");
        std::fs::write(&prompt, "---\ndescription: A template\n---\n\nSay $1.\n").unwrap();
        let extension = dir.path().join("ext").join("disc.ts");
        let mut resources = Resources::default();
        let warnings = resources.add_found_by_extension(
            &extension,
            &[dir.path().join("skills"), dir.path().join("missing")],
            &[prompt.clone(), prompt],
        );
        assert_eq!(resources.skills.len(), 1);
        assert_eq!(resources.templates.len(), 1);
        let info = resources.templates[0].source_info.command_source_info();
        assert_eq!((info.source.as_str(), info.scope.as_str()), ("extension:disc", "temporary"));
        assert_eq!(info.base_dir, Some(dir.path().join("ext").to_string_lossy().into_owned()));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("does not exist") && warnings[1].contains("collision"), "{warnings:?}");
        resources.forget_found_by_extensions();
        assert_eq!((resources.skills.len(), resources.templates.len()), (0, 0));
    }
}
