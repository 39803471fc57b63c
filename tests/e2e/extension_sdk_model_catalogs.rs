//! pi's `ModelRuntime` fetching remote model catalogs, side by side with
//! pi 1.6.0: `ModelRuntime.create({allowModelNetwork: true, catalogBaseUrl})`
//! asks the catalog server for each built-in provider that has credentials
//! (`GET /api/models/providers/<id>?types=chat,image,classifier`), keeps the
//! answer in the `models-store.json` beside the runtime's `models.json`
//! (`models`, `lastModified`, `etag`, `checkedAt`) and adds a catalog newer
//! than pi's model data to the provider's models; a fresh entry is not asked
//! again (its classifier and image models join the typed ones),
//! `refresh({force: true})` revalidates it with its `etag` (a 304
//! keeps it), a failing server is retried twice and its error is
//! `refresh()`'s, and without `allowModelNetwork` nothing is fetched. The
//! A runtime naming no files (`ModelRuntime.create()`) keeps its catalogs in
//! the agent directory's `models-store.json`, restored when it is made, and
//! its `refresh()` asks the catalog server, as pi's. The
//! catalog server is a small HTTP server on 127.0.0.1 that the extension's
//! command starts, so both programs meet the same one; the command notifies
//! what it saw, compared whole.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::extension_sdk_services::{notified_json, notified_text, side_by_side};
use crate::harness::{Pi, Sandbox};

const SDK_MODEL_CATALOGS: &str = r#"import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { ModelRuntime, getAgentDir } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const served = (id: string, extra: any = {}) => ({
  id, name: "Net " + id, api: "anthropic-messages", baseUrl: "http://127.0.0.1:9/v1", reasoning: false,
  input: ["text"], cost: ZERO, contextWindow: 5555, maxTokens: 77, ...extra,
});

/** pi's catalog server: Anthropic's catalog (newer than pi's data, etag "v1"), OpenAI failing, others unknown. */
function catalogServer(requests: any[]): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const ua = String(req.headers["user-agent"] ?? "");
    requests.push({
      path: url.pathname, types: url.searchParams.get("types"), accept: req.headers.accept ?? null,
      ifNoneMatch: req.headers["if-none-match"] ?? null, agent: ua.startsWith("pi/1.6.0 (") && ua.includes("node/"),
    });
    if (url.pathname === "/api/models/providers/anthropic") {
      if (req.headers["if-none-match"] === '"v1"') { res.writeHead(304, { etag: '"v1"' }); res.end(); return; }
      res.writeHead(200, { "content-type": "application/json", "last-modified": "Mon, 30 Nov 2026 00:00:00 GMT", etag: '"v1"' });
      res.end(JSON.stringify({ models: [served("claude-net"), served("img-net", { type: "image", api: "openai-images" }), served("odd-net", { type: "video" }), { name: "no id" }] }));
      return;
    }
    if (url.pathname === "/api/models/providers/openai") { res.writeHead(500); res.end("down"); return; }
    res.writeHead(404); res.end();
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Start `server` on 127.0.0.1; its base URL. */
async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return `http://127.0.0.1:${(server.address() as any).port}`;
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("anthropic-key", {
    handler: async (_args, ctx) => {
      fs.writeFileSync(path.join(getAgentDir(), "auth.json"), JSON.stringify({ anthropic: { type: "api_key", key: "a-key" } }));
      ctx.ui.notify("stored", "info");
    },
  });
  pi.registerCommand("default-store", {
    handler: async (_args, ctx) => {
      // A runtime naming no files keeps its catalogs beside the agent directory's models.json.
      const storePath = path.join(getAgentDir(), "models-store.json");
      const stored = { models: [served("claude-stored", { provider: "anthropic" })], lastModified: Date.parse("2026-12-01T00:00:00Z"), etag: '"s1"', checkedAt: Date.now() };
      fs.writeFileSync(storePath, JSON.stringify({ anthropic: stored }));
      const out: any = { restored: (await ModelRuntime.create()).getModel("anthropic", "claude-stored")?.name ?? null };
      const requests: any[] = [];
      const server = await catalogServer(requests);
      const catalogBaseUrl = `http://127.0.0.1:${(server.address() as any).port}`;
      try {
        const rt = await ModelRuntime.create({ catalogBaseUrl } as any);
        out.atCreate = requests.splice(0).map((r: any) => r.path);
        // The key stored since the last command counts, as pi reads its logins at each use.
        out.keyed = (await rt.getAvailable()).some((m: any) => m.provider === "anthropic");
        const result: any = await rt.refresh({ force: true } as any);
        out.refreshed = requests.splice(0).map((r: any) => [r.path, r.ifNoneMatch]);
        out.errors = [...(result?.errors ?? new Map())].map(([id, e]: any) => [id, e?.message ?? String(e)]);
        out.net = rt.getModel("anthropic", "claude-net")?.name ?? null;
        out.store = JSON.parse(fs.readFileSync(storePath, "utf8")).anthropic?.etag ?? null;
      } finally {
        server.close();
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("openrouter-net", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "or");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      fs.writeFileSync(authPath, JSON.stringify({ openrouter: { type: "api_key", key: "or-key" } }));
      const modelsPath = path.join(dir, "models.json");
      const requests: any[] = [];
      let ids: string[] = [];
      const server = http.createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://localhost");
        requests.push({ path: url.pathname, authorization: req.headers.authorization ?? null });
        if (url.pathname === "/api/v1/models/user") {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ data: [
            { id: ids[0], context_length: 1234, top_provider: { max_completion_tokens: 99 }, pricing: { prompt: "0.000001", completion: "0.000002", input_cache_read: "-1", overrides: [{ min_prompt_tokens: 1000, prompt: "0.000003" }, { utc_start: "x", prompt: "1" }] } },
            { id: ids[1], context_length: 0, top_provider: { context_length: 4321 } },
            { id: "not-in-the-catalog" },
          ] }));
          return;
        }
        res.writeHead(404);
        res.end();
      });
      const base = await listen(server);
      fs.writeFileSync(modelsPath, JSON.stringify({ providers: { openrouter: { baseUrl: `${base}/api/v1` } } }));
      const shape = (m: any) => [m.id, m.contextWindow, m.maxTokens, m.cost];
      const byId = (a: any, b: any) => String(a[0] ?? a).localeCompare(String(b[0] ?? b));
      const out: any = {};
      try {
        const plain = await ModelRuntime.create({ authPath, modelsPath } as any);
        const catalog = plain.getModels("openrouter").map((m: any) => m.id).sort();
        ids = catalog.slice(0, 2);
        out.catalogHasMore = catalog.length > 2;
        const rt = await ModelRuntime.create({ authPath, modelsPath, allowModelNetwork: true, catalogBaseUrl: base } as any);
        out.narrowed = rt.getModels("openrouter").map(shape).sort(byId);
        out.requests = requests.splice(0);
        const stored = JSON.parse(fs.readFileSync(path.join(dir, "models-store.json"), "utf8")).openrouter;
        out.stored = { keys: Object.keys(stored).sort(), chat: stored.models.filter((m: any) => (m.type ?? "chat") === "chat").map((m: any) => m.id).sort() };
        const again = await ModelRuntime.create({ authPath, modelsPath } as any);
        out.restored = again.getModels("openrouter").map((m: any) => m.id).sort();
        out.requestsAfter = requests.splice(0);
      } finally {
        server.close();
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("catalog-net", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "net");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      fs.writeFileSync(authPath, JSON.stringify({ anthropic: { type: "api_key", key: "a-key" }, openai: { type: "api_key", key: "o-key" } }));
      const modelsPath = path.join(dir, "models.json");
      const storePath = path.join(dir, "models-store.json");
      const requests: any[] = [];
      const server = await catalogServer(requests);
      const catalogBaseUrl = `http://127.0.0.1:${(server.address() as any).port}`;
      const taken = () => requests.splice(0).sort((a, b) => a.path.localeCompare(b.path));
      const store = () => {
        if (!fs.existsSync(storePath)) return null;
        const data = JSON.parse(fs.readFileSync(storePath, "utf8"));
        for (const entry of Object.values<any>(data)) entry.checkedAt = typeof entry.checkedAt;
        return data;
      };
      const look = (rt: any) => ({
        image: rt.getModelOfType("image", "anthropic", "img-net")?.name ?? null,
        images: rt.getModelsOfType("image", "anthropic").map((m: any) => m.id),
        chatOfType: rt.getModelOfType("chat", "anthropic", "claude-net")?.name ?? null,
        net: rt.getModel("anthropic", "claude-net")?.name ?? null,
        window: rt.getModel("anthropic", "claude-net")?.contextWindow ?? null,
        listed: rt.getModels("anthropic").some((m: any) => m.id === "claude-net"),
      });
      const options = { authPath, modelsPath, allowModelNetwork: true, catalogBaseUrl } as any;
      const out: any = {};
      try {
        const first = await ModelRuntime.create(options);
        out.first = { ...look(first), requests: taken(), store: store() };
        out.first.availableImages = (await first.getAvailableOfType("image", "anthropic")).map((m: any) => m.id);
        const second = await ModelRuntime.create(options);
        out.second = { ...look(second), requests: taken() };
        const result: any = await second.refresh({ force: true } as any);
        out.forced = {
          errors: [...(result?.errors ?? new Map())].map(([id, e]: any) => [id, e?.message ?? String(e)]),
          requests: taken(),
          store: store(),
        };
        const quiet = await ModelRuntime.create({ authPath, modelsPath, catalogBaseUrl } as any);
        await quiet.refresh({ allowNetwork: false } as any);
        out.withoutNetwork = { ...look(quiet), requests: taken() };
      } finally {
        server.close();
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// `/catalog-net` in pi-rpc or pi 1.6.0, neither offline (pi's model
/// network is off with `PI_OFFLINE`).
async fn run(reference: bool, command: &str) -> Option<Value> {
    let (sb, mut pi) = start(reference).await?;
    Some(notified_json(&mut pi, &sb, command).await)
}

/// pi-rpc or pi 1.6.0 with the extension, online.
async fn start(reference: bool) -> Option<(Sandbox, Pi)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "sdk-model-catalogs.ts", SDK_MODEL_CATALOGS);
    sb.write_models(&sb.server().base_url(), json!({}));
    let pi = if reference { spawn_reference_with(&sb, &node, &cli, false) } else { sb.spawn(&["--no-session"]) };
    Some((sb, pi))
}

#[tokio::test]
async fn a_model_runtime_fetches_remote_catalogs_as_pis() {
    let Some((ours, theirs)) =
        side_by_side(|reference, command| async move { run(reference, &command).await }, "catalog-net").await
    else {
        return;
    };
    let first = &ours["first"];
    // The configured providers were asked, pi's way; the newer catalog joined Anthropic's models.
    assert_eq!(first["net"], "Net claude-net", "{ours}");
    let anthropic =
        first["requests"].as_array().and_then(|r| r.iter().find(|r| r["path"] == "/api/models/providers/anthropic"));
    assert_eq!(
        anthropic,
        Some(&json!({"path": "/api/models/providers/anthropic", "types": "chat,image,classifier",
            "accept": "application/json", "ifNoneMatch": null, "agent": true})),
        "{ours}"
    );
    assert_eq!(first["store"]["anthropic"]["etag"], "\"v1\"", "{ours}");
    // Fresh: not asked again; forced: revalidated with the etag.
    assert!(
        ours["second"]["requests"]
            .as_array()
            .is_some_and(|r| r.iter().all(|r| r["path"] != "/api/models/providers/anthropic")),
        "{ours}"
    );
    assert!(
        ours["forced"]["requests"].as_array().is_some_and(|r| r.iter().any(|r| r["ifNoneMatch"] == "\"v1\"")),
        "{ours}"
    );
    assert_eq!(ours["forced"]["errors"], json!([["openai", "Model catalog request failed for openai: 500"]]), "{ours}");
    assert_eq!(ours["withoutNetwork"]["requests"], json!([]), "{ours}");
    assert_eq!(ours["withoutNetwork"]["net"], "Net claude-net", "{ours}");
    // Its image model joined the provider's typed models; the unknown type did not.
    assert_eq!(ours["withoutNetwork"]["images"], json!(["img-net"]), "{ours}");
    assert_eq!(ours["first"]["availableImages"], json!(["img-net"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_model_runtime_narrows_openrouters_catalog_to_the_key_as_pis() {
    let Some((ours, theirs)) =
        side_by_side(|reference, command| async move { run(reference, &command).await }, "openrouter-net").await
    else {
        return;
    };
    // Two catalog models the key may use, with its limits and prices; the rest left out, offline too.
    assert_eq!(ours["catalogHasMore"], true, "{ours}");
    assert_eq!(ours["narrowed"].as_array().map(Vec::len), Some(2), "{ours}");
    assert_eq!(ours["narrowed"][0][1], 1234, "{ours}");
    assert_eq!(ours["requests"][1], json!({"path": "/api/v1/models/user", "authorization": "Bearer or-key"}), "{ours}");
    assert_eq!(ours["restored"].as_array().map(Vec::len), Some(2), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_model_runtime_naming_no_files_keeps_the_agent_dirs_catalogs_as_pis() {
    // Anthropic's key stored in the agent directory first (the session takes it in before its next command).
    let run = |reference: bool, _| async move {
        let (sb, mut pi) = start(reference).await?;
        notified_text(&mut pi, &sb, "anthropic-key").await;
        Some(notified_json(&mut pi, &sb, "default-store").await)
    };
    let Some((ours, theirs)) = side_by_side(run, "default-store").await else { return };
    // Restored from the agent directory's models-store.json when made, without the network.
    assert_eq!(ours["restored"], "Net claude-stored", "{ours}");
    assert_eq!(ours["atCreate"], json!([]), "{ours}");
    assert_eq!(ours["keyed"], true, "{ours}");
    // Its refresh() asks the catalog server for the provider with a key, revalidating the stored entry.
    assert_eq!(ours["refreshed"], json!([["/api/models/providers/anthropic", "\"s1\""]]), "{ours}");
    assert_eq!(ours["net"], "Net claude-net", "{ours}");
    assert_eq!(ours["store"], "\"v1\"", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
