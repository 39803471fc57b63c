//! The last SDK members the export audit listed, side by side with pi 1.6.0:
//! `AgentSession.summarizeForBugReport` (the request it makes of the
//! session's model and what it returns or throws; its words are pi-rpc's
//! own, so the texts are compared by what they carry), `ProjectTrustStore`'s
//! `getEntry` / `setMany` (answers and the file written),
//! `hasTrustRequiringProjectResources`,
//! `DefaultResourceLoader.loadProjectTrustExtensions` with
//! `reload({resolveProjectTrust})`, and `ExtensionRunner.resolveToolRenderers`.
//! Each is an extension command whose JSON note (and, for the bug report,
//! the fake model's requests) is compared whole.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::module_note;
use crate::extension_sdk_services::{notified_json, side_by_side, start_module};

const SDK_BUG_REPORT: &str = r#"import { createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("bugrep", {
    handler: async (_args, ctx) => {
      const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false } } as any);
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader } as any);
      const s: any = session;
      const report = async (hint?: string) => {
        try { return await s.summarizeForBugReport({ hint, signal: new AbortController().signal }); }
        catch (e: any) { return `threw: ${e.message}`; }
      };
      await session.prompt("alpha ".repeat(60).trim());
      await session.prompt("second question: list the files");
      const outcomes = [await report("  the listing never came  "), await report(), await report(), await report(), await report()];
      const stopped = new AbortController();
      stopped.abort();
      try { outcomes.push(await s.summarizeForBugReport({ signal: stopped.signal })); } catch (e: any) { outcomes.push(`threw: ${e.message}`); }
      // A roomier model: every message fits, and the answer's cap is 4096 tokens.
      await session.setModel(ctx.modelRegistry.find("fake", "fake-other")!);
      outcomes.push(await report());
      ctx.ui.notify(JSON.stringify({ outcomes, messages: session.messages.length, entries: session.sessionManager.getEntries().length }), "info");
      session.dispose();
    },
  });
}
"#;

/// What a bug-report request carries, its words left out (they are each program's own): the body's
/// keys and limits, the roles, and which parts of the conversation and hint the prompt holds.
fn request_shape(body: &Value) -> Value {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let text = |m: &Value| match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    let user = messages.iter().filter(|m| m["role"] == "user").map(text).collect::<Vec<_>>().join("\n");
    let mut keys: Vec<&str> = body.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    keys.sort_unstable();
    json!({
        "keys": keys,
        "model": body["model"],
        "maxTokens": [body["max_tokens"], body["max_completion_tokens"]],
        "stream": body["stream"],
        "tools": body.get("tools").is_some(),
        "roles": messages.iter().map(|m| m["role"].clone()).collect::<Vec<_>>(),
        "holds": {
            "firstPrompt": user.contains("alpha alpha"),
            "secondPrompt": user.contains("second question: list the files"),
            "lastAnswer": user.contains("The ls tool crashed."),
            "hint": user.contains("the listing never came"),
            "hintTrimmed": !user.contains("  the listing never came"),
        },
    })
}

/// `/bugrep`'s note in one program, with the shapes of the model requests the bug reports made.
async fn bug_report(reference: bool, command: String) -> Option<Value> {
    // A small window (100 tokens: the report sees the newest 60) and output cap (2000 < 4096).
    let models = json!({"contextWindow": 100, "maxTokens": 2000});
    let (sb, mut pi) = start_module(reference, ("sdk-bugrep.ts", SDK_BUG_REPORT), Some(models), |sb| {
        for reply in [
            Reply::text("Noted.").usage(10, 2, 0),
            Reply::text("The ls tool crashed.").usage(12, 5, 0),
            Reply::text("  ## Goal\nList the files.\n  "),
            Reply::text(""),
            Reply::tool_call("call_1", "read", r#"{"path":"x"}"#),
            Reply::openai_error(400, "bad request here", "invalid_request_error"),
            Reply::text("cut short").finish_reason("length"),
            Reply::text("Report of the other model."),
        ] {
            sb.server().push(reply);
        }
    })
    .await?;
    let mut note = notified_json(&mut pi, &sb, &command).await;
    let requests = sb.server().requests();
    note["reports"] = requests.iter().skip(2).map(|r| request_shape(&r.body)).collect();
    // The report's instructions are the same in each request of one program.
    let system = |r: &pi_compat::fake_server::RecordedRequest| r.body["messages"][0]["content"].clone();
    note["sameSystem"] = json!(requests.iter().skip(2).all(|r| system(r) == system(&requests[2])));
    pi.close_stdin();
    pi.wait().await;
    Some(note)
}

#[tokio::test]
async fn an_sdk_sessions_bug_report_summary_asks_and_answers_as_pis() {
    let Some((ours, theirs)) = side_by_side(bug_report, "bugrep").await else { return };
    let outcomes = &ours["outcomes"];
    assert_eq!(outcomes[0], "## Goal\nList the files.", "the answer, trimmed: {ours}");
    assert_eq!(outcomes[1], "threw: Bug report summary was empty", "{ours}");
    assert_eq!(outcomes[2], "threw: Bug report summary attempted to call a tool", "{ours}");
    assert!(outcomes[3].as_str().is_some_and(|t| t.starts_with("threw: Bug report summary failed: ")), "{ours}");
    let report = &ours["reports"][0];
    assert_eq!(report["tools"], false, "no tools offered: {ours}");
    assert_eq!(report["holds"]["firstPrompt"], false, "the oldest message is over the budget: {ours}");
    assert_eq!(report["holds"]["lastAnswer"], true, "{ours}");
    assert_eq!(report["holds"]["hint"], true, "{ours}");
    let roomy = &ours["reports"][5];
    assert_eq!(roomy["model"], "fake-other", "{ours}");
    assert_eq!(roomy["holds"]["firstPrompt"], true, "{ours}");
    assert_eq!(outcomes[6], "Report of the other model.", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

const SDK_TRUST: &str = r#"import { DefaultResourceLoader, hasTrustRequiringProjectResources, ProjectTrustStore, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as fs from "node:fs";
import * as path from "node:path";

const extension = (file: string, name: string, body = "") => {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `export default function (pi: any) { (globalThis as any).__trustLog.push(${JSON.stringify(name)}); ${body} }\n`);
};

export default function (pi: ExtensionAPI) {
  pi.registerCommand("trust", {
    handler: async (_args, ctx) => {
      const root = path.join(ctx.cwd, "trust-root");
      const agentDir = path.join(root, "agent");
      const work = path.join(root, "work");
      const proj = path.join(work, "proj");
      const sub = path.join(proj, "sub");
      fs.mkdirSync(sub, { recursive: true });
      const file = path.join(agentDir, "trust.json");
      const read = () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null);
      const attempt = (f: () => unknown) => { try { return f() ?? null; } catch (e: any) { return `threw: ${e.code ?? ""} ${e.message}`; } };
      const store = new ProjectTrustStore(agentDir);
      const steps: any[] = [];
      steps.push(["empty", store.getEntry(proj), store.get(proj), read()]);
      store.setMany([{ path: work, decision: true }, { path: proj, decision: false }]);
      steps.push(["two", store.getEntry(sub), store.getEntry(proj), store.getEntry(root), store.get(sub), read()]);
      store.setMany([{ path: proj, decision: null }, { path: `${sub}/`, decision: true }, { path: path.join(proj, "missing", ".."), decision: false }]);
      steps.push(["changed", store.getEntry(proj), store.getEntry(path.join(sub, "deeper")), read()]);
      store.set(work, null);
      steps.push(["removed", store.getEntry(work), read()]);
      for (const text of ['{"/x": 1}', "[]", "{bad", '\uFEFF{"/a": true, "/b": null}']) {
        fs.writeFileSync(file, text);
        steps.push([text, attempt(() => store.getEntry("/a/b")), attempt(() => store.getEntry("/b"))]);
      }
      fs.mkdirSync(`${file}.lock`);
      steps.push(["locked", attempt(() => store.get(proj)), attempt(() => store.setMany([]))]);
      fs.rmdirSync(`${file}.lock`);
      const resources: any[] = [hasTrustRequiringProjectResources(proj)];
      fs.mkdirSync(path.join(proj, ".pi", "other"), { recursive: true });
      resources.push(hasTrustRequiringProjectResources(proj));
      fs.mkdirSync(path.join(work, ".agents", "skills"), { recursive: true });
      resources.push(hasTrustRequiringProjectResources(sub));
      fs.rmSync(path.join(work, ".agents"), { recursive: true });
      fs.writeFileSync(path.join(proj, ".pi", "mcp.json"), "{}");
      resources.push(hasTrustRequiringProjectResources(proj), hasTrustRequiringProjectResources(work));

      // The project-trust pass, then the session's set.
      fs.rmSync(path.join(proj, ".pi", "mcp.json"));
      (globalThis as any).__trustLog = [];
      const log = (globalThis as any).__trustLog;
      extension(path.join(agentDir, "extensions", "user.ts"), "user");
      extension(path.join(agentDir, "extensions", "broken.ts"), "broken", "throw new Error('broken on load');");
      extension(path.join(proj, ".pi", "extensions", "project.ts"), "project");
      extension(path.join(root, "cli.ts"), "cli");
      extension(path.join(root, "listed.ts"), "listed");
      fs.writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ extensions: [path.join(root, "listed.ts")] }));
      const described = (r: any) => ({ paths: r.extensions.map((e: any) => e.path), errors: r.errors.map((e: any) => [e.path, e.error]), runtime: typeof r.runtime });
      const loader = (settingsManager: any) => new DefaultResourceLoader({ cwd: proj, agentDir, settingsManager, additionalExtensionPaths: [path.join(root, "cli.ts")], extensionFactories: [() => { log.push("inline"); }] } as any);
      const trustPass: any = {};
      const settingsManager = SettingsManager.create(proj, agentDir);
      const first = loader(settingsManager);
      const pre = await first.loadProjectTrustExtensions();
      trustPass.pre = described(pre);
      trustPass.preTrusted = settingsManager.isProjectTrusted();
      trustPass.loaderAfterPre = first.getExtensions().extensions.length;
      trustPass.logPre = log.splice(0);
      for (const decision of [true, false]) {
        const settings = SettingsManager.create(proj, agentDir);
        const other = loader(settings);
        let seen: any;
        await other.reload({ resolveProjectTrust: async ({ extensionsResult }: any) => { seen = extensionsResult; return decision; } } as any);
        const final = other.getExtensions();
        trustPass[String(decision)] = {
          seen: described(seen), final: described(final), trusted: settings.isProjectTrusted(), log: log.splice(0),
          kept: final.extensions.filter((e: any) => seen.extensions.includes(e)).map((e: any) => e.path), sameRuntime: final.runtime === seen.runtime,
        };
      }
      ctx.ui.notify(JSON.stringify({ steps, resources, trustPass }).replaceAll(root, "<root>"), "info");
    },
  });
}
"#;

/// `/trust`'s note in one program.
async fn trust(reference: bool, command: String) -> Option<Value> {
    module_note(reference, ("sdk-trust.ts", SDK_TRUST), &[], &|_| {}, &command).await
}

#[tokio::test]
async fn the_project_trust_store_and_pass_answer_as_pis() {
    let Some((ours, theirs)) = side_by_side(trust, "trust").await else { return };
    let two = &ours["steps"][1];
    assert_eq!(two[1], json!({"path": "<root>/work/proj", "decision": false}), "the nearest decision: {ours}");
    assert_eq!(two[3], Value::Null, "none above: {ours}");
    assert_eq!(ours["resources"], json!([false, false, true, true, false]), "{ours}");
    let pass = &ours["trustPass"];
    assert_eq!(pass["preTrusted"], false, "{ours}");
    assert!(
        !pass["pre"]["paths"].to_string().contains("project.ts"),
        "the project's extension waits for trust: {ours}"
    );
    assert!(pass["true"]["final"]["paths"].to_string().contains("project.ts"), "{ours}");
    assert!(!pass["false"]["final"]["paths"].to_string().contains("project.ts"), "{ours}");
    assert_eq!(
        pass["true"]["log"].as_array().map(|l| l.iter().filter(|n| *n == "user").count()),
        Some(1),
        "one load each: {ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

const SDK_RENDERERS: &str = r#"import { createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("renderers", {
    handler: async (_args, ctx) => {
      const trace: string[] = [];
      const renderCall = () => undefined;
      const renderResult = () => undefined;
      const ghostCall = () => undefined;
      const tools = (sub: any) => {
        sub.registerTool({ name: "shout", label: "Shout", description: "Shouts", parameters: Type.Object({}), renderCall, renderResult, execute: async () => ({ content: [{ type: "text", text: "HI" }], details: {} }) });
        sub.registerToolRenderer((name: string, next: () => any) => { trace.push(`first:${name}`); return name === "ghost" ? { renderCall: ghostCall } : next(); });
      };
      const wrapper = (sub: any) => {
        sub.registerToolRenderer((name: string, next: () => any) => { trace.push(`second:${name}`); const found = next(); return name === "shout" ? { ...found, renderShell: "self" } : found; });
      };
      const silent = (_sub: any) => {};
      const settingsManager = SettingsManager.inMemory({});
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true, extensionFactories: [tools, wrapper, silent] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader } as any);
      const runner: any = session.extensionRunner;
      const resolve = (name: string) => {
        const found = runner.resolveToolRenderers(name, () => (session as any).getToolDefinition(name));
        return found === undefined ? null : { call: found.renderCall === renderCall ? "registered" : found.renderCall === ghostCall ? "ghost" : typeof found.renderCall, result: found.renderResult === renderResult, shell: found.renderShell ?? null };
      };
      const answers = { shout: resolve("shout"), ghost: resolve("ghost"), nothing: resolve("nothing") };
      const base = runner.resolveToolRenderers("nothing", () => ({ renderCall: ghostCall }));
      ctx.ui.notify(JSON.stringify({
        answers, trace, base: base?.renderCall === ghostCall,
        perExtension: resourceLoader.getExtensions().extensions.map((e: any) => e.toolRenderers?.length ?? null),
      }), "info");
      session.dispose();
    },
  });
}
"#;

/// `/renderers`' note in one program.
async fn renderers(reference: bool, command: String) -> Option<Value> {
    module_note(reference, ("sdk-renderers.ts", SDK_RENDERERS), &[], &|_| {}, &command).await
}

#[tokio::test]
async fn an_sdk_runners_tool_renderers_resolve_as_pis() {
    let Some((ours, theirs)) = side_by_side(renderers, "renderers").await else { return };
    assert_eq!(ours["answers"]["shout"], json!({"call": "registered", "result": true, "shell": "self"}), "{ours}");
    assert_eq!(ours["answers"]["ghost"]["call"], "ghost", "{ours}");
    assert_eq!(ours["answers"]["nothing"], Value::Null, "{ours}");
    assert_eq!(ours["perExtension"], json!([1, 1, null]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
