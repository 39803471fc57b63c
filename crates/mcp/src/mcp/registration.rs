//! pi's checks of a server an extension registers (`pi.registerMcpServer()`),
//! in pi's words: the name and config valid, the name not another
//! extension's, and no other registered server sharing its tool namespace
//! (names that differ only in `-` and `_`). Made by the session's registry
//! and by the extensions asked about project trust before the session.

use serde_json::Value;

use super::config::{ConfigSources, ServerConfig, parse_server, same_server_name};

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
