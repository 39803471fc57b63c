//! An SDK session's settings, side by side with pi 1.6.0: made without
//! `agentDir` or `settingsManager` it reads the user's (the agent
//! directory's) settings as pi's `createAgentSession` does, so its `read`
//! sends an image as it is under `images.autoResize: false` and its `bash`
//! runs with the settings' `shellCommandPrefix`; with a `settingsManager` of
//! its own its `read` follows that one's `images.autoResize`.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::start_module;
use crate::extension_sdk_services::notified_text;
use crate::harness::Sandbox;
use crate::native_tools_shell::gray_png;

const SDK_SETTINGS: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { createAgentSession, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("settingsdefaults", {
    handler: async (_args, ctx) => {
      const original = fs.readFileSync(path.join(ctx.cwd, "wide.png")).toString("base64");
      // Each tool result: its texts, and each image's type and whether it is the file as it is.
      const results = (session: any) => session.messages.filter((m: any) => m.role === "toolResult").map((m: any) =>
        m.content.map((c: any) => (c.type === "image" ? { image: c.mimeType, asIs: c.data === original } : c.text)));
      const sessionManager = () => SessionManager.inMemory(ctx.cwd);

      // No `agentDir`, no `settingsManager`: the user's settings.
      const { session: plain } = await createAgentSession({ cwd: ctx.cwd, sessionManager: sessionManager(), model: ctx.model } as any);
      await plain.prompt("read and run");
      const withoutSettings = results(plain);
      plain.dispose();

      // A `settingsManager` of its own, with pi's default `images.autoResize`.
      const settingsManager = SettingsManager.inMemory({});
      const { session: given } = await createAgentSession({ cwd: ctx.cwd, settingsManager, sessionManager: sessionManager(), model: ctx.model } as any);
      await given.prompt("read");
      const withSettingsManager = results(given);
      given.dispose();
      ctx.ui.notify(JSON.stringify({ withoutSettings, withSettingsManager }), "info");
    },
  });
}
"#;

/// The user's settings get `images.autoResize: false` and a command prefix; the cwd a 2100x1 PNG.
fn user_settings(sb: &Sandbox) {
    let path = sb.agent_dir.path().join("settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default()).unwrap_or_else(|_| json!({}));
    settings["images"] = json!({"autoResize": false});
    settings["shellCommandPrefix"] = json!("export GREETING=from-the-user-settings");
    std::fs::write(&path, settings.to_string()).expect("write the settings");
    std::fs::write(sb.cwd.path().join("wide.png"), gray_png(2100, 1)).expect("write the image");
}

async fn run(reference: bool) -> Option<Value> {
    let read = || Reply::tool_call("r", "read", r#"{"path":"wide.png"}"#);
    let replies = [
        read(),
        Reply::tool_call("b", "bash", r#"{"command":"echo \"greeting=$GREETING\""}"#),
        Reply::text("Done."),
        read(),
        Reply::text("Done."),
    ];
    let (mut pi, sb) = start_module(reference, ("sdk-settings.ts", SDK_SETTINGS), &replies, &user_settings).await?;
    let text = notified_text(&mut pi, &sb, "settingsdefaults").await;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("notified {text}: {e}")))
}

#[tokio::test]
async fn an_sdk_session_without_settings_reads_the_users_as_pis() {
    let Some(ours) = run(false).await else { return };
    let Some(theirs) = run(true).await else { return };
    // The user's `images.autoResize: false` and command prefix; then a manager's default resize.
    let as_is = json!([["Read image file [image/png]", {"image": "image/png", "asIs": true}], ["greeting=from-the-user-settings\n"]]);
    assert_eq!(ours["withoutSettings"], as_is, "{ours}");
    let resized = &ours["withSettingsManager"][0];
    assert_eq!(resized[1]["asIs"], false, "{ours}");
    assert!(resized[0].as_str().is_some_and(|t| t.contains("original 2100x1, displayed at 2000x1")), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
