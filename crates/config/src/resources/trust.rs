//! Project trust as pi 1.6 decides it without a UI (RPC mode): whether the
//! project's `.pi` resources and `.agents/skills` load.
//!
//! pi trusts a project when `--approve` says so, or when it has nothing
//! that needs trust (no `.pi/{settings.json,mcp.json,extensions,skills,prompts,themes,SYSTEM.md,APPEND_SYSTEM.md}`,
//! no `.agents/skills` in the cwd or an ancestor other than `~/.agents/skills`)
//! and `trust.json` does not say otherwise. A project with such resources is
//! trusted only by `trust.json` (`{"<dir>": true|false}`, the nearest
//! entry for the cwd or an ancestor wins) or by `defaultProjectTrust:
//! "always"` in the user settings; pi would ask, and in RPC mode it cannot,
//! so the answer is no.

use std::path::{Path, PathBuf};

use serde_json::Value;

const TRUST_REQUIRING_PROJECT_CONFIG_RESOURCES: [&str; 8] =
    ["settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md"];

/// Whether project resources load for `cwd`. `trust_override` is
/// `--approve` (`Some(true)`) / `--no-approve` (`Some(false)`). An unreadable
/// or malformed `<agent_dir>/trust.json` is an error (pi fails too).
pub fn project_trusted(
    agent_dir: &Path,
    cwd: &Path,
    home: &Path,
    trust_override: Option<bool>,
) -> Result<bool, String> {
    if let Some(decision) = trust_override {
        return Ok(decision);
    }
    let stored = stored_decision(agent_dir, cwd)?;
    if !has_trust_requiring_resources(cwd, home) {
        return Ok(stored.unwrap_or(true));
    }
    if let Some(decision) = stored {
        return Ok(decision);
    }
    Ok(default_project_trust(agent_dir) == Some(true))
}

/// True when `cwd` has project resources that need trust.
pub fn has_trust_requiring_resources(cwd: &Path, home: &Path) -> bool {
    let cwd = canonical(cwd);
    let config_dir = cwd.join(".pi");
    if TRUST_REQUIRING_PROJECT_CONFIG_RESOURCES.iter().any(|e| config_dir.join(e).exists()) {
        return true;
    }
    let user_agents_skills = canonical(home).join(".agents").join("skills");
    cwd.ancestors().any(|dir| {
        let skills = dir.join(".agents").join("skills");
        skills != user_agents_skills && skills.exists()
    })
}

/// The `trust.json` decision for `cwd` or its nearest ancestor that has one.
fn stored_decision(agent_dir: &Path, cwd: &Path) -> Result<Option<bool>, String> {
    let path = agent_dir.join("trust.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    let parsed: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("Failed to read trust store {}: {e}", path.display()))?;
    let Value::Object(map) = parsed else {
        return Err(format!("Invalid trust store {}: expected an object", path.display()));
    };
    let mut entries = Vec::new();
    for (key, value) in map {
        match value {
            Value::Bool(b) => entries.push((super::walk::normalize(Path::new(&key)), Some(b))),
            Value::Null => entries.push((super::walk::normalize(Path::new(&key)), None)),
            _ => {
                return Err(format!(
                    "Invalid trust store {}: value for {} must be true, false, or null",
                    path.display(),
                    Value::String(key)
                ));
            }
        }
    }
    let cwd = canonical(cwd);
    for dir in cwd.ancestors() {
        if let Some((_, Some(decision))) = entries.iter().find(|(k, d)| k == dir && d.is_some()) {
            return Ok(Some(*decision));
        }
    }
    Ok(None)
}

/// `defaultProjectTrust` of the user settings: `always` → `Some(true)`, `never` → `Some(false)`.
fn default_project_trust(agent_dir: &Path) -> Option<bool> {
    let bytes = std::fs::read(agent_dir.join("settings.json")).ok()?;
    let value: Value = serde_json::from_str(String::from_utf8_lossy(&bytes).trim_start_matches('\u{feff}')).ok()?;
    match value.get("defaultProjectTrust")?.as_str()? {
        "always" => Some(true),
        "never" => Some(false),
        _ => None,
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| super::walk::normalize(path))
}

/// Store `trusted` for `cwd` in `<agent_dir>/trust.json`, as pi's trust store
/// does for a `project_trust` answer with `remember: true`: under its lock
/// (the `trust.json.lock` directory, tried 10 times 20 ms apart), the
/// canonical cwd as the key, the keys sorted, 2-space JSON.
pub fn remember(agent_dir: &Path, cwd: &Path, trusted: bool) -> Result<(), String> {
    let path = agent_dir.join("trust.json");
    std::fs::create_dir_all(agent_dir).map_err(|e| format!("cannot create {}: {e}", agent_dir.display()))?;
    let lock = agent_dir.join("trust.json.lock");
    let mut attempt = 0;
    while let Err(e) = std::fs::create_dir(&lock) {
        attempt += 1;
        if e.kind() != std::io::ErrorKind::AlreadyExists || attempt == 10 {
            return Err(format!("cannot lock {}: {e}", path.display()));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let written = write_decision(&path, cwd, trusted);
    let _ = std::fs::remove_dir(&lock);
    written
}

fn write_decision(path: &Path, cwd: &Path, trusted: bool) -> Result<(), String> {
    let mut entries: std::collections::BTreeMap<String, Value> = match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            match serde_json::from_str(text.trim_start_matches('\u{feff}')) {
                Ok(Value::Object(map)) => map.into_iter().collect(),
                Ok(_) => return Err(format!("Invalid trust store {}: expected an object", path.display())),
                Err(e) => return Err(format!("Failed to read trust store {}: {e}", path.display())),
            }
        }
        Err(_) => Default::default(),
    };
    let key = canonical(cwd).display().to_string();
    entries.retain(|k, v| k != &key && matches!(v, Value::Bool(_) | Value::Null));
    entries.insert(key, Value::Bool(trusted));
    let text = serde_json::to_string_pretty(&entries).map_err(|e| e.to_string())?;
    std::fs::write(path, format!("{text}\n")).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
