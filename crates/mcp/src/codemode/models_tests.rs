//! `models.*` in scripts, against the fake server's classifier and image
//! routes: pi's result shapes, call rows, usage, and error texts.

use std::sync::Arc;

use pi_fake_server::FakeServer;
use serde_json::{Value, json};

use super::*;
use crate::config::ModelRegistry;
use crate::message::ContentBlock;

async fn tool_with_models(server: &FakeServer) -> (CodemodeTool, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let models = json!({"providers": {
        "typesafe": {"baseUrl": format!("{}/v1", server.url()), "apiKey": "ts-key"},
        "openrouter": {"baseUrl": format!("{}/api/v1", server.url()), "apiKey": "or-key"},
    }});
    std::fs::write(dir.path().join("models.json"), models.to_string()).expect("models.json");
    let registry = ModelRegistry::load(dir.path()).expect("registry");
    let tool = CodemodeTool::new(Vec::new(), None).with_models(Some(Arc::new(ModelsHost::new(registry))));
    (tool, dir)
}

async fn run(tool: &CodemodeTool, code: &str) -> ToolOutput {
    let mut ctx = ToolContext::new(std::env::temp_dir());
    ctx.tool_call_id = "c1".into();
    tool.execute(json!({"code": code}), ctx).await
}

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.to_string()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test]
async fn a_script_classifies_and_generates_an_image() {
    let server = FakeServer::start().await.expect("server");
    let (tool, _dir) = tool_with_models(&server).await;
    let code = r#"
const jev = await models.getModelOfType("classifier", "typesafe", "jev-latest");
const result = await models.classify(jev, { state: { text: "BUY NOW" }, questions: {
  spam: { type: "bool", instructions: "Spam?", criteria: { true: "an ad", false: "not" } } } });
text(JSON.stringify(result.answers));
const flux = (await models.getAvailableOfType("image", "openrouter"))[0];
const images = await models.generateImages(flux, { input: [{ type: "text", text: "a fox" }] });
image(images.output.find((b) => b.type === "image"));
return [jev.baseUrl, jev.headers, images.stopReason, Object.keys(result)];"#;
    let out = run(&tool, code).await;
    let all = text(&out);
    assert!(!out.is_error, "{all}");
    assert!(all.contains(r#"{"spam":{"type":"bool","probability":0.75}}"#), "{all}");
    assert!(
        all.contains(&format!(
            r#"["{}/v1",null,"stop",["api","provider","model","answers","stopReason","timestamp","usage"]]"#,
            server.url()
        )),
        "{all}"
    );
    assert!(out.content.iter().any(|b| matches!(b, ContentBlock::Image(i) if i.mime_type == "image/png")));
    let calls = out.details.as_ref().unwrap()["calls"].as_array().unwrap().clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["id"], "c1/models.classify/1");
    assert_eq!(calls[0]["args"], "typesafe/jev-latest");
    assert_eq!(calls[0]["status"], "ok");
    assert_eq!(calls[1]["name"], "models.generateImages");
    assert!(calls[1]["cost"].is_number(), "{calls:?}");
    assert_eq!(out.usage.as_ref().map(|u| u.input), Some(140), "classifier 120 + image prompt 20");
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer ts-key"));
    assert_eq!(requests[1].path, "/api/v1/chat/completions");
}

#[tokio::test]
async fn mistakes_fail_with_pi_s_texts() {
    let server = FakeServer::start().await.expect("server");
    let (tool, _dir) = tool_with_models(&server).await;
    let cases = [
        (
            r#"await models.classify(undefined, {})"#,
            "models.classify() expects a classifier model as its first argument, got null. models.getModelOfType() returns undefined for an unknown provider or id. List the classifier models you can use with models.getAvailableOfType(\"classifier\").",
        ),
        (
            r#"await models.classify({provider: "openrouter", id: "black-forest-labs/flux-3-image"}, {})"#,
            "\"openrouter/black-forest-labs/flux-3-image\" is an image model, not a classifier model.",
        ),
        (
            r#"await models.classify({provider: "typesafe", id: "nope"}, {})"#,
            "Unknown classifier model \"typesafe/nope\".",
        ),
        (
            r#"await models.classify({provider: "typesafe", id: "jev-latest"}, {prompt: "x"})"#,
            "models.classify() context.state must be an object, got undefined.",
        ),
        (
            r#"await models.generateImages({provider: "openrouter", id: "black-forest-labs/flux-3-image"}, {prompt: "x"})"#,
            "models.generateImages() context.input must be a non-empty array of blocks, got undefined.",
        ),
        (
            r#"await models.getModelsOfType("video")"#,
            "Unknown model type \"video\". Use \"chat\", \"image\", or \"classifier\".",
        ),
    ];
    for (code, expected) in cases {
        let out = run(&tool, code).await;
        assert!(out.is_error);
        let all = text(&out);
        assert!(all.contains(expected), "{code}\n{all}");
    }
    assert!(server.requests().is_empty(), "no request for a refused call");
    let out = run(&tool, r#"const r = await models.classify({provider: "typesafe", id: "jev-latest"}, {state: {x: "FAKE_STATUS_400"}, questions: {q: {type: "bool", instructions: "?", criteria: {true: "y", false: "n"}}}}); return r.stopReason + " | " + r.errorMessage"#).await;
    assert!(
        text(&out).ends_with(
            "error | System One API error (400): {\"error\":{\"message\":\"fake status 400\",\"type\":\"fake_error\"}}"
        ),
        "{}",
        text(&out)
    );
    let calls: Vec<Value> = out.details.unwrap()["calls"].as_array().unwrap().clone();
    assert_eq!(calls[0]["status"], "error");
    assert!(calls[0]["error"].as_str().unwrap().starts_with("System One API error (400)"));
}

#[tokio::test]
async fn unshown_generated_images_get_pi_s_note() {
    let server = FakeServer::start().await.expect("server");
    let (tool, _dir) = tool_with_models(&server).await;
    let code = r#"await models.generateImages({provider: "openrouter", id: "black-forest-labs/flux-3-image"}, {input: [{type: "text", text: "fox"}]}); return "done""#;
    let out = run(&tool, code).await;
    assert!(text(&out).ends_with("done\nNote: models.generateImages() returned 1 image that the script did not show. Show each image block of result.output with image(block)."), "{}", text(&out));
}
