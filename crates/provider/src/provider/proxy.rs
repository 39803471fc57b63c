//! HTTP proxies chosen the way pi 1.6.0 chooses them (undici's
//! `EnvHttpProxyAgent`, which pi installs as its global dispatcher):
//!
//! * `http_proxy` (else `HTTP_PROXY`) for `http:` targets; `https_proxy`
//!   (else `HTTPS_PROXY`) for `https:` targets, falling back to the HTTP
//!   proxy when unset. A lowercase variable that is set wins even when empty
//!   (and then means "no proxy"). `ALL_PROXY` is not read.
//! * `no_proxy` (else `NO_PROXY`): entries separated by commas or blanks;
//!   `*` bypasses every host; `host` and `.host` match the host and its
//!   subdomains, `*.host` only its subdomains; `host:port` only that port.
//! * the settings' `httpProxy` fills `HTTP_PROXY` and `HTTPS_PROXY` where
//!   unset (pi's `applyHttpProxySettings`).
//!
//! One difference: undici tunnels plain-`http:` targets through the proxy
//! with `CONNECT`; reqwest forwards them in absolute form. Both reach the
//! proxy; `https:` targets are tunnelled by both.

/// The proxy settings read from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    pub http: Option<String>,
    pub https: Option<String>,
    no_proxy: Vec<NoProxyEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct NoProxyEntry {
    host: String,
    port: u16,
    wildcard: bool,
}

impl ProxyEnv {
    /// Read the variables through `var` (the process environment in
    /// production), with the settings' `httpProxy` as a fallback.
    pub fn read(var: impl Fn(&str) -> Option<String>, settings_proxy: Option<&str>) -> ProxyEnv {
        let pick = |lower: &str, upper: &str| var(lower).or_else(|| var(upper));
        let settings = settings_proxy.map(str::trim).filter(|p| !p.is_empty()).map(str::to_string);
        let http = pick("http_proxy", "HTTP_PROXY").or_else(|| settings.clone()).filter(|p| !p.is_empty());
        let https = match pick("https_proxy", "HTTPS_PROXY").or(settings) {
            Some(p) if p.is_empty() => http.clone(),
            Some(p) => Some(p),
            None => http.clone(),
        };
        let no_proxy = pick("no_proxy", "NO_PROXY").map(|v| parse_no_proxy(&v)).unwrap_or_default();
        ProxyEnv { http, https, no_proxy }
    }

    /// The process environment.
    pub fn from_process(settings_proxy: Option<&str>) -> ProxyEnv {
        ProxyEnv::read(|name| std::env::var(name).ok(), settings_proxy)
    }

    pub fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// The proxy URL for a request to `scheme://host:port`, if any.
    pub fn proxy_for(&self, scheme: &str, host: &str, port: Option<u16>) -> Option<&str> {
        let (proxy, default_port) = match scheme {
            "https" | "wss" => (self.https.as_deref()?, 443),
            "http" | "ws" => (self.http.as_deref()?, 80),
            _ => return None,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let host = host.strip_suffix('.').filter(|h| !h.is_empty()).unwrap_or(&host);
        self.should_proxy(host, port.unwrap_or(default_port)).then_some(proxy)
    }

    fn should_proxy(&self, host: &str, port: u16) -> bool {
        for entry in &self.no_proxy {
            if entry.port != 0 && entry.port != port {
                continue;
            }
            if entry.host == "*" {
                return false;
            }
            let suffix_match = host.len() > entry.host.len()
                && host.ends_with(&entry.host)
                && host.as_bytes()[host.len() - entry.host.len() - 1] == b'.';
            if (!entry.wildcard && host == entry.host) || suffix_match {
                return false;
            }
        }
        true
    }

    /// This choice as a reqwest proxy (to be set on every client: it also
    /// turns off reqwest's own reading of the variables).
    pub fn to_reqwest(&self) -> reqwest::Proxy {
        let env = self.clone();
        reqwest::Proxy::custom(move |url| {
            let proxy = env.proxy_for(url.scheme(), url.host_str()?, url.port())?;
            let proxy = if proxy.contains("://") { proxy.to_string() } else { format!("http://{proxy}") };
            reqwest::Url::parse(&proxy).ok()
        })
    }
}

fn parse_no_proxy(value: &str) -> Vec<NoProxyEntry> {
    value
        .split([',', ' ', '\t', '\n', '\r'])
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let (host, port) = if let Some(rest) = entry.strip_prefix('[')
                && let Some((h, p)) = rest.split_once("]:")
                && p.bytes().all(|b| b.is_ascii_digit())
                && !p.is_empty()
            {
                (h.to_string(), p.parse().unwrap_or(0))
            } else {
                let unbracketed = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')).unwrap_or(entry);
                match unbracketed.split_once(':') {
                    Some((h, p))
                        if unbracketed.matches(':').count() == 1
                            && !h.is_empty()
                            && !p.is_empty()
                            && p.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        (h.to_string(), p.parse().unwrap_or(0))
                    }
                    _ => (unbracketed.to_string(), 0),
                }
            };
            let host = host.strip_prefix("*.").or_else(|| host.strip_prefix('.')).unwrap_or(&host);
            let host = host.strip_suffix('.').filter(|h| !h.is_empty()).unwrap_or(host);
            NoProxyEntry { host: host.to_ascii_lowercase(), port, wildcard: entry.starts_with('*') }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)], settings: Option<&str>) -> ProxyEnv {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ProxyEnv::read(|n| map.get(n).cloned(), settings)
    }

    #[test]
    fn https_falls_back_to_the_http_proxy_and_lowercase_wins() {
        let e = env(&[("HTTP_PROXY", "http://p:1")], None);
        assert_eq!(e.proxy_for("https", "api.test", None), Some("http://p:1"));
        assert_eq!(e.proxy_for("http", "api.test", None), Some("http://p:1"));
        let e = env(&[("HTTPS_PROXY", "http://s:2")], None);
        assert_eq!(e.proxy_for("https", "api.test", None), Some("http://s:2"));
        assert_eq!(e.proxy_for("http", "api.test", None), None);
        let e = env(&[("http_proxy", ""), ("HTTP_PROXY", "http://p:1")], None);
        assert!(e.is_empty(), "a set but empty lowercase variable wins");
        let e = env(&[("ALL_PROXY", "http://a:1")], None);
        assert!(e.is_empty(), "ALL_PROXY is not read");
        let e = env(&[], Some("http://settings:3"));
        assert_eq!(e.proxy_for("https", "x.test", None), Some("http://settings:3"));
        let e = env(&[("HTTPS_PROXY", "http://s:2")], Some("http://settings:3"));
        assert_eq!(e.proxy_for("https", "x.test", None), Some("http://s:2"));
        assert_eq!(e.proxy_for("http", "x.test", None), Some("http://settings:3"));
    }

    #[test]
    fn no_proxy_follows_undici() {
        let e = env(
            &[("HTTPS_PROXY", "http://s:2"), ("NO_PROXY", "example.com, .internal.test *.wild.test,127.0.0.1:8443")],
            None,
        );
        assert_eq!(e.proxy_for("https", "example.com", None), None);
        assert_eq!(e.proxy_for("https", "api.example.com", None), None);
        assert_eq!(e.proxy_for("https", "notexample.com", None), Some("http://s:2"));
        assert_eq!(e.proxy_for("https", "a.internal.test", None), None);
        assert_eq!(e.proxy_for("https", "internal.test", None), None, "a leading dot still matches the host");
        assert_eq!(e.proxy_for("https", "x.wild.test", None), None);
        assert_eq!(e.proxy_for("https", "wild.test", None), Some("http://s:2"));
        assert_eq!(e.proxy_for("https", "127.0.0.1", Some(8443)), None);
        assert_eq!(e.proxy_for("https", "127.0.0.1", None), Some("http://s:2"));
        assert_eq!(e.proxy_for("https", "EXAMPLE.com.", None), None);
        let e = env(&[("HTTPS_PROXY", "http://s:2"), ("no_proxy", "*")], None);
        assert_eq!(e.proxy_for("https", "any.test", None), None);
        let e = env(&[("HTTPS_PROXY", "http://s:2"), ("NO_PROXY", "[::1]:443")], None);
        assert_eq!(e.proxy_for("https", "[::1]", None), None);
    }
}
