//! The broker against the fake OAuth server: refresh before expiry and
//! after a rejection, written back in pi's format, one refresh for many
//! requests (one broker, and two brokers standing for two processes), and
//! the "log in again" error.

use std::sync::Arc;
use std::time::Duration;

use pi_fake_oauth::FakeOAuth;
use serde_json::{Value, json};

use super::*;
use crate::auth::file::AuthFile;
use crate::auth::oauth::{self, Net};

struct Setup {
    fake: FakeOAuth,
    dir: tempfile::TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup { fake: FakeOAuth::start().await.unwrap(), dir: tempfile::tempdir().unwrap() }
    }

    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("auth.json")
    }

    /// auth.json with `provider`'s credential expiring `in_ms` from now, and an API key beside it.
    fn store(&self, provider: &str, in_ms: i64) -> Value {
        let cred = self.fake.credential(provider, oauth::now_ms() + in_ms);
        let data = json!({"openai": {"type": "api_key", "key": "sk-keep"}, provider: cred});
        std::fs::write(self.path(), serde_json::to_string_pretty(&data).unwrap()).unwrap();
        cred
    }

    fn broker(&self) -> Arc<Broker> {
        Arc::new(Broker::new(AuthFile::new(self.path()), Net::with_route(self.fake.router())))
    }

    fn on_disk(&self, provider: &str) -> Value {
        let text = std::fs::read_to_string(self.path()).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()[provider].clone()
    }
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_written_back() {
    let s = Setup::new().await;
    let old = s.store("anthropic", -1000);
    let (auth, used) = s.broker().request_auth("anthropic").await.unwrap().unwrap();
    let disk = s.on_disk("anthropic");
    assert_ne!(disk["access"], old["access"]);
    assert_ne!(disk["refresh"], old["refresh"], "the rotated refresh token is kept");
    assert_eq!(auth.api_key.as_deref(), disk["access"].as_str());
    assert_eq!(used, disk["access"].as_str().unwrap());
    assert!(disk["expires"].as_i64().unwrap() > oauth::now_ms() + 50 * 60 * 1000, "an hour less five minutes");
    let keys: Vec<&str> = disk.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "refresh", "access", "expires"], "pi's field order");
    let text = std::fs::read_to_string(s.path()).unwrap();
    assert!(text.starts_with("{\n  \"openai\": {\n    \"type\": \"api_key\",\n    \"key\": \"sk-keep\""), "{text}");
    assert_eq!(s.fake.refreshes("anthropic"), 1);
    // Valid now: used as it is.
    s.broker().request_auth("anthropic").await.unwrap().unwrap();
    assert_eq!(s.fake.refreshes("anthropic"), 1);
}

#[tokio::test]
async fn a_token_valid_for_long_is_not_refreshed_one_about_to_expire_is() {
    let s = Setup::new().await;
    let cred = s.store("xai", 60 * 60 * 1000);
    let (auth, _) = s.broker().request_auth("xai").await.unwrap().unwrap();
    assert_eq!(auth.api_key.as_deref(), cred["access"].as_str());
    assert_eq!(s.fake.refreshes("xai"), 0);
    s.store("xai", 4 * 60 * 1000);
    s.broker().request_auth("xai").await.unwrap().unwrap();
    assert_eq!(s.fake.refreshes("xai"), 1, "less than five minutes left");
}

#[tokio::test]
async fn twenty_requests_at_once_make_one_refresh() {
    let s = Setup::new().await;
    s.store("anthropic", -1);
    s.fake.set_refresh_delay(Duration::from_millis(300));
    let broker = s.broker();
    let calls = (0..20).map(|_| {
        let b = broker.clone();
        tokio::spawn(async move { b.request_auth("anthropic").await })
    });
    let results = futures::future::join_all(calls).await;
    let tokens: std::collections::HashSet<String> =
        results.into_iter().map(|r| r.unwrap().unwrap().unwrap().1).collect();
    assert_eq!(tokens.len(), 1, "every request got the one fresh token");
    assert_eq!(s.fake.refreshes("anthropic"), 1);
}

#[tokio::test]
async fn two_processes_sharing_auth_json_refresh_once_through_the_lock() {
    let s = Setup::new().await;
    s.store("openai-codex", -1);
    s.fake.set_refresh_delay(Duration::from_millis(300));
    // Two brokers share no flight, like two processes: only the lock and re-reading protect them.
    let (a, b) = (s.broker(), s.broker());
    let (ra, rb) = tokio::join!(a.request_auth("openai-codex"), b.request_auth("openai-codex"));
    assert_eq!(ra.unwrap().unwrap().1, rb.unwrap().unwrap().1);
    assert_eq!(s.fake.refreshes("openai-codex"), 1);
    assert_eq!(s.on_disk("openai-codex")["accountId"], "acct-fake-1");
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_once_unless_someone_already_did() {
    let s = Setup::new().await;
    let cred = s.store("anthropic", 60 * 60 * 1000);
    let broker = s.broker();
    let rejected = cred["access"].as_str().unwrap();
    let (fresh, access) = broker.after_rejection("anthropic", rejected).await.unwrap().unwrap();
    assert_ne!(access, rejected);
    assert_eq!(fresh.api_key.as_deref(), Some(access.as_str()));
    assert_eq!(s.fake.refreshes("anthropic"), 1);
    // The old token again (a request that started before): the file's newer one, no refresh.
    let (_, again) = broker.after_rejection("anthropic", rejected).await.unwrap().unwrap();
    assert_eq!(again, access);
    assert_eq!(s.fake.refreshes("anthropic"), 1);
}

#[tokio::test]
async fn a_revoked_login_says_to_log_in_again() {
    let s = Setup::new().await;
    let old = s.store("anthropic", -1);
    s.fake.revoke();
    let err = s.broker().request_auth("anthropic").await.unwrap_err();
    assert!(!err.retryable());
    let text = err.to_string();
    assert!(text.starts_with("OAuth refresh failed for anthropic: "), "{text}");
    assert!(text.contains("invalid_grant") && text.ends_with("Log in again with `pi login anthropic`."), "{text}");
    assert_eq!(s.on_disk("anthropic"), old, "the credential is left as it was");
}

#[tokio::test]
async fn a_network_failure_is_retryable_and_names_the_provider() {
    let s = Setup::new().await;
    s.store("anthropic", -1);
    let broker = Arc::new(Broker::new(AuthFile::new(s.path()), Net::with_route(|_| "http://127.0.0.1:9/x".into())));
    let err = broker.request_auth("anthropic").await.unwrap_err();
    assert!(err.retryable(), "{err}");
    assert!(err.to_string().starts_with("OAuth refresh failed for anthropic: "), "{err}");
}

#[tokio::test]
async fn a_refresh_finishes_and_is_written_even_when_its_caller_gives_up() {
    let s = Setup::new().await;
    let old = s.store("anthropic", -1);
    s.fake.set_refresh_delay(Duration::from_millis(400));
    let broker = s.broker();
    let gave_up = tokio::time::timeout(Duration::from_millis(100), broker.request_auth("anthropic")).await;
    assert!(gave_up.is_err());
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_ne!(s.on_disk("anthropic")["refresh"], old["refresh"], "the rotated token was stored");
    broker.request_auth("anthropic").await.unwrap().unwrap();
    assert_eq!(s.fake.refreshes("anthropic"), 1);
}

#[tokio::test]
async fn copilot_gets_its_account_endpoint_and_kimi_a_bearer_header() {
    let s = Setup::new().await;
    s.store("github-copilot", -1);
    let (auth, _) = s.broker().request_auth("github-copilot").await.unwrap().unwrap();
    assert_eq!(auth.base_url.as_deref(), Some("https://api.individual.githubcopilot.com"));
    assert!(auth.api_key.unwrap().contains("proxy-ep="));
    let disk = s.on_disk("github-copilot");
    assert_eq!(disk["availableModelIds"], json!(["gpt-4o", "claude-sonnet-4"]));
    assert!(disk["refresh"].as_str().unwrap().starts_with("ghu_"), "the GitHub token stays");

    s.store("kimi-coding", 60 * 60 * 1000);
    let (auth, access) = s.broker().request_auth("kimi-coding").await.unwrap().unwrap();
    assert_eq!(auth.api_key, None);
    assert_eq!(auth.headers, vec![("Authorization".to_string(), format!("Bearer {access}"))]);
}

#[tokio::test]
async fn no_oauth_credential_means_no_oauth_auth() {
    let s = Setup::new().await;
    s.store("anthropic", 60 * 60 * 1000);
    assert!(s.broker().request_auth("openai").await.unwrap().is_none(), "an API key is not a login");
    assert!(s.broker().request_auth("xai").await.unwrap().is_none(), "nothing stored");
}
