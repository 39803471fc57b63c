//! OpenAI's Decisions API (`openai-decisions`), as pi-ai 1.6.0 sends it:
//! `POST {baseUrl}/decisions` with `{model, input, questions}`. The state goes
//! as JSON text, or with images as one user message (`input_text` then
//! `input_image` data URLs); `choice` stays `choice`, `score` lists its
//! levels, `bool` becomes a `predicate` whose instructions carry the meanings
//! of true and false. A 504 (the gateway's time limit) is not retried.

use serde_json::{Map, Value, json};

use super::{CallError, TypedCall, classifier_usage, join_url, post_json, required_number};

pub const API: &str = "openai-decisions";
const LABEL: &str = "OpenAI Decisions";
/// Image parts the endpoint takes at most.
const MAX_IMAGES: usize = 128;
const NO_RETRY_STATUSES: &[u16] = &[504];

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn predicate_instructions(question: &Value) -> String {
    let criteria = question.get("criteria");
    let meaning = |key: &str| criteria.and_then(|c| c.get(key)).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut lines = Vec::new();
    if let Some(t) = meaning("true") {
        lines.push(format!("True means: {t}"));
    }
    if let Some(f) = meaning("false") {
        lines.push(format!("False means: {f}"));
    }
    let instructions = str_of(question, "instructions");
    if lines.is_empty() { instructions.to_string() } else { format!("{instructions}\n\n{}", lines.join("\n")) }
}

fn wire_question(name: &str, question: &Value) -> Value {
    let instructions = question.get("instructions").cloned().unwrap_or(Value::Null);
    match str_of(question, "type") {
        "choice" => {
            let choices: Vec<Value> = question
                .get("criteria")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(value, description)| match description.as_str().filter(|d| !d.is_empty()) {
                    Some(d) => json!({"value": value, "description": d}),
                    None => json!({"value": value}),
                })
                .collect();
            json!({"type": "choice", "name": name, "instructions": instructions, "choices": choices})
        }
        "score" => {
            let levels: Vec<Value> = question
                .get("criteria")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|label| json!({"label": label}))
                .collect();
            json!({"type": "score", "name": name, "instructions": instructions, "levels": levels})
        }
        _ => json!({"type": "predicate", "name": name, "instructions": predicate_instructions(question)}),
    }
}

fn wire_input(context: &Value) -> Result<Value, CallError> {
    let state = crate::provider::shared::js_json(context.get("state").unwrap_or(&Value::Null));
    let images = context.get("images").and_then(Value::as_array).cloned().unwrap_or_default();
    if images.is_empty() {
        return Ok(json!(state));
    }
    if images.len() > MAX_IMAGES {
        return Err(CallError::plain(format!("{LABEL} accepts at most {MAX_IMAGES} images, got {}", images.len())));
    }
    let mut content = vec![json!({"type": "input_text", "text": state})];
    content.extend(images.iter().map(|image| {
        json!({"type": "input_image", "image_url": format!("data:{};base64,{}", str_of(image, "mimeType"), str_of(image, "data"))})
    }));
    Ok(json!([{"role": "user", "content": content}]))
}

fn choice_probabilities(value: Option<&Value>, id: &str) -> Result<Value, CallError> {
    let invalid = || CallError::plain(format!("{LABEL} returned invalid probabilities for {id}"));
    let mut out = Map::new();
    for entry in value.and_then(Value::as_array).ok_or_else(invalid)? {
        let name = entry.get("value").and_then(Value::as_str).ok_or_else(invalid)?;
        let p = required_number(LABEL, entry.get("probability"), &format!("probability for {id}.{name}"))?;
        out.insert(name.to_string(), p);
    }
    Ok(Value::Object(out))
}

fn parse_answer(id: &str, question: &Value, answer: &Value) -> Result<Value, CallError> {
    let kind = answer.get("type").and_then(Value::as_str);
    if kind == Some("refusal") {
        return Err(CallError::plain(format!("{LABEL} refused to answer {id}")));
    }
    let confidence = || required_number(LABEL, answer.get("confidence"), &format!("confidence for {id}"));
    match str_of(question, "type") {
        "choice" => {
            let Some(choice) = answer.get("choice").and_then(Value::as_str).filter(|_| kind == Some("choice")) else {
                return Err(CallError::plain(format!("{LABEL} did not return a choice answer for {id}")));
            };
            Ok(json!({
                "type": "choice", "choice": choice,
                "probabilities": choice_probabilities(answer.get("probabilities"), id)?,
                "confidence": confidence()?,
            }))
        }
        "score" => {
            if kind != Some("score") {
                return Err(CallError::plain(format!("{LABEL} did not return a score answer for {id}")));
            }
            let score = required_number(LABEL, answer.get("score"), &format!("score for {id}"))?;
            Ok(json!({"type": "score", "score": score, "confidence": confidence()?}))
        }
        _ => {
            if kind != Some("predicate") {
                return Err(CallError::plain(format!("{LABEL} did not return a predicate answer for {id}")));
            }
            let p = required_number(LABEL, answer.get("probability"), &format!("probability for {id}"))?;
            Ok(json!({"type": "bool", "probability": p}))
        }
    }
}

fn parse_answers(value: Option<&Value>, context: &Value) -> Result<Value, CallError> {
    let Some(list) = value.and_then(Value::as_array) else {
        return Err(CallError::plain(format!("{LABEL} returned an unexpected response")));
    };
    let by_name =
        |name: &str| list.iter().rev().find(|a| a.is_object() && a.get("name").and_then(Value::as_str) == Some(name));
    let mut out = Map::new();
    for (id, question) in context.get("questions").and_then(Value::as_object).into_iter().flatten() {
        let answer =
            by_name(id).ok_or_else(|| CallError::plain(format!("{LABEL} did not return an answer for {id}")))?;
        out.insert(id.clone(), parse_answer(id, question, answer)?);
    }
    Ok(Value::Object(out))
}

fn error_text(error: &CallError) -> String {
    if error.status == Some(504) {
        return format!(
            "{LABEL} error (504): the request timed out at the gateway. Very large inputs (above roughly 600K tokens) currently exceed its time limit."
        );
    }
    error.text(Some(&format!("{LABEL} error")))
}

/// Classify through OpenAI's Decisions API.
pub async fn classify(call: &TypedCall, context: &Value) -> Value {
    let mut out = call.result_head("answers", json!({}));
    if let Err(error) = run(call, context, &mut out).await {
        out.insert("answers".into(), json!({}));
        call.fail(&mut out, error_text(&error));
    }
    Value::Object(out)
}

async fn run(call: &TypedCall, context: &Value, out: &mut Map<String, Value>) -> Result<(), CallError> {
    let questions: Vec<Value> = context
        .get("questions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(id, q)| wire_question(id, q))
        .collect();
    let body = json!({"model": call.id(), "input": wire_input(context)?, "questions": questions});
    let Some(key) = &call.api_key else {
        return Err(CallError::plain(format!("No API key for provider: {}", call.str("provider"))));
    };
    let own = [("authorization", format!("Bearer {key}")), ("content-type", "application/json".to_string())];
    let headers = call.request_headers(&own);
    let answer =
        post_json(call, LABEL, &join_url(call.base_url(), "decisions"), &headers, &body, NO_RETRY_STATUSES).await?;
    if !answer.is_object() {
        return Err(CallError::plain(format!("{LABEL} returned an unexpected response")));
    }
    // Set before the answers are read: a request with malformed or refused answers was still billed.
    if let Some(usage) = classifier_usage(&call.model, answer.get("usage")) {
        out.insert("usage".into(), usage);
    }
    out.insert("answers".into(), parse_answers(answer.get("answers"), context)?);
    Ok(())
}
