//! pi's llama.cpp provider side by side with pi 1.6.0, each program in its
//! own agent directory against its own fake llama-server (router mode, the
//! same catalog), logged in as pi's `/login llama.cpp` stores it (a key and
//! `env.LLAMA_BASE_URL`):
//!
//! 1. RPC mode lists the server's models in the background at start: the
//!    same requests (`/models`, `/props`, a loaded model's `/props`), the
//!    same `get_available_models` once listed, the same `models-store.json`;
//! 2. `--list-models` prints the kept list (it asks no server): the same table;
//! 3. a session on the kept list chats with a llama.cpp model whose codemode
//!    script classifies with a chat model (`llama-cpp-classify`) and a
//!    decision model (`typesafe-system-one`): the same chat requests (path,
//!    credential, headers, body shape), the same classifier requests (whole
//!    body) and the same script output.

use std::path::Path;

use pi_compat::fake_server::llama_router::LlamaRouter;
use pi_compat::fake_server::{FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::codemode_models::script_output;
use crate::extension_provider_events::reference_cli;
use crate::harness::{Pi, Sandbox};
use crate::wire_apis::{body_summary, credentials, provider_headers};

const KEY: &str = "sk-llama-123";

const SCRIPT: &str = r#"
const strip = (r) => { const { timestamp, ...rest } = r; return rest; };
const questions = {
  tone: { type: "choice", instructions: "Tone?", criteria: { calm: "no anger", angry: "shouting" } },
  spam: { type: "bool", instructions: "Spam?", criteria: { true: "an ad", false: "not an ad" } },
};
const png = { type: "image", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", mimeType: "image/png" };
const out = {};
out.available = (await models.getAvailableOfType("classifier", "llama.cpp")).map((m) => `${m.id} ${m.api} ${m.baseUrl}`);
const chat = await models.getModelOfType("classifier", "llama.cpp", "qwen-chat");
out.chat = strip(await models.classify(chat, { state: { text: "BUY NOW" }, questions }));
const decider = await models.getModelOfType("classifier", "llama.cpp", "decider");
out.decider = strip(await models.classify(decider, { state: { text: "BUY NOW" }, images: [png], questions }));
return out;"#;

/// A router with a model of each kind pi treats differently.
pub(crate) fn router() -> LlamaRouter {
    let models = vec![
        json!({"id": "qwen-chat", "object": "model", "source": "preset",
            "status": {"value": "loaded", "args": ["llama-server", "--ctx-size", "32768"]},
            "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["text"]},
            "meta": {"n_ctx_train": 131072}}),
        json!({"id": "sleepy", "status": {"value": "sleeping"}, "meta": {"n_ctx": 8192}}),
        json!({"id": "preset", "status": {"value": "unloaded"}, "source": "preset", "meta": {"n_ctx_train": 65536}}),
        json!({"id": "broken", "status": {"value": "unloaded", "failed": true, "exit_code": 1}, "source": "preset"}),
        json!({"id": "cached", "status": {"value": "unloaded"}, "source": "cache"}),
        json!({"id": "decider", "status": {"value": "loaded"},
            "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["decisions"]}}),
    ];
    let templates = [("qwen-chat".to_string(), "{%- if enable_thinking %}<think>{% endif %}".to_string())];
    LlamaRouter { models, autoload: true, templates: templates.into_iter().collect() }
}

#[derive(Clone, Copy)]
pub(crate) enum Program<'a> {
    Reference { node: &'a Path, cli: &'a Path },
    Ours,
}

/// The program with `args` in `sb`; `offline` sets `PI_OFFLINE`. Requests
/// anywhere but 127.0.0.1 go to a proxy that is not there.
pub(crate) fn command(program: Program<'_>, sb: &Sandbox, args: &[&str], offline: bool) -> tokio::process::Command {
    let mut cmd = match program {
        Program::Reference { node, cli } => {
            let mut cmd = tokio::process::Command::new(node);
            cmd.arg(cli).args(args).current_dir(sb.cwd.path()).env_clear();
            let node_dir = node.parent().map(Path::to_path_buf).unwrap_or_default();
            cmd.env("PATH", format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default()));
            for keep in ["LANG", "TMPDIR"] {
                if let Some(v) = std::env::var_os(keep) {
                    cmd.env(keep, v);
                }
            }
            cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
            cmd.env("PI_SKIP_VERSION_CHECK", "1").env("PI_TELEMETRY", "0");
            crate::harness::route_reference(&mut cmd);
            cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
            cmd.stderr(std::process::Stdio::piped()).kill_on_drop(true);
            cmd
        }
        Program::Ours => sb.command(args),
    };
    cmd.env("HTTP_PROXY", "http://127.0.0.1:9").env("HTTPS_PROXY", "http://127.0.0.1:9");
    cmd.env("NO_PROXY", "127.0.0.1,localhost");
    if offline {
        cmd.env("PI_OFFLINE", "1");
    }
    cmd
}

fn start(program: Program<'_>, sb: &Sandbox, args: &[&str], offline: bool) -> Pi {
    let cmd = command(program, sb, args, offline);
    match program {
        Program::Reference { .. } => Pi::start_unchecked(cmd),
        Program::Ours => Pi::start(cmd),
    }
}

/// What one program did.
struct Outcome {
    listing: Vec<RecordedRequest>,
    available: Value,
    stored: Value,
    table: String,
    calls: Vec<RecordedRequest>,
    /// The codemode result the model got back.
    script: String,
    stderr: String,
}

async fn run(program: Program<'_>) -> Outcome {
    let sb = Sandbox::offline();
    let server = FakeServer::start().await.expect("fake server");
    server.serve_llama_router(router());
    let auth = json!({"llama.cpp": {"type": "api_key", "key": KEY, "env": {"LLAMA_BASE_URL": format!("{}/v1/", server.url())}}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");

    // 1. The listing RPC mode starts in the background (polled until it is in).
    let mut pi = start(program, &sb, &["--mode", "rpc", "--no-session"], false);
    let mut available = Value::Null;
    for attempt in 0..120 {
        let reply = pi.call(&format!("m{attempt}"), json!({"type": "get_available_models"})).await;
        let models = &reply["data"]["models"];
        if models.as_array().is_some_and(|m| m.iter().any(|m| m["provider"] == "llama.cpp")) {
            available = models.clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    pi.close_stdin();
    pi.wait().await;
    let mut stderr = pi.stderr();
    let listing = server.requests();
    let store = std::fs::read_to_string(sb.agent_dir.path().join("models-store.json")).unwrap_or_default();
    let stored = serde_json::from_str::<Value>(&store).unwrap_or_default()["llama.cpp"]["models"].clone();

    // 2. `--list-models`: the kept list.
    let out = command(program, &sb, &["--list-models"], false).output().await.expect("--list-models");
    let table = String::from_utf8_lossy(&out.stdout).into_owned();

    // 3. A session on the kept list: chat, and classifiers from a script.
    server.push(Reply::tool_call("call_llama_1", "codemode", &json!({"code": SCRIPT}).to_string()));
    server.push(Reply::text("All done."));
    let args = ["--mode", "rpc", "--no-session", "--model", "llama.cpp/qwen-chat", "--tools", "read,bash,codemode"];
    let mut pi = start(program, &sb, &args, true);
    let reply = pi.call("p", json!({"type": "prompt", "message": "Classify, please."})).await;
    assert_eq!(reply["success"], true, "{reply}\n{}", pi.stderr());
    pi.until_type("agent_settled").await;
    pi.close_stdin();
    pi.wait().await;
    stderr.push_str(&pi.stderr());
    let calls = server.requests().split_off(listing.len());
    // Each program has its own server: its address reads `BASE`.
    let base = |v: Value| serde_json::from_str(&v.to_string().replace(&server.url(), "BASE")).unwrap_or(Value::Null);
    let (available, stored) = (base(available), base(stored));
    let script = script_output(&calls).replace(&server.url(), "BASE");
    Outcome { listing, available, stored, table, calls, script, stderr }
}

fn line(r: &RecordedRequest) -> String {
    format!("{} {}", r.method, r.path)
}

fn is_chat(r: &RecordedRequest) -> bool {
    r.path.ends_with("/chat/completions")
}

#[tokio::test]
async fn a_llama_server_s_models_are_listed_and_used_as_pi_does() {
    let (Some(node), Some(cli)) = (node22(), reference_cli()) else { return };
    let (pi, ours) = tokio::join!(run(Program::Reference { node: &node, cli: &cli }), run(Program::Ours));
    let failure = format!("\npi: {}\npi-rpc: {}", pi.stderr, ours.stderr);

    // The listing.
    let listing = |o: &Outcome| o.listing.iter().map(|r| (line(r), credentials(r))).collect::<Vec<_>>();
    assert_eq!(listing(&ours), listing(&pi), "the listing requests{failure}");
    assert_eq!(pi.listing.len(), 3, "{:?}", listing(&pi));
    assert_eq!(credentials(&pi.listing[0]).get("authorization").map(String::as_str), Some("Bearer sk-llama-123"));
    let ids =
        |v: &Value| v.as_array().map(|a| a.iter().map(|m| m["id"].clone()).collect::<Vec<_>>()).unwrap_or_default();
    assert_eq!(ids(&pi.available), vec![json!("qwen-chat"), json!("sleepy"), json!("preset")], "{failure}");
    assert_eq!(ours.available, pi.available, "get_available_models{failure}");
    assert_eq!(pi.stored.as_array().map_or(0, Vec::len), 7, "pi's models-store.json: {}", pi.stored);
    assert_eq!(ours.stored, pi.stored, "models-store.json");
    assert!(pi.table.contains("llama.cpp  qwen-chat"), "pi's table: {}", pi.table);
    assert_eq!(ours.table, pi.table, "--list-models");

    // The session: chat calls and the script's classifier calls.
    let lines = |o: &Outcome| o.calls.iter().map(line).collect::<Vec<_>>();
    assert_eq!(lines(&ours), lines(&pi), "the session's requests{failure}");
    assert!(lines(&pi).iter().any(|l| l.ends_with("/completion")), "{:?}", lines(&pi));
    assert!(lines(&pi).iter().any(|l| l.ends_with("/v1/systemone")), "{:?}", lines(&pi));
    for (a, b) in pi.calls.iter().zip(&ours.calls) {
        let at = line(a);
        assert_eq!(credentials(b), credentials(a), "{at}: credential");
        assert_eq!(provider_headers(b), provider_headers(a), "{at}: provider headers");
        if is_chat(a) {
            assert_eq!(body_summary(b), body_summary(a), "{at}: body");
            for key in ["chat_template_kwargs", "stream_options", "model"] {
                assert_eq!(b.body[key], a.body[key], "{at}: {key}");
            }
        } else {
            assert_eq!(b.body, a.body, "{at}: body");
        }
    }
    assert!(pi.script.contains("\"api\":\"llama-cpp-classify\""), "pi's script output: {}", pi.script);
    assert!(pi.script.contains("\"decider typesafe-system-one BASE/v1\""), "pi's script output: {}", pi.script);
    assert_eq!(ours.script, pi.script, "the script's output");
}

/// The llama.cpp models `models-store.json` keeps, once the background
/// listing wrote them (polled; Null when none came).
async fn kept_models(sb: &Sandbox) -> Value {
    for _ in 0..240 {
        let text = std::fs::read_to_string(sb.agent_dir.path().join("models-store.json")).unwrap_or_default();
        let models = serde_json::from_str::<Value>(&text).unwrap_or_default()["llama.cpp"]["models"].clone();
        if models.as_array().is_some_and(|m| !m.is_empty()) {
            return models;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    Value::Null
}

/// A sandbox logged in to its own fake llama-server, as in [`run`].
async fn llama_sandbox() -> (Sandbox, FakeServer) {
    let sb = Sandbox::offline();
    let server = FakeServer::start().await.expect("fake server");
    server.serve_llama_router(router());
    let auth = json!({"llama.cpp": {"type": "api_key", "key": KEY, "env": {"LLAMA_BASE_URL": format!("{}/v1/", server.url())}}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
    (sb, server)
}

/// `pi serve` lists the llama.cpp server's models at start as RPC mode
/// does. pi 1.6.0 has no `pi serve`, so the reference is its RPC mode
/// against the same catalog: the same listing requests and the same
/// `models-store.json`.
#[tokio::test]
async fn pi_serve_lists_a_llama_server_s_models_as_pi_s_rpc_mode_does() {
    let (Some(node), Some(cli)) = (node22(), reference_cli()) else { return };
    let (pi_sb, pi_server) = llama_sandbox().await;
    let mut pi =
        start(Program::Reference { node: &node, cli: &cli }, &pi_sb, &["--mode", "rpc", "--no-session"], false);
    let (sb, server) = llama_sandbox().await;
    let env = [("HTTP_PROXY", "http://127.0.0.1:9"), ("HTTPS_PROXY", "http://127.0.0.1:9"), ("NO_PROXY", "127.0.0.1")];
    let served = crate::serve::serve_with_env(&sb, &[], &env).await;
    let (theirs, ours) = tokio::join!(kept_models(&pi_sb), kept_models(&sb));
    pi.close_stdin();
    pi.wait().await;
    let failure = format!("\npi: {}\npi serve: {}", pi.stderr(), served.pi.stderr());
    let base = |v: &Value, server: &FakeServer| v.to_string().replace(&server.url(), "BASE");
    assert_eq!(theirs.as_array().map_or(0, Vec::len), 7, "pi's models-store.json: {theirs}{failure}");
    assert_eq!(base(&ours, &server), base(&theirs, &pi_server), "models-store.json{failure}");
    let listing = |s: &FakeServer| s.requests().iter().map(|r| (line(r), credentials(r))).collect::<Vec<_>>();
    assert_eq!(listing(&server), listing(&pi_server), "the listing requests{failure}");
}

/// The thinking level after the first `set_model` of a session that
/// started with no model (nothing listed yet, no other credential): pi 1.6.0
/// has no model and level `off`, which the switch keeps (pi-rpc runs the
/// offline faux model until then, at `medium`). Both programs, once their
/// background listing is in, switch to a llama.cpp thinking model.
async fn level_after_first_switch(program: Program<'_>) -> (String, String) {
    let (sb, _server) = llama_sandbox().await;
    let mut pi = start(program, &sb, &["--mode", "rpc", "--no-session"], false);
    for attempt in 0..240 {
        let reply = pi.call(&format!("m{attempt}"), json!({"type": "get_available_models"})).await;
        if reply["data"]["models"].as_array().is_some_and(|m| m.iter().any(|m| m["provider"] == "llama.cpp")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let set = pi.call("s", json!({"type": "set_model", "provider": "llama.cpp", "modelId": "qwen-chat"})).await;
    assert_eq!(set["success"], true, "{set}\n{}", pi.stderr());
    let state = pi.call("g", json!({"type": "get_state"})).await;
    pi.close_stdin();
    pi.wait().await;
    let level = state["data"]["thinkingLevel"].as_str().unwrap_or_default().to_string();
    (level, pi.stderr())
}

#[tokio::test]
async fn the_first_switch_after_a_start_with_no_model_keeps_pi_s_thinking_level() {
    let (Some(node), Some(cli)) = (node22(), reference_cli()) else { return };
    let ((theirs, pi_err), (ours, our_err)) = tokio::join!(
        level_after_first_switch(Program::Reference { node: &node, cli: &cli }),
        level_after_first_switch(Program::Ours)
    );
    assert_eq!(theirs, "off", "pi 1.6.0: {pi_err}");
    assert_eq!(ours, theirs, "the thinking level after the first set_model\npi-rpc: {our_err}");
}
