use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use pi_fake_server::{FakeServer, Reply};

use super::*;
use crate::provider::ProviderEvent;
use crate::provider::test_support::simple_request;

fn env(vars: &[(&str, &str)]) -> ProviderEnv {
    ProviderEnv::new(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>())
}

fn bedrock_model(base_url: &str) -> crate::model::Model {
    let mut m = crate::provider::faux::faux_model();
    m.id = "eu.anthropic.claude-sonnet-4-20250514-v1:0".into();
    m.name = "Claude Sonnet 4 (EU)".into();
    m.provider = "amazon-bedrock".into();
    m.api = "bedrock-converse-stream".into();
    m.base_url = base_url.into();
    m.max_tokens = 64000;
    m.context_window = 200_000;
    m
}

#[test]
fn regions_and_endpoints_follow_pi() {
    let standard = "https://bedrock-runtime.us-east-1.amazonaws.com";
    assert_eq!(standard_endpoint_region(standard).as_deref(), Some("us-east-1"));
    assert_eq!(
        standard_endpoint_region("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com/").as_deref(),
        Some("us-gov-west-1")
    );
    assert_eq!(standard_endpoint_region("http://127.0.0.1:9"), None);
    assert_eq!(arn_region("arn:aws:bedrock:eu-west-3:123:inference-profile/x").as_deref(), Some("eu-west-3"));
    assert_eq!(arn_region("arn:aws-us-gov:bedrock:us-gov-east-1:1:x").as_deref(), Some("us-gov-east-1"));
    assert_eq!(arn_region("eu.anthropic.claude"), None);
    if std::env::var_os("AWS_PROFILE").is_some() || std::env::var_os("AWS_REGION").is_some() {
        return;
    }
    let none = env(&[]);
    // The catalog's endpoint and region when nothing is configured.
    assert_eq!(target(standard, "m", &none, None), Target { region: "us-east-1".into(), endpoint: standard.into() });
    // A configured region moves a standard endpoint, not a custom one.
    let eu = env(&[("AWS_REGION", "eu-central-1")]);
    assert_eq!(target(standard, "m", &eu, None).endpoint, "https://bedrock-runtime.eu-central-1.amazonaws.com");
    let custom = target("http://127.0.0.1:9/", "m", &eu, None);
    assert_eq!((custom.region.as_str(), custom.endpoint.as_str()), ("eu-central-1", "http://127.0.0.1:9"));
    // An inference-profile ARN names its region.
    assert_eq!(target(standard, "arn:aws:bedrock:ap-south-1:1:x", &eu, None).region, "ap-south-1");
    assert_eq!(
        encode_label("eu.anthropic.claude-sonnet-4-20250514-v1:0"),
        "eu.anthropic.claude-sonnet-4-20250514-v1%3A0"
    );
    assert_eq!(encode_label("arn:aws:bedrock:x/y"), "arn%3Aaws%3Abedrock%3Ax%2Fy");
}

#[test]
fn signing_adds_the_sigv4_headers() {
    let keys = AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("tok".into()),
    };
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    let time = std::time::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
    sign_request("http://127.0.0.1:9/model/m/converse-stream", &mut headers, b"{}", &keys, "us-east-1", time).unwrap();
    let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    assert_eq!(get("x-amz-date"), Some("20150830T123600Z"));
    assert_eq!(get("x-amz-security-token"), Some("tok"));
    assert_eq!(get("x-amz-content-sha256"), Some("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"));
    let auth = get("authorization").unwrap();
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="), "{auth}");
}

async fn collect(
    provider: &BedrockConverseStream,
    request: ProviderRequest,
) -> Vec<Result<ProviderEvent, ProviderError>> {
    provider.stream(request, CancellationToken::new()).collect().await
}

#[tokio::test]
async fn signed_calls_pass_the_fake_endpoints_check() {
    let server = FakeServer::start().await.unwrap();
    server.require_aws_auth("AKIDTEST", "secret-test", Some("bedrock-bearer"));
    server.push(Reply::text("Signed hello"));
    server.push(Reply::text("Bearer hello"));
    let provider = BedrockConverseStream::new(HttpClient::new().unwrap());
    let mut request = simple_request(bedrock_model(&server.url()), "hi");
    // Ambient AWS credentials stand in as pi's `<authenticated>` key.
    request.api_key = Some(crate::provider::ambient::AUTHENTICATED.into());
    request.env = env(&[
        ("AWS_ACCESS_KEY_ID", "AKIDTEST"),
        ("AWS_SECRET_ACCESS_KEY", "secret-test"),
        ("AWS_SESSION_TOKEN", "sess"),
    ]);
    let events = collect(&provider, request.clone()).await;
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Ok(ProviderEvent::BlockDelta { delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Signed hello");
    assert!(matches!(events.last(), Some(Ok(ProviderEvent::Stop { .. }))));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/model/eu.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream");
    assert_eq!(sent.header("x-amz-security-token"), Some("sess"));
    // A bearer token (stored key or AWS_BEARER_TOKEN_BEDROCK) replaces SigV4.
    let mut bearer = request.clone();
    bearer.api_key = Some("bedrock-bearer".into());
    let events = collect(&provider, bearer).await;
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    assert_eq!(server.requests()[1].header("authorization"), Some("Bearer bedrock-bearer"));
    // A wrong secret is refused by the endpoint, with pi's wording.
    let mut wrong = request.clone();
    wrong.env = env(&[("AWS_ACCESS_KEY_ID", "AKIDTEST"), ("AWS_SECRET_ACCESS_KEY", "nope")]);
    let events = collect(&provider, wrong).await;
    let err = events.last().unwrap().clone().unwrap_err();
    assert_eq!(err.kind, crate::provider::ProviderErrorKind::Auth);
    assert!(
        err.message.starts_with("InvalidSignatureException: The request signature we calculated"),
        "{}",
        err.message
    );
}
