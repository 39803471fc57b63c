//! `pi serve` and ACP refresh an extension provider's catalog (its
//! `refreshModels` with the network) once for all their sessions, as they
//! refresh the built-in catalogs (`server_model_catalogs`): pi 1.6.0 runs
//! that refresh once per process, after its one session's extensions
//! loaded (compared side by side in `extension_provider_refresh`); a server
//! whose every session loads the extension runs it for the first session,
//! and the next sessions read what it stored (`models-store.json`) in the
//! provider's offline phase.
//!
//! The extension's provider fetches its catalog from the fake server
//! (`GET /api/models/providers/extcat`, its key as a bearer token),
//! publishes and persists it, and restores the stored list when asked
//! without the network. Two sessions: one request at the fake server, and
//! the second session lists the fetched models at once.
//!
//! RPC mode, side by side with pi 1.6.0: the refresh runs once per
//! process; a new session and a reload (whose factories register the
//! provider again) do not run it again.
//!
//! Needs node 22 and the host's packages (and Python's `websockets` for
//! `pi serve`, the reference for RPC mode); skipped without them unless
//! `PI_RPC_REQUIRE_TOOLS=1`.

use std::collections::HashMap;
use std::path::Path;

use pi_compat::fake_server::model_catalogs::Catalogs;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::harness::{Pi, Sandbox};
use crate::server_model_catalogs::acp_request;
use crate::session_model_catalogs::{newer, store};

/// The provider's models once its catalog was fetched (sorted).
pub(crate) const FETCHED: [&str; 2] = ["network-model", "static-model"];

/// The path of the provider's catalog at the fake server.
pub(crate) const CATALOG_PATH: &str = "/api/models/providers/extcat";

/// A native provider whose `refreshModels` restores its stored list, and
/// with the network fetches its catalog at `SERVER`.
pub(crate) const CATALOG_PROVIDER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({
  id, name: id, api: "extcat-api", provider: "extcat", baseUrl: "https://extcat.invalid",
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 32000, maxTokens: 1000,
});

export default function (pi: ExtensionAPI) {
  let models = [model("static-model")];
  const provider: any = {
    id: "extcat",
    name: "extcat",
    baseUrl: "https://extcat.invalid",
    auth: { apiKey: { name: "Catalog key", resolve: async () => ({ auth: { apiKey: "extcat-key" }, source: "test" }) } },
    getModels: () => models,
    async refreshModels(ctx: any) {
      const stored = ctx.stored?.models;
      if (stored) await ctx.publish({ update: () => { models = stored; } });
      if (!ctx.allowNetwork) return;
      const response = await fetch("SERVER/api/models/providers/extcat", {
        headers: { authorization: `Bearer ${ctx.credential?.key}` },
        signal: ctx.signal,
      });
      if (!response.ok) throw new Error(`catalog: ${response.status}`);
      const fetched = (await response.json()).models;
      await ctx.publish({ persist: { models: fetched, checkedAt: Date.now() }, update: () => { models = fetched; } });
    },
    stream: () => { throw new Error("not called"); },
    streamSimple: () => { throw new Error("not called"); },
  };
  pi.registerProvider(provider);
  pi.registerCommand("again", { handler: async (_args, ctx) => { await ctx.reload(); } });
}
"#;

/// One of the provider's models as its catalog serves it.
pub(crate) fn catalog_model(id: &str) -> Value {
    json!({"id": id, "name": id, "api": "extcat-api", "provider": "extcat", "baseUrl": "https://extcat.invalid",
        "reasoning": false, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 32000, "maxTokens": 1000})
}

/// A sandbox with the extension `module` (`CATALOG_PROVIDER` or a variant of
/// it; `SERVER` is the fake server's URL) and the provider's catalog at the fake server.
pub(crate) async fn catalog_sandbox(module: &str) -> Option<Sandbox> {
    let (node, dir) = node22().zip(host_dir())?;
    let sb = Sandbox::with_server().await;
    let body = json!({"models": FETCHED.iter().map(|id| catalog_model(id)).collect::<Vec<_>>()});
    sb.server().serve_model_catalogs(Catalogs {
        providers: HashMap::from([("extcat".to_string(), newer(body))]),
        ..Catalogs::default()
    });
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "extcat.ts", &module.replace("SERVER", &sb.server().url()));
    Some(sb)
}

/// RPC mode: pi-rpc (with the refresh decisions logged) or pi 1.6.0 in `sb`, not offline.
pub(crate) fn rpc_not_offline(sb: &Sandbox, node: &Path, cli: &Path, reference: bool) -> Pi {
    if reference {
        spawn_reference_with(sb, node, cli, false)
    } else {
        let mut cmd = sb.command(&["--mode", "rpc", "--no-session"]);
        cmd.envs(environment(sb));
        Pi::start(cmd)
    }
}

/// The provider's models `get_available_models` lists now (sorted).
pub(crate) async fn listed(pi: &mut Pi, id: &str) -> Vec<String> {
    let answer = pi.call(id, json!({"type": "get_available_models"})).await;
    let models = answer["data"]["models"].as_array().cloned().unwrap_or_default();
    let mut ids: Vec<String> = models
        .iter()
        .filter(|m| m["provider"] == "extcat")
        .filter_map(|m| m["id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// The server's environment: pi.dev's route to the fake server (the
/// built-in catalogs' refresh), and the extension refreshes' decisions in the log.
pub(crate) fn environment(sb: &Sandbox) -> [(&'static str, String); 2] {
    [
        ("PI_RPC_ORIGIN_OVERRIDES", format!("https://pi.dev={}", sb.server().url())),
        ("RUST_LOG", "warn,pi_extensions::extensions::provider_refreshes=debug".to_string()),
    ]
}

/// The requests for the provider's catalog at the fake server, after
/// waiting (ten seconds at most) until `log` has `decisions` about it
/// (refreshed, already refreshed, not refreshed); on main's binary, which
/// logs none, the wait ends and the requests are counted all the same.
async fn catalog_requests(sb: &Sandbox, log: impl Fn() -> String, decisions: usize) -> (usize, String) {
    for _ in 0..40 {
        if log().matches("catalog of extcat").count() >= decisions {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let requests = sb.server().requests().iter().filter(|r| r.path == CATALOG_PATH).count();
    (requests, log())
}

/// `pi serve`: the first session (a WebSocket connection) lists the
/// fetched models once the refresh ran; a second session lists them at
/// once, and the catalog was asked for once.
#[tokio::test]
async fn pi_serve_refreshes_an_extension_providers_catalog_once_for_its_sessions() {
    let Some(sb) = catalog_sandbox(CATALOG_PROVIDER).await else { return };
    let env = environment(&sb);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = crate::serve::serve_with_env(&sb, &[], &env).await;
    let want = json!(FETCHED).to_string();
    let Some(out) = crate::serve::python_scenario(&served, "catalog", &[&served.url, &want, "extcat"]).await else {
        return;
    };
    let out: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let (requests, log) = catalog_requests(&sb, || served.pi.stderr(), 2).await;
    assert_eq!(out["first"], json!(FETCHED), "the first session's models\n{log}");
    assert_eq!(out["second"], json!(FETCHED), "the second session's, at once\n{log}");
    assert_eq!(requests, 1, "one catalog request for both sessions\n{log}");
    assert_eq!(store(&sb)["extcat"]["models"].as_array().map(Vec::len), Some(2), "the stored catalog\n{log}");
}

/// The provider's models in a session's model selector (ACP's `configOptions`).
fn acp_models(opened: &Value) -> Vec<String> {
    let options = opened["result"]["configOptions"].as_array().cloned().unwrap_or_default();
    let selector = options.iter().find(|o| o["id"] == "model").cloned().unwrap_or_default();
    let values = selector["options"].as_array().cloned().unwrap_or_default();
    let mut ids: Vec<String> =
        values.iter().filter_map(|o| o["value"].as_str()?.strip_prefix("extcat/").map(str::to_string)).collect();
    ids.sort();
    ids
}

/// ACP on stdio: the first session's extension refreshes the catalog (it
/// is stored); a second session's model selector lists the fetched models,
/// and the catalog was asked for once.
#[tokio::test]
async fn acp_refreshes_an_extension_providers_catalog_once_for_its_sessions() {
    let Some(sb) = catalog_sandbox(CATALOG_PROVIDER).await else { return };
    let mut cmd = sb.command(&["--protocol", "acp"]);
    cmd.envs(environment(&sb));
    let mut pi = Pi::start_unchecked(cmd);
    let cwd = sb.cwd.path().display().to_string();
    acp_request(&mut pi, 1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    let first = acp_request(&mut pi, 2, "session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    assert!(first["result"]["sessionId"].is_string(), "session/new: {first}");
    for _ in 0..120 {
        if store(&sb)["extcat"]["models"].as_array().is_some_and(|m| m.len() == 2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(store(&sb)["extcat"]["models"].as_array().map(Vec::len), Some(2), "stored\n{}", pi.stderr());
    let second = acp_request(&mut pi, 3, "session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    let (requests, log) = catalog_requests(&sb, || pi.stderr(), 2).await;
    assert_eq!(acp_models(&second), FETCHED, "the second session's models: {second}\n{log}");
    assert_eq!(requests, 1, "one catalog request for both sessions\n{log}");
    pi.close_stdin();
    pi.wait().await;
}

/// Ask for the models until the provider's are the fetched ones (at most 100 times).
pub(crate) async fn wait_for_fetched(pi: &mut Pi) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..100 {
        ids = listed(pi, &format!("m{n}")).await;
        if ids == FETCHED {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    ids
}

/// RPC mode, pi-rpc and pi 1.6.0: the refresh at start lists the fetched
/// models; a new session and a reload list them too, and the catalog was
/// asked for once.
#[tokio::test]
async fn rpc_mode_refreshes_an_extension_providers_catalog_once_per_process_as_pi() {
    let Some(cli) = reference_cli() else { return };
    let Some(node) = node22() else { return };
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let Some(sb) = catalog_sandbox(CATALOG_PROVIDER).await else { return };
        let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
        assert_eq!(wait_for_fetched(&mut pi).await, FETCHED, "{who}: listed after the refresh at start");
        let answer = pi.call("n", json!({"type": "new_session"})).await;
        assert_eq!(answer["success"], true, "{who}: {answer}");
        assert_eq!(wait_for_fetched(&mut pi).await, FETCHED, "{who}: listed in the new session");
        pi.send(json!({"id": "r", "type": "prompt", "message": "/again"})).await;
        pi.until(|v| v["id"] == "r").await;
        assert_eq!(wait_for_fetched(&mut pi).await, FETCHED, "{who}: listed after the reload");
        // pi-rpc logs its decisions (the start's refresh, then twice already
        // refreshed); pi runs no other refresh: the time for one to show.
        let (requests, log) = if reference {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            catalog_requests(&sb, String::new, 0).await
        } else {
            catalog_requests(&sb, || pi.stderr(), 3).await
        };
        assert_eq!(requests, 1, "{who}: one catalog request\n{log}");
    }
}
