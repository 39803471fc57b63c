//! An OAuth-protected MCP server: `/mcp` accepts only the access tokens this
//! server issued for `mcp` and forwards those requests to a real MCP server's
//! streamable-HTTP endpoint ([`super::FakeOAuth::guard_mcp`]); without one it
//! answers 401 with a `WWW-Authenticate` challenge naming its protected
//! resource metadata (RFC 9728). The authorization server under `/mcp-as`
//! publishes RFC 8414 metadata, registers clients dynamically (RFC 7591), and
//! issues codes (PKCE checked) and rotating refresh tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::State;
use super::routes::{authorize, ok, reply, token};

/// The guarded MCP endpoint.
pub(crate) const RESOURCE_PATH: &str = "/mcp";
/// The authorization server's issuer path.
pub(crate) const ISSUER_PATH: &str = "/mcp-as";
/// The provider name tokens of the MCP server are minted under.
pub(crate) const PROVIDER: &str = "mcp";

/// The metadata and authorization-server routes; None for other paths.
pub(crate) fn route(
    s: &mut State,
    method: &Method,
    path: &str,
    f: &HashMap<String, String>,
    origin: &str,
) -> Option<Response> {
    let issuer = format!("{origin}{ISSUER_PATH}");
    let response = match (method.as_str(), path) {
        ("GET", "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource") => ok(json!({
            "resource": format!("{origin}{RESOURCE_PATH}"),
            "authorization_servers": [issuer],
            "scopes_supported": ["mcp"],
        })),
        ("GET", "/.well-known/oauth-authorization-server/mcp-as") => ok(json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["mcp"],
        })),
        ("POST", "/mcp-as/register") => {
            s.next += 1;
            let mut client = json!({
                "client_id": format!("mcp-client-{}", s.next),
                "client_id_issued_at": 1_700_000_000,
                "token_endpoint_auth_method": "none",
            });
            for key in ["redirect_uris", "client_name", "grant_types", "response_types", "application_type"] {
                if let Some(value) = f.get(key) {
                    client[key] = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
                }
            }
            reply(StatusCode::CREATED, client)
        }
        ("GET", "/mcp-as/authorize") => authorize(s, f, PROVIDER, "redirect_uri", true),
        ("POST", "/mcp-as/token") => token(
            s,
            f,
            PROVIDER,
            |access, refresh, life| json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "expires_in": life, "scope": "mcp"}),
        ),
        _ => return None,
    };
    Some(response)
}

/// `/mcp`: a request with an access token this server issued goes to the
/// upstream MCP server (its answer streamed back); any other gets a 401.
pub(crate) async fn guarded(
    state: &Arc<Mutex<State>>,
    origin: &str,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let upstream = {
        let s = state.lock().unwrap_or_else(|p| p.into_inner());
        let valid = bearer.as_ref().is_some_and(|t| s.access_tokens.get(t).is_some_and(|p| p == PROVIDER));
        if !valid {
            let challenge = format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
            );
            return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)], "unauthorized").into_response();
        }
        s.mcp_upstream.clone()
    };
    let Some(upstream) = upstream else {
        return reply(StatusCode::BAD_GATEWAY, json!({"error": "no MCP server behind /mcp"}));
    };
    forward(&upstream, method, uri, headers, body).await
}

/// Send a request on to `upstream` (its query kept; `Host`, `Authorization`
/// and `Content-Length` left to the client) and stream its answer back.
pub(crate) async fn forward(upstream: &str, method: Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let target = match uri.query() {
        Some(q) => format!("{upstream}?{q}"),
        None => upstream.to_string(),
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let mut request = client.request(method, &target).body(body);
    for (name, value) in headers {
        if name != header::HOST && name != header::AUTHORIZATION && name != header::CONTENT_LENGTH {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(answer) => {
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != header::CONTENT_LENGTH && name != header::TRANSFER_ENCODING {
                    response = response.header(name, value);
                }
            }
            response
                .body(Body::from_stream(answer.bytes_stream()))
                .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
        }
        Err(e) => reply(StatusCode::BAD_GATEWAY, json!({"error": e.to_string()})),
    }
}
