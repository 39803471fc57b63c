//! When an extension provider's catalog is refreshed from the network (its
//! `refreshModels` with `allowNetwork: true`) and what its offline phase is
//! given, side by side with pi 1.6.0:
//! - print mode (`-p`) refreshes no catalog: pi's `main` refreshes in RPC
//!   (and interactive) mode only; the provider's offline phase still runs;
//! - RPC mode refreshes once per process: a new session after the login
//!   changed does not refresh again (pi's one refresh at start);
//! - a catalog published without `persist` is the refreshing session's
//!   alone: a new session (its extensions made again) has what the
//!   provider's offline phase restores;
//! - a `ModelRuntime`'s offline refresh of a registration gives its
//!   `refreshModels` the stored credential (`auth.json`) and the stored
//!   catalog (`models-store.json`), as pi-ai's `Models.refresh` does.
//!
//! The provider is `server_extension_catalogs`'s: it fetches its catalog
//! from the fake server (`GET /api/models/providers/extcat`).
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::reference_cli;
use crate::extension_sdk_runner::module_note;
use crate::extension_sdk_services::side_by_side;
use crate::harness::{Sandbox, origin_overrides, route_reference};
use crate::server_extension_catalogs::{
    CATALOG_PATH, CATALOG_PROVIDER, FETCHED, catalog_model, catalog_sandbox, environment, listed, rpc_not_offline,
    wait_for_fetched,
};

/// The provider's key resolved from its stored credential (`auth.json`'s `extcat`).
const STORED_KEY: &str = r#"resolve: async ({ credential }: any) => (credential?.key ? { auth: { apiKey: credential.key }, source: "stored" } : undefined)"#;

/// A command that keeps a print-mode run going for two seconds.
const WAITER: &str = r#"export default function (pi: any) {
  pi.registerCommand("wait", { handler: async () => { await new Promise((r) => setTimeout(r, 2000)); } });
}
"#;

/// `server_extension_catalogs`'s provider, its source changed by `edit`.
fn provider_module(edit: impl Fn(String) -> String) -> String {
    edit(CATALOG_PROVIDER.to_string())
}

/// The requests for the provider's catalog, and for a built-in provider's (groq's) at pi.dev.
fn catalog_requests(sb: &Sandbox) -> (usize, usize) {
    let requests = sb.server().requests();
    let count = |path: &str| requests.iter().filter(|r| r.path.starts_with(path)).count();
    (count(CATALOG_PATH), count("/api/models/providers/groq"))
}

/// pi 1.6.0 in `sb` with these arguments (not RPC mode), pi.dev routed to the fake server.
fn reference_print(sb: &Sandbox, node: &Path, cli: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(cli).args(args).current_dir(sb.cwd.path()).env_clear();
    let node_dir = node.parent().map(Path::to_path_buf).unwrap_or_default();
    cmd.env("PATH", format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default()));
    cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
    route_reference(&mut cmd);
    cmd.env("PI_RPC_ORIGIN_OVERRIDES", origin_overrides(&format!("https://pi.dev={}", sb.server().url())));
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    cmd.kill_on_drop(true);
    cmd
}

/// `-p /wait` (two seconds) with a groq key stored: neither the
/// extension provider's catalog nor a built-in one is asked for, in
/// pi-rpc and pi 1.6.0; the provider's offline phase ran (it resolved its key).
#[tokio::test]
async fn print_mode_refreshes_no_catalog_as_pi() {
    let Some(cli) = reference_cli() else { return };
    let Some(node) = node22() else { return };
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let Some(sb) = catalog_sandbox(CATALOG_PROVIDER).await else { return };
        write_module(&sb, "waiter.ts", WAITER);
        let auth = json!({"groq": {"type": "api_key", "key": "groq-key"}});
        std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
        let args = ["-p", "/wait"];
        let mut cmd = if reference {
            reference_print(&sb, &node, &cli, &args)
        } else {
            let mut cmd = sb.command(&args);
            cmd.envs(environment(&sb));
            cmd.stdin(std::process::Stdio::null());
            cmd
        };
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("ended").expect("ran");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{who}: {stderr}");
        assert_eq!(catalog_requests(&sb), (0, 0), "{who}: no catalog asked for\n{stderr}");
    }
}

/// RPC mode, the provider's key from `auth.json`: the refresh at start
/// uses the first key; the key changes and a new session starts: neither
/// pi 1.6.0 nor pi-rpc refreshes again (one refresh per process).
#[tokio::test]
async fn rpc_mode_refreshes_once_per_process_even_for_a_new_credential_as_pi() {
    let Some(cli) = reference_cli() else { return };
    let Some(node) = node22() else { return };
    let module = provider_module(|source| {
        source.replace(r#"resolve: async () => ({ auth: { apiKey: "extcat-key" }, source: "test" })"#, STORED_KEY)
    });
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let Some(sb) = catalog_sandbox(&module).await else { return };
        let auth = |key: &str| {
            let auth = json!({"extcat": {"type": "api_key", "key": key}});
            std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
        };
        auth("first-key");
        let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
        assert_eq!(wait_for_fetched(&mut pi).await, FETCHED, "{who}: listed after the refresh at start");
        auth("second-key");
        let answer = pi.call("n", json!({"type": "new_session"})).await;
        assert_eq!(answer["success"], true, "{who}: {answer}");
        assert_eq!(wait_for_fetched(&mut pi).await, FETCHED, "{who}: the stored catalog in the new session");
        // Time for a second refresh to show.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let keys: Vec<String> = sb
            .server()
            .requests()
            .iter()
            .filter(|r| r.path == CATALOG_PATH)
            .filter_map(|r| r.header("authorization").map(str::to_string))
            .collect();
        assert_eq!(keys, ["Bearer first-key"], "{who}: one catalog request\n{}", pi.stderr());
    }
}

/// RPC mode, the provider publishing its fetched catalog without
/// `persist`: the session that refreshed lists it; a new session (the
/// extension made again, its offline phase run over no stored entry) lists
/// the provider's own model, in pi-rpc as in pi 1.6.0.
#[tokio::test]
async fn a_catalog_published_without_persist_stays_with_the_refreshing_session_as_in_pi() {
    let Some(cli) = reference_cli() else { return };
    let Some(node) = node22() else { return };
    let module = provider_module(|source| source.replace("persist: { models: fetched, checkedAt: Date.now() }, ", ""));
    let mut outcomes = Vec::new();
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let Some(sb) = catalog_sandbox(&module).await else { return };
        let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
        assert_eq!(wait_for_fetched(&mut pi).await, FETCHED, "{who}: listed after the refresh at start");
        let answer = pi.call("n", json!({"type": "new_session"})).await;
        assert_eq!(answer["success"], true, "{who}: {answer}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let new_session = listed(&mut pi, "l1").await;
        assert!(
            !sb.agent_dir.path().join("models-store.json").exists() || {
                let text = std::fs::read_to_string(sb.agent_dir.path().join("models-store.json")).unwrap_or_default();
                serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get("extcat").cloned()).is_none()
            }
        );
        let requests = catalog_requests(&sb).0;
        outcomes.push(json!({"newSession": new_session, "requests": requests}));
    }
    assert_eq!(outcomes[0], json!({"newSession": ["static-model"], "requests": 1}), "pi-rpc");
    assert_eq!(outcomes[0], outcomes[1], "pi-rpc, then pi 1.6.0");
}

/// A `ModelRuntime`'s registration whose `refreshModels` notes what it is given.
const OFFLINE_REFRESH: &str = r#"import { ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({ id, name: id, reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });
const tick = () => new Promise((r) => setTimeout(r, 100));

export default function (pi: ExtensionAPI) {
  pi.registerCommand("offline", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const seen: any[] = [];
      rt.registerProvider("refreshing", {
        baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [model("r1")],
        refreshModels: async (c: any) => {
          seen.push({ allowNetwork: c.allowNetwork, credential: c.credential ?? null, stored: c.stored ?? null });
          const stored = (c.stored?.models ?? []).map((m: any) => m.id);
          return stored.length > 0 ? stored.map(model) : undefined;
        },
      });
      await tick();
      const out: any = { first: seen[0] ?? null, models: rt.getModels("refreshing").map((m: any) => m.id) };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// `/offline`'s note, with a stored credential and a stored catalog of the registration's provider.
async fn offline_note(reference: bool, command: String) -> Option<Value> {
    let setup = |sb: &Sandbox| {
        let auth = json!({"refreshing": {"type": "api_key", "key": "stored-key"}});
        std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
        let entry = |id: &str, kind: Option<&str>| {
            let mut m = json!({"id": id, "name": id, "api": "openai-completions", "provider": "refreshing",
                "baseUrl": "http://127.0.0.1:9/v1", "reasoning": false, "input": ["text"],
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 1000, "maxTokens": 100});
            if let Some(kind) = kind {
                m["type"] = json!(kind);
            }
            m
        };
        let store = json!({"refreshing": {"models": [entry("s1", None), entry("s2", Some("speech"))], "checkedAt": 7, "etag": "e1"}});
        std::fs::write(sb.agent_dir.path().join("models-store.json"), store.to_string()).expect("models-store.json");
    };
    module_note(reference, ("offline-refresh.ts", OFFLINE_REFRESH), &[], &setup, &command).await
}

#[tokio::test]
async fn a_runtimes_offline_refresh_gets_the_stored_credential_and_catalog_as_pis() {
    let Some((ours, theirs)) = side_by_side(offline_note, "offline").await else { return };
    assert_eq!(ours["first"]["allowNetwork"], false, "{ours}");
    assert_eq!(ours["first"]["credential"], json!({"type": "api_key", "key": "stored-key"}), "{ours}");
    assert_eq!(ours["first"]["stored"]["etag"], "e1", "{ours}");
    assert_eq!(ours["models"], json!(["s1"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A config form's `refreshModels` in the running session: what it was
/// given (offline phase, then the network phase of RPC mode's refresh at start).
const CONFIG_REFRESH: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({ id, name: id, reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });
const seen: any[] = [];

export default function (pi: ExtensionAPI) {
  pi.registerProvider("dyn", {
    baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "literal-key", models: [model("d1")],
    refreshModels: async (c: any) => {
      seen.push({ allowNetwork: c.allowNetwork, credential: c.credential ?? null, stored: c.stored ? c.stored.models.map((m: any) => m.id) : null });
      return [model(c.allowNetwork ? "network" : "offline")];
    },
  });
  pi.registerCommand("seen", { handler: async (_args, ctx) => ctx.ui.notify(JSON.stringify(seen), "info") });
}
"#;

/// RPC mode (not offline), a stored credential and catalog for `dyn`: the
/// provider's models and what its `refreshModels` was given.
async fn config_refresh(reference: bool) -> Option<Value> {
    let cli = reference_cli()?;
    let node = node22()?;
    let sb = catalog_sandbox(CATALOG_PROVIDER).await?;
    write_module(&sb, "dyn.ts", CONFIG_REFRESH);
    let auth = json!({"dyn": {"type": "api_key", "key": "stored-key"}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
    let store = json!({"dyn": {"models": [catalog_model("kept")], "checkedAt": 7}});
    std::fs::write(sb.agent_dir.path().join("models-store.json"), store.to_string()).expect("models-store.json");
    let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
    wait_for_fetched(&mut pi).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let answer = pi.call("m", json!({"type": "get_available_models"})).await;
    let models = answer["data"]["models"].as_array().cloned().unwrap_or_default();
    let dyn_models: Vec<Value> = models.iter().filter(|m| m["provider"] == "dyn").map(|m| m["id"].clone()).collect();
    pi.send(json!({"id": "s", "type": "prompt", "message": "/seen"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    let seen: Value = serde_json::from_str(&note).unwrap_or(Value::String(note));
    // pi refreshes offline at each registration change: each context once.
    let mut phases: Vec<Value> = Vec::new();
    for phase in seen.as_array().cloned().unwrap_or_default() {
        if !phases.contains(&phase) {
            phases.push(phase);
        }
    }
    Some(json!({"models": dyn_models, "phases": phases}))
}

/// RPC mode: a config form's `refreshModels` runs offline (the stored key
/// and catalog) and then with the network (the key it resolves), and the
/// models it returns are the provider's, in pi-rpc as in pi 1.6.0.
#[tokio::test]
async fn a_config_forms_refresh_models_runs_in_the_session_as_in_pi() {
    let Some(ours) = config_refresh(false).await else { return };
    let Some(theirs) = config_refresh(true).await else { return };
    assert_eq!(ours["models"], json!(["network"]), "{ours}");
    let credential = json!({"type": "api_key", "key": "stored-key"});
    let offline = json!({"allowNetwork": false, "credential": credential, "stored": ["kept"]});
    assert_eq!(ours["phases"][0], offline, "{ours}");
    assert_eq!(ours["phases"][1]["allowNetwork"], true, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A `ModelRuntime`'s registration refreshed by `refresh()` (the network allowed, pi's default).
const NETWORK_REFRESH: &str = r#"import { ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({ id, name: id, reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });
const tick = () => new Promise((r) => setTimeout(r, 100));

export default function (pi: ExtensionAPI) {
  pi.registerCommand("network", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const seen: any[] = [];
      rt.registerProvider("refreshing", {
        baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "literal-key", models: [model("r1")],
        refreshModels: async (c: any) => {
          const phase = { allowNetwork: c.allowNetwork, credential: c.credential ?? null };
          if (!seen.some((s) => JSON.stringify(s) === JSON.stringify(phase))) seen.push(phase);
          return [model(c.allowNetwork ? "net" : "off")];
        },
      });
      await tick();
      const before = rt.getModels("refreshing").map((m: any) => m.id);
      await rt.refresh();
      const after = rt.getModels("refreshing").map((m: any) => m.id);
      await rt.refresh({ allowNetwork: false });
      ctx.ui.notify(JSON.stringify({ before, after, seen }), "info");
    },
  });
}
"#;

/// `/network`'s note in RPC mode, not offline.
async fn network_note(reference: bool) -> Option<Value> {
    let cli = reference_cli()?;
    let node = node22()?;
    let (_, dir) = node22().zip(host_dir())?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "network-refresh.ts", NETWORK_REFRESH);
    let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
    pi.send(json!({"id": "n", "type": "prompt", "message": "/network"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    Some(serde_json::from_str(&note).unwrap_or(Value::String(note)))
}

/// A runtime's `refresh()` asks a registration's `refreshModels` offline,
/// then with the network and the key its `apiKey` resolves, as pi's.
#[tokio::test]
async fn a_runtimes_refresh_runs_a_registrations_network_phase_as_pis() {
    let Some(ours) = network_note(false).await else { return };
    let Some(theirs) = network_note(true).await else { return };
    assert_eq!(ours["after"], json!(["net"]), "{ours}");
    let network = json!({"allowNetwork": true, "credential": {"type": "api_key", "key": "literal-key"}});
    assert!(ours["seen"].as_array().is_some_and(|s| s.contains(&network)), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A `ModelRuntime`'s registration with an OAuth login, refreshed by
/// `refresh()` over an expired login stored in `auth.json`.
const EXPIRED_LOGIN_REFRESH: &str = r#"import { ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({ id, name: id, reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });
const tick = () => new Promise((r) => setTimeout(r, 100));

export default function (pi: ExtensionAPI) {
  pi.registerCommand("expired", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const seen: any[] = [];
      const refreshed: any[] = [];
      rt.registerProvider("refreshing", {
        baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [model("r1")],
        oauth: {
          name: "Refreshing",
          login: async () => { throw new Error("no login here"); },
          refreshToken: async (c: any) => { refreshed.push(c.access); return { ...c, access: "fresh-access", refresh: "fresh-refresh", expires: 4102444800000 }; },
          getApiKey: (c: any) => c.access,
        },
        refreshModels: async (c: any) => {
          const phase = { allowNetwork: c.allowNetwork, credential: c.credential ?? null };
          if (!seen.some((s) => JSON.stringify(s) === JSON.stringify(phase))) seen.push(phase);
          return [model(c.allowNetwork ? "net" : "off")];
        },
      } as any);
      await tick();
      await rt.refresh();
      const after = rt.getModels("refreshing").map((m: any) => m.id);
      ctx.ui.notify(JSON.stringify({ after, seen, refreshed }), "info");
    },
  });
}
"#;

/// `/expired`'s note in RPC mode (not offline), with `auth.json`'s login after it.
async fn expired_login_note(reference: bool) -> Option<Value> {
    let cli = reference_cli()?;
    let (node, dir) = node22().zip(host_dir())?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "expired-login.ts", EXPIRED_LOGIN_REFRESH);
    let expired = json!({"type": "oauth", "access": "old-access", "refresh": "old-refresh", "expires": 1000});
    let auth_path = sb.agent_dir.path().join("auth.json");
    std::fs::write(&auth_path, json!({"refreshing": expired}).to_string()).expect("auth.json");
    let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
    pi.send(json!({"id": "e", "type": "prompt", "message": "/expired"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    let mut note: Value = serde_json::from_str(&note).unwrap_or(Value::String(note));
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(&auth_path).unwrap_or_default()).unwrap_or_default();
    note["stored"] = stored["refreshing"].clone();
    Some(note)
}

/// A runtime's `refresh()` over an expired OAuth login of a registration
/// refreshes the login first (the registration's `refreshToken`, the answer
/// stored in `auth.json`) and runs the network phase with it, as pi's.
#[tokio::test]
async fn a_runtimes_refresh_refreshes_an_expired_login_first_as_pis() {
    let Some(ours) = expired_login_note(false).await else { return };
    let Some(theirs) = expired_login_note(true).await else { return };
    assert_eq!(ours["refreshed"], json!(["old-access"]), "{ours}");
    assert_eq!(ours["after"], json!(["net"]), "{ours}");
    assert_eq!(ours["stored"]["access"], "fresh-access", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A provider registered only once `MARKER` exists, its key from a command
/// that notes each run in `LOG`, its `refreshModels` noting each phase there.
const LATE_PROVIDER: &str = r#"import fs from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({ id, name: id, reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });

export default function (pi: ExtensionAPI) {
  if (!fs.existsSync("MARKER")) return;
  pi.registerProvider("late", {
    baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "!echo resolved >> LOG; echo late-key", models: [model("l1")],
    refreshModels: async (c: any) => {
      fs.appendFileSync("LOG", `refresh ${JSON.stringify({ allowNetwork: c.allowNetwork, credential: c.credential ?? null })}\n`);
      return [model(c.allowNetwork ? "net" : "off")];
    },
  } as any);
}
"#;

/// RPC mode (not offline): the first session without the provider, then
/// a new session that registers it; the distinct phases its
/// `refreshModels` ran and how often its key command ran by then, and its
/// models listed after.
async fn late_provider_note(reference: bool) -> Option<Value> {
    let cli = reference_cli()?;
    let (node, dir) = node22().zip(host_dir())?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    let (marker, log) = (sb.cwd.path().join("late.marker"), sb.cwd.path().join("late.log"));
    let module =
        LATE_PROVIDER.replace("MARKER", &marker.display().to_string()).replace("LOG", &log.display().to_string());
    write_module(&sb, "late-provider.ts", &module);
    let mut pi = rpc_not_offline(&sb, &node, &cli, reference);
    let state = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["success"], true, "{state}");
    std::fs::write(&marker, "").expect("marker");
    let answer = pi.call("n", json!({"type": "new_session"})).await;
    assert_eq!(answer["success"], true, "{answer}");
    // Time for a network refresh to show.
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Read before the model list is asked for (pi-rpc's availability check runs a `!command` key; compat/DEVIATIONS.md).
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let answer = pi.call("m", json!({"type": "get_available_models"})).await;
    let models = answer["data"]["models"].as_array().cloned().unwrap_or_default();
    let late: Vec<Value> = models.iter().filter(|m| m["provider"] == "late").map(|m| m["id"].clone()).collect();
    let mut phases: Vec<Value> = Vec::new();
    for line in text.lines().filter_map(|l| l.strip_prefix("refresh ")) {
        let phase: Value = serde_json::from_str(line).unwrap_or_default();
        if !phases.contains(&phase) {
            phases.push(phase);
        }
    }
    let resolved = text.lines().filter(|l| *l == "resolved").count();
    Some(json!({"models": late, "phases": phases, "keyCommandRuns": resolved}))
}

/// RPC mode: a provider first registered by a later session (after
/// `new_session`) is refreshed offline only and its key is not resolved
/// for a refresh, in pi-rpc as in pi 1.6.0 (pi refreshes from the network
/// once, for the first session's runtime).
#[tokio::test]
async fn a_provider_first_registered_in_a_later_session_is_refreshed_offline_only_as_in_pi() {
    let Some(ours) = late_provider_note(false).await else { return };
    let Some(theirs) = late_provider_note(true).await else { return };
    let offline = json!({"allowNetwork": false, "credential": null});
    assert_eq!(ours, json!({"models": ["off"], "phases": [offline], "keyCommandRuns": 0}), "pi-rpc");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
