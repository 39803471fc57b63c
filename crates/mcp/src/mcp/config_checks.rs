//! pi 1.6.0's checks of an HTTP server's `oauth` and `auth` blocks (in
//! `mcp.json` and `pi.registerMcpServer()` configs), in pi's order and
//! words: the first problem found is the entry's error. A present value of
//! the wrong type (`null` too) is a problem, as in pi.

use serde_json::{Map, Value};

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Why an `oauth` block is invalid (None when it is absent or valid).
pub fn oauth_problem(oauth: Option<&Value>) -> Option<String> {
    let value = oauth?;
    let Some(map) = value.as_object() else { return Some("oauth must be an object".into()) };
    let wrong_type = |key: &str| map.get(key).is_some_and(|v| !v.is_string());
    if wrong_type("clientId") {
        return Some("oauth.clientId must be a string".into());
    }
    if wrong_type("clientSecret") {
        return Some("oauth.clientSecret must be a string".into());
    }
    let port = map.get("callbackPort");
    if let Some(port) = port
        && port_number(port).is_none()
    {
        return Some("oauth.callbackPort must be a port number".into());
    }
    if let Some(callback) = map.get("callbackUrl") {
        let Some(url) = callback.as_str().and_then(loopback_redirect_uri) else {
            return Some(
                "oauth.callbackUrl must be an http URI on localhost, 127.0.0.1, or [::1] without query or fragment"
                    .into(),
            );
        };
        if let (Some(url_port), Some(port)) = (url.port(), port.and_then(port_number))
            && url_port != port
        {
            return Some("oauth.callbackUrl and oauth.callbackPort name different ports".into());
        }
    }
    if wrong_type("scope") {
        return Some("oauth.scope must be a string".into());
    }
    if map.get("clientName").is_some_and(|v| v.as_str().is_none_or(|name| name.trim().is_empty())) {
        return Some("oauth.clientName must be a non-empty string".into());
    }
    if let Some(problem) = registration_problem(map) {
        return Some(problem.into());
    }
    if let Some(metadata) = map.get("authServerMetadataUrl")
        && !metadata.as_str().and_then(|url| url::Url::parse(url).ok()).is_some_and(|url| secure_or_loopback(&url))
    {
        return Some(
            "oauth.authServerMetadataUrl must be an https URL, or http on localhost, 127.0.0.1, or [::1]".into(),
        );
    }
    None
}

/// Why `clientRegistration` is invalid: a mode pi does not know, or `cimd`
/// with a client of its own or a callback its metadata documents do not list.
fn registration_problem(map: &Map<String, Value>) -> Option<&'static str> {
    let registration = map.get("clientRegistration")?;
    if matches!(registration.as_str(), Some("auto" | "dcr")) {
        return None;
    }
    if registration.as_str() != Some("cimd") {
        return Some("oauth.clientRegistration must be \"auto\", \"dcr\", or \"cimd\"");
    }
    if map.contains_key("clientId") || map.contains_key("clientName") {
        return Some("oauth.clientRegistration \"cimd\" cannot be combined with oauth.clientId or oauth.clientName");
    }
    // pi's metadata documents list `/callback` on localhost and 127.0.0.1, any port.
    let callback = map.get("callbackUrl").and_then(Value::as_str).and_then(|url| url::Url::parse(url).ok());
    callback.filter(|url| url.host_str() == Some("[::1]") || url.path() != "/callback").map(|_| {
        "oauth.clientRegistration \"cimd\" requires oauth.callbackUrl on localhost or 127.0.0.1 with path /callback"
    })
}

/// Why an `auth` block of an HTTP server at `url` is invalid (None when absent or valid).
pub fn auth_problem(auth: Option<&Value>, url: &str) -> Option<&'static str> {
    let auth = auth?;
    if auth.get("provider").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Some("auth.provider must be a provider name");
    }
    let secure = url::Url::parse(url).is_ok_and(|url| url.scheme() == "https" || is_loopback(&url));
    (!secure).then_some("auth requires an https URL, or http on localhost, 127.0.0.1, or [::1]")
}

/// A port number as pi takes it: an integer from 1 to 65535.
fn port_number(value: &Value) -> Option<u16> {
    let number = value.as_f64()?;
    (number.fract() == 0.0 && (1.0..=65535.0).contains(&number)).then_some(number as u16)
}

/// `value` as a loopback redirect URI (http, a loopback host, no query or fragment).
fn loopback_redirect_uri(value: &str) -> Option<url::Url> {
    let url = url::Url::parse(value).ok()?;
    let bare = url.query().unwrap_or_default().is_empty() && url.fragment().unwrap_or_default().is_empty();
    (url.scheme() == "http" && is_loopback(&url) && bare).then_some(url)
}

fn is_loopback(url: &url::Url) -> bool {
    url.host_str().is_some_and(|host| LOOPBACK_HOSTS.contains(&host))
}

fn secure_or_loopback(url: &url::Url) -> bool {
    url.scheme() == "https" || (url.scheme() == "http" && is_loopback(url))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn oauth_blocks_are_checked_in_pis_order_and_words() {
        let problem = |v: Value| oauth_problem(Some(&v));
        assert_eq!(oauth_problem(None), None);
        assert_eq!(problem(json!({})), None);
        assert_eq!(problem(json!(null)).as_deref(), Some("oauth must be an object"));
        assert_eq!(problem(json!({"clientId": 1, "scope": 2})).as_deref(), Some("oauth.clientId must be a string"));
        assert_eq!(problem(json!({"callbackPort": 8.5})).as_deref(), Some("oauth.callbackPort must be a port number"));
        assert_eq!(problem(json!({"callbackPort": 8080.0})), None);
        assert!(
            problem(json!({"callbackUrl": "http://example.com/cb"})).unwrap().starts_with("oauth.callbackUrl must")
        );
        assert!(
            problem(json!({"callbackUrl": "http://localhost/cb?x=1"})).unwrap().starts_with("oauth.callbackUrl must")
        );
        assert_eq!(problem(json!({"callbackUrl": "http://localhost:80/cb", "callbackPort": 81})), None);
        assert_eq!(
            problem(json!({"callbackUrl": "http://[::1]:9/cb", "callbackPort": 8})).as_deref(),
            Some("oauth.callbackUrl and oauth.callbackPort name different ports")
        );
        assert_eq!(
            problem(json!({"clientName": "  "})).as_deref(),
            Some("oauth.clientName must be a non-empty string")
        );
        assert_eq!(
            problem(json!({"clientRegistration": "x"})).as_deref(),
            Some("oauth.clientRegistration must be \"auto\", \"dcr\", or \"cimd\"")
        );
        assert!(
            problem(json!({"clientRegistration": "cimd", "clientName": "n"})).unwrap().contains("cannot be combined")
        );
        assert!(
            problem(json!({"clientRegistration": "cimd", "callbackUrl": "http://localhost/other"}))
                .unwrap()
                .contains("with path /callback")
        );
        assert_eq!(problem(json!({"clientRegistration": "cimd", "callbackUrl": "http://127.0.0.1:5/callback"})), None);
        assert!(
            problem(json!({"authServerMetadataUrl": "http://example.com"})).unwrap().starts_with("oauth.authServer")
        );
        assert_eq!(problem(json!({"authServerMetadataUrl": "http://localhost:1/x"})), None);
    }

    #[test]
    fn auth_blocks_are_checked_as_pi_checks_them() {
        let problem = |v: Value, url: &str| auth_problem(Some(&v), url);
        assert_eq!(problem(json!({"provider": "openai"}), "https://example.com/mcp"), None);
        assert_eq!(problem(json!({"provider": ""}), "https://x"), Some("auth.provider must be a provider name"));
        assert_eq!(problem(json!(null), "https://x"), Some("auth.provider must be a provider name"));
        assert!(problem(json!({"provider": "p"}), "http://example.com/mcp").unwrap().starts_with("auth requires"));
        assert_eq!(problem(json!({"provider": "p"}), "http://127.0.0.1:3/mcp"), None);
    }
}
