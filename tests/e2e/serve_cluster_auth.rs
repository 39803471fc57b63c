//! `pi serve --cluster-credentials` against a nats-server that requires
//! them: the server runs in operator mode (an operator, a system account and
//! an account with JetStream, preloaded into a memory resolver), every key
//! made and every JWT signed here with `nkeys`; the test writes the user's
//! `.creds` file. A worker with it serves a session (its lease is in the
//! bucket, a prompt reaches the fake model); without it, or with a user the
//! account never signed, the worker stops at start and says why.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use nkeys::KeyPair;
use serde_json::{Value, json};

use crate::harness::Sandbox;
use crate::serve::python_scenario;
use crate::serve_cluster::{Nats, shared_dir, worker_with};

/// A NATS JWT: `claims` (`nats` part) about `subject`, issued and signed by `issuer`.
fn jwt(issuer: &KeyPair, subject: &str, name: &str, nats: Value) -> String {
    let issued_at = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
    let header = json!({"typ": "JWT", "alg": "ed25519-nkey"});
    // `jti` names this JWT; the server does not recompute it.
    let claims = json!({
        "jti": format!("{name}-{issued_at}"),
        "iat": issued_at,
        "iss": issuer.public_key(),
        "sub": subject,
        "name": name,
        "nats": nats,
    });
    let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let signed = format!("{}.{}", encode(&header), encode(&claims));
    let signature = issuer.sign(signed.as_bytes()).expect("sign the JWT");
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// An account's JWT, JetStream allowed (unlimited) when `jetstream`.
fn account_jwt(operator: &KeyPair, account: &KeyPair, name: &str, jetstream: bool) -> String {
    let mut limits = json!({"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                            "wildcards": true, "conn": -1, "leaf": -1});
    if jetstream {
        for key in ["mem_storage", "disk_storage", "streams", "consumer"] {
            limits[key] = json!(-1);
        }
    }
    jwt(operator, &account.public_key(), name, json!({"type": "account", "version": 2, "limits": limits}))
}

/// A `.creds` file for a new user of `account`, written to `path`.
fn write_user_creds(account: &KeyPair, name: &str, path: &Path) {
    let user = KeyPair::new_user();
    let claims = json!({"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1});
    let token = jwt(account, &user.public_key(), name, claims);
    let seed = user.seed().expect("the user's seed");
    let text = format!(
        "-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n\
         -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    );
    std::fs::write(path, text).expect("write the creds file");
}

/// The operator-mode configuration of the server, trusting `operator` and
/// knowing the system account and `account` (JetStream enabled).
fn operator_config(operator: &KeyPair, system: &KeyPair, account: &KeyPair) -> String {
    let operator_claims = json!({"type": "operator", "version": 2, "system_account": system.public_key()});
    let operator_jwt = jwt(operator, &operator.public_key(), "pi-test-operator", operator_claims);
    format!(
        "operator: {operator_jwt}\nsystem_account: {sys}\nresolver: MEMORY\nresolver_preload: {{\n  {sys}: {sys_jwt}\n  {acc}: {acc_jwt}\n}}\n",
        sys = system.public_key(),
        sys_jwt = account_jwt(operator, system, "SYS", false),
        acc = account.public_key(),
        acc_jwt = account_jwt(operator, account, "pi-workers", true),
    )
}

/// `pi serve --cluster` on `nats` with `more` arguments, which must stop at
/// start: its stderr.
async fn refused_worker(sb: &Sandbox, nats: &Nats, shared: &Path, more: &[&str]) -> String {
    let dir = shared.display().to_string();
    let args = ["serve", "--listen", "127.0.0.1:0", "--session-dir", &dir, "--cluster", &nats.url];
    let mut cmd = sb.command(&args);
    cmd.args(more).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("in time").expect("pi serve");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "a worker started with {more:?}: {stderr}");
    stderr
}

#[tokio::test]
async fn a_worker_with_the_accounts_credentials_serves_and_one_without_is_refused() {
    let sb = Sandbox::offline();
    let (operator, system, account) = (KeyPair::new_operator(), KeyPair::new_account(), KeyPair::new_account());
    let config = sb.home.path().join("nats-operator.conf");
    std::fs::write(&config, operator_config(&operator, &system, &account)).expect("write the server config");
    let Some(nats) = Nats::start_with_config(Some(config)).await else { return };
    let shared = shared_dir(&sb);
    let creds = sb.home.path().join("worker.creds");
    write_user_creds(&account, "pi-worker", &creds);
    let creds = creds.display().to_string();

    // With the account's user: the worker joins, takes the session's lease, answers a prompt.
    let a = worker_with(&sb, &nats, &shared, "wa", "5", &["--cluster-credentials", &creds]).await;
    let url = a.url.clone();
    let session = "creds-served-1";
    if python_scenario(&a, "scale_write", &[&url, session]).await.is_none() {
        return;
    }
    let client = async_nats::ConnectOptions::with_credentials_file(&creds)
        .await
        .expect("read the creds file")
        .connect(nats.url.as_str())
        .await
        .expect("connect with the account's user");
    let leases = async_nats::jetstream::new(client).get_key_value("pi_leases").await.expect("the lease bucket");
    let lease = leases.entry(session).await.expect("read the lease bucket").expect("a lease of the session");
    assert!(String::from_utf8_lossy(&lease.value).contains("wa"), "lease: {:?}", lease.value);

    // No credentials: the server wants them, the worker says so and stops.
    let stderr = refused_worker(&sb, &nats, &shared, &[]).await;
    assert!(stderr.contains("--cluster") && stderr.contains("authorization violation"), "{stderr}");

    // A user of an account the operator never signed: refused the same way, naming the file.
    let stranger = sb.home.path().join("stranger.creds");
    write_user_creds(&KeyPair::new_account(), "stranger", &stranger);
    let stranger = stranger.display().to_string();
    let stderr = refused_worker(&sb, &nats, &shared, &["--cluster-credentials", &stranger]).await;
    assert!(stderr.contains(&format!("--cluster-credentials {stranger}")), "{stderr}");
    assert!(stderr.contains("authorization violation"), "{stderr}");
}
