//! Every login, run against the fake OAuth server with a scripted user:
//! browser sign-ins (PKCE checked by the server, the callback reached by
//! following the authorization page's redirect) and device codes; the
//! credential lands in auth.json in pi's shape and refreshes afterwards.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pi_fake_oauth::FakeOAuth;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::login::{LoginError, LoginRequest, login};
use super::oauth::{self, LoginEvent, LoginIo, Net, Question};

/// A user who opens every sign-in URL in the "browser" (or not), and
/// answers questions from a list.
struct User {
    origin: String,
    browse: bool,
    answers: Mutex<VecDeque<String>>,
    events: Mutex<Vec<LoginEvent>>,
    asked: Mutex<Vec<Question>>,
}

impl User {
    fn new(fake: &FakeOAuth, browse: bool, answers: &[&str]) -> Arc<User> {
        Arc::new(User {
            origin: fake.origin(),
            browse,
            answers: Mutex::new(answers.iter().map(|a| a.to_string()).collect()),
            events: Mutex::new(Vec::new()),
            asked: Mutex::new(Vec::new()),
        })
    }

    fn events(&self) -> Vec<LoginEvent> {
        self.events.lock().unwrap().clone()
    }
}

#[async_trait]
impl LoginIo for User {
    fn notify(&self, event: LoginEvent) {
        if let (LoginEvent::AuthUrl { url, .. }, true) = (&event, self.browse) {
            let (origin, url) = (self.origin.clone(), url.clone());
            tokio::spawn(async move { pi_fake_oauth::browse(&origin, &url).await });
        }
        self.events.lock().unwrap().push(event);
    }

    async fn ask(&self, question: Question) -> Option<String> {
        self.asked.lock().unwrap().push(question.clone());
        loop {
            let answer = self.answers.lock().unwrap().pop_front();
            match (answer, question.kind) {
                (Some(a), _) => return Some(a),
                (None, oauth::QuestionKind::Text) => return None,
                // Not pasted (yet): the callback may finish first.
                (None, oauth::QuestionKind::ManualCode) => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }
        }
    }
}

/// Logins that need a fixed port (1455, 1456) run one at a time.
static FIXED_PORTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn run(fake: &FakeOAuth, user: &Arc<User>, provider: &str, method: Option<&str>) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let request =
        LoginRequest { provider: provider.into(), method: method.map(str::to_string), no_browser: false, answer: None };
    let io: Arc<dyn LoginIo> = user.clone();
    let cred = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        login(&path, &request, &Net::with_route(fake.router()), io.as_ref(), CancellationToken::new()),
    )
    .await
    .expect("the login ends")
    .unwrap_or_else(|e| panic!("{provider} login: {e}"));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(stored[provider], cred, "stored as returned");
    assert_eq!(cred["type"], "oauth");
    (dir, cred)
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[tokio::test]
async fn anthropic_browser_sign_in_with_pkce_then_refresh() {
    let fake = FakeOAuth::start().await.unwrap();
    let user = User::new(&fake, true, &[]);
    let (_dir, cred) = run(&fake, &user, "anthropic", None).await;
    assert_eq!(keys(&cred), ["type", "refresh", "access", "expires"]);
    assert!(cred["access"].as_str().unwrap().starts_with("sk-ant-oat01-"));
    let url = match &user.events()[0] {
        LoginEvent::AuthUrl { url, .. } => url.clone(),
        other => panic!("{other:?}"),
    };
    assert!(url.starts_with("https://claude.ai/oauth/authorize?code=true&client_id=9d1c250a-"), "{url}");
    assert!(
        url.contains("redirect_uri=http%3A%2F%2Flocalhost%3A") && url.contains("code_challenge_method=S256"),
        "{url}"
    );
    let exchange = fake.requests().into_iter().find(|r| r.path == "/anthropic/v1/oauth/token").unwrap();
    assert_eq!(exchange.header("content-type"), Some("application/json"));
    assert_eq!(exchange.fields["grant_type"], "authorization_code");
    assert_eq!(exchange.fields["state"], exchange.fields["code_verifier"], "pi sends the verifier as the state");
    let fresh = oauth::flow("anthropic").unwrap().refresh(&Net::with_route(fake.router()), &cred).await.unwrap();
    assert_ne!(fresh["access"], cred["access"]);
}

#[tokio::test]
async fn anthropic_copy_code_sign_in_takes_the_pasted_code() {
    let fake = FakeOAuth::start().await.unwrap();
    // The "user" reads the code off the redirect target by hand: the fake
    // page redirects to platform.claude.com's copy-code page, routed here.
    let user = User::new(&fake, false, &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let request = LoginRequest {
        provider: "anthropic".into(),
        method: Some("copy_code".into()),
        no_browser: false,
        answer: None,
    };
    let net = Net::with_route(fake.router());
    let task = {
        let (user, path, net) = (user.clone(), path.clone(), net.clone());
        tokio::spawn(async move { login(&path, &request, &net, user.as_ref(), CancellationToken::new()).await })
    };
    let url = loop {
        if let Some(LoginEvent::AuthUrl { url, .. }) = user.events().first() {
            break url.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(url.contains("redirect_uri=https%3A%2F%2Fplatform.claude.com%2Foauth%2Fcode%2Fcallback"), "{url}");
    // Follow the authorization page by hand to read the code it hands out.
    crate::provider::http::install_crypto_provider();
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let answer = client.get(fake.route(&url)).send().await.unwrap();
    let location = answer.headers()["location"].to_str().unwrap().to_string();
    let to = url::Url::parse(&location).unwrap();
    let get = |k: &str| to.query_pairs().find(|(n, _)| n == k).unwrap().1.into_owned();
    user.answers.lock().unwrap().push_back(format!("{}#{}", get("code"), get("state")));
    let cred = task.await.unwrap().unwrap();
    assert!(cred["access"].as_str().unwrap().starts_with("sk-ant-oat01-"));
}

#[tokio::test]
async fn openai_codex_device_code_and_browser_sign_ins() {
    let fake = FakeOAuth::start().await.unwrap();
    let user = User::new(&fake, false, &[]);
    let (_dir, cred) = run(&fake, &user, "openai-codex", Some("device_code")).await;
    assert_eq!(keys(&cred), ["type", "access", "refresh", "expires", "accountId"]);
    assert_eq!(cred["accountId"], "acct-fake-1");
    assert!(matches!(&user.events()[0], LoginEvent::DeviceCode { user_code, verification_uri, .. }
        if user_code == "WXYZ-1234" && verification_uri == "https://auth.openai.com/codex/device"));

    let _port = FIXED_PORTS.lock().await;
    let user = User::new(&fake, true, &[]);
    let (_dir, cred) = run(&fake, &user, "openai-codex", None).await;
    assert_eq!(cred["accountId"], "acct-fake-1");
}

#[tokio::test]
async fn openai_chatgpt_sign_in_gets_an_issued_client_id() {
    let fake = FakeOAuth::start().await.unwrap();
    let _port = FIXED_PORTS.lock().await;
    let user = User::new(&fake, true, &[]);
    let (dir, cred) = run(&fake, &user, "openai", None).await;
    assert_eq!(keys(&cred), ["type", "access", "refresh", "expires", "clientId", "scopes"]);
    assert_eq!(cred["clientId"], "issued-client");
    let authorize = fake.requests().into_iter().find(|r| r.path.starts_with("/openai/api/accounts/authorize")).unwrap();
    let settings = std::fs::read_to_string(dir.path().join("settings.json")).unwrap();
    let device: Value = serde_json::from_str(&settings).unwrap();
    assert_eq!(authorize.fields["ext_agent_host_id"], format!("urn:uuid:{}", device["deviceId"].as_str().unwrap()));
}

#[tokio::test]
async fn github_copilot_device_code_exchanges_and_enables_models() {
    let fake = FakeOAuth::start().await.unwrap();
    let user = User::new(&fake, false, &[""]);
    let (_dir, cred) = run(&fake, &user, "github-copilot", None).await;
    assert!(cred["refresh"].as_str().unwrap().starts_with("ghu_"));
    assert!(cred["access"].as_str().unwrap().contains("proxy-ep=proxy.individual.githubcopilot.com"));
    assert_eq!(cred["availableModelIds"], serde_json::json!(["gpt-4o", "claude-sonnet-4"]));
    let exchange = fake.requests().into_iter().find(|r| r.path.contains("copilot_internal")).unwrap();
    assert_eq!(exchange.header("editor-version"), Some("vscode/1.107.0"));
    assert_eq!(exchange.header("copilot-integration-id"), Some("vscode-chat"));
    assert!(exchange.header("authorization").unwrap().starts_with("Bearer ghu_"));
}

#[tokio::test]
async fn device_code_logins_of_xai_kimi_meta_and_radius() {
    let fake = FakeOAuth::start().await.unwrap();
    for provider in ["xai", "meta", "kimi-coding"] {
        let user = User::new(&fake, false, &[]);
        let (_dir, cred) = run(&fake, &user, provider, None).await;
        assert_eq!(
            keys(&cred),
            if provider == "meta" {
                ["type", "refresh", "access", "expires"]
            } else {
                ["type", "access", "refresh", "expires"]
            }
        );
        assert!(matches!(&user.events()[0], LoginEvent::DeviceCode { .. }), "{provider}");
    }
    let user = User::new(&fake, false, &[]);
    let (_dir, cred) = run(&fake, &user, "radius", Some("device_code")).await;
    assert_eq!(keys(&cred), ["type", "access", "refresh", "expires"]);
}

#[tokio::test]
async fn openrouter_and_radius_browser_sign_ins() {
    let fake = FakeOAuth::start().await.unwrap();
    let user = User::new(&fake, true, &[]);
    let (_dir, cred) = run(&fake, &user, "openrouter", None).await;
    assert_eq!(cred["expires"], serde_json::json!(9_007_199_254_740_991i64));
    assert_eq!(cred["refresh"], "");
    assert!(cred["access"].as_str().unwrap().starts_with("sk-or-fake-"));
    let _port = FIXED_PORTS.lock().await;
    let user = User::new(&fake, true, &[]);
    let (_dir, cred) = run(&fake, &user, "radius", None).await;
    assert!(cred["access"].as_str().unwrap().starts_with("radius-access-"));
}

#[tokio::test]
async fn a_cancelled_login_stores_nothing_and_a_refused_one_says_why() {
    let fake = FakeOAuth::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let user = User::new(&fake, false, &[]);
    let cancel = CancellationToken::new();
    let request = LoginRequest { provider: "anthropic".into(), method: None, no_browser: false, answer: None };
    let net = Net::with_route(fake.router());
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        stop.cancel();
    });
    let err = login(&path, &request, &net, user.as_ref(), cancel).await.unwrap_err();
    assert_eq!(err, LoginError::Cancelled);
    assert!(!path.exists() || !std::fs::read_to_string(&path).unwrap().contains("anthropic"));

    let pasted = User::new(&fake, false, &["not-a-code#wrong-state"]);
    let err = login(&path, &request, &net, pasted.as_ref(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "Failed to log in to Anthropic (Claude Pro/Max): OAuth state mismatch");
}
