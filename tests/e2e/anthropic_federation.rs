//! Anthropic workload identity federation side by side with pi 1.6.0 (its
//! Anthropic SDK's `oidc_federation` credentials): with no key, the
//! `ANTHROPIC_FEDERATION_*` variables make both programs trade the identity
//! token for an access token at the fake server's `/v1/oauth/token`, then
//! call the Messages API with it as a bearer token.

use pi_compat::fake_server::anthropic_federation::IDENTITY_TOKEN;
use serde_json::json;

use crate::wire_apis::{Case, side_by_side};

#[tokio::test]
async fn anthropic_with_workload_identity_federation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("identity-token");
    std::fs::write(&token, format!("{IDENTITY_TOKEN}\n")).expect("token");
    side_by_side(Case {
        name: "anthropic-federation",
        model: "anthropic/claude-sonnet-4-5",
        env: vec![
            ("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_side_by_side".into()),
            ("ANTHROPIC_ORGANIZATION_ID", "org-side-by-side".into()),
            ("ANTHROPIC_IDENTITY_TOKEN_FILE", token.display().to_string()),
            ("ANTHROPIC_WORKSPACE_ID", "wrkspc_side_by_side".into()),
        ],
        models: json!({"providers": {"anthropic": {"baseUrl": "BASE"}}}),
        auth: None,
        aws_auth: false,
    })
    .await;
}
