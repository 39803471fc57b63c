//! An SDK session's images, side by side with pi 1.6.0: its prompt's image,
//! the image its tool returns and the image of a message steered in while
//! the tool runs are prepared as pi's session prepares them (converted and
//! fitted into the model's limits, `inputLimits.images.resize` else pi's
//! 2000x2000 and 4.5MB of base64, the notes added), or sent as they are
//! under the session's `images.autoResize: false`; with a virtual model,
//! into the limits of the model its latest answer came from (`read`'s into
//! the selected model's), as pi picks them. What the fake model
//! server receives is compared: each image's type and size, and the notes.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::start_module;
use crate::extension_sdk_services::notified_where;
use crate::native_tools_shell::gray_png;
use crate::session_input_images::requested_images;

/// `/sdkimages <settings>`: an SDK session with those settings prompts with
/// `wide.png`; its `snap` tool steers in `square.png` and returns `tall.png`.
const SDK_IMAGES: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { createAgentSession, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("sdkimages", {
    handler: async (args, ctx) => {
      const image = (name: string) => ({ type: "image", data: fs.readFileSync(path.join(ctx.cwd, name)).toString("base64"), mimeType: "image/png" });
      let session: any;
      const snap = {
        name: "snap", label: "Snap", description: "Take a picture", parameters: Type.Object({}),
        execute: async () => {
          await session.steer("and this", [image("square.png")]);
          return { content: [{ type: "text", text: "snapped" }, image("tall.png")], details: {} };
        },
      };
      const settingsManager = SettingsManager.inMemory(JSON.parse(args || "{}"));
      ({ session } = await createAgentSession({ cwd: ctx.cwd, settingsManager, sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, customTools: [snap] } as any));
      // Each message told as it ends: the images take a while in a debug build.
      session.subscribe((event: any) => event.type === "message_end" && ctx.ui.notify(`message ${event.message.role}`, "info"));
      await session.prompt("look", { images: [image("wide.png")] });
      session.dispose();
      ctx.ui.notify("done", "info");
    },
  });
}
"#;

/// One program's run of `/sdkimages <settings>` with the model's
/// `inputLimits` (none when `null`): what each of the SDK session's requests carried.
async fn run(reference: bool, settings: Value, input_limits: Value) -> Option<Value> {
    let setup = |sb: &crate::harness::Sandbox| {
        for (name, (w, h)) in [("wide.png", (2400, 600)), ("tall.png", (300, 2600)), ("square.png", (500, 2100))] {
            std::fs::write(sb.cwd.path().join(name), gray_png(w, h)).expect("write the image");
        }
        let mut model = json!({"input": ["text", "image"]});
        if !input_limits.is_null() {
            model["inputLimits"] = input_limits.clone();
        }
        sb.write_models(&sb.server().base_url(), model);
    };
    let replies = [Reply::tool_call("c1", "snap", "{}"), Reply::text("Done.")];
    let (mut pi, sb) = start_module(reference, ("sdk-images.ts", SDK_IMAGES), &replies, &setup).await?;
    let notified = notified_where(&mut pi, &sb, &format!("sdkimages {settings}"), |text| text == "done").await;
    assert_eq!(notified.last().map(String::as_str), Some("done"), "{notified:?}");
    Some(requested_images(&sb))
}

#[tokio::test]
async fn an_sdk_sessions_prompt_tool_and_steered_images_are_prepared_as_pis() {
    let Some(ours) = run(false, json!({}), Value::Null).await else { return };
    let Some(theirs) = run(true, json!({}), Value::Null).await else { return };
    // The prompt's image fitted into 2000 wide, the tool's into 2000 high, the steered one into 2000 high.
    assert_eq!(ours[0]["images"], json!([["image/jpeg", 2000, 500]]), "{ours}");
    let notes = ours[1]["notes"].to_string();
    assert!(notes.contains("[Image: original 2400x600, displayed at 2000x500."), "{notes}");
    assert!(notes.contains("[Image: original 300x2600, displayed at 231x2000."), "{notes}");
    assert!(notes.contains("[Image: original 500x2100, displayed at 476x2000."), "{notes}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_fits_images_into_its_models_input_limits_as_pis() {
    let limits = json!({"images": {"resize": {"maxWidth": 1000, "maxHeight": 800}}});
    let Some(ours) = run(false, json!({}), limits.clone()).await else { return };
    let Some(theirs) = run(true, json!({}), limits).await else { return };
    let notes = ours[1]["notes"].to_string();
    assert!(notes.contains("[Image: original 2400x600, displayed at 1000x250."), "{notes}");
    assert!(notes.contains("[Image: original 500x2100, displayed at 190x800."), "{notes}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_without_auto_resize_sends_its_images_as_they_are_as_pis() {
    let settings = json!({"images": {"autoResize": false}});
    let Some(ours) = run(false, settings.clone(), Value::Null).await else { return };
    let Some(theirs) = run(true, settings, Value::Null).await else { return };
    let sizes = json!([["image/png", 2400, 600], ["image/png", 300, 2600], ["image/png", 500, 2100]]);
    assert_eq!(ours[1]["images"], sizes, "{ours}");
    assert_eq!(ours[1]["notes"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// `/sdkvirtual`: an SDK session whose loader's extension registers the
/// virtual model `router/auto` (to `fake/fake-small` when the latest user
/// message says "SMALL", else `fake/fake-big`) and `snap`; with it
/// selected, two prompts with `wide.png`, the first routed big, the second
/// small.
const SDK_VIRTUAL: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("sdkvirtual", {
    handler: async (_args, ctx) => {
      const image = (name: string) => ({ type: "image", data: fs.readFileSync(path.join(ctx.cwd, name)).toString("base64"), mimeType: "image/png" });
      const routerExt = (sub: ExtensionAPI) => {
        sub.registerVirtualModel({
          provider: "router", id: "auto", name: "Auto",
          route(request: any, rctx: any) {
            const users = request.messages.filter((m: any) => m.role === "user");
            const id = JSON.stringify(users[users.length - 1]?.content ?? "").includes("SMALL") ? "fake-small" : "fake-big";
            return { model: rctx.modelRegistry.find("fake", id), thinkingLevel: "off" };
          },
        } as any);
        sub.registerTool({
          name: "snap", label: "Snap", description: "Take a picture", parameters: Type.Object({}),
          execute: async () => ({ content: [{ type: "text", text: "snapped" }, image("tall.png")], details: {} }),
        });
      };
      const settingsManager = SettingsManager.inMemory({});
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true, extensionFactories: [routerExt] } as any);
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader } as any);
      await session.bindExtensions({});
      await session.setModel((session as any).modelRuntime.getModel("router", "auto"));
      session.subscribe((event: any) => event.type === "message_end" && ctx.ui.notify(`message ${event.message.role}`, "info"));
      await session.prompt("BIG one", { images: [image("wide.png")] });
      await session.prompt("SMALL two", { images: [image("wide.png")] });
      session.dispose();
      ctx.ui.notify("done", "info");
    },
  });
}
"#;

#[tokio::test]
async fn an_sdk_sessions_virtual_model_fits_its_images_into_the_limits_pi_picks() {
    let run = |reference: bool| async move {
        let setup = |sb: &crate::harness::Sandbox| {
            for (name, (w, h)) in [("wide.png", (2400, 600)), ("tall.png", (300, 2600)), ("big.png", (2600, 1300))] {
                std::fs::write(sb.cwd.path().join(name), gray_png(w, h)).expect("write the image");
            }
            crate::session_input_images::write_routed_models(sb);
        };
        let read = r#"{"path":"big.png"}"#;
        let (read_call, snap_call) = (|id| Reply::tool_call(id, "read", read), |id| Reply::tool_call(id, "snap", "{}"));
        let replies = [
            read_call("c1"),
            snap_call("c2"),
            Reply::text("one"),
            read_call("c3"),
            snap_call("c4"),
            Reply::text("two"),
        ];
        let (mut pi, sb) = start_module(reference, ("sdk-virtual.ts", SDK_VIRTUAL), &replies, &setup).await?;
        let notified = notified_where(&mut pi, &sb, "sdkvirtual", |text| text == "done").await;
        assert_eq!(notified.last().map(String::as_str), Some("done"), "{notified:?}");
        let models: Vec<Value> = sb.server().requests().iter().map(|r| r.body["model"].clone()).collect();
        Some(json!({"models": models, "requests": requested_images(&sb)}))
    };
    let Some(ours) = run(false).await else { return };
    let Some(theirs) = run(true).await else { return };
    let routed = ["fake-big", "fake-big", "fake-big", "fake-small", "fake-small", "fake-small"];
    assert_eq!(ours["models"], json!(routed), "{ours}");
    let expected = json!([
        // No answer yet: the virtual model's limits (pi's defaults); `read`'s the selected model's, fake-big's after.
        ["image/jpeg", 2000, 500],
        ["image/png", 2000, 1000],
        ["image/png", 300, 2600],
        // fake-big answered last; then routed to fake-small, whose limits `read`'s and the tool's images get.
        ["image/png", 2400, 600],
        ["image/png", 800, 400],
        ["image/png", 92, 800]
    ]);
    assert_eq!(ours["requests"][5]["images"], expected, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
