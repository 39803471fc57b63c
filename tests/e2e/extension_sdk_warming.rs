//! Prompt-cache warming of an SDK session, side by side with pi 1.6.0: a
//! session over a model whose `promptCache` lifetime is 15 s has its
//! request re-sent with a one-token cap 5 s after it, once pi's decision
//! (asked of the session's own extensions' `cache_warming_decision`) says
//! `warm`; the refresh's usage is written as a `usage` entry of kind
//! `cache_warm` and told as `entry_appended`; an extension's `stop` at the
//! next decision ends warming. `cacheWarmingStatus` is read before the
//! first request, once the run settled, after the stop and after
//! `setCacheWarmingMode("off")`. An extension command notifies a JSON
//! summary (helpers of extension_sdk_runner.rs); pi-rpc's is compared with
//! pi 1.6.0's whole.
//!
//! Nothing is timed: the command waits for the second decision, and each
//! decision is shown as a status line, so no line is more than pi's 5 s
//! refresh delay away.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;

const SDK_WARMING: &str = r#"import {
  createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("warmed", {
    handler: async (_args, ctx) => {
      const decisions: any[] = [];
      const capped: any[] = [];
      const errors: string[] = [];
      let secondDecision: () => void = () => {};
      const second = new Promise<void>((resolve) => { secondDecision = resolve; });
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [(sub: ExtensionAPI) => {
        // pi's own decision first, then a stop.
        sub.on("cache_warming_decision", (e: any) => {
          decisions.push(e);
          ctx.ui.setStatus("warming", `decision ${decisions.length}`);
          if (decisions.length < 2) return undefined;
          setTimeout(secondDecision, 0);
          return { action: "stop" };
        });
        sub.on("before_provider_request", (e: any) => { capped.push(e.payload.max_completion_tokens ?? e.payload.max_tokens ?? null); });
      }] });
      await resourceLoader.reload();
      // A 15 s cache lifetime and prices that make a refresh of a big prompt worth it.
      const model = { ...ctx.model, cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, promptCache: { short: 15 } };
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model, noTools: true } as any);
      await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
      const sm: any = session.sessionManager;
      const at = (id: string) => sm.getEntries().findIndex((x: any) => x.id === id);
      const statuses: any[] = [];
      const status = () => {
        const { nextWarmAt, ...rest } = (session as any).cacheWarmingStatus;
        statuses.push([typeof nextWarmAt, rest]);
      };
      status();
      const appended: any[] = [];
      session.subscribe((e: any) => {
        if (e.type === "entry_appended") {
          const { id, parentId, timestamp, ...rest } = e.entry;
          appended.push([at(id), at(parentId), typeof timestamp, rest]);
        }
      });
      await session.prompt("hello");
      status();
      await second;
      status();
      (session as any).setCacheWarmingMode("off");
      status();
      ctx.ui.notify(JSON.stringify({
        decisions, capped, errors, appended, statuses,
        entries: sm.getEntries().map((x: any) => [x.type, x.message?.role ?? x.kind ?? null]),
        messages: session.messages.map((m: any) => m.role),
      }), "info");
      session.dispose();
    },
  });
}
"#;

/// Prompt size: big enough that pi says `warm` once the session is idle.
const PROMPT: u64 = 400_000;

#[tokio::test]
async fn an_sdk_session_keeps_its_prompt_cache_warm_as_pi_does() {
    let replies = [Reply::text("Hello.").usage(PROMPT, 1, 0), Reply::text("Hello.").usage(PROMPT, 1, PROMPT)];
    let module = ("sdk-warming.ts", SDK_WARMING);
    let run = |reference, command: String| {
        let replies = replies.clone();
        async move { run_module(reference, module, &command, &replies).await }
    };
    let Some((ours, theirs)) = side_by_side(run, "warmed").await else { return };
    // pi's idle decision twice (the second answered `stop`), one refresh capped at one token.
    let decision = json!({"type": "cache_warming_decision", "warmCost": 0.120015, "missCost": 1.38,
        "continuationProbability": 0.15, "action": "warm"});
    assert_eq!(ours["decisions"], json!([decision, decision]), "{ours}");
    assert_eq!(ours["capped"].as_array().map(Vec::len), Some(2), "{ours}");
    assert_eq!(ours["capped"][1], 1, "{ours}");
    assert_eq!(ours["errors"], json!([]), "{ours}");
    // The refresh's usage written after the answer, outside the conversation.
    let appended = ours["appended"].as_array().cloned().unwrap_or_default();
    assert_eq!(appended.len(), 1, "{ours}");
    assert_eq!(appended[0][3]["kind"], "cache_warm", "{ours}");
    assert_eq!(appended[0][3]["usage"]["cacheRead"], PROMPT, "{ours}");
    // pi's status: waiting, scheduled (idle phase), stopped by the extension, disabled.
    let states: Vec<&Value> =
        ours["statuses"].as_array().map(|s| s.iter().map(|s| &s[1]["reason"]).collect()).unwrap_or_default();
    assert_eq!(
        states,
        [
            &json!("waiting for first request"),
            &Value::Null,
            &json!("stopped by extension"),
            &json!("cache warming disabled")
        ],
        "{ours}"
    );
    assert_eq!(ours["statuses"][1][1]["state"], "scheduled", "{ours}");
    assert_eq!(ours["statuses"][2][1]["extensionOverride"], true, "{ours}");
    let roles = ours["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(roles[roles.len().saturating_sub(2)..], [json!("user"), json!("assistant")], "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
