//! pi packages, as pi 1.6.0 has them (its `docs/packages.md`): extensions,
//! skills, prompt templates and themes shared as one npm package, git
//! repository or local directory. Declared in the `packages` array of the
//! user settings (`<agentDir>/settings.json`) or of a trusted project's
//! (`<cwd>/.pi/settings.json`), or given for one run with `-e npm:…` /
//! `-e git:…`; installed with pi's own layout ([`install`]) so that pi and
//! pi-rpc share them; resolved into resource paths ([`collect`]) that
//! extension and resource discovery load after the user's own.
//!
//! A declared package that is not installed is installed at start-up; one
//! that cannot be is skipped with a warning and the session goes on.
//! `PI_OFFLINE` turns every install and update check off.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

mod collect;
pub(crate) mod install;
pub mod source;
mod updates;

pub use source::Source;
pub use updates::AvailableUpdate;

/// Which settings a package belongs to (`Temporary`: `-e`, for one run,
/// cached under `<agentDir>/tmp/extensions/`).
pub use crate::resources::Scope;

/// The four kinds of resources a package brings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Extensions = 0,
    Skills = 1,
    Prompts = 2,
    Themes = 3,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Extensions, Kind::Skills, Kind::Prompts, Kind::Themes];

    pub fn key(self) -> &'static str {
        match self {
            Kind::Extensions => "extensions",
            Kind::Skills => "skills",
            Kind::Prompts => "prompts",
            Kind::Themes => "themes",
        }
    }
}

/// The object form of a `packages` entry: which resources of it load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub lists: [Option<Vec<String>>; 4],
    /// `false` on a project entry: a delta over the user's entry of the same package.
    pub autoload: Option<bool>,
}

impl Filter {
    pub fn get(&self, kind: Kind) -> Option<Vec<String>> {
        self.lists[kind as usize].clone()
    }
}

/// One `packages` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub source: String,
    pub filter: Option<Filter>,
    pub scope: Scope,
}

/// One resource file of a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub path: PathBuf,
    pub enabled: bool,
    /// The package's source as declared.
    pub package: String,
    pub scope: Scope,
    /// The package's directory (for a package that is one file: its directory), as pi's `sourceInfo.baseDir`.
    pub base_dir: Option<PathBuf>,
}

/// A package that could not be installed (it is skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallFailure {
    pub source: String,
    pub scope: Scope,
    pub message: String,
}

impl InstallFailure {
    /// The start-up warning, worded as pi words it.
    pub fn warning(&self) -> String {
        format!("Extension package \"{}\": {}", self.source, self.description())
    }

    /// What went wrong and what to do, as pi's loader words it in the
    /// extensions' `warnings` (`failed to install (…). Run …`).
    pub fn description(&self) -> String {
        let hint = match self.scope {
            Scope::Temporary => "Check the source and try again.".to_string(),
            Scope::Project => format!("Run \"pi remove {} --local\" to remove it from settings.json.", self.source),
            Scope::User => format!("Run \"pi remove {}\" to remove it from settings.json.", self.source),
        };
        format!("failed to install ({}). {hint}", self.message)
    }
}

/// The resources of a set of packages, each list in order, one entry per path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    pub extensions: Vec<Resource>,
    pub skills: Vec<Resource>,
    pub prompts: Vec<Resource>,
    pub themes: Vec<Resource>,
    pub failures: Vec<InstallFailure>,
}

impl Resolved {
    fn list_mut(&mut self, kind: Kind) -> &mut Vec<Resource> {
        match kind {
            Kind::Extensions => &mut self.extensions,
            Kind::Skills => &mut self.skills,
            Kind::Prompts => &mut self.prompts,
            Kind::Themes => &mut self.themes,
        }
    }

    /// The enabled paths of one kind.
    pub fn enabled(&self, kind: Kind) -> Vec<PathBuf> {
        let list = match kind {
            Kind::Extensions => &self.extensions,
            Kind::Skills => &self.skills,
            Kind::Prompts => &self.prompts,
            Kind::Themes => &self.themes,
        };
        list.iter().filter(|r| r.enabled).map(|r| r.path.clone()).collect()
    }
}

/// Whether a directory is laid out as a pi package: a `pi` manifest listing
/// resources, or one of the conventional resource directories.
pub fn is_package_dir(dir: &Path) -> bool {
    dir.is_dir() && collect::has_layout(dir)
}

/// A configured package as `pi list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub source: String,
    pub scope: Scope,
    /// Declared in the object form.
    pub filtered: bool,
    pub installed_path: Option<PathBuf>,
}

/// The package manager of one working directory and agent directory.
#[derive(Debug, Clone)]
pub struct PackageManager {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
    pub project_trusted: bool,
    /// The npm command and its leading arguments (pi's `npmCommand`; `npm`).
    pub npm: Vec<String>,
    /// `PI_OFFLINE`: nothing is installed or checked.
    pub offline: bool,
    /// Command output captured for error messages (a session) rather than
    /// shown on stderr (`pi install`).
    pub capture_output: bool,
}

impl PackageManager {
    /// For `cwd` and `agent_dir`, with the user settings' `npmCommand` and
    /// `PI_OFFLINE` read.
    pub fn new(cwd: &Path, agent_dir: &Path, project_trusted: bool) -> PackageManager {
        let npm = read_settings(&agent_dir.join("settings.json"))
            .get("npmCommand")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect::<Vec<_>>())
            .filter(|argv| !argv.is_empty() && !argv[0].is_empty())
            .unwrap_or_else(|| vec!["npm".to_string()]);
        let offline =
            std::env::var("PI_OFFLINE").is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"));
        PackageManager {
            cwd: cwd.to_path_buf(),
            agent_dir: agent_dir.to_path_buf(),
            home: crate::config::home_dir(),
            project_trusted,
            npm,
            offline,
            capture_output: true,
        }
    }

    pub fn settings_file(&self, scope: Scope) -> PathBuf {
        match scope {
            Scope::Project => self.cwd.join(".pi").join("settings.json"),
            _ => self.agent_dir.join("settings.json"),
        }
    }

    /// Where a scope's relative local paths start.
    pub fn base_dir(&self, scope: Scope) -> PathBuf {
        match scope {
            Scope::User => self.agent_dir.clone(),
            Scope::Project => self.cwd.join(".pi"),
            Scope::Temporary => self.cwd.clone(),
        }
    }

    /// The `packages` entries of one settings file (the project's only when trusted).
    pub fn declared(&self, scope: Scope) -> Vec<Declared> {
        if scope == Scope::Project && !self.project_trusted {
            return Vec::new();
        }
        let settings = read_settings(&self.settings_file(scope));
        let Some(list) = settings.get("packages").and_then(Value::as_array) else { return Vec::new() };
        list.iter().filter_map(|entry| parse_entry(entry, scope)).collect()
    }

    pub fn identity(&self, source: &str, scope: Scope) -> String {
        Source::parse(source).identity(&self.base_dir(scope), &self.home)
    }

    /// The settings' packages once each, project entries first: a project
    /// entry replaces the user's entry of the same package, unless it is an
    /// `autoload: false` delta (then both stay).
    pub fn configured_once(&self) -> Vec<Declared> {
        let mut all = self.declared(Scope::Project);
        all.extend(self.declared(Scope::User));
        let mut kept: Vec<Declared> = Vec::new();
        for entry in all {
            let identity = self.identity(&entry.source, entry.scope);
            match kept.iter().position(|k| self.identity(&k.source, k.scope) == identity) {
                None => kept.push(entry),
                Some(i) if kept[i].scope == Scope::Project && entry.scope == Scope::User => {
                    if kept[i].filter.as_ref().is_some_and(|f| f.autoload == Some(false)) {
                        kept.push(entry);
                    }
                }
                Some(i) if entry.scope == Scope::Project => kept[i] = entry,
                Some(_) => {}
            }
        }
        kept
    }

    /// The settings' packages, installed when missing, resolved to their
    /// resources (project entries first; a project entry replaces the user's
    /// entry of the same package, unless it is an `autoload: false` delta).
    pub fn resolve_settings(&self) -> Resolved {
        let kept = self.configured_once();
        let mut out = Resolved::default();
        for entry in &kept {
            // An `autoload: false` project entry works on the user's install.
            let base = (entry.scope == Scope::Project
                && entry.filter.as_ref().is_some_and(|f| f.autoload == Some(false)))
            .then(|| {
                let identity = self.identity(&entry.source, Scope::Project);
                kept.iter().find(|k| k.scope == Scope::User && self.identity(&k.source, Scope::User) == identity)
            })
            .flatten();
            let (source, scope) =
                base.map_or((entry.source.as_str(), entry.scope), |b| (b.source.as_str(), Scope::User));
            self.resolve_one(&entry.source, source, scope, entry.filter.as_ref(), entry.scope, &mut out);
        }
        out
    }

    /// `-e` sources of one run (`builtin:` ones are not packages).
    pub fn resolve_cli(&self, sources: &[String]) -> Resolved {
        let mut out = Resolved::default();
        for source in sources.iter().filter(|s| !s.starts_with("builtin:")) {
            self.resolve_one(source, source, Scope::Temporary, None, Scope::Temporary, &mut out);
        }
        out
    }

    fn resolve_one(
        &self,
        declared: &str,
        source: &str,
        scope: Scope,
        filter: Option<&Filter>,
        declared_scope: Scope,
        out: &mut Resolved,
    ) {
        let origin = collect::Origin { source: declared, scope: declared_scope, base_dir: None };
        let parsed = Source::parse(source);
        let fail = |out: &mut Resolved, message: String| {
            out.failures.push(InstallFailure { source: source.to_string(), scope, message });
        };
        let root = match &parsed {
            Source::Local(path) => {
                let path = source::resolve_local(path, &self.base_dir(scope), &self.home);
                let origin =
                    collect::Origin { base_dir: if path.is_file() { path.parent() } else { Some(&path) }, ..origin };
                if path.is_file() {
                    out.add(Kind::Extensions, &path, true, &origin);
                } else if path.is_dir() && !collect::collect_package(&path, filter, &origin, out) {
                    for entry in crate::extensions::discovery::package_extension_entries(&path) {
                        out.add(Kind::Extensions, &entry, true, &origin);
                    }
                }
                return;
            }
            Source::Npm(npm) => {
                let path = self.npm_path(npm, scope);
                let installed = Self::installed_version(&path);
                let usable = installed.as_deref().is_some_and(|v| npm.accepts(v));
                if !usable {
                    if self.offline {
                        return;
                    }
                    if let Err(e) = self.announce_install(source, || self.install_npm(npm, &npm.spec, scope)) {
                        return fail(out, e);
                    }
                } else if scope == Scope::Temporary && !npm.pinned() && !self.offline {
                    // A cached `-e` package is refreshed when the registry has newer.
                    if let (Some(have), Ok(latest)) = (installed.as_deref(), self.latest_npm_version(npm))
                        && newer(&latest, have)
                    {
                        let spec =
                            if npm.version.is_some() { npm.spec.clone() } else { format!("{}@latest", npm.name) };
                        let _ = self.install_npm(npm, &spec, scope);
                    }
                }
                path
            }
            Source::Git(git) => {
                let path = self.git_path(git, scope);
                if !path.exists() {
                    if self.offline {
                        return;
                    }
                    if let Err(e) = self.announce_install(source, || self.install_git(git, scope)) {
                        return fail(out, e);
                    }
                } else if scope == Scope::Temporary && !self.offline {
                    let at_commit = git.git_ref.as_deref().is_some_and(|r| {
                        r.len() >= 7
                            && r.chars().all(|c| c.is_ascii_hexdigit())
                            && self.git_head(&path).is_some_and(|h| h.starts_with(&r.to_ascii_lowercase()))
                    });
                    if !at_commit {
                        let _ = self.update_git(git, scope);
                    }
                }
                path
            }
        };
        let origin = collect::Origin { base_dir: Some(&root), ..origin };
        collect::collect_package(&root, filter, &origin, out);
    }

    fn announce_install(&self, source: &str, install: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
        tracing::info!("Installing {source}...");
        install()
    }

    /// `pi install <source> [-l]`: install, then add it to the settings.
    pub fn install(&self, source: &str, scope: Scope) -> Result<(), String> {
        self.install_only(source, scope)?;
        self.add_to_settings(source, scope).map(|_| ())
    }

    /// Install `source` without touching the settings (a local path must exist).
    pub fn install_only(&self, source: &str, scope: Scope) -> Result<(), String> {
        self.check_scope(scope)?;
        match Source::parse(source) {
            Source::Npm(npm) => self.install_npm(&npm, &npm.spec, scope)?,
            Source::Git(git) => self.install_git(&git, scope)?,
            Source::Local(path) => {
                let resolved = source::resolve_local(&path, &self.cwd, &self.home);
                if !resolved.exists() {
                    return Err(format!("Path does not exist: {}", resolved.display()));
                }
            }
        }
        Ok(())
    }

    /// `pi remove <source> [-l]`: uninstall, then drop it from the settings;
    /// false when no entry matched.
    pub fn remove(&self, source: &str, scope: Scope) -> Result<bool, String> {
        self.remove_only(source, scope)?;
        self.remove_from_settings(source, scope)
    }

    /// Uninstall `source` without touching the settings (nothing for a local path).
    pub fn remove_only(&self, source: &str, scope: Scope) -> Result<(), String> {
        self.check_scope(scope)?;
        match Source::parse(source) {
            Source::Npm(npm) => self.uninstall_npm(&npm, scope),
            Source::Git(git) => self.remove_git(&git, scope),
            Source::Local(_) => Ok(()),
        }
    }

    /// Drop the settings entry of `source`; false when none matched.
    pub fn remove_from_settings(&self, source: &str, scope: Scope) -> Result<bool, String> {
        let path = self.settings_file(scope);
        let mut settings = read_settings(&path);
        let Some(Value::Array(list)) = settings.get_mut("packages") else { return Ok(false) };
        if !self.remove_from_list(list, source, scope) {
            return Ok(false);
        }
        write_settings(&path, &settings)?;
        Ok(true)
    }

    /// Drop the entries of `source` from a scope's `packages` list; false when none matched.
    pub fn remove_from_list(&self, list: &mut Vec<Value>, source: &str, scope: Scope) -> bool {
        let wanted = self.input_identity(source);
        let before = list.len();
        list.retain(|e| entry_source(e).is_none_or(|s| self.identity(s, scope) != wanted));
        list.len() != before
    }

    /// `pi list`: the configured packages, user then project.
    pub fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for scope in [Scope::User, Scope::Project] {
            for entry in self.declared(scope) {
                let installed_path = match Source::parse(&entry.source) {
                    Source::Npm(npm) => Some(self.npm_path(&npm, scope)),
                    Source::Git(git) => Some(self.git_path(&git, scope)),
                    Source::Local(p) => Some(source::resolve_local(&p, &self.base_dir(scope), &self.home)),
                }
                .filter(|p| p.exists());
                out.push(Listed { filtered: entry.filter.is_some(), source: entry.source, scope, installed_path });
            }
        }
        out
    }

    /// `pi update --extensions` / `pi update <source>`: reinstall unpinned npm
    /// packages the registry has newer versions of, reconcile git checkouts
    /// with their ref or branch. Returns one line per package that changed
    /// (`npm:foo 1.2.0 -> 1.3.0`); the first failure is the error.
    pub fn update(&self, only: Option<&str>) -> Result<Vec<String>, String> {
        let mut entries = self.declared(Scope::User);
        entries.extend(self.declared(Scope::Project));
        if let Some(source) = only {
            let wanted = self.input_identity(source);
            entries.retain(|e| self.identity(&e.source, e.scope) == wanted);
            if entries.is_empty() {
                return Err(format!("No matching package found for {source}"));
            }
        }
        let mut changed = Vec::new();
        if self.offline {
            return Ok(changed);
        }
        for entry in entries {
            let scope_note = if entry.scope == Scope::Project { " (project)" } else { "" };
            match Source::parse(&entry.source) {
                Source::Npm(npm) if !npm.pinned() => {
                    let path = self.npm_path(&npm, entry.scope);
                    let before = Self::installed_version(&path);
                    let wanted = self.latest_npm_version(&npm).ok();
                    let stale = match (&before, &wanted) {
                        (Some(have), Some(latest)) => newer(latest, have),
                        _ => true,
                    };
                    if !stale {
                        continue;
                    }
                    let spec = if npm.version.is_some() { npm.spec.clone() } else { format!("{}@latest", npm.name) };
                    self.install_npm(&npm, &spec, entry.scope)?;
                    let after = Self::installed_version(&path);
                    if after != before {
                        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".to_string());
                        changed.push(format!("{}{scope_note} {} -> {}", entry.source, show(&before), show(&after)));
                    }
                }
                Source::Git(git) => {
                    let path = self.git_path(&git, entry.scope);
                    let before = self.git_head(&path);
                    self.update_git(&git, entry.scope)?;
                    let after = self.git_head(&path);
                    if before != after {
                        let short = |v: &Option<String>| {
                            v.as_deref().map_or("(none)".to_string(), |h| h.chars().take(7).collect())
                        };
                        changed.push(format!("{}{scope_note} {} -> {}", entry.source, short(&before), short(&after)));
                    }
                }
                _ => {}
            }
        }
        Ok(changed)
    }

    fn check_scope(&self, scope: Scope) -> Result<(), String> {
        if scope == Scope::Project && !self.project_trusted {
            return Err("Project is not trusted; refusing to access project package storage".to_string());
        }
        Ok(())
    }

    /// The identity of a source typed on the command line (local paths from the cwd).
    fn input_identity(&self, source: &str) -> String {
        Source::parse(source).identity(&self.cwd, &self.home)
    }

    /// Add (or re-point) the settings entry of `source`: a local path is
    /// written relative to the settings file's directory, as pi writes it.
    /// False when the entry was there already as written.
    pub fn add_to_settings(&self, source: &str, scope: Scope) -> Result<bool, String> {
        let path = self.settings_file(scope);
        let mut settings = read_settings(&path);
        let list = settings.entry("packages").or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        let Value::Array(list) = list else { return Ok(false) };
        if !self.add_to_list(list, source, scope) {
            return Ok(false);
        }
        write_settings(&path, &settings).map(|()| true)
    }

    /// [`Self::add_to_settings`] on a scope's `packages` list; false when unchanged.
    pub fn add_to_list(&self, list: &mut Vec<Value>, source: &str, scope: Scope) -> bool {
        let normalized = match Source::parse(source) {
            Source::Local(path) => {
                let resolved = source::resolve_local(&path, &self.cwd, &self.home);
                relative_path(&self.base_dir(scope), &resolved)
            }
            _ => source.to_string(),
        };
        let wanted = self.input_identity(source);
        match list.iter().position(|e| entry_source(e).is_some_and(|s| self.identity(s, scope) == wanted)) {
            Some(i) if entry_source(&list[i]) == Some(normalized.as_str()) => return false,
            Some(i) => match &mut list[i] {
                Value::Object(object) => {
                    object.insert("source".to_string(), Value::String(normalized));
                }
                other => *other = Value::String(normalized),
            },
            None => list.push(Value::String(normalized)),
        }
        true
    }
}

/// Whether `a` is a newer semver than `b`.
fn newer(a: &str, b: &str) -> bool {
    match (node_semver::Version::parse(a), node_semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a > b,
        _ => false,
    }
}

fn entry_source(entry: &Value) -> Option<&str> {
    match entry {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("source").and_then(Value::as_str),
        _ => None,
    }
}

fn parse_entry(entry: &Value, scope: Scope) -> Option<Declared> {
    let source = entry_source(entry)?.to_string();
    let filter = entry.as_object().map(|o| {
        let list = |key: &str| {
            o.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        };
        Filter { lists: Kind::ALL.map(|k| list(k.key())), autoload: o.get("autoload").and_then(Value::as_bool) }
    });
    Some(Declared { source, filter, scope })
}

fn read_settings(path: &Path) -> Map<String, Value> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}

fn write_settings(path: &Path, settings: &Map<String, Value>) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(settings).map_err(|e| e.to_string())?;
    crate::config::settings::write_atomically(path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

/// `path.relative(from, to)`, `.` for the same directory (as pi writes local sources).
fn relative_path(from: &Path, to: &Path) -> String {
    let relative = crate::resources::discovery::relative(from, to);
    if relative.is_empty() { ".".to_string() } else { relative }
}

#[cfg(test)]
mod tests;
