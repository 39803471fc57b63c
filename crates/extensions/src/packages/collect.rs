//! Which resources a package holds, by pi 1.6.0's rules: the `pi` manifest
//! of its `package.json` (`extensions`, `skills`, `prompts`, `themes`
//! arrays of paths and globs, with `!`/`+`/`-` entries), else the
//! conventional `extensions/`, `skills/`, `prompts/`, `themes/`
//! directories; a settings entry's object form narrows them further.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Filter, Kind, Resolved, Resource, Scope};
use crate::resources::discovery::{apply_patterns, matches_pattern};
use crate::resources::walk::{self, SkillDirMode};

/// Where the collected resources come from (for `Resource`).
pub(super) struct Origin<'a> {
    pub source: &'a str,
    pub scope: Scope,
    /// The package's directory (a lone file's: its directory), pi's `baseDir`.
    pub base_dir: Option<&'a Path>,
}

/// The `pi` resource arrays of a `package.json` (`None`: no manifest or none listed).
fn manifest(root: &Path) -> Option<[Option<Vec<String>>; 4]> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
    let pi = value.get("pi")?.as_object()?;
    let list = |key: &str| {
        let array = pi.get(key)?.as_array()?;
        array.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<String>>>()
    };
    let fields = Kind::ALL.map(|k| list(k.key()));
    fields.iter().any(Option::is_some).then_some(fields)
}

pub(super) fn has_layout(root: &Path) -> bool {
    manifest(root).is_some() || Kind::ALL.iter().any(|k| root.join(k.key()).exists())
}

fn is_override(entry: &str) -> bool {
    entry.starts_with('!') || entry.starts_with('+') || entry.starts_with('-')
}

/// Add a package's resources; false when it has neither a manifest nor a
/// conventional directory (a local directory is then one extension).
pub(super) fn collect_package(root: &Path, filter: Option<&Filter>, origin: &Origin<'_>, out: &mut Resolved) -> bool {
    let manifest = manifest(root);
    if let Some(filter) = filter {
        for kind in Kind::ALL {
            let all = manifest_files(root, manifest.as_ref(), kind);
            match (filter.autoload == Some(false), filter.get(kind)) {
                (true, patterns) => {
                    // A project entry narrowing the user's: only what it names changes.
                    for pattern in patterns.unwrap_or_default() {
                        let (exact, enabled, target) = match pattern.chars().next() {
                            Some('+') => (true, true, &pattern[1..]),
                            Some('-') => (true, false, &pattern[1..]),
                            Some('!') => (false, false, &pattern[1..]),
                            _ => (false, true, pattern.as_str()),
                        };
                        for file in all.iter().filter(|f| matches_pattern(f, target, exact, root)) {
                            out.add(kind, file, enabled, origin);
                        }
                    }
                }
                (false, Some(patterns)) if patterns.is_empty() => {
                    for file in &all {
                        out.add(kind, file, false, origin);
                    }
                }
                (false, Some(patterns)) => {
                    let enabled = apply_patterns(&all, &patterns, root);
                    for file in &all {
                        out.add(kind, file, enabled.contains(file), origin);
                    }
                }
                (false, None) => {
                    for file in &all {
                        out.add(kind, file, true, origin);
                    }
                }
            }
        }
        return true;
    }
    if manifest.is_some() {
        for kind in Kind::ALL {
            for file in manifest_files(root, manifest.as_ref(), kind) {
                out.add(kind, &file, true, origin);
            }
        }
        return true;
    }
    let mut any = false;
    for kind in Kind::ALL {
        let dir = root.join(kind.key());
        if dir.exists() {
            any = true;
            for file in collect_dir(&dir, kind) {
                out.add(kind, &file, true, origin);
            }
        }
    }
    any
}

/// The files of one kind a package offers: its manifest entries (with the
/// manifest's own `!`/`+`/`-` applied), else its conventional directory.
fn manifest_files(root: &Path, manifest: Option<&[Option<Vec<String>>; 4]>, kind: Kind) -> Vec<PathBuf> {
    match manifest.and_then(|m| m[kind as usize].as_ref()) {
        Some(entries) if !entries.is_empty() => {
            let mut files = Vec::new();
            for entry in entries.iter().filter(|e| !is_override(e)) {
                if entry.contains(['*', '?']) {
                    for path in expand_glob(root, entry) {
                        files.extend(collect_path(&path, kind));
                    }
                } else {
                    files.extend(collect_path(&walk::normalize(&root.join(entry)), kind));
                }
            }
            let overrides: Vec<String> = entries.iter().filter(|e| is_override(e)).cloned().collect();
            if overrides.is_empty() {
                return files;
            }
            let enabled = apply_patterns(&files, &overrides, root);
            files.into_iter().filter(|f| enabled.contains(f)).collect()
        }
        Some(_) => Vec::new(),
        None => {
            let dir = root.join(kind.key());
            if dir.exists() { collect_dir(&dir, kind) } else { Vec::new() }
        }
    }
}

/// A file as is; a directory by its kind's discovery rules.
fn collect_path(path: &Path, kind: Kind) -> Vec<PathBuf> {
    match walk::kind(path) {
        Some(walk::Kind::Dir) => collect_dir(path, kind),
        Some(_) => vec![path.to_path_buf()],
        None => Vec::new(),
    }
}

fn collect_dir(dir: &Path, kind: Kind) -> Vec<PathBuf> {
    match kind {
        Kind::Extensions => crate::extensions::discovery::package_extension_entries(dir),
        Kind::Skills => walk::collect_skill_files(dir, SkillDirMode::Pi),
        Kind::Prompts => walk::collect_markdown_recursive(dir),
        Kind::Themes => collect_json(dir),
    }
}

/// Theme files: `*.json` under a directory (hidden entries and `node_modules` skipped).
fn collect_json(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, path, kind) in walk::read_dir_sorted(dir) {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        match kind {
            walk::Kind::Dir => out.extend(collect_json(&path)),
            _ if name.ends_with(".json") => out.push(path),
            _ => {}
        }
    }
    out
}

/// The paths under `root` a manifest glob names (files and directories;
/// none through a hidden segment), sorted.
fn expand_glob(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let pattern = pattern.trim_start_matches("./");
    let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).build() else { return Vec::new() };
    let matcher = glob.compile_matcher();
    let mut found: Vec<PathBuf> = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(true)
        .max_depth(Some(12))
        .build()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p != root && p.strip_prefix(root).is_ok_and(|r| matcher.is_match(r)))
        .collect();
    found.sort();
    found
}

impl Resolved {
    /// The first mention of a path fixes whether it is enabled.
    pub(super) fn add(&mut self, kind: Kind, path: &Path, enabled: bool, origin: &Origin<'_>) {
        let list = self.list_mut(kind);
        if list.iter().any(|r| r.path == path) {
            return;
        }
        list.push(Resource {
            path: path.to_path_buf(),
            enabled,
            package: origin.source.to_string(),
            scope: origin.scope,
            base_dir: origin.base_dir.map(Path::to_path_buf),
        });
    }
}
