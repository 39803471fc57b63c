//! pi's checks of a server an extension registers (`pi.registerMcpServer()`),
//! in pi's words: the name and config valid, the name not another
//! extension's, and no other registered server sharing its tool namespace
//! (names that differ only in `-` and `_`). Made by the session's registry
//! and by the extensions asked about project trust before the session.

use serde_json::{Value, json};

use super::config::{ConfigSources, Exposure, ServerConfig, parse_server, same_server_name};

/// Check `extension_path`'s registration of `name` against `registered`
/// (`(name, extension path)` of the servers registered so far): its server
/// (`None` when `enabled: false`), or the error the call throws.
pub fn check_registration<'a>(
    name: &str,
    config: &Value,
    extension_path: &str,
    sources: &ConfigSources<'_>,
    registered: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Option<ServerConfig>, String> {
    let server = parse_server(name, config, &format!("extension {extension_path}"), sources)
        .map_err(|error| format!("Invalid MCP server registered by extension \"{extension_path}\": {error}"))?;
    let registered: Vec<(&str, &str)> = registered.into_iter().collect();
    if let Some((_, owner)) = registered.iter().find(|(other, owner)| *other == name && *owner != extension_path) {
        return Err(format!("MCP server \"{name}\" is already registered by extension \"{owner}\""));
    }
    if let Some((clash, _)) = registered.iter().find(|(other, _)| *other != name && same_server_name(other, name)) {
        return Err(format!("MCP server \"{name}\" conflicts with registered server \"{clash}\""));
    }
    Ok(server)
}

/// The config pi keeps for a valid registration: the one given, each older
/// exposure name (`codemode-deferred`) replaced by its current name.
pub fn with_current_exposure_names(config: &Value) -> Value {
    let current = |value: &mut Value| {
        if let Some(exposure) = value.as_str().and_then(Exposure::parse) {
            *value = json!(exposure.as_str());
        }
    };
    let mut config = config.clone();
    if let Some(exposure) = config.get_mut("exposure") {
        current(exposure);
    }
    if let Some(tools) = config.get_mut("toolExposure").and_then(Value::as_object_mut) {
        tools.values_mut().for_each(current);
    }
    config
}

/// [`check_registration`] for an SDK session's extensions (its own
/// registry, kept by the extension host): `{name, config, extensionPath,
/// registered: [[name, extension path]…], cwd, agentDir}` answered with
/// `{config}` (what to keep) or `{error}` (what the call throws).
pub fn check_registration_request(request: &Value) -> Value {
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
    let registered: Vec<(&str, &str)> = request
        .get("registered")
        .and_then(Value::as_array)
        .map(|pairs| pairs.iter().filter_map(|pair| Some((pair.get(0)?.as_str()?, pair.get(1)?.as_str()?))).collect())
        .unwrap_or_default();
    let config = request.get("config").cloned().unwrap_or(Value::Null);
    let (agent_dir, cwd) = (std::path::PathBuf::from(text("agentDir")), std::path::PathBuf::from(text("cwd")));
    let sources = ConfigSources { agent_dir: &agent_dir, cwd: &cwd, project_trusted: false, env: None };
    match check_registration(text("name"), &config, text("extensionPath"), &sources, registered) {
        Ok(_) => json!({"config": with_current_exposure_names(&config)}),
        Err(error) => json!({"error": error}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_is_checked_in_pis_words_and_kept_with_current_exposure_names() {
        let request = |name: &str, config: Value| {
            check_registration_request(&json!({
                "name": name, "config": config, "extensionPath": "<b>", "cwd": "/", "agentDir": "/nonexistent",
                "registered": [["shared", "<a>"], ["my-docs", "<a>"]],
            }))
        };
        let kept = request(
            "old",
            json!({"command": "x", "exposure": "codemode-deferred", "toolExposure": {"t": "codemode-deferred"}}),
        );
        assert_eq!(
            kept,
            json!({"config": {"command": "x", "exposure": "codemode", "toolExposure": {"t": "codemode"}}})
        );
        assert_eq!(
            request("shared", json!({"command": "x"})),
            json!({"error": "MCP server \"shared\" is already registered by extension \"<a>\""})
        );
        assert_eq!(
            request("my_docs", json!({"command": "x"})),
            json!({"error": "MCP server \"my_docs\" conflicts with registered server \"my-docs\""})
        );
        let invalid = request("empty", json!({}));
        assert!(invalid["error"].as_str().unwrap().starts_with("Invalid MCP server registered by extension \"<b>\": "));
    }
}
