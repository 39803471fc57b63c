//! pi's `ModelRuntime` as a runtime of its own, side by side with pi 1.6.0:
//! `ModelRuntime.create()` naming no files is a new runtime over the agent
//! directory's files (not the running session's registrations, routers or
//! keys; its own keys and registrations stay in it); a provider registered
//! on a runtime is given back with every member of pi's composed provider
//! (`auth.apiKey` `login`/`check`/`resolve`, `auth.oauth`, `refreshModels*`,
//! `filter*`, …) answering as pi's; `getProviders()` in pi's order; the key
//! sources (`auth.json`, models.json's literal, `$VAR` and `!command` keys, a
//! runtime key) answered alike by a new runtime and `ctx.modelRegistry`;
//! several SDK sessions over one caller runtime, and a reload of one, leave
//! their extensions' registrations in it as pi's runtime keeps them.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::extension_sdk_runner::module_note;
use crate::extension_sdk_services::side_by_side;

const RUNTIMES: &str = r#"import { createAgentSession, DefaultResourceLoader, getAgentDir, ModelRuntime, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const brief = (m: any) => (m ? `${m.provider}/${m.id}` : null);
const model = (id: string) => ({ id, name: id.toUpperCase(), reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });
const provider = (id: string) => ({ baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "k", models: [model(id)] });
const tick = () => new Promise((r) => setTimeout(r, 50));
const home = (v: any) => (v === undefined ? null : JSON.parse(JSON.stringify(v ?? null).split(process.env.HOME ?? "\u0000").join("<home>")));
const settled = async (f: () => any) => { try { return home(await f()); } catch (e: any) { return { error: home(e.message) }; } };
const user = [{ role: "user", content: "hi", timestamp: 1 }];

export default function (pi: ExtensionAPI) {
  pi.registerProvider("sessprov", provider("s1") as any);
  pi.registerVirtualModel({ provider: "main-router", id: "mine", name: "Mine", route: (_r: any, rctx: any) => ({ model: rctx.modelRegistry.find("fake", "fake-model"), thinkingLevel: "off" }) } as any);

  // ModelRuntime.create() naming no files: a new runtime over the agent directory's files.
  pi.registerCommand("fresh", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const out: any = {
        sessionProvider: brief(rt.getModel("sessprov", "s1")),
        running: brief(ctx.modelRegistry.find("sessprov", "s1")),
        fake: brief(rt.getModel("fake", "fake-model")),
        registered: rt.getRegisteredProviderIds(),
        routed: await settled(async () => brief((await rt.resolveModel(rt.getModel("main-router", "mine") ?? { provider: "main-router", id: "mine" }, user, { reason: "user", thinkingLevel: "off" })).model)),
        sessionStatus: rt.getProviderAuthStatus("sessprov"),
      };
      await rt.setRuntimeApiKey("mistral", "rt-key");
      out.keys = [rt.getProviderAuthStatus("mistral"), ctx.modelRegistry.getProviderAuthStatus("mistral"), (await ModelRuntime.create()).getProviderAuthStatus("mistral")];
      rt.registerProvider("rtonly", provider("r1"));
      await tick();
      out.own = [brief(rt.getModel("rtonly", "r1")), brief((await ModelRuntime.create()).getModel("rtonly", "r1")), brief(ctx.modelRegistry.find("rtonly", "r1")), rt.getRegisteredProviderIds()];
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // A provider registered on a runtime: pi's composed provider, member by member.
  pi.registerCommand("members", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const shape = (o: any) => (o ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v])) : null);
      const authCtx = { env: async (name: string) => process.env[name] || undefined, fileExists: async () => false };
      const describe = async (id: string) => {
        const p = rt.getProvider(id);
        if (!p) return null;
        const apiKey = p.auth?.apiKey;
        return {
          shape: shape(p), auth: shape(p.auth), apiKey: shape(apiKey), oauth: shape(p.auth?.oauth),
          name: p.name, baseUrl: p.baseUrl ?? null, oauthName: p.auth?.oauth?.name ?? null,
          check: apiKey ? await settled(() => apiKey.check({ ctx: authCtx })) : null,
          stored: apiKey ? await settled(() => apiKey.check({ ctx: authCtx, credential: { type: "api_key", key: "x" } })) : null,
          resolve: apiKey ? await settled(() => apiKey.resolve({ ctx: authCtx })) : null,
          storedKey: apiKey ? await settled(() => apiKey.resolve({ ctx: authCtx, credential: { type: "api_key", key: "stored-x", env: { A: "1" } } })) : null,
          login: apiKey ? await settled(() => apiKey.login({ prompt: async (q: any) => `typed ${q.type} ${q.message}` })) : null,
          models: p.getModels().map((m: any) => m.id),
          all: p.getAllModels().map((m: any) => m.id),
          listed: rt.getProviders().some((x: any) => x.id === id),
          status: rt.getProviderAuthStatus(id),
        };
      };
      rt.registerProvider("lit", provider("l1"));
      rt.registerProvider("tmpl", { ...provider("t1"), apiKey: "$HOME", headers: { "x-who": "$HOME" } });
      rt.registerProvider("unset", { ...provider("u1"), apiKey: "$PI_RPC_UNSET_KEY" });
      rt.registerProvider("cmd", { ...provider("c1"), apiKey: "!echo cmd-key" });
      rt.registerProvider("bearer", { ...provider("b1"), authHeader: true });
      rt.registerProvider("named", { ...provider("n1"), name: "Named One" });
      rt.registerProvider("withoauth", {
        ...provider("o1"), apiKey: undefined,
        oauth: { name: "Hand OAuth", login: async () => ({ access: "a", refresh: "r", expires: 1 }), refreshToken: async (c: any) => c, getApiKey: (c: any) => c.access },
      });
      await tick();
      const ids = ["lit", "tmpl", "unset", "cmd", "bearer", "named", "withoauth"];
      const out: any = {};
      for (const id of ids) out[id] = await describe(id);
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // A registration's refreshModels: run offline by the runtime after registration and at refresh(), its models published.
  pi.registerCommand("refresh", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const seen: any[] = [];
      rt.registerProvider("refreshing", { ...provider("f1"), refreshModels: async (c: any) => {
        seen.push({ keys: Object.keys(c).sort(), allowNetwork: c.allowNetwork, credential: c.credential ?? null, stored: c.stored ?? null, baseUrl: c.baseUrl ?? null });
        return [model("f2")];
      } });
      const out: any = { registered: rt.getModels("refreshing").map((m: any) => m.id) };
      await tick();
      out.refreshed = rt.getModels("refreshing").map((m: any) => m.id);
      out.first = seen[0] ?? null;
      await rt.refresh();
      out.afterRefresh = rt.getModels("refreshing").map((m: any) => m.id);
      const p = rt.getProvider("refreshing");
      const published: any[] = [];
      await p.refreshModels({ signal: new AbortController().signal, allowNetwork: false, publish: async (x: any) => { published.push(Object.keys(x)); x.update?.(); return true; } });
      out.manual = { models: p.getModels().map((m: any) => m.id), published };
      out.called = seen.length > 0;
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // getProviders(): pi's order, before and after registrations of each kind.
  pi.registerCommand("order", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      // TypeSafe (a built-in provider of classifier models only) is not among pi-rpc's providers.
      const ids = () => rt.getProviders().map((p: any) => p.id).filter((id: string) => id !== "typesafe");
      const before = ids();
      rt.registerVirtualModel({ provider: "avirt", id: "v", name: "V", route: () => ({ model: rt.getModel("fake", "fake-model"), thinkingLevel: "off" }) });
      rt.registerProvider("zcfg", provider("z1"));
      rt.registerProvider("acfg", provider("a1"));
      rt.registerProvider("anthropic", { baseUrl: "http://127.0.0.1:9" });
      await tick();
      const after = ids();
      rt.unregisterProvider("zcfg");
      await tick();
      ctx.ui.notify(JSON.stringify({ before, after, unregistered: ids().slice(-4) }), "info");
    },
  });

  // Where a key comes from: auth.json, models.json's literal, `$VAR` and `!command` keys, a runtime key.
  pi.registerCommand("keys", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      await rt.setRuntimeApiKey("mistral", "rt-key");
      const ids = ["fake", "jsonenv", "jsoncmd", "groq", "anthropic", "mistral", "nothere"];
      const out: any = {};
      for (const id of ids) {
        out[id] = {
          fresh: rt.getProviderAuthStatus(id),
          freshAuth: await settled(() => rt.getAuth(id)),
          configured: rt.hasConfiguredAuth(id),
          running: ctx.modelRegistry.getProviderAuthStatus(id),
          runningKey: await settled(() => ctx.modelRegistry.getApiKeyForProvider(id)),
        };
      }
      out.credentials = await rt.listCredentials();
      out.available = [...new Set((await rt.getAvailable()).map((m: any) => m.provider))].sort();
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  // Several SDK sessions over one caller runtime, and a reload of one: their extensions' registrations stay in it.
  pi.registerCommand("sessions", {
    handler: async (_args, ctx) => {
      const given: any = await ModelRuntime.create();
      let loads = 0;
      const ext = (sub: ExtensionAPI) => {
        loads += 1;
        sub.registerProvider(`gen${loads}`, provider(`g${loads}`) as any);
        sub.registerProvider("shared", (loads === 1 ? provider("s1") : { baseUrl: "http://127.0.0.1:9/v1", models: [{ ...model(`s${loads}`), api: "openai-completions" }] }) as any);
        sub.registerVirtualModel({ provider: "vgen", id: `v${loads}`, name: "V", route: (_r: any, rctx: any) => ({ model: rctx.modelRegistry.find("fake", "fake-model"), thinkingLevel: "off" }) } as any);
      };
      const settingsManager = SettingsManager.inMemory({});
      const loader = async () => {
        const rl = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true, extensionFactories: [ext] } as any);
        await rl.reload();
        return rl;
      };
      const look = () => ({
        listed: given.getModels().map(brief).filter((id: string) => /^(gen\d|shared|vgen)\//.test(id)).sort(),
        shared: { status: given.getProviderAuthStatus("shared"), models: given.getModels("shared").map((m: any) => m.id) },
      });
      const make = async () => {
        const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, modelRuntime: given, resourceLoader: await loader() } as any);
        await session.bindExtensions({});
        return session;
      };
      const first = await make();
      const out: any = { first: look() };
      const second = await make();
      out.second = look();
      await first.reload();
      await tick();
      out.reloaded = look();
      first.dispose();
      second.dispose();
      out.disposed = look();
      out.routed = await settled(async () => brief((await given.resolveModel(given.getModel("vgen", "v1"), user, { reason: "direct", thinkingLevel: "off" })).model));
      out.loads = loads;
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// `/<command>`'s note; the agent directory also holds a stored key and models.json providers with a `$VAR` and a `!command` key.
async fn runtimes_note(reference: bool, command: String) -> Option<Value> {
    let setup = |sb: &crate::harness::Sandbox| {
        let path = sb.agent_dir.path().join("models.json");
        let mut models: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_else(|| json!({"providers": {}}));
        let custom = |id: &str, key: &str| {
            json!({"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": key,
                   "models": [{"id": format!("{id}-1"), "contextWindow": 1000}]})
        };
        models["providers"]["jsonenv"] = custom("jsonenv", "$HOME");
        models["providers"]["jsoncmd"] = custom("jsoncmd", "!echo cmd-key");
        std::fs::write(&path, models.to_string()).expect("write models.json");
        let auth = json!({"groq": {"type": "api_key", "key": "stored-groq"}});
        std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("write auth.json");
    };
    module_note(reference, ("runtimes.ts", RUNTIMES), &[], &setup, &command).await
}

#[tokio::test]
async fn model_runtime_create_is_a_runtime_of_its_own_as_pis() {
    let Some((ours, theirs)) = side_by_side(runtimes_note, "fresh").await else { return };
    assert_eq!(ours["sessionProvider"], Value::Null, "the running session's registration: {ours}");
    assert_eq!(ours["running"], "sessprov/s1", "{ours}");
    assert_eq!(ours["fake"], "fake/fake-model", "{ours}");
    assert_eq!(ours["routed"], json!({"error": "Virtual model main-router/mine is not registered."}), "{ours}");
    assert_eq!(ours["keys"][0], json!({"configured": true, "source": "runtime"}), "{ours}");
    assert_eq!(ours["keys"][1], json!({"configured": false}), "{ours}");
    assert_eq!(ours["own"], json!(["rtonly/r1", null, null, ["rtonly"]]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_registered_providers_object_has_pis_members() {
    let Some((ours, theirs)) = side_by_side(runtimes_note, "members").await else { return };
    let lit = &ours["lit"];
    for member in ["refreshModels", "refreshModelsAuth", "filterModels", "filterAllModels", "headers", "getAllModels"] {
        assert!(lit["shape"].get(member).is_some(), "{member}: {lit}");
    }
    assert_eq!(
        lit["apiKey"],
        json!({"name": "string", "login": "function", "check": "function", "resolve": "function"}),
        "{lit}"
    );
    assert_eq!(lit["check"], json!({"type": "api_key", "source": "configured API key"}), "{lit}");
    assert_eq!(ours["withoauth"]["auth"], json!({"oauth": "object"}), "{ours}");
    assert_eq!(ours["cmd"]["resolve"]["auth"]["apiKey"], "cmd-key", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_registrations_refresh_models_runs_offline_as_pis() {
    let Some((ours, theirs)) = side_by_side(runtimes_note, "refresh").await else { return };
    assert_eq!(ours["registered"], json!(["f1"]), "{ours}");
    assert_eq!(ours["refreshed"], json!(["f2"]), "the offline refresh after registering: {ours}");
    assert_eq!(ours["first"]["allowNetwork"], false, "{ours}");
    assert_eq!(ours["manual"], json!({"models": ["f2"], "published": [["update"]]}), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn get_providers_lists_in_pis_order() {
    let Some((ours, theirs)) = side_by_side(runtimes_note, "order").await else { return };
    let after = ours["after"].as_array().cloned().unwrap_or_default();
    assert_eq!(after.first(), Some(&json!("amazon-bedrock")), "{ours}");
    assert_eq!(
        after.iter().rev().take(3).collect::<Vec<_>>(),
        [&json!("avirt"), &json!("acfg"), &json!("zcfg")],
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn key_sources_answer_as_pis() {
    let Some((ours, theirs)) = side_by_side(runtimes_note, "keys").await else { return };
    assert_eq!(ours["groq"]["fresh"], json!({"configured": true, "source": "stored"}), "{ours}");
    assert_eq!(ours["mistral"]["fresh"], json!({"configured": true, "source": "runtime"}), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sessions_over_one_runtime_leave_their_registrations_in_it_as_pis() {
    let Some((ours, theirs)) = side_by_side(runtimes_note, "sessions").await else { return };
    assert_eq!(ours["loads"], 3, "{ours}");
    let listed = &ours["disposed"]["listed"];
    assert!(
        listed.as_array().is_some_and(|l| l.contains(&json!("gen1/g1")) && l.contains(&json!("gen3/g3"))),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
