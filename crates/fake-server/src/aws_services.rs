//! The AWS services a credential chain asks, faked on the same server as
//! Bedrock, so one `http://127.0.0.1:PORT` stands for all of them
//! (`AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL_SSO`,
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT`):
//!
//! * STS `AssumeRole` (its SigV4 signature is verified with the server's
//!   AWS keys when [`super::FakeServer::require_aws_auth`] set them) and
//!   `AssumeRoleWithWebIdentity` (the token must be [`WEB_IDENTITY_TOKEN`]);
//! * SSO's `GET /federation/credentials` (the bearer must be [`SSO_ACCESS_TOKEN`]);
//! * the EC2 instance metadata service, IMDSv2 (a session token first).
//!
//! Each answers its own [`Issued`] credentials, which Bedrock then accepts.

use crate::RecordedRequest;

/// Temporary credentials a fake service hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issued {
    pub access_key_id: &'static str,
    pub secret: &'static str,
    pub session_token: &'static str,
}

pub const ASSUMED_ROLE: Issued =
    Issued { access_key_id: "ASIAFAKEASSUMEDROLE", secret: "assumed-role-secret", session_token: "assumed-role-token" };
pub const WEB_IDENTITY: Issued =
    Issued { access_key_id: "ASIAFAKEWEBIDENTITY", secret: "web-identity-secret", session_token: "web-identity-token" };
pub const SSO_ROLE: Issued =
    Issued { access_key_id: "ASIAFAKESSOROLE", secret: "sso-role-secret", session_token: "sso-role-token" };
pub const INSTANCE_ROLE: Issued =
    Issued { access_key_id: "ASIAFAKEINSTANCE", secret: "instance-role-secret", session_token: "instance-role-token" };

/// Every set of issued credentials.
pub const ALL: [Issued; 4] = [ASSUMED_ROLE, WEB_IDENTITY, SSO_ROLE, INSTANCE_ROLE];

/// The web identity token STS accepts.
pub const WEB_IDENTITY_TOKEN: &str = "fake-web-identity-jwt";
/// The SSO access token (of `aws sso login`'s cache) the portal accepts.
pub const SSO_ACCESS_TOKEN: &str = "fake-sso-access-token";
/// The IMDSv2 session token and the instance's role name.
const IMDS_TOKEN: &str = "fake-imds-session-token";
const INSTANCE_ROLE_NAME: &str = "fake-instance-role";
const EXPIRATION: &str = "2099-01-01T00:00:00Z";

/// A service's answer: (status, headers, body).
pub type Answer = (u16, Vec<(String, String)>, String);

/// The answer of a credential service, or None when the request is not for one.
/// `keys`: the access key and secret an `AssumeRole` must be signed with.
pub fn answer(request: &RecordedRequest, keys: Option<(&str, &str)>) -> Option<Answer> {
    let path = request.path.split('?').next().unwrap_or("");
    if path.starts_with("/latest/") {
        return Some(instance_metadata(request, path));
    }
    if request.method == "GET" && path == "/federation/credentials" {
        return Some(sso(request));
    }
    let form = form(&request.raw_body);
    let action = form.iter().find(|(k, _)| k == "Action").map(|(_, v)| v.as_str());
    match (request.method.as_str(), action) {
        ("POST", Some("AssumeRole")) => Some(assume_role(request, keys)),
        ("POST", Some("AssumeRoleWithWebIdentity")) => Some(web_identity(&form)),
        _ => None,
    }
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            Some((decode(k), decode(v)))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&text[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn sts_error(code: &str, message: &str) -> Answer {
    (
        403,
        vec![],
        format!(
            "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>fake</RequestId></ErrorResponse>"
        ),
    )
}

fn sts_credentials(action: &str, issued: Issued) -> Answer {
    (
        200,
        vec![],
        format!(
            "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{action}Result><Credentials><AccessKeyId>{}</AccessKeyId><SecretAccessKey>{}</SecretAccessKey><SessionToken>{}</SessionToken><Expiration>{EXPIRATION}</Expiration></Credentials><AssumedRoleUser><AssumedRoleId>AROAFAKE:session</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/fake/session</Arn></AssumedRoleUser></{action}Result><ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata></{action}Response>",
            issued.access_key_id, issued.secret, issued.session_token
        ),
    )
}

fn assume_role(request: &RecordedRequest, keys: Option<(&str, &str)>) -> Answer {
    if let Some((id, secret)) = keys
        && let Err(e) = verify_sts_signature(request, id, secret)
    {
        return sts_error("SignatureDoesNotMatch", &e);
    }
    sts_credentials("AssumeRole", ASSUMED_ROLE)
}

/// The signature made for this server, or for the STS host it stands for
/// (a request sent here by `PI_RPC_ORIGIN_OVERRIDES` was signed for
/// `sts.{region}.amazonaws.com` or `sts.amazonaws.com`).
fn verify_sts_signature(request: &RecordedRequest, id: &str, secret: &str) -> Result<(), String> {
    let here = crate::bedrock::verify_sigv4(request, id, secret);
    if here.is_ok() {
        return here;
    }
    let region = request
        .header("authorization")
        .and_then(|a| a.split("Credential=").nth(1))
        .and_then(|c| c.split('/').nth(2))
        .unwrap_or("us-east-1")
        .to_string();
    for host in [format!("sts.{region}.amazonaws.com"), "sts.amazonaws.com".to_string()] {
        let mut moved = request.clone();
        for (name, value) in &mut moved.headers {
            if name == "host" {
                *value = host.clone();
            }
        }
        if crate::bedrock::verify_sigv4(&moved, id, secret).is_ok() {
            return Ok(());
        }
    }
    here
}

fn web_identity(form: &[(String, String)]) -> Answer {
    let token = form.iter().find(|(k, _)| k == "WebIdentityToken").map(|(_, v)| v.as_str());
    if token != Some(WEB_IDENTITY_TOKEN) {
        return sts_error("InvalidIdentityToken", "the web identity token is not the fake's");
    }
    sts_credentials("AssumeRoleWithWebIdentity", WEB_IDENTITY)
}

fn sso(request: &RecordedRequest) -> Answer {
    if request.header("x-amz-sso_bearer_token") != Some(SSO_ACCESS_TOKEN) {
        return (401, vec![], r#"{"message":"Session token not found or invalid"}"#.to_string());
    }
    let body = serde_json::json!({"roleCredentials": {
        "accessKeyId": SSO_ROLE.access_key_id,
        "secretAccessKey": SSO_ROLE.secret,
        "sessionToken": SSO_ROLE.session_token,
        "expiration": 4_070_908_800_000u64,
    }});
    (200, vec![], body.to_string())
}

fn instance_metadata(request: &RecordedRequest, path: &str) -> Answer {
    if request.method == "PUT" && path == "/latest/api/token" {
        return match request.header("x-aws-ec2-metadata-token-ttl-seconds") {
            Some(ttl) => (
                200,
                vec![("x-aws-ec2-metadata-token-ttl-seconds".to_string(), ttl.to_string())],
                IMDS_TOKEN.to_string(),
            ),
            None => (400, vec![], "missing x-aws-ec2-metadata-token-ttl-seconds".to_string()),
        };
    }
    if request.header("x-aws-ec2-metadata-token") != Some(IMDS_TOKEN) {
        return (401, vec![], String::new());
    }
    let role_path = "/latest/meta-data/iam/security-credentials/";
    match path.strip_prefix(role_path) {
        Some("") => (200, vec![], INSTANCE_ROLE_NAME.to_string()),
        Some(INSTANCE_ROLE_NAME) => {
            let body = serde_json::json!({
                "Code": "Success",
                "LastUpdated": "2026-01-01T00:00:00Z",
                "Type": "AWS-HMAC",
                "AccessKeyId": INSTANCE_ROLE.access_key_id,
                "SecretAccessKey": INSTANCE_ROLE.secret,
                "Token": INSTANCE_ROLE.session_token,
                "Expiration": EXPIRATION,
            });
            (200, vec![], body.to_string())
        }
        _ => (404, vec![], String::new()),
    }
}
