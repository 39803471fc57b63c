//! pi's `ModelRuntime` over files of the extension's choosing and
//! `parseArgs`, inside an extension, side by side with pi 1.6.0:
//! `ModelRuntime.create({authPath, modelsPath})` (that models.json's
//! providers, that auth.json's credentials, auth status and sources),
//! runtime API keys (`setRuntimeApiKey`/`removeRuntimeApiKey`, over the
//! stored key for that runtime only, not written, listed by
//! `listCredentials`), an API-key `login` (the caller's `prompt`, the
//! credential written in pi's format), `logout` (removed from the file), the
//! same runtime keys on the default runtime (`ctx.modelRegistry` keeps its
//! own key), and pi's `parseArgs` over argument lists that exercise every
//! option kind, `@` files, `--`, unknown flags and diagnostics. Each part is
//! an extension command that notifies a JSON summary; pi-rpc's is compared
//! with pi 1.6.0's whole. An OAuth `login` (GitHub Copilot's device code,
//! against the fake OAuth server) runs with the caller's `prompt` and
//! `notify` and stores its credential in the runtime's `auth.json`.
//! A runtime's model calls (and an SDK session made with it) bring its own
//! key to the fake model server; its deferred-response calls fail as pi's.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use serde_json::{Value, json};

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command, spawn_reference};
use crate::extension_sdk_services::{notified_json, notified_text, side_by_side, start_module};
use crate::harness::{Pi, Sandbox};

const SDK_MODELS: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { ModelRuntime, ModelRegistry, parseArgs, createAgentSession, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const failure = async (f: () => Promise<unknown>) => {
  try { await f(); return null; } catch (e: any) { return String(e?.message ?? e); }
};
const ids = (ms: readonly any[]) => ms.map((m) => `${m.provider}/${m.id}`).sort();
const readJson = (file: string) => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : null);

export default function (pi: ExtensionAPI) {
  pi.registerCommand("stores", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "other");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      const modelsPath = path.join(dir, "models.json");
      fs.writeFileSync(modelsPath, JSON.stringify({ providers: { mine: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "mine-a", name: "Mine A", contextWindow: 1000, maxTokens: 100 }, { id: "mine-b" }] }, keyed: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "keyed-config-key", models: [{ id: "keyed-1" }] } } }));
      fs.writeFileSync(authPath, JSON.stringify({ mine: { type: "api_key", key: "stored-mine-key" } }));
      const rt = await ModelRuntime.create({ authPath, modelsPath });
      const reg = new ModelRegistry(rt);
      const custom = ids(rt.getModels().filter((m: any) => m.provider === "mine" || m.provider === "keyed" || m.provider === "fake"));
      const mineA = rt.getModel("mine", "mine-a");
      const out: any = {
        custom,
        mineA: mineA ? { name: mineA.name, contextWindow: mineA.contextWindow, maxTokens: mineA.maxTokens, baseUrl: mineA.baseUrl, api: mineA.api } : null,
        available: ids((await rt.getAvailable()).filter((m: any) => ["mine", "keyed", "fake"].includes(m.provider))),
        status: { mine: rt.getProviderAuthStatus("mine"), keyed: rt.getProviderAuthStatus("keyed"), fake: rt.getProviderAuthStatus("fake") },
        hasAuth: { mine: rt.hasConfiguredAuth("mine"), keyed: rt.hasConfiguredAuth("keyed"), nope: rt.hasConfiguredAuth("nope") },
        keyMine: (await reg.getApiKeyAndHeaders(mineA)),
        credentials: [...(await rt.listCredentials())].sort((a: any, b: any) => a.providerId.localeCompare(b.providerId)),
      };
      await rt.setRuntimeApiKey("mine", "runtime-mine-key");
      await rt.setRuntimeApiKey("keyed", "runtime-keyed-key");
      out.runtime = {
        keyMine: (await rt.getAuth("mine"))?.auth?.apiKey ?? null,
        keyKeyed: await reg.getApiKeyForProvider("keyed"),
        status: rt.getProviderAuthStatus("mine"),
        credentials: [...(await rt.listCredentials())].sort((a: any, b: any) => a.providerId.localeCompare(b.providerId)),
        file: readJson(authPath),
      };
      const other = await ModelRuntime.create({ authPath, modelsPath });
      out.otherRuntime = (await other.getAuth("mine"))?.auth?.apiKey ?? null;
      await rt.removeRuntimeApiKey("mine");
      out.removed = { keyMine: (await rt.getAuth("mine"))?.auth?.apiKey ?? null, status: rt.getProviderAuthStatus("mine") };
      const prompts: any[] = [];
      const events: any[] = [];
      const cred = await rt.login("keyed", "api_key", {
        prompt: async (p: any) => { prompts.push({ type: p.type, message: p.message }); return "logged-in-key"; },
        notify: (e: any) => events.push(e),
      });
      out.login = { cred, prompts, events, file: readJson(authPath), key: (await other.getAuth("keyed"))?.auth?.apiKey ?? null };
      await rt.logout("mine");
      out.logout = { file: readJson(authPath), status: rt.getProviderAuthStatus("mine"), available: ids((await rt.getAvailable()).filter((m: any) => ["mine", "keyed"].includes(m.provider))) };
      out.loginUnknown = await failure(() => rt.login("nope-provider", "api_key", { prompt: async () => "x", notify: () => {} }));
      out.ctxUntouched = (await ctx.modelRegistry.getApiKeyForProvider("fake")) ?? null;
      const def = await ModelRuntime.create();
      await def.setRuntimeApiKey("fake", "runtime-fake-key");
      const defReg = new ModelRegistry(def);
      out.defaultRuntime = {
        key: (await def.getAuth("fake"))?.auth?.apiKey ?? null,
        viaRegistry: (await defReg.getApiKeyAndHeaders(def.getModel("fake", "fake-model"))).apiKey ?? null,
        status: def.getProviderAuthStatus("fake"),
        credentials: await def.listCredentials(),
        ctx: (await ctx.modelRegistry.getApiKeyForProvider("fake")) ?? null,
      };
      await def.removeRuntimeApiKey("fake");
      out.defaultRuntime.after = (await def.getAuth("fake"))?.auth?.apiKey ?? null;
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("calls", {
    handler: async (_args, ctx) => {
      // Another models.json with the fake server's provider and no key; the key is in that auth.json.
      const dir = path.join(ctx.cwd, "calls");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      const modelsPath = path.join(dir, "models.json");
      const baseUrl = ctx.modelRegistry.find("fake", "fake-model")?.baseUrl;
      fs.writeFileSync(modelsPath, JSON.stringify({ providers: { fake: { baseUrl, api: "openai-completions", models: [{ id: "fake-model" }] } } }));
      fs.writeFileSync(authPath, JSON.stringify({ fake: { type: "api_key", key: "file-key" } }));
      const rt = await ModelRuntime.create({ authPath, modelsPath });
      const model = rt.getModel("fake", "fake-model");
      const question = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };
      const text = (m: any) => (m?.content ?? []).filter((c: any) => c.type === "text").map((c: any) => c.text).join("") || m?.errorMessage;
      const out: any = {};
      out.complete = text(await rt.complete(model, question));
      await rt.setRuntimeApiKey("fake", "runtime-key");
      out.completeSimple = text(await rt.completeSimple(model, question));
      out.callerKey = text(await rt.complete(model, question, { apiKey: "caller-key" }));
      const def = await ModelRuntime.create();
      await def.setRuntimeApiKey("fake", "default-runtime-key");
      out.defaultRuntime = text(await def.completeSimple(def.getModel("fake", "fake-model"), question));
      const { session } = await createAgentSession({ cwd: ctx.cwd, model, modelRuntime: rt, sessionManager: SessionManager.inMemory(ctx.cwd) });
      await session.prompt("hello");
      out.session = text(session.messages.filter((m: any) => m.role === "assistant").at(-1));
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("deferred", {
    handler: async (_args, ctx) => {
      const rt = await ModelRuntime.create();
      const model = rt.getModel("fake", "fake-model");
      const handle = { id: "deferred-1" };
      // Times left out: they differ from run to run.
      const { timestamp: _t, durationMs: _d, ...fetched }: any = await rt.fetchDeferred(model, handle);
      const events: string[] = [];
      for await (const event of rt.streamDeferred(model, handle)) events.push(event.type);
      const thrown = async (f: () => Promise<unknown>) => {
        try { await f(); return null; } catch (e: any) { return { name: e?.name, code: e?.code, message: e?.message }; }
      };
      const unknownModel = { ...model, provider: "nope-provider" };
      const out = {
        fetched,
        events,
        cancel: await thrown(() => rt.cancelDeferred(model, handle)),
        unknown: (await rt.fetchDeferred(unknownModel, handle)).errorMessage,
        cancelUnknown: await thrown(() => rt.cancelDeferred(unknownModel, handle)),
      };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("oauth", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "oauth");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      const rt = await ModelRuntime.create({ authPath, modelsPath: null });
      const prompts: any[] = [];
      const events: any[] = [];
      const credential: any = await rt.login("github-copilot", "oauth", {
        prompt: async (p: any) => { prompts.push({ type: p.type, message: p.message, placeholder: p.placeholder ?? null }); return ""; },
        notify: (e: any) => events.push(e.type === "device_code" ? { type: e.type, code: typeof e.userCode === "string" && e.userCode.length > 0, verificationUri: e.verificationUri } : { type: e.type, message: e.message ?? null }),
      });
      const kinds = (o: any) => Object.fromEntries(Object.entries(o ?? {}).map(([k, v]) => [k, typeof v]));
      const file = readJson(authPath);
      const out: any = {
        // As JSON (what is stored): pi's in-memory object also carries keys set to undefined.
        credential: kinds(JSON.parse(JSON.stringify(credential))),
        type: credential?.type,
        stored: kinds(file?.["github-copilot"]),
        sameAsReturned: JSON.stringify(file?.["github-copilot"]) === JSON.stringify(credential),
        status: rt.getProviderAuthStatus("github-copilot"),
        oauth: rt.isUsingOAuth("github-copilot"),
        credentials: await rt.listCredentials(),
        prompts,
        events,
      };
      await rt.logout("github-copilot");
      out.after = readJson(authPath);
      // A login the caller aborts (at its question) fails and stores nothing.
      const controller = new AbortController();
      const aborted = await failure(() => rt.login("github-copilot", "oauth", {
        signal: controller.signal,
        prompt: async () => { controller.abort(); return ""; },
        notify: () => {},
      }));
      out.aborted = { failed: aborted !== null, file: readJson(authPath) };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("args", {
    handler: async (_args, ctx) => {
      const cases = [
        [],
        ["--provider", "openai", "--model", "gpt-4o:high", "hello", "@file.md", "world"],
        ["-p", "say hi", "--thinking", "high", "--tools", "read,bash", "-nc", "-ne", "--no-session"],
        ["--thinking", "extreme", "--mode", "json", "--models", "a, b,,c", "-xt", "bash", "-c", "-r"],
        ["--mode", "weird", "--plan", "--preset=fast", "--level", "high", "--quiet", "--at", "@x"],
        ["-e", "a.ts", "--extension", "b.ts", "--skill", "s", "--prompt-template", "t.md", "--theme", "th", "-ns", "-np", "--no-themes"],
        ["--list-models", "--verbose", "--offline", "--approve", "--session", "abc", "--session-dir", "/tmp/s", "--fork", "f"],
        ["--list-models", "claude", "-na", "--name", "My Session", "--session-id", "id-1", "--export", "out.html", "--api-key", "sk"],
        ["--system-prompt", "S", "--append-system-prompt", "A1", "--append-system-prompt", "A2", "-nt", "-nbt", "--no-mcp", "--tui-mode", "regular"],
        ["-x", "--", "--literal", "@lit"],
        ["--help", "-v", "--use-theme", "dark"],
      ];
      const shape = (a: any) => ({ ...a, unknownFlags: Object.fromEntries(a.unknownFlags) });
      ctx.ui.notify(JSON.stringify(cases.map((c) => shape(parseArgs(c)))), "info");
    },
  });
}
"#;

/// What `/<command>` notified in pi-rpc or pi 1.6.0, sandbox paths replaced.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let (sb, mut pi) = start_module(reference, ("sdk-models.ts", SDK_MODELS), Some(json!({})), |_| {}).await?;
    Some(notified_json(&mut pi, &sb, command).await)
}

/// `/oauth` in pi-rpc or pi 1.6.0, every OAuth origin sent to the fake OAuth
/// server (pi-rpc's test hook `PI_RPC_ORIGIN_OVERRIDES`; pi 1.6.0 through
/// `tests/oauth/route_fetch.mjs`, preloaded).
async fn run_oauth(reference: bool) -> Option<Value> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    let fake = FakeOAuth::start().await.expect("the fake OAuth server");
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "sdk-models.ts", SDK_MODELS);
    sb.write_models(&sb.server().base_url(), json!({}));
    let overrides = crate::harness::origin_overrides(&fake.overrides());
    let mut pi = if reference {
        let mut cmd = reference_command(&sb, &node, &cli);
        cmd.args(["--no-session", "--offline"]).env("PI_OFFLINE", "1");
        cmd.env("PI_RPC_ORIGIN_OVERRIDES", &overrides).env("BROWSER", "none");
        Pi::start_unchecked(cmd)
    } else {
        let env = [("PI_RPC_ORIGIN_OVERRIDES", Path::new(&overrides)), ("BROWSER", Path::new("none"))];
        sb.spawn_with_env(&["--no-session"], &env)
    };
    let text = notified_text(&mut pi, &sb, "oauth").await.replace(&fake.origin(), "<oauth>");
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("/oauth notified {text}: {e}")))
}

/// `/calls` in pi-rpc or pi 1.6.0: what it notified, and the key of each
/// request the fake model server received.
async fn run_calls(reference: bool) -> Option<(Value, Vec<String>)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "sdk-models.ts", SDK_MODELS);
    sb.write_models(&sb.server().base_url(), json!({}));
    for _ in 0..5 {
        sb.server().push(Reply::text("Called."));
    }
    let mut pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
    let text = notified_text(&mut pi, &sb, "calls").await;
    let keys = sb.server().requests().iter().map(|r| r.header("authorization").unwrap_or("none").to_string()).collect();
    Some((serde_json::from_str(&text).unwrap_or_else(|e| panic!("/calls notified {text}: {e}")), keys))
}

async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn a_model_runtime_over_other_files_reads_and_writes_them_as_pis() {
    let Some((ours, theirs)) = both("stores").await else { return };
    // That models.json's providers and that auth.json's key, not pi-rpc's own.
    assert_eq!(ours["custom"], json!(["keyed/keyed-1", "mine/mine-a", "mine/mine-b"]), "{ours}");
    assert_eq!(ours["keyMine"]["apiKey"], "stored-mine-key", "{ours}");
    // A runtime key wins for that runtime only and is never written.
    assert_eq!(ours["runtime"]["keyMine"], "runtime-mine-key", "{ours}");
    assert_eq!(ours["otherRuntime"], "stored-mine-key", "{ours}");
    assert_eq!(ours["runtime"]["file"], json!({"mine": {"type": "api_key", "key": "stored-mine-key"}}), "{ours}");
    // The login's key is in the file (another runtime reads it); the logout's provider is gone from it.
    assert_eq!(ours["login"]["key"], "logged-in-key", "{ours}");
    assert_eq!(ours["logout"]["file"], json!({"keyed": {"type": "api_key", "key": "logged-in-key"}}), "{ours}");
    assert_eq!(ours["defaultRuntime"]["key"], "runtime-fake-key", "{ours}");
    assert_eq!(ours["defaultRuntime"]["ctx"], "test-key-123", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn parse_args_answers_pis_args() {
    let Some((ours, theirs)) = both("args").await else { return };
    assert_eq!(ours[1]["fileArgs"], json!(["file.md"]), "{ours}");
    assert_eq!(
        ours[4]["unknownFlags"],
        json!({"plan": true, "preset": "fast", "level": "high", "quiet": true, "at": true})
    );
    let (ours, theirs) = (ours.as_array().expect("cases"), theirs.as_array().expect("cases"));
    assert_eq!(ours.len(), theirs.len());
    for (i, (ours, theirs)) in ours.iter().zip(theirs).enumerate() {
        assert_eq!(ours, theirs, "case {i}: pi-rpc, then pi 1.6.0");
    }
}

#[tokio::test]
async fn an_oauth_login_runs_with_the_callers_interaction_as_pis() {
    let Some(ours) = run_oauth(false).await else { return };
    let Some(theirs) = run_oauth(true).await else { return };
    // The device code was shown, the token stored in the runtime's file as returned, then logged out.
    assert_eq!(ours["type"], "oauth", "{ours}");
    assert_eq!(ours["sameAsReturned"], true, "{ours}");
    assert!(ours["events"].as_array().is_some_and(|e| e.iter().any(|e| e["type"] == "device_code")), "{ours}");
    assert_eq!(ours["after"], json!({}), "{ours}");
    assert_eq!(ours["aborted"], json!({"failed": true, "file": {}}), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_model_runtimes_calls_use_its_own_credentials_as_pis() {
    let Some(ours) = run_calls(false).await else { return };
    let Some(theirs) = run_calls(true).await else { return };
    // Its auth.json's key, then its runtime key, the caller's key over both; the default
    // runtime's own runtime key; an SDK session made with the runtime uses its key.
    let expected =
        ["file-key", "runtime-key", "caller-key", "default-runtime-key", "runtime-key"].map(|k| format!("Bearer {k}"));
    assert_eq!(ours.1, expected, "{:?}", ours.0);
    assert_eq!(ours.0["session"], "Called.", "{}", ours.0);
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn deferred_responses_are_refused_as_pis() {
    let Some((ours, theirs)) = both("deferred").await else { return };
    // No provider of the catalog defers responses: the stream ends with pi's error, cancel throws it.
    let refusal = "Provider fake does not support deferred responses";
    assert_eq!(ours["fetched"]["errorMessage"], refusal, "{ours}");
    assert_eq!(ours["events"], json!(["error"]), "{ours}");
    assert_eq!(ours["cancel"]["message"], refusal, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
