//! A native `Provider`'s model refresh with the network, run by pi-rpc and
//! by pi 1.6.0 side by side, neither offline: after start-up (pi's RPC mode
//! refreshes catalogs in the background) its `refreshModels` runs with
//! `allowNetwork: true` and the credential its `auth.apiKey` resolves; the
//! models it publishes are listed, and what it persists is in
//! `models-store.json` under the provider's id. Offline, that phase does
//! not run.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::harness::{Pi, Sandbox};

/// The provider of the refresh tests: one network phase that publishes and persists a catalog.
fn catalog() -> String {
    native_provider(
        "catalog",
        "",
        r#"{ apiKey: { name: "Catalog key", resolve: async () => ({ auth: { apiKey: "catalog-key" }, source: "test" }) } }"#,
        r#"phases.push(`network ${ctx.credential?.type}:${ctx.credential?.key}`);
      const fetched = [model("static-model"), model("network-model")];
      await ctx.publish({ persist: { models: fetched, checkedAt: 1 }, update: () => { models = fetched; } });"#,
    )
}

/// A native provider extension (`pi.registerProvider(provider)`) named `id`, with the model `static-model` of the
/// API `<id>-api`, the `auth` object given, and a `refreshModels` that does `network` (TypeScript) when the network
/// is allowed. `prelude` goes after the imports. Its `/phases` command notifies what was pushed to `phases`.
pub(crate) fn native_provider(id: &str, prelude: &str, auth: &str, network: &str) -> String {
    format!(
        r#"import type {{ ExtensionAPI }} from "@earendil-works/pi-coding-agent";
{prelude}
const model = (id: string) => ({{
  id, name: id, api: "{id}-api", provider: "{id}", baseUrl: "https://{id}.invalid",
  reasoning: false, input: ["text"], cost: {{ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }},
  contextWindow: 32000, maxTokens: 1000,
}});

export default function (pi: ExtensionAPI) {{
  let models = [model("static-model")];
  const phases: string[] = [];
  const provider: any = {{
    id: "{id}",
    name: "{id}",
    baseUrl: "https://{id}.invalid",
    auth: {auth},
    getModels: () => models,
    async refreshModels(ctx: any) {{
      if (!ctx.allowNetwork) return;
      {network}
    }},
    stream: () => {{ throw new Error("not called"); }},
    streamSimple: () => {{ throw new Error("not called"); }},
  }};
  pi.registerProvider(provider);
  pi.registerCommand("phases", {{ handler: async (_args, ctx) => ctx.ui.notify(phases.join("; "), "info") }});
}}
"#
    )
}

/// Ask for the models until `catalog/network-model` is listed (at most 100 times).
async fn wait_for_network_model(pi: &mut Pi) -> bool {
    for n in 0..100 {
        let id = format!("l{n}");
        let answer = pi.call(&id, json!({"type": "get_available_models"})).await;
        let models = answer["data"]["models"].as_array().cloned().unwrap_or_default();
        if models.iter().any(|m| m["provider"] == "catalog" && m["id"] == "network-model") {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    false
}

/// What one program did: the network model listed, the phases seen, the stored entry.
async fn run(mut pi: Pi, sb: &Sandbox, offline: bool) -> (bool, String, Value) {
    let listed = if offline {
        pi.call("c", json!({"type": "get_commands"})).await;
        false
    } else {
        wait_for_network_model(&mut pi).await
    };
    pi.send(json!({"id": "p", "type": "prompt", "message": "/phases"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let note = lines.last().map(|v| v["message"].as_str().unwrap_or_default().to_string()).unwrap_or_default();
    let store = std::fs::read_to_string(sb.agent_dir.path().join("models-store.json")).unwrap_or_default();
    let stored: Value = serde_json::from_str(&store).unwrap_or(Value::Null);
    (listed, note, stored["catalog"].clone())
}

#[tokio::test]
async fn a_native_providers_network_refresh_publishes_and_persists_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    for reference in [false, true] {
        let sb = Sandbox::offline();
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "catalog.ts", &catalog());
        let pi = if reference { spawn_reference_with(&sb, &node, &cli, false) } else { sb.spawn(&["--no-session"]) };
        let (listed, phases, stored) = run(pi, &sb, false).await;
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        assert!(listed, "{who}: the model the network refresh published is listed");
        assert_eq!(phases, "network api_key:catalog-key", "{who}: one network phase, with the resolved key");
        let ids: Vec<&str> =
            stored["models"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str()).collect();
        assert_eq!(ids, ["static-model", "network-model"], "{who}: the published catalog is stored");
        assert_eq!(stored["checkedAt"], 1, "{who}");
    }
    // Offline, pi-rpc runs no network phase and stores nothing.
    let sb = Sandbox::offline();
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "catalog.ts", &catalog());
    let (_, phases, stored) = run(sb.spawn(&["--no-session", "--offline"]), &sb, true).await;
    assert_eq!((phases.as_str(), stored), ("", Value::Null));
}

/// A native provider whose only login is an OAuth one, stored expired.
fn renewed() -> String {
    native_provider(
        "renewed",
        "",
        r#"{
      oauth: {
        name: "Renewed login",
        login: async () => { throw new Error("no login here"); },
        refresh: async (credential: any) => {
          phases.push(`refresh ${credential.refresh}`);
          return { type: "oauth", access: "fresh-access", refresh: "refresh-two", expires: Date.now() + 3600000 };
        },
        toAuth: async (credential: any) => ({ apiKey: credential.access }),
      },
    }"#,
        r#"phases.push(`network ${ctx.credential?.type}:${ctx.credential?.access}`);
      await ctx.publish({ update: () => { models = [model("static-model"), model("network-model")]; } });"#,
    )
}

/// `/phases` until its note names the network phase (at most 100 times); the last note.
async fn phases_after_network(pi: &mut Pi) -> String {
    let mut note = String::new();
    for n in 0..100 {
        pi.send(json!({"id": format!("p{n}"), "type": "prompt", "message": "/phases"})).await;
        let lines = pi.until(|v| v["method"] == "notify").await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
        note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
        if note.contains("network") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    note
}

#[tokio::test]
async fn an_expired_oauth_login_is_refreshed_for_the_network_refresh_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let sb = Sandbox::offline();
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "renewed.ts", &renewed());
        let auth = sb.agent_dir.path().join("auth.json");
        let expired = json!({"type": "oauth", "access": "stale-access", "refresh": "refresh-one", "expires": 1000});
        std::fs::write(&auth, json!({"renewed": expired}).to_string()).expect("auth.json");
        let mut pi =
            if reference { spawn_reference_with(&sb, &node, &cli, false) } else { sb.spawn(&["--no-session"]) };
        let phases = phases_after_network(&mut pi).await;
        assert_eq!(
            phases, "refresh refresh-one; network oauth:fresh-access",
            "{who}: the login is refreshed first, the network phase gets the fresh one"
        );
        let stored: Value =
            serde_json::from_str(&std::fs::read_to_string(&auth).unwrap_or_default()).unwrap_or_default();
        assert_eq!(stored["renewed"]["type"], "oauth", "{who}: {stored}");
        assert_eq!(stored["renewed"]["access"], "fresh-access", "{who}: the refreshed login is stored: {stored}");
        assert_eq!(stored["renewed"]["refresh"], "refresh-two", "{who}: {stored}");
    }
}
