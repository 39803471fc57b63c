//! pi's `DefaultPackageManager` for the extension host (the `lib` function
//! `packages`), answered by pi-rpc's own package manager (the one behind
//! `pi install/remove/list/update` and start-up's package resolution), so
//! an extension installs, lists and resolves the same packages pi-rpc loads.
//!
//! `{op, cwd, agentDir, trusted, source, local, sources, packages}`; `op` is one of
//! `installAndPersist`, `removeAndPersist`, `install`, `remove` (without the
//! settings), `addSourceToSettings`, `removeSourceFromSettings` (the given
//! `packages` list changed: `{changed, packages}`, written by the caller's
//! `SettingsManager` as pi writes it), `list`,
//! `update`, `availableUpdates`, `resolve`, `resolveExtensionSources`,
//! `installedPath`.

use std::path::PathBuf;

use pi_extensions::packages::{PackageManager, Resolved, Resource, Scope};
use serde_json::{Value, json};

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user",
        Scope::Project => "project",
        Scope::Temporary => "temporary",
    }
}

fn resources(list: &[Resource]) -> Value {
    Value::Array(
        list.iter()
            .map(|r| {
                json!({"path": r.path, "enabled": r.enabled,
                       "metadata": {"source": r.package, "scope": scope_name(r.scope), "origin": "package"}})
            })
            .collect(),
    )
}

/// pi's `ResolvedPaths`.
fn resolved_paths(resolved: &Resolved) -> Value {
    let failures: Vec<Value> = resolved
        .failures
        .iter()
        .map(|f| json!({"source": f.source, "scope": scope_name(f.scope), "message": f.message}))
        .collect();
    json!({
        "extensions": resources(&resolved.extensions),
        "skills": resources(&resolved.skills),
        "prompts": resources(&resolved.prompts),
        "themes": resources(&resolved.themes),
        "installFailures": failures,
    })
}

pub(crate) fn call(args: &[Value]) -> Result<Value, String> {
    let request = args.first().cloned().unwrap_or(Value::Null);
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let cwd = PathBuf::from(text("cwd"));
    let agent_dir = PathBuf::from(text("agentDir"));
    let trusted = request.get("trusted").and_then(Value::as_bool).unwrap_or(true);
    let manager = PackageManager::new(&cwd, &agent_dir, trusted);
    let scope = if request.get("local").and_then(Value::as_bool) == Some(true) { Scope::Project } else { Scope::User };
    let source = text("source");
    match text("op").as_str() {
        "installAndPersist" => manager.install(&source, scope).map(|()| Value::Null),
        "removeAndPersist" => manager.remove(&source, scope).map(Value::Bool),
        "install" => manager.install_only(&source, scope).map(|()| Value::Null),
        "remove" => manager.remove_only(&source, scope).map(|()| Value::Null),
        "addSourceToSettings" | "removeSourceFromSettings" => {
            let mut packages = match request.get("packages") {
                Some(Value::Array(list)) => list.clone(),
                _ => Vec::new(),
            };
            let changed = if text("op") == "addSourceToSettings" {
                manager.add_to_list(&mut packages, &source, scope)
            } else {
                manager.remove_from_list(&mut packages, &source, scope)
            };
            Ok(json!({"changed": changed, "packages": packages}))
        }
        "availableUpdates" => Ok(Value::Array(
            manager
                .available_updates()
                .into_iter()
                .map(|u| json!({"source": u.source, "displayName": u.display_name, "type": u.kind, "scope": scope_name(u.scope)}))
                .collect(),
        )),
        "update" => manager.update(Some(source.as_str()).filter(|s| !s.is_empty())).map(|lines| json!(lines)),
        "list" => Ok(Value::Array(
            manager
                .list()
                .into_iter()
                .map(|p| {
                    let mut entry = json!({"source": p.source, "scope": scope_name(p.scope), "filtered": p.filtered});
                    if let Some(path) = p.installed_path {
                        entry["installedPath"] = json!(path);
                    }
                    entry
                })
                .collect(),
        )),
        "installedPath" => {
            let listed = manager.list().into_iter().find(|p| p.source == source && p.scope == scope);
            Ok(listed.and_then(|p| p.installed_path).map_or(Value::Null, |p| json!(p)))
        }
        "resolve" => Ok(resolved_paths(&manager.resolve_settings())),
        "resolveExtensionSources" => {
            let sources: Vec<String> =
                serde_json::from_value(request.get("sources").cloned().unwrap_or(json!([]))).unwrap_or_default();
            Ok(resolved_paths(&manager.resolve_cli(&sources)))
        }
        other => Err(format!("pi-rpc's package manager has no operation {other}")),
    }
}
