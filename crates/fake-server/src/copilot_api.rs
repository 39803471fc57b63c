//! GitHub Copilot's own API routes beside the model calls, which a Copilot
//! login's refresh reads from the account's base URL: `GET …/models` (the
//! account's models with their picker flag and policy) and `POST
//! …/models/<id>/policy` (enable one). Only requests carrying Copilot's
//! editor headers (`Copilot-Integration-Id`) are answered here, so other
//! providers' `GET /models` (llama-server's) keep their routes.

use serde_json::json;

use crate::RecordedRequest;
use crate::aws_services::Answer;

/// The answer of a Copilot API route, or None for other requests.
pub fn answer(request: &RecordedRequest) -> Option<Answer> {
    request.header("copilot-integration-id")?;
    let path = request.path.split('?').next().unwrap_or("");
    let body = match request.method.as_str() {
        "GET" if path.ends_with("/models") => json!({"data": [
            {"id": "microsoft-decision-1", "model_picker_enabled": true, "policy": {"state": "enabled"},
             "capabilities": {"supports": {"tool_calls": true}}},
            {"id": "claude-sonnet-4.6", "model_picker_enabled": true, "policy": {"state": "enabled"},
             "capabilities": {"supports": {"tool_calls": true}}}
        ]}),
        "POST" if path.contains("/models/") && path.ends_with("/policy") => json!({"state": "enabled"}),
        _ => return None,
    };
    Some((200, vec![("content-type".to_string(), "application/json".to_string())], body.to_string()))
}
