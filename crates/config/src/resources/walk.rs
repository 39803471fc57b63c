//! File-system side of resource discovery: pi's path resolution (`~`,
//! `file://`, relative to a base), and the directory walks that find
//! template and skill files, honouring `.gitignore`/`.ignore`/`.fdignore`.

use std::fs;
use std::path::{Component, Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::frontmatter::js_trim;

const IGNORE_FILE_NAMES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

/// Resolve `input` the way pi resolves a configured path: trimmed, `~` and
/// `~/…` expanded with `home`, `file://` URLs turned into paths, relative
/// paths joined to `base`; the result is lexically normalised (no `.`/`..`).
pub fn resolve_path(input: &str, base: &Path, home: &Path) -> PathBuf {
    let input = js_trim(input);
    let expanded = if input == "~" {
        home.to_path_buf()
    } else if let Some(rest) = input.strip_prefix("~/") {
        home.join(rest)
    } else if let Some(rest) = input.strip_prefix("file://") {
        PathBuf::from(percent_decode(rest))
    } else {
        PathBuf::from(input)
    };
    normalize(&base.join(expanded))
}

/// Remove `.` and resolve `..` without touching the file system (like `path.resolve`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The key pi compares resource paths with: the real path when it exists.
pub fn path_key(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `child` is `parent` or inside it (lexically).
pub fn is_within(parent: &Path, child: &Path) -> bool {
    child.starts_with(parent)
}

/// What a directory entry is, symlinks followed (broken links give `None`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Other,
}

/// The entries of `dir` sorted by name (Node's `readdirSync` order), with
/// their kind; unreadable directories give nothing.
pub fn read_dir_sorted(dir: &Path) -> Vec<(String, PathBuf, Kind)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf, Kind)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let file_type = entry.file_type().ok()?;
            let kind = if file_type.is_symlink() {
                // Broken links are skipped.
                let meta = fs::metadata(&path).ok()?;
                kind_of(&meta)
            } else if file_type.is_dir() {
                Kind::Dir
            } else if file_type.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            Some((entry.file_name().to_string_lossy().into_owned(), path, kind))
        })
        .collect();
    out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out
}

fn kind_of(meta: &fs::Metadata) -> Kind {
    if meta.is_dir() {
        Kind::Dir
    } else if meta.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// The kind of `path`, symlinks followed; `None` when it does not exist.
pub fn kind(path: &Path) -> Option<Kind> {
    fs::metadata(path).ok().map(|m| kind_of(&m))
}

/// Ignore rules gathered while walking down from a root: each directory's
/// ignore files add their patterns, prefixed with the directory's path
/// relative to the root (pi's approach).
pub(crate) struct IgnoreRules {
    root: PathBuf,
    lines: Vec<String>,
    matcher: Option<Gitignore>,
}

impl IgnoreRules {
    pub fn new(root: &Path) -> Self {
        IgnoreRules { root: root.to_path_buf(), lines: Vec::new(), matcher: None }
    }

    /// Read the ignore files of `dir` (a directory under the root).
    pub fn add_dir(&mut self, dir: &Path) {
        let prefix = match dir.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => String::new(),
            Ok(rel) => format!("{}/", rel.to_string_lossy()),
            Err(_) => String::new(),
        };
        let mut added = false;
        for name in IGNORE_FILE_NAMES {
            let Ok(text) = fs::read_to_string(dir.join(name)) else {
                continue;
            };
            for line in text.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if let Some(pattern) = prefix_pattern(line, &prefix) {
                    self.lines.push(pattern);
                    added = true;
                }
            }
        }
        if added {
            let mut builder = GitignoreBuilder::new(&self.root);
            for line in &self.lines {
                // A pattern the glob engine rejects is dropped, as a bad line in a gitignore is.
                let _ = builder.add_line(None, line);
            }
            self.matcher = builder.build().ok();
        }
    }

    /// Whether `path` (under the root) is ignored.
    pub fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let Some(matcher) = &self.matcher else {
            return false;
        };
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return false;
        };
        matcher.matched_path_or_any_parents(rel, is_dir).is_ignore()
    }
}

/// A pattern line from an ignore file in a sub-directory, rewritten to apply
/// from the root: comments/blank lines dropped, `!` kept in front, a leading
/// `/` removed, the directory prefix prepended.
fn prefix_pattern(line: &str, prefix: &str) -> Option<String> {
    let trimmed = js_trim(line);
    if trimmed.is_empty() || (trimmed.starts_with('#') && !trimmed.starts_with("\\#")) {
        return None;
    }
    let (negated, pattern) = if let Some(rest) = line.strip_prefix('!') {
        (true, rest)
    } else if line.starts_with("\\!") {
        (false, &line[1..])
    } else {
        (false, line)
    };
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let prefixed = format!("{prefix}{pattern}");
    Some(if negated { format!("!{prefixed}") } else { prefixed })
}

/// `.md` files of `dir` and its sub-directories (settings entries that name a
/// directory): dot entries and `node_modules` skipped, ignore files honoured.
pub fn collect_markdown_recursive(dir: &Path) -> Vec<PathBuf> {
    collect_files_recursive(dir, ".md")
}

/// Files of `dir` and its sub-directories whose name ends with `suffix`
/// (pi's walk of a settings entry that names a directory): dot entries and
/// `node_modules` skipped, each directory's ignore files honoured.
pub fn collect_files_recursive(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(dir);
    let mut out = Vec::new();
    collect_files_into(dir, suffix, &mut rules, &mut out);
    out
}

fn collect_files_into(dir: &Path, suffix: &str, rules: &mut IgnoreRules, out: &mut Vec<PathBuf>) {
    rules.add_dir(dir);
    for (name, path, kind) in read_dir_sorted(dir) {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if rules.ignores(&path, kind == Kind::Dir) {
            continue;
        }
        match kind {
            Kind::Dir => collect_files_into(&path, suffix, rules, out),
            Kind::File if name.ends_with(suffix) => out.push(path),
            _ => {}
        }
    }
}

/// The direct children of an auto-discovered directory pi looks at, in
/// name order, with whether each is a directory: dot entries and
/// `node_modules` skipped, the directory's ignore files honoured.
pub fn visible_children(dir: &Path) -> Vec<(PathBuf, bool)> {
    let mut rules = IgnoreRules::new(dir);
    rules.add_dir(dir);
    read_dir_sorted(dir)
        .into_iter()
        .filter(|(name, _, kind)| !name.starts_with('.') && name != "node_modules" && *kind != Kind::Other)
        .filter(|(_, path, kind)| !rules.ignores(path, *kind == Kind::Dir))
        .map(|(_, path, kind)| (path, kind == Kind::Dir))
        .collect()
}

/// Direct `.md` children of an auto-discovered prompts directory: dot
/// entries and `node_modules` skipped, the directory's ignore files honoured.
pub fn collect_prompt_dir(dir: &Path) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(dir);
    rules.add_dir(dir);
    read_dir_sorted(dir)
        .into_iter()
        .filter(|(name, path, kind)| {
            !name.starts_with('.')
                && name != "node_modules"
                && !rules.ignores(path, false)
                && *kind == Kind::File
                && name.ends_with(".md")
        })
        .map(|(_, path, _)| path)
        .collect()
}

/// Direct `.md` children of a directory given on the command line
/// (`--prompt-template DIR`): no other filtering.
pub fn collect_prompt_dir_plain(dir: &Path) -> Vec<PathBuf> {
    read_dir_sorted(dir)
        .into_iter()
        .filter(|(name, _, kind)| *kind == Kind::File && name.ends_with(".md"))
        .map(|(_, path, _)| path)
        .collect()
}

/// How loose Markdown files count as skill candidates in a skills directory.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SkillDirMode {
    /// pi's own directories and explicit paths: `.md` files directly in the root.
    Pi,
    /// `.agents/skills` directories: `.md` files below the root, not in it.
    Agents,
}

/// Skill files under `dir`: a directory holding `SKILL.md` yields that file
/// and is not searched further; otherwise loose `.md` files (per `mode`) are
/// candidates and sub-directories are searched (dot entries and
/// `node_modules` skipped, ignore files honoured).
pub fn collect_skill_files(dir: &Path, mode: SkillDirMode) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(dir);
    let mut out = Vec::new();
    collect_skills_into(dir, dir, mode, &mut rules, &mut out);
    out
}

fn collect_skills_into(dir: &Path, root: &Path, mode: SkillDirMode, rules: &mut IgnoreRules, out: &mut Vec<PathBuf>) {
    rules.add_dir(dir);
    let entries = read_dir_sorted(dir);
    let skill_file = entries
        .iter()
        .find(|(name, path, kind)| name == "SKILL.md" && *kind == Kind::File && !rules.ignores(path, false));
    if let Some((_, path, _)) = skill_file {
        out.push(path.clone());
        return;
    }
    let at_root = dir == root;
    for (name, path, kind) in entries {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let loose_ok = match mode {
            SkillDirMode::Pi => at_root,
            SkillDirMode::Agents => !at_root,
        };
        if kind == Kind::File && name.ends_with(".md") && loose_ok && !rules.ignores(&path, false) {
            out.push(path);
            continue;
        }
        if kind == Kind::Dir && !rules.ignores(&path, true) {
            collect_skills_into(&path, root, mode, rules, out);
        }
    }
}
