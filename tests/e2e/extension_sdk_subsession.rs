//! What an SDK session's own extensions are given, side by side with pi
//! 1.6.0. Their models: an extension loaded inside `createAgentSession` registers a provider of
//! the fake model server's API under another name (its own key), a provider
//! with a stream function of its own and a virtual model. The sub-session's
//! `modelRegistry` lists them (the running session's does not),
//! `session.setModel` takes each, and `session.prompt` sends its request to
//! the registered provider (the fake server, with the provider's key), runs
//! the stream function, or asks the router (`user`, the previous model, the
//! state it stored on the branch) and sends the request where it says.
//! The UI given to `bindExtensions`: its questions (`select`, `confirm`,
//! `input`) answered by it and told to the extensions as `ui_prompt_start` /
//! `ui_prompt_end`, its other members as given.
//! Each part is an extension command that notifies a JSON summary; pi-rpc's
//! is compared with pi 1.6.0's, with what the fake server received.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_services::{notified_json, side_by_side, start_module};
use crate::harness::Sandbox;

const SDK_SUBSESSION: &str = r#"import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import {
  createAgentSession, createCodemodeExtension, createMcpExtension, createToolSearchExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const textOf = (m: any) => (typeof m?.content === "string" ? m.content : (m?.content ?? []).map((c: any) => c.text ?? "").join(""));
const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

export default function (pi: ExtensionAPI) {
  pi.registerCommand("factories", {
    handler: async (_args, ctx) => {
      const extensionFactories = [createCodemodeExtension(), createToolSearchExtension(), createMcpExtension()];
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories } as any);
      await resourceLoader.reload();
      const loaded = resourceLoader.getExtensions();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model } as any);
      await session.bindExtensions({});
      const runner: any = (session as any).extensionRunner;
      await session.prompt("hi");
      ctx.ui.notify(JSON.stringify({
        paths: loaded.extensions.map((e: any) => e.path),
        errors: loaded.errors,
        all: session.getAllTools().map((t: any) => t.name),
        active: session.getActiveToolNames(),
        commands: runner.getRegisteredCommands().map((c: any) => c.invocationName),
        roles: session.messages.map((m: any) => m.role),
      }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("ui", {
    handler: async (_args, ctx) => {
      const prompts: any[] = [];
      const answers: any[] = [];
      const given: any = {
        select: async (title: string, options: string[]) => { answers.push(["select asked", title]); return options[1]; },
        confirm: async (title: string, message: string) => { answers.push(["confirm asked", title, message]); return true; },
        input: async (title: string, placeholder: string) => { answers.push(["input asked", title, placeholder]); return "typed"; },
        notify: (message: string) => { answers.push(["notify", message]); },
      };
      const factory = (sub: ExtensionAPI) => {
        sub.on("ui_prompt_start" as any, (e: any) => { prompts.push(["start", e.kind, e.title ?? null, e.reason]); });
        sub.on("ui_prompt_end" as any, (e: any) => { prompts.push(["end", e.kind, e.title ?? null, e.reason]); });
        sub.registerCommand("ask", {
          handler: async (_a: string, c: any) => {
            answers.push(["hasUI", c.hasUI, c.ui.notify === given.notify, c.ui.select === given.select]);
            answers.push(["picked", await c.ui.select("Pick", ["a", "b"])]);
            answers.push(["confirmed", await c.ui.confirm("Sure?", "really")]);
            answers.push(["typed", await c.ui.input("Name", "placeholder")]);
            c.ui.notify("hello", "info");
          },
        });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      const runner: any = (session as any).extensionRunner;
      const before = runner.hasUI();
      await session.bindExtensions({ uiContext: given, mode: "rpc" } as any);
      await session.prompt("/ask");
      await new Promise((resolve) => setTimeout(resolve, 0));
      const wrapped = runner.getUIContext() === given;
      await session.bindExtensions({ mode: "print" } as any);
      await session.prompt("/ask");
      await new Promise((resolve) => setTimeout(resolve, 0));
      ctx.ui.notify(JSON.stringify({ prompts, answers, hasUI: [before, runner.hasUI()], wrapped }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("providers", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const base = ctx.model!.baseUrl;
      const factory = (sub: ExtensionAPI) => {
        sub.registerProvider("sub-config", {
          baseUrl: base, apiKey: "sub-config-key", api: "openai-completions",
          models: [{ id: "sub-model", name: "Sub model", reasoning: false, input: ["text"], cost: ZERO, contextWindow: 8000, maxTokens: 1000 }],
        });
        sub.registerProvider("sub-stream", {
          baseUrl: "http://127.0.0.1:9", apiKey: "sub-stream-key", api: "sub-echo-api",
          models: [{ id: "echo", name: "Echo", reasoning: false, input: ["text"], cost: ZERO, contextWindow: 4000, maxTokens: 100 }],
          streamSimple: (model: any, context: any, options: any) => {
            const last = context.messages[context.messages.length - 1];
            seen.push(["stream", model.provider, model.id, model.api, options?.apiKey ?? null, last?.role, typeof context.systemPrompt]);
            const stream = createAssistantMessageEventStream();
            const text = "echo " + textOf(last);
            const message: any = {
              role: "assistant", content: [{ type: "text", text }], api: model.api, provider: model.provider, model: model.id,
              usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { ...ZERO, total: 0 } }, stopReason: "stop", timestamp: Date.now(),
            };
            queueMicrotask(() => {
              stream.push({ type: "start", partial: { ...message, content: [] } } as any);
              stream.push({ type: "text_start", contentIndex: 0, partial: message } as any);
              stream.push({ type: "text_delta", contentIndex: 0, delta: text, partial: message } as any);
              stream.push({ type: "text_end", contentIndex: 0, content: text, partial: message } as any);
              stream.push({ type: "done", reason: "stop", message } as any);
            });
            return stream;
          },
        } as any);
        sub.registerVirtualModel({
          provider: "sub-virtual", id: "auto", name: "Auto",
          route: (request: any, rctx: any) => {
            seen.push(["route", request.reason, request.model.id, request.model.api, request.previous?.model?.id ?? null, request.state ?? null, request.messages.map((m: any) => m.role).join(","), request.thinkingLevel, typeof rctx.modelRegistry.find]);
            return { model: rctx.modelRegistry.find("sub-config", "sub-model"), thinkingLevel: "high", state: "state " + seen.length };
          },
        } as any);
        sub.registerCommand("look", {
          handler: async (_a: string, c: any) => {
            const pick = (m: any) => (m ? [m.provider, m.id, m.api, m.baseUrl === base, m.contextWindow, m.name] : null);
            const ours = (list: any[]) => list.filter((m: any) => m.provider.startsWith("sub-")).map((m: any) => m.provider + "/" + m.id);
            seen.push(["look", pick(c.modelRegistry.find("sub-config", "sub-model")), pick(c.modelRegistry.find("sub-stream", "echo")),
              pick(c.modelRegistry.find("sub-virtual", "auto")), ours(c.modelRegistry.getAll()), ours(c.modelRegistry.getAvailable()),
              c.modelRegistry.find("fake", "fake-model")?.id ?? null]);
          },
        });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      await session.bindExtensions({});
      const appended: any[] = [];
      session.subscribe((e: any) => { if (e.type === "entry_appended") appended.push([e.entry.type, e.entry.customType, e.entry.data]); });
      await session.prompt("/look");
      const reg: any = (session as any).extensionRunner.createContext().modelRegistry;
      await session.setModel(reg.find("sub-config", "sub-model"));
      await session.prompt("one");
      await session.setModel(reg.find("sub-stream", "echo"));
      await session.prompt("two");
      await session.setModel(reg.find("sub-virtual", "auto"));
      await session.prompt("three");
      await session.prompt("four");
      ctx.ui.notify(JSON.stringify({
        seen,
        appended,
        model: [session.model?.provider, session.model?.id, session.thinkingLevel],
        messages: session.messages.map((m: any) => [m.role, m.provider ?? null, m.model ?? null, textOf(m), m.stopReason ?? null]),
        entries: session.sessionManager.getEntries().map((e: any) => [e.type, e.provider ?? e.customType ?? null, e.modelId ?? null]),
        topLevel: [ctx.modelRegistry.find("sub-config", "sub-model") ?? null, ctx.modelRegistry.find("sub-virtual", "auto") ?? null],
      }), "info");
      session.dispose();
    },
  });
}
"#;

/// What `/<command>` notified in one program, and the model and key of each request the fake server received.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let replies = |sb: &Sandbox| ["One.", "Three."].into_iter().for_each(|text| sb.server().push(Reply::text(text)));
    let (sb, mut pi) = start_module(reference, ("sdk-subsession.ts", SDK_SUBSESSION), None, replies).await?;
    let mut note = notified_json(&mut pi, &sb, command).await;
    let requests = sb.server().requests();
    note["offered"] = json!(
        requests
            .iter()
            .map(|r| r.body["tools"]
                .as_array()
                .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    );
    note["requests"] = json!(
        requests
            .iter()
            .map(|r| json!([r.body["model"], r.header("authorization").unwrap_or("none")]))
            .collect::<Vec<_>>()
    );
    Some(note)
}

async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn sdk_session_extensions_register_providers_and_virtual_models_as_in_pi() {
    let Some((ours, theirs)) = both("providers").await else { return };
    // The registered provider's requests reach its server with its key; the stream function answered "two";
    // the virtual model's router was asked for each prompt and the requests went where it said.
    assert_eq!(
        ours["requests"],
        json!([
            ["sub-model", "Bearer sub-config-key"],
            ["sub-model", "Bearer sub-config-key"],
            ["sub-model", "Bearer sub-config-key"]
        ]),
        "{ours}"
    );
    let messages = ours["messages"].as_array().cloned().unwrap_or_default();
    assert!(messages.contains(&json!(["assistant", "sub-stream", "echo", "echo two", "stop"])), "{ours}");
    assert!(messages.contains(&json!(["assistant", "sub-config", "sub-model", "Three.", "stop"])), "{ours}");
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(seen.iter().any(|s| s[0] == "route" && s[1] == "user" && s[4] == "echo"), "{ours}");
    assert_eq!(ours["topLevel"][0], Value::Null, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn the_ui_given_to_sdk_session_extensions_tells_them_its_questions_as_in_pi() {
    let Some((ours, theirs)) = both("ui").await else { return };
    // Each question asked the given UI and was told to the extensions as it started and when it was answered.
    assert_eq!(ours["prompts"][0], json!(["start", "select", "Pick", "ui_prompt"]), "{ours}");
    assert_eq!(ours["prompts"][1], json!(["end", "select", "Pick", "ui_prompt"]), "{ours}");
    assert_eq!(ours["prompts"].as_array().map(Vec::len), Some(12), "{ours}");
    assert!(ours["answers"].as_array().is_some_and(|a| a.contains(&json!(["picked", "b"]))), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn built_in_factories_inside_an_sdk_session_load_as_in_pi() {
    let Some((ours, theirs)) = both("factories").await else { return };
    // Loaded without errors: codemode and tool_search registered inactive, /mcp registered.
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours["commands"], json!(["mcp"]), "{ours}");
    let all = ours["all"].as_array().cloned().unwrap_or_default();
    assert!(all.contains(&json!("codemode")) && all.contains(&json!("tool_search")), "{ours}");
    assert_eq!(ours["active"], json!(["read", "bash", "edit", "write"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
