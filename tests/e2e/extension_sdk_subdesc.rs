//! codemode's description inside an SDK session, side by side with pi
//! 1.6.0: `createCodemodeExtension()` loaded in the sub-session, whose own
//! tools are a `direct` one, one of `codemode` exposure (with a guideline
//! and an output schema) and a `deferred` one. The requests the sub-session
//! sends carry codemode's `Nested tools:` listing (pi's `prepareLoadout`)
//! and the `Codemode:` notes of the declared tools scripts call, also after
//! the active tools change. pi-rpc's introduction of codemode is its own
//! (the main session's, codemode_settings.rs): only the listing is compared.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::start_module;
use crate::extension_sdk_services::{notified_text, side_by_side};

const SDK_SUBDESC: &str = r#"import {
  createAgentSession, createCodemodeExtension, DefaultResourceLoader, getAgentDir, SessionManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("described", {
    handler: async (_args, ctx) => {
      const own = (sub: ExtensionAPI) => {
        const text = (t: string) => ({ content: [{ type: "text", text: t }], details: {} });
        sub.registerTool({ name: "shout", label: "shout", description: "Shouts a text", parameters: Type.Object({ text: Type.String() }),
          execute: async () => text("HI") } as any);
        sub.registerTool({ name: "lookup", label: "lookup", description: "Looks a word up", exposure: "codemode",
          promptGuidelines: ["Use lookup for words you do not know."],
          parameters: Type.Object({ word: Type.String({ description: "The word" }) }),
          outputSchema: Type.Object({ meaning: Type.String() }),
          execute: async () => ({ ...text("a meaning"), structuredContent: { meaning: "a meaning" } }) } as any);
        sub.registerTool({ name: "archive", label: "archive", description: "Archives old notes", exposure: "deferred",
          parameters: Type.Object({}), execute: async () => text("archived") } as any);
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [createCodemodeExtension(), own] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      const errors: string[] = [];
      await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
      session.setActiveToolsByName(["read", "shout", "codemode"]);
      await session.prompt("first");
      // The active set changes: `read` is neither declared nor callable any more.
      session.setActiveToolsByName(["shout", "codemode"]);
      await session.prompt("second");
      ctx.ui.notify(JSON.stringify({ errors }), "info");
      session.dispose();
    },
  });
}
"#;

/// codemode's `Nested tools:` part of a description ("" without one).
pub(crate) fn listing(description: &str) -> &str {
    description.find("\n\nNested tools:").map_or("", |at| &description[at..])
}

/// `/described`'s note with the sub-session's requests: each `[name, description]` it declared,
/// codemode's description cut to its listing.
async fn described(reference: bool, command: String) -> Option<Value> {
    declared_per_request(reference, ("sdk-subdesc.ts", SDK_SUBDESC), &command).await
}

/// The note `command` of `module` notified (two prompts answered), with each request's declared
/// tools as `[name, description]`, codemode's description cut to its listing.
pub(crate) async fn declared_per_request(reference: bool, module: (&str, &str), command: &str) -> Option<Value> {
    let replies = [Reply::text("One."), Reply::text("Two.")];
    let (mut pi, sb) = start_module(reference, module, &replies, &|_| {}).await?;
    let text = notified_text(&mut pi, &sb, command).await;
    let mut note: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}"));
    let requests: Vec<Value> = sb
        .server()
        .requests()
        .iter()
        .map(|r| {
            let tools = r.body["tools"].as_array().cloned().unwrap_or_default();
            json!(
                tools
                    .iter()
                    .map(|t| {
                        let name = t["function"]["name"].as_str().unwrap_or_default();
                        let description = t["function"]["description"].as_str().unwrap_or_default();
                        json!([name, if name == "codemode" { listing(description) } else { description }])
                    })
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    note["requests"] = json!(requests);
    pi.close_stdin();
    pi.wait().await;
    Some(note)
}

#[tokio::test]
async fn codemode_inside_an_sdk_session_lists_its_tools_and_notes_the_declared_ones_as_in_pi() {
    let Some((ours, theirs)) = side_by_side(described, "described").await else { return };
    assert_eq!(ours["errors"], json!([]), "{ours}");
    let first = &ours["requests"][0];
    let description = |name: &str| {
        first
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t[0] == name))
            .map(|t| t[1].as_str().unwrap_or_default().to_string())
    };
    let codemode = description("codemode").unwrap_or_default();
    assert!(codemode.starts_with("\n\nNested tools:\n\n### `lookup`\nLooks a word up"), "{ours}");
    assert!(codemode.contains("- Use lookup for words you do not know."), "{ours}");
    assert!(!codemode.contains("archive"), "a deferred tool is not listed: {ours}");
    let shout = description("shout").unwrap_or_default();
    assert!(shout.starts_with("Shouts a text\n\nCodemode: `tools.shout(args)` resolves to "), "{ours}");
    assert!(
        description("read").unwrap_or_default().contains("\n\nCodemode: `tools.read(args)` resolves to "),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
