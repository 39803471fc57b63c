//! The session's own model catalogs side by side with pi 1.6.0, each
//! program in its own agent directory with keys for Anthropic, OpenAI and
//! Google, against its own fake catalog server (pi.dev's route, reached
//! through `PI_RPC_ORIGIN_OVERRIDES`; pi 1.6.0 through
//! `tests/oauth/route_fetch.mjs`): Anthropic's catalog is newer than pi's
//! model data (etag `"v1"`), OpenAI's fails (500), Google has none (404).
//!
//! 1. RPC mode refreshes the catalogs in the background at start: the same
//!    requests (retries included), the same `models-store.json`, and
//!    `get_available_models` gains Anthropic's new models (with
//!    `models.json`'s override over them) once the refresh is in;
//! 2. the next start asks only for what is due (OpenAI's entry has no date,
//!    the others were checked now) and has the stored catalog at once;
//! 3. offline, nothing is asked and the stored catalog is still the
//!    session's, and `--list-models`';
//! 4. `pi update --models` asks again (Anthropic revalidated with its etag):
//!    the same lines and exit code, failing and succeeding.
//!
//! OpenRouter's catalog narrowed to the key is compared in a second test;
//! a third compares every built-in provider's refresh (TypeSafe's too),
//! the typed models an extension lists, a provider that is not built in, a
//! silent failure and an expired OpenRouter login; a fourth, stored models of
//! an API their provider does not declare; a fifth, an extension's OpenRouter
//! OAuth login refreshed for the catalog.

use std::collections::HashMap;

use pi_compat::fake_server::FakeServer;
use pi_compat::fake_server::model_catalogs::{Catalog, Catalogs};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::reference_cli;
use crate::extension_sdk_services::notified_json;
use crate::harness::{Pi, Sandbox};
use crate::llama_cpp::{Program, command};

/// A model of the served catalog.
pub(crate) fn served(id: &str, extra: Value) -> Value {
    let mut model = json!({"id": id, "name": format!("Net {id}"), "api": "anthropic-messages",
        "baseUrl": "http://127.0.0.1:9/v1", "reasoning": false, "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 5555, "maxTokens": 77});
    if let (Some(m), Value::Object(e)) = (model.as_object_mut(), extra) {
        m.extend(e);
    }
    model
}

fn catalogs() -> Catalogs {
    let anthropic = json!({"models": [
        served("claude-net", json!({})),
        served("claude-sonnet-4-5", json!({"contextWindow": 4242})),
        served("img-net", json!({"type": "image", "api": "openai-images"})),
        served("odd-net", json!({"type": "video"})),
        {"name": "no id"},
    ]});
    let providers =
        HashMap::from([("anthropic".to_string(), newer(anthropic)), ("openai".to_string(), Catalog::Failing(500))]);
    Catalogs { providers, user_models: None, user_key: None }
}

/// A catalog newer than pi 1.6.0's model data.
pub(crate) fn newer(body: Value) -> Catalog {
    Catalog::Served { body, last_modified: "Mon, 30 Nov 2026 00:00:00 GMT".into(), etag: "\"v1\"".into() }
}

/// What one program did.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// Requests of each step: path, `if-none-match`, whether the `User-Agent` is pi 1.6.0's.
    requests: Vec<Vec<(String, Value, bool)>>,
    /// The Anthropic models of `get_available_models` at each session (id, name, window).
    anthropic: Vec<Vec<(Value, Value, Value)>>,
    /// `models-store.json` after each step, `checkedAt` left out.
    stored: Vec<Value>,
    /// `pi update --models`: exit code, stdout, stderr (failing, then succeeding).
    updates: Vec<(i32, String, String)>,
    /// `--list-models net`, offline: exit code, stdout, stderr.
    listed: (i32, String, String),
}

fn program_command(
    program: Program<'_>,
    sb: &Sandbox,
    server: &FakeServer,
    args: &[&str],
    keys: &[&str],
) -> tokio::process::Command {
    let mut cmd = command(program, sb, args, false);
    cmd.env("PI_RPC_ORIGIN_OVERRIDES", format!("https://pi.dev={}", server.url()));
    let known = [("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk-oai"), ("GEMINI_API_KEY", "g-key")];
    for (name, value) in known.into_iter().chain([("TYPESAFE_API_KEY", "ts-key")]) {
        if keys.contains(&name) {
            cmd.env(name, value);
        }
    }
    cmd
}

const ALL_KEYS: [&str; 3] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"];

pub(crate) fn store(sb: &Sandbox) -> Value {
    let text = std::fs::read_to_string(sb.agent_dir.path().join("models-store.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The store without its check times, models as their ids.
fn store_summary(sb: &Sandbox) -> Value {
    let mut stored = store(sb);
    for entry in stored.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
        if let Some(entry) = entry.as_object_mut() {
            assert!(entry.remove("checkedAt").is_some_and(|c| c.is_u64()), "checkedAt of {entry:?}");
            if let Some(Value::Array(models)) = entry.get_mut("models") {
                *models = models.iter().map(|m| json!([m["provider"], m["id"], m["type"]])).collect();
            }
        }
    }
    stored
}

/// The step's requests (taken from the server's record).
fn requests(server: &FakeServer, seen: &mut usize) -> Vec<(String, Value, bool)> {
    let all = server.requests();
    let mut out: Vec<(String, Value, bool)> = all[*seen..]
        .iter()
        .map(|r| {
            let agent = r.header("user-agent").is_some_and(|ua| ua.starts_with("pi/1.6.0 ("));
            (r.path.clone(), json!(r.header("if-none-match")), agent)
        })
        .collect();
    *seen = all.len();
    // The providers are asked at once: their order is the network's.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Ask for the available models until `done` says they are complete.
async fn available_until(pi: &mut Pi, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for attempt in 0..120 {
        let reply = pi.call(&format!("m{attempt}"), json!({"type": "get_available_models"})).await;
        let models = reply["data"]["models"].as_array().cloned().unwrap_or_default();
        if done(&models) || attempt == 119 {
            return models;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    Vec::new()
}

fn anthropic(models: &[Value]) -> Vec<(Value, Value, Value)> {
    let of = models.iter().filter(|m| m["provider"] == "anthropic");
    of.map(|m| (m["id"].clone(), m["name"].clone(), m["contextWindow"].clone())).collect()
}

fn has_net_model(models: &[Value]) -> bool {
    models.iter().any(|m| m["id"] == "claude-net")
}

/// Wait until the store's `provider` entry was checked after `after` (ms).
async fn checked_after(sb: &Sandbox, provider: &str, after: u64) {
    for _ in 0..240 {
        if store(sb)[provider]["checkedAt"].as_u64().is_some_and(|t| t > after) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

async fn run(program: Program<'_>) -> Outcome {
    let sb = Sandbox::offline();
    let server = FakeServer::start().await.expect("fake server");
    server.serve_model_catalogs(catalogs());
    let overrides = json!({"providers": {"anthropic": {"modelOverrides": {"claude-net": {"name": "Renamed net"}}}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), overrides.to_string()).expect("models.json");
    let mut out = Outcome {
        requests: Vec::new(),
        anthropic: Vec::new(),
        stored: Vec::new(),
        updates: Vec::new(),
        listed: Default::default(),
    };
    let mut seen = 0;
    let start = |args: &[&str], offline: bool| {
        let mut cmd = program_command(program, &sb, &server, args, &ALL_KEYS);
        if offline {
            cmd.env("PI_OFFLINE", "1");
        }
        match program {
            Program::Reference { .. } => Pi::start_unchecked(cmd),
            Program::Ours => Pi::start(cmd),
        }
    };

    // 1. The refresh at start, in the background; the session sees it once in.
    let mut pi = start(&["--mode", "rpc", "--no-session"], false);
    let models = available_until(&mut pi, has_net_model).await;
    for provider in ["anthropic", "google", "openai"] {
        checked_after(&sb, provider, 0).await;
    }
    pi.close_stdin();
    pi.wait().await;
    out.anthropic.push(anthropic(&models));
    out.requests.push(requests(&server, &mut seen));
    out.stored.push(store_summary(&sb));

    // 2. Again: only what is due is asked; the stored catalog is there at once.
    let before = store(&sb)["openai"]["checkedAt"].as_u64().unwrap_or_default();
    let mut pi = start(&["--mode", "rpc", "--no-session"], false);
    let models = available_until(&mut pi, |_| true).await;
    checked_after(&sb, "openai", before).await;
    pi.close_stdin();
    pi.wait().await;
    out.anthropic.push(anthropic(&models));
    out.requests.push(requests(&server, &mut seen));
    out.stored.push(store_summary(&sb));

    // 3. Offline: nothing asked, the stored catalog kept.
    let mut pi = start(&["--mode", "rpc", "--no-session"], true);
    let models = available_until(&mut pi, |_| true).await;
    pi.close_stdin();
    pi.wait().await;
    out.anthropic.push(anthropic(&models));
    let mut list = program_command(program, &sb, &server, &["--list-models", "net"], &ALL_KEYS);
    list.env("PI_OFFLINE", "1");
    out.listed = run_to_end(list).await;
    out.requests.push(requests(&server, &mut seen));

    // 4. `pi update --models`, failing (OpenAI), then with Anthropic's key alone.
    for keys in [&ALL_KEYS[..], &ALL_KEYS[..1]] {
        let cmd = program_command(program, &sb, &server, &["update", "--models"], keys);
        out.updates.push(run_to_end(cmd).await);
        out.requests.push(requests(&server, &mut seen));
        out.stored.push(store_summary(&sb));
    }
    out
}

/// Run `cmd` to its end with no input: (exit code, stdout, stderr).
async fn run_to_end(mut cmd: tokio::process::Command) -> (i32, String, String) {
    cmd.stdin(std::process::Stdio::null());
    let out = cmd.output().await.expect("run pi");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[tokio::test]
async fn the_sessions_model_catalogs_are_refreshed_and_read_as_pis() {
    let (Some(node), Some(cli)) = (node22(), reference_cli()) else { return };
    let (pi, ours) = tokio::join!(run(Program::Reference { node: &node, cli: &cli }), run(Program::Ours));
    // What pi 1.6.0 does, so that the comparison below cannot pass on nothing.
    assert!(
        pi.anthropic[0].contains(&(json!("claude-net"), json!("Renamed net"), json!(5555))),
        "{:?}",
        pi.anthropic[0]
    );
    assert!(pi.anthropic[0].contains(&(json!("claude-sonnet-4-5"), json!("Net claude-sonnet-4-5"), json!(4242))));
    assert_eq!(pi.requests[0].len(), 5, "anthropic, google, openai three times: {:?}", pi.requests[0]);
    assert_eq!(pi.requests[1].len(), 3, "openai alone, three times: {:?}", pi.requests[1]);
    assert!(pi.requests[2].is_empty(), "offline: {:?}", pi.requests[2]);
    assert_eq!(pi.anthropic[2], pi.anthropic[0], "offline, the stored catalog");
    assert_eq!(pi.updates[0].0, 1, "{:?}", pi.updates[0]);
    assert_eq!(pi.updates[1], (0, "Model catalogs refreshed\n".to_string(), String::new()));
    assert_eq!(ours.requests, pi.requests, "the catalog requests");
    assert_eq!(ours.stored, pi.stored, "models-store.json");
    assert_eq!(ours.anthropic, pi.anthropic, "get_available_models' Anthropic models");
    assert_eq!(ours.updates, pi.updates, "pi update --models");
    assert!(pi.listed.1.contains("claude-net"), "pi's --list-models: {:?}", pi.listed);
    assert_eq!(ours.listed, pi.listed, "--list-models");
}

/// What one program did with an OpenRouter key.
#[derive(Debug, PartialEq)]
struct OpenRouterOutcome {
    /// `get_available_models`' OpenRouter models (id, window, max tokens, base prices), then offline.
    available: Vec<Vec<Value>>,
    /// The requests: path and `authorization`.
    requests: Vec<(String, Value)>,
    /// The stored list: its keys, its chat models (id, window, max tokens, cost), how many of each other type.
    stored: Value,
}

async fn run_openrouter(program: Program<'_>) -> OpenRouterOutcome {
    let sb = Sandbox::offline();
    let server = FakeServer::start().await.expect("fake server");
    let user_models = json!({"data": [
        {"id": "anthropic/claude-sonnet-4.5", "context_length": 1234, "top_provider": {"max_completion_tokens": 99},
         "pricing": {"prompt": "0.000001", "completion": "0.000002", "input_cache_read": "-1",
            "overrides": [{"min_prompt_tokens": 1000, "prompt": "0.000003"}, {"utc_start": "x", "prompt": "1"}]}},
        {"id": "openai/gpt-4o-mini", "context_length": 0, "top_provider": {"context_length": 4321}},
        {"id": "or-net/new-model"},
        {"id": "not-in-the-catalog"},
    ]});
    let remote = json!({"models": [served("or-net/new-model", json!({})), served("or-net/unlisted", json!({}))]});
    let providers = HashMap::from([("openrouter".to_string(), newer(remote))]);
    server.serve_model_catalogs(Catalogs { providers, user_models: Some(user_models), user_key: None });
    let models = json!({"providers": {"openrouter": {"baseUrl": format!("{}/api/v1", server.url())}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("models.json");
    let shape = |models: &[Value]| -> Vec<Value> {
        let mut out: Vec<Value> = models
            .iter()
            .filter(|m| m["provider"] == "openrouter")
            .map(|m| json!([m["id"], m["contextWindow"], m["maxTokens"], m["cost"]["input"], m["cost"]["output"]]))
            .collect();
        out.sort_by_key(|v| v.to_string());
        out
    };
    let narrowed = |models: &[Value]| models.iter().filter(|m| m["provider"] == "openrouter").count() == 3;
    let mut available = Vec::new();
    for offline in [false, true] {
        let mut cmd = command(program, &sb, &["--mode", "rpc", "--no-session"], offline);
        cmd.env("PI_RPC_ORIGIN_OVERRIDES", format!("https://pi.dev={}", server.url()));
        cmd.env("OPENROUTER_API_KEY", "or-key");
        let mut pi = match program {
            Program::Reference { .. } => Pi::start_unchecked(cmd),
            Program::Ours => Pi::start(cmd),
        };
        let models = available_until(&mut pi, narrowed).await;
        pi.close_stdin();
        pi.wait().await;
        available.push(shape(&models));
    }
    let mut requests: Vec<(String, Value)> = server
        .requests()
        .iter()
        .map(|r| (r.path.replace(&server.url(), ""), json!(r.header("authorization"))))
        .collect();
    requests.sort_by(|a, b| a.0.cmp(&b.0));
    let entry = store(&sb)["openrouter"].clone();
    let mut keys: Vec<&String> = entry.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    keys.sort();
    let list = entry["models"].as_array().cloned().unwrap_or_default();
    let mut chat: Vec<Value> = list
        .iter()
        .filter(|m| m.get("type").is_none_or(|t| t == "chat"))
        .map(|m| json!([m["id"], m["contextWindow"], m["maxTokens"], m["cost"]]))
        .collect();
    chat.sort_by_key(|v| v.to_string());
    let count = |t: &str| list.iter().filter(|m| m["type"] == t).count();
    let stored = json!({"keys": keys, "chat": chat, "images": count("image"), "classifiers": count("classifier")});
    OpenRouterOutcome { available, requests, stored }
}

#[tokio::test]
async fn openrouters_catalog_is_narrowed_to_the_key_as_pis() {
    let (Some(node), Some(cli)) = (node22(), reference_cli()) else { return };
    let (pi, ours) =
        tokio::join!(run_openrouter(Program::Reference { node: &node, cli: &cli }), run_openrouter(Program::Ours));
    assert_eq!(pi.available[0].len(), 3, "{:?}", pi.available[0]);
    assert_eq!(pi.available[1], pi.available[0], "offline, the stored list");
    assert!(pi.stored["images"].as_u64().is_some_and(|n| n > 0), "{}", pi.stored);
    assert_eq!(ours.requests, pi.requests, "the requests");
    assert_eq!(ours.stored, pi.stored, "models-store.json's OpenRouter list");
    assert_eq!(ours.available, pi.available, "get_available_models' OpenRouter models");
}

/// An extension command that notifies the session's typed models, TypeSafe's
/// chat model and the models of `models.json`'s own provider `acme`.
const TYPED: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  pi.registerCommand("typed", {
    handler: async (_args, ctx) => {
      const reg: any = ctx.modelRegistry;
      const pick = (m: any) => (m ? [m.provider, m.id, m.name ?? null] : null);
      ctx.ui.notify(JSON.stringify({
        classifiers: reg.getModelsOfType("classifier", "typesafe").map(pick),
        available: (await reg.getAvailableOfType("classifier", "typesafe")).map(pick),
        jev: pick(reg.getModelOfType("classifier", "typesafe", "jev-latest")),
        images: reg.getModelsOfType("image", "anthropic").map(pick),
        tsChat: pick(reg.find("typesafe", "ts-chat")),
        acme: reg.getAll().filter((m: any) => m.provider === "acme").map(pick),
        openrouterClassifiers: reg.getModelsOfType("classifier", "openrouter").length,
      }), "info");
    },
  });
}
"#;

/// TypeSafe's catalog (a chat model on the fake server, a classifier renamed
/// and a new one), Anthropic's (an image model), OpenAI's failing, OpenRouter's
/// missing and its key's list.
fn builtin_catalogs(chat_base: &str) -> Catalogs {
    let classifier = |id: &str, name: &str| {
        json!({"type": "classifier", "id": id, "name": name, "api": "typesafe-system-one",
            "baseUrl": "http://127.0.0.1:9/v1/", "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 64000})
    };
    let typesafe = json!({"models": [
        served("ts-chat", json!({"api": "openai-completions", "baseUrl": chat_base})),
        classifier("jev-latest", "Jev Net"),
        classifier("ts-new", "New Net"),
    ]});
    let anthropic = json!({"models": [served("img-net", json!({"type": "image", "api": "openai-images"}))]});
    let providers = HashMap::from([
        ("typesafe".to_string(), newer(typesafe)),
        ("anthropic".to_string(), newer(anthropic)),
        ("openai".to_string(), Catalog::Failing(500)),
    ]);
    let user_models = Some(json!({"data": [{"id": "anthropic/claude-sonnet-4.5"}]}));
    Catalogs { providers, user_models, user_key: None }
}

/// One program's session with keys for TypeSafe, Anthropic and OpenAI, an
/// expired OpenRouter OAuth login, and `models.json`'s provider `acme` whose
/// newer entry `models-store.json` already has.
async fn run_builtin(program: Program<'_>, host: (&std::path::Path, &std::path::Path)) -> Value {
    let sb = Sandbox::with_server().await;
    let server = sb.server();
    server.serve_model_catalogs(builtin_catalogs(&server.base_url()));
    host_settings(&sb, host.0, host.1, json!({}));
    write_module(&sb, "typed.ts", TYPED);
    let models = json!({"providers": {
        "fake": {"baseUrl": server.base_url(), "api": "openai-completions", "apiKey": "test-key-123",
            "models": [{"id": "fake-model"}]},
        "acme": {"baseUrl": server.base_url(), "api": "openai-completions", "apiKey": "acme-key",
            "models": [{"id": "acme-1"}]},
        "openrouter": {"baseUrl": format!("{}/api/v1", server.url())},
    }});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("models.json");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let acme = served("acme-stored", json!({"api": "openai-completions", "provider": "acme"}));
    let stored = json!({"acme": {"models": [acme], "lastModified": 1_796_000_000_000u64, "checkedAt": now}});
    std::fs::write(sb.agent_dir.path().join("models-store.json"), stored.to_string()).expect("models-store.json");
    let auth = json!({"openrouter": {"type": "oauth", "access": "or-oauth", "refresh": "", "expires": now - 60_000}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");

    let keys = ["TYPESAFE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"];
    let mut cmd = program_command(program, &sb, server, &["--mode", "rpc", "--no-session"], &keys);
    // pi-rpc's own default log level: what it shows on stderr when the user sets none.
    cmd.env_remove("RUST_LOG");
    let mut pi = match program {
        Program::Reference { .. } => Pi::start_unchecked(cmd),
        Program::Ours => Pi::start(cmd),
    };
    for provider in ["typesafe", "anthropic", "openai", "openrouter"] {
        checked_after(&sb, provider, 0).await;
    }
    let available = available_until(&mut pi, |m| m.iter().any(|m| m["id"] == "ts-chat")).await;
    let mut available: Vec<Value> = available
        .iter()
        .filter(|m| ["typesafe", "acme", "openrouter"].contains(&m["provider"].as_str().unwrap_or_default()))
        .map(|m| json!([m["provider"], m["id"], m["name"]]))
        .collect();
    available.sort_by_key(Value::to_string);
    let typed = notified_json(&mut pi, &sb, "typed").await;
    // TypeSafe's stored chat model, used (the reply `/typed` queued answers).
    let set = pi.call("set", json!({"type": "set_model", "provider": "typesafe", "modelId": "ts-chat"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    let settled = pi.until_type("agent_settled").await;
    let answered = settled.iter().rev().find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant");
    let answered =
        answered.map(|v| json!([v["message"]["stopReason"], v["message"]["errorMessage"], v["message"]["content"]]));
    let chat = server.requests().into_iter().rev().find(|r| r.path.ends_with("/chat/completions"));
    let chat = chat.map(|r| json!([r.path, r.header("authorization"), r.body["model"]]));
    pi.close_stdin();
    pi.wait().await;
    let mut requests: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/api/"))
        .map(|r| json!([r.path, r.header("authorization")]))
        .collect();
    requests.sort_by_key(Value::to_string);
    let mut stored = store_summary(&sb);
    // OpenRouter's narrowed list is compared by the test above; here, its length.
    if let Some(models) = stored.pointer_mut("/openrouter/models") {
        *models = json!(models.as_array().map_or(0, Vec::len));
    }
    let stderr = pi.stderr();
    let catalog_lines: Vec<&str> = stderr.lines().filter(|l| l.to_lowercase().contains("catalog")).collect();
    // The login as it was written (pi's "refresh" of an OpenRouter key gives it back unchanged).
    let auth_after = std::fs::read_to_string(sb.agent_dir.path().join("auth.json")).unwrap_or_default();
    let auth_after = serde_json::from_str::<Value>(&auth_after).ok() == Some(auth);
    json!({"available": available, "typed": typed, "setModel": [set["success"], set["data"]["id"]],
        "answered": answered, "chat": chat, "requests": requests, "stored": stored,
        "stderr": catalog_lines, "auth": auth_after})
}

/// pi 1.6.0 refreshes every built-in provider with credentials, TypeSafe
/// (classifiers only in pi-rpc's chat catalog) included, whose stored chat
/// model joins the session and answers; the stored classifier and image
/// models join the typed ones; a provider that is not built in (`acme`,
/// `models.json`'s) keeps its stored entry unread; a failed refresh (OpenAI's
/// 500) shows nothing on stderr; OpenRouter's expired OAuth login is
/// "refreshed" as its key stays (OpenRouter's keys do not expire), and its
/// list is narrowed with it. Compared whole with pi 1.6.0's.
#[tokio::test]
async fn every_built_in_providers_catalog_and_its_typed_models_are_pis() {
    let (Some(node), Some(dir), Some(cli)) = (node22(), host_dir(), reference_cli()) else { return };
    let (pi, ours) = tokio::join!(
        run_builtin(Program::Reference { node: &node, cli: &cli }, (&node, &dir)),
        run_builtin(Program::Ours, (&node, &dir))
    );
    // What pi 1.6.0 does, so that the comparison cannot pass on nothing.
    assert!(pi["requests"].to_string().contains("/api/models/providers/typesafe"), "{pi}");
    assert!(pi["available"].to_string().contains("ts-chat"), "{pi}");
    assert_eq!(pi["typed"]["jev"], json!(["typesafe", "jev-latest", "Jev Net"]), "{pi}");
    assert_eq!(pi["typed"]["acme"], json!([["acme", "acme-1", "acme-1"]]), "{pi}");
    assert_eq!(pi["stderr"], json!([]), "{pi}");
    assert_eq!(pi["auth"], true, "{pi}");
    assert_eq!(ours, pi, "pi-rpc, then pi 1.6.0");
}

/// One program's calls of stored models whose API their provider does not
/// declare: Fireworks' (by API: Anthropic Messages and Chat Completions) of
/// OpenAI Responses, and of Anthropic Messages; Groq's (one API, Chat
/// Completions) of Anthropic Messages. Each: `set_model`, a prompt's outcome
/// and the chat request it made (path, key, model).
async fn run_undeclared(program: Program<'_>) -> Value {
    let sb = Sandbox::with_server().await;
    let server = sb.server();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let model = |provider: &str, id: &str, api: &str| {
        served(id, json!({"provider": provider, "api": api, "baseUrl": server.base_url()}))
    };
    let entry = |models: Vec<Value>| json!({"models": models, "lastModified": 1_796_000_000_000u64, "checkedAt": now});
    let stored = json!({
        "fireworks": entry(vec![model("fireworks", "fw-odd", "openai-responses"), model("fireworks", "fw-anth", "anthropic-messages")]),
        "groq": entry(vec![model("groq", "groq-odd", "anthropic-messages")]),
    });
    std::fs::write(sb.agent_dir.path().join("models-store.json"), stored.to_string()).expect("models-store.json");
    let mut cmd = program_command(program, &sb, server, &["--mode", "rpc", "--no-session"], &[]);
    cmd.env("FIREWORKS_API_KEY", "fw-key").env("GROQ_API_KEY", "groq-key");
    let mut pi = match program {
        Program::Reference { .. } => Pi::start_unchecked(cmd),
        Program::Ours => Pi::start(cmd),
    };
    let odd = ["fw-odd", "fw-anth", "groq-odd"];
    let available = available_until(&mut pi, |m| odd.iter().all(|id| m.iter().any(|m| m["id"] == *id))).await;
    let mut listed: Vec<Value> = available
        .iter()
        .filter(|m| odd.contains(&m["id"].as_str().unwrap_or_default()))
        .map(|m| json!([m["provider"], m["id"], m["api"]]))
        .collect();
    listed.sort_by_key(Value::to_string);
    let mut calls = Vec::new();
    for (provider, id) in [("fireworks", "fw-odd"), ("fireworks", "fw-anth"), ("groq", "groq-odd")] {
        server.set_fallback(pi_compat::fake_server::Reply::text(&format!("{id} answers")));
        let before = server.requests().len();
        let set = pi.call("set", json!({"type": "set_model", "provider": provider, "modelId": id})).await;
        pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
        let settled = pi.until_type("agent_settled").await;
        let answer = settled.iter().rev().find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant");
        let answer =
            answer.map(|v| json!([v["message"]["stopReason"], v["message"]["errorMessage"], v["message"]["content"]]));
        let requests: Vec<Value> = server.requests()[before..]
            .iter()
            .filter(|r| !r.path.starts_with("/api/"))
            .map(|r| json!([r.path, r.header("authorization").or(r.header("x-api-key")), r.body["model"]]))
            .collect();
        calls.push(json!({"model": id, "set": set["success"], "answer": answer, "requests": requests}));
    }
    pi.close_stdin();
    pi.wait().await;
    json!({"listed": listed, "calls": calls})
}

/// pi-ai's built-in providers dispatch by API (Fireworks: an implementation
/// for each API of its catalog) or stream every model with their one API
/// (Groq): a stored model of an API Fireworks does not declare fails with
/// pi's error and no request, one of an API it declares is called by it, and
/// Groq's of another API is called with Groq's own (Chat Completions).
/// Compared whole with pi 1.6.0's.
#[tokio::test]
async fn a_stored_model_of_an_api_its_provider_does_not_declare_is_called_as_pis() {
    let Some((node, cli)) = node22().zip(reference_cli()) else { return };
    let (pi, ours) =
        tokio::join!(run_undeclared(Program::Reference { node: &node, cli: &cli }), run_undeclared(Program::Ours));
    // What pi 1.6.0 does, so that the comparison cannot pass on nothing.
    let odd = &pi["calls"][0];
    assert_eq!(odd["answer"][1], "Provider fireworks has no API implementation for \"openai-responses\"", "{pi}");
    assert_eq!(odd["requests"], json!([]), "{pi}");
    assert!(pi["calls"][2]["requests"].to_string().contains("/chat/completions"), "{pi}");
    assert_eq!(ours, pi, "pi-rpc, then pi 1.6.0");
}

/// An extension that runs OpenRouter's OAuth login (`registerProvider` with
/// `oauth`); `/orcalls` notifies the refreshes it was asked for.
const OPENROUTER_LOGIN: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  const calls: string[] = [];
  pi.registerProvider("openrouter", {
    oauth: {
      name: "OpenRouter (extension)",
      login: async () => { throw new Error("no login here"); },
      refreshToken: async (credentials: any) => {
        calls.push(`refresh ${credentials.refresh}`);
        return { ...credentials, access: "or-fresh", refresh: "or-refresh-2", expires: 4102444800000 };
      },
      getApiKey: (credentials: any) => `key-of-${credentials.access}`,
    },
  });
  pi.registerCommand("orcalls", { handler: async (_args, ctx) => ctx.ui.notify(JSON.stringify(calls), "info") });
}
"#;

/// One program's background refresh of OpenRouter's catalog with an expired
/// OAuth login that an extension runs: the extension's refreshes, the key
/// `/models/user` is asked with, `auth.json` afterwards and the stored list's length.
async fn run_extension_login(program: Program<'_>, host: (&std::path::Path, &std::path::Path)) -> Value {
    let sb = Sandbox::with_server().await;
    let server = sb.server();
    let user_models = json!({"data": [{"id": "anthropic/claude-sonnet-4.5"}]});
    server.serve_model_catalogs(Catalogs { providers: HashMap::new(), user_models: Some(user_models), user_key: None });
    host_settings(&sb, host.0, host.1, json!({}));
    write_module(&sb, "openrouter-login.ts", OPENROUTER_LOGIN);
    let models = json!({"providers": {"openrouter": {"baseUrl": format!("{}/api/v1", server.url())}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("models.json");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let auth = json!({"openrouter": {"type": "oauth", "access": "or-stale", "refresh": "or-refresh-1", "expires": now - 60_000}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
    let cmd = program_command(program, &sb, server, &["--mode", "rpc", "--no-session"], &[]);
    let mut pi = match program {
        Program::Reference { .. } => Pi::start_unchecked(cmd),
        Program::Ours => Pi::start(cmd),
    };
    checked_after(&sb, "openrouter", 0).await;
    let calls = notified_json(&mut pi, &sb, "orcalls").await;
    pi.close_stdin();
    pi.wait().await;
    let asked: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/models/user"))
        .map(|r| json!([r.path, r.header("authorization")]))
        .collect();
    let auth_after = std::fs::read_to_string(sb.agent_dir.path().join("auth.json")).unwrap_or_default();
    let mut auth_after = serde_json::from_str::<Value>(&auth_after).unwrap_or(Value::Null);
    if let Some(expires) = auth_after.pointer_mut("/openrouter/expires") {
        // The stale login's expiry is the test's clock; the refreshed one's is the extension's.
        *expires = json!(expires.as_u64() == Some(now - 60_000));
    }
    let stored = store(&sb)["openrouter"]["models"].as_array().map_or(0, Vec::len);
    json!({"calls": calls, "asked": asked, "auth": auth_after, "stored": stored})
}

/// pi starts RPC mode's catalog refresh once its session, extensions
/// included, is made: an extension that runs OpenRouter's OAuth login has its
/// `refreshToken` asked for the expired login (the new one stored in
/// `auth.json`), and `/models/user` is asked with the new access token.
/// Compared whole with pi 1.6.0's.
#[tokio::test]
async fn an_extensions_openrouter_login_is_refreshed_for_the_catalog_as_pis() {
    let (Some(node), Some(dir), Some(cli)) = (node22(), host_dir(), reference_cli()) else { return };
    let (pi, ours) = tokio::join!(
        run_extension_login(Program::Reference { node: &node, cli: &cli }, (&node, &dir)),
        run_extension_login(Program::Ours, (&node, &dir))
    );
    // What pi 1.6.0 does, so that the comparison cannot pass on nothing.
    assert_eq!(pi["calls"], json!(["refresh or-refresh-1"]), "{pi}");
    assert_eq!(pi["asked"][0][1], "Bearer or-fresh", "{pi}");
    assert_eq!(ours, pi, "pi-rpc, then pi 1.6.0");
}
