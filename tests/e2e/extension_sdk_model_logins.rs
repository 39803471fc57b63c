//! pi's `ModelRuntime.login(provider, "api_key", interaction)` for the
//! providers whose API-key login asks more than the key, side by side with
//! pi 1.6.0: Amazon Bedrock (a method `select`, then a bearer token, an AWS
//! profile, or the credential chain as it is, with pi's note and link),
//! Google Vertex AI (a method, then an API key, or the project, location and
//! a service account's file), Cloudflare Workers AI and AI Gateway (the key,
//! then the account ID and the gateway's ID). Each login's questions, notes,
//! returned credential, the runtime's auth status and `getAuth` afterwards,
//! another runtime's reading of the same `auth.json`, and the file itself
//! are compared whole: what one program writes the other reads the same.
//! A login a provider lacks is refused with pi's `ModelsError`: an API-key
//! login of OpenAI Codex (OAuth only, unless `models.json` gives it a key,
//! then asked for "API key"), an OAuth login of Groq or of a `models.json`
//! provider, an unknown provider.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::extension_sdk_services::{notified_json, side_by_side, start_module};

const SDK_MODEL_LOGINS: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const readJson = (file: string) => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : null);

/** Log in to `provider` with `answers` given in turn; what was asked and told, and what the runtime says after. */
async function login(rt: any, provider: string, answers: string[], type = "api_key") {
  const prompts: any[] = [];
  const events: any[] = [];
  try {
    const credential = await rt.login(provider, type, {
      prompt: async (p: any) => { prompts.push(p); return answers[prompts.length - 1] ?? ""; },
      notify: (e: any) => events.push(e),
    });
    return {
      credential, prompts, events,
      status: rt.getProviderAuthStatus(provider),
      auth: (await rt.getAuth(provider)) ?? null,
      configured: rt.hasConfiguredAuth(provider),
    };
  } catch (e: any) {
    return { error: { name: e?.name, code: e?.code ?? null, message: e?.message }, prompts, events };
  }
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("multi-step", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "logins");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      const rt = await ModelRuntime.create({ authPath, modelsPath: null });
      const out: any = {};
      out.bedrockToken = await login(rt, "amazon-bedrock", ["bearer-token", "bedrock-token"]);
      out.bedrockProfile = await login(rt, "amazon-bedrock", ["aws-profile", "my-profile"]);
      out.bedrockChain = await login(rt, "amazon-bedrock", ["credential-chain", ""]);
      out.bedrockUnknown = await login(rt, "amazon-bedrock", ["sso"]);
      out.vertexKey = await login(rt, "google-vertex", ["api-key", "vertex-key"]);
      out.vertexAdc = await login(rt, "google-vertex", ["adc", "my-project", "us-east5"]);
      out.vertexUnknown = await login(rt, "google-vertex", ["oauth"]);
      out.vertexServiceAccount = await login(rt, "google-vertex", ["service-account", "sa-project", "europe-west1", "/keys/sa.json"]);
      out.workersAi = await login(rt, "cloudflare-workers-ai", ["cf-key", "cf-account"]);
      out.gateway = await login(rt, "cloudflare-ai-gateway", ["gw-key", "gw-account", "gw-id"]);
      out.groq = await login(rt, "groq", ["groq-key"]);
      out.file = readJson(authPath);
      out.listed = await rt.listCredentials();
      // Another runtime over the file the logins wrote.
      const other = await ModelRuntime.create({ authPath, modelsPath: null });
      out.other = {};
      for (const id of ["amazon-bedrock", "google-vertex", "cloudflare-workers-ai", "cloudflare-ai-gateway", "groq"]) {
        out.other[id] = { status: other.getProviderAuthStatus(id), auth: (await other.getAuth(id)) ?? null };
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("refusals", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "refusals");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      const modelsPath = path.join(dir, "models.json");
      const plain = await ModelRuntime.create({ authPath, modelsPath: null });
      const out: any = {
        codex: await login(plain, "openai-codex", ["codex-key"]),
        groqOauth: await login(plain, "groq", [], "oauth"),
        unknown: await login(plain, "nope-provider", ["x"]),
      };
      fs.writeFileSync(modelsPath, JSON.stringify({ providers: {
        "openai-codex": { apiKey: "configured-codex-key" },
        mine: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "mine-1" }] },
      } }));
      const configured = await ModelRuntime.create({ authPath, modelsPath });
      out.codexConfigured = await login(configured, "openai-codex", ["codex-key"]);
      out.mineOauth = await login(configured, "mine", [], "oauth");
      out.file = readJson(authPath);
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
}
"#;

/// What `/<command>` notified in pi-rpc or pi 1.6.0 (both offline).
async fn run(reference: bool, command: &str) -> Option<Value> {
    let (sb, mut pi) =
        start_module(reference, ("sdk-model-logins.ts", SDK_MODEL_LOGINS), Some(json!({})), |_| {}).await?;
    Some(notified_json(&mut pi, &sb, command).await)
}

async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn multi_step_api_key_logins_ask_and_store_as_pis() {
    let Some((ours, theirs)) = both("multi-step").await else { return };
    // Bedrock asks the method first; a profile is kept as the credential's env, with pi's note.
    let profile = &ours["bedrockProfile"];
    assert_eq!(profile["prompts"][0]["type"], "select", "{ours}");
    assert_eq!(profile["prompts"][1], json!({"type": "text", "message": "Enter AWS profile name"}), "{ours}");
    assert_eq!(profile["credential"], json!({"type": "api_key", "env": {"AWS_PROFILE": "my-profile"}}), "{ours}");
    assert_eq!(profile["events"][0]["type"], "info", "{ours}");
    assert_eq!(
        profile["auth"],
        json!({"auth": {}, "env": {"AWS_PROFILE": "my-profile"}, "source": "stored credential"})
    );
    // Cloudflare's gateway: the key, the account and gateway IDs, sent as pi's gateway auth.
    let gateway = &ours["gateway"];
    assert_eq!(gateway["prompts"].as_array().map(Vec::len), Some(3), "{ours}");
    assert_eq!(
        gateway["credential"],
        json!({"type": "api_key", "key": "gw-key", "env": {"CLOUDFLARE_ACCOUNT_ID": "gw-account", "CLOUDFLARE_GATEWAY_ID": "gw-id"}})
    );
    assert_eq!(ours["vertexUnknown"]["error"]["message"], "Unknown Google Vertex AI auth method: oauth", "{ours}");
    // The file holds each provider's last login, as pi writes it; a keyless one counts as stored.
    assert_eq!(ours["file"]["amazon-bedrock"], json!({"type": "api_key"}), "{ours}");
    assert_eq!(ours["other"]["amazon-bedrock"]["status"], json!({"configured": true, "source": "stored"}), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn logins_a_provider_lacks_are_refused_as_pis() {
    let Some((ours, theirs)) = both("refusals").await else { return };
    let refusal = |name: &str, code: &str, message: &str| json!({"name": name, "code": code, "message": message});
    assert_eq!(ours["codex"]["error"], refusal("ModelsError", "auth", "OpenAI Codex does not support api_key login"));
    assert_eq!(ours["codex"]["prompts"], json!([]), "{ours}");
    assert_eq!(ours["groqOauth"]["error"], refusal("ModelsError", "auth", "Groq does not support oauth login"));
    assert_eq!(ours["unknown"]["error"], refusal("ModelsError", "provider", "Unknown provider: nope-provider"));
    // A key in models.json gives OpenAI Codex an API-key login of its own ("API key").
    assert_eq!(ours["codexConfigured"]["prompts"], json!([{"type": "secret", "message": "Enter API key"}]), "{ours}");
    assert_eq!(ours["mineOauth"]["error"]["message"], "mine does not support oauth login", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
