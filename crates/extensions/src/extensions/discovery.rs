//! Finding extensions, as pi 1.6.0 does, plus pi-rpc's process extensions:
//! `<cwd>/.pi/extensions/` (trusted projects only) and
//! `<agentDir>/extensions/`, the `extensions` entries of both settings
//! files, and `--extension` paths.
//!
//! In an auto-discovered directory (one level deep) a `.ts` / `.js` file is
//! a pi module (run by the TypeScript extension host), and so is a
//! sub-directory with `index.ts` / `index.js` or a `package.json` whose
//! `pi.extensions` lists entry files; an executable, `.py` or `.sh` file is a
//! process extension, and a sub-directory with `extension`, `extension.py`,
//! `extension.sh`, `index.py` or `index.sh` is one too. Settings entries
//! follow pi's resource-array rules: a path (or `+path`) adds, `-path`
//! removes that exact path, `!glob` removes what matches.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Entry points looked for in an extension directory, in order.
const ENTRY_POINTS: &[&str] =
    &["index.ts", "index.js", "extension", "extension.py", "extension.sh", "index.py", "index.sh"];

/// What discovery looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiscoverOptions {
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    /// Whether project-local extensions load (see `resources::trust`).
    pub project_trusted: bool,
    /// `--extension` values, in order (relative to `cwd`).
    pub cli_paths: Vec<String>,
    /// `--no-extensions`: only `--extension` paths load.
    pub no_extensions: bool,
    /// The enabled extensions of the settings' pi packages (after the
    /// user's own, as pi orders them; dropped by `--no-extensions`).
    pub package_paths: Vec<PathBuf>,
}

/// The extensions to start, in load order, and the paths that could not be loaded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovered {
    pub paths: Vec<PathBuf>,
    /// `(path, error)` for each named path that is missing or holds no extension.
    pub errors: Vec<(String, String)>,
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

fn extension_of(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or_default()
}

/// Whether `path` is a module written against pi's TypeScript API (run by
/// the extension host) rather than a process speaking pi-rpc's protocol:
/// TypeScript always, JavaScript unless it is executable.
pub fn is_pi_module(path: &Path) -> bool {
    match extension_of(path) {
        "ts" | "mts" | "cts" => true,
        "js" | "mjs" | "cjs" => !is_executable(path),
        _ => false,
    }
}

/// A file an auto-discovered directory holds as an extension: pi's `.ts` /
/// `.js` modules, executables, Python and shell scripts.
fn is_candidate_file(path: &Path) -> bool {
    path.is_file() && (is_executable(path) || matches!(extension_of(path), "ts" | "js" | "py" | "sh"))
}

/// The `pi.extensions` entries of a directory's `package.json`, resolved
/// (globs expanded); `None` when there is no such manifest.
fn manifest_entries(dir: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let manifest: Value = serde_json::from_str(&text).ok()?;
    let entries = manifest.get("pi")?.get("extensions")?.as_array()?;
    let mut out = Vec::new();
    for entry in entries.iter().filter_map(Value::as_str) {
        let relative = entry.trim_start_matches("./");
        if relative.contains(['*', '?', '[']) {
            out.extend(glob_files(dir, relative));
        } else {
            out.push(dir.join(relative));
        }
    }
    Some(out)
}

/// Files under `dir` whose relative path matches `pattern` (sorted).
fn glob_files(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).build() else { return Vec::new() };
    let matcher = glob.compile_matcher();
    let mut found: Vec<PathBuf> = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .max_depth(Some(8))
        .build()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.is_file() && p.strip_prefix(dir).is_ok_and(|r| matcher.is_match(r)))
        .collect();
    found.sort();
    found
}

/// The extensions a directory is (one or more), or none.
fn dir_extensions(dir: &Path) -> Vec<PathBuf> {
    if let Some(entries) = manifest_entries(dir) {
        return entries.into_iter().filter(|p| p.is_file()).collect();
    }
    ENTRY_POINTS.iter().map(|name| dir.join(name)).find(|p| p.is_file()).into_iter().collect()
}

/// The extensions of a pi package's extension directory: the directory's own
/// entry points, else its contents one level deep (pi's rule).
pub(crate) fn package_extension_entries(dir: &Path) -> Vec<PathBuf> {
    let own = dir_extensions(dir);
    if own.is_empty() { scan_dir(dir) } else { own }
}

/// The extensions of an auto-discovered directory (one level deep, by name).
fn scan_dir(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut entries: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.')))
        .collect();
    entries.sort();
    entries
        .into_iter()
        .flat_map(|p| {
            if p.is_dir() { dir_extensions(&p) } else { is_candidate_file(&p).then_some(p).into_iter().collect() }
        })
        .collect()
}

/// An explicitly named path: a file, or a directory with an entry point.
fn resolve_named(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if path.is_dir() {
        let found = dir_extensions(path);
        if found.is_empty() {
            return Err(format!(
                "no extension entry point in {} (expected a package.json \"pi.extensions\" list or one of: {})",
                path.display(),
                ENTRY_POINTS.join(", ")
            ));
        }
        return Ok(found);
    }
    Err(format!("extension not found: {}", path.display()))
}

fn absolute(value: &str, base: &Path) -> PathBuf {
    let p = crate::config::expand_home(Path::new(value));
    if p.is_absolute() { p } else { base.join(p) }
}

/// One `extensions` entry of a settings file.
enum Entry {
    Add(String),
    Remove(String),
    RemoveGlob(String),
}

/// The `extensions` entries of a settings file; `builtin:` entries (pi's
/// built-in extensions, not part of pi-rpc) are skipped.
fn settings_entries(settings_file: &Path) -> Vec<Entry> {
    let Ok(text) = std::fs::read_to_string(settings_file) else { return Vec::new() };
    let Ok(value) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) else { return Vec::new() };
    let Some(list) = value.get("extensions").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .filter_map(Value::as_str)
        .filter(|s| !s.is_empty() && !s.trim_start_matches(['+', '-']).starts_with("builtin:"))
        .map(|s| match (s.strip_prefix('-'), s.strip_prefix('!'), s.strip_prefix('+')) {
            (Some(path), _, _) => Entry::Remove(path.to_string()),
            (_, Some(glob), _) => Entry::RemoveGlob(glob.to_string()),
            (_, _, Some(path)) => Entry::Add(path.to_string()),
            _ => Entry::Add(s.to_string()),
        })
        .collect()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Exclusions of one settings file, applied after everything is found.
struct Exclusions {
    exact: Vec<PathBuf>,
    globs: Vec<(globset::GlobMatcher, PathBuf)>,
}

impl Exclusions {
    fn excludes(&self, path: &Path) -> bool {
        let path = canonical(path);
        self.exact.iter().any(|e| path == *e || path.starts_with(e))
            || self
                .globs
                .iter()
                .any(|(m, base)| m.is_match(&path) || path.strip_prefix(base).is_ok_and(|r| m.is_match(r)))
    }
}

/// Apply one settings file: add its entries, remember its exclusions.
fn apply_settings(found: &mut Discovered, exclusions: &mut Exclusions, settings_file: &Path, base: &Path) {
    for entry in settings_entries(settings_file) {
        match entry {
            Entry::Add(value) => add_named(found, &value, base),
            Entry::Remove(value) => exclusions.exact.push(canonical(&absolute(&value, base))),
            Entry::RemoveGlob(glob) => {
                if let Ok(g) = globset::GlobBuilder::new(&glob).literal_separator(false).build() {
                    exclusions.globs.push((g.compile_matcher(), canonical(base)));
                }
            }
        }
    }
}

fn add_named(found: &mut Discovered, value: &str, base: &Path) {
    let path = absolute(value, base);
    match resolve_named(&path) {
        Ok(paths) => found.paths.extend(paths),
        Err(e) => found.errors.push((path.display().to_string(), e)),
    }
}

/// Find the extensions to load, in pi's order: `--extension` paths first,
/// then project (settings entries, then `.pi/extensions/`), user (settings
/// entries, then `extensions/`) and the packages'. A file found twice loads
/// once, where it comes first; settings exclusions (`-path`, `!glob`) remove
/// discovered and listed ones, not `--extension` paths.
pub fn discover(options: &DiscoverOptions) -> Discovered {
    let mut found = Discovered::default();
    for value in &options.cli_paths {
        add_named(&mut found, value, &options.cwd);
    }
    if !options.no_extensions {
        let mut discovered = Discovered::default();
        let mut exclusions = Exclusions { exact: Vec::new(), globs: Vec::new() };
        if options.project_trusted {
            let project = options.cwd.join(".pi");
            apply_settings(&mut discovered, &mut exclusions, &project.join("settings.json"), &project);
            discovered.paths.extend(scan_dir(&project.join("extensions")));
        }
        apply_settings(&mut discovered, &mut exclusions, &options.agent_dir.join("settings.json"), &options.agent_dir);
        discovered.paths.extend(scan_dir(&options.agent_dir.join("extensions")));
        discovered.paths.retain(|p| !exclusions.excludes(p));
        found.paths.extend(discovered.paths);
        found.paths.extend(options.package_paths.iter().cloned());
        found.errors.extend(discovered.errors);
    }
    let mut seen = HashSet::new();
    found.paths.retain(|p| seen.insert(canonical(p)));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str, executable: bool) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn names(found: &Discovered) -> Vec<String> {
        found.paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn finds_user_project_settings_and_cli_extensions() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let user_ext = agent.path().join("extensions");
        write(&user_ext.join("a.py"), "", false);
        write(&user_ext.join("bin-tool"), "", true);
        write(&user_ext.join("notes.md"), "", false);
        write(&user_ext.join("gate.ts"), "", false);
        write(&user_ext.join(".hidden.py"), "", false);
        write(&user_ext.join("pack/index.py"), "", false);
        write(&user_ext.join("tsdir/index.ts"), "", false);
        write(&user_ext.join("tsdir/helper.ts"), "", false);
        write(&user_ext.join("empty/readme.txt"), "", false);
        write(&cwd.path().join(".pi/extensions/p.sh"), "", false);
        write(&cwd.path().join("mine/x.py"), "", false);
        write(&agent.path().join("settings.json"), r#"{"extensions":["builtin:mcp","+extra/e.py","-gone"]}"#, false);
        write(&agent.path().join("extra/e.py"), "", false);

        let mut options = DiscoverOptions {
            agent_dir: agent.path().to_path_buf(),
            cwd: cwd.path().to_path_buf(),
            project_trusted: true,
            cli_paths: vec!["mine/x.py".into(), "missing.py".into(), "mine".into()],
            no_extensions: false,
            package_paths: Vec::new(),
        };
        let found = discover(&options);
        assert_eq!(names(&found), ["x.py", "p.sh", "e.py", "a.py", "bin-tool", "gate.ts", "index.py", "index.ts"]);
        assert_eq!(found.errors.len(), 2, "{:?}", found.errors);
        assert!(found.errors[0].1.contains("extension not found"));
        assert!(found.errors[1].1.contains("no extension entry point"));

        options.project_trusted = false;
        options.no_extensions = true;
        options.cli_paths = vec!["mine/x.py".into()];
        let found = discover(&options);
        assert_eq!(found.paths.len(), 1);
        assert!(found.errors.is_empty());
    }

    #[test]
    fn package_manifests_and_settings_exclusions() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let ext = agent.path().join("extensions");
        write(&ext.join("pkg/package.json"), r#"{"pi":{"extensions":["./src/main.ts","./more/*.ts"]}}"#, false);
        write(&ext.join("pkg/src/main.ts"), "", false);
        write(&ext.join("pkg/more/b.ts"), "", false);
        write(&ext.join("pkg/more/a.ts"), "", false);
        write(&ext.join("pkg/index.ts"), "", false);
        write(&ext.join("drop.ts"), "", false);
        write(&ext.join("keep.js"), "", false);
        write(&ext.join("skip-me.ts"), "", false);
        write(
            &agent.path().join("settings.json"),
            r#"{"extensions":["-extensions/drop.ts","!**/skip-*.ts","+builtin:llama.cpp"]}"#,
            false,
        );
        let options = DiscoverOptions {
            agent_dir: agent.path().to_path_buf(),
            cwd: cwd.path().to_path_buf(),
            project_trusted: false,
            cli_paths: vec![ext.join("drop.ts").display().to_string()],
            no_extensions: false,
            package_paths: Vec::new(),
        };
        let found = discover(&options);
        assert_eq!(names(&found), ["drop.ts", "keep.js", "main.ts", "a.ts", "b.ts"], "{:?}", found.errors);
        assert!(found.errors.is_empty());
    }

    #[test]
    fn typescript_is_a_module_and_javascript_unless_executable() {
        let dir = tempfile::tempdir().unwrap();
        for (name, exec, module) in
            [("a.ts", true, true), ("b.js", false, true), ("c.js", true, false), ("d.py", false, false)]
        {
            let p = dir.path().join(name);
            write(&p, "", exec);
            assert_eq!(is_pi_module(&p), module, "{name}");
        }
    }
}
