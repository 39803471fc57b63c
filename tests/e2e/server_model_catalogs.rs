//! `pi serve` and ACP refresh the model catalogs for their sessions as RPC
//! mode refreshes them for its one session (pi 1.6.0 has no serve or ACP
//! mode: "as pi" is a session of `pi --mode rpc`, whose refresh with an
//! extension's OpenRouter login is compared with pi 1.6.0's in
//! `session_model_catalogs::an_extensions_openrouter_login_is_refreshed_for_the_catalog_as_pis`).
//!
//! Each server starts with an expired OpenRouter OAuth login in `auth.json`
//! and an extension that runs OpenRouter's login (`registerProvider` with
//! `oauth`) and refreshes it at the fake OAuth server. The fake catalog
//! server's `…/models/user` answers only the refreshed key. The server's
//! own refresh at its start has no extensions (the stale key is refused,
//! OpenRouter's list is not narrowed); the first session's extensions bring
//! the login: refreshed once, `/models/user` asked with the new key, the list
//! narrowed to the key's models. A second session gets that list and
//! refreshes nothing again: one OAuth refresh, one `/models/user` request
//! with the new key, whatever the number of sessions.
//!
//! Needs node 22 and the host's packages (and Python's `websockets` for
//! `pi serve`); skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::collections::HashMap;

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::model_catalogs::Catalogs;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::harness::{Pi, Sandbox};
use crate::session_model_catalogs::{newer, served, store};

/// The models OpenRouter's refreshed key may use: what a narrowed list holds.
const KEY_MODELS: [&str; 2] = ["anthropic/claude-sonnet-4.5", "or-net/new-model"];

/// The access token the extension's refresh gives (the only key `/models/user` answers).
const FRESH: &str = "or-fresh";

/// An extension that runs OpenRouter's OAuth login and refreshes it at the
/// fake OAuth server (`OAUTH_ORIGIN`; its refresh tokens work once).
const OPENROUTER_LOGIN: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerProvider("openrouter", {
    oauth: {
      name: "OpenRouter (extension)",
      login: async () => { throw new Error("no login here"); },
      refreshToken: async (credentials: any) => {
        const response = await fetch("OAUTH_ORIGIN/radius/v1/oauth/token", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: credentials.refresh }),
        });
        const answer: any = await response.json();
        if (!response.ok) throw new Error(`refresh refused: ${JSON.stringify(answer)}`);
        return { ...credentials, access: "FRESH", refresh: answer.refresh_token, expires: Date.now() + answer.expires_in * 1000 };
      },
      getApiKey: (credentials: any) => credentials.access,
    },
  });
}
"#;

/// A sandbox with the login, the extension and the catalogs; the fake OAuth server.
async fn login_sandbox() -> Option<(Sandbox, FakeOAuth)> {
    let (node, dir) = node22().zip(host_dir())?;
    let sb = Sandbox::with_server().await;
    let oauth = FakeOAuth::start().await.expect("the fake OAuth server");
    let server = sb.server();
    let remote = json!({"models": [served("or-net/new-model", json!({}))]});
    let user_models = json!({"data": KEY_MODELS.iter().map(|id| json!({"id": id})).collect::<Vec<_>>()});
    server.serve_model_catalogs(Catalogs {
        providers: HashMap::from([("openrouter".to_string(), newer(remote))]),
        user_models: Some(user_models),
        user_key: Some(FRESH.to_string()),
    });
    host_settings(&sb, &node, &dir, json!({}));
    let source = OPENROUTER_LOGIN.replace("OAUTH_ORIGIN", &oauth.origin()).replace("FRESH", FRESH);
    write_module(&sb, "openrouter-login.ts", &source);
    let models_path = sb.agent_dir.path().join("models.json");
    let mut models: Value = serde_json::from_str(&std::fs::read_to_string(&models_path).expect("models.json"))
        .expect("models.json is JSON");
    models["providers"]["openrouter"] = json!({"baseUrl": format!("{}/api/v1", server.url())});
    std::fs::write(&models_path, models.to_string()).expect("models.json");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let auth = json!({"openrouter": oauth.credential("radius", now - 60_000)});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
    Some((sb, oauth))
}

/// The environment of the server: pi.dev's route to the fake catalog
/// server, and the refresh's decisions in the log.
fn environment(sb: &Sandbox) -> [(&'static str, String); 2] {
    [
        ("PI_RPC_ORIGIN_OVERRIDES", format!("https://pi.dev={}", sb.server().url())),
        ("RUST_LOG", "warn,pi_auth::auth::catalog_refreshes=debug".to_string()),
    ]
}

/// Wait until the log has `count` decisions about OpenRouter's catalog
/// (refreshed, already refreshed for the credential, or not refreshed), so
/// that every refresh asked for is over before the requests are counted.
async fn decisions(log: impl Fn() -> String, count: usize) -> String {
    for _ in 0..240 {
        let text = log();
        if text.matches("model catalog of openrouter: ").count() >= count {
            return text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    log()
}

/// What the servers saw: the OAuth refreshes, how many times `/models/user`
/// was asked with the refreshed key and with keys other than it and the
/// stale one, and the login `auth.json` holds afterwards.
fn seen(sb: &Sandbox, oauth: &FakeOAuth) -> Value {
    let keys: Vec<String> = sb
        .server()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/models/user"))
        .map(|r| match r.header("authorization") {
            Some(bearer) if bearer == format!("Bearer {FRESH}") => FRESH.to_string(),
            Some(bearer) if bearer.starts_with("Bearer radius-access-") => "stale".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    let fresh = keys.iter().filter(|k| *k == FRESH).count();
    let others: Vec<&String> = keys.iter().filter(|k| *k != FRESH && *k != "stale").collect();
    json!({"refreshes": oauth.refreshes("radius"), "fresh": fresh, "others": others,
        "access": store_login(sb, "access"), "refresh": store_login(sb, "refresh")})
}

/// A field of the OpenRouter login in `auth.json`.
fn store_login(sb: &Sandbox, field: &str) -> Value {
    let text = std::fs::read_to_string(sb.agent_dir.path().join("auth.json")).unwrap_or_default();
    serde_json::from_str::<Value>(&text).unwrap_or(Value::Null)["openrouter"][field].clone()
}

/// What one refresh with the extension's login leaves, whatever the number of sessions.
fn once() -> Value {
    // The fake OAuth server's second token pair (the stale login was its first).
    json!({"refreshes": 1, "fresh": 1, "others": [], "access": FRESH, "refresh": "radius-refresh-2"})
}

/// `pi serve`: a session (a WebSocket connection, native dialect) whose
/// extension runs OpenRouter's login gets the list narrowed to the
/// refreshed key in `get_available_models`; a second session has it at
/// once and refreshes nothing again.
#[tokio::test]
async fn pi_serve_refreshes_the_catalog_with_a_sessions_extension_login_once() {
    let Some((sb, oauth)) = login_sandbox().await else { return };
    let env = environment(&sb);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = crate::serve::serve_with_env(&sb, &[], &env).await;
    let want = json!(KEY_MODELS).to_string();
    let Some(out) = crate::serve::python_scenario(&served, "catalog", &[&served.url, &want]).await else { return };
    let out: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let log = decisions(|| served.pi.stderr(), 3).await;
    assert_eq!(out["first"], json!(KEY_MODELS), "the first session's OpenRouter models\n{log}");
    assert_eq!(out["second"], json!(KEY_MODELS), "the second session's, at once\n{log}");
    assert_eq!(seen(&sb, &oauth), once(), "one refresh for both sessions\n{log}");
}

/// One ACP request on stdio; its response.
pub(crate) async fn acp_request(pi: &mut Pi, id: u64, method: &str, params: Value) -> Value {
    pi.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    let lines = pi.until(|v| v["id"] == id && v.get("method").is_none()).await;
    lines.last().cloned().unwrap_or_default()
}

/// The OpenRouter models of a session's model selector (ACP's `configOptions`).
fn acp_openrouter_models(opened: &Value) -> Vec<String> {
    let options = opened["result"]["configOptions"].as_array().cloned().unwrap_or_default();
    let selector = options.iter().find(|o| o["id"] == "model").cloned().unwrap_or_default();
    let values = selector["options"].as_array().cloned().unwrap_or_default();
    let mut ids: Vec<String> =
        values.iter().filter_map(|o| o["value"].as_str()?.strip_prefix("openrouter/").map(str::to_string)).collect();
    ids.sort();
    ids
}

/// OpenRouter's stored chat models (`models-store.json`).
fn stored_openrouter_chat(sb: &Sandbox) -> Vec<String> {
    let stored = store(sb)["openrouter"]["models"].as_array().cloned().unwrap_or_default();
    let chat = stored.iter().filter(|m| m.get("type").is_none_or(|t| t == "chat"));
    let mut ids: Vec<String> = chat.filter_map(|m| m["id"].as_str().map(str::to_string)).collect();
    ids.sort();
    ids
}

/// ACP on stdio: the first session's extension login refreshes the catalog
/// (the stored list narrowed to the refreshed key); a second session's
/// model selector lists that list, and nothing is refreshed again.
#[tokio::test]
async fn acp_refreshes_the_catalog_with_a_sessions_extension_login_once() {
    let Some((sb, oauth)) = login_sandbox().await else { return };
    let mut cmd = sb.command(&["--protocol", "acp"]);
    cmd.envs(environment(&sb));
    let mut pi = Pi::start_unchecked(cmd);
    let cwd = sb.cwd.path().display().to_string();
    acp_request(&mut pi, 1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    let first = acp_request(&mut pi, 2, "session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    assert!(first["result"]["sessionId"].is_string(), "session/new: {first}");
    for _ in 0..240 {
        if stored_openrouter_chat(&sb) == KEY_MODELS {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(stored_openrouter_chat(&sb), KEY_MODELS, "OpenRouter's stored list\n{}", pi.stderr());
    let second = acp_request(&mut pi, 3, "session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    let log = decisions(|| pi.stderr(), 3).await;
    assert_eq!(acp_openrouter_models(&second), KEY_MODELS, "the second session's models: {second}\n{log}");
    assert_eq!(seen(&sb, &oauth), once(), "one refresh for both sessions\n{log}");
    pi.close_stdin();
    pi.wait().await;
}
