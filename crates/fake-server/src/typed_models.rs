//! Routes for pi-ai's non-chat APIs on the fake server, answering from the
//! request so that tests see what was asked:
//!
//! * `POST …/systemone` (TypeSafe's System One): each question of the body
//!   answered (choice: the first label; score: the top level; `noul`: 0.75);
//! * `POST …/run` (Cloudflare Workers AI): the same inside Cloudflare's
//!   envelope, for `@cf/…` models directly, else as a completed run record;
//! * `POST …/decisions` (OpenAI Decisions): the answers as a list;
//! * llama-server's `POST /tokenize`, `/apply-template`, `/completion`: one
//!   token per character (`Yes`/`No` one each), a fixed template, and
//!   next-token log-probabilities that favour `A`, `9` and `Yes`;
//! * `POST …/chat/completions` with `modalities` naming `image` and no
//!   streaming (OpenRouter image generation): a text and one PNG.
//!
//! A body containing `FAKE_STATUS_<code>` gets that status with an OpenAI-style
//! error body instead.

use serde_json::{Map, Value, json};

use crate::RecordedRequest;
use crate::aws_services::Answer;

/// The image every image request gets (a 1×1 PNG).
pub const GENERATED_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/// Token ids of the two multi-letter labels.
const YES: i64 = 1001;
const NO: i64 = 1002;

/// The answer of a non-chat route, or None for other requests.
pub fn answer(request: &RecordedRequest) -> Option<Answer> {
    if request.method != "POST" {
        return None;
    }
    let path = request.path.split('?').next().unwrap_or("");
    let body = &request.body;
    let route = if path.ends_with("/systemone") {
        Route::SystemOne
    } else if path.ends_with("/run") && body.get("input").is_some() {
        Route::Cloudflare
    } else if path.ends_with("/decisions") {
        Route::Decisions
    } else if path.ends_with("/tokenize") {
        Route::Tokenize
    } else if path.ends_with("/apply-template") {
        Route::Template
    } else if path.ends_with("/completion") {
        Route::Completion
    } else if path.ends_with("/chat/completions")
        && body["stream"] == false
        && body["modalities"].as_array().is_some_and(|m| m.iter().any(|x| x == "image"))
    {
        Route::Images
    } else {
        return None;
    };
    if let Some(status) = forced_status(&request.raw_body) {
        let error = json!({"error": {"message": format!("fake status {status}"), "type": "fake_error"}});
        return Some((status, vec![], error.to_string()));
    }
    let answer = match route {
        Route::SystemOne => system_one(body, body),
        Route::Cloudflare => {
            let out = system_one(body, &body["input"]);
            if body["model"].as_str().is_some_and(|m| m.starts_with("@cf/")) {
                json!({"success": true, "errors": [], "result": out})
            } else {
                json!({"success": true, "errors": [], "result": {"state": "Completed", "result": out}})
            }
        }
        Route::Decisions => decisions(body),
        Route::Tokenize => json!({"tokens": tokenize(body["content"].as_str().unwrap_or_default())}),
        Route::Template => {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let text: Vec<String> = messages
                .iter()
                .map(|m| format!("<|{}|>{}", m["role"].as_str().unwrap_or(""), m["content"].as_str().unwrap_or("")))
                .collect();
            json!({"prompt": format!("{}<|assistant|>\n", text.join("\n"))})
        }
        Route::Completion => completion(body),
        Route::Images => images(body),
    };
    Some((200, vec![("content-type".into(), "application/json".into())], answer.to_string()))
}

enum Route {
    SystemOne,
    Cloudflare,
    Decisions,
    Tokenize,
    Template,
    Completion,
    Images,
}

fn forced_status(raw: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(raw);
    let at = text.find("FAKE_STATUS_")? + "FAKE_STATUS_".len();
    text[at..].chars().take(3).collect::<String>().parse().ok()
}

fn usage() -> Value {
    json!({"input_tokens": 120, "output_tokens": 0})
}

/// System One answers for the questions of `request`.
fn system_one(body: &Value, request: &Value) -> Value {
    let mut answers = Map::new();
    for (id, q) in request["questions"].as_object().into_iter().flatten() {
        let answer = match q["type"].as_str() {
            Some("choice") => {
                let keys: Vec<&String> = q["criteria"].as_object().map(|c| c.keys().collect()).unwrap_or_default();
                let rest = if keys.len() > 1 { 0.25 / (keys.len() - 1) as f64 } else { 0.0 };
                let probs: Map<String, Value> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, k)| ((*k).clone(), json!(if i == 0 { 0.75 } else { rest })))
                    .collect();
                json!({"type": "choice", "choice": keys.first().map(|k| k.as_str()).unwrap_or(""), "probabilities": probs, "confidence": 0.5})
            }
            Some("score") => {
                let top = q["criteria"].as_array().map_or(0, Vec::len).saturating_sub(1);
                json!({"type": "score", "score": top, "confidence": 0.875})
            }
            _ => json!({"type": "noul", "noul": 0.75}),
        };
        answers.insert(id.clone(), answer);
    }
    json!({"model": body["model"], "answers": answers, "usage": usage()})
}

fn decisions(body: &Value) -> Value {
    let answers: Vec<Value> = body["questions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            let name = q["name"].clone();
            match q["type"].as_str() {
                Some("choice") => {
                    let values: Vec<Value> = q["choices"].as_array().into_iter().flatten().map(|c| c["value"].clone()).collect();
                    let probs: Vec<Value> = values
                        .iter()
                        .enumerate()
                        .map(|(i, v)| json!({"value": v, "probability": if i == 0 { 0.75 } else { 0.25 / (values.len().max(2) - 1) as f64 }}))
                        .collect();
                    json!({"name": name, "type": "choice", "choice": values.first(), "probabilities": probs, "confidence": 0.5})
                }
                Some("score") => {
                    let top = q["levels"].as_array().map_or(0, Vec::len).saturating_sub(1);
                    json!({"name": name, "type": "score", "score": top, "confidence": 0.875})
                }
                _ => json!({"name": name, "type": "predicate", "probability": 0.75}),
            }
        })
        .collect();
    json!({"id": "dec_fake", "object": "decision", "model": body["model"], "answers": answers, "usage": usage()})
}

fn tokenize(content: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("Yes") {
            out.push(YES);
            rest = after;
        } else if let Some(after) = rest.strip_prefix("No") {
            out.push(NO);
            rest = after;
        } else {
            out.push(i64::from(u32::from(c)));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The next token's log-probabilities: `A`, `9` and `Yes` first.
fn completion(body: &Value) -> Value {
    let mut top = vec![
        json!({"id": i64::from(b'A'), "token": "A", "logprob": -0.1}),
        json!({"id": i64::from(b'9'), "token": "9", "logprob": -0.2}),
        json!({"id": YES, "token": "Yes", "logprob": -0.3}),
        json!({"id": NO, "token": "No", "logprob": -1.5}),
    ];
    for c in "BCDEFGH012345678".chars() {
        top.push(json!({"id": i64::from(u32::from(c)), "token": c.to_string(), "logprob": -4.0}));
    }
    let depth = body["n_probs"].as_u64().unwrap_or(0) as usize;
    top.truncate(depth.max(1));
    json!({"content": "A", "completion_probabilities": [{"id": i64::from(b'A'), "token": "A", "logprob": -0.1, "top_logprobs": top}]})
}

fn images(body: &Value) -> Value {
    json!({
        "id": "gen-fake-image",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant",
            "content": "Here is your image.",
            "images": [{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{GENERATED_PNG}")}}],
        }}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1290, "total_tokens": 1310},
    })
}
