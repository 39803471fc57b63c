//! pi's `ModelRuntime` over stores an extension hands it, side by side with
//! pi 1.6.0: `ModelRuntime.create({credentials})` with a credential store
//! object (pi-ai's `CredentialStore`: its keys answer auth questions and
//! reach the fake model server, `listCredentials` is its list, an API-key
//! `login` is written with its `modify`, `logout` with its `delete`), and
//! `modelsStore` / `modelsStorePath` (pi's cache of remote catalogs: a
//! stored catalog newer than pi's model data joins its provider's models, an
//! older one does not); an expired OAuth login in the store is refreshed
//! (against the fake OAuth server) and saved back with `modify`. Each part
//! is an extension command that notifies a
//! JSON summary; pi-rpc's is compared with pi 1.6.0's whole, with the key
//! each model request brought.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::extension_sdk_services::{notified_json, notified_text, side_by_side, start_module};
use crate::harness::{Pi, Sandbox};

const SDK_MODEL_STORES: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { getAgentDir, ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const textOf = (m: any) => (m?.content ?? []).map((c: any) => c.text ?? "").join("");
const storedModel = (provider: string, id: string, api: string) => ({
  id, name: "Stored " + id, api, provider, baseUrl: "http://127.0.0.1:9/v1", reasoning: false, input: ["text"], cost: ZERO, contextWindow: 4321, maxTokens: 123,
});

export default function (pi: ExtensionAPI) {
  pi.registerCommand("credentials", {
    handler: async (_args, ctx) => {
      const data = new Map<string, any>([["fake", { type: "api_key", key: "store-key" }]]);
      const writes: any[] = [];
      const store = {
        async read(id: string) { return data.get(id); },
        async list() { return [...data].map(([providerId, c]) => ({ providerId, type: c.type })); },
        async modify(id: string, fn: (current: any) => Promise<any>) {
          const next = await fn(data.get(id));
          writes.push(["modify", id, next ?? null]);
          if (next !== undefined) data.set(id, next);
          return data.get(id);
        },
        async delete(id: string) { writes.push(["delete", id]); data.delete(id); },
      };
      const rt = await ModelRuntime.create({ credentials: store, modelsPath: path.join(getAgentDir(), "models.json") } as any);
      const out: any = {
        status: rt.getProviderAuthStatus("fake"),
        auth: await rt.getAuth("fake"),
        available: (await rt.getAvailable()).map((m: any) => m.provider + "/" + m.id),
        listed: await rt.listCredentials(),
      };
      const model = rt.getModel("fake", "fake-model")!;
      out.reply = textOf(await rt.completeSimple(model, { messages: [{ role: "user", content: "hi", timestamp: 1 }] } as any));
      data.set("fake", { type: "api_key", key: "changed-key" });
      out.changed = textOf(await rt.completeSimple(model, { messages: [{ role: "user", content: "again", timestamp: 2 }] } as any));
      const prompts: any[] = [];
      const credential = await rt.login("fake", "api_key", { prompt: async (p: any) => { prompts.push([p.type, p.message]); return "typed-key"; }, notify: () => {} } as any);
      out.login = { credential, prompts, listed: await rt.listCredentials(), auth: await rt.getAuth("fake"), stored: data.get("fake") ?? null };
      await rt.logout("fake");
      out.logout = { listed: await rt.listCredentials(), stored: data.has("fake"), status: rt.getProviderAuthStatus("fake") };
      out.writes = writes;
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("refresh", {
    handler: async (_args, ctx) => {
      const expired = JSON.parse(fs.readFileSync(path.join(ctx.cwd, "expired.json"), "utf8"));
      const data = new Map<string, any>([["anthropic", expired]]);
      const writes: any[] = [];
      const store = {
        async read(id: string) { return data.get(id); },
        async list() { return [...data].map(([providerId, c]) => ({ providerId, type: c.type })); },
        async modify(id: string, fn: (current: any) => Promise<any>) {
          const next = await fn(data.get(id));
          writes.push([id, next ? Object.keys(next).sort() : null]);
          if (next !== undefined) data.set(id, next);
          return data.get(id);
        },
        async delete(id: string) { data.delete(id); },
      };
      const rt = await ModelRuntime.create({ credentials: store, modelsPath: null } as any);
      const auth: any = await rt.getAuth("anthropic");
      const saved = data.get("anthropic");
      ctx.ui.notify(JSON.stringify({
        writes,
        refreshed: saved.access !== expired.access && saved.refresh !== undefined,
        inFuture: saved.expires > Date.now(),
        used: auth?.auth?.apiKey === saved.access,
        source: auth?.source ?? null,
        again: ((await rt.getAuth("anthropic")) as any)?.auth?.apiKey === saved.access,
        writesAfter: writes.length,
      }), "info");
    },
  });
  pi.registerCommand("catalogs", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "stores");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      fs.writeFileSync(authPath, JSON.stringify({ anthropic: { type: "api_key", key: "a-key" }, openai: { type: "api_key", key: "o-key" } }));
      const newer = Date.parse("2026-11-30T00:00:00Z");
      const entries = {
        anthropic: { models: [storedModel("anthropic", "claude-from-store", "anthropic-messages")], lastModified: newer, checkedAt: newer },
        openai: { models: [storedModel("openai", "gpt-too-old", "openai-responses")], lastModified: 1, checkedAt: 1 },
      };
      const storePath = path.join(dir, "catalogs.json");
      fs.writeFileSync(storePath, JSON.stringify(entries));
      fs.writeFileSync(path.join(dir, "models-store.json"), JSON.stringify({ anthropic: { ...entries.anthropic, models: [storedModel("anthropic", "claude-beside", "anthropic-messages")] } }));
      const look = (rt: any) => ({
        fromStore: rt.getModel("anthropic", "claude-from-store")?.name ?? null,
        beside: rt.getModel("anthropic", "claude-beside")?.name ?? null,
        tooOld: rt.getModel("openai", "gpt-too-old")?.name ?? null,
        listed: rt.getModels("anthropic").filter((m: any) => m.name?.startsWith("Stored ")).map((m: any) => [m.id, m.contextWindow]),
      });
      const reads: string[] = [];
      const object = {
        async read(id: string) { reads.push(id); return (entries as any)[id]; },
        async write() {},
        async delete() {},
      };
      const out = {
        path: look(await ModelRuntime.create({ authPath, modelsPath: path.join(dir, "models.json"), modelsStorePath: storePath })),
        beside: look(await ModelRuntime.create({ authPath, modelsPath: path.join(dir, "models.json") })),
        object: look(await ModelRuntime.create({ authPath, modelsPath: null, modelsStore: object } as any)),
        objectRead: reads.includes("anthropic"),
      };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// What `/<command>` notified in one program, and the key each model request brought.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let module = ("sdk-model-stores.ts", SDK_MODEL_STORES);
    let (sb, mut pi) =
        start_module(reference, module, Some(json!({})), |sb| sb.server().push(Reply::text("Stored key."))).await?;
    let mut note = notified_json(&mut pi, &sb, command).await;
    note["keys"] =
        json!(sb.server().requests().iter().map(|r| r.header("authorization").unwrap_or("none")).collect::<Vec<_>>());
    Some(note)
}

/// `/refresh` in pi-rpc or pi 1.6.0 over an expired Anthropic login, every
/// OAuth origin sent to the fake OAuth server (pi-rpc's test hook
/// `PI_RPC_ORIGIN_OVERRIDES`; pi 1.6.0 through `tests/oauth/route_fetch.mjs`),
/// with the number of refreshes the server saw.
async fn run_refresh(reference: bool) -> Option<Value> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    let fake = FakeOAuth::start().await.expect("the fake OAuth server");
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "sdk-model-stores.ts", SDK_MODEL_STORES);
    sb.write_models(&sb.server().base_url(), json!({}));
    let expired = fake.credential("anthropic", 1_000);
    std::fs::write(sb.cwd.path().join("expired.json"), expired.to_string()).expect("write the expired login");
    let overrides = crate::harness::origin_overrides(&fake.overrides());
    let mut pi = if reference {
        let mut cmd = reference_command(&sb, &node, &cli);
        cmd.args(["--no-session", "--offline"]).env("PI_OFFLINE", "1");
        cmd.env("PI_RPC_ORIGIN_OVERRIDES", &overrides);
        Pi::start_unchecked(cmd)
    } else {
        sb.spawn_with_env(&["--no-session"], &[("PI_RPC_ORIGIN_OVERRIDES", Path::new(&overrides))])
    };
    let text = notified_text(&mut pi, &sb, "refresh").await;
    let mut note: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/refresh notified {text}: {e}"));
    note["refreshes"] = json!(fake.refreshes("anthropic"));
    Some(note)
}

async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn a_model_runtime_over_a_credential_store_reads_and_writes_it_as_pis() {
    let Some((ours, theirs)) = both("credentials").await else { return };
    // The store's key answered and went out; a key changed in the store is read again for the next call.
    assert_eq!(ours["keys"], json!(["Bearer store-key", "Bearer changed-key"]), "{ours}");
    assert_eq!(ours["auth"]["auth"]["apiKey"], "store-key", "{ours}");
    // The login went to the store's modify, the logout to its delete.
    assert_eq!(ours["login"]["stored"], json!({"type": "api_key", "key": "typed-key"}), "{ours}");
    assert_eq!(ours["writes"][1], json!(["delete", "fake"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_model_runtime_restores_stored_catalogs_as_pis() {
    let Some((ours, theirs)) = both("catalogs").await else { return };
    // A stored catalog newer than pi's model data joins its provider; an older one does not.
    assert_eq!(ours["path"]["fromStore"], "Stored claude-from-store", "{ours}");
    assert_eq!(ours["path"]["tooOld"], Value::Null, "{ours}");
    assert_eq!(ours["beside"]["beside"], "Stored claude-beside", "{ours}");
    assert_eq!(ours["object"]["fromStore"], "Stored claude-from-store", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_credential_stores_expired_oauth_login_is_refreshed_into_it_as_pis() {
    let Some(ours) = run_refresh(false).await else { return };
    let Some(theirs) = run_refresh(true).await else { return };
    // Refreshed once, through the store's modify, and used; the next question finds it fresh.
    assert_eq!(ours["refreshes"], 1, "{ours}");
    assert_eq!(ours["refreshed"], true, "{ours}");
    assert_eq!(ours["used"], true, "{ours}");
    assert_eq!(ours["again"], true, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
