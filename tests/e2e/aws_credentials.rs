//! The AWS credential chain side by side with pi 1.6.0 (its AWS SDK's
//! default chain): an assumed role (`role_arn` + `source_profile`), a web
//! identity token, an SSO profile and the EC2 instance metadata service,
//! each answered by the fake server's AWS services
//! (`pi_compat::fake_server::aws_services`, reached through the SDKs' own
//! endpoint variables). Both programs must ask the same services the same
//! way, and sign the Bedrock call with the credentials they were given (the
//! fake server verifies both signatures).

use pi_compat::fake_server::aws_services::{SSO_ACCESS_TOKEN, WEB_IDENTITY_TOKEN};
use serde_json::json;

use crate::wire_apis::{AWS_KEY_ID, AWS_SECRET, Case, aws_env, side_by_side};

const MODEL: &str = "amazon-bedrock/eu.anthropic.claude-sonnet-4-20250514-v1:0";

/// A case whose credentials come from the fake server's AWS services, with
/// no keys in the environment and the instance metadata service off (but
/// for the case that asks it).
fn case(name: &'static str, extra: Vec<(&'static str, String)>) -> Case {
    let mut env = aws_env();
    env.push(("AWS_REGION", "eu-west-3".to_string()));
    env.extend(extra);
    if !env.iter().any(|(k, _)| *k == "AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        env.push(("AWS_EC2_METADATA_DISABLED", "true".to_string()));
    }
    Case {
        name,
        model: MODEL,
        env,
        models: json!({"providers": {"amazon-bedrock": {"baseUrl": "BASE"}}}),
        auth: None,
        aws_auth: true,
    }
}

#[tokio::test]
async fn bedrock_with_an_assumed_role_profile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[profile source]\naws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\n\n[profile assumed]\nrole_arn = arn:aws:iam::123456789012:role/pi-test\nsource_profile = source\nrole_session_name = side-by-side\nregion = eu-west-3\n"
        ),
    )
    .expect("config");
    let none = dir.path().join("none").display().to_string();
    side_by_side(case(
        "bedrock-assume-role",
        vec![
            ("AWS_PROFILE", "assumed".into()),
            ("AWS_CONFIG_FILE", config.display().to_string()),
            ("AWS_SHARED_CREDENTIALS_FILE", none),
            ("AWS_ENDPOINT_URL_STS", "BASE".into()),
        ],
    ))
    .await;
}

#[tokio::test]
async fn bedrock_with_a_web_identity_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, WEB_IDENTITY_TOKEN).expect("token");
    let none = dir.path().join("none").display().to_string();
    side_by_side(case(
        "bedrock-web-identity",
        vec![
            ("AWS_CONFIG_FILE", none.clone()),
            ("AWS_SHARED_CREDENTIALS_FILE", none),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.display().to_string()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pi-web".into()),
            ("AWS_ROLE_SESSION_NAME", "side-by-side".into()),
            ("AWS_ENDPOINT_URL_STS", "BASE".into()),
        ],
    ))
    .await;
}

#[tokio::test]
async fn bedrock_with_an_sso_profile() {
    let home = tempfile::tempdir().expect("tempdir");
    let aws = home.path().join(".aws");
    std::fs::create_dir_all(aws.join("sso/cache")).expect("cache dir");
    std::fs::write(
        aws.join("config"),
        "[profile dev]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Developer\nregion = eu-west-3\n\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-3\nsso_registration_scopes = sso:account:access\n",
    )
    .expect("config");
    // `aws sso login`'s cache: the file is named after the SHA-1 of the session name ("corp").
    let token = json!({"startUrl": "https://corp.awsapps.com/start", "region": "eu-west-3",
                       "accessToken": SSO_ACCESS_TOKEN, "expiresAt": "2099-01-01T00:00:00Z"});
    std::fs::write(aws.join("sso/cache/ee0bfd2552fbd840c02cc48b6e823320543c450f.json"), token.to_string())
        .expect("token cache");
    side_by_side(case(
        "bedrock-sso",
        vec![
            ("HOME", home.path().display().to_string()),
            ("AWS_PROFILE", "dev".into()),
            ("AWS_ENDPOINT_URL_SSO", "BASE".into()),
        ],
    ))
    .await;
}

#[tokio::test]
async fn bedrock_with_instance_metadata() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = dir.path().join("none").display().to_string();
    side_by_side(case(
        "bedrock-instance-metadata",
        vec![
            ("AWS_CONFIG_FILE", none.clone()),
            ("AWS_SHARED_CREDENTIALS_FILE", none),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", "BASE".into()),
            // pi offers Bedrock only with some AWS configuration: a profile
            // the files lack passes on to the instance metadata.
            ("AWS_PROFILE", "on-ec2".into()),
        ],
    ))
    .await;
}
