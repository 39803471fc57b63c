//! pi 1.6.0's llama.cpp provider, as the session's model runtime gives it
//! to an extension (`ctx.modelRegistry.runtime.getProvider("llama.cpp")`):
//! its `refreshModels` restores a stored listing offline, and with the
//! network lists the login's server (a fake llama-server in router mode):
//! the same requests, the same publications (the listing kept with
//! `persist`) and the same models after, side by side with pi 1.6.0.
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::FakeServer;
use serde_json::{Value, json};

use crate::extension_host::write_module;
use crate::harness::Sandbox;

/// `/llama-refresh` runs the provider's `refreshModels` offline, then with
/// the network, with a login of the server at `SERVER_URL` and a stored
/// listing (one model's context window kept): what each phase published
/// and the provider's models after.
const REFRESH: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("llama-refresh", {
    handler: async (_args, ctx) => {
      const provider: any = (ctx.modelRegistry as any).runtime.getProvider("llama.cpp");
      const kept = { id: "preset", name: "preset", api: "openai-completions", provider: "llama.cpp", baseUrl: "http://127.0.0.1:1/v1",
        reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 4096, maxTokens: 4096 };
      const stored = { models: [kept], checkedAt: 1 };
      const published: any[] = [];
      const context = (allowNetwork: boolean) => ({
        credential: { type: "api_key", key: "sk-llama", env: { LLAMA_BASE_URL: SERVER_URL } },
        stored,
        publish: async (publication: any) => {
          publication.update?.();
          const persist = publication.persist && { models: publication.persist.models, checkedAt: typeof publication.persist.checkedAt };
          published.push({ allowNetwork, persist: persist ?? null, ids: provider.getAllModels().map((m: any) => `${m.type ?? "chat"}:${m.id}`) });
          return true;
        },
        allowNetwork,
        force: undefined,
        signal: new AbortController().signal,
        baseUrl: provider.baseUrl,
      });
      await provider.refreshModels(context(false));
      await provider.refreshModels(context(true));
      ctx.ui.notify(JSON.stringify({ published, chat: provider.getModels(), all: provider.getAllModels() }), "info");
    },
  });
}
"#;

/// One program's note of `/llama-refresh` (the server's URL as `SERVER`)
/// and the requests its server got (method, path, credential).
async fn refreshed(reference: bool) -> Option<(Value, Vec<String>)> {
    let sb = Sandbox::with_server().await;
    let server = FakeServer::start().await.expect("fake llama server");
    server.serve_llama_router(crate::llama_cpp::router());
    let url = server.url();
    write_module(&sb, "refresh.ts", &REFRESH.replace("SERVER_URL", &Value::from(format!("{url}/v1/")).to_string()));
    let mut pi = crate::extension_builtin_factories::start(&sb, reference, &[])?;
    pi.send(json!({"id": "r", "type": "prompt", "message": "/llama-refresh"})).await;
    let lines = pi.until(|v| v["method"] == "notify" || v["type"] == "extension_error").await;
    pi.close_stdin();
    let text = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().replace(&url, "SERVER");
    let note = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {lines:?}"));
    let requests = server
        .requests()
        .iter()
        .map(|r| {
            let auth = r.headers.iter().find(|(name, _)| name == "authorization").map(|(_, v)| v.as_str());
            format!("{} {} {}", r.method, r.path, auth.unwrap_or("-"))
        })
        .collect();
    Some((note, requests))
}

#[tokio::test]
async fn the_llama_providers_refresh_lists_the_server_as_pis() {
    let Some((ours, our_requests)) = refreshed(false).await else { return };
    let Some((theirs, their_requests)) = refreshed(true).await else { return };
    assert!(our_requests.iter().any(|r| r.starts_with("GET /models ")), "{our_requests:?}");
    let publications = ours["published"].as_array().cloned().unwrap_or_default();
    let persisted = publications.iter().map(|p| &p["persist"]["models"]).find(|m| m.is_array()).unwrap_or(&Value::Null);
    assert!(
        persisted.as_array().is_some_and(|m| m.iter().any(|m| m["id"] == "preset" && m["contextWindow"] == 4096)),
        "{ours}"
    );
    assert_eq!(our_requests, their_requests, "the server's requests: pi-rpc, then pi 1.6.0");
    for part in ["published", "chat", "all"] {
        assert_eq!(ours[part], theirs[part], "{part}: pi-rpc, then pi 1.6.0");
    }
}
