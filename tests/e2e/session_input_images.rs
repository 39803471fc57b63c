//! Images that enter the session other than through `read`, side by side
//! with pi 1.6.0: a prompt's image and the image an extension's tool
//! returns are fitted into pi's limits (2000x2000, 4.5MB of base64) before
//! they reach the model, their dimension notes added (the prompt's to its
//! text, the tool's after its image), and sent as they are with
//! `images.autoResize: false`; `images.blockImages: true` sends pi's note in
//! place of each image. With a virtual model, a prompt's, a queued
//! message's and a tool result's images are fitted into the limits of the
//! model the latest answer came from, `read`'s into the selected model's,
//! as pi picks them. What the fake model server receives is compared: each
//! image's type and size, and the notes.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use base64::Engine;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::start_module;
use crate::native_tools_shell::gray_png;

/// A tool that returns the image `tall.png` of the session's cwd.
const SNAP: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerTool({
    name: "snap", label: "Snap", description: "Take a picture", parameters: Type.Object({}),
    execute: async (_id, _params, _signal, _onUpdate, ctx) => {
      const data = fs.readFileSync(path.join(ctx.cwd, "tall.png")).toString("base64");
      return { content: [{ type: "text", text: "snapped" }, { type: "image", data, mimeType: "image/png" }], details: {} };
    },
  });
}
"#;

/// Width and height of a PNG or JPEG.
fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |at: usize| Some(u32::from(*bytes.get(at)?) << 8 | u32::from(*bytes.get(at + 1)?));
    if bytes.starts_with(b"\x89PNG") {
        return Some((be16(16)? << 16 | be16(18)?, be16(20)? << 16 | be16(22)?));
    }
    let mut at = 2;
    while at + 9 < bytes.len() {
        let marker = bytes[at + 1];
        if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
            return Some((be16(at + 7)?, be16(at + 5)?));
        }
        at += 2 + be16(at + 2)? as usize;
    }
    None
}

/// Every image of a request body (`data:` URLs) as `[mimeType, width, height]`,
/// and every text that notes an image (or stands for one), in order.
pub(crate) fn images_and_notes(body: &Value, images: &mut Vec<Value>, notes: &mut Vec<Value>) {
    match body {
        Value::String(s) if s.starts_with("data:image/") => {
            let (head, data) = s.split_once(";base64,").unwrap_or((s, ""));
            let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap_or_default();
            let (w, h) = dimensions(&bytes).unwrap_or((0, 0));
            images.push(json!([head.trim_start_matches("data:"), w, h]));
        }
        Value::String(s) if s.contains("[Image") || s.contains("Image reading is disabled.") => notes.push(json!(s)),
        Value::Array(items) => items.iter().for_each(|v| images_and_notes(v, images, notes)),
        Value::Object(map) => map.values().for_each(|v| images_and_notes(v, images, notes)),
        _ => {}
    }
}

/// Each model request's images and notes (see [`images_and_notes`]).
pub(crate) fn requested_images(sb: &crate::harness::Sandbox) -> Value {
    let requests = sb.server().requests();
    let described = requests.iter().map(|r| {
        let (mut images, mut notes) = (Vec::new(), Vec::new());
        images_and_notes(&r.body["messages"], &mut images, &mut notes);
        json!({"images": images, "notes": notes})
    });
    Value::Array(described.collect())
}

/// One program's run: a prompt with a 2400x600 PNG, the model calls `snap`
/// (a 300x2600 PNG), then answers. What each model request carried.
async fn run(reference: bool, images_setting: Value) -> Option<Value> {
    run_with_model(reference, images_setting, json!({})).await
}

/// [`run`] with the model's `input_limits` (its `inputLimits` in `models.json`).
async fn run_with_model(reference: bool, images_setting: Value, input_limits: Value) -> Option<Value> {
    let setup = |sb: &crate::harness::Sandbox| {
        let path = sb.agent_dir.path().join("settings.json");
        let mut settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default()).unwrap_or_else(|_| json!({}));
        settings["images"] = images_setting.clone();
        std::fs::write(&path, settings.to_string()).expect("write the settings");
        std::fs::write(sb.cwd.path().join("tall.png"), gray_png(300, 2600)).expect("write the image");
        let mut model = json!({"input": ["text", "image"]});
        if input_limits != json!({}) {
            model["inputLimits"] = input_limits.clone();
        }
        sb.write_models(&sb.server().base_url(), model);
    };
    let replies = [Reply::tool_call("c1", "snap", "{}"), Reply::text("Done.")];
    let (mut pi, sb) = start_module(reference, ("snap.ts", SNAP), &replies, &setup).await?;
    let data = base64::engine::general_purpose::STANDARD.encode(gray_png(2400, 600));
    let image = json!({"type": "image", "data": data, "mimeType": "image/png"});
    pi.send(json!({"id": "p", "type": "prompt", "message": "look", "images": [image]})).await;
    pi.until_type("agent_settled").await;
    Some(requested_images(&sb))
}

#[tokio::test]
async fn prompt_and_tool_images_are_resized_as_in_pi() {
    let Some(ours) = run(false, json!({})).await else { return };
    let Some(theirs) = run(true, json!({})).await else { return };
    // The prompt's image fitted into 2000 wide (JPEG, the smaller), the tool's into 2000 high, each noted.
    assert_eq!(ours[1]["images"], json!([["image/jpeg", 2000, 500], ["image/png", 231, 2000]]), "{ours}");
    let notes = ours[1]["notes"].to_string();
    assert!(notes.contains("[Image: original 2400x600, displayed at 2000x500."), "{notes}");
    assert!(notes.contains("[Image: original 300x2600, displayed at 231x2000."), "{notes}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn without_auto_resize_prompt_and_tool_images_are_sent_as_they_are_as_in_pi() {
    let Some(ours) = run(false, json!({"autoResize": false})).await else { return };
    let Some(theirs) = run(true, json!({"autoResize": false})).await else { return };
    assert_eq!(ours[1]["images"], json!([["image/png", 2400, 600], ["image/png", 300, 2600]]), "{ours}");
    assert_eq!(ours[1]["notes"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn blocked_images_reach_the_model_as_pis_note() {
    let Some(ours) = run(false, json!({"blockImages": true})).await else { return };
    let Some(theirs) = run(true, json!({"blockImages": true})).await else { return };
    assert_eq!(ours[1]["images"], json!([]), "{ours}");
    assert!(ours[1]["notes"].to_string().contains("Image reading is disabled."), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_models_input_limits_fit_its_prompt_and_tool_images_as_in_pi() {
    // models.json's own limits for the model: 1000x1000 and 300KB of base64.
    let limits = json!({"images": {"resize": {"maxWidth": 1000, "maxHeight": 1000, "maxBytes": 300000}}});
    let Some(ours) = run_with_model(false, json!({}), limits.clone()).await else { return };
    let Some(theirs) = run_with_model(true, json!({}), limits).await else { return };
    assert_eq!(ours[1]["images"][0][1], json!(1000), "{ours}");
    assert_eq!(ours[1]["images"][1][2], json!(1000), "{ours}");
    let notes = ours[1]["notes"].to_string();
    assert!(notes.contains("[Image: original 2400x600, displayed at 1000x250."), "{notes}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A virtual model `router/auto` that routes each request to `fake/fake-small`
/// when the latest user message says "SMALL", else to `fake/fake-big`; the
/// tool `snap` (`tall.png`), and `hold`, which steers in an image with
/// `sendUserMessage` and waits for the file `go`.
const ROUTER: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const image = (cwd: string, name: string) => ({ type: "image", data: fs.readFileSync(path.join(cwd, name)).toString("base64"), mimeType: "image/png" });

export default function (pi: ExtensionAPI) {
  pi.registerVirtualModel({
    provider: "router", id: "auto", name: "Auto",
    route(request: any, ctx: any) {
      const users = request.messages.filter((m: any) => m.role === "user");
      const id = JSON.stringify(users[users.length - 1]?.content ?? "").includes("SMALL") ? "fake-small" : "fake-big";
      return { model: ctx.modelRegistry.find("fake", id), thinkingLevel: "off" };
    },
  });
  pi.registerTool({
    name: "snap", label: "Snap", description: "Take a picture", parameters: Type.Object({}),
    execute: async (_id, _params, _signal, _onUpdate, ctx) => ({ content: [{ type: "text", text: "snapped" }, image(ctx.cwd, "tall.png")], details: {} }),
  });
  pi.registerTool({
    name: "hold", label: "Hold", description: "Wait", parameters: Type.Object({}),
    execute: async (_id, _params, _signal, _onUpdate, ctx) => {
      pi.sendUserMessage([{ type: "text", text: "SMALL ext steer" }, image(ctx.cwd, "square.png")], { deliverAs: "steer" });
      while (!fs.existsSync(path.join(ctx.cwd, "go"))) await new Promise((r) => setTimeout(r, 20));
      return { content: [{ type: "text", text: "held" }], details: {} };
    },
  });
}
"#;

/// `models.json` with `fake-model`, `fake-small` (fits images into 800x800)
/// and `fake-big` (3000x3000).
pub(crate) fn write_routed_models(sb: &crate::harness::Sandbox) {
    let model = |id: &str, side: u32| {
        let resize = json!({"maxWidth": side, "maxHeight": side, "maxBytes": 20_000_000});
        json!({"id": id, "input": ["text", "image"], "contextWindow": 128000, "maxTokens": 16384,
               "inputLimits": {"images": {"resize": resize}}})
    };
    let models = json!({"providers": {"fake": {
        "baseUrl": sb.server().base_url(), "api": "openai-completions", "apiKey": "test-key-123",
        "models": [{"id": "fake-model", "input": ["text", "image"]}, model("fake-small", 800), model("fake-big", 3000)],
    }}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("write models.json");
}

/// One program's session with the virtual model: a first run (no answer
/// yet) routed big that reads `big.png` and calls `snap`; a second routed
/// small whose `hold` has an extension's and the client's steered images
/// and a follow-up's delivered, then reads `big.png` and calls `snap`; a run
/// after `set_model` to `fake-big`, and one after `set_model` back to the
/// virtual model; each prompt with `wide.png`. What each request carried.
async fn run_routed(reference: bool) -> Option<Value> {
    let setup = |sb: &crate::harness::Sandbox| {
        for (name, (w, h)) in [("wide.png", (2400, 600)), ("tall.png", (300, 2600)), ("square.png", (500, 2100))] {
            std::fs::write(sb.cwd.path().join(name), gray_png(w, h)).expect("write the image");
        }
        std::fs::write(sb.cwd.path().join("big.png"), gray_png(2600, 1300)).expect("write the image");
        write_routed_models(sb);
    };
    let read = r#"{"path":"big.png"}"#;
    let replies = [
        Reply::tool_call("c1", "read", read),
        Reply::tool_call("c2", "snap", "{}"),
        Reply::text("first done"),
        Reply::tool_call("c3", "hold", "{}"),
        Reply::tool_call("c4", "read", read),
        Reply::tool_call("c5", "snap", "{}"),
        Reply::text("second done"),
        Reply::text("followed"),
        Reply::text("third done"),
        Reply::text("fourth done"),
    ];
    let (mut pi, sb) = start_module(reference, ("router.ts", ROUTER), &replies, &setup).await?;
    let data = |name: &str| {
        base64::engine::general_purpose::STANDARD.encode(std::fs::read(sb.cwd.path().join(name)).unwrap_or_default())
    };
    let image = |name: &str| json!([{"type": "image", "data": data(name), "mimeType": "image/png"}]);
    let select = |provider: &str, id: &str| json!({"type": "set_model", "provider": provider, "modelId": id});
    let answer = pi.call("m1", select("router", "auto")).await;
    assert_eq!(answer["success"], true, "{answer}");
    pi.send(json!({"type": "prompt", "message": "BIG first", "images": image("wide.png")})).await;
    pi.until_type("agent_settled").await;
    pi.send(json!({"type": "prompt", "message": "SMALL second", "images": image("wide.png")})).await;
    pi.until(|v| v["type"] == "queue_update" && v["steering"].to_string().contains("ext steer")).await;
    pi.call("s", json!({"type": "steer", "message": "SMALL steered", "images": image("square.png")})).await;
    pi.call("f", json!({"type": "follow_up", "message": "SMALL followed", "images": image("square.png")})).await;
    std::fs::write(sb.cwd.path().join("go"), "").expect("write go");
    pi.until_type("agent_settled").await;
    let answer = pi.call("m2", select("fake", "fake-big")).await;
    assert_eq!(answer["success"], true, "{answer}");
    pi.send(json!({"type": "prompt", "message": "SMALL third", "images": image("wide.png")})).await;
    pi.until_type("agent_settled").await;
    let answer = pi.call("m3", select("router", "auto")).await;
    assert_eq!(answer["success"], true, "{answer}");
    pi.send(json!({"type": "prompt", "message": "SMALL fourth", "images": image("wide.png")})).await;
    pi.until_type("agent_settled").await;
    let requests = sb.server().requests();
    let models: Vec<Value> = requests.iter().map(|r| r.body["model"].clone()).collect();
    Some(json!({"models": models, "requests": requested_images(&sb)}))
}

#[tokio::test]
async fn a_virtual_models_images_are_fitted_into_the_limits_pi_picks() {
    let Some(ours) = run_routed(false).await else { return };
    let Some(theirs) = run_routed(true).await else { return };
    let routed = ["big", "big", "big", "small", "small", "small", "small", "small", "big", "small"];
    assert_eq!(ours["models"], json!(routed.map(|size| format!("fake-{size}"))), "{ours}");
    let last = &ours["requests"][9];
    let expected = json!([
        // The first prompt's image: no answer yet, the virtual model's limits (pi's defaults).
        ["image/jpeg", 2000, 500],
        // `read` fits into the selected (virtual) model's limits, then fake-big's take it as it is.
        ["image/png", 2000, 1000],
        ["image/png", 300, 2600],
        // The second prompt's image: fake-big answered last.
        ["image/png", 2400, 600],
        // Routed to fake-small: the extension's steered image, `read`'s again fitted, the client's
        // steered image, the tool's and the follow-up's.
        ["image/png", 190, 800],
        ["image/png", 800, 400],
        ["image/png", 190, 800],
        ["image/png", 92, 800],
        ["image/png", 190, 800],
        // After `set_model` to fake-big, then back to the virtual model (fake-big answered last).
        ["image/png", 2400, 600],
        ["image/png", 2400, 600]
    ]);
    assert_eq!(last["images"], expected, "{ours}");
    let notes = last["notes"].to_string();
    assert!(notes.contains("[Image: original 2000x1000, displayed at 800x400."), "{notes}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
