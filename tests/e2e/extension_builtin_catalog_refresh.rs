//! A built-in provider's `refreshModels` (`getProvider(id)` of a model
//! runtime an extension makes) run by hand, side by side with pi 1.6.0:
//! - with the network, Groq's and OpenRouter's ask the catalog server the
//!   runtime was made with (`ModelRuntime.create({catalogBaseUrl})`, here a
//!   server the extension runs), not pi.dev, and publish what it answers;
//! - Radius's imports the gateway configuration an older pi kept in its
//!   OAuth login (offline), restores a stored catalog, and with the network
//!   asks its gateway (`https://radius.pi.dev/v1/config`, the fake OAuth
//!   server's) with the key or login, its models replacing the shipped ones;
//!   without a key the gateway's refusal is pi-ai's error.
//!
//! Both programs' requests for `https://radius.pi.dev` go to the fake OAuth
//! server by `PI_RPC_ORIGIN_OVERRIDES` through `tests/oauth/route_fetch.mjs`
//! (preloaded into pi 1.6.0, and into the extension host of pi-rpc).
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use pi_compat::fake_oauth::FakeOAuth;
use serde_json::{Value, json};

use crate::clients::{node22, repo_root};
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::extension_sdk_services::notified_json;
use crate::harness::{Pi, Sandbox, origin_overrides};

const CATALOGS: &str = r#"import http from "node:http";
import { ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const settled = async (f: () => any) => { try { const v = await f(); return v === undefined ? "undefined" : JSON.parse(JSON.stringify(v)); } catch (e: any) { return { error: e.message }; } };
const FAR = 4102444800000;
const gatewayModel = { id: "kept-model", name: "Kept", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 };

/** One `refreshModels` of `p`: its outcome, what it published, its chat models after. */
async function refresh(p: any, context: any) {
  const published: any[] = [];
  const publish = async (x: any) => {
    const persist = x.persist ? { models: x.persist.models.map((m: any) => `${m.provider}/${m.id}`), etag: x.persist.etag ?? null, lastModified: x.persist.lastModified ?? null, checked: typeof x.persist.checkedAt } : null;
    published.push({ keys: Object.keys(x).sort(), persist });
    x.update?.();
    return true;
  };
  const outcome = await settled(() => p.refreshModels({ signal: new AbortController().signal, allowNetwork: false, publish, ...context }));
  return { outcome, published, models: p.getModels().map((m: any) => m.id) };
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("catalogs", {
    handler: async (_args, ctx) => {
      const hits: any[] = [];
      const served = { id: "served-model", name: "Served", api: "openai-completions", baseUrl: "https://api.groq.com/openai/v1", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 };
      const server = http.createServer((req, res) => {
        hits.push({ url: req.url, agent: req.headers["user-agent"] ?? null, accept: req.headers.accept ?? null });
        res.writeHead(200, { "content-type": "application/json", "last-modified": "Wed, 02 Dec 2026 10:00:00 GMT", etag: '"served-1"' });
        res.end(JSON.stringify({ models: [served] }));
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
      const catalogBaseUrl = `http://127.0.0.1:${(server.address() as any).port}`;
      const out: any = {};
      try {
        const rt: any = await ModelRuntime.create({ catalogBaseUrl } as any);
        out.groq = await refresh(rt.getProvider("groq"), { allowNetwork: true, force: true });
        out.groqServed = rt.getProvider("groq").getModels().find((m: any) => m.id === "served-model") ?? null;
        out.openrouter = await refresh(rt.getProvider("openrouter"), { allowNetwork: true });
        out.hits = hits.map((h) => ({ ...h, url: h.url.replace(/\?.*/, "") + "?" + new URLSearchParams(h.url.split("?")[1] ?? "").toString() }));

        const radius = rt.getProvider("radius");
        out.radiusShipped = radius.getModels().length > 0;
        const kept = { baseUrl: "https://gateway.example/v1", models: [gatewayModel, { id: "no-limits", name: "Broken" }] };
        out.radiusImport = await refresh(radius, { credential: { type: "oauth", access: "old-access", refresh: "r", expires: FAR, gatewayConfig: kept } });
        out.radiusImportModels = radius.getModels();
        out.radiusKey = await refresh(radius, { allowNetwork: true, credential: { type: "api_key", key: "radius-key" } });
        out.radiusKeyModels = radius.getModels();
        const stored = { models: [{ ...gatewayModel, id: "stored-model", provider: "radius" }, { ...gatewayModel, id: "other", provider: "elsewhere" }], checkedAt: 1 };
        out.radiusLogin = await refresh(radius, { allowNetwork: true, stored, credential: { type: "oauth", access: "radius-access", refresh: "r", expires: FAR } });
        out.radiusNone = await refresh(rt.getProvider("radius"), { allowNetwork: true });
      } finally {
        server.close();
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// `/catalogs`' note in one program (pi-rpc, or pi 1.6.0 when `reference`),
/// with the `authorization` header of each request Radius's gateway got.
async fn catalogs_note(reference: bool) -> Option<Value> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    let fake = FakeOAuth::start().await.expect("the fake OAuth server");
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "catalogs.ts", CATALOGS);
    let overrides = origin_overrides(&fake.overrides());
    let preload = format!("--import=file://{}", repo_root().join("tests/oauth/route_fetch.mjs").display());
    let mut pi = if reference {
        let mut cmd = reference_command(&sb, &node, &cli);
        cmd.arg("--no-session").env("PI_RPC_ORIGIN_OVERRIDES", &overrides);
        Pi::start_unchecked(cmd)
    } else {
        let env = [("PI_RPC_ORIGIN_OVERRIDES", Path::new(&overrides)), ("NODE_OPTIONS", Path::new(&preload))];
        sb.spawn_with_env(&["--no-session"], &env)
    };
    let mut note = notified_json(&mut pi, &sb, "catalogs").await;
    let gateway: Vec<Value> = fake
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/radius/v1/config"))
        .map(|r| json!(r.header("authorization")))
        .collect();
    note["gateway"] = json!(gateway);
    pi.close_stdin();
    pi.wait().await;
    Some(note)
}

#[tokio::test]
async fn built_in_providers_refresh_their_catalogs_as_pi_ais() {
    let Some(ours) = catalogs_note(false).await else { return };
    let Some(theirs) = catalogs_note(true).await else { return };
    assert_eq!(ours["groqServed"]["provider"], "groq", "{ours}");
    assert_eq!(ours["radiusKey"]["models"], json!(["gateway-model-for-radius-key"]), "{ours}");
    assert_eq!(ours["gateway"], json!(["Bearer radius-key", "Bearer radius-access", null]), "{ours}");
    for part in [
        "groq",
        "groqServed",
        "openrouter",
        "hits",
        "radiusShipped",
        "radiusImport",
        "radiusImportModels",
        "radiusKey",
        "radiusKeyModels",
        "radiusLogin",
        "radiusNone",
        "gateway",
    ] {
        assert_eq!(ours[part], theirs[part], "{part}: pi-rpc, then pi 1.6.0");
    }
}
