//! GitHub Copilot: a GitHub device code (github.com or a GitHub Enterprise
//! domain) gives a GitHub token, stored as `refresh`; the Copilot token
//! exchange (`copilot_internal/v2/token`, with the editor's headers) turns
//! it into the short-lived Copilot token, stored as `access`, whose
//! `proxy-ep` names the account's API endpoint. Logins and refreshes also
//! record the models the account may use (`availableModelIds`), enabling
//! the ones whose policy is still unset at login.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::answer::Stored;
use super::device::{DEVICE_GRANT, Poll, Timing, poll_until};
use super::{
    DEVICE_CODE, FIVE_MINUTES_MS, FlowInfo, LoginContext, LoginEvent, LoginIo, Net, OAuthError, OAuthFlow, Question,
    QuestionKind, RequestAuth, access, require_refresh,
};
use crate::provider::lenient;

const CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";
const USER_AGENT: &str = "GitHubCopilotChat/0.35.0";
/// The editor identity the token exchange and the model list are asked with.
pub const EDITOR_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", USER_AGENT),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];
const API_VERSION: &str = "2026-06-01";
pub const DEFAULT_BASE_URL: &str = "https://api.individual.githubcopilot.com";

pub struct GitHubCopilot;

/// A domain from what the user typed (`company.ghe.com`, a URL), or `None`.
pub fn normalize_domain(input: &str) -> Option<String> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return None;
    }
    let candidate = if trimmed.contains("://") { trimmed.to_string() } else { format!("https://{trimmed}") };
    url::Url::parse(&candidate).ok()?.host_str().map(str::to_string)
}

/// The API endpoint for a Copilot token: its `proxy-ep` with `proxy.`
/// turned into `api.`, else the enterprise's, else the individual one.
pub fn base_url(token: Option<&str>, enterprise: Option<&str>) -> String {
    let from_token = token.and_then(|t| {
        let start = t.find("proxy-ep=")? + "proxy-ep=".len();
        let host = t[start..].split(';').next().filter(|h| !h.is_empty())?;
        Some(format!("https://{}", host.strip_prefix("proxy.").map_or(host.to_string(), |rest| format!("api.{rest}"))))
    });
    from_token
        .or_else(|| enterprise.map(|d| format!("https://copilot-api.{d}")))
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
}

fn enterprise_of(credential: &Value) -> Option<String> {
    Stored::of(credential).enterprise_url.filled().and_then(normalize_domain)
}

fn headers_with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut all: Vec<(&str, &str)> = EDITOR_HEADERS.to_vec();
    all.extend_from_slice(extra);
    all
}

/// The Copilot token for a GitHub token: `{type, refresh, access, expires, enterpriseUrl?}`.
async fn copilot_token(
    net: &Net,
    github_token: &str,
    enterprise: Option<&str>,
) -> Result<(Map<String, Value>, String), OAuthError> {
    let domain = enterprise.unwrap_or("github.com");
    let bearer = format!("Bearer {github_token}");
    let headers = headers_with(&[("Accept", "application/json"), ("Authorization", &bearer)]);
    let response = net.get(&format!("https://api.{domain}/copilot_internal/v2/token"), &headers).await?;
    if !response.ok() {
        return Err(response.error("the Copilot token exchange"));
    }
    let a = response.answer();
    let (Some(token), Some(expires_at)) = (a.token.text(), a.expires_at.number()) else {
        return Err(OAuthError::transient(format!("invalid Copilot token response: {}", super::clip(&response.json))));
    };
    let mut cred = Map::new();
    cred.insert("type".into(), "oauth".into());
    cred.insert("refresh".into(), github_token.into());
    cred.insert("access".into(), token.into());
    cred.insert("expires".into(), json!((expires_at * 1000.0).round() as i64 - FIVE_MINUTES_MS));
    if let Some(domain) = enterprise {
        cred.insert("enterpriseUrl".into(), domain.into());
    }
    Ok((cred, token.to_string()))
}

/// Copilot's model list (`GET {base}/models`): the fields the login reads.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ModelList {
    /// `None` when it is no list; a model that is no object reads as empty.
    #[serde(deserialize_with = "lenient::some_each")]
    data: Option<Vec<ListedModel>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListedModel {
    #[serde(deserialize_with = "lenient::string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient::bool")]
    model_picker_enabled: Option<bool>,
    #[serde(deserialize_with = "lenient::object")]
    capabilities: Capabilities,
    #[serde(deserialize_with = "lenient::object")]
    policy: Policy,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Capabilities {
    #[serde(deserialize_with = "lenient::object")]
    supports: Supports,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Supports {
    #[serde(deserialize_with = "lenient::bool")]
    tool_calls: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Policy {
    #[serde(deserialize_with = "lenient::string")]
    state: Option<String>,
}

/// The account's usable models, and those whose policy is still unset.
struct Models {
    available: Vec<String>,
    unset_policy: Vec<String>,
}

async fn models(net: &Net, token: &str, enterprise: Option<&str>) -> Result<Models, OAuthError> {
    let base = base_url(Some(token), enterprise);
    let bearer = format!("Bearer {token}");
    let headers = headers_with(&[
        ("Accept", "application/json"),
        ("Authorization", &bearer),
        ("X-GitHub-Api-Version", API_VERSION),
    ]);
    let response = net.get(&format!("{base}/models"), &headers).await?;
    if !response.ok() {
        return Err(response.error("the Copilot model list"));
    }
    let Some(data) = lenient::event_ref::<ModelList>(&response.json).and_then(|list| list.data) else {
        return Err(OAuthError::transient("invalid Copilot models response"));
    };
    // (id, shown in the picker, policy state) of the models that call tools.
    let listed: Vec<(String, bool, Option<String>)> = data
        .into_iter()
        .filter(|m| m.capabilities.supports.tool_calls != Some(false))
        .filter_map(|m| Some((m.id?, m.model_picker_enabled == Some(true), m.policy.state)))
        .collect();
    let picked: Vec<String> = listed
        .iter()
        .filter(|(_, picker, policy)| *picker && policy.as_deref() != Some("disabled"))
        .map(|(id, ..)| id.clone())
        .collect();
    // Some individual accounts show no model in the picker; their enabled policies count then.
    let fallback = base == DEFAULT_BASE_URL && picked.is_empty();
    let available = if fallback {
        listed.iter().filter(|(_, _, p)| p.as_deref() == Some("enabled")).map(|(id, ..)| id.clone()).collect()
    } else {
        picked
    };
    let catalog = crate::config::catalog::provider_models("github-copilot");
    let unset_policy = listed
        .iter()
        .filter(|(id, picker, policy)| {
            policy.as_deref() == Some("unconfigured") && (*picker || fallback) && catalog.iter().any(|m| &m.id == id)
        })
        .map(|(id, ..)| id.clone())
        .collect();
    Ok(Models { available, unset_policy })
}

/// Enable models whose policy is unset; returns the ones enabled.
async fn enable(net: &Net, token: &str, ids: &[String], enterprise: Option<&str>) -> Vec<String> {
    let base = base_url(Some(token), enterprise);
    let bearer = format!("Bearer {token}");
    let headers = headers_with(&[
        ("Authorization", &bearer),
        ("openai-intent", "chat-policy"),
        ("x-interaction-type", "chat-policy"),
    ]);
    let mut enabled = Vec::new();
    for id in ids {
        let url = format!("{base}/models/{id}/policy");
        match net.post_json(&url, &headers, json!({"state": "enabled"})).await {
            Ok(r) if r.ok() => enabled.push(id.clone()),
            // Rate-limited: stop asking.
            Ok(r) if r.status == 429 => break,
            _ => {}
        }
    }
    enabled
}

async fn device_login(ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
    let net = &ctx.net;
    let question = Question {
        kind: QuestionKind::Text,
        message: "GitHub Enterprise URL/domain (blank for github.com)".into(),
        placeholder: Some("company.ghe.com".into()),
    };
    let typed = io.ask(question).await.unwrap_or_default();
    let enterprise = normalize_domain(&typed);
    if !typed.trim().is_empty() && enterprise.is_none() {
        return Err(OAuthError::refused("Invalid GitHub Enterprise URL or domain"));
    }
    let domain = enterprise.as_deref().unwrap_or("github.com");
    let form_headers = [("Accept", "application/json"), ("User-Agent", USER_AGENT)];
    let fields = vec![("client_id", CLIENT_ID.to_string()), ("scope", "read:user".to_string())];
    let response = net.post_form(&format!("https://{domain}/login/device/code"), &form_headers, fields).await?;
    if !response.ok() {
        return Err(response.error("the GitHub device code request"));
    }
    let (body, a) = (&response.json, response.answer());
    let (Some(device_code), Some(user_code), Some(expires_in)) =
        (a.device_code.text(), a.user_code.text(), a.expires_in.number())
    else {
        return Err(OAuthError::transient(format!("invalid device code response: {}", super::clip(body))));
    };
    let verification_uri = a
        .verification_uri
        .url()
        .ok_or_else(|| OAuthError::refused("untrusted verification_uri in the device code response"))?;
    let interval = a.interval.number();
    let timing = Timing::announce(io, user_code, verification_uri, interval, Some(expires_in), true);
    let token_url = format!("https://{domain}/login/oauth/access_token");
    let device_code = device_code.to_string();
    let github_token = poll_until(net, timing, || {
        let fields = vec![
            ("client_id", CLIENT_ID.to_string()),
            ("device_code", device_code.clone()),
            ("grant_type", DEVICE_GRANT.to_string()),
        ];
        let url = token_url.clone();
        async move {
            let r = net.post_form(&url, &form_headers, fields).await?;
            if !r.ok() {
                return Err(r.error("the GitHub device token request"));
            }
            let a = r.answer();
            if let Some(token) = a.access_token.text() {
                return Ok(Poll::Complete(token.to_string()));
            }
            Ok(match a.error.text() {
                Some("authorization_pending") => Poll::Pending,
                Some("slow_down") => Poll::SlowDown(a.interval.number()),
                Some(error) => {
                    let detail = a.error_description.text();
                    Poll::Failed(format!(
                        "Device flow failed: {error}{}",
                        detail.map(|d| format!(": {d}")).unwrap_or_default()
                    ))
                }
                None => Poll::Failed("Invalid device token response".into()),
            })
        }
    })
    .await?;
    let (mut cred, token) = copilot_token(net, &github_token, enterprise.as_deref()).await?;
    let listed = models(net, &token, enterprise.as_deref()).await?;
    let mut available = listed.available;
    if !listed.unset_policy.is_empty() {
        io.notify(LoginEvent::Progress("Enabling models…".into()));
        for id in enable(net, &token, &listed.unset_policy, enterprise.as_deref()).await {
            if !available.contains(&id) {
                available.push(id);
            }
        }
    }
    cred.insert("availableModelIds".into(), json!(available));
    Ok(Value::Object(cred))
}

const INFO: FlowInfo = FlowInfo { provider: "github-copilot", methods: &[DEVICE_CODE] };

#[async_trait]
impl OAuthFlow for GitHubCopilot {
    fn info(&self) -> &'static FlowInfo {
        &INFO
    }

    async fn login(&self, ctx: &LoginContext, io: &dyn LoginIo) -> Result<Value, OAuthError> {
        device_login(ctx, io).await
    }

    async fn refresh(&self, net: &Net, credential: &Value) -> Result<Value, OAuthError> {
        let enterprise = enterprise_of(credential);
        let (mut cred, token) = copilot_token(net, require_refresh(credential)?, enterprise.as_deref()).await?;
        let listed = models(net, &token, enterprise.as_deref()).await?;
        cred.insert("availableModelIds".into(), json!(listed.available));
        Ok(Value::Object(cred))
    }

    fn to_auth(&self, credential: &Value) -> RequestAuth {
        let token = access(credential);
        RequestAuth {
            api_key: token.map(str::to_string),
            headers: Vec::new(),
            base_url: Some(base_url(token, enterprise_of(credential).as_deref())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_token() {
        let token = "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;sku=x";
        assert_eq!(base_url(Some(token), None), "https://api.business.githubcopilot.com");
        assert_eq!(base_url(Some("tid=1"), Some("corp.ghe.com")), "https://copilot-api.corp.ghe.com");
        assert_eq!(base_url(None, None), DEFAULT_BASE_URL);
        assert_eq!(normalize_domain(" https://corp.ghe.com/x ").as_deref(), Some("corp.ghe.com"));
        assert_eq!(normalize_domain("corp.ghe.com").as_deref(), Some("corp.ghe.com"));
        assert_eq!(normalize_domain(""), None);
    }
}
