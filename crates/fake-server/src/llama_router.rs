//! The model-management routes of llama.cpp's `llama-server` in router mode,
//! which pi's llama.cpp provider reads to list models: `GET /models` (the
//! catalog the test set, as `{"object": "list", "data": […]}`) and
//! `GET /props` (router-wide: `models_autoload`; with `?model=<id>`: that
//! model's `chat_template`). Served once a test calls
//! [`crate::FakeServer::serve_llama_router`]; the chat and classifier calls
//! go to the other routes (`/v1/chat/completions`, `/completion`, …).

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::RecordedRequest;
use crate::aws_services::Answer;

/// What the fake router lists.
#[derive(Debug, Clone, Default)]
pub struct LlamaRouter {
    /// The `data` entries of `GET /models`, as llama-server writes them.
    pub models: Vec<Value>,
    /// `models_autoload` of the router's `/props`.
    pub autoload: bool,
    /// Each model's chat template (`/props?model=<id>`); others get a plain one.
    pub templates: HashMap<String, String>,
}

fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

/// Undo `application/x-www-form-urlencoded` escaping.
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ok(body: Value) -> Answer {
    (200, vec![("content-type".to_string(), "application/json".to_string())], body.to_string())
}

/// The answer of a router route, or None for other requests.
pub fn answer(request: &RecordedRequest, router: &LlamaRouter) -> Option<Answer> {
    if request.method != "GET" {
        return None;
    }
    let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
    match path {
        "/models" => Some(ok(json!({"object": "list", "data": router.models}))),
        "/props" => Some(ok(match query_value(query, "model") {
            Some(model) => {
                let template = router.templates.get(&model).cloned().unwrap_or_else(|| "{{ messages }}".into());
                json!({"model_path": format!("/models/{model}.gguf"), "chat_template": template})
            }
            None => json!({"role": "router", "models_autoload": router.autoload}),
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(query_value("model=org%2Fm%3AQ4+K&autoload=false", "model").as_deref(), Some("org/m:Q4 K"));
        assert_eq!(query_value("autoload=false", "model"), None);
    }
}
