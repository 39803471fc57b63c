//! The fake OAuth server's endpoints, one handler dispatching on the path.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::{OAuthRequest, State};

pub(crate) const ACCOUNT_ID: &str = "acct-fake-1";
const USER_CODE: &str = "WXYZ-1234";

type AppState = (Arc<Mutex<State>>, SocketAddr);

pub(crate) fn router(state: Arc<Mutex<State>>, addr: SocketAddr) -> axum::Router {
    axum::Router::new().fallback(handle).with_state((state, addr))
}

fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

/// A JWT carrying the ChatGPT account claim (unsigned: nothing verifies it).
fn codex_jwt(n: u64) -> String {
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let claims = json!({"https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT_ID}, "n": n});
    format!("{header}.{}.fake", URL_SAFE_NO_PAD.encode(claims.to_string()))
}

fn copilot_token(n: u64) -> String {
    format!("tid=fake;exp=9999999999;sku=free;proxy-ep=proxy.individual.githubcopilot.com;n={n}")
}

/// A new (access, refresh) pair for a provider; the refresh token is registered.
pub(crate) fn mint(state: &mut State, provider: &str) -> (String, String) {
    state.next += 1;
    let n = state.next;
    let (access, refresh) = match provider {
        "anthropic" => (format!("sk-ant-oat01-fake-{n}"), format!("sk-ant-ort01-fake-{n}")),
        "openai-codex" => (codex_jwt(n), format!("codex-refresh-{n}")),
        "github-copilot" => (copilot_token(n), format!("ghu_fake_{n}")),
        "meta" => (format!("meta-key-{n}"), format!("meta-identity-{n}")),
        other => (format!("{other}-access-{n}"), format!("{other}-refresh-{n}")),
    };
    state.refresh_tokens.insert(refresh.clone(), provider.to_string());
    state.access_tokens.insert(access.clone(), provider.to_string());
    (access, refresh)
}

pub(crate) fn reply(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

pub(crate) fn ok(body: Value) -> Response {
    reply(StatusCode::OK, body)
}

pub(crate) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    reply(status, json!({"error": error, "error_description": description}))
}

fn redirect(to: &str) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to.to_string())]).into_response()
}

fn fields_of(headers: &HeaderMap, uri: &Uri, body: &[u8]) -> HashMap<String, String> {
    let mut fields: HashMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).into_owned().collect();
    let json = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|c| c.contains("json"));
    if json {
        if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
            for (k, v) in map {
                fields.insert(k, v.as_str().map_or_else(|| v.to_string(), str::to_string));
            }
        }
    } else {
        fields.extend(url::form_urlencoded::parse(body).into_owned());
    }
    fields
}

/// Provider of each refresh route, for the delay and the count.
fn refresh_provider(path: &str, fields: &HashMap<String, String>) -> Option<&'static str> {
    let refresh_grant = fields.get("grant_type").map(String::as_str) == Some("refresh_token");
    match path {
        "/anthropic/v1/oauth/token" if refresh_grant => Some("anthropic"),
        "/openai/oauth/token" if refresh_grant => Some("openai-codex"),
        "/openai/api/accounts/oauth/token" if refresh_grant => Some("openai"),
        "/xai/oauth2/token" if refresh_grant => Some("xai"),
        "/kimi/api/oauth/token" if refresh_grant => Some("kimi-coding"),
        "/radius/v1/oauth/token" if refresh_grant => Some("radius"),
        "/mcp-as/token" if refresh_grant => Some("mcp"),
        "/github-api/copilot_internal/v2/token" => Some("github-copilot"),
        "/meta-api/muse-code/key" => Some("meta"),
        _ => None,
    }
}

async fn handle(
    Shared((state, addr)): Shared<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fields = fields_of(&headers, &uri, &body);
    let path = uri.path().to_string();
    let recorded = OAuthRequest {
        method: method.to_string(),
        path: uri.path_and_query().map_or_else(|| path.clone(), |p| p.to_string()),
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect(),
        fields: fields.clone(),
    };
    let refreshing = refresh_provider(&path, &fields);
    let delay = {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        s.requests.push(recorded);
        if let Some(p) = refreshing {
            *s.refreshes.entry(p.to_string()).or_default() += 1;
        }
        s.refresh_delay
    };
    if refreshing.is_some() && !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let origin = format!("http://{addr}");
    if path == super::mcp::RESOURCE_PATH {
        return super::mcp::guarded(&state, &origin, method, &uri, &headers, body).await;
    }
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(response) = super::mcp::route(&mut s, &method, &path, &fields, &origin) {
        return response;
    }
    route(&mut s, &method, &path, &fields, &headers, &origin)
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(str::to_string)
}

fn route(
    s: &mut State,
    method: &Method,
    path: &str,
    f: &HashMap<String, String>,
    headers: &HeaderMap,
    origin: &str,
) -> Response {
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    match (method.as_str(), path) {
        // Browser pages: straight back to the redirect with a code.
        ("GET", "/claude-ai/oauth/authorize") => authorize(s, f, "anthropic", "redirect_uri", true),
        ("GET", "/openai/oauth/authorize") => authorize(s, f, "openai-codex", "redirect_uri", true),
        ("GET", "/openai/api/accounts/authorize") => {
            let code = new_code(s, f, "openai", &get("redirect_uri"));
            let to =
                format!("{}?code={code}&state={}&client_id=issued-client", get("redirect_uri"), enc(&get("state")));
            redirect(&to)
        }
        ("GET", "/openrouter/auth") => authorize(s, f, "openrouter", "callback_url", false),
        ("GET", "/radius/authorize") => authorize(s, f, "radius", "redirect_uri", true),
        ("GET", "/radius/v1/oauth") => ok(json!({"authorizationEndpoint": "https://radius.pi.dev/authorize"})),
        // The gateway's configuration: its models for the bearer (one of them malformed), none without one.
        ("GET", "/radius/v1/config") => match bearer(headers) {
            Some(token) => ok(json!({"baseUrl": "https://radius.pi.dev/v1", "models": [
                {"id": format!("gateway-model-for-{token}"), "name": "Gateway Model", "reasoning": true, "input": ["text", "image"],
                 "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0}, "contextWindow": 200000, "maxTokens": 16000},
                {"id": "malformed", "name": "No limits"}
            ]})),
            None => reply(StatusCode::UNAUTHORIZED, json!({"error": "no token"})),
        },

        // Code exchanges and refreshes.
        ("POST", "/anthropic/v1/oauth/token") => token(
            s,
            f,
            "anthropic",
            |access, refresh, life| json!({"token_type": "Bearer", "access_token": access, "refresh_token": refresh, "expires_in": life}),
        ),
        ("POST", "/openai/oauth/token") => token(
            s,
            f,
            "openai-codex",
            |access, refresh, life| json!({"access_token": access, "refresh_token": refresh, "expires_in": life, "id_token": "id"}),
        ),
        ("POST", "/openai/api/accounts/oauth/token") => token(s, f, "openai", |access, refresh, life| {
            json!({"access_token": access, "refresh_token": refresh, "expires_in": life, "id_token": "id",
                   "scope": "openid offline_access chatgpt.tokens.use.direct"})
        }),
        ("POST", "/radius/v1/oauth/token") if get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" => {
            token(
                s,
                f,
                "radius",
                |access, refresh, life| json!({"access_token": access, "refresh_token": refresh, "expires_in": life, "scope": "gateway"}),
            )
        }
        ("POST", "/openrouter/api/v1/auth/keys") => match take_code(s, f, "openrouter", None) {
            Ok(()) => ok(json!({"key": format!("sk-or-fake-{}", s.next + 1)})),
            Err(why) => oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why),
        },

        // Device codes: pending on the first poll, granted on the next.
        ("POST", "/openai/api/accounts/deviceauth/usercode") => {
            ok(json!({"device_auth_id": "dev-openai", "user_code": USER_CODE, "interval": "1"}))
        }
        ("POST", "/openai/api/accounts/deviceauth/token") => {
            if first_poll(s, "dev-openai") {
                return reply(StatusCode::FORBIDDEN, json!({"error": {"code": "deviceauth_authorization_pending"}}));
            }
            let verifier = "device-verifier-0123456789-0123456789-0123456789".to_string();
            let code = format!("devcode-{}", s.next);
            s.next += 1;
            s.codes.insert(
                code.clone(),
                (s256(&verifier), "https://auth.openai.com/deviceauth/callback".into(), "openai-codex".into()),
            );
            ok(json!({"authorization_code": code, "code_verifier": verifier}))
        }
        ("POST", "/github/login/device/code") => device_code(origin, "dev-github", "https://github.com/login/device"),
        ("POST", "/github/login/oauth/access_token") => {
            if first_poll(s, &get("device_code")) {
                return ok(json!({"error": "authorization_pending"}));
            }
            let (_, github) = mint(s, "github-copilot");
            ok(json!({"access_token": github, "token_type": "bearer", "scope": "read:user"}))
        }
        ("GET", "/github-api/copilot_internal/v2/token") => {
            let github = bearer(headers).unwrap_or_default();
            if s.revoked || !s.refresh_tokens.contains_key(&github) {
                return reply(StatusCode::UNAUTHORIZED, json!({"message": "Bad credentials"}));
            }
            s.next += 1;
            let expires_at = chrono_now_s() + s.lifetime;
            ok(json!({"token": copilot_token(s.next), "expires_at": expires_at, "refresh_in": 1500}))
        }
        ("GET", "/copilot/models") => ok(json!({"data": [
            {"id": "gpt-4o", "model_picker_enabled": true, "policy": {"state": "enabled"}, "capabilities": {"supports": {"tool_calls": true}}},
            {"id": "claude-sonnet-4", "model_picker_enabled": true, "policy": {"state": "unconfigured"}},
            {"id": "embed-only", "model_picker_enabled": true, "capabilities": {"supports": {"tool_calls": false}}}
        ]})),
        ("POST", p) if p.starts_with("/copilot/models/") && p.ends_with("/policy") => ok(json!({"state": "enabled"})),
        ("POST", "/xai/oauth2/device/code") => device_code(origin, "dev-xai", "https://accounts.x.ai/device"),
        ("POST", "/kimi/api/oauth/device_authorization") => {
            let mut body = device_json("dev-kimi", "https://www.kimi.com/device");
            body["verification_uri_complete"] = json!(format!("https://www.kimi.com/device?user_code={USER_CODE}"));
            ok(body)
        }
        ("POST", "/meta-auth/oidc/device/authorization/") => {
            device_code(origin, "dev-meta", "https://auth.meta.com/device")
        }
        ("POST", "/radius/v1/oauth/device") => device_code(origin, "dev-radius", "https://radius.pi.dev/device"),
        ("POST", "/xai/oauth2/token") | ("POST", "/kimi/api/oauth/token") | ("POST", "/radius/v1/oauth/token") => {
            let provider = match path {
                "/xai/oauth2/token" => "xai",
                "/kimi/api/oauth/token" => "kimi-coding",
                _ => "radius",
            };
            if get("grant_type") == "refresh_token" {
                return token(
                    s,
                    f,
                    provider,
                    |access, refresh, life| json!({"access_token": access, "refresh_token": refresh, "expires_in": life}),
                );
            }
            if first_poll(s, &get("device_code")) {
                return oauth_error(StatusCode::BAD_REQUEST, "authorization_pending", "waiting for the user");
            }
            let (access, refresh) = mint(s, provider);
            ok(
                json!({"access_token": access, "refresh_token": refresh, "expires_in": s.lifetime, "token_type": "Bearer"}),
            )
        }
        ("POST", "/meta-auth/oidc/device/token/") => {
            if first_poll(s, &get("device_code")) {
                return oauth_error(StatusCode::BAD_REQUEST, "authorization_pending", "waiting for the user");
            }
            let (_, identity) = mint(s, "meta");
            ok(json!({"access_token": identity, "token_type": "Bearer"}))
        }
        ("POST", "/meta-api/muse-code/key") => {
            let identity = bearer(headers).unwrap_or_default();
            if s.revoked || !s.refresh_tokens.contains_key(&identity) {
                return reply(StatusCode::UNAUTHORIZED, json!({"detail": "identity token expired"}));
            }
            s.next += 1;
            ok(json!({"api_key": format!("meta-key-{}", s.next)}))
        }
        _ => reply(StatusCode::NOT_FOUND, json!({"error": "not_found", "path": path})),
    }
}

fn chrono_now_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn device_json(device_code: &str, verification: &str) -> Value {
    json!({"device_code": device_code, "user_code": USER_CODE, "verification_uri": verification,
           "interval": 1, "expires_in": 120})
}

fn device_code(_origin: &str, device_code: &str, verification: &str) -> Response {
    ok(device_json(device_code, verification))
}

/// True on a device code's first poll.
fn first_poll(s: &mut State, device_code: &str) -> bool {
    let n = s.polls.entry(device_code.to_string()).or_default();
    *n += 1;
    *n == 1
}

fn new_code(s: &mut State, f: &HashMap<String, String>, provider: &str, redirect_uri: &str) -> String {
    s.next += 1;
    let code = format!("code-{provider}-{}", s.next);
    let challenge = f.get("code_challenge").cloned().unwrap_or_default();
    s.codes.insert(code.clone(), (challenge, redirect_uri.to_string(), provider.to_string()));
    code
}

pub(crate) fn authorize(
    s: &mut State,
    f: &HashMap<String, String>,
    provider: &str,
    redirect_field: &str,
    state: bool,
) -> Response {
    let Some(redirect_uri) = f.get(redirect_field).cloned() else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "no redirect");
    };
    let code = new_code(s, f, provider, &redirect_uri);
    let mut to = format!("{redirect_uri}{}code={code}", if redirect_uri.contains('?') { '&' } else { '?' });
    if state && let Some(st) = f.get("state") {
        to.push_str(&format!("&state={}", enc(st)));
    }
    redirect(&to)
}

/// Check and consume an authorization code (PKCE and redirect URI); the
/// error is the `invalid_grant` answer's description.
fn take_code(
    s: &mut State,
    f: &HashMap<String, String>,
    provider: &str,
    redirect: Option<&str>,
) -> Result<(), &'static str> {
    let bad = Err;
    let code = f.get("code").cloned().unwrap_or_default();
    let Some((challenge, redirect_uri, owner)) = s.codes.remove(&code) else { return bad("unknown or used code") };
    if owner != provider {
        return bad("code of another provider");
    }
    if s256(f.get("code_verifier").map(String::as_str).unwrap_or("")) != challenge {
        return bad("PKCE verification failed");
    }
    if redirect.is_some_and(|r| r != redirect_uri) {
        return bad("redirect_uri mismatch");
    }
    Ok(())
}

/// The token endpoint: an authorization code or a (rotating) refresh token.
pub(crate) fn token(
    s: &mut State,
    f: &HashMap<String, String>,
    provider: &str,
    body: impl Fn(&str, &str, i64) -> Value,
) -> Response {
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            if let Err(why) = take_code(s, f, provider, f.get("redirect_uri").map(String::as_str)) {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
            }
        }
        Some("refresh_token") => {
            let given = f.get("refresh_token").cloned().unwrap_or_default();
            if s.revoked {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "Refresh token revoked");
            }
            if s.refresh_tokens.remove(&given).as_deref() != Some(provider) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "Refresh token not found or already used",
                );
            }
        }
        _ => return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "grant"),
    }
    let (access, refresh) = mint(s, provider);
    ok(body(&access, &refresh, s.lifetime))
}
