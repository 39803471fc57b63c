//! Anthropic's token endpoint for workload identity federation
//! (`POST /v1/oauth/token`, JWT bearer grant), on the fake server beside the
//! Messages route: it trades [`IDENTITY_TOKEN`] for [`ACCESS_TOKEN`].

use serde_json::json;

use crate::RecordedRequest;
use crate::aws_services::Answer;

/// The identity token (OIDC JWT) the endpoint accepts.
pub const IDENTITY_TOKEN: &str = "fake-anthropic-identity-jwt";
/// The access token it hands out.
pub const ACCESS_TOKEN: &str = "fake-federated-access-token";

/// The token endpoint's answer, or None for other requests.
pub fn answer(request: &RecordedRequest) -> Option<Answer> {
    let body = &request.body;
    if request.method != "POST"
        || request.path != "/v1/oauth/token"
        || body["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer"
    {
        return None;
    }
    let beta = request.header("anthropic-beta").unwrap_or_default();
    if !beta.split(',').any(|b| b.trim() == "oidc-federation-2026-04-01") {
        return Some((400, vec![], json!({"error": "invalid_request"}).to_string()));
    }
    if body["assertion"] != IDENTITY_TOKEN || !body["federation_rule_id"].is_string() {
        return Some((401, vec![], json!({"error": "invalid_grant", "assertion": body["assertion"]}).to_string()));
    }
    let answer = json!({"access_token": ACCESS_TOKEN, "token_type": "Bearer", "expires_in": 3600});
    Some((200, vec![], answer.to_string()))
}
