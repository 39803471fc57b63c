//! ACP authentication: `initialize` offers, beside "pi configuration"
//! (keys from auth.json, models.json and the environment), one
//! agent-handled method per subscription login, `login:<provider>` (and
//! `login:<provider>:device_code` where the provider has both sign-ins).
//! `authenticate` with one of them runs the login: the sign-in page opens
//! in the browser (and is logged), a device code is logged, and the
//! response comes once the credential is in auth.json (shared with pi), or
//! is an error saying why not. New sessions use it.

use agent_client_protocol_schema::v1 as acp;
use pi_core::auth::LoginRequest;
use pi_core::auth::oauth::{self, Net};
use serde_json::Value;

/// The id of the method that reads pi's own configuration.
pub const CONFIG_METHOD: &str = "pi-config";

const PREFIX: &str = "login:";

/// Every authentication method `initialize` offers.
pub fn methods() -> Vec<acp::AuthMethod> {
    let config = acp::AuthMethodAgent::new(CONFIG_METHOD, "pi configuration").description(
        "API keys come from pi's auth.json, models.json and the provider environment variables; nothing to enter here"
            .to_string(),
    );
    let mut out = vec![acp::AuthMethod::Agent(config)];
    for flow in oauth::flows() {
        for (i, method) in flow.methods().iter().enumerate() {
            if method.id == "copy_code" {
                // Needs the user to paste a code: a terminal (`pi login`) only.
                continue;
            }
            let (id, name) = if i == 0 {
                (format!("{PREFIX}{}", flow.provider()), flow.name().to_string())
            } else {
                (format!("{PREFIX}{}:{}", flow.provider(), method.id), format!("{} ({})", flow.name(), method.label))
            };
            let how = if method.id == "browser" {
                "opens the sign-in page in the browser"
            } else {
                "logs a device code to enter in the browser"
            };
            let text = format!("Log in with the subscription: {how}; the login is saved in pi's auth.json");
            out.push(acp::AuthMethod::Agent(acp::AuthMethodAgent::new(id, name).description(text)));
        }
    }
    out
}

/// What `authenticate` with `method_id` does.
pub enum Authenticate {
    /// Nothing to do (pi's configuration).
    Config,
    /// Run this login.
    Login(LoginRequest),
}

/// The action of a method id; `None` for an unknown id.
pub fn parse(method_id: &str) -> Option<Authenticate> {
    if method_id == CONFIG_METHOD {
        return Some(Authenticate::Config);
    }
    let rest = method_id.strip_prefix(PREFIX)?;
    let (provider, method) = match rest.split_once(':') {
        Some((p, m)) => (p, Some(m.to_string())),
        None => (rest, None),
    };
    oauth::flow(provider)?;
    Some(Authenticate::Login(LoginRequest { provider: provider.into(), method, no_browser: false, answer: None }))
}

/// Run a login to its end; the error is the response's.
pub async fn run(request: LoginRequest) -> Result<(), acp::Error> {
    let path = pi_core::auth::auth_path(&pi_core::config::default_agent_dir());
    let failed = |message: String| acp::Error::auth_required().data(Value::String(message));
    let (started, completion) =
        pi_core::auth::background::start(path, request, Net::new()).await.map_err(|e| failed(e.to_string()))?;
    if let Some(url) = &started.url {
        pi_core::auth::login::open_in_browser(url);
    } else if let (Some(code), Some(uri)) = (&started.user_code, &started.verification_uri) {
        tracing::warn!("{}: open {uri} and enter the code {code}", started.name);
    }
    completion.await.map(|_| ()).map_err(|e| failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_login_is_offered_and_parses_back() {
        let ids: Vec<String> = methods().iter().map(|m| m.id().0.to_string()).collect();
        assert_eq!(ids[0], CONFIG_METHOD);
        for id in [
            "login:anthropic",
            "login:openai-codex",
            "login:openai-codex:device_code",
            "login:github-copilot",
            "login:radius:device_code",
        ] {
            assert!(ids.iter().any(|i| i == id), "{id} in {ids:?}");
        }
        assert!(!ids.iter().any(|i| i.contains("copy_code")));
        assert!(matches!(parse("pi-config"), Some(Authenticate::Config)));
        match parse("login:openai-codex:device_code") {
            Some(Authenticate::Login(r)) => {
                assert_eq!((r.provider.as_str(), r.method.as_deref()), ("openai-codex", Some("device_code")))
            }
            _ => panic!("a login"),
        }
        assert!(parse("login:nope").is_none() && parse("other").is_none());
    }
}
