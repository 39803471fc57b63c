// Records pi 1.6.0's answers to model patterns, with pi-rpc's catalog
// (crates/config/src/config/catalog.json plus the offline faux model) and chosen sets of
// provider keys, into crates/config/src/config/testdata/model_resolution.json. The Rust
// table tests (crates/config/src/config/model_resolver_tests.rs) compare pi-rpc against it.
//
// Usage: node tests/model_resolution/record.mjs [<pi package dir>]
// (default: target/tools/reference/node_modules/@earendil-works/pi-coding-agent,
// installed by tests/interop/sessions.sh --install).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = resolve(
  process.argv[2] ?? join(root, "target/tools/reference/node_modules/@earendil-works/pi-coding-agent"),
);
const resolver = await import(pathToFileURL(join(pkg, "dist/core/model-resolver.js")).href);
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;

const catalog = JSON.parse(readFileSync(join(root, "crates/config/src/config/catalog.json"), "utf8"));
const models = Object.values(catalog.providers).flat();
const faux = { id: "faux-1", name: "Faux Model", provider: "faux", reasoning: true, input: ["text", "image"] };
const all = [...models, faux];

const cliCase = (model, extra = {}) => ({ model, ...extra });
// Patterns: exact ids, provider/id hints, fuzzy words, dated vs alias ids,
// thinking suffixes (valid, invalid, with --thinking), custom ids on a known
// provider, --provider constraints, gateway ids that contain a slash.
const cliPatterns = [
  cliCase("claude-sonnet-4"),
  cliCase("claude-sonnet-4-6"),
  cliCase("claude-sonnet-4-5"),
  cliCase("anthropic/claude-sonnet-4-5"),
  cliCase("sonnet"),
  cliCase("opus"),
  cliCase("haiku"),
  cliCase("sonnet:high"),
  cliCase("claude-sonnet-4:max"),
  cliCase("sonnet:turbo"),
  cliCase("sonnet:high", { thinking: "low" }),
  cliCase("SONNET"),
  cliCase("Claude Sonnet 4.5"),
  cliCase("gpt-4o"),
  cliCase("openai/gpt-4o"),
  cliCase("gpt-4o-mini"),
  cliCase("gpt"),
  cliCase("gpt-5"),
  cliCase("o3"),
  cliCase("gemini"),
  cliCase("gemini-2.5-pro"),
  cliCase("google/gemini-2.5-flash"),
  cliCase("flash"),
  cliCase("kimi"),
  cliCase("glm"),
  cliCase("grok"),
  cliCase("deepseek"),
  cliCase("qwen"),
  cliCase("llama"),
  cliCase("mistral"),
  cliCase("devstral"),
  cliCase("anthropic/claude-sonnet-4.5"),
  cliCase("openrouter/anthropic/claude-sonnet-4.5"),
  cliCase("zai/glm-4.6"),
  cliCase("moonshotai/kimi-k2"),
  cliCase("anthropic/my-custom-model"),
  cliCase("anthropic/my-custom-model:high"),
  cliCase("anthropic/my-custom-model:high", { thinking: "low" }),
  cliCase("openai/some-new-model:off"),
  cliCase("no-such-model-anywhere"),
  cliCase("no-such-model:high"),
  cliCase("faux-1"),
  cliCase("faux/faux-1"),
  cliCase("faux"),
  cliCase("sonnet", { provider: "openrouter" }),
  cliCase("gpt-4o", { provider: "OpenAI" }),
  cliCase("brand-new", { provider: "groq" }),
  cliCase("sonnet", { provider: "nosuchprovider" }),
  cliCase("claude-sonnet-4", { apiKey: true }),
  cliCase("gpt-4o", { apiKey: true }),
  cliCase(" opus "),
];
const keySets = [["anthropic"], [], ["openai", "openrouter"], ["anthropic", "openrouter", "vercel-ai-gateway"], ["google", "groq", "zai"]];

function cliAnswer(keys, c) {
  const r = resolver.resolveCliModel({
    cliProvider: c.provider,
    cliModel: c.model,
    cliThinking: c.thinking,
    inlineApiKey: Boolean(c.apiKey),
    modelRuntime: { getModels: () => all, hasConfiguredAuth: (p) => p === "faux" || keys.includes(p) },
  });
  if (r.error || !r.model) return { error: r.error ?? "no model" };
  return {
    model: `${r.model.provider}/${r.model.id}`,
    thinking: r.thinkingLevel ?? null,
    warning: r.warning ?? null,
    reasoning: Boolean(r.model.reasoning),
  };
}

const scopePatterns = [
  ["claude-sonnet-4-6", "gpt-4o"],
  ["anthropic/*"],
  ["*sonnet*"],
  ["*sonnet*:high"],
  ["sonnet:high", "haiku:low"],
  ["gpt-4o:bogus"],
  ["openai/gpt-4o*"],
  ["*/gpt-4o"],
  ["no-match-here", "opus"],
  ["gemini-2.5-?ro"],
  ["kimi", "glm"],
  ["claude-sonnet-4-6", "anthropic/claude-sonnet-4-6"],
];
const scopeKeySets = [["anthropic", "openai"], ["anthropic", "openrouter", "vercel-ai-gateway"], ["google", "openrouter"]];

function scopeAnswer(keys, patterns) {
  const available = models.filter((m) => keys.includes(m.provider));
  const { scopedModels, diagnostics } = resolver.resolveModelScopeFromModels(patterns, available);
  return {
    models: scopedModels.map((s) => [`${s.model.provider}/${s.model.id}`, s.thinkingLevel ?? null]),
    warnings: diagnostics.map((d) => d.message),
  };
}

const out = {
  _source: `Recorded from pi ${version} (dist/core/model-resolver.js: resolveCliModel, resolveModelScopeFromModels) with pi-rpc's catalog by tests/model_resolution/record.mjs`,
  cli: keySets.map((keys) => ({ keys, cases: cliPatterns.map((c) => ({ ...c, pi: cliAnswer(keys, c) })) })),
  scope: scopeKeySets.map((keys) => ({
    keys,
    cases: scopePatterns.map((patterns) => ({ patterns, pi: scopeAnswer(keys, patterns) })),
  })),
};
const target = join(root, "crates/config/src/config/testdata/model_resolution.json");
writeFileSync(target, `${JSON.stringify(out, null, 1)}\n`);
console.log(`recorded ${out.cli.length * cliPatterns.length} CLI and ${out.scope.length * scopePatterns.length} scope answers into ${target}`);
