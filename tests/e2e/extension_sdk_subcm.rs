//! codemode inside an SDK session, side by side with pi 1.6.0, the parts
//! that follow the sub-session's state: a script's `models.*` answered from
//! the sub-session's model registry (its own registered provider and virtual
//! model listed, a TypeSafe classifier called at the fake server with the
//! key of `auth.json`), and with `mode: "only"` the `direct` tools' declarations
//! left out of the requests and of the prompt's tool list, the loadout
//! applied again when tools are registered later (one of `codemode`
//! exposure, which activates nothing), and the classifier and image models a
//! sub-session extension's `registerProvider` gives (config form and native
//! provider) listed by a script and called through their implementations. An extension command notifies a JSON
//! summary (helpers of extension_sdk_runner.rs); pi-rpc's is compared with
//! pi 1.6.0's whole.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::{module_note, start_module};
use crate::extension_sdk_services::{notified_text, side_by_side};
use crate::extension_sdk_subdesc::{declared_per_request, listing};
use crate::harness::Sandbox;

const SDK_SUBCM: &str = r#"import {
  createAgentSession, createCodemodeExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const text = (t: string) => ({ content: [{ type: "text", text: t }], details: {} });
const withoutTimes = (value: any): any => JSON.parse(JSON.stringify(value ?? null, (k, v) => (k === "durationMs" ? undefined : v)));
const stable = (t: string) => t.replace(/Wall time [0-9.]+ seconds/g, "Wall time N seconds");

async function subSession(ctx: any, factories: any[]) {
  const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: factories } as any);
  await resourceLoader.reload();
  const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
  const errors: string[] = [];
  await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
  return { session, errors };
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("scriptmodels", {
    handler: async (_args, ctx) => {
      const own = (sub: ExtensionAPI) => {
        sub.registerProvider("sub-config", {
          baseUrl: ctx.model!.baseUrl, apiKey: "sub-config-key", api: "openai-completions",
          models: [{ id: "sub-model", name: "Sub model", reasoning: false, input: ["text"], cost: ZERO, contextWindow: 8000, maxTokens: 1000 }],
        } as any);
        sub.registerVirtualModel({
          provider: "sub-virtual", id: "auto", name: "Auto",
          route: (_request: any, rctx: any) => ({ model: rctx.modelRegistry.find("sub-config", "sub-model"), thinkingLevel: "off" }),
        } as any);
      };
      const { session, errors } = await subSession(ctx, [createCodemodeExtension(), own]);
      session.setActiveToolsByName(["codemode"]);
      await session.prompt("ask the models");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        text: m.content.map((c: any) => stable(c.text ?? c.type)),
        isError: m.isError,
        calls: withoutTimes(m.details?.calls),
      }));
      ctx.ui.notify(JSON.stringify({ errors, results }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("typedmodels", {
    handler: async (_args, ctx) => {
      const seen = (options: any, model: any) => `${options?.apiKey}|${model.baseUrl}|${JSON.stringify(options?.headers ?? null)}`;
      let subCtx: any;
      const own = (sub: ExtensionAPI) => {
        sub.on("session_start", (_event: any, c: any) => { subCtx = c; });
        sub.registerProvider("sub-typed", {
          baseUrl: "http://127.0.0.1:9/typed", apiKey: "typed-key", headers: { "x-sub": "one" },
          models: [
            { id: "sorter", name: "Sorter", type: "classifier", api: "sub-classify", input: ["text"], cost: ZERO, contextWindow: 4000 },
            { id: "mute", name: "Mute", type: "classifier", api: "sub-none", input: ["text"], cost: ZERO, contextWindow: 4000 },
            { id: "painter", name: "Painter", type: "image", api: "sub-images", baseUrl: "http://127.0.0.1:9/paint", input: ["text"], output: ["image"], cost: ZERO },
          ],
          classifiers: { "sub-classify": { classify: async (model: any, context: any, options: any) => ({
            api: model.api, provider: model.provider, model: model.id, stopReason: "stop", timestamp: 1,
            answers: { spam: { type: "bool", probability: 0.75, confidence: 0.5 } }, seen: seen(options, model), questions: Object.keys(context.questions),
          }) } },
          images: { "sub-images": { generateImages: async (model: any, context: any, options: any) => ({
            api: model.api, provider: model.provider, model: model.id, stopReason: "stop", timestamp: 1,
            output: [{ type: "image", data: "AAAA", mimeType: "image/png" }], seen: `${seen(options, model)}|${context.input[0].text}`,
          }) } },
        } as any);
        const judge = { id: "judge", name: "Judge", type: "classifier", api: "sub-judge", provider: "sub-native", baseUrl: "http://127.0.0.1:9/native", input: ["text"], cost: ZERO, contextWindow: 1000 };
        sub.registerProvider({
          id: "sub-native", name: "Sub Native", baseUrl: "http://127.0.0.1:9/native",
          auth: { apiKey: { name: "API key", resolve: async () => ({ auth: { apiKey: "native-key" }, source: "test" }) } },
          getModels: () => [], getAllModels: () => [judge],
          stream: () => { throw new Error("no chat"); }, streamSimple: () => { throw new Error("no chat"); },
          classify: async (model: any, _context: any, options: any) => ({
            api: model.api, provider: model.provider, model: model.id, stopReason: "stop", timestamp: 1,
            answers: { spam: { type: "bool", probability: 0.25, confidence: 1 } }, seen: seen(options, model),
          }),
        } as any);
      };
      const { session, errors } = await subSession(ctx, [createCodemodeExtension(), own]);
      session.setActiveToolsByName(["codemode"]);
      await session.prompt("ask the typed models");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => ({
        text: m.content.map((c: any) => stable(c.text ?? c.type)),
        isError: m.isError,
        calls: withoutTimes(m.details?.calls),
      }));
      // The sub-session's extensions see the same registry.
      const registry: any = subCtx?.modelRegistry;
      const listed = registry ? ["classifier", "image"].map((type) => registry.getModelsOfType(type).filter((m: any) => m.provider.startsWith("sub-")).map((m: any) => `${m.provider}/${m.id}`)) : null;
      ctx.ui.notify(JSON.stringify({ errors, results, listed }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("hidden", {
    handler: async (_args, ctx) => {
      let later: ExtensionAPI | undefined;
      const own = (sub: ExtensionAPI) => {
        later = sub;
        sub.registerTool({ name: "shout", label: "shout", description: "Shouts a text", promptSnippet: "Shout a text",
          parameters: Type.Object({ text: Type.String() }), execute: async () => text("HI") } as any);
        sub.registerTool({ name: "lookup", label: "lookup", description: "Looks a word up", exposure: "codemode",
          parameters: Type.Object({ word: Type.String() }), execute: async () => text("a meaning") } as any);
      };
      const { session, errors } = await subSession(ctx, [createCodemodeExtension({ mode: "only" } as any), own]);
      session.setActiveToolsByName(["read", "shout", "codemode"]);
      await session.prompt("first");
      // Registered after start: a direct tool (active at once) and then a codemode one (activates nothing).
      later!.registerTool({ name: "late_direct", label: "late_direct", description: "Came late", promptSnippet: "Arrive late",
        parameters: Type.Object({}), execute: async () => text("late") } as any);
      later!.registerTool({ name: "late_code", label: "late_code", description: "Only for scripts", exposure: "codemode",
        parameters: Type.Object({}), execute: async () => text("code") } as any);
      await session.prompt("second");
      // The prompt's tool list names only the tools the requests declare.
      const tools = session.systemPrompt.match(/<tools>[\s\S]*?<\/tools>/)?.[0] ?? "";
      const listed = [...tools.matchAll(/^- (\w+):/gm)].map((m) => m[1]);
      ctx.ui.notify(JSON.stringify({ errors, active: session.getActiveToolNames(), listed }), "info");
      session.dispose();
    },
  });
}
"#;

/// The script: the sub-session's registry listed and asked, a TypeSafe classifier called, a wrong type refused.
const SCRIPT: &str = r#"const pick = (m) => (m ? [m.provider, m.id, m.api, m.type ?? null] : null);
const out = {};
out.chat = (await models.getModelsOfType("chat", "sub-config")).map(pick);
out.availableChat = (await models.getAvailableOfType("chat", "sub-config")).map(pick);
out.virtual = pick(await models.getModelOfType("chat", "sub-virtual", "auto"));
out.running = pick(await models.getModelOfType("chat", "fake", "fake-model"));
out.classifiers = (await models.getAvailableOfType("classifier", "typesafe")).map(pick);
const jev = await models.getModelOfType("classifier", "typesafe", "jev-latest");
const questions = { spam: { type: "bool", instructions: "Spam?", criteria: { true: "an ad", false: "not an ad" } } };
const { timestamp, ...classified } = await models.classify(jev, { state: { text: "BUY NOW" }, questions });
out.classified = classified;
const own = await models.getModelOfType("chat", "sub-config", "sub-model");
try { await models.classify(own, { state: {}, questions }); } catch (e) { out.wrongType = e.message; }
return out;"#;

/// The script over the sub-session's registered classifier and image models: listed by type, called, one without an implementation.
const TYPED_SCRIPT: &str = r#"const pick = (m) => (m ? [m.provider, m.id, m.api, m.type ?? null, m.baseUrl ?? null] : null);
const out = {};
out.classifiers = (await models.getModelsOfType("classifier", "sub-typed")).map(pick);
out.images = (await models.getModelsOfType("image", "sub-typed")).map(pick);
out.chat = (await models.getModelsOfType("chat", "sub-typed")).map(pick);
out.available = (await models.getAvailableOfType("classifier", "sub-typed")).map(pick);
out.availableImages = (await models.getAvailableOfType("image")).filter((m) => m.provider.startsWith("sub-")).map(pick);
out.native = (await models.getAvailableOfType("classifier", "sub-native")).map(pick);
const questions = { spam: { type: "bool", instructions: "Spam?", criteria: { true: "an ad", false: "not an ad" } } };
const strip = ({ timestamp, ...rest }) => rest;
const attempt = async (f) => { try { return strip(await f()); } catch (e) { return `threw: ${e.message}`; } };
out.classified = await attempt(async () => models.classify(await models.getModelOfType("classifier", "sub-typed", "sorter"), { state: { text: "BUY" }, questions }));
out.painted = await attempt(async () => models.generateImages(await models.getModelOfType("image", "sub-typed", "painter"), { input: [{ type: "text", text: "a fox" }] }));
out.judged = await attempt(async () => models.classify(await models.getModelOfType("classifier", "sub-native", "judge"), { state: {}, questions }));
out.mute = await attempt(async () => models.classify(await models.getModelOfType("classifier", "sub-typed", "mute"), { state: {}, questions }));
return out;"#;

/// `/typedmodels`' note: the script's output and calls.
async fn typed_models(reference: bool, command: String) -> Option<Value> {
    let replies =
        [Reply::tool_call("call_1", "codemode", &json!({"code": TYPED_SCRIPT}).to_string()), Reply::text("Done.")];
    module_note(reference, ("sdk-subcm.ts", SDK_SUBCM), &replies, &|_| {}, &command).await
}

/// TypeSafe's classifiers at the fake server, its key stored in `auth.json`.
fn typesafe_at_the_server(sb: &Sandbox) {
    let path = sb.agent_dir.path().join("models.json");
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default()).unwrap_or(json!({}));
    models["providers"]["typesafe"] = json!({"baseUrl": format!("{}/typesafe/v1", sb.server().base_url())});
    std::fs::write(&path, models.to_string()).expect("write models.json");
    let auth = json!({"typesafe": {"type": "api_key", "key": "ts-key-123"}});
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("write auth.json");
}

/// `/scriptmodels`' note with the classifier requests the server got (path, credential, body).
async fn script_models(reference: bool, command: String) -> Option<Value> {
    let replies = [Reply::tool_call("call_1", "codemode", &json!({"code": SCRIPT}).to_string()), Reply::text("Done.")];
    let setup = |sb: &Sandbox| typesafe_at_the_server(sb);
    let (mut pi, sb) = start_module(reference, ("sdk-subcm.ts", SDK_SUBCM), &replies, &setup).await?;
    let text = notified_text(&mut pi, &sb, &command).await;
    let mut note: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}"));
    let typed: Vec<Value> = sb
        .server()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/systemone"))
        .map(|r| json!([r.path, r.header("authorization"), r.body]))
        .collect();
    note["classifierRequests"] = json!(typed);
    pi.close_stdin();
    pi.wait().await;
    Some(note)
}

#[tokio::test]
async fn a_script_in_an_sdk_session_asks_its_model_registry_as_in_pi() {
    let Some((ours, theirs)) = side_by_side(script_models, "scriptmodels").await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    let output = ours["results"][0]["text"].to_string();
    assert!(!output.contains("not available"), "{ours}");
    assert!(output.contains("sub-virtual"), "the sub-session's virtual model: {ours}");
    assert!(output.contains("is a chat model, not a classifier model"), "{ours}");
    assert_eq!(ours["classifierRequests"].as_array().map(Vec::len), Some(1), "{ours}");
    assert_eq!(ours["classifierRequests"][0][1], "Bearer ts-key-123", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn codemode_only_in_an_sdk_session_hides_the_direct_declarations_and_follows_new_tools_as_in_pi() {
    let module = ("sdk-subcm.ts", SDK_SUBCM);
    let run = |reference, command: String| async move { declared_per_request(reference, module, &command).await };
    let Some((mut ours, mut theirs)) = side_by_side(run, "hidden").await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["listed"], json!(["codemode"]), "the prompt lists the declared tools only: {ours}");
    let names = |request: &Value| request.as_array().map(|t| t.iter().map(|t| t[0].clone()).collect::<Vec<_>>());
    // Both requests declare codemode only: the direct tools scripts call are hidden, late ones too.
    assert_eq!(names(&ours["requests"][0]), Some(vec![json!("codemode")]), "{ours}");
    assert_eq!(names(&ours["requests"][1]), Some(vec![json!("codemode")]), "{ours}");
    let second = ours["requests"][1][0][1].as_str().unwrap_or_default();
    for tool in ["read", "shout", "lookup", "late_direct", "late_code"] {
        assert!(listing(second).contains(&format!("### `{tool}`")), "{tool} listed: {ours}");
    }
    // Built-in tools' guidelines are pi-rpc's own words (compat/DEVIATIONS.md): the listings are compared without them.
    for note in [&mut ours, &mut theirs] {
        for request in note["requests"].as_array_mut().into_iter().flatten() {
            for tool in request.as_array_mut().into_iter().flatten() {
                let text = tool[1].as_str().unwrap_or_default();
                tool[1] = json!(text.lines().filter(|l| !l.starts_with("- ")).collect::<Vec<_>>().join("\n"));
            }
        }
    }
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_script_in_an_sdk_session_calls_the_classifier_and_image_models_its_extensions_register_as_in_pi() {
    let Some((ours, theirs)) = side_by_side(typed_models, "typedmodels").await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    let output = ours["results"][0]["text"].to_string();
    assert!(output.contains("typed-key"), "the sorter's implementation ran with the provider's key: {ours}");
    assert!(output.contains("native-key"), "the native provider's classify ran: {ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
