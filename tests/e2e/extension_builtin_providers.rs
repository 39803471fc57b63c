//! pi's built-in providers as a model runtime gives them, side by side with
//! pi 1.6.0: `getProviders()` lists every built-in provider of pi-ai's,
//! TypeSafe's (classifier models only) included, in pi's order; a built-in
//! provider's object from `getProvider()` (a new runtime's and
//! `ctx.modelRegistry`'s) is pi-ai's, member by member: its keys and their
//! types in pi's order, name, base URL, `refreshModelsAuth`, the API-key
//! auth (`name`, the variables `resolve` reads in order, what it resolves
//! from the environment, from a stored credential or from nothing, the
//! questions `login` asks), the OAuth auth's facts, the chat and typed
//! models, `refreshModels` offline, `filterModels`, and a call through
//! `stream`; and `--api-key`: the session's runtime (`ctx.modelRegistry`)
//! uses the key for the chosen model's provider, a runtime an extension makes
//! (`ModelRuntime.create()`) does not, as in pi; a key set on
//! `ctx.modelRegistry.runtime` is the session's; the session's runtime lists
//! pi's own llama.cpp provider; a configured provider's name, OAuth
//! `toAuth` headers and model order are pi's composer's.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::extension_sdk_services::notified_text;
use crate::harness::{Pi, Sandbox};

const BUILTINS: &str = r#"import { ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const settled = async (f: () => any) => { try { const v = await f(); return v === undefined ? "undefined" : JSON.parse(JSON.stringify(v)); } catch (e: any) { return { error: e.message }; } };
const kinds = (o: any) => (o && typeof o === "object" ? Object.keys(o).map((k) => `${k}:${o[k] === undefined ? "undefined" : typeof o[k]}`) : o === undefined ? "undefined" : null);
const signal = () => new AbortController().signal;
const typed = (m: any) => `${m.type ?? "chat"}:${m.id}`;

/** Everything pi's provider object answers without the network. */
async function describe(p: any) {
  if (!p) return null;
  const a = p.auth?.apiKey;
  const o = p.auth?.oauth;
  const asked: string[] = [];
  const none = { env: async (n: string) => { asked.push(n); return undefined; }, fileExists: async () => false };
  const all = { env: async (n: string) => `v-${n}`, fileExists: async () => true };
  const prompts: any[] = [];
  const notes: any[] = [];
  const interaction = {
    signal: signal(),
    prompt: async (q: any) => { prompts.push([q.type, q.message, (q.options ?? []).map((x: any) => x.id)]); return q.type === "select" ? q.options[0].id : `typed ${q.message}`; },
    notify: (n: any) => { notes.push(n.type); },
  };
  const published: any[] = [];
  const refresh = typeof p.refreshModels === "function"
    ? await settled(() => p.refreshModels({ signal: signal(), allowNetwork: false, publish: async (x: any) => { published.push(Object.keys(x)); x.update?.(); return true; } }))
    : null;
  return {
    keys: kinds(p), auth: kinds(p.auth), apiKey: kinds(a), oauth: kinds(o),
    id: p.id, name: p.name, baseUrl: p.baseUrl ?? null, headers: p.headers ?? null, refreshModelsAuth: p.refreshModelsAuth ?? null,
    apiKeyName: a?.name ?? null,
    oauthFacts: o ? [o.name, o.isSubscription ?? null, o.loginLabel ?? null] : null,
    resolveNone: a ? await settled(() => a.resolve({ ctx: none, signal: signal() })) : null,
    asked,
    resolveAll: a ? await settled(() => a.resolve({ ctx: all, signal: signal() })) : null,
    resolveStored: a ? await settled(() => a.resolve({ ctx: none, credential: { type: "api_key", key: "stored-k", env: { X_SET: "1" } }, signal: signal() })) : null,
    login: a ? await settled(() => a.login(interaction)) : null,
    prompts, notes,
    chat: p.getModels().map((m: any) => m.id),
    all: typeof p.getAllModels === "function" ? p.getAllModels().map(typed) : null,
    refresh, published,
  };
}

export default function (pi: ExtensionAPI) {
  // Every built-in provider of a new runtime, and ctx.modelRegistry's of the same ids.
  pi.registerCommand("builtins", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const ids = rt.getProviders().map((p: any) => p.id);
      const out: any = { ids, listedTypes: rt.getProviders().map((p: any) => typeof p.getModels), fresh: {}, running: {} };
      for (const id of ids) {
        if (id === "fake") continue;
        out.fresh[id] = await describe(rt.getProvider(id));
        out.running[id] = await describe(ctx.modelRegistry.getProvider(id));
      }
      out.names = ids.map((id: string) => ctx.modelRegistry.getProviderDisplayName(id));
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // One built-in provider's calls and catalog: a stream at the fake server, a stored catalog restored, Copilot's filter.
  pi.registerCommand("calls", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const fake = ctx.modelRegistry.find("fake", "fake-model") as any;
      const groq = rt.getProvider("groq");
      const model = { ...groq.getModels()[0], baseUrl: fake.baseUrl };
      const message = await groq.stream(model, { messages: [{ role: "user", content: "hi", timestamp: 1 }] }, { apiKey: "call-key" }).result();
      const out: any = { text: message.content, stopReason: message.stopReason, provider: message.provider, error: message.errorMessage ?? null };
      const restored: any[] = [];
      const stored = { models: [{ ...groq.getModels()[0], id: "stored-one", name: "Stored" }], lastModified: Date.now(), checkedAt: Date.now() };
      await groq.refreshModels({ signal: signal(), allowNetwork: false, stored, publish: async (x: any) => { restored.push(Object.keys(x)); x.update?.(); return true; } });
      out.restored = { published: restored, has: groq.getModels().some((m: any) => m.id === "stored-one"), fresh: rt.getProvider("groq").getModels().some((m: any) => m.id === "stored-one") };
      const copilot = rt.getProvider("github-copilot");
      const models = copilot.getModels();
      out.copilot = [
        copilot.filterModels(models, undefined).length === models.length,
        copilot.filterModels(models, { type: "oauth", access: "a", refresh: "r", expires: 1, availableModelIds: [models[0].id] }).map((m: any) => m.id),
      ];
      const openai = rt.getProvider("openai");
      const openaiAll = openai.getAllModels();
      out.openai = [openai.filterAllModels(openaiAll, undefined).length === openaiAll.length, openai.filterAllModels(openaiAll, { type: "oauth" }).map(typed).filter((t: string) => !t.startsWith("chat:"))];
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // Built-in providers models.json (groq, mistral, openai-codex) or an extension (anthropic, CONFIGURES) configures.
  pi.registerCommand("configured", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const out: any = { fresh: {}, running: {} };
      for (const id of ["groq", "mistral", "openai-codex", "anthropic", "openai"]) {
        out.fresh[id] = await describe(rt.getProvider(id));
        out.running[id] = await describe(ctx.modelRegistry.getProvider(id));
      }
      out.names = ["groq", "anthropic", "custom", "plain"].map((id) => ctx.modelRegistry.getProviderDisplayName(id));
      out.freshNames = ["groq", "custom", "plain"].map((id) => rt.getProvider(id)?.name ?? null);
      // An OAuth login's request auth: the configured headers over the provider's.
      const login = { type: "oauth", access: "acc", refresh: "ref", expires: Date.now() + 3600000 };
      out.toAuth = await settled(() => ctx.modelRegistry.getProvider("openai-codex").auth.oauth.toAuth(login));
      out.freshToAuth = await settled(() => rt.getProvider("openai-codex").auth.oauth.toAuth(login));
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // ctx.modelRegistry as pi's instance: its own keys, and its `runtime` (pi's ModelRuntime over it).
  pi.registerCommand("runtime", {
    handler: async (_args, ctx) => {
      const r: any = ctx.modelRegistry;
      const rt: any = r.runtime;
      const members = ["checkAuth", "classify", "complete", "completeSimple", "generateImages", "getAllAvailable", "getAllModels", "getAuth", "getAvailable", "getAvailableOfType", "getAvailableSnapshot", "getError", "getModel", "getModelOfType", "getModels", "getModelsOfType", "getPhysicalModel", "getProvider", "getProviderAuthStatus", "getProviders", "getRegisteredNativeProvider", "getRegisteredProviderConfig", "getRegisteredProviderIds", "hasConfiguredAuth", "isUsingOAuth", "isUsingSubscription", "listCredentials", "login", "logout", "refresh", "registerNativeProvider", "registerProvider", "registerVirtualModel", "removeRuntimeApiKey", "resolveModel", "setRuntimeApiKey", "stream", "streamSimple", "unregisterProvider", "unregisterVirtualModel"];
      const out: any = {
        keys: kinds(r),
        runtime: rt instanceof ModelRuntime,
        same: r.runtime === rt,
        members: members.map((m) => `${m}:${typeof rt?.[m]}`),
        ids: rt.getProviders().map((p: any) => p.id),
        model: rt.getModel("fake", "fake-model")?.id ?? null,
        physical: rt.getPhysicalModel("fake", "fake-model")?.id ?? null,
        chat: rt.getModels("fake").map((m: any) => m.id),
        status: rt.getProviderAuthStatus("mistral"),
        configured: rt.hasConfiguredAuth("mistral"),
        available: [...new Set((await rt.getAvailable()).map((m: any) => m.provider))].sort(),
        name: rt.getProvider("groq")?.name ?? null,
      };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // A key set on ctx.modelRegistry.runtime ("remove": taken away): the session's, a new runtime's.
  pi.registerCommand("sessionkey", {
    handler: async (args, ctx) => {
      const rt: any = ctx.modelRegistry.runtime;
      if (args.trim() === "remove") await rt.removeRuntimeApiKey("fake");
      else await rt.setRuntimeApiKey("fake", "runtime-key");
      const fresh: any = await ModelRuntime.create();
      const out: any = {
        runtime: rt.getProviderAuthStatus("fake"),
        registry: ctx.modelRegistry.getProviderAuthStatus("fake"),
        registryKey: await settled(() => ctx.modelRegistry.getApiKeyForProvider("fake")),
        runtimeAuth: await settled(async () => (await rt.getAuth("fake"))?.auth ?? null),
        credentials: await rt.listCredentials(),
        fresh: fresh.getProviderAuthStatus("fake"),
        freshCredentials: await fresh.listCredentials(),
      };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // pi's own llama.cpp provider in the session's runtime (a new runtime's too).
  pi.registerCommand("llamacpp", {
    handler: async (_args, ctx) => {
      const rt: any = ctx.modelRegistry.runtime;
      const fresh: any = await ModelRuntime.create();
      const out: any = {
        ids: rt.getProviders().map((p: any) => p.id),
        running: await describe(rt.getProvider("llama.cpp")),
        registry: await describe(ctx.modelRegistry.getProvider("llama.cpp")),
        name: ctx.modelRegistry.getProviderDisplayName("llama.cpp"),
        status: rt.getProviderAuthStatus("llama.cpp"),
        registered: [rt.getRegisteredProviderIds(), typeof rt.getRegisteredNativeProvider("llama.cpp")],
        fresh: await describe(fresh.getProvider("llama.cpp")),
        freshIds: fresh.getProviders().map((p: any) => p.id).slice(-2),
      };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // Under --api-key: which key the session's registry and a new runtime use for which provider.
  pi.registerCommand("apikey", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const out: any = {};
      for (const id of ["fake", "groq", "mistral"]) {
        const model = ctx.modelRegistry.find(id, id === "fake" ? "fake-model" : ctx.modelRegistry.getAll().find((m: any) => m.provider === id)?.id);
        out[id] = {
          running: ctx.modelRegistry.getProviderAuthStatus(id),
          runningKey: await settled(() => ctx.modelRegistry.getApiKeyForProvider(id)),
          runningHeaders: await settled(async () => { const r: any = await ctx.modelRegistry.getApiKeyAndHeaders(model); return r.ok ? { apiKey: r.apiKey ?? null } : r; }),
          runningConfigured: ctx.modelRegistry.hasConfiguredAuth(model),
          fresh: rt.getProviderAuthStatus(id),
          freshAuth: await settled(async () => (await rt.getAuth(id))?.auth ?? null),
          freshConfigured: rt.hasConfiguredAuth(id),
        };
      }
      out.credentials = await rt.listCredentials();
      out.available = [...new Set(ctx.modelRegistry.getAvailable().map((m: any) => m.provider))].sort();
      out.freshAvailable = [...new Set((await rt.getAvailable()).map((m: any) => m.provider))].sort();
      const fake = ctx.modelRegistry.find("fake", "fake-model") as any;
      const user = { messages: [{ role: "user", content: "hi", timestamp: 1 }] };
      out.runningCall = (await ctx.modelRegistry.complete(fake, user)).stopReason;
      out.freshCall = (await rt.complete(rt.getModel("fake", "fake-model"), user)).stopReason;
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// An extension configuring a built-in provider: Anthropic with its own base URL, key and headers.
const CONFIGURES: &str = r#"export default function (pi: any) {
  pi.registerProvider("anthropic", { baseUrl: "http://127.0.0.1:9/ext", apiKey: "ext-key", headers: { "X-Ext": "e" } });
}
"#;

/// `/<command>`'s note in one program (pi-rpc, or pi 1.6.0 when `reference`) started with `args`
/// (a key for Mistral stored), and the `authorization` header of each request the fake server
/// got; `None` without the tools.
async fn note(reference: bool, args: &[&str], command: &str) -> Option<(Value, Vec<Value>)> {
    note_with(reference, args, command, None).await
}

/// [`note`] with a `models.json` in the agent directory.
async fn note_with(
    reference: bool,
    args: &[&str],
    command: &str,
    models: Option<&Value>,
) -> Option<(Value, Vec<Value>)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "builtins.ts", BUILTINS);
    // A stored key for Mistral: its models are available, so a scope (`--models`) can name one.
    let auth = json!({"mistral": {"type": "api_key", "key": "stored-mistral"}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("write auth.json");
    if let Some(models) = models {
        std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("write models.json");
        write_module(&sb, "configures.ts", CONFIGURES);
    }
    sb.server().push(pi_compat::fake_server::Reply::text("Called."));
    sb.server().push(pi_compat::fake_server::Reply::text("Called again."));
    let mut pi = start(reference, &sb, &node, &cli, args);
    let text = notified_text(&mut pi, &sb, command).await;
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}"));
    pi.close_stdin();
    pi.wait().await;
    Some((value, authorizations(&sb)))
}

/// pi-rpc, or pi 1.6.0 when `reference` (offline), in `sb` without a session file, with `args`.
fn start(reference: bool, sb: &Sandbox, node: &Path, cli: &Path, args: &[&str]) -> Pi {
    if reference {
        let mut cmd = reference_command(sb, node, cli);
        cmd.args(["--no-session", "--offline"]).args(args).env("PI_OFFLINE", "1");
        return Pi::start_unchecked(cmd);
    }
    let mut full = vec!["--no-session"];
    full.extend_from_slice(args);
    sb.spawn(&full)
}

/// The `authorization` header of each request the fake server got (null: none).
pub(crate) fn authorizations(sb: &Sandbox) -> Vec<Value> {
    let requests = sb.server().requests();
    let header = |r: &pi_compat::fake_server::RecordedRequest| {
        r.headers.iter().find(|(name, _)| name == "authorization").map(|(_, v)| v.clone())
    };
    requests.iter().map(|r| json!(header(r))).collect()
}

/// One program's notes of `/sessionkey`, a prompt, `/sessionkey remove` and a prompt (a key set
/// on `ctx.modelRegistry.runtime`, then removed), and the `authorization` header of each request
/// the fake server got; `None` without the tools.
async fn session_key(reference: bool) -> Option<(Vec<Value>, Vec<Value>)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "builtins.ts", BUILTINS);
    let mut pi = start(reference, &sb, &node, &cli, &[]);
    let mut notes = Vec::new();
    for (step, command) in ["sessionkey", "sessionkey remove"].into_iter().enumerate() {
        let text = notified_text(&mut pi, &sb, command).await;
        notes.push(serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}")));
        sb.server().push(pi_compat::fake_server::Reply::text("Answered."));
        pi.send(json!({"id": format!("p{step}"), "type": "prompt", "message": "hello"})).await;
        pi.until_type("agent_settled").await;
    }
    pi.close_stdin();
    pi.wait().await;
    Some((notes, authorizations(&sb)))
}

/// pi-rpc's note and requests, then pi 1.6.0's.
async fn both(args: &[&str], command: &str) -> Option<((Value, Vec<Value>), (Value, Vec<Value>))> {
    let ours = note(false, args, command).await?;
    let theirs = note(true, args, command).await?;
    Some((ours, theirs))
}

/// pi-rpc's note, then pi 1.6.0's, with `models` as `models.json`.
async fn both_with(command: &str, models: &Value) -> Option<(Value, Value)> {
    let (ours, _) = note_with(false, &[], command, Some(models)).await?;
    let (theirs, _) = note_with(true, &[], command, Some(models)).await?;
    Some((ours, theirs))
}

/// Where two JSON values first differ (a path, then both values), for a readable failure.
fn first_difference(ours: &Value, theirs: &Value) -> String {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys()) {
                let (x, y) = (a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null));
                if x != y {
                    return format!("{key}.{}", first_difference(x, y));
                }
            }
            String::new()
        }
        _ => format!(" {ours} / {theirs}"),
    }
}

#[tokio::test]
async fn built_in_providers_are_pi_ais_member_by_member() {
    let Some(((ours, _), (theirs, _))) = both(&[], "builtins").await else { return };
    let ids = ours["ids"].as_array().cloned().unwrap_or_default();
    assert!(ids.contains(&json!("typesafe")), "TypeSafe among the providers: {ids:?}");
    assert_eq!(ours["fresh"]["typesafe"]["all"], json!(["classifier:jev-latest"]), "{}", ours["fresh"]["typesafe"]);
    assert_eq!(ours["fresh"]["anthropic"]["apiKeyName"], "Anthropic API key", "{}", ours["fresh"]["anthropic"]);
    for part in ["ids", "listedTypes", "names", "fresh", "running"] {
        assert_eq!(ours[part], theirs[part], "{part}: {}", first_difference(&ours[part], &theirs[part]));
    }
}

/// A built-in provider `models.json` (a base URL, key and headers; a custom model; an OAuth-only
/// provider's base URL) or an extension (`registerProvider` with a key and headers) configures is
/// pi-ai's provider composed with the configuration as pi's composer makes it, member by member.
#[tokio::test]
async fn configured_built_in_providers_are_composed_as_pis() {
    let models = json!({"providers": {
        "groq": {"name": "My Groq", "baseUrl": "http://127.0.0.1:9/groq", "apiKey": "conf-key", "headers": {"X-Conf": "c"}},
        "mistral": {"models": [{"id": "my-model", "api": "openai-completions", "baseUrl": "http://127.0.0.1:9/m"}]},
        "openai-codex": {"baseUrl": "http://127.0.0.1:9/codex", "headers": {"X-Codex": "x"}},
        "openai": {"models": [{"id": "my-openai", "api": "openai-completions", "baseUrl": "http://127.0.0.1:9/o"}]},
        "custom": {"name": "Custom Provider", "baseUrl": "http://127.0.0.1:9/c", "api": "openai-completions", "apiKey": "k", "models": [{"id": "c-model"}]},
        "plain": {"baseUrl": "http://127.0.0.1:9/p", "api": "openai-completions", "apiKey": "k", "models": [{"id": "p-model"}]},
    }});
    let Some((ours, theirs)) = both_with("configured", &models).await else { return };
    let groq = &ours["running"]["groq"];
    assert_eq!(groq["baseUrl"], "http://127.0.0.1:9/groq", "{groq}");
    assert_eq!(groq["apiKeyName"], "Groq API key", "{groq}");
    assert_eq!(ours["running"]["anthropic"]["baseUrl"], "http://127.0.0.1:9/ext", "{ours}");
    assert_eq!(ours["names"], json!(["My Groq", "Anthropic", "Custom Provider", "plain"]), "{ours}");
    assert_eq!(ours["toAuth"]["headers"], json!({"X-Codex": "x"}), "{ours}");
    let all = ours["running"]["openai"]["all"].as_array().cloned().unwrap_or_default();
    assert_eq!(all.last(), Some(&json!("chat:my-openai")), "{all:?}");
    for part in ["names", "freshNames", "toAuth", "freshToAuth", "fresh", "running"] {
        assert_eq!(ours[part], theirs[part], "{part}: {}", first_difference(&ours[part], &theirs[part]));
    }
}

/// `ctx.modelRegistry` is pi's instance: `runtime` its one own key, pi's `ModelRuntime` over the
/// session's models and credentials (its members, providers, models and auth status as pi's).
#[tokio::test]
async fn the_model_registrys_runtime_is_pis() {
    let Some(((ours, _), (theirs, _))) = both(&[], "runtime").await else { return };
    assert_eq!(ours["keys"], json!(["runtime:object"]), "{ours}");
    assert_eq!(ours["model"], "fake-model", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0: {}", first_difference(&ours, &theirs));
}

#[tokio::test]
async fn a_built_in_providers_calls_and_catalog_answer_as_pi_ais() {
    let Some(((ours, our_auth), (theirs, their_auth))) = both(&[], "calls").await else { return };
    assert_eq!(ours["stopReason"], "stop", "{ours}");
    assert_eq!(our_auth.first(), Some(&json!("Bearer call-key")), "{our_auth:?}");
    assert_eq!(ours["restored"]["has"], true, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    assert_eq!(our_auth, their_auth, "the calls' keys");
}

#[tokio::test]
async fn api_key_goes_to_the_sessions_runtime_alone_as_pis() {
    let args = ["--model", "fake/fake-model", "--api-key", "cli-key"];
    let Some(((ours, our_auth), (theirs, their_auth))) = both(&args, "apikey").await else { return };
    assert_eq!(ours["fake"]["running"], json!({"configured": true, "source": "runtime"}), "{ours}");
    assert_eq!(ours["fake"]["runningKey"], "cli-key", "{ours}");
    assert_ne!(ours["fake"]["freshAuth"]["apiKey"], "cli-key", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    assert_eq!(our_auth, their_auth, "the calls' keys: the session's, then the new runtime's");
}

#[tokio::test]
async fn api_key_goes_to_the_scoped_models_provider_as_pis() {
    let args = ["--models", "mistral/devstral-medium-latest", "--api-key", "cli-key"];
    let Some(((ours, our_auth), (theirs, their_auth))) = both(&args, "apikey").await else { return };
    assert_eq!(ours["mistral"]["running"], json!({"configured": true, "source": "runtime"}), "{ours}");
    assert_ne!(ours["fake"]["runningKey"], "cli-key", "{ours}");
    assert_eq!(ours["mistral"]["fresh"], json!({"configured": true, "source": "stored"}), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    assert_eq!(our_auth, their_auth, "the calls' keys");
}

/// One program (pi-rpc, or pi 1.6.0 when `reference`) started with `--api-key` and no model: its exit
/// code, and the line of its error output that gives pi's reason (as printed, prefix included);
/// `None` without the tools.
async fn key_without_model(reference: bool) -> Option<(Option<i32>, Option<String>)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    let args = ["--no-session", "--api-key", "cli-key"];
    let mut pi = if reference {
        let mut cmd = reference_command(&sb, &node, &cli);
        cmd.args(args).arg("--offline").env("PI_OFFLINE", "1");
        Pi::start_unchecked(cmd)
    } else {
        let mut full = vec!["--mode", "rpc"];
        full.extend_from_slice(&args);
        Pi::start_unchecked(sb.command(&full))
    };
    pi.close_stdin();
    let status = pi.wait().await;
    let reason = "--api-key requires a model to be specified via --model, --provider/--model, or --models";
    let line = pi.stderr().lines().find(|line| line.contains(reason)).map(str::to_string);
    Some((status.code(), line))
}

#[tokio::test]
async fn api_key_without_a_model_is_pis_start_up_error() {
    let Some(ours) = key_without_model(false).await else { return };
    let Some(theirs) = key_without_model(true).await else { return };
    let reason = "--api-key requires a model to be specified via --model, --provider/--model, or --models";
    assert_eq!(theirs, (Some(1), Some(format!("Error: {reason}"))), "pi 1.6.0");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A key set on `ctx.modelRegistry.runtime` is the session's, as pi's: its auth status and key,
/// and its next model request's; removed, the configured key is again.
#[tokio::test]
async fn a_key_set_on_the_registrys_runtime_is_the_sessions_as_pis() {
    let Some((ours, our_auth)) = session_key(false).await else { return };
    let Some((theirs, their_auth)) = session_key(true).await else { return };
    assert_eq!(ours[0]["registryKey"], "runtime-key", "{ours:?}");
    assert_eq!(our_auth, vec![json!("Bearer runtime-key"), json!("Bearer test-key-123")], "the requests' keys");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    assert_eq!(our_auth, their_auth, "the requests' keys");
}

/// pi's own llama.cpp provider is among the session runtime's providers, after the built-in ones,
/// and its object answers as pi's.
#[tokio::test]
async fn the_sessions_runtime_has_pis_llama_cpp_provider() {
    let Some(((ours, _), (theirs, _))) = both(&[], "llamacpp").await else { return };
    for part in ["ids", "name", "status", "registered", "running", "registry", "fresh", "freshIds"] {
        assert_eq!(ours[part], theirs[part], "{part}: {}", first_difference(&ours[part], &theirs[part]));
    }
}
