//! The smaller public members of pi's SDK `AgentSession`, side by side with
//! pi 1.6.0: `getSessionStats`, `getContextUsage` (also a sub-session
//! extension's `ctx.getContextUsage()`), `getUserMessagesForForking`,
//! `getCallableToolNames`, thinking-level cycling, the model scope, the
//! queue modes, `promptTemplates`, `routedModel`, `hasExtensionHandlers`,
//! `createReplacedSessionContext`, `refreshContext`, the runner's
//! `emitUserBash` and `ModelRuntime.getPhysicalModel`. An extension command
//! notifies a JSON summary (helpers of extension_sdk_runner.rs); pi-rpc's is
//! compared with pi 1.6.0's whole. The model's answer reports fixed usage,
//! so the token counts do not depend on either program's system prompt.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::module_note;
use crate::extension_sdk_services::side_by_side;
use crate::harness::Sandbox;

const SDK_MEMBERS: &str = r#"import { createAgentSession, DefaultResourceLoader, getAgentDir, ModelRuntime, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("members", {
    handler: async (_args, ctx) => {
      const usages: any[] = [];
      const own = (sub: ExtensionAPI) => {
        sub.on("agent_end", (_event: any, subCtx: any) => { usages.push(subCtx.getContextUsage() ?? null); });
        sub.on("turn_end", () => undefined);
        sub.on("user_bash", (event: any) => {
          if (event.command === "answer") return { result: { output: "from the extension", exitCode: 0, cancelled: false, truncated: false } };
          if (event.command === "bad") return { result: { output: 1 } };
          return undefined;
        });
      };
      const settingsManager = SettingsManager.inMemory({});
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true, extensionFactories: [own] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader } as any);
      await session.bindExtensions({});
      const s: any = session;
      const before = s.getContextUsage();
      const statsBefore = s.getSessionStats();
      await session.prompt("hello there");
      const user = session.sessionManager.getEntries().find((e: any) => e.type === "message" && e.message.role === "user");
      const forking = s.getUserMessagesForForking().map((m: any) => [m.entryId === user?.id, m.text]);
      const stats = s.getSessionStats();
      const thinking = { supports: s.supportsThinking(), levels: s.getAvailableThinkingLevels(), level: session.thinkingLevel, cycled: s.cycleThinkingLevel() ?? null, after: session.thinkingLevel };
      const scoped = [s.scopedModels.length];
      s.setScopedModels([{ model: ctx.model, thinkingLevel: "low" }]);
      scoped.push(s.scopedModels.map((m: any) => `${m.model.provider}/${m.model.id}:${m.thinkingLevel}`));
      s.setSteeringMode("all");
      s.setFollowUpMode("all");
      const modes = [s.steeringMode, s.followUpMode, settingsManager.getSteeringMode(), settingsManager.getFollowUpMode()];
      const replaced = s.createReplacedSessionContext();
      const userBash: any[] = [];
      for (const command of ["answer", "local", "bad"]) {
        try { userBash.push((await s.extensionRunner.emitUserBash({ type: "user_bash", command, excludeFromContext: false, cwd: ctx.cwd })) ?? null); }
        catch (e: any) { userBash.push(`threw: ${e.message}`); }
      }
      const runtime: any = await ModelRuntime.create();
      const physical = [runtime.getPhysicalModel(ctx.model!.provider, ctx.model!.id)?.id ?? null, runtime.getPhysicalModel("nobody", "none") ?? null];
      const messages = session.messages.length;
      s.refreshContext();
      ctx.ui.notify(JSON.stringify({
        before: [typeof before?.tokens, before?.contextWindow],
        statsBefore: { ...statsBefore, sessionId: statsBefore.sessionId === session.sessionId, contextUsage: typeof statsBefore.contextUsage?.tokens },
        stats: { ...stats, sessionId: stats.sessionId === session.sessionId }, usage: s.getContextUsage(), subUsages: usages, forking, thinking, scoped, modes,
        callable: s.getCallableToolNames(),
        templates: s.promptTemplates.map((t: any) => [t.name, t.description]),
        routed: s.routedModel ?? null,
        handlers: [s.hasExtensionHandlers("turn_end"), s.hasExtensionHandlers("input")],
        replaced: [typeof replaced.sendMessage, typeof replaced.sendUserMessage, typeof replaced.newSession, replaced.cwd === ctx.cwd],
        refreshed: [messages, session.messages.length], userBash, physical,
      }), "info");
      session.dispose();
    },
  });
}
"#;

/// `/members`' note; the sandbox has one prompt template, the model's answer fixed usage.
async fn members(reference: bool, command: String) -> Option<Value> {
    let replies = [Reply::text("First answer.").usage(1000, 20, 0)];
    let setup = |sb: &Sandbox| {
        let prompts = sb.agent_dir.path().join("prompts");
        std::fs::create_dir_all(&prompts).expect("prompts dir");
        std::fs::write(prompts.join("fix.md"), "---\ndescription: Fix it\n---\nFix $1\n").expect("write template");
    };
    module_note(reference, ("sdk-members.ts", SDK_MEMBERS), &replies, &setup, &command).await
}

#[tokio::test]
async fn an_sdk_sessions_smaller_members_answer_as_in_pi() {
    let Some((ours, theirs)) = side_by_side(members, "members").await else { return };
    assert_eq!(ours["stats"]["userMessages"], 1, "{ours}");
    assert_eq!(ours["stats"]["tokens"]["input"], 1000, "{ours}");
    assert!(ours["usage"]["tokens"].as_u64().is_some_and(|t| t >= 1000), "{ours}");
    assert_eq!(ours["subUsages"][0], ours["usage"], "a sub-session extension's ctx.getContextUsage(): {ours}");
    assert_eq!(ours["forking"], json!([[true, "hello there"]]), "{ours}");
    assert_eq!(ours["handlers"], json!([true, false]), "{ours}");
    assert_eq!(ours["userBash"][1], Value::Null, "no answer: a local run: {ours}");
    assert_eq!(ours["physical"][0], "fake-model", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
