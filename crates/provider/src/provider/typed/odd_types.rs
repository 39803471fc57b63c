//! Fields of an unexpected JSON type, in the script's context, the catalog
//! entry and the servers' answers: each reads as absent (pi's `typeof` checks)
//! and gives pi's result or error text. A small HTTP server answers each
//! request from a function of its path and body.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::provider::http::HttpClient;

type Answerer = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// Serve `answer(path, body)` as a 200 JSON answer to every POST; the base URL.
async fn serve(answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let answer: Answerer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                let (head_end, length) = loop {
                    let Ok(n) = socket.read(&mut buf).await else { return };
                    if n == 0 {
                        return;
                    }
                    raw.extend_from_slice(&buf[..n]);
                    if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (at + 4, length);
                    }
                };
                while raw.len() < head_end + length {
                    let Ok(n) = socket.read(&mut buf).await else { return };
                    if n == 0 {
                        return;
                    }
                    raw.extend_from_slice(&buf[..n]);
                }
                let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                let body: Value = serde_json::from_slice(&raw[head_end..head_end + length]).unwrap_or(Value::Null);
                let text = answer(&path, &body).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    url
}

fn call(model: Value, base: &str) -> TypedCall {
    let mut model = model;
    model["baseUrl"] = json!(base);
    TypedCall {
        model,
        api_key: Some("k".into()),
        headers: Vec::new(),
        cancel: CancellationToken::new(),
        http: HttpClient::new().expect("client"),
    }
}

fn typesafe() -> Value {
    json!({"id": "jev", "api": "typesafe-system-one", "provider": "typesafe", "input": ["text", "image"],
           "cost": {"input": 1, "output": 2}})
}

fn bool_question() -> Value {
    json!({"q": {"type": "bool", "instructions": "Q?"}})
}

#[tokio::test]
async fn system_one_answers_of_the_wrong_type() {
    let cases = [
        (json!([1]), "System One API returned an unexpected response"),
        (json!({"answers": [1]}), "System One API returned an unexpected response"),
        (json!({"answers": {"q": 5}}), "System One API did not return an answer for q"),
        (json!({"answers": {"q": {"type": 5, "noul": 0.5}}}), "System One API did not return a bool answer for q"),
        (
            json!({"answers": {"q": {"type": "noul", "noul": "0.5"}}}),
            "System One API returned an invalid probability for q",
        ),
    ];
    for (answer, error) in cases {
        let url = serve(move |_, _| answer.clone()).await;
        let result = classify(&call(typesafe(), &url), &json!({"state": 1, "questions": bool_question()})).await;
        assert_eq!(result["errorMessage"], error, "{result}");
    }
    let choice = json!({"c": {"type": "choice", "criteria": {"a": "", "b": ""}}});
    let answer = json!({"answers": {"c": {"type": "choice", "choice": "a", "probabilities": {"a": 1, "b": "0"}, "confidence": 1}}});
    let url = serve(move |_, _| answer.clone()).await;
    let result = classify(&call(typesafe(), &url), &json!({"questions": choice})).await;
    assert_eq!(result["errorMessage"], "System One API returned an invalid probability for c.b");
    // Usage counts of another type count as 0; usage of another type is no usage.
    for (usage, input) in [(json!({"input_tokens": "7", "output_tokens": 3}), Some(0)), (json!([7]), None)] {
        let answer = json!({"answers": {"q": {"type": "noul", "noul": 1}}, "usage": usage});
        let url = serve(move |_, _| answer.clone()).await;
        let result = classify(&call(typesafe(), &url), &json!({"questions": bool_question()})).await;
        assert_eq!(result["stopReason"], "stop", "{result}");
        assert_eq!(result["answers"]["q"], json!({"type": "bool", "probability": 1}));
        assert_eq!(result["usage"]["input"].as_u64(), input, "{result}");
    }
}

#[tokio::test]
async fn cloudflare_envelopes_of_the_wrong_type() {
    let model = json!({"id": "x/y", "api": "cloudflare-workers-ai-system-one", "provider": "cf"});
    let cases = [
        (
            json!({"success": false, "errors": [{"message": 5}, "e", {"message": "bad"}]}),
            "Cloudflare Workers AI error: bad",
        ),
        (json!({"success": false, "errors": "e"}), "Cloudflare Workers AI request failed"),
        (json!({"success": "false", "result": 3}), "Cloudflare Workers AI returned an unexpected response"),
        (json!({"result": {"state": 5}}), "Cloudflare Workers AI run did not complete (state: 5)"),
        (json!({"result": {"state": null}}), "Cloudflare Workers AI run did not complete (state: null)"),
        (json!({"result": {}}), "Cloudflare Workers AI run did not complete (state: undefined)"),
        (
            json!({"result": {"state": "Completed", "result": [1]}}),
            "Cloudflare Workers AI returned an unexpected response",
        ),
        (json!({"result": {"answers": null}}), "Cloudflare Workers AI returned an unexpected response"),
    ];
    for (answer, error) in cases {
        let url = serve(move |_, _| answer.clone()).await;
        let result = classify(&call(model.clone(), &url), &json!({"questions": bool_question()})).await;
        assert_eq!(result["errorMessage"], error, "{result}");
    }
}

#[tokio::test]
async fn a_context_and_catalog_of_the_wrong_type() {
    let url = serve(|_, body| {
        let answer = json!({"type": "noul", "noul": 0.5});
        let ids: Vec<String> = body["questions"].as_object().map(|q| q.keys().cloned().collect()).unwrap_or_default();
        let answers: serde_json::Map<String, Value> = ids.into_iter().map(|id| (id, answer.clone())).collect();
        json!({"answers": answers, "echo": body})
    })
    .await;
    // Questions that are no object are bool questions; images that are no list are no images.
    let context = json!({"questions": {"a": 5, "b": {"type": 7}}, "images": "x"});
    let result = classify(&call(typesafe(), &url), &context).await;
    assert_eq!(result["answers"]["a"], json!({"type": "bool", "probability": 0.5}), "{result}");
    assert_eq!(result["answers"]["b"], json!({"type": "bool", "probability": 0.5}));
    // `input` that is no list accepts no images.
    let mut model = typesafe();
    model["input"] = json!("image");
    let png = json!({"data": "AA", "mimeType": "image/png"});
    let result = classify(&call(model, &url), &json!({"questions": bool_question(), "images": [png]})).await;
    assert_eq!(result["errorMessage"], "System One API does not support image input for jev");
    // A compat image form of another type is detected; an image without a MIME type is refused with "".
    let mut model = typesafe();
    model["compat"] = json!({"imageInput": 3, "sendImageOptInHeader": "no"});
    let result = classify(&call(model, &url), &json!({"questions": bool_question(), "images": [{"data": 1}]})).await;
    assert_eq!(result["errorMessage"], "System One API accepts PNG and JPEG images for jev, got ");
    // Prices of another type are 0; a tier whose threshold is no number never applies.
    let mut model = typesafe();
    model["cost"] = json!({"input": "1", "output": 2, "tiers": [{"inputTokensAbove": "0", "output": 9}, 5]});
    let answer =
        json!({"answers": {"q": {"type": "noul", "noul": 1}}, "usage": {"input_tokens": 10, "output_tokens": 10}});
    let priced = serve(move |_, _| answer.clone()).await;
    let result = classify(&call(model, &priced), &json!({"questions": bool_question()})).await;
    assert_eq!(result["usage"]["cost"]["input"], 0.0, "{result}");
    assert_eq!(result["usage"]["cost"]["output"], 2.0 / 1e6 * 10.0);
    // An id of another type is "".
    let result = classify(&call(json!({"id": 5, "api": "typesafe-system-one", "provider": 1}), &url), &json!({})).await;
    assert_eq!((&result["model"], &result["provider"]), (&json!(""), &json!("")));
}

#[tokio::test]
async fn decisions_answers_of_the_wrong_type() {
    let model = json!({"id": "d", "api": "openai-decisions", "provider": "openai"});
    let questions = json!({
        "c": {"type": "choice", "instructions": 5, "criteria": {"a": 1, "b": "B"}},
        "s": {"type": "score", "criteria": "x"},
        "p": {"type": "bool", "criteria": {"true": 1, "false": "no"}},
    });
    let good = |body: &Value| {
        json!({"answers": [
            {"name": "c", "type": "choice", "choice": "a", "probabilities": [{"value": "a", "probability": 1}], "confidence": 1},
            {"name": "s", "type": "score", "score": 0, "confidence": 1},
            {"name": "p", "type": "predicate", "probability": 0.5},
            {"name": 5, "type": "predicate", "probability": 9},
            "stray",
        ], "usage": 5, "echo": body})
    };
    let url = serve(move |_, body| good(body)).await;
    let result = classify(&call(model.clone(), &url), &json!({"questions": questions.clone(), "images": {}})).await;
    assert_eq!(result["stopReason"], "stop", "{result}");
    assert_eq!(result.get("usage"), None);
    assert_eq!(result["answers"]["c"]["probabilities"], json!({"a": 1}));
    assert_eq!(result["answers"]["p"], json!({"type": "bool", "probability": 0.5}));
    let cases = [
        (json!({"answers": {"c": 1}}), "OpenAI Decisions returned an unexpected response"),
        (json!({"answers": [{"name": "c", "type": "refusal"}]}), "OpenAI Decisions refused to answer c"),
        (
            json!({"answers": [{"name": "c", "type": "choice", "choice": 1}]}),
            "OpenAI Decisions did not return a choice answer for c",
        ),
        (
            json!({"answers": [{"name": "c", "type": "choice", "choice": "a", "probabilities": {"a": 1}}]}),
            "OpenAI Decisions returned invalid probabilities for c",
        ),
        (
            json!({"answers": [{"name": "c", "type": "choice", "choice": "a", "probabilities": [{"value": 1}]}]}),
            "OpenAI Decisions returned invalid probabilities for c",
        ),
        (
            json!({"answers": [{"name": "c", "type": "choice", "choice": "a", "probabilities": [{"value": "a", "probability": "1"}]}]}),
            "OpenAI Decisions returned an invalid probability for c.a",
        ),
        (
            json!({"answers": [{"name": "c", "type": "choice", "choice": "a", "probabilities": [], "confidence": null}]}),
            "OpenAI Decisions returned an invalid confidence for c",
        ),
    ];
    for (answer, error) in cases {
        let url = serve(move |_, _| answer.clone()).await;
        let result = classify(&call(model.clone(), &url), &json!({"questions": questions.clone()})).await;
        assert_eq!(result["errorMessage"], error, "{result}");
    }
    // What went on the wire for the odd questions.
    let sent = Arc::new(std::sync::Mutex::new(Value::Null));
    let seen = sent.clone();
    let echo = serve(move |_, body| {
        *seen.lock().unwrap() = body.clone();
        json!({"answers": []})
    })
    .await;
    classify(&call(model.clone(), &echo), &json!({"questions": questions, "state": null})).await;
    let body = sent.lock().unwrap().clone();
    assert_eq!(body["input"], "null");
    assert_eq!(
        body["questions"][0],
        json!({"type": "choice", "name": "c", "instructions": 5,
        "choices": [{"value": "a"}, {"value": "b", "description": "B"}]})
    );
    assert_eq!(body["questions"][1], json!({"type": "score", "name": "s", "instructions": null, "levels": []}));
    assert_eq!(body["questions"][2], json!({"type": "predicate", "name": "p", "instructions": "\n\nFalse means: no"}));
}

#[tokio::test]
async fn llama_cpp_answers_of_the_wrong_type() {
    let model = json!({"id": "m", "api": "llama-cpp-classify", "provider": "llama.cpp"});
    let tokenize = |body: &Value| {
        let content = body["content"].as_str().unwrap_or_default();
        let ids: Vec<i64> = match content {
            "\n" => vec![10],
            "\nYes" => vec![10, 1],
            "\nNo" => vec![10, 2],
            _ => vec![99, 98],
        };
        json!({"tokens": ids.iter().map(|i| json!({"id": i})).collect::<Vec<_>>()})
    };
    let run = |prompt: Value, top: Value| {
        move |path: &str, body: &Value| match path {
            "/tokenize" => tokenize(body),
            "/apply-template" => prompt.clone(),
            _ => top.clone(),
        }
    };
    let cases = [
        (json!({"prompt": 5}), json!({}), "llama.cpp did not return a prompt"),
        (
            json!({"prompt": "p"}),
            json!({"completion_probabilities": {}}),
            "llama.cpp did not return token probabilities",
        ),
        (
            json!({"prompt": "p"}),
            json!({"completion_probabilities": [{"top_logprobs": [{"id": "1", "logprob": -1}, {"id": 2, "logprob": "x"}, 7]}]}),
            "llama.cpp did not rank labels Yes, No for q within the top 32768 tokens",
        ),
    ];
    for (prompt, top, error) in cases {
        let url = serve(run(prompt, top)).await;
        let result = classify(&call(model.clone(), &format!("{url}/v1")), &json!({"questions": bool_question()})).await;
        assert_eq!(result["errorMessage"], error, "{result}");
    }
    let top =
        json!({"completion_probabilities": [{"top_logprobs": [{"id": 1, "logprob": 0}, {"id": 2, "logprob": 0}]}]});
    let url = serve(run(json!({"prompt": "p"}), top)).await;
    let context = json!({"questions": bool_question(), "images": 5, "state": {"k": [1]}});
    let result = classify(&call(model.clone(), &format!("{url}/v1")), &context).await;
    assert_eq!(result["answers"]["q"], json!({"type": "bool", "probability": 0.5}), "{result}");
    // Tokens of another type are an unexpected tokenization.
    let url = serve(|_, _| json!({"tokens": [{"id": "1"}]})).await;
    let result = classify(&call(model.clone(), &url), &json!({"questions": bool_question()})).await;
    assert_eq!(result["errorMessage"], "llama.cpp returned an unexpected tokenization");
    // A score question whose levels are no list, a choice whose options are none.
    let bad = json!({"questions": {"s": {"type": "score", "criteria": {"a": 1}}}});
    let result = classify(&call(model.clone(), &url), &bad).await;
    assert_eq!(result["errorMessage"], "A score question needs 2 to 10 levels, got 0");
    let bad = json!({"questions": {"c": {"type": "choice", "criteria": ["a", "b"]}}});
    let result = classify(&call(model, &url), &bad).await;
    assert_eq!(result["errorMessage"], "A choice question needs 2 to 62 options, got 0");
}

#[tokio::test]
async fn image_answers_of_the_wrong_type() {
    let model = json!({"id": "i", "api": "openrouter-images", "provider": "openrouter", "output": "text",
                       "cost": {"output": 1}});
    let sent = Arc::new(std::sync::Mutex::new(Value::Null));
    let seen = sent.clone();
    let url = serve(move |_, body| {
        *seen.lock().unwrap() = body.clone();
        json!({"id": 7, "usage": {"prompt_tokens": "3", "completion_tokens": 4, "prompt_tokens_details": 1},
               "choices": [{"message": {"content": 5, "images": [
                   {"image_url": {"url": 1}}, {"image_url": "data:image/png;base64,AA"}, "x",
                   {"image_url": {"url": "data:image/gif;base64,BB"}}]}}]})
    })
    .await;
    let context = json!({"input": [{"type": 1, "text": "t"}, "raw", {"type": "text", "text": 2}]});
    let result = generate_images(&call(model.clone(), &url), &context).await;
    assert_eq!(result["responseId"], 7, "{result}");
    assert_eq!(result["usage"]["input"], 0);
    assert_eq!(result["usage"]["output"], 4);
    assert_eq!(
        result["output"],
        json!([{"type": "image", "mimeType": "image/png", "data": "AA"}, {"type": "image", "mimeType": "image/gif", "data": "BB"}])
    );
    let body = sent.lock().unwrap().clone();
    assert_eq!(body["modalities"], json!(["image"]), "an `output` that is no list has no text");
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "image_url", "image_url": {"url": "data:;base64,"}},
            {"type": "image_url", "image_url": {"url": "data:;base64,"}},
            {"type": "text", "text": ""},
        ])
    );
    let url = serve(|_, _| json!({"id": null, "usage": [1], "choices": {"0": 1}})).await;
    let result = generate_images(&call(model, &url), &json!({"input": "x"})).await;
    assert_eq!(result.get("responseId"), None);
    assert_eq!(result.get("usage"), None);
    assert_eq!(result["output"], json!([]));
}
