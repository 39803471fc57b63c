//! Finding extensions: executables (or `.py` / `.sh` / `.js` scripts) in
//! `<cwd>/.pi/extensions/` (trusted projects only) and
//! `<agentDir>/extensions/`, the `extensions` entries of both settings
//! files, and `--extension` paths. A directory holds one extension when it
//! has an entry point (`extension`, `extension.py`, `extension.sh`,
//! `index.py`, `index.sh`, `index.js`); otherwise each suitable file in it is one.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Entry points looked for in an extension directory, in order.
const ENTRY_POINTS: &[&str] = &["extension", "extension.py", "extension.sh", "index.py", "index.sh", "index.js"];

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

/// A file an auto-discovered directory may hold as an extension: an
/// executable, or a Python or shell script.
fn is_candidate_file(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    is_executable(path) || matches!(path.extension().and_then(|e| e.to_str()), Some("py" | "sh"))
}

fn entry_point(dir: &Path) -> Option<PathBuf> {
    ENTRY_POINTS.iter().map(|name| dir.join(name)).find(|p| p.is_file())
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
        .filter_map(|p| if p.is_dir() { entry_point(&p) } else { is_candidate_file(&p).then_some(p) })
        .collect()
}

/// An explicitly named path: a file, or a directory with an entry point.
fn resolve_named(path: &Path) -> Result<PathBuf, String> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if path.is_dir() {
        return entry_point(path).ok_or_else(|| {
            format!("no extension entry point in {} (expected one of: {})", path.display(), ENTRY_POINTS.join(", "))
        });
    }
    Err(format!("extension not found: {}", path.display()))
}

fn absolute(value: &str, base: &Path) -> PathBuf {
    let p = crate::config::expand_home(Path::new(value));
    if p.is_absolute() { p } else { base.join(p) }
}

/// The `extensions` entries of a settings file (`builtin:` and `-`/`!`
/// entries are pi's package controls and are skipped; `+path` loads `path`).
fn settings_entries(settings_file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(settings_file) else { return Vec::new() };
    let Ok(value) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) else { return Vec::new() };
    value
        .get("extensions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty() && !s.starts_with("builtin:") && !s.starts_with('-') && !s.starts_with('!'))
                .map(|s| s.trim_start_matches('+').to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Find the extensions to load: project (settings entries, then
/// `.pi/extensions/`), user (settings entries, then `extensions/`), then
/// `--extension` paths. A file found twice loads once.
pub fn discover(options: &DiscoverOptions) -> Discovered {
    let mut found = Discovered::default();
    let add_named = |found: &mut Discovered, value: &str, base: &Path| {
        let path = absolute(value, base);
        match resolve_named(&path) {
            Ok(p) => found.paths.push(p),
            Err(e) => found.errors.push((path.display().to_string(), e)),
        }
    };
    if !options.no_extensions {
        if options.project_trusted {
            let project = options.cwd.join(".pi");
            for entry in settings_entries(&project.join("settings.json")) {
                add_named(&mut found, &entry, &project);
            }
            found.paths.extend(scan_dir(&project.join("extensions")));
        }
        for entry in settings_entries(&options.agent_dir.join("settings.json")) {
            add_named(&mut found, &entry, &options.agent_dir);
        }
        found.paths.extend(scan_dir(&options.agent_dir.join("extensions")));
    }
    for value in &options.cli_paths {
        add_named(&mut found, value, &options.cwd);
    }
    let mut seen = HashSet::new();
    found.paths.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
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

    #[test]
    fn finds_user_project_settings_and_cli_extensions() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let user_ext = agent.path().join("extensions");
        write(&user_ext.join("a.py"), "", false);
        write(&user_ext.join("bin-tool"), "", true);
        write(&user_ext.join("notes.md"), "", false);
        write(&user_ext.join("old.ts"), "", false);
        write(&user_ext.join(".hidden.py"), "", false);
        write(&user_ext.join("pack/index.py"), "", false);
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
        };
        let found = discover(&options);
        let names: Vec<String> =
            found.paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["p.sh", "e.py", "a.py", "bin-tool", "index.py", "x.py"]);
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
}
