//! pi's `AgentSession.modelRuntime` and `ModelRuntime.resolveModel`
//! (virtual-model routing by hand), side by side with pi 1.6.0: an SDK
//! session's runtime (its own, and a caller's given back as it is) lists and
//! routes the virtual models of the session's extensions, one registered by
//! hand on it, and answers pi's errors for a physical model, an unknown id,
//! a router naming a virtual model or a model without credentials, and a
//! router that throws. A new runtime (`ModelRuntime.create()`) does not know
//! the running session's virtual models, as pi's. Registrations go where pi puts
//! them: a session's extensions' into the caller's runtime it was made with
//! (listed from the session's making on, and after `dispose()`), one made by
//! hand on a runtime into that runtime only; the running session's catalog
//! keeps its objects until it changes. Helpers of extension_sdk_runner.rs.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::extension_host::write_module;
use crate::extension_sdk_runner::module_note;
use crate::extension_sdk_services::side_by_side;

const SDK_RUNTIME: &str = r#"import { createAgentSession, DefaultResourceLoader, getAgentDir, ModelRuntime, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const brief = (m: any) => (m ? `${m.provider}/${m.id}` : null);
const resolved = async (f: () => Promise<any>) => {
  try {
    const r = await f();
    return { model: brief(r.model), physical: r.model?.api !== "pi-virtual", thinkingLevel: r.thinkingLevel ?? null, state: r.state ?? null, keys: Object.keys(r).sort() };
  } catch (e: any) {
    return { error: e.message };
  }
};
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const assistant = (model: string, stopReason: string, extra: any = {}) =>
  ({ role: "assistant", content: [{ type: "text", text: "yo" }], api: "openai-completions", provider: "fake", model, usage, stopReason, timestamp: 2, ...extra });

export default function (pi: ExtensionAPI) {
  pi.registerVirtualModel({
    provider: "main-router", id: "mine", name: "Mine",
    route: (request: any, rctx: any) => ({ model: rctx.modelRegistry.find("fake", "fake-other"), thinkingLevel: "off", state: { from: "mine", was: request.state ?? null } }),
  } as any);

  pi.registerCommand("runtime", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const routerExt = (sub: ExtensionAPI) => {
        sub.registerVirtualModel({
          provider: "router", id: "auto", name: "Auto", thinkingLevels: ["low", "high"],
          route: (request: any, rctx: any) => {
            seen.push(["auto", request.reason, request.thinkingLevel, request.state ?? null,
              request.previous ? [brief(request.previous.model), request.previous.thinkingLevel ?? null] : null,
              request.failed ? [brief(request.failed.model), request.failed.message.stopReason, request.failed.message.errorMessage] : null,
              request.messages.map((m: any) => m.role).join(","), typeof rctx?.modelRegistry?.find, brief(request.model)]);
            const id = request.thinkingLevel === "high" ? "fake-other" : "fake-model";
            return { model: rctx.modelRegistry.find("fake", id), thinkingLevel: "high", state: { n: (request.state?.n ?? 0) + 1 } };
          },
        } as any);
        sub.registerVirtualModel({ provider: "router", id: "loop", name: "Loop", route: (_r: any, rctx: any) => ({ model: rctx.modelRegistry.find("router", "auto"), thinkingLevel: "off" }) } as any);
        sub.registerVirtualModel({ provider: "router", id: "keyless", name: "Keyless", route: (_r: any, rctx: any) => ({ model: rctx.modelRegistry.find("anthropic", "claude-sonnet-4-5"), thinkingLevel: "off" }) } as any);
        sub.registerVirtualModel({ provider: "router", id: "broken", name: "Broken", route: () => { throw new Error("router broke"); } } as any);
      };
      const otherExt = (sub: ExtensionAPI) => {
        sub.registerVirtualModel({
          provider: "other", id: "pick", name: "Pick",
          route: (request: any, rctx: any) => {
            seen.push(["pick", request.reason, request.thinkingLevel]);
            return { model: rctx.modelRegistry.find("fake", "fake-model") };
          },
        } as any);
      };
      const settingsManager = SettingsManager.inMemory({});
      const loader = async (factories: any[]) => {
        const rl = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true, extensionFactories: factories } as any);
        await rl.reload();
        return rl;
      };
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader: await loader([routerExt, otherExt]) } as any);
      await session.bindExtensions({});
      const rt: any = (session as any).modelRuntime;
      const auto = rt.getModel("router", "auto");
      const fake = rt.getModel("fake", "fake-model");
      const user = [{ role: "user", content: "hi", timestamp: 1 }];
      const answered = [...user, assistant("fake-other", "stop", { thinkingLevel: "low" }), assistant("fake-model", "error"), { role: "user", content: "more", timestamp: 3 }];
      const failed = assistant("fake-other", "error", { errorMessage: "overloaded", thinkingLevel: "high" });
      const ask = (model: any, messages: any[], options: any) => resolved(() => rt.resolveModel(model, messages, options));
      const own = {
        isRuntime: rt instanceof ModelRuntime,
        stable: (session as any).modelRuntime === rt,
        listed: [brief(auto), auto?.api, brief(rt.getModel("other", "pick")), rt.getPhysicalModel("router", "auto") ?? null, rt.hasConfiguredAuth("router")],
        user: await ask(auto, user, { reason: "user", thinkingLevel: "high" }),
        continued: await ask(auto, answered, { reason: "continuation", thinkingLevel: "low", state: { n: 5 } }),
        retry: await ask(auto, user, { reason: "retry", thinkingLevel: "low", failed }),
        other: await ask(rt.getModel("other", "pick"), user, { reason: "direct", thinkingLevel: "off" }),
        physical: await ask(fake, user, { reason: "user", thinkingLevel: "off" }),
        unknown: await ask({ provider: "nobody", id: "none" }, user, { reason: "user", thinkingLevel: "off" }),
        loop: await ask(rt.getModel("router", "loop"), user, { reason: "user", thinkingLevel: "off" }),
        keyless: await ask(rt.getModel("router", "keyless"), user, { reason: "user", thinkingLevel: "off" }),
        broken: await ask(rt.getModel("router", "broken"), user, { reason: "user", thinkingLevel: "off" }),
        stored: session.sessionManager.getEntries().filter((e: any) => e.type === "custom").length,
      };

      // A virtual model registered by hand on the session's runtime: its router gets no context.
      rt.registerVirtualModel({ provider: "hand", id: "made", name: "Made", route: (request: any, second: any) => {
        seen.push(["made", request.reason, second === undefined]);
        return { model: fake, thinkingLevel: "off" };
      } });
      const made = rt.getModel("hand", "made");
      const hand: any[] = [brief(made), await ask(made, user, { reason: "user", thinkingLevel: "off" })];
      for (const [provider, id] of [["fake", "fake-model"], ["", "x"]]) {
        try { rt.registerVirtualModel({ provider, id, name: "x", route: () => null }); hand.push("registered"); } catch (e: any) { hand.push(e.message); }
      }
      rt.unregisterVirtualModel("hand", "made");
      hand.push(brief(rt.getModel("hand", "made")), await ask(made, user, { reason: "user", thinkingLevel: "off" }));
      session.dispose();

      // A caller's runtime: the session keeps it, and it routes the session's extensions' virtual models.
      const given: any = await ModelRuntime.create();
      const { session: second } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, modelRuntime: given, resourceLoader: await loader([routerExt]) } as any);
      await second.bindExtensions({});
      const caller = {
        same: (second as any).modelRuntime === given,
        routed: await resolved(() => given.resolveModel(auto, user, { reason: "direct", thinkingLevel: "low" })),
        unknown: await resolved(() => given.resolveModel({ provider: "nobody", id: "none" }, user, { reason: "user", thinkingLevel: "off" })),
      };
      second.dispose();
      ctx.ui.notify(JSON.stringify({ own, hand, caller, seen }), "info");
    },
  });

  // Where registrations go: a session's extensions' into the caller's runtime, one made by hand into that runtime only.
  pi.registerCommand("registrations", {
    handler: async (_args, ctx) => {
      const model = (id: string) => ({ id, name: id.toUpperCase(), reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 });
      const provider = (id: string) => ({ baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "k", models: [model(id)] });
      const toFake = (_r: any, rctx: any) => ({ model: rctx.modelRegistry.find("fake", "fake-model"), thinkingLevel: "off" });
      const registering = (sub: ExtensionAPI) => {
        sub.registerProvider("subprov", provider("p1") as any);
        sub.registerVirtualModel({ provider: "subrouter", id: "pick", name: "Pick", route: toFake } as any);
        sub.on("session_start", () => sub.registerVirtualModel({ provider: "subrouter", id: "late", name: "Late", route: toFake } as any));
      };
      const settingsManager = SettingsManager.inMemory({});
      const loader = async (factories: any[]) => {
        const rl = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true, extensionFactories: factories } as any);
        await rl.reload();
        return rl;
      };
      // pi's runtime answers for a provider registered on it: its Provider object, its auth status and its key.
      const seen = async (rt: any, id: string) => {
        const p = rt.getProvider(id);
        const auth = await rt.getAuth(id).then((a: any) => a ?? null, (e: any) => ({ error: e.message }));
        const status = rt.getProviderAuthStatus(id);
        if (!p) return { id, status, auth };
        const models = p.getModels().map((m: any) => m.id);
        return { id: p.id, name: p.name, baseUrl: p.baseUrl ?? null, auth: Object.keys(p.auth ?? {}), models, listed: rt.getProviders().some((x: any) => x.id === id), status, key: auth };
      };
      const ids = ["subprov/p1", "subrouter/pick", "subrouter/late", "handprov/h1", "rtprov/r1"];
      const mine = (list: any[]) => list.map(brief).filter((id: any) => ids.includes(id)).sort();
      const look = async (rt: any) => ({
        found: ids.map((id) => brief(rt.getModel(...id.split("/")))),
        listed: mine(rt.getModels()),
        available: mine(await rt.getAvailable()),
        registered: rt.getRegisteredProviderIds().filter((id: string) => ids.some((m) => m.startsWith(`${id}/`))).sort(),
        providers: await Promise.all(["subprov", "handprov", "rtprov"].map(async (id) => seen(rt, id))),
      });

      // A caller's runtime: the session's extensions register into it when the session is made; they stay after dispose.
      const given: any = await ModelRuntime.create();
      const caller: any = { before: await look(given) };
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, modelRuntime: given, resourceLoader: await loader([registering]) } as any);
      caller.made = await look(given);
      await session.bindExtensions({});
      caller.bound = await look(given);
      caller.routed = await resolved(() => given.resolveModel(given.getModel("subrouter", "late"), [{ role: "user", content: "hi", timestamp: 1 }], { reason: "direct", thinkingLevel: "off" }));
      session.dispose();
      caller.disposed = await look(given);
      caller.fresh = await look(await ModelRuntime.create());
      caller.running = ids.map((id) => brief(ctx.modelRegistry.find(...id.split("/"))));

      // By hand: on a session's own runtime and on ModelRuntime.create()'s, each kept in that runtime.
      const { session: plain } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader: await loader([]) } as any);
      const own: any = (plain as any).modelRuntime;
      const made: any = await ModelRuntime.create();
      own.registerProvider("handprov", provider("h1"));
      made.registerProvider("rtprov", provider("r1"));
      const where = async () => ({
        session: await look(own),
        created: await look(made),
        fresh: await look(await ModelRuntime.create()),
        running: ids.map((id) => brief(ctx.modelRegistry.find(...id.split("/")))),
      });
      const hand: any = { registered: await where() };
      // Without a key of its own, with one from an unset variable, and with a display name.
      made.registerProvider("keyless", { ...provider("k1"), apiKey: undefined });
      made.registerProvider("unsetkey", { ...provider("u1"), apiKey: "$PI_RPC_UNSET_TEST_KEY" });
      made.registerProvider("named", { ...provider("n1"), name: "Named One" });
      hand.others = await Promise.all(["keyless", "unsetkey", "named"].map((id) => seen(made, id)));
      own.unregisterProvider("handprov");
      made.unregisterProvider("rtprov");
      hand.unregistered = await where();
      plain.dispose();

      // The running session's catalog as an extension lists it: the same objects until it changes.
      const all = () => ctx.modelRegistry.getAll();
      const listing: any = { same: all()[0] === all()[0], count: all().length };
      pi.registerProvider("cached", provider("c1") as any);
      listing.registered = [all().length - listing.count, brief(all().find((m: any) => m.provider === "cached"))];
      pi.unregisterProvider("cached");
      listing.unregistered = [all().length - listing.count, brief(all().find((m: any) => m.provider === "cached") ?? null)];
      delete listing.count;
      ctx.ui.notify(JSON.stringify({ caller, hand, listing }), "info");
    },
  });

  // A new runtime: neither this extension's virtual model nor another extension's is in it.
  pi.registerCommand("session-runtime", {
    handler: async (_args, ctx) => {
      const rt: any = await ModelRuntime.create();
      const user = [{ role: "user", content: "hi", timestamp: 1 }];
      const ask = (provider: string, id: string, options: any) => resolved(() => rt.resolveModel(rt.getModel(provider, id) ?? { provider, id }, user, options));
      ctx.ui.notify(JSON.stringify({
        mine: await ask("main-router", "mine", { reason: "user", thinkingLevel: "off", state: { k: 1 } }),
        theirs: await ask("elsewhere", "far", { reason: "continuation", thinkingLevel: "medium", state: { k: 2 } }),
        theirsBroken: await ask("elsewhere", "broken", { reason: "user", thinkingLevel: "off" }),
        physical: await ask("fake", "fake-model", { reason: "user", thinkingLevel: "off" }),
        unknown: await ask("nobody", "none", { reason: "user", thinkingLevel: "off" }),
        stored: ctx.sessionManager.getEntries().filter((e: any) => e.type === "custom").length,
      }), "info");
    },
  });
}
"#;

/// Another extension of the running session (its own process in pi-rpc) with virtual models.
const ELSEWHERE: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerVirtualModel({
    provider: "elsewhere", id: "far", name: "Far", thinkingLevels: ["medium"],
    route: (request: any, rctx: any) => ({
      model: rctx.modelRegistry.find("fake", "fake-model"), thinkingLevel: "high",
      state: { seen: [request.reason, request.thinkingLevel, request.state ?? null, request.messages.length, typeof rctx.sessionManager?.getBranch] },
    }),
  } as any);
  pi.registerVirtualModel({ provider: "elsewhere", id: "broken", name: "Broken", route: () => { throw new Error("far router broke"); } } as any);
}
"#;

/// `/<command>`'s note, with the second extension beside the first.
async fn runtime_note(reference: bool, command: String) -> Option<Value> {
    let setup = |sb: &crate::harness::Sandbox| {
        write_module(sb, "elsewhere.ts", ELSEWHERE);
    };
    module_note(reference, ("sdk-runtime.ts", SDK_RUNTIME), &[], &setup, &command).await
}

#[tokio::test]
async fn an_sdk_sessions_model_runtime_routes_its_virtual_models_as_pis() {
    let Some((ours, theirs)) = side_by_side(runtime_note, "runtime").await else { return };
    let own = &ours["own"];
    assert_eq!(own["isRuntime"], true, "{ours}");
    assert_eq!(own["listed"][0], "router/auto", "{ours}");
    assert_eq!(own["user"]["model"], "fake/fake-other", "{ours}");
    assert_eq!(own["continued"]["state"], json!({"n": 6}), "{ours}");
    assert_eq!(own["other"]["model"], "fake/fake-model", "another extension's router: {ours}");
    assert_eq!(own["unknown"]["error"], "Virtual model nobody/none is not registered.", "{ours}");
    assert_eq!(own["broken"]["error"], "router broke", "{ours}");
    assert_eq!(ours["caller"]["same"], true, "{ours}");
    assert_eq!(ours["caller"]["routed"]["model"], "fake/fake-model", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn registrations_go_into_the_runtime_they_are_made_on_as_in_pi() {
    let Some((ours, theirs)) = side_by_side(runtime_note, "registrations").await else { return };
    let listed = json!(["subprov/p1", "subrouter/late", "subrouter/pick"]);
    // A caller's runtime lists the session's extensions' registrations once the session is made, and after dispose.
    let caller = &ours["caller"];
    assert_eq!(caller["before"]["listed"], json!([]), "{ours}");
    assert_eq!(caller["bound"]["listed"], listed, "{ours}");
    assert_eq!(caller["disposed"]["listed"], listed, "{ours}");
    assert_eq!(caller["routed"]["model"], "fake/fake-model", "{ours}");
    assert_eq!(caller["fresh"]["listed"], json!([]), "{ours}");
    // One registered by hand stays in its runtime: not in the running session, not in another runtime.
    let registered = &ours["hand"]["registered"];
    assert_eq!(registered["session"]["listed"], json!(["handprov/h1"]), "{ours}");
    assert_eq!(registered["created"]["listed"], json!(["rtprov/r1"]), "{ours}");
    assert_eq!(registered["fresh"]["listed"], json!([]), "{ours}");
    assert_eq!(registered["running"], json!([null, null, null, null, null]), "{ours}");
    assert_eq!(ours["hand"]["unregistered"]["created"]["listed"], json!([]), "{ours}");
    // pi's runtime answers for a provider registered on it from the registration.
    let key = json!({"auth": {"apiKey": "k"}, "source": "configured API key"});
    let fallback = json!({"configured": true, "source": "fallback"});
    assert_eq!(
        registered["created"]["providers"][2],
        json!({"id": "rtprov", "name": "rtprov", "baseUrl": "http://127.0.0.1:9/v1", "auth": ["apiKey"], "models": ["r1"],
               "listed": true, "status": fallback, "key": key}),
        "{ours}"
    );
    assert_eq!(caller["bound"]["providers"][0]["status"], fallback, "{ours}");
    assert_eq!(ours["hand"]["others"][0]["status"], json!({"configured": false}), "{ours}");
    assert_eq!(ours["hand"]["others"][2]["name"], "Named One", "{ours}");
    // The running session's catalog: the same objects until a registration changes it.
    assert_eq!(
        ours["listing"],
        json!({"same": true, "registered": [1, "cached/c1"], "unregistered": [0, null]}),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_new_runtime_does_not_route_the_running_sessions_virtual_models_as_pis() {
    let Some((ours, theirs)) = side_by_side(runtime_note, "session-runtime").await else { return };
    // `ModelRuntime.create()` is a runtime of its own: the running session's virtual models are not in it.
    assert_eq!(ours["mine"], json!({"error": "Virtual model main-router/mine is not registered."}), "{ours}");
    assert_eq!(ours["theirs"], json!({"error": "Virtual model elsewhere/far is not registered."}), "{ours}");
    assert_eq!(ours["physical"], json!({"error": "Virtual model fake/fake-model is not registered."}), "{ours}");
    // Routing by hand stores no router state on the branch.
    assert_eq!(ours["stored"], 0, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
