//! Prompt templates and skills, found and used the way pi 1.6 does: discovery
//! ([`Resources::discover`]), the `get_commands` listing ([`commands`]),
//! `/template` and `/skill:name` expansion ([`expand_input`]) and the skills
//! block of the system prompt ([`skills_prompt_section`]).
//!
//! Where pi looks, in precedence order (the first template or skill of a
//! name wins; later ones are reported as collisions):
//!
//! 1. project settings entries (`<cwd>/.pi/settings.json` `prompts`/`skills`,
//!    relative to `<cwd>/.pi`), when the project is trusted;
//! 2. project auto-discovery, when trusted: `<cwd>/.pi/skills/`,
//!    `.agents/skills/` in `<cwd>` and its ancestors up to the git root, and
//!    `<cwd>/.pi/prompts/*.md`;
//! 3. user settings entries (`<agentDir>/settings.json`, relative to `<agentDir>`);
//! 4. user auto-discovery: `<agentDir>/skills/`, `~/.agents/skills/`,
//!    `<agentDir>/prompts/*.md`;
//! 5. `--skill` / `--prompt-template` paths (still loaded with `--no-skills`
//!    / `--no-prompt-templates`, which drop 1–4).
//!
//! Settings arrays also take `!glob` (exclude), `+path` (force include) and
//! `-path` (force exclude) entries, which apply to auto-discovered files too.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::op::{CommandInfo, CommandLocation, CommandSource, CommandSourceInfo};

pub mod args;
pub mod discovery;
mod extension_found;
mod frontmatter;
pub mod skills;
pub mod templates;
pub mod trust;
pub mod walk;

#[cfg(test)]
mod tests;

pub use args::{parse_command_args, substitute_args};
pub use skills::{
    Skill, SkillExpansionError, SkillReader, skills_block, skills_prompt_section, skills_prompt_section_with,
};
pub use templates::Template;

/// How a resource was found (pi's `sourceInfo.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// Found by scanning a conventional directory.
    Auto,
    /// Named by a settings entry or a command-line path.
    Local,
    /// Part of a pi package of the settings (`crate::packages`).
    Package,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Auto => "auto",
            SourceKind::Local => "local",
            SourceKind::Package => "package",
        }
    }
}

/// Which configuration a resource belongs to (pi's `sourceInfo.scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
    /// Command-line paths outside the conventional directories.
    Temporary,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Temporary => "temporary",
        }
    }
}

/// Where a template or skill came from; pi 1.6 sends it as `sourceInfo`
/// (`{path, source, scope, origin: "top-level", baseDir?}`) in `get_commands`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    /// The resource file.
    pub path: PathBuf,
    pub source: SourceKind,
    pub scope: Scope,
    /// Auto-discovered: the agent dir, `<cwd>/.pi` or the `.agents` dir;
    /// command-line paths: the file's directory; settings entries: none.
    pub base_dir: Option<PathBuf>,
    /// Found by this extension (its file name without `.ts`/`.js`), through
    /// `resources_discover`: pi's source is then `extension:<name>`.
    pub extension: Option<String>,
}

impl SourceInfo {
    /// `package` for a pi package's resource, else `top-level`.
    pub fn origin(&self) -> &'static str {
        if self.source == SourceKind::Package { "package" } else { "top-level" }
    }

    /// pi 1.6.0's `sourceInfo` of a `get_commands` entry.
    pub fn command_source_info(&self) -> CommandSourceInfo {
        CommandSourceInfo {
            path: self.path.to_string_lossy().into_owned(),
            source: match &self.extension {
                Some(name) => format!("extension:{name}"),
                None => self.source.as_str().to_string(),
            },
            scope: self.scope.as_str().to_string(),
            origin: self.origin().to_string(),
            base_dir: self.base_dir.as_ref().map(|d| d.to_string_lossy().into_owned()),
        }
    }

    /// The documented `get_commands` `location`: `user` / `project` for
    /// auto-discovered resources, `path` for settings and command-line paths.
    pub fn location(&self) -> CommandLocation {
        match (self.source, self.scope) {
            (SourceKind::Auto, Scope::Project) => CommandLocation::Project,
            (SourceKind::Auto, _) => CommandLocation::User,
            (SourceKind::Local | SourceKind::Package, _) => CommandLocation::Path,
        }
    }
}

/// Kind of a discovery problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    Warning,
    Error,
    /// A second resource with a name already taken; it is not loaded.
    Collision,
}

/// A problem found during discovery, naming the file at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub message: String,
    pub path: PathBuf,
}

impl Diagnostic {
    pub(crate) fn warning(message: impl Into<String>, path: &Path) -> Self {
        Diagnostic { kind: DiagnosticKind::Warning, message: message.into(), path: path.to_path_buf() }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            DiagnosticKind::Warning => "warning",
            DiagnosticKind::Error => "error",
            DiagnosticKind::Collision => "collision",
        };
        write!(f, "{kind}: {} ({})", self.message, self.path.display())
    }
}

/// The `prompts` / `skills` entries of one settings file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceSettings {
    pub prompts: Vec<String>,
    pub skills: Vec<String>,
    pub enable_skill_commands: Option<bool>,
}

impl ResourceSettings {
    /// Read the entries of a `settings.json` (a missing or unreadable file,
    /// or non-string entries, give nothing: `config::Settings` reports
    /// broken files). The legacy `skills: {customDirectories, enableSkillCommands}`
    /// object is understood.
    pub fn read(path: &Path) -> ResourceSettings {
        let Ok(bytes) = std::fs::read(path) else {
            return ResourceSettings::default();
        };
        let text = String::from_utf8_lossy(&bytes);
        let Ok(serde_json::Value::Object(map)) = serde_json::from_str(text.trim_start_matches('\u{feff}')) else {
            return ResourceSettings::default();
        };
        let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
            v.and_then(|v| v.as_array())
                .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                .unwrap_or_default()
        };
        let mut settings = ResourceSettings {
            prompts: strings(map.get("prompts")),
            skills: strings(map.get("skills")),
            enable_skill_commands: map.get("enableSkillCommands").and_then(|v| v.as_bool()),
        };
        if let Some(serde_json::Value::Object(legacy)) = map.get("skills") {
            settings.skills = strings(legacy.get("customDirectories"));
            if settings.enable_skill_commands.is_none() {
                settings.enable_skill_commands = legacy.get("enableSkillCommands").and_then(|v| v.as_bool());
            }
        }
        settings
    }
}

/// Inputs of discovery.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceOptions {
    /// The agent directory (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`).
    pub agent_dir: PathBuf,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// The home directory: `~` in paths and `~/.agents/skills`.
    pub home_dir: PathBuf,
    /// `--prompt-template` values, in order (relative to `cwd`).
    pub extra_template_paths: Vec<String>,
    /// `--skill` values, in order (relative to `cwd`).
    pub extra_skill_paths: Vec<String>,
    /// `--no-prompt-templates`.
    pub no_templates: bool,
    /// `--no-skills`.
    pub no_skills: bool,
    /// Entries of `<agent_dir>/settings.json`.
    pub user_settings: ResourceSettings,
    /// Entries of `<cwd>/.pi/settings.json` (ignored when the project is not trusted).
    pub project_settings: ResourceSettings,
    /// Whether project-local resources load (see [`trust::project_trusted`]).
    pub project_trusted: bool,
    /// `enableSkillCommands` (kept for front ends; pi 1.6's RPC `get_commands`
    /// lists skills regardless, and `/skill:name` always works).
    pub enable_skill_commands: bool,
    /// Skills and templates of pi packages (`crate::packages`).
    pub packages: PackageResources,
}

/// The enabled skill and template files of pi packages, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PackageResources {
    /// The settings' packages: after the user's own resources, dropped by
    /// `--no-skills` / `--no-prompt-templates`.
    pub skills: Vec<PathBuf>,
    pub prompts: Vec<PathBuf>,
    /// `-e` packages: before everything, kept with `--no-skills` /
    /// `--no-prompt-templates` (as pi keeps command-line resources).
    pub cli_skills: Vec<PathBuf>,
    pub cli_prompts: Vec<PathBuf>,
}

impl ResourceOptions {
    /// Options for `agent_dir` and `cwd` with both settings files read, the
    /// home directory from `$HOME`, project trust decided as pi decides it
    /// without a UI ([`trust::project_trusted`]; `trust_override` is
    /// `--approve` = `Some(true)` / `--no-approve` = `Some(false)`), and no
    /// command-line paths. Returns a warning when the trust store is unreadable.
    pub fn new(agent_dir: &Path, cwd: &Path, trust_override: Option<bool>) -> (ResourceOptions, Option<String>) {
        let home_dir = crate::config::home_dir();
        let (project_trusted, warning) = match trust::project_trusted(agent_dir, cwd, &home_dir, trust_override) {
            Ok(trusted) => (trusted, None),
            Err(e) => (false, Some(e)),
        };
        let user_settings = ResourceSettings::read(&agent_dir.join("settings.json"));
        let project_settings = if project_trusted {
            ResourceSettings::read(&cwd.join(".pi").join("settings.json"))
        } else {
            ResourceSettings::default()
        };
        let enable_skill_commands =
            project_settings.enable_skill_commands.or(user_settings.enable_skill_commands).unwrap_or(true);
        let options = ResourceOptions {
            agent_dir: agent_dir.to_path_buf(),
            cwd: cwd.to_path_buf(),
            home_dir,
            extra_template_paths: Vec::new(),
            extra_skill_paths: Vec::new(),
            no_templates: false,
            no_skills: false,
            user_settings,
            project_settings,
            project_trusted,
            enable_skill_commands,
            packages: PackageResources::default(),
        };
        (options, warning)
    }
}

/// The templates and skills of a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    /// In precedence order, one per name.
    pub templates: Vec<Template>,
    /// In precedence order, one per name.
    pub skills: Vec<Skill>,
    pub enable_skill_commands: bool,
    /// Everything discovery reported (also returned by [`Resources::discover`] as text).
    pub diagnostics: Vec<Diagnostic>,
    /// What these were discovered with ([`Resources::rediscover`]).
    pub options: Option<ResourceOptions>,
}

impl Resources {
    /// Find and load the templates and skills. Reads only directories that
    /// exist; skills directories are searched recursively (as pi does),
    /// template directories are not (except those named in settings).
    /// Returns the problems found as one line each.
    pub fn discover(options: &ResourceOptions) -> (Resources, Vec<String>) {
        let resources = discovery::discover(options);
        let warnings = resources.diagnostics.iter().map(ToString::to_string).collect();
        (resources, warnings)
    }

    /// Discover again with the options of the first discovery and the
    /// settings files' paths as they are now, reading the skill and
    /// template files as they are now (pi's `ctx.reload()`);
    /// `None` for resources that were not discovered.
    pub fn rediscover(&self) -> Option<(Resources, Vec<String>)> {
        let mut options = self.options.clone()?;
        options.read_settings_again();
        Some(Resources::discover(&options))
    }

    pub fn template(&self, name: &str) -> Option<&Template> {
        self.templates.iter().find(|t| t.name == name)
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The system-prompt skills block for these skills (read tool).
    pub fn skills_prompt_section(&self) -> Option<String> {
        skills_prompt_section(&self.skills)
    }
}

impl ResourceOptions {
    /// Read both settings files' `prompts` / `skills` entries again (pi's
    /// reload reads `settings.json` anew); the project's only while trusted.
    pub fn read_settings_again(&mut self) {
        self.user_settings = ResourceSettings::read(&self.agent_dir.join("settings.json"));
        if self.project_trusted {
            self.project_settings = ResourceSettings::read(&self.cwd.join(".pi").join("settings.json"));
        }
        self.enable_skill_commands =
            self.project_settings.enable_skill_commands.or(self.user_settings.enable_skill_commands).unwrap_or(true);
    }
}

/// What [`expand_input`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expansion {
    /// Not a known `/template` or `/skill:name`: the text is unchanged.
    None,
    Template {
        name: String,
    },
    Skill {
        name: String,
    },
}

/// The text to send after expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    pub text: String,
    pub expansion: Expansion,
    /// A known skill whose file could not be read again: the text is left
    /// as typed and pi emits `extension_error {extensionPath: <file>,
    /// event: "skill_expansion", error}`.
    pub error: Option<SkillExpansionError>,
}

impl Expanded {
    pub fn is_expanded(&self) -> bool {
        self.expansion != Expansion::None
    }
}

/// Expand the text of a `prompt`, `steer` or `follow_up` the way pi does:
/// first `/skill:name args`, then `/template args` on the result. Unknown
/// `/names` are left alone (they may be extension commands, which the caller
/// handles before expansion).
pub fn expand_input(text: &str, resources: &Resources) -> Expanded {
    let mut current = text.to_string();
    let mut expansion = Expansion::None;
    let mut error = None;
    if let Some((skill, result)) = skills::expand_skill(text, &resources.skills) {
        match result {
            Ok(expanded) => {
                current = expanded;
                expansion = Expansion::Skill { name: skill.name.clone() };
            }
            Err(e) => error = Some(e),
        }
    }
    if let Some((template, expanded)) = templates::expand_template(&current, &resources.templates) {
        current = expanded;
        expansion = Expansion::Template { name: template.name.clone() };
    }
    Expanded { text: current, expansion, error }
}

/// The `get_commands` entries for templates then skills (`skill:<name>`),
/// each in precedence order, with `location`, the absolute file path and
/// pi's `sourceInfo`.
/// Extension commands (listed first by pi) are the caller's. Skills are
/// listed whatever `enableSkillCommands` says, as pi 1.6 does in RPC mode.
pub fn commands(resources: &Resources) -> Vec<CommandInfo> {
    let templates = resources.templates.iter().map(|t| CommandInfo {
        name: t.name.clone(),
        description: Some(t.description.clone()),
        source: CommandSource::Prompt,
        location: Some(t.source_info.location()),
        path: Some(t.path.to_string_lossy().into_owned()),
        source_info: Some(t.source_info.command_source_info()),
    });
    let skills = resources.skills.iter().map(|s| CommandInfo {
        name: format!("skill:{}", s.name),
        description: Some(s.description.clone()),
        source: CommandSource::Skill,
        location: Some(s.source_info.location()),
        path: Some(s.path.to_string_lossy().into_owned()),
        source_info: Some(s.source_info.command_source_info()),
    });
    templates.chain(skills).collect()
}

/// pi 1.6.0's `sourceInfo` of an extension's command, from where the
/// extension file is: `<agentDir>/extensions/` and `<cwd>/.pi/extensions/`
/// are auto-discovered (`auto`, `user`/`project`, the agent dir or `.pi`
/// as `baseDir`); an installed pi package (`<agentDir>/npm/`, `git/`) is
/// `origin: "package"`; another file under the agent dir or `.pi` came from
/// a settings entry (`local`); anything else from `--extension` (`cli`,
/// `temporary`). pi's built-ins are `builtin:<name>` (`builtin`, `temporary`).
pub fn extension_source_info(path: &str, agent_dir: &Path, cwd: &Path) -> CommandSourceInfo {
    let info = |source: &str, scope: &str, origin: &str, base: Option<&Path>| CommandSourceInfo {
        path: path.to_string(),
        source: source.to_string(),
        scope: scope.to_string(),
        origin: origin.to_string(),
        base_dir: base.map(|b| b.to_string_lossy().into_owned()),
    };
    if path.starts_with("builtin:") {
        return info("builtin", "temporary", "top-level", None);
    }
    let file = Path::new(path);
    let project = cwd.join(".pi");
    for (root, scope) in [(agent_dir, "user"), (project.as_path(), "project")] {
        if file.starts_with(root.join("extensions")) {
            return info("auto", scope, "top-level", Some(root));
        }
        if file.starts_with(root.join("npm")) || file.starts_with(root.join("git")) {
            return info("package", scope, "package", None);
        }
        if file.starts_with(root) {
            return info("local", scope, "top-level", Some(root));
        }
    }
    info("cli", "temporary", "top-level", None)
}

/// Read a text file the way Node does with `utf-8`: invalid bytes become U+FFFD.
pub(crate) fn read_text(path: &Path) -> io::Result<String> {
    std::fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// An I/O error worded like Node's (`ENOENT: no such file or directory, open '<path>'`).
pub(crate) fn node_io_message(error: &io::Error, syscall: &str, path: &Path) -> String {
    let path = path.display();
    match error.kind() {
        io::ErrorKind::NotFound => format!("ENOENT: no such file or directory, {syscall} '{path}'"),
        io::ErrorKind::PermissionDenied => format!("EACCES: permission denied, {syscall} '{path}'"),
        io::ErrorKind::IsADirectory => "EISDIR: illegal operation on a directory, read".to_string(),
        _ => error.to_string(),
    }
}
