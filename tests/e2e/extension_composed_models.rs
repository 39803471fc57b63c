//! A built-in provider an extension registers again with its own `models`
//! (`pi.registerProvider("openai", {models, apiKey: "!command"})`), side by
//! side with pi 1.6.0: the provider's models are the extension's list in
//! its order (the registry's, the runtime provider's, the client's
//! `get_available_models`), and its `!command` key is a key that listing
//! does not run, run for the session's request to one of them.
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_builtin_providers::authorizations;
use crate::extension_host::write_module;
use crate::harness::Sandbox;

/// `openai` again with four models (an added one first, a built-in id, a
/// classifier, another added one) and a `!command` key leaving `MARKER`;
/// `/order` notifies the provider's models as the registry and the runtime list them.
const COMPOSED: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const model = (id: string) => ({ id, name: id.toUpperCase(), reasoning: false, input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 32000, maxTokens: 1000 });

export default function (pi: ExtensionAPI) {
  pi.registerProvider("openai", {
    baseUrl: BASE_URL,
    api: "openai-completions",
    apiKey: `!touch ${MARKER} && echo cmd-key`,
    models: [
      model("zz-added"),
      model("gpt-4o"),
      { ...model("judge"), type: "classifier", api: "llama-cpp-classify" } as any,
      model("aa-added"),
    ],
  });
  pi.registerCommand("order", {
    handler: async (_args, ctx) => {
      const own = (models: any[]) => models.filter((m) => m.provider === "openai").map((m) => `${m.type ?? "chat"}:${m.id}`);
      const runtime: any = (ctx.modelRegistry as any).runtime;
      ctx.ui.notify(JSON.stringify({
        all: own(ctx.modelRegistry.getAll()),
        available: own(ctx.modelRegistry.getAvailable()),
        provider: own(runtime.getProvider("openai").getAllModels()),
      }), "info");
    },
  });
}
"#;

/// What one program showed: `/order`'s note, `get_available_models`' openai
/// models, whether the command key had run after those listings and after a
/// prompt to `openai/zz-added`, and that request's `authorization`.
async fn composed(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let marker = sb.cwd.path().join("command-ran");
    let quoted = |text: String| Value::from(text).to_string();
    let source = COMPOSED
        .replace("BASE_URL", &quoted(sb.server().base_url()))
        .replace("${MARKER}", &marker.display().to_string());
    write_module(&sb, "composed.ts", &source);
    // Offline both (pi 1.6.0 runs `--offline`): no catalog refresh asks for the key.
    let mut pi =
        crate::extension_builtin_factories::start(&sb, reference, if reference { &[] } else { &["--offline"] })?;
    pi.send(json!({"id": "o", "type": "prompt", "message": "/order"})).await;
    let lines = pi.until(|v| v["method"] == "notify" || v["type"] == "extension_error").await;
    let text = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default();
    let note: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {lines:?}"));
    let listed = pi.call("m", json!({"type": "get_available_models"})).await;
    let available: Vec<String> = listed["data"]["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["provider"] == "openai")
        .map(|m| m["id"].as_str().unwrap_or_default().to_string())
        .collect();
    let ran_on_listing = marker.exists();
    let chosen = pi.call("s", json!({"type": "set_model", "provider": "openai", "modelId": "zz-added"})).await;
    sb.server().push(Reply::text("Answered."));
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
    let ran_on_request = marker.exists();
    pi.close_stdin();
    pi.wait().await;
    Some(json!({
        "note": note,
        "available": available,
        "ranOnListing": ran_on_listing,
        "chosen": chosen["success"],
        "ranOnRequest": ran_on_request,
        "auth": authorizations(&sb),
    }))
}

#[tokio::test]
async fn a_built_in_provider_with_an_extensions_models_lists_them_in_its_order_as_pi() {
    let Some(ours) = composed(false).await else { return };
    let Some(theirs) = composed(true).await else { return };
    assert_eq!(ours["note"]["all"][0], "chat:zz-added", "{ours}");
    assert_eq!(ours["auth"], json!(["Bearer cmd-key"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
