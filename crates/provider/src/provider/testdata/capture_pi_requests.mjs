// Captures the HTTP requests pi 1.6.0's providers send for fixed conversations,
// so that the Rust request builders can be compared with them (see README.md).
//
// Usage: node capture_pi_requests.mjs <pi-ai dist dir> <output dir>
import http from "node:http";
import fs from "node:fs";
import path from "node:path";

const [dist, outDir] = process.argv.slice(2);
const { normalizeContext } = await import(path.join(dist, "utils/transcript.js"));
const api = {
  "anthropic-messages": await import(path.join(dist, "api/anthropic-messages.js")),
  "openai-responses": await import(path.join(dist, "api/openai-responses.js")),
  "google-generative-ai": await import(path.join(dist, "api/google-generative-ai.js")),
  "mistral-conversations": await import(path.join(dist, "api/mistral-conversations.js")),
  "openai-completions": await import(path.join(dist, "api/openai-completions.js")),
};

let requests = [];
let replyBody = "";
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    requests.push({ url: req.url, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) });
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(replyBody);
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}`;

const image = { type: "image", data: "QUJD", mimeType: "image/png" };
// Tools Claude's strict mode accepts (no numeric bounds), one of them nested.
const strictTools = [
  { name: "bash", description: "Run a command", constrainedSampling: { type: "json_schema", strict: "prefer" },
    parameters: { type: "object", required: ["command"], properties: { command: { type: "string" }, timeout: { type: "number" } } } },
  { name: "edit", description: "Edit a file", constrainedSampling: { type: "json_schema", strict: "prefer" },
    parameters: { type: "object", required: ["path", "edits"], properties: { path: { type: "string" },
      edits: { type: "array", items: { type: "object", required: ["oldText", "newText"],
        properties: { oldText: { type: "string" }, newText: { type: "string" } }, additionalProperties: false } } },
      additionalProperties: false } },
];
// `bash` asks for strict schemas where the model supports them, like pi's built-in read/bash/edit/write tools.
const defaultTools = [
  { name: "bash", description: "Run a command", constrainedSampling: { type: "json_schema", strict: "prefer" },
    parameters: { type: "object", required: ["command"], properties: { command: { type: "string", description: "Command" },
      timeout: { type: "number", description: "Seconds", minimum: 1 } } } },
  { name: "grep", description: "Search files",
    parameters: { type: "object", required: ["pattern"], properties: { pattern: { type: "string" }, mode: { const: "regex" } } } },
];
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

// The conversation of every scenario; `own` is the assistant's origin, `sig` its signatures and ids.
function conversation(own, sig) {
  const assistant = (content, stopReason, origin = own) => ({ role: "assistant", content, ...origin, usage, stopReason, timestamp: 2 });
  return [
    { role: "user", content: [{ type: "text", text: "look" }, image], timestamp: 1 },
    assistant([
      { type: "thinking", thinking: "hmm", thinkingSignature: sig.thinking },
      ...(sig.redacted ? [{ type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: sig.redacted, redacted: true }] : []),
      { type: "text", text: "Running.", ...(sig.text ? { textSignature: sig.text } : {}) },
      { type: "toolCall", id: sig.call1, name: "bash", arguments: { command: "ls" }, ...(sig.thought ? { thoughtSignature: sig.thought } : {}) },
      { type: "toolCall", id: sig.call2, name: "bash", arguments: { command: "cat x" } },
    ], "toolUse"),
    { role: "toolResult", toolCallId: sig.call1, toolName: "bash", content: [{ type: "text", text: "a.txt" }, image], isError: false, timestamp: 3 },
    { role: "toolResult", toolCallId: sig.call2, toolName: "bash", content: [{ type: "text", text: "boom" }, image], isError: true, timestamp: 3 },
    assistant([{ type: "text", text: "partial" }], "aborted"),
    assistant([{ type: "thinking", thinking: "foreign thoughts", thinkingSignature: "X" }, { type: "text", text: "From elsewhere." },
      { type: "toolCall", id: "call_9|fc_9+/=", name: "bash", arguments: { command: "pwd" } }], "toolUse",
      { api: "openai-responses", provider: "openai", model: "gpt-x" }),
    { role: "toolResult", toolCallId: "call_9|fc_9+/=", toolName: "bash", content: [{ type: "text", text: "/tmp" }], isError: false, timestamp: 5 },
    { role: "user", content: "thanks", timestamp: 6 },
  ];
}

const model = (over) => ({ name: "m", reasoning: true, input: ["text", "image"], contextWindow: 200000, maxTokens: 64000,
  cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, ...over });
const anthropic = model({ id: "claude-sonnet-4-5", api: "anthropic-messages", provider: "anthropic", baseUrl: base });
const anthropicOwn = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };
const responses = model({ id: "gpt-5", api: "openai-responses", provider: "openai", baseUrl: base + "/v1", maxTokens: 128000, contextWindow: 400000 });
const responsesOwn = { api: "openai-responses", provider: "openai", model: "gpt-5" };
const gemini = (id) => model({ id, api: "google-generative-ai", provider: "google", baseUrl: base + "/v1beta", maxTokens: 65536, contextWindow: 1048576 });
const geminiOwn = (id) => ({ api: "google-generative-ai", provider: "google", model: id });

const mistral = (id, over) => model({ id, api: "mistral-conversations", provider: "mistral", baseUrl: base, maxTokens: 32768, contextWindow: 131072, ...over });
const mistralOwn = (id) => ({ api: "mistral-conversations", provider: "mistral", model: id });
const mistralSig = { thinking: "", call1: "AbCdE1234", call2: "ZyXwV9876" };
const completions = (id, provider, over) => model({ id, api: "openai-completions", provider, baseUrl: base + "/v1", maxTokens: 32768, contextWindow: 131072, ...over });
const completionsOwn = (id, provider) => ({ api: "openai-completions", provider, model: id });
const reasoningDetails = JSON.stringify([{ type: "reasoning.text", text: "hmm", format: "anthropic-claude-v1", index: 0, signature: "sig" },
  { type: "reasoning.encrypted", data: "ENC", id: "enc_1", format: "anthropic-claude-v1", index: 1 }]);
const openrouterSig = { thinking: reasoningDetails, call1: "toolu_1", call2: "toolu_2" };
const plainSig = { thinking: "reasoning_content", call1: "call_1", call2: "call_2" };
const anthropicSig = { thinking: "SIG1", redacted: "REDACTED", call1: "toolu_1", call2: "toolu_2" };
const responsesSig = { thinking: JSON.stringify({ type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "hmm" }], encrypted_content: "ENC" }),
  text: JSON.stringify({ v: 1, id: "msg_1" }), call1: "call_1|fc_1", call2: "call_2|fc_2" };
const geminiSig = { thinking: "c2lnMQ==", text: "c2lnMg==", thought: "c2lnMw==", call1: "call_1", call2: "call_2" };

const scenarios = {
  anthropic_medium: [anthropic, anthropicOwn, anthropicSig, "medium"],
  anthropic_strict_high: [{ ...anthropic, compat: { supportsStrictTools: true } }, anthropicOwn, anthropicSig, "high"],
  anthropic_strict_ok: [{ ...anthropic, compat: { supportsStrictTools: true } }, anthropicOwn, anthropicSig, "low", strictTools],
  anthropic_off: [anthropic, anthropicOwn, anthropicSig, undefined],
  anthropic_adaptive_xhigh: [{ ...anthropic, id: "claude-opus-4-7", thinkingLevelMap: { off: null, xhigh: "xhigh", max: "max" }, compat: { forceAdaptiveThinking: true } },
    { ...anthropicOwn, model: "claude-opus-4-7" }, anthropicSig, "xhigh"],
  responses_high: [{ ...responses, compat: { supportsStrictMode: true } }, responsesOwn, responsesSig, "high"],
  responses_off: [responses, responsesOwn, responsesSig, undefined],
  google_medium: [gemini("gemini-2.5-flash"), geminiOwn("gemini-2.5-flash"), geminiSig, "medium"],
  google_off: [gemini("gemini-2.5-pro"), geminiOwn("gemini-2.5-pro"), geminiSig, undefined],
  google_gemini3_low: [{ ...gemini("gemini-3-pro-preview"), thinkingLevelMap: { minimal: null, medium: null, off: null } }, geminiOwn("gemini-3-pro-preview"), geminiSig, "low"],
  mistral_medium: [mistral("mistral-large-latest", { thinkingLevelMap: { off: null, minimal: null, low: "low", medium: "medium", high: "high", xhigh: null, max: null }, compat: { supportsStrictMode: true } }),
    mistralOwn("mistral-large-latest"), mistralSig, "medium"],
  mistral_magistral_high: [mistral("magistral-medium-x", { input: ["text"] }), mistralOwn("magistral-medium-x"), mistralSig, "high"],
  completions_openrouter_cache: [completions("anthropic/claude-fable-5", "openrouter", { baseUrl: base + "/api/v1",
      thinkingLevelMap: { off: null, minimal: null, xhigh: "xhigh", max: "max" },
      compat: { thinkingFormat: "openrouter", supportsStrictMode: true, cacheControlFormat: "anthropic", sendSessionAffinityHeaders: true } }),
    completionsOwn("anthropic/claude-fable-5", "openrouter"), openrouterSig, "xhigh"],
  completions_openrouter_off_null: [completions("anthropic/claude-fable-5", "openrouter", { baseUrl: base + "/api/v1",
      thinkingLevelMap: { off: null, minimal: null }, compat: { thinkingFormat: "openrouter", cacheControlFormat: "anthropic" } }),
    completionsOwn("anthropic/claude-fable-5", "openrouter"), openrouterSig, undefined],
  completions_baseten_template: [completions("zai-org/GLM-5.2", "baseten", { input: ["text"],
      thinkingLevelMap: { off: "none", minimal: null, low: null, medium: null, high: "high", xhigh: null, max: "max" },
      compat: { supportsStrictMode: true, supportsStore: false, supportsReasoningEffort: true, maxTokensField: "max_tokens",
        sendSessionAffinityHeaders: true, supportsLongCacheRetention: false, thinkingFormat: "baseten",
        chatTemplateArgs: { enable_thinking: { $var: "thinking.enabled" } }, supportsThinkingTokenBudget: true } }),
    completionsOwn("zai-org/GLM-5.2", "baseten"), plainSig, "high"],
  completions_chat_template_off: [completions("qwen-local", "local", { input: ["text"],
      compat: { thinkingFormat: "chat-template", chatTemplateKwargs: { enable_thinking: { $var: "thinking.enabled" },
        budget: { $var: "thinking.budget", omitWhenOff: true }, fixed: 1 } } }),
    completionsOwn("qwen-local", "local"), plainSig, undefined],
};

for (const [name, [m, own, sig, level, scenarioTools]] of Object.entries(scenarios)) {
  const tools = scenarioTools ?? defaultTools;
  requests = [];
  const messages = conversation(own, sig);
  const context = normalizeContext({ systemPrompt: "You are terse.", tools, messages });
  const stream = api[m.api].streamSimple(m, context, { apiKey: "sk-test", sessionId: "session-1", ...(level ? { reasoning: level } : {}) });
  for await (const _ of stream) { /* drain */ }
  const r = requests[0];
  const keep = ["authorization", "x-api-key", "x-goog-api-key", "anthropic-version", "anthropic-beta", "accept",
    "anthropic-dangerous-direct-browser-access", "session-id", "x-client-request-id", "x-session-affinity", "x-session-id"];
  const headers = Object.fromEntries(keep.filter((k) => r.headers[k] !== undefined).map((k) => [k, r.headers[k]]));
  fs.writeFileSync(path.join(outDir, `pi_${name}.json`), JSON.stringify({ input: { model: { ...m, baseUrl: "BASE" + m.baseUrl.slice(base.length) }, systemPrompt: "You are terse.", tools, messages, level: level ?? "off", sessionId: "session-1", apiKey: "sk-test" },
    url: r.url, headers, body: r.body }, null, 1) + "\n");
}
server.close();
