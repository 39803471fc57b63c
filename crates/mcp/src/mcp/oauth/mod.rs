//! OAuth for remote (HTTP) MCP servers, as pi 1.6.0 does it: credentials in
//! `<agent dir>/mcp-auth.json` keyed by server name and URL ([`store`]);
//! connections send the stored access token and, after a 401 (or shortly
//! before it expires), use the stored refresh token under a lock file shared
//! with pi ([`client`]); they never start a browser flow on their own. A
//! server that needs the user is reported as needing sign-in, and the user
//! signs in with `/mcp login` or `pi mcp login` ([`sign_in`]). Discovery
//! (RFC 9728, RFC 8414) and the token endpoint are in [`flow`].

pub mod client;
pub mod flow;
pub mod sign_in;
pub mod store;

use std::collections::BTreeMap;

use serde_json::Value;

use super::config::{ConfigValue, expand_value};

pub use client::TokenSource;
pub use store::{CredentialBackend, McpAuthFile};

/// What a server that must be signed in to tells the user (pi's wording).
pub fn sign_in_required(server: &str) -> String {
    format!("MCP server \"{server}\" requires sign-in. Run /mcp to sign in.")
}

/// A server's `oauth` settings in `mcp.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthSettings {
    pub client_id: Option<String>,
    pub client_secret: Option<ConfigValue>,
    pub callback_port: Option<u16>,
    pub callback_url: Option<String>,
    pub scope: Option<String>,
    pub client_name: Option<String>,
    /// `auto` (default), `dcr` or `cimd`.
    pub client_registration: Option<String>,
    pub auth_server_metadata_url: Option<String>,
}

impl OAuthSettings {
    /// Whether an HTTP server with these headers signs in with OAuth: not
    /// with an `Authorization` header, nor with pi's `auth` (a provider's token).
    pub fn applies(headers: &[(String, String)], has_auth: bool) -> bool {
        !has_auth && !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    }

    /// The `oauth` object of an entry (absent: the defaults).
    pub fn parse(value: Option<&Value>, env: Option<&BTreeMap<String, String>>) -> Result<OAuthSettings, String> {
        let map = match value {
            None | Some(Value::Null) => return Ok(OAuthSettings::default()),
            Some(Value::Object(map)) => map,
            Some(_) => return Err("\"oauth\" must be an object".into()),
        };
        let text = |key: &str| -> Result<Option<String>, String> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("\"oauth.{key}\" must be a string")),
            }
        };
        let callback_port = match map.get("callbackPort") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .ok_or_else(|| "\"oauth.callbackPort\" must be a port number".to_string())?,
            ),
        };
        let client_registration = text("clientRegistration")?;
        if let Some(mode) = &client_registration
            && !["auto", "dcr", "cimd"].contains(&mode.as_str())
        {
            return Err(format!("\"oauth.clientRegistration\" must be auto, dcr or cimd, got \"{mode}\""));
        }
        Ok(OAuthSettings {
            client_id: text("clientId")?,
            client_secret: text("clientSecret")?.map(|s| expand_value(&s, env)),
            callback_port,
            callback_url: text("callbackUrl")?,
            scope: text("scope")?,
            client_name: text("clientName")?,
            client_registration,
            auth_server_metadata_url: text("authServerMetadataUrl")?,
        })
    }

    /// The client secret, resolved (a `!command` runs here; blocking).
    pub fn secret(&self) -> Result<Option<String>, String> {
        self.client_secret.as_ref().map(ConfigValue::resolve).transpose()
    }
}

/// `String(new URL(url))`: the form pi keys credentials by.
pub fn normalized_url(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| url.to_string(), |u| u.to_string())
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
