//! Discovery: which template and skill files load, in which order, with
//! which source info — settings entries and their `!`/`+`/`-` patterns,
//! auto-discovered directories, precedence, command-line paths, and the
//! name de-duplication that keeps the first of each name.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::skills::{self, Skill};
use super::templates::{self, Template};
use super::walk::{self, Kind, SkillDirMode};
use super::{Diagnostic, DiagnosticKind, ResourceOptions, Resources, Scope, SourceInfo, SourceKind};

#[derive(Clone, Copy, PartialEq, Eq)]
enum ResourceType {
    Skills,
    Prompts,
}

/// Where a resolved file came from (pi's resource metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    source: SourceKind,
    scope: Scope,
    base_dir: Option<PathBuf>,
}

impl Meta {
    /// pi's precedence: project settings, project auto, user settings, user auto.
    fn rank(&self) -> u8 {
        if self.source == SourceKind::Package {
            return 4;
        }
        let scope = if self.scope == Scope::Project { 0 } else { 2 };
        scope + u8::from(self.source == SourceKind::Auto)
    }

    fn source_info(&self, path: &Path) -> SourceInfo {
        SourceInfo {
            path: path.to_path_buf(),
            source: self.source,
            scope: self.scope,
            base_dir: self.base_dir.clone(),
            extension: None,
        }
    }
}

/// Files of one resource type in the order found; the first mention of a
/// path fixes its metadata and whether it is enabled.
#[derive(Default)]
struct Accumulator {
    entries: Vec<(PathBuf, Meta, bool)>,
    seen: HashSet<PathBuf>,
}

impl Accumulator {
    fn add(&mut self, path: PathBuf, meta: &Meta, enabled: bool) {
        if self.seen.insert(path.clone()) {
            self.entries.push((path, meta.clone(), enabled));
        }
    }

    /// Sorted by precedence (stable), one entry per real path.
    fn resolve(mut self) -> Vec<(PathBuf, Meta, bool)> {
        self.entries.sort_by_key(|(_, meta, _)| meta.rank());
        let mut keys = HashSet::new();
        self.entries.retain(|(path, _, _)| keys.insert(walk::path_key(path)));
        self.entries
    }
}

pub(super) fn discover(o: &ResourceOptions) -> Resources {
    let cwd = walk::normalize(&o.cwd);
    let agent_dir = walk::normalize(&o.agent_dir);
    let home = walk::normalize(&o.home_dir);
    let project_base = cwd.join(".pi");
    let empty = super::ResourceSettings::default();
    let project_settings = if o.project_trusted { &o.project_settings } else { &empty };
    let ctx = Ctx { home: &home };

    let mut skills_acc = Accumulator::default();
    let mut prompts_acc = Accumulator::default();
    let local = |scope| Meta { source: SourceKind::Local, scope, base_dir: None };
    for (settings, scope, base) in
        [(project_settings, Scope::Project, &project_base), (&o.user_settings, Scope::User, &agent_dir)]
    {
        ctx.add_settings_entries(&mut skills_acc, &settings.skills, ResourceType::Skills, &local(scope), base);
        ctx.add_settings_entries(&mut prompts_acc, &settings.prompts, ResourceType::Prompts, &local(scope), base);
    }

    // Auto-discovery, in pi's order.
    let auto = |scope, base: &Path| Meta { source: SourceKind::Auto, scope, base_dir: Some(base.to_path_buf()) };
    let user_agents_skills = home.join(".agents").join("skills");
    if o.project_trusted {
        let files = walk::collect_skill_files(&project_base.join("skills"), SkillDirMode::Pi);
        ctx.add_auto(
            &mut skills_acc,
            files,
            &auto(Scope::Project, &project_base),
            &project_settings.skills,
            &project_base,
        );
        for dir in ancestor_agents_skill_dirs(&cwd).into_iter().filter(|d| *d != user_agents_skills) {
            let base = dir.parent().map(Path::to_path_buf).unwrap_or_default();
            let files = walk::collect_skill_files(&dir, SkillDirMode::Agents);
            ctx.add_auto(&mut skills_acc, files, &auto(Scope::Project, &base), &project_settings.skills, &base);
        }
        let files = walk::collect_prompt_dir(&project_base.join("prompts"));
        ctx.add_auto(
            &mut prompts_acc,
            files,
            &auto(Scope::Project, &project_base),
            &project_settings.prompts,
            &project_base,
        );
    }
    let user_meta = auto(Scope::User, &agent_dir);
    let files = walk::collect_skill_files(&agent_dir.join("skills"), SkillDirMode::Pi);
    ctx.add_auto(&mut skills_acc, files, &user_meta, &o.user_settings.skills, &agent_dir);
    let user_agents_base = home.join(".agents");
    let files = walk::collect_skill_files(&user_agents_skills, SkillDirMode::Agents);
    ctx.add_auto(
        &mut skills_acc,
        files,
        &auto(Scope::User, &user_agents_base),
        &o.user_settings.skills,
        &user_agents_base,
    );
    let files = walk::collect_prompt_dir(&agent_dir.join("prompts"));
    ctx.add_auto(&mut prompts_acc, files, &user_meta, &o.user_settings.prompts, &agent_dir);
    // pi packages of the settings, last.
    let package = Meta { source: SourceKind::Package, scope: Scope::User, base_dir: None };
    for path in &o.packages.skills {
        skills_acc.add(path.clone(), &package, true);
    }
    for path in &o.packages.prompts {
        prompts_acc.add(path.clone(), &package, true);
    }

    let mut diagnostics = Vec::new();
    let layout = Layout { cwd: &cwd, agent_dir: &agent_dir, home: &home };
    let skills = load_skills(skills_acc.resolve(), o, &layout, &mut diagnostics);
    let templates = load_templates(prompts_acc.resolve(), o, &layout, &mut diagnostics);
    Resources {
        templates,
        skills,
        enable_skill_commands: o.enable_skill_commands,
        diagnostics,
        options: Some(o.clone()),
    }
}

struct Ctx<'a> {
    home: &'a Path,
}

/// pi's `applyPatterns` over `files` (plain globs include, `!glob`
/// excludes, `+path` / `-path` add or remove exactly), for package filters.
pub fn apply_patterns(files: &[PathBuf], patterns: &[String], base: &Path) -> HashSet<PathBuf> {
    let home = walk::normalize(&crate::config::home_dir());
    let patterns: Vec<&String> = patterns.iter().collect();
    Ctx { home: &home }.apply_patterns(files, &patterns, base)
}

/// Whether `file` matches one pattern: a glob, or (`exact`) a path.
pub fn matches_pattern(file: &Path, pattern: &str, exact: bool, base: &Path) -> bool {
    let home = walk::normalize(&crate::config::home_dir());
    let ctx = Ctx { home: &home };
    if exact { ctx.matches_exact(file, &[pattern], base) } else { matches_any(file, &ctx.globs(&[pattern]), base) }
}

/// pi's settings-array rules for files found elsewhere (the SDK loader's
/// extensions and themes): the paths among `files` that `entries` (one
/// settings file's array, relative to `base`) leave enabled. `auto` files
/// come from an auto-discovered directory (only `!`/`+`/`-` entries count);
/// the others from the array's plain entries (its globs include, too).
pub fn settings_enabled(files: &[PathBuf], entries: &[String], base: &Path, auto: bool) -> Vec<PathBuf> {
    let home = walk::normalize(&crate::config::home_dir());
    let ctx = Ctx { home: &home };
    if auto {
        let overrides: Vec<&String> =
            entries.iter().filter(|e| e.starts_with('!') || e.starts_with('+') || e.starts_with('-')).collect();
        return files.iter().filter(|f| ctx.enabled_by_overrides(f, &overrides, base)).cloned().collect();
    }
    let patterns: Vec<&String> = entries.iter().filter(|e| is_pattern(e)).collect();
    let enabled = ctx.apply_patterns(files, &patterns, base);
    files.iter().filter(|f| enabled.contains(*f)).cloned().collect()
}

/// The plain entries of a settings array (paths), as opposed to its patterns.
pub fn plain_entries(entries: &[String]) -> Vec<String> {
    entries.iter().filter(|e| !is_pattern(e)).cloned().collect()
}

impl Ctx<'_> {
    /// A settings array: plain entries name files or directories (relative
    /// to `base`); the other entries (globs, `!`, `+`, `-`) decide which of
    /// those files are enabled. Disabled files are still recorded, so a later
    /// mention of the same file does not enable it.
    fn add_settings_entries(
        &self,
        acc: &mut Accumulator,
        entries: &[String],
        ty: ResourceType,
        meta: &Meta,
        base: &Path,
    ) {
        if entries.is_empty() {
            return;
        }
        let (patterns, plain): (Vec<&String>, Vec<&String>) = entries.iter().partition(|e| is_pattern(e));
        let mut files = Vec::new();
        for entry in plain {
            let path = walk::resolve_path(entry, base, self.home);
            match walk::kind(&path) {
                Some(Kind::Dir) => files.extend(match ty {
                    ResourceType::Skills => walk::collect_skill_files(&path, SkillDirMode::Pi),
                    ResourceType::Prompts => walk::collect_markdown_recursive(&path),
                }),
                Some(_) => files.push(path),
                None => {}
            }
        }
        let enabled = self.apply_patterns(&files, &patterns, base);
        for file in files {
            let on = enabled.contains(&file);
            acc.add(file, meta, on);
        }
    }

    /// Auto-discovered files, enabled unless the settings' `!`/`-` entries
    /// exclude them (`+` re-includes).
    fn add_auto(&self, acc: &mut Accumulator, files: Vec<PathBuf>, meta: &Meta, entries: &[String], base: &Path) {
        let overrides: Vec<&String> =
            entries.iter().filter(|e| e.starts_with('!') || e.starts_with('+') || e.starts_with('-')).collect();
        for file in files {
            let on = self.enabled_by_overrides(&file, &overrides, base);
            acc.add(file, meta, on);
        }
    }

    /// pi's `applyPatterns`: plain globs include (all when none), `!glob`
    /// excludes, `+path` adds back exactly, `-path` removes exactly.
    fn apply_patterns(&self, files: &[PathBuf], patterns: &[&String], base: &Path) -> HashSet<PathBuf> {
        let (mut includes, mut excludes, mut force_in, mut force_out) = (vec![], vec![], vec![], vec![]);
        for p in patterns {
            if let Some(rest) = p.strip_prefix('+') {
                force_in.push(rest);
            } else if let Some(rest) = p.strip_prefix('-') {
                force_out.push(rest);
            } else if let Some(rest) = p.strip_prefix('!') {
                excludes.push(rest);
            } else {
                includes.push(p.as_str());
            }
        }
        let includes = self.globs(&includes);
        let excludes = self.globs(&excludes);
        let mut result: Vec<&PathBuf> = files
            .iter()
            .filter(|f| includes.is_empty() || matches_any(f, &includes, base))
            .filter(|f| excludes.is_empty() || !matches_any(f, &excludes, base))
            .collect();
        for f in files {
            if !result.contains(&f) && self.matches_exact(f, &force_in, base) {
                result.push(f);
            }
        }
        result.retain(|f| !self.matches_exact(f, &force_out, base));
        result.into_iter().cloned().collect()
    }

    fn enabled_by_overrides(&self, file: &Path, overrides: &[&String], base: &Path) -> bool {
        let pick = |prefix: char| overrides.iter().filter_map(|o| o.strip_prefix(prefix)).collect::<Vec<_>>();
        let excludes = self.globs(&pick('!'));
        let mut enabled = excludes.is_empty() || !matches_any(file, &excludes, base);
        if self.matches_exact(file, &pick('+'), base) {
            enabled = true;
        }
        if self.matches_exact(file, &pick('-'), base) {
            enabled = false;
        }
        enabled
    }

    /// Compile minimatch-style globs (`*` stops at `/`, `**` spans
    /// directories; `~` expanded). Invalid globs match nothing.
    fn globs(&self, patterns: &[&str]) -> Vec<GlobMatcher> {
        patterns
            .iter()
            .filter_map(|p| {
                let p = self.expand_tilde(p);
                GlobBuilder::new(&p).literal_separator(true).build().ok().map(|g| g.compile_matcher())
            })
            .collect()
    }

    fn expand_tilde(&self, p: &str) -> String {
        if p == "~" {
            self.home.to_string_lossy().into_owned()
        } else if let Some(rest) = p.strip_prefix("~/") {
            self.home.join(rest).to_string_lossy().into_owned()
        } else {
            p.to_string()
        }
    }

    /// `+path` / `-path`: equal to the path relative to `base`, or absolute;
    /// for a `SKILL.md`, its directory counts too.
    fn matches_exact(&self, file: &Path, patterns: &[&str], base: &Path) -> bool {
        if patterns.is_empty() {
            return false;
        }
        let candidates = candidates(file, base, false);
        patterns.iter().any(|p| {
            let p = self.expand_tilde(p.strip_prefix("./").unwrap_or(p));
            candidates.contains(&p)
        })
    }
}

/// Strings a pattern is tried against: the path relative to `base`, its
/// name (globs only), the absolute path, and for `SKILL.md` the same three
/// for its directory.
fn candidates(file: &Path, base: &Path, with_names: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |p: &Path| {
        out.push(relative(base, p));
        if with_names {
            out.push(p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        }
        out.push(p.to_string_lossy().into_owned());
    };
    push(file);
    if file.file_name().is_some_and(|n| n == "SKILL.md")
        && let Some(dir) = file.parent()
    {
        push(dir);
    }
    out
}

fn matches_any(file: &Path, globs: &[GlobMatcher], base: &Path) -> bool {
    let candidates = candidates(file, base, true);
    globs.iter().any(|g| candidates.iter().any(|c| g.is_match(c)))
}

/// `path.relative(from, to)` for absolute, normalised paths.
pub fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(to[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

/// Globs and `!`/`+`/`-` entries, as opposed to plain paths.
fn is_pattern(entry: &str) -> bool {
    entry.starts_with('!')
        || entry.starts_with('+')
        || entry.starts_with('-')
        || entry.contains('*')
        || entry.contains('?')
}

/// `<dir>/.agents/skills` for `cwd` and each ancestor, up to the git
/// repository root (a directory holding `.git`) or the file-system root.
fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.join(".agents").join("skills"));
        if Some(dir) == git_root {
            break;
        }
    }
    dirs
}

struct Layout<'a> {
    cwd: &'a Path,
    agent_dir: &'a Path,
    home: &'a Path,
}

/// The files of `-e` packages, the enabled resolved files (unless disabled
/// by `--no-*`), then the command-line paths, one per real path.
fn final_paths(
    resolved: &[(PathBuf, Meta, bool)],
    disabled: bool,
    cli_packages: &[PathBuf],
    cli: &[String],
    l: &Layout<'_>,
) -> Vec<PathBuf> {
    let enabled = resolved.iter().filter(|(_, _, on)| *on && !disabled).map(|(p, _, _)| p.clone());
    let cli = cli.iter().map(|p| walk::resolve_path(p, l.cwd, l.home));
    let mut keys = HashSet::new();
    cli_packages.iter().cloned().chain(enabled).chain(cli).filter(|p| keys.insert(walk::path_key(p))).collect()
}

fn metadata(resolved: &[(PathBuf, Meta, bool)]) -> HashMap<PathBuf, Meta> {
    let mut map = HashMap::new();
    for (path, meta, _) in resolved {
        map.entry(path.clone()).or_insert_with(|| meta.clone());
    }
    map
}

fn load_skills(
    resolved: Vec<(PathBuf, Meta, bool)>,
    o: &ResourceOptions,
    l: &Layout<'_>,
    out: &mut Vec<Diagnostic>,
) -> Vec<Skill> {
    let metadata = metadata(&resolved);
    let user_dir = l.agent_dir.join("skills");
    let project_dir = l.cwd.join(".pi").join("skills");
    let mut loaded: Vec<Skill> = Vec::new();
    let mut real_paths = HashSet::new();
    let mut collisions = Vec::new();
    for path in final_paths(&resolved, o.no_skills, &o.packages.cli_skills, &o.extra_skill_paths, l) {
        let scope = if walk::is_within(&user_dir, &path) {
            Scope::User
        } else if walk::is_within(&project_dir, &path) {
            Scope::Project
        } else {
            Scope::Temporary
        };
        let files = match walk::kind(&path) {
            None => {
                out.push(Diagnostic::warning("skill path does not exist", &path));
                continue;
            }
            Some(Kind::Dir) => walk::collect_skill_files(&path, SkillDirMode::Pi),
            Some(Kind::File) if path.to_string_lossy().ends_with(".md") => vec![path],
            Some(_) => {
                out.push(Diagnostic::warning("skill path is not a markdown file", &path));
                continue;
            }
        };
        for file in files {
            let (skill, diagnostics) = skills::load_skill(&file, |dir| match metadata.get(&file) {
                Some(meta) => meta.source_info(&file),
                None => SourceInfo {
                    path: file.clone(),
                    source: SourceKind::Local,
                    scope,
                    base_dir: Some(dir.to_path_buf()),
                    extension: None,
                },
            });
            out.extend(diagnostics);
            let Some(skill) = skill else { continue };
            let key = walk::path_key(&skill.path);
            if real_paths.contains(&key) {
                continue;
            }
            if loaded.iter().any(|s| s.name == skill.name) {
                collisions.push(collision(format!("name \"{}\" collision", skill.name), &skill.path));
            } else {
                real_paths.insert(key);
                loaded.push(skill);
            }
        }
    }
    out.extend(collisions);
    loaded
}

fn load_templates(
    resolved: Vec<(PathBuf, Meta, bool)>,
    o: &ResourceOptions,
    l: &Layout<'_>,
    out: &mut Vec<Diagnostic>,
) -> Vec<Template> {
    let metadata = metadata(&resolved);
    let user_dir = l.agent_dir.join("prompts");
    let project_dir = l.cwd.join(".pi").join("prompts");
    let source_info = |file: &Path| match metadata.get(file) {
        Some(meta) => meta.source_info(file),
        None => {
            let (scope, base_dir) = if walk::is_within(&user_dir, file) {
                (Scope::User, user_dir.clone())
            } else if walk::is_within(&project_dir, file) {
                (Scope::Project, project_dir.clone())
            } else {
                (Scope::Temporary, file.parent().map(Path::to_path_buf).unwrap_or_default())
            };
            SourceInfo {
                path: file.to_path_buf(),
                source: SourceKind::Local,
                scope,
                base_dir: Some(base_dir),
                extension: None,
            }
        }
    };
    let mut loaded: Vec<Template> = Vec::new();
    let mut collisions = Vec::new();
    for path in final_paths(&resolved, o.no_templates, &o.packages.cli_prompts, &o.extra_template_paths, l) {
        let files = match walk::kind(&path) {
            Some(Kind::Dir) => walk::collect_prompt_dir_plain(&path),
            Some(Kind::File) if path.to_string_lossy().ends_with(".md") => vec![path],
            _ => continue,
        };
        for file in files {
            match templates::load_template(&file, source_info(&file)) {
                Ok(t) if loaded.iter().any(|e| e.name == t.name) => {
                    collisions.push(collision(format!("name \"/{}\" collision", t.name), &t.path));
                }
                Ok(t) => loaded.push(t),
                Err(d) => out.push(d),
            }
        }
    }
    out.extend(collisions);
    for p in &o.extra_template_paths {
        let path = walk::resolve_path(p, l.cwd, l.home);
        if walk::kind(&path).is_none() && !out.iter().any(|d| d.path == path) {
            out.push(Diagnostic {
                kind: DiagnosticKind::Error,
                message: "Prompt template path does not exist".to_string(),
                path,
            });
        }
    }
    loaded
}

pub(super) fn collision(message: String, path: &Path) -> Diagnostic {
    Diagnostic { kind: DiagnosticKind::Collision, message, path: path.to_path_buf() }
}
