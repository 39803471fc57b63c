//! Signing in to an MCP server, as pi-mcp's `signInMcpServer` does it: the
//! stored refresh token first; otherwise the browser step with PKCE, the
//! client being the configured one, the one registered before (while its
//! redirect URI still fits), pi's Client ID Metadata Document (when the
//! authorization server supports documents for public clients) or a client
//! registered now (RFC 7591). The authorization response arrives at a
//! loopback callback (pi-auth's callback server) or as a redirect URL the
//! user pastes, whichever comes first; the code is exchanged and the tokens
//! saved in the server's store.

use pi_auth::auth::oauth::callback::{CallbackOptions, CallbackServer, Complete};
use pi_auth::auth::oauth::pkce;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::client::{TokenSource, refresh_stored};
use super::flow::{self, Client, Discovered};
use super::{OAuthSettings, normalized_url};

/// How the sign-in reaches the user.
#[async_trait::async_trait]
pub trait SignInPrompt: Send + Sync {
    /// Show the authorization URL (and open it in a browser).
    fn show_authorization_url(&self, url: &str);
    /// The redirect URL the user pasted from the browser's address bar;
    /// None when they gave up. Dropped (the question withdrawn) once the
    /// loopback callback arrived.
    async fn redirect_url(&self) -> Option<String>;
}

/// What "Sign-in cancelled" reads as (pi's wording).
pub const CANCELLED: &str = "Sign-in cancelled.";

/// Where the loopback callback listens and what redirect URI it makes.
struct Loopback {
    host: String,
    redirect_host: String,
    port: Option<u16>,
    path: String,
    /// A configured redirect URI with its port, sent exactly as written.
    fixed: Option<String>,
}

impl Loopback {
    fn of(settings: &OAuthSettings) -> Result<Loopback, String> {
        let configured = settings.callback_url.clone().unwrap_or_else(|| "http://127.0.0.1/callback".into());
        let url = url::Url::parse(&configured).map_err(|e| format!("invalid oauth.callbackUrl: {e}"))?;
        let address = url.host_str().unwrap_or("127.0.0.1").trim_start_matches('[').trim_end_matches(']').to_string();
        let port = url.port().or(settings.callback_port);
        let fixed = if url.port().is_some() {
            settings.callback_url.clone()
        } else {
            port.map(|p| {
                let mut with_port = url.clone();
                let _ = with_port.set_port(Some(p));
                with_port.to_string()
            })
        };
        Ok(Loopback {
            host: if address == "localhost" { "127.0.0.1".into() } else { address.clone() },
            redirect_host: address,
            port,
            path: url.path().to_string(),
            fixed,
        })
    }

    /// pi's documents list `http://127.0.0.1|localhost:<port>/callback` only.
    fn fits_documents(&self) -> bool {
        matches!(self.redirect_host.as_str(), "127.0.0.1" | "localhost") && self.path == "/callback"
    }
}

fn registered_redirects(state: &Value) -> Vec<String> {
    let uris = state.get("clientInformation").and_then(|c| c.get("redirect_uris")).and_then(Value::as_array);
    uris.map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

/// Sign in to `source`'s server. Err is what to tell the user.
pub async fn sign_in(
    source: &TokenSource,
    prompt: &dyn SignInPrompt,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let (name, url, settings, store) = (&source.name, &source.url, &source.settings, &source.store());
    let challenge = source.challenge();
    let step_up = challenge.as_ref().and_then(|c| c.error.as_deref()) == Some("insufficient_scope");
    let empty = || json!({"serverUrl": normalized_url(url)});
    let own = |state: Option<Value>| {
        state.filter(|s| s.get("serverUrl").and_then(Value::as_str) == Some(normalized_url(url).as_str()))
    };
    // The stored refresh token first, unless the server asks for more scope.
    if !step_up {
        let _lock = tokio::select! {
            lock = store.refresh_lock(name, url) => lock.ok(),
            _ = cancel.cancelled() => return Err(CANCELLED.into()),
        };
        if let Some(mut state) = own(store.load(name, url).await?) {
            let cimd_replaces = settings.client_registration.as_deref() == Some("cimd")
                && state.get("clientInformation").is_some()
                && settings.client_id.is_none();
            if !cimd_replaces && let Ok(true) = refresh_stored(url, settings, &mut state, None).await {
                store.save(name, url, state).await?;
                return Ok(());
            }
        }
    }
    let loopback = Loopback::of(settings)?;
    let mut state = own(store.load(name, url).await?).unwrap_or_else(empty);
    let http = flow::http_client()?;
    let resource_metadata_url = challenge.as_ref().and_then(|c| c.resource_metadata_url.clone());
    let discovered = flow::discover(&http, url, settings, resource_metadata_url.as_deref()).await?;
    if settings.auth_server_metadata_url.is_none() {
        state["discovery"] = discovered.to_state();
        if let Some(u) = &resource_metadata_url {
            state["discovery"]["resourceMetadataUrl"] = json!(u);
        }
    }
    let registration = settings.client_registration.as_deref().unwrap_or("auto");
    let offers_document = match registration {
        "cimd" => true,
        "dcr" => false,
        _ => settings.client_id.is_none() && settings.client_name.is_none() && loopback.fits_documents(),
    };
    if registration == "cimd" && !loopback.fits_documents() {
        return Err(format!(
            "Sign-in failed: oauth.clientRegistration \"cimd\" needs Client ID Metadata Documents that list the redirect URI {}",
            loopback.fixed.clone().unwrap_or_else(|| format!("http://{}{}", loopback.redirect_host, loopback.path))
        ));
    }
    let document = if offers_document && settings.client_id.is_none() { discovered.client_document(url) } else { None };
    if registration == "cimd" && document.is_none() {
        return Err("Sign-in failed: The authorization server does not support Client ID Metadata Documents for public clients; remove oauth.clientRegistration \"cimd\"".into());
    }
    // The redirect path: a server-specific document's, or the configured one.
    let path = match &document {
        Some((_, Some(id))) => format!("{}/{id}", loopback.path.trim_end_matches('/')),
        _ => loopback.path.clone(),
    };
    let port = loopback
        .port
        .or_else(|| registered_redirects(&state).first().and_then(|u| url::Url::parse(u).ok()).and_then(|u| u.port()));
    let oauth_state = pkce::random_hex(32);
    let complete: Complete = std::sync::Arc::new(|_code, query| {
        Box::pin(async move {
            let map: serde_json::Map<String, Value> = query.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            Ok(Value::Object(map))
        })
    });
    let listen = |port: u16| CallbackOptions {
        provider_name: "the MCP server",
        host: loopback.host.clone(),
        port,
        path: path.clone(),
        redirect_host: Some(loopback.redirect_host.clone()),
        state: Some(oauth_state.clone()),
        timeout: None,
    };
    let mut callback = match CallbackServer::start(listen(port.unwrap_or(0)), complete.clone(), cancel.clone()).await {
        Ok(server) => server,
        // A configured port is required; a stored client's port is only preferred.
        Err(_) if loopback.port.is_none() && port.is_some() => {
            CallbackServer::start(listen(0), complete, cancel.clone())
                .await
                .map_err(|e| format!("Sign-in failed: cannot listen for the callback: {e}"))?
        }
        Err(e) => return Err(format!("Sign-in failed: cannot listen for the callback: {e}")),
    };
    let redirect_uri = match (&loopback.fixed, &document) {
        (Some(fixed), Some((_, Some(id)))) => format!("{}/{id}", fixed.trim_end_matches('/')),
        (Some(fixed), _) => fixed.clone(),
        (None, _) => callback.redirect_uri.clone(),
    };
    // A registered client cannot use another redirect URI, and its tokens belong to it.
    let keep_client = settings.client_id.is_some()
        || match state.get("clientInformation") {
            Some(_) => registration != "cimd" && registered_redirects(&state).contains(&redirect_uri),
            None => document.is_some(),
        };
    if let Some(map) = state.as_object_mut() {
        map.remove("oauthState");
        if !keep_client {
            for key in ["clientInformation", "tokens", "tokensExpireAt"] {
                map.remove(key);
            }
        }
    }
    let challenged = challenge.as_ref().and_then(|c| c.scope.clone());
    let granted = state.get("tokens").and_then(|t| t.get("scope")).and_then(Value::as_str).map(str::to_string);
    let extra = if step_up { merge(granted.as_deref(), challenged.as_deref()) } else { challenged };
    let scope = discovered.scope(settings, extra.as_deref());
    let client =
        match (&settings.client_id, state.get("clientInformation").and_then(Client::from_information), &document) {
            (Some(id), _, _) => Client { id: id.clone(), secret: settings.secret()?, auth_method: None },
            (None, Some(stored), _) => stored,
            (None, None, Some((id, _))) => Client { id: id.clone(), secret: None, auth_method: Some("none".into()) },
            (None, None, None) => {
                let info = flow::register(&http, &discovered, settings, &redirect_uri, scope.as_deref())
                    .await
                    .map_err(|e| format!("Sign-in failed: {e}"))?;
                state["clientInformation"] = info.clone();
                Client::from_information(&info).ok_or("Sign-in failed: invalid registration")?
            }
        };
    let resource = discovered.resource(url).map_err(|e| format!("Sign-in failed: {e}"))?;
    let pkce = pkce::generate();
    state["oauthState"] = json!(oauth_state);
    state["codeVerifier"] = json!(pkce.verifier);
    store.save(name, url, state.clone()).await?;
    let authorization_url = authorization_url(
        &discovered,
        &client,
        &redirect_uri,
        &oauth_state,
        &pkce.challenge,
        scope.as_deref(),
        resource.as_deref(),
    )?;
    prompt.show_authorization_url(&authorization_url);
    let response = {
        let pasted = prompt.redirect_url();
        tokio::pin!(pasted);
        tokio::select! {
            called = callback.wait() => match called {
                Ok(Some(query)) => query,
                Ok(None) => return Err(CANCELLED.into()),
                Err(e) if e.message.contains("cancel") => return Err(CANCELLED.into()),
                Err(e) => return Err(format!("Sign-in failed: {}", e.message)),
            },
            text = &mut pasted => match text.filter(|t| !t.trim().is_empty()) {
                Some(text) => from_redirect_url(&text, &redirect_uri, &oauth_state).map_err(|e| format!("Sign-in failed: {e}"))?,
                None => return Err(CANCELLED.into()),
            },
            _ = cancel.cancelled() => return Err(CANCELLED.into()),
        }
    };
    drop(callback);
    let field = |k: &str| response.get(k).and_then(Value::as_str).map(str::to_string);
    let code = field("code").ok_or("Sign-in failed: the response carries no authorization code")?;
    check_issuer(&discovered, field("iss").as_deref()).map_err(|e| format!("Sign-in failed: {e}"))?;
    let current = own(store.load(name, url).await?);
    if current.as_ref().and_then(|s| s.get("oauthState")).and_then(Value::as_str) != Some(oauth_state.as_str()) {
        return Err("Sign-in failed: Another sign-in to this MCP server started since; sign in again".into());
    }
    let params = vec![
        ("grant_type".to_string(), "authorization_code".to_string()),
        ("code".to_string(), code),
        ("code_verifier".to_string(), pkce.verifier.clone()),
        ("redirect_uri".to_string(), redirect_uri.clone()),
    ];
    let tokens = flow::token_request(&http, &discovered, &client, resource.as_deref(), params)
        .await
        .map_err(|e| format!("Sign-in failed: {e}"))?;
    let mut state = current.unwrap_or(state);
    flow::saved_tokens(&mut state, tokens, None, scope.as_deref());
    store.save(name, url, state).await?;
    source.reset();
    source.clear_challenge();
    Ok(())
}

fn merge(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for s in [a, b].into_iter().flatten().flat_map(str::split_whitespace) {
        if !all.contains(&s) {
            all.push(s);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

fn authorization_url(
    discovered: &Discovered,
    client: &Client,
    redirect_uri: &str,
    state: &str,
    challenge: &str,
    scope: Option<&str>,
    resource: Option<&str>,
) -> Result<String, String> {
    if let Some(m) = &discovered.metadata {
        let has = |field: &str, want: &str| {
            m.get(field).and_then(Value::as_array).is_none_or(|a| a.iter().any(|v| v.as_str() == Some(want)))
        };
        if !has("response_types_supported", "code") {
            return Err("Sign-in failed: Authorization server does not support authorization codes".into());
        }
        if !has("code_challenge_methods_supported", "S256") {
            return Err("Sign-in failed: Authorization server does not support PKCE S256".into());
        }
    }
    let endpoint = discovered.authorization_endpoint();
    let mut url =
        url::Url::parse(&endpoint).map_err(|e| format!("Sign-in failed: invalid authorization endpoint: {e}"))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!("Sign-in failed: Invalid authorization endpoint {url}"));
    }
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client.id)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("state", state);
        if let Some(scope) = scope {
            q.append_pair("scope", scope);
            if scope.split_whitespace().any(|s| s == "offline_access") {
                q.append_pair("prompt", "consent");
            }
        }
        if let Some(resource) = resource {
            q.append_pair("resource", resource);
        }
    }
    Ok(url.to_string())
}

/// RFC 9207: a code from another authorization server is never exchanged here.
fn check_issuer(discovered: &Discovered, iss: Option<&str>) -> Result<(), String> {
    let metadata = discovered.metadata.as_ref();
    let expected = metadata.and_then(|m| m.get("issuer")).and_then(Value::as_str);
    let promised = metadata.and_then(|m| m.get("authorization_response_iss_parameter_supported")) == Some(&json!(true));
    if (iss.is_some() || promised) && iss != expected {
        let show = |v: Option<&str>| v.map_or("none".to_string(), |v| format!("\"{v}\""));
        return Err(format!("OAuth issuer mismatch: expected {}, received {}", show(expected), show(iss)));
    }
    Ok(())
}

/// The authorization response in a redirect URL the user pasted.
fn from_redirect_url(input: &str, redirect_uri: &str, state: &str) -> Result<Value, String> {
    let url =
        url::Url::parse(input.trim()).map_err(|_| "Expected the full redirect URL from the browser address bar")?;
    let expected = url::Url::parse(redirect_uri).map_err(|e| e.to_string())?;
    if url.origin() != expected.origin() || url.path() != expected.path() {
        return Err("The redirect URL does not match this sign-in's redirect URI".into());
    }
    let query: serde_json::Map<String, Value> =
        url.query_pairs().map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
    let get = |k: &str| query.get(k).and_then(Value::as_str);
    if let Some(error) = get("error") {
        return Err(get("error_description").unwrap_or(error).to_string());
    }
    if get("state") != Some(state) {
        return Err("The redirect URL belongs to a different sign-in".into());
    }
    if get("code").is_none() {
        return Err("The redirect URL does not contain an authorization code".into());
    }
    Ok(Value::Object(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_redirect_url_must_be_this_sign_ins() {
        let redirect = "http://127.0.0.1:4321/callback";
        let ok = from_redirect_url("http://127.0.0.1:4321/callback?code=c1&state=s1", redirect, "s1").unwrap();
        assert_eq!(ok["code"], "c1");
        assert!(from_redirect_url("http://127.0.0.1:4321/other?code=c1&state=s1", redirect, "s1").is_err());
        assert!(from_redirect_url("http://127.0.0.1:4321/callback?code=c1&state=s2", redirect, "s1").is_err());
        let refused = from_redirect_url("http://127.0.0.1:4321/callback?error=access_denied&state=s1", redirect, "s1");
        assert_eq!(refused.unwrap_err(), "access_denied");
    }
}
