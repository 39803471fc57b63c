//! The test hook `PI_RPC_ORIGIN_OVERRIDES`: send requests meant for origins
//! that pi hard-codes (OAuth token endpoints, the Vertex and Azure hosts, …)
//! to a local server instead.
//!
//! The variable holds `origin=replacement` pairs separated by commas, e.g.
//! `https://oauth2.googleapis.com=http://127.0.0.1:8080/google,https://github.com=http://127.0.0.1:8081`.
//! A URL whose origin (scheme, host and port, compared case-insensitively,
//! default ports implied) equals a key is rewritten to the replacement
//! followed by the URL's own path and query. It is applied once, in
//! [`super::http::HttpClient`], so every request of every API and login goes
//! through it. It is a test aid: pi 1.6.0 has no such variable.

use std::sync::OnceLock;

/// Name of the environment variable.
pub const ORIGIN_OVERRIDES_ENV: &str = "PI_RPC_ORIGIN_OVERRIDES";

/// Parsed origin overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginOverrides {
    /// `(origin, replacement prefix)`, the origin normalised by [`origin_of`],
    /// the prefix without its trailing `/`.
    rules: Vec<(String, String)>,
}

impl OriginOverrides {
    /// Parse `origin=replacement,…`. Entries without `=` or whose key is not
    /// an origin are errors, so a typo in a test set-up is not silently ignored.
    pub fn parse(text: &str) -> Result<OriginOverrides, String> {
        let mut rules = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((key, value)) = entry.split_once('=') else {
                return Err(format!("{ORIGIN_OVERRIDES_ENV}: `{entry}` is not `origin=replacement`"));
            };
            let Some((origin, rest)) = origin_of(key.trim()) else {
                return Err(format!("{ORIGIN_OVERRIDES_ENV}: `{key}` is not an http(s) origin"));
            };
            if !rest.is_empty() && rest != "/" {
                return Err(format!("{ORIGIN_OVERRIDES_ENV}: `{key}` has a path; give the origin only"));
            }
            let value = value.trim().trim_end_matches('/');
            if origin_of(value).is_none() {
                return Err(format!("{ORIGIN_OVERRIDES_ENV}: `{value}` is not an http(s) URL"));
            }
            rules.push((origin, value.to_string()));
        }
        Ok(OriginOverrides { rules })
    }

    /// The overrides of this process (read once). A malformed variable is
    /// reported once on stderr and ignored.
    pub fn global() -> &'static OriginOverrides {
        static GLOBAL: OnceLock<OriginOverrides> = OnceLock::new();
        GLOBAL.get_or_init(|| match std::env::var(ORIGIN_OVERRIDES_ENV) {
            Ok(text) => OriginOverrides::parse(&text).unwrap_or_else(|e| {
                tracing::error!("{e}");
                OriginOverrides::default()
            }),
            Err(_) => OriginOverrides::default(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `url` rewritten by the first matching rule, or `None` when none matches.
    pub fn rewrite(&self, url: &str) -> Option<String> {
        if self.rules.is_empty() {
            return None;
        }
        let (origin, rest) = origin_of(url)?;
        let (_, prefix) = self.rules.iter().find(|(o, _)| *o == origin)?;
        let rest = if rest.is_empty() || rest.starts_with('/') { rest.to_string() } else { format!("/{rest}") };
        Some(format!("{prefix}{rest}"))
    }

    /// `url` rewritten, or unchanged.
    pub fn apply(&self, url: &str) -> String {
        self.rewrite(url).unwrap_or_else(|| url.to_string())
    }
}

/// The normalised origin of an http(s), ws(s) URL (`scheme://host[:port]`,
/// lowercase, default port dropped) and the rest (path, query, fragment).
pub fn origin_of(url: &str) -> Option<(String, &str)> {
    let (scheme, after) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" | "ws" => "80",
        "https" | "wss" => "443",
        _ => return None,
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    // No user info in the origin.
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_ascii_lowercase();
    if host_port.is_empty() {
        return None;
    }
    let host_port = match host_port.rsplit_once(':') {
        Some((host, port)) if port == default_port => host.to_string(),
        _ => host_port,
    };
    Some((format!("{scheme}://{host_port}"), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_matching_origins_keeping_path_and_query() {
        let o = OriginOverrides::parse(
            "https://oauth2.googleapis.com=http://127.0.0.1:9/google/, https://Example.com:443=http://127.0.0.1:8",
        )
        .unwrap();
        assert_eq!(
            o.rewrite("https://oauth2.googleapis.com/token?x=1").as_deref(),
            Some("http://127.0.0.1:9/google/token?x=1")
        );
        assert_eq!(o.rewrite("HTTPS://example.COM/a/b").as_deref(), Some("http://127.0.0.1:8/a/b"));
        assert_eq!(o.rewrite("https://example.com").as_deref(), Some("http://127.0.0.1:8"));
        assert_eq!(o.rewrite("https://example.com:444/a"), None, "another port is another origin");
        assert_eq!(o.rewrite("http://example.com/a"), None, "another scheme is another origin");
        assert_eq!(o.rewrite("https://sub.example.com/a"), None);
        assert_eq!(o.apply("https://other.test/x"), "https://other.test/x");
    }

    #[test]
    fn malformed_entries_are_errors() {
        assert!(OriginOverrides::parse("https://a.test").is_err());
        assert!(OriginOverrides::parse("https://a.test/path=http://127.0.0.1:1").is_err());
        assert!(OriginOverrides::parse("ftp://a.test=http://127.0.0.1:1").is_err());
        assert!(OriginOverrides::parse("https://a.test=127.0.0.1:1").is_err());
        assert!(OriginOverrides::parse("").unwrap().is_empty());
    }

    #[test]
    fn origins_are_normalised() {
        assert_eq!(origin_of("https://h.test:443/p").unwrap(), ("https://h.test".to_string(), "/p"));
        assert_eq!(origin_of("http://u:p@H.test:8080?q").unwrap(), ("http://h.test:8080".to_string(), "?q"));
        assert_eq!(origin_of("wss://h.test/x").unwrap().0, "wss://h.test");
        assert_eq!(origin_of("https://[::1]:443/").unwrap().0, "https://[::1]");
        assert!(origin_of("h.test/x").is_none());
    }
}
