//! Where the agent works ([`Workspace`]): the agent directory, the working
//! directory, the directory sessions are written to, the command line's
//! system-prompt sources, and the files of truncated outputs.

use std::path::{Path, PathBuf};

use super::SystemPromptOptions;
use crate::system_prompt::{PromptInputs, PromptTool, Sections};
use crate::tools::temp_outputs::TempOutputs;

/// The agent's directories and the sources of its system prompt.
pub(super) struct Workspace {
    agent_dir: PathBuf,
    cwd: PathBuf,
    /// Where new, forked and cloned sessions are written.
    session_dir: PathBuf,
    /// The session directory was chosen (flag or settings): it stays put when the cwd changes.
    session_dir_explicit: bool,
    prompt_options: SystemPromptOptions,
    /// Full-output files of truncated bash runs (see `tools::temp_outputs`).
    temp_outputs: TempOutputs,
}

impl Workspace {
    pub(super) fn new(config: &super::AgentConfig) -> Self {
        Workspace {
            agent_dir: config.agent_dir.clone(),
            cwd: config.cwd.clone(),
            session_dir: config.session_dir.clone(),
            session_dir_explicit: config.session_dir_explicit,
            prompt_options: config.system_prompt.clone(),
            temp_outputs: TempOutputs::new(&config.temp_dir),
        }
    }

    /// The agent directory (settings, auth, sessions).
    pub(super) fn agent_dir(&self) -> &Path {
        &self.agent_dir
    }

    pub(super) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Where new sessions are written.
    pub(super) fn session_dir(&self) -> &Path {
        &self.session_dir
    }

    /// Where tools write full outputs.
    pub(super) fn temp_dir(&self) -> &Path {
        self.temp_outputs.dir()
    }

    /// The session `session_file` is left: its full-output files may go.
    pub(super) fn release_temp_files(&mut self, session_file: Option<&Path>) {
        self.temp_outputs.release(session_file);
    }

    /// `path` (`~` expanded) against the cwd.
    pub(super) fn absolute(&self, path: &str) -> PathBuf {
        let p = crate::config::expand_home(Path::new(path));
        if p.is_absolute() { p } else { self.cwd.join(p) }
    }

    /// Work in `cwd` from now on (the session directory follows unless it
    /// was chosen). False when it is the cwd already.
    pub(super) fn move_to(&mut self, cwd: PathBuf) -> bool {
        if cwd == self.cwd {
            return false;
        }
        self.cwd = cwd;
        if !self.session_dir_explicit {
            self.session_dir = crate::session::default_session_dir(&self.agent_dir, &self.cwd);
        }
        true
    }

    /// Where `resume_session` looks: the session directory first, then
    /// every other project's directory under the agent directory.
    pub(super) fn session_search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.session_dir.clone()];
        let all = self.agent_dir.join("sessions");
        if let Ok(read) = std::fs::read_dir(&all) {
            for entry in read.flatten() {
                if entry.path().is_dir() && entry.path() != self.session_dir {
                    dirs.push(entry.path());
                }
            }
        }
        dirs
    }

    /// The system prompt's sections for these tools and skills block, from
    /// the workspace's context files and the command line's sources.
    pub(super) fn prompt_sections(&self, tools: &[PromptTool], skills: Option<&str>) -> Sections {
        crate::system_prompt::build_sections(&PromptInputs {
            agent_dir: &self.agent_dir,
            cwd: &self.cwd,
            tools,
            replace: self.prompt_options.replace.as_deref(),
            append: &self.prompt_options.append,
            no_context_files: self.prompt_options.no_context_files,
            skills_section: skills,
            extra_sections: &[],
            docs_root: crate::system_prompt::docs_root(),
        })
    }
}

impl Workspace {
    /// What the prompt is built from besides the tools and skills, as pi's
    /// `BuildSystemPromptOptions` has them: the custom prompt (if any), the
    /// appended text (empty when none) and the context files with their text.
    pub(super) fn prompt_sources(&self) -> (Option<String>, String, Vec<(PathBuf, String)>) {
        let inputs = PromptInputs {
            agent_dir: &self.agent_dir,
            cwd: &self.cwd,
            tools: &[],
            replace: self.prompt_options.replace.as_deref(),
            append: &self.prompt_options.append,
            no_context_files: self.prompt_options.no_context_files,
            skills_section: None,
            extra_sections: &[],
            docs_root: None,
        };
        let context = if self.prompt_options.no_context_files {
            Vec::new()
        } else {
            crate::system_prompt::context_files(&self.agent_dir, &self.cwd)
        };
        (crate::system_prompt::custom_prompt(&inputs), crate::system_prompt::appended_prompt(&inputs), context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(explicit: bool) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace {
            agent_dir: dir.path().join("agent"),
            cwd: dir.path().join("a"),
            session_dir: dir.path().join("sessions-a"),
            session_dir_explicit: explicit,
            prompt_options: SystemPromptOptions::default(),
            temp_outputs: TempOutputs::new(dir.path()),
        };
        (dir, workspace)
    }

    #[test]
    fn the_session_directory_follows_the_cwd_unless_it_was_chosen() {
        let (dir, mut w) = workspace(false);
        assert!(!w.move_to(dir.path().join("a")));
        assert!(w.move_to(dir.path().join("b")));
        assert_eq!(w.session_dir(), crate::session::default_session_dir(w.agent_dir(), &dir.path().join("b")));
        assert_eq!(w.absolute("x.jsonl"), dir.path().join("b").join("x.jsonl"));
        let (dir, mut w) = workspace(true);
        assert!(w.move_to(dir.path().join("b")));
        assert_eq!(w.session_dir(), dir.path().join("sessions-a"));
        assert_eq!(w.session_search_dirs()[0], dir.path().join("sessions-a"));
    }
}
