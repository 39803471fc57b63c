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
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
