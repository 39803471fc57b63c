// Record what pi 1.6.0's own compaction code does with a session file, as a
// fixture for pi-rpc's unit tests (crates/agent/src/compaction/testdata/pi_outputs.json).
//
// Usage: node tests/interop/compaction_reference.mjs <pi package dir> <out.json> <case>...
//   case = <session.jsonl>:<keepRecentTokens>[:<custom instructions>]
// For each case: pi's prepareCompaction (cut point, split turn, tokensBefore,
// previous summary, file lists) and the summarisation requests compact()
// makes (system prompt and user text), with a fake model answering
// "SUMMARY-<n>", and the final summary.
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, out, ...cases] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(pkg, "dist", p)).href);
const { prepareCompaction, compact } = await load("core/compaction/index.js");
const { SessionManager } = await load("core/session-manager.js");

const model = {
  id: "fake-model", name: "fake-model", api: "openai-completions", provider: "fake", baseUrl: "http://127.0.0.1:1",
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000, maxTokens: 16384,
};

const results = [];
for (const spec of cases) {
  const [file, keep, ...rest] = spec.split(":");
  const custom = rest.length ? rest.join(":") : undefined;
  const sm = SessionManager.open(file, undefined, "/work/proj");
  const prep = prepareCompaction(sm.getBranch(), { enabled: true, reserveTokens: 16384, keepRecentTokens: Number(keep) });
  const record = { file: basename(file), keepRecentTokens: Number(keep), customInstructions: custom ?? null };
  if (!prep) {
    record.preparation = null;
    results.push(record);
    continue;
  }
  const requests = [];
  const streamFn = async (_model, context) => ({
    result: async () => {
      const text = (c) => (typeof c === "string" ? c : c.map((b) => b.text ?? "").join(""));
      const system = context.messages.filter((m) => m.role === "system");
      const users = context.messages.filter((m) => m.role !== "system");
      requests.push({ systemPrompt: context.systemPrompt ?? system.map((m) => text(m.content) + Object.values(m.sections ?? {}).join("")).join(""), roles: context.messages.map((m) => m.role), user: users.map((m) => text(m.content)).join("") });
      return {
        role: "assistant", content: [{ type: "text", text: `SUMMARY-${requests.length}` }], api: model.api, provider: model.provider,
        model: model.id, usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: "stop", timestamp: Date.now(),
      };
    },
  });
  const result = await compact(prep, model, "k", {}, custom, undefined, "off", streamFn);
  record.preparation = {
    firstKeptEntryId: prep.firstKeptEntryId,
    isSplitTurn: prep.isSplitTurn,
    summarizeRoles: prep.messagesToSummarize.map((m) => m.role),
    turnPrefixRoles: prep.turnPrefixMessages.map((m) => m.role),
    tokensBefore: prep.tokensBefore,
    previousSummary: prep.previousSummary ?? null,
  };
  record.requests = requests;
  record.summary = result.summary;
  record.details = result.details;
  results.push(record);
}
writeFileSync(out, JSON.stringify(results, null, 1) + "\n");
console.log(`wrote ${results.length} cases to ${out}`);
