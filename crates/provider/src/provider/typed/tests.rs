//! The non-chat APIs against the fake server's routes: each request as
//! pi-ai 1.6.0's source builds it (path, auth, headers, body), and pi's
//! result shape, errors included. pi itself is compared in the e2e test
//! `codemode_models::*`.

use pi_fake_server::{FakeServer, RecordedRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::provider::http::HttpClient;

fn call(model: Value, base: &str) -> TypedCall {
    let mut model = model;
    model["baseUrl"] = json!(base);
    TypedCall {
        model,
        api_key: Some("sk-test".into()),
        headers: vec![("x-team".into(), "blue".into())],
        cancel: CancellationToken::new(),
        http: HttpClient::new().expect("client"),
    }
}

fn jev() -> Value {
    json!({"type": "classifier", "id": "jev-latest", "name": "Jev", "api": "typesafe-system-one", "provider": "typesafe",
           "baseUrl": "", "input": ["text", "image"], "cost": {"input": 2, "output": 0, "cacheRead": 0, "cacheWrite": 0},
           "compat": {"imageInput": "assets", "sendImageOptInHeader": true}})
}

fn questions() -> Value {
    json!({
        "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": "no anger", "angry": "shouting"}},
        "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
        "spam": {"type": "bool", "instructions": "Spam?", "criteria": {"true": "an ad", "false": "not an ad"}},
    })
}

fn only(server: &FakeServer) -> RecordedRequest {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.into_iter().next().expect("one request")
}

#[tokio::test]
async fn typesafe_system_one_request_and_answers() {
    let server = FakeServer::start().await.expect("server");
    let c = call(jev(), &format!("{}/v1/", server.url()));
    let png = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let context = json!({"state": {"text": "BUY NOW"}, "images": [png], "questions": questions()});
    let result = classify(&c, &context).await;
    let r = only(&server);
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/systemone"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.header("typesafe-danger-zone-images"), Some("true"));
    assert_eq!(r.header("x-team"), Some("blue"));
    assert_eq!(r.body["model"], "jev-latest");
    assert_eq!(r.body["state"], json!(["<image-1>", {"text": "BUY NOW"}]));
    assert_eq!(r.body["assets"]["<image-1>"], json!({"type": "image", "format": "png", "data_base64": "AAAA"}));
    assert_eq!(r.body["questions"]["spam"]["type"], "noul", "bool travels as noul");
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["api", "provider", "model", "answers", "stopReason", "timestamp", "usage"]);
    assert_eq!(result["stopReason"], "stop");
    assert_eq!(result["answers"]["tone"]["choice"], "calm");
    assert_eq!(result["answers"]["urgency"], json!({"type": "score", "score": 2, "confidence": 0.875}));
    assert_eq!(result["answers"]["spam"], json!({"type": "bool", "probability": 0.75}));
    assert_eq!(result["usage"]["input"], 120);
    assert_eq!(result["usage"]["cost"]["total"], 2.0 / 1e6 * 120.0);
}

#[tokio::test]
async fn openrouter_system_one_puts_images_in_the_state() {
    let server = FakeServer::start().await.expect("server");
    let mut model = jev();
    model["provider"] = json!("openrouter");
    model.as_object_mut().unwrap().remove("compat");
    let c = call(model, &format!("{}/api/v1", server.url()));
    let png = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    classify(&c, &json!({"state": "s", "images": [png], "questions": questions()})).await;
    let r = only(&server);
    assert_eq!(r.path, "/api/v1/systemone");
    assert_eq!(r.header("typesafe-danger-zone-images"), None);
    assert_eq!(r.header("http-referer"), None, "pi's codemode sends no attribution");
    assert_eq!(
        r.body["state"],
        json!([{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, "s"])
    );
}

#[tokio::test]
async fn cloudflare_system_one_unwraps_both_envelopes() {
    let server = FakeServer::start().await.expect("server");
    for id in ["@cf/cloudflare/clef", "typesafe/jev"] {
        let model = json!({"type": "classifier", "id": id, "api": "cloudflare-workers-ai-system-one",
                           "provider": "cloudflare-workers-ai", "input": ["text"], "cost": {"input": 0.24}});
        let c = call(model, &format!("{}/client/v4/accounts/acc/ai", server.url()));
        let result = classify(&c, &json!({"state": {"a": 1}, "questions": questions()})).await;
        assert_eq!(result["stopReason"], "stop", "{result}");
        assert_eq!(result["answers"]["tone"]["choice"], "calm");
    }
    let r = &server.requests()[0];
    assert_eq!(r.path, "/client/v4/accounts/acc/ai/run");
    assert_eq!(r.body["input"]["state"], json!({"a": 1}));
    assert_eq!(r.body["input"]["questions"]["spam"]["type"], "noul");
}

#[tokio::test]
async fn openai_decisions_request_and_answers() {
    let server = FakeServer::start().await.expect("server");
    let model = json!({"type": "classifier", "id": "gpt-6-luna", "api": "openai-decisions", "provider": "openai",
                       "input": ["text", "image"], "cost": {"input": 0.1, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                       "tiers": [{"inputTokensAbove": 100, "input": 0.2, "output": 0, "cacheRead": 0, "cacheWrite": 0}]}});
    let c = call(model, &format!("{}/v1", server.url()));
    let result = classify(&c, &json!({"state": {"text": "hi"}, "questions": questions()})).await;
    let r = only(&server);
    assert_eq!(r.path, "/v1/decisions");
    assert_eq!(r.body["input"], r#"{"text":"hi"}"#);
    let wire = r.body["questions"].as_array().unwrap();
    assert_eq!(
        wire[0]["choices"],
        json!([{"value": "calm", "description": "no anger"}, {"value": "angry", "description": "shouting"}])
    );
    assert_eq!(wire[1]["levels"], json!([{"label": "low"}, {"label": "mid"}, {"label": "high"}]));
    assert_eq!(
        wire[2],
        json!({"type": "predicate", "name": "spam", "instructions": "Spam?\n\nTrue means: an ad\nFalse means: not an ad"})
    );
    assert_eq!(result["answers"]["tone"]["probabilities"], json!({"calm": 0.75, "angry": 0.25}));
    assert_eq!(result["answers"]["spam"], json!({"type": "bool", "probability": 0.75}));
    assert_eq!(result["usage"]["cost"]["input"], 0.2 / 1e6 * 120.0, "the tier above 100 input tokens");
}

#[tokio::test]
async fn errors_read_as_pi_reads_them() {
    let server = FakeServer::start().await.expect("server");
    let c = call(jev(), &format!("{}/v1", server.url()));
    let bad = json!({"state": "FAKE_STATUS_400", "questions": questions()});
    let result = classify(&c, &bad).await;
    assert_eq!(result["stopReason"], "error");
    assert_eq!(
        result["errorMessage"],
        r#"System One API error (400): {"error":{"message":"fake status 400","type":"fake_error"}}"#
    );
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["api", "provider", "model", "answers", "stopReason", "timestamp", "errorMessage"]);
    let mut keyless = c.clone();
    keyless.api_key = None;
    let result = classify(&keyless, &json!({"state": {}, "questions": questions()})).await;
    assert_eq!(result["errorMessage"], "No API key for provider: typesafe");
    let text_only = call(
        json!({"id": "t", "api": "typesafe-system-one", "provider": "typesafe", "input": ["text"]}),
        "http://127.0.0.1:9",
    );
    let png = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let result = classify(&text_only, &json!({"state": {}, "images": [png], "questions": questions()})).await;
    assert_eq!(result["errorMessage"], "System One API does not support image input for t");
    let decisions = call(json!({"id": "gpt-6-luna", "api": "openai-decisions", "provider": "openai"}), &server.url());
    let result = classify(&decisions, &json!({"state": "FAKE_STATUS_504", "questions": questions()})).await;
    assert_eq!(
        result["errorMessage"],
        "OpenAI Decisions error (504): the request timed out at the gateway. Very large inputs (above roughly 600K tokens) currently exceed its time limit."
    );
}

#[tokio::test(start_paused = false)]
async fn a_server_error_is_retried_twice() {
    let server = FakeServer::start().await.expect("server");
    let c = call(jev(), &server.url());
    let result = classify(&c, &json!({"state": "FAKE_STATUS_503", "questions": questions()})).await;
    assert_eq!(server.requests().len(), 3);
    assert!(result["errorMessage"].as_str().unwrap().starts_with("System One API error (503): "), "{result}");
}

#[tokio::test]
async fn llama_cpp_reads_label_probabilities() {
    let server = FakeServer::start().await.expect("server");
    let model = json!({"type": "classifier", "id": "qwen", "api": "llama-cpp-classify", "provider": "llama.cpp", "input": ["text"]});
    let mut c = call(model, &format!("{}/v1", server.url()));
    c.api_key = None;
    let result = classify(&c, &json!({"state": {"n": 1}, "questions": questions()})).await;
    assert_eq!(result["stopReason"], "stop", "{result}");
    let tone = &result["answers"]["tone"];
    assert_eq!(tone["choice"], "calm");
    let p_calm = 1.0 / (1.0 + (-4.0f64 + 0.1).exp());
    assert!((tone["probabilities"]["calm"].as_f64().unwrap() - p_calm).abs() < 1e-12, "{tone}");
    let spam = result["answers"]["spam"]["probability"].as_f64().unwrap();
    assert!((spam - 1.0 / (1.0 + (-1.5f64 + 0.3).exp())).abs() < 1e-12);
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert!(paths.iter().all(|p| !p.starts_with("/v1/")), "the server root, without /v1: {paths:?}");
    let completion = server.requests().into_iter().find(|r| r.path == "/completion").unwrap();
    assert_eq!(completion.body["n_probs"], 256);
    assert_eq!(completion.header("authorization"), None, "no key, no auth header");
    let template = server.requests().into_iter().find(|r| r.path == "/apply-template").unwrap();
    let user = template.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.starts_with("State:\n{\n \"n\": 1\n}\n\nTask: answer each of the following questions about the state."),
        "{user}"
    );
}

#[tokio::test]
async fn openrouter_images_request_and_output() {
    let server = FakeServer::start().await.expect("server");
    let model = json!({"type": "image", "id": "black-forest-labs/flux-3-image", "api": "openrouter-images",
                       "provider": "openrouter", "input": ["text", "image"], "output": ["image"],
                       "cost": {"input": 0, "output": 40, "cacheRead": 0, "cacheWrite": 0}});
    let c = call(model, &format!("{}/api/v1", server.url()));
    let context = json!({"input": [{"type": "text", "text": "a red fox"}, {"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}]});
    let result = generate_images(&c, &context).await;
    let r = only(&server);
    assert_eq!(r.path, "/api/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.body["modalities"], json!(["image"]));
    assert_eq!(r.body["stream"], false);
    assert_eq!(
        r.body["messages"][0]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}})
    );
    assert_eq!(result["responseId"], "gen-fake-image");
    assert_eq!(result["output"][0], json!({"type": "text", "text": "Here is your image."}));
    assert_eq!(result["output"][1]["mimeType"], "image/png");
    assert_eq!(result["usage"]["output"], 1290);
    assert_eq!(result["usage"]["cost"]["output"], 40.0 / 1e6 * 1290.0);
    let failed = generate_images(&c, &json!({"input": [{"type": "text", "text": "FAKE_STATUS_402"}]})).await;
    assert_eq!(failed["errorMessage"], r#"402: {"message":"fake status 402","type":"fake_error"}"#);
}
