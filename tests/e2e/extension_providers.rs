//! `pi.registerProvider` end to end through the TypeScript extension host,
//! against the fake model server: a config-only provider served by pi-rpc's
//! own wire API; a provider whose stream is written in TypeScript (it calls
//! the fake server itself and streams pi-ai's events, a tool call included)
//! with usage, stop reason and the tool run coming through the core; a
//! provider that delegates to pi-ai's built-in API as pi's GitLab Duo example
//! does; a stream that sends an event of no known type (a clear error, never
//! an empty message); and `unregisterProvider`.
//!
//! Needs node 22 and the host's packages from `target/tools`
//! (`scripts/install-test-tools.sh`); skipped without them unless
//! `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::harness::{Pi, Sandbox};

/// The providers; `FAKE_URL` is the fake server's OpenAI-style base URL.
const PROVIDERS: &str = r#"import { createAssistantMessageEventStream, getCurrentSystemPrompt, getCurrentTools } from "@earendil-works/pi-ai";
import { openAICompletionsApi } from "@earendil-works/pi-ai/compat";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const FAKE = "FAKE_URL";
const model = (id: string) => ({ id, name: id, reasoning: false, input: ["text"],
  cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 }, contextWindow: 100000, maxTokens: 4096 });

/** The transcript as Chat Completions messages. */
function chatMessages(context: any) {
  const out: any[] = [{ role: "system", content: getCurrentSystemPrompt(context.messages) }];
  for (const m of context.messages) {
    const text = (c: any) => typeof c === "string" ? c : c.filter((b: any) => b.type === "text").map((b: any) => b.text).join("");
    if (m.role === "user") out.push({ role: "user", content: text(m.content) });
    if (m.role === "assistant") out.push({ role: "assistant", content: text(m.content) || null,
      tool_calls: m.content.filter((b: any) => b.type === "toolCall").map((b: any) =>
        ({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.arguments) } })) });
    if (m.role === "toolResult") out.push({ role: "tool", tool_call_id: m.toolCallId, content: text(m.content) });
  }
  return out;
}

/** A provider of its own: calls the server, parses its SSE, streams pi-ai's events. */
function streamOwn(model: any, context: any, options: any) {
  const stream = createAssistantMessageEventStream();
  const message: any = { role: "assistant", content: [], api: model.api, provider: model.provider, model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "stop", timestamp: Date.now() };
  (async () => {
    const response = await fetch(`${model.baseUrl}/chat/completions`, { method: "POST", signal: options.signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${options.apiKey}` },
      body: JSON.stringify({ model: model.id, stream: true, stream_options: { include_usage: true },
        messages: chatMessages(context),
        tools: getCurrentTools(context.messages).map((t: any) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } })) }) });
    stream.push({ type: "start", partial: message });
    let text: any; const calls = new Map<number, any>(); let buffer = "";
    const decoder = new TextDecoder();
    for await (const chunk of response.body as any) {
      buffer += decoder.decode(chunk, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("");
        if (!data || data === "[DONE]") continue;
        const parsed = JSON.parse(data);
        if (parsed.usage) {
          message.usage.input = parsed.usage.prompt_tokens; message.usage.output = parsed.usage.completion_tokens;
          message.usage.totalTokens = parsed.usage.total_tokens;
        }
        const choice = parsed.choices?.[0];
        const delta = choice?.delta ?? {};
        if (delta.content) {
          if (!text) { text = { type: "text", text: "" }; message.content.push(text); stream.push({ type: "text_start", contentIndex: message.content.length - 1, partial: message }); }
          text.text += delta.content;
          stream.push({ type: "text_delta", contentIndex: message.content.indexOf(text), delta: delta.content, partial: message });
        }
        for (const tc of delta.tool_calls ?? []) {
          let call = calls.get(tc.index);
          if (!call) {
            call = { block: { type: "toolCall", id: tc.id, name: tc.function.name, arguments: {} }, json: "" };
            calls.set(tc.index, call); message.content.push(call.block);
            stream.push({ type: "toolcall_start", contentIndex: message.content.length - 1, partial: message });
          }
          const piece = tc.function?.arguments ?? "";
          call.json += piece;
          stream.push({ type: "toolcall_delta", contentIndex: message.content.indexOf(call.block), delta: piece, partial: message });
        }
        if (choice?.finish_reason) message.stopReason = choice.finish_reason === "tool_calls" ? "toolUse" : "stop";
      }
    }
    if (text) stream.push({ type: "text_end", contentIndex: message.content.indexOf(text), content: text.text, partial: message });
    for (const call of calls.values()) {
      call.block.arguments = JSON.parse(call.json || "{}");
      stream.push({ type: "toolcall_end", contentIndex: message.content.indexOf(call.block), toolCall: call.block, partial: message });
    }
    stream.push({ type: "done", reason: message.stopReason, message });
    stream.end();
  })().catch((error) => {
    stream.push({ type: "error", reason: "error", error: { ...message, stopReason: "error", errorMessage: String(error) } });
    stream.end();
  });
  return stream;
}

export default function (pi: ExtensionAPI) {
  pi.registerProvider("viaconfig", { baseUrl: FAKE, apiKey: "config-key", api: "openai-completions", models: [model("config-model")] });
  pi.registerProvider("tsprov", { baseUrl: FAKE, apiKey: "ts-key", api: "ts-chat", models: [model("ts-model")], streamSimple: streamOwn });
  pi.registerProvider("delegating", { baseUrl: "https://unused.invalid", apiKey: "outer-key", api: "delegating-api",
    models: [model("d-model")],
    streamSimple: (m: any, context: any, options: any) =>
      openAICompletionsApi().streamSimple({ ...m, baseUrl: FAKE }, context, { ...options, apiKey: "delegated-key" }) });
  pi.registerProvider("broken", { baseUrl: FAKE, apiKey: "b", api: "broken-api", models: [model("b-model")],
    streamSimple: () => { const s = createAssistantMessageEventStream(); queueMicrotask(() => { s.push({ type: "start" } as any); s.push({ type: "text_chunk", text: "x" } as any); }); return s; } });
  pi.registerCommand("drop", { handler: async () => { pi.unregisterProvider("tsprov"); } });
}
"#;

async fn use_model(pi: &mut Pi, provider: &str, id: &str) {
    pi.send(json!({"id": "m", "type": "set_model", "provider": provider, "modelId": id})).await;
    let lines = pi.until(|v| v["id"] == "m").await;
    let reply = lines.last().unwrap();
    assert_eq!(reply["success"], true, "{provider}/{id}: {reply}");
}

/// Prompt, and the assistant messages of the run.
async fn prompt(pi: &mut Pi, text: &str) -> (Vec<Value>, Vec<Value>) {
    pi.send(json!({"id": "p", "type": "prompt", "message": text})).await;
    let lines = pi.until_type("agent_settled").await;
    let replies = lines
        .iter()
        .filter(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .map(|v| v["message"].clone())
        .collect();
    (lines, replies)
}

fn text_of(message: &Value) -> String {
    message["content"].as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect()
}

async fn model_ids(pi: &mut Pi) -> Vec<String> {
    pi.send(json!({"id": "models", "type": "get_available_models"})).await;
    let lines = pi.until(|v| v["id"] == "models").await;
    let models = lines.last().unwrap()["data"]["models"].as_array().cloned().unwrap_or_default();
    models.iter().map(|m| format!("{}/{}", m["provider"].as_str().unwrap(), m["id"].as_str().unwrap())).collect()
}

#[tokio::test]
async fn registered_providers_stream_through_the_core() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "providers.ts", &PROVIDERS.replace("FAKE_URL", &sb.server().base_url()));
    let mut pi = sb.spawn(&["--no-session"]);
    // Commands are answered once the extension registered.
    pi.send(json!({"id": "c", "type": "get_commands"})).await;
    let started = pi.until(|v| v["id"] == "c").await;
    let listed = model_ids(&mut pi).await;
    for id in ["viaconfig/config-model", "tsprov/ts-model", "delegating/d-model", "broken/b-model"] {
        assert!(listed.contains(&id.to_string()), "{id} in {listed:?}, after {started:?}");
    }

    // Config only: pi-rpc's own Chat Completions, with the config's key.
    use_model(&mut pi, "viaconfig", "config-model").await;
    sb.server().push(Reply::text("From the config."));
    let (_, replies) = prompt(&mut pi, "hi").await;
    assert_eq!(text_of(&replies[0]), "From the config.");
    let request = sb.server().requests().last().cloned().unwrap();
    assert_eq!(request.body["model"], "config-model");
    assert_eq!(request.header("authorization"), Some("Bearer config-key"));

    // A stream written in TypeScript, with a tool call the core runs.
    use_model(&mut pi, "tsprov", "ts-model").await;
    let before = sb.server().requests().len();
    sb.server().push(Reply::tool_calls([FakeToolCall::new("call_1", "bash", r#"{"command": "echo from-the-tool"}"#)]));
    sb.server().push(Reply::text_chunks(["Ran ", "it."]));
    let (lines, replies) = prompt(&mut pi, "run it").await;
    assert_eq!(replies.len(), 2, "{lines:?}");
    let (first, second) = (&replies[0], &replies[1]);
    assert_eq!((first["provider"].as_str(), first["api"].as_str()), (Some("tsprov"), Some("ts-chat")));
    assert_eq!(first["stopReason"], "toolUse");
    let call = first["content"].as_array().unwrap().iter().find(|b| b["type"] == "toolCall").expect("tool call");
    assert_eq!((call["id"].as_str(), call["name"].as_str()), (Some("call_1"), Some("bash")));
    assert_eq!(call["arguments"]["command"], "echo from-the-tool");
    assert!(first["usage"]["input"].as_u64().unwrap() > 0, "usage came through: {first}");
    // The core priced it with the model's cost.
    assert!(first["usage"]["cost"]["total"].as_f64().unwrap() > 0.0, "{first}");
    let end = lines.iter().find(|v| v["type"] == "tool_execution_end").expect("the tool ran");
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().contains("from-the-tool"), "{end}");
    assert_eq!((text_of(second), second["stopReason"].as_str()), ("Ran it.".to_string(), Some("stop")));
    let deltas = lines.iter().filter(|v| v["assistantMessageEvent"]["type"] == "text_delta").count();
    assert_eq!(deltas, 2, "each delta streamed");
    let requests = sb.server().requests();
    assert_eq!(requests.len(), before + 2);
    assert_eq!(requests[before].header("authorization"), Some("Bearer ts-key"));
    let offered: Vec<&str> = requests[before].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"bash"), "{offered:?}");
    let sent_back = requests[before + 1].body["messages"].as_array().unwrap();
    assert!(
        sent_back.iter().any(|m| m["role"] == "tool" && m["content"].as_str().unwrap_or("").contains("from-the-tool")),
        "the tool result went back through the extension's stream: {sent_back:?}"
    );

    // Delegated to pi-ai's built-in API (pi-rpc's own provider underneath).
    use_model(&mut pi, "delegating", "d-model").await;
    sb.server().push(Reply::text("Delegated."));
    let (_, replies) = prompt(&mut pi, "delegate").await;
    assert_eq!(text_of(&replies[0]), "Delegated.", "{:?}", replies[0]);
    assert_eq!(replies[0]["provider"], "delegating");
    let request = sb.server().requests().last().cloned().unwrap();
    assert_eq!(
        (request.body["model"].as_str(), request.header("authorization")),
        (Some("d-model"), Some("Bearer delegated-key"))
    );

    // An event of no known type: an error that says so, not an empty message.
    use_model(&mut pi, "broken", "b-model").await;
    let (_, replies) = prompt(&mut pi, "break").await;
    let last = replies.last().unwrap();
    assert_eq!(last["stopReason"], "error", "{last}");
    assert!(last["errorMessage"].as_str().unwrap().contains("no known type"), "{last}");

    // unregisterProvider: its models go.
    pi.send(json!({"id": "d", "type": "prompt", "message": "/drop"})).await;
    pi.until(|v| v["id"] == "d").await;
    let listed = model_ids(&mut pi).await;
    assert!(!listed.contains(&"tsprov/ts-model".to_string()), "{listed:?}");
    assert!(listed.contains(&"viaconfig/config-model".to_string()), "{listed:?}");
}
