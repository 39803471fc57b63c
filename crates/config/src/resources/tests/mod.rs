//! Unit tests of the resources module, with a temporary agent dir, home and
//! project per test.

use std::fs;
use std::path::{Path, PathBuf};

use super::{ResourceOptions, ResourceSettings, Resources};

mod args;
mod discovery;
mod reference;
mod skills;
mod templates;

/// A scratch layout: `<tmp>/agent`, `<tmp>/home`, `<tmp>/proj`.
pub(super) struct Fx {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub agent: PathBuf,
    pub home: PathBuf,
    pub cwd: PathBuf,
}

impl Fx {
    pub fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let (agent, home, cwd) = (root.join("agent"), root.join("home"), root.join("proj"));
        for d in [&agent, &home, &cwd] {
            fs::create_dir_all(d).unwrap();
        }
        Fx { _dir: dir, root, agent, home, cwd }
    }

    /// Write `content` at `path` (absolute), creating parent directories.
    pub fn write(&self, path: impl AsRef<Path>, content: &str) -> PathBuf {
        let path = path.as_ref().to_path_buf();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }

    /// Options with a trusted project, no settings, no command-line paths.
    pub fn options(&self) -> ResourceOptions {
        ResourceOptions {
            agent_dir: self.agent.clone(),
            cwd: self.cwd.clone(),
            home_dir: self.home.clone(),
            extra_template_paths: Vec::new(),
            extra_skill_paths: Vec::new(),
            no_templates: false,
            no_skills: false,
            user_settings: ResourceSettings::default(),
            project_settings: ResourceSettings::default(),
            project_trusted: true,
            enable_skill_commands: true,
            packages: Default::default(),
        }
    }

    pub fn discover(&self, options: &ResourceOptions) -> Resources {
        Resources::discover(options).0
    }

    pub fn skill(&self, dir: impl AsRef<Path>, name: &str, description: &str) -> PathBuf {
        self.write(
            dir.as_ref().join("SKILL.md"),
            &format!("---\nname: {name}\ndescription: {description}\n---\n{name} body\n"),
        )
    }
}

pub(super) fn names_of_templates(r: &Resources) -> Vec<&str> {
    r.templates.iter().map(|t| t.name.as_str()).collect()
}

pub(super) fn names_of_skills(r: &Resources) -> Vec<&str> {
    r.skills.iter().map(|s| s.name.as_str()).collect()
}

pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
