//! Finding sessions on disk: default directories, the most recent session, and id/prefix/path references.

use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::entry::SessionHeader;
use super::error::SessionError;
use super::record::is_header;

/// Resolve `input` like pi's `resolvePath`: `~` and `~/…` expand to the home
/// directory, relative paths are taken from `base`, and `.`/`..` segments
/// are folded lexically (no symlink resolution).
pub(crate) fn resolve_path(input: &Path, base: &Path) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    let expanded = match input.to_str() {
        Some("~") => home().unwrap_or_else(|| input.to_path_buf()),
        Some(s) if s.starts_with("~/") => match home() {
            Some(h) => h.join(&s[2..]),
            None => input.to_path_buf(),
        },
        _ => input.to_path_buf(),
    };
    let joined = if expanded.is_absolute() { expanded } else { base.join(expanded) };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolve against the process working directory.
pub(crate) fn resolve_from_cwd(input: &Path) -> PathBuf {
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    resolve_path(input, &base)
}

/// pi's per-project session directory: `<agent_dir>/sessions/--<cwd>--`,
/// where `<cwd>` is the absolute cwd without its leading `/` (or `\`) and
/// with every `/`, `\` and `:` replaced by `-`. Not created here.
pub fn default_session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    let cwd = resolve_from_cwd(cwd).to_string_lossy().into_owned();
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(&cwd);
    let safe: String = trimmed.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    resolve_from_cwd(agent_dir).join("sessions").join(format!("--{safe}--"))
}

/// Every project directory under `<agent_dir>/sessions` (pi's global search).
pub fn session_dirs(agent_dir: &Path) -> Vec<PathBuf> {
    let root = resolve_from_cwd(agent_dir).join("sessions");
    let Ok(read) = std::fs::read_dir(&root) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = read.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

/// The header of a session file, if its first readable line is one.
pub fn read_session_header(path: &Path) -> Option<SessionHeader> {
    let value = read_header_value(path)?;
    serde_json::from_value(value).ok()
}

fn header_cwd_matches(header: &Value, cwd: &Path) -> bool {
    match header.get("cwd").and_then(Value::as_str) {
        Some(c) if !c.is_empty() => resolve_from_cwd(Path::new(c)) == resolve_from_cwd(cwd),
        _ => false,
    }
}

/// `.jsonl` files of `dir`, most recently modified first.
fn session_files_by_mtime(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|p| std::fs::metadata(&p).and_then(|m| m.modified()).ok().map(|t| (t, p)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    files.into_iter().map(|(_, p)| p).collect()
}

/// The most recently modified session of `dir` (`--continue`): the newest
/// `.jsonl` file with a valid header, restricted to sessions of `cwd` when
/// given (pi filters by cwd only for a custom session dir).
pub fn find_most_recent(dir: &Path, cwd: Option<&Path>) -> Option<PathBuf> {
    session_files_by_mtime(&resolve_from_cwd(dir)).into_iter().find(|path| match read_header_value(path) {
        Some(header) => cwd.is_none_or(|c| header_cwd_matches(&header, c)),
        None => false,
    })
}

/// Resolve a session reference (`--session`, `--fork`, resume by id):
///
/// * containing `/` or `\`, or ending in `.jsonl`: a path, resolved against
///   `cwd` (it need not exist);
/// * otherwise a session id: an exact id match in any of `dirs` wins;
///   then the first directory (in `dirs` order, e.g. the project's own dir
///   first, then [`session_dirs`]) holding sessions whose id starts with
///   the reference: exactly one is the answer, several are an
///   [`SessionError::AmbiguousSession`] error listing them;
/// * nothing found: [`SessionError::NoSessionFound`].
pub fn resolve_session(reference: &str, cwd: &Path, dirs: &[PathBuf]) -> Result<PathBuf, SessionError> {
    if reference.contains('/') || reference.contains('\\') || reference.ends_with(".jsonl") {
        return Ok(resolve_path(Path::new(reference), cwd));
    }
    if reference.is_empty() {
        return Err(SessionError::NoSessionFound(reference.to_string()));
    }
    let mut per_dir: Vec<Vec<(String, PathBuf)>> = Vec::new();
    for dir in dirs {
        let mut sessions = Vec::new();
        for path in session_files_by_mtime(&resolve_path(dir, cwd)) {
            if let Some(id) =
                read_header_value(&path).and_then(|h| h.get("id").and_then(Value::as_str).map(String::from))
            {
                if id == reference {
                    return Ok(path);
                }
                sessions.push((id, path));
            }
        }
        per_dir.push(sessions);
    }
    for sessions in per_dir {
        let matches: Vec<&(String, PathBuf)> = sessions.iter().filter(|(id, _)| id.starts_with(reference)).collect();
        match matches.as_slice() {
            [] => continue,
            [(_, path)] => return Ok(path.clone()),
            many => {
                return Err(SessionError::AmbiguousSession {
                    reference: reference.to_string(),
                    candidates: many.iter().map(|(id, p)| format!("{id} ({})", p.display())).collect(),
                });
            }
        }
    }
    Err(SessionError::NoSessionFound(reference.to_string()))
}

/// Read only the header of `path` (for discovery): the first readable record
/// if it is a header, within the first MiB. Any failure gives `None`.
pub(crate) fn read_header_value(path: &Path) -> Option<Value> {
    const LIMIT: u64 = 1024 * 1024;
    let file = std::fs::File::open(path).ok()?;
    let mut reader = BufReader::new(file.take(LIMIT));
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if is_header(&v) => return Some(v),
            Ok(_) => return None,
            Err(_) => continue,
        }
    }
}
