//! OpenAI's Decisions API (`openai-decisions`), as pi-ai 1.6.0 sends it:
//! `POST {baseUrl}/decisions` with `{model, input, questions}`. The state goes
//! as JSON text, or with images as one user message (`input_text` then
//! `input_image` data URLs); `choice` stays `choice`, `score` lists its
//! levels, `bool` becomes a `predicate` whose instructions carry the meanings
//! of true and false. A 504 (the gateway's time limit) is not retried.

use serde_json::{Map, Value, json};

use super::wire::{ClassifyContext, DecisionAnswer, DecisionProbability, DecisionsOutput, Question};
use super::{CallError, TypedCall, classifier_usage, join_url, post_json, required_number};
use crate::provider::lenient;

pub const API: &str = "openai-decisions";
const LABEL: &str = "OpenAI Decisions";
/// Image parts the endpoint takes at most.
const MAX_IMAGES: usize = 128;
const NO_RETRY_STATUSES: &[u16] = &[504];

fn predicate_instructions(question: &Question) -> String {
    let mut lines = Vec::new();
    if let Some(t) = question.meaning(true) {
        lines.push(format!("True means: {t}"));
    }
    if let Some(f) = question.meaning(false) {
        lines.push(format!("False means: {f}"));
    }
    let instructions = question.instructions_text();
    if lines.is_empty() { instructions.to_string() } else { format!("{instructions}\n\n{}", lines.join("\n")) }
}

fn wire_question(name: &str, question: &Question) -> Value {
    let instructions = question.instructions.clone().unwrap_or(Value::Null);
    match question.kind() {
        "choice" => {
            let choices: Vec<Value> = question
                .options()
                .iter()
                .map(|(value, description)| match description {
                    Some(d) => json!({"value": value, "description": d}),
                    None => json!({"value": value}),
                })
                .collect();
            json!({"type": "choice", "name": name, "instructions": instructions, "choices": choices})
        }
        "score" => {
            let levels: Vec<Value> = question.levels().iter().map(|label| json!({"label": label})).collect();
            json!({"type": "score", "name": name, "instructions": instructions, "levels": levels})
        }
        _ => json!({"type": "predicate", "name": name, "instructions": predicate_instructions(question)}),
    }
}

fn wire_input(context: &ClassifyContext) -> Result<Value, CallError> {
    let state = crate::provider::shared::js_json(context.state.as_ref().unwrap_or(&Value::Null));
    let images = &context.images;
    if images.is_empty() {
        return Ok(json!(state));
    }
    if images.len() > MAX_IMAGES {
        return Err(CallError::plain(format!("{LABEL} accepts at most {MAX_IMAGES} images, got {}", images.len())));
    }
    let mut content = vec![json!({"type": "input_text", "text": state})];
    content.extend(images.iter().map(|image| json!({"type": "input_image", "image_url": image.data_url()})));
    Ok(json!([{"role": "user", "content": content}]))
}

fn choice_probabilities(value: Option<&[DecisionProbability]>, id: &str) -> Result<Value, CallError> {
    let invalid = || CallError::plain(format!("{LABEL} returned invalid probabilities for {id}"));
    let mut out = Map::new();
    for entry in value.ok_or_else(invalid)? {
        let name = entry.value.as_deref().ok_or_else(invalid)?;
        let p = required_number(LABEL, entry.probability.as_ref(), &format!("probability for {id}.{name}"))?;
        out.insert(name.to_string(), p);
    }
    Ok(Value::Object(out))
}

fn parse_answer(id: &str, question: &Question, answer: &DecisionAnswer) -> Result<Value, CallError> {
    let kind = answer.kind.as_deref();
    if kind == Some("refusal") {
        return Err(CallError::plain(format!("{LABEL} refused to answer {id}")));
    }
    let confidence = || required_number(LABEL, answer.confidence.as_ref(), &format!("confidence for {id}"));
    match question.kind() {
        "choice" => {
            let Some(choice) = answer.choice.as_deref().filter(|_| kind == Some("choice")) else {
                return Err(CallError::plain(format!("{LABEL} did not return a choice answer for {id}")));
            };
            Ok(json!({
                "type": "choice", "choice": choice,
                "probabilities": choice_probabilities(answer.probabilities.as_deref(), id)?,
                "confidence": confidence()?,
            }))
        }
        "score" => {
            if kind != Some("score") {
                return Err(CallError::plain(format!("{LABEL} did not return a score answer for {id}")));
            }
            let score = required_number(LABEL, answer.score.as_ref(), &format!("score for {id}"))?;
            Ok(json!({"type": "score", "score": score, "confidence": confidence()?}))
        }
        _ => {
            if kind != Some("predicate") {
                return Err(CallError::plain(format!("{LABEL} did not return a predicate answer for {id}")));
            }
            let p = required_number(LABEL, answer.probability.as_ref(), &format!("probability for {id}"))?;
            Ok(json!({"type": "bool", "probability": p}))
        }
    }
}

fn parse_answers(value: Option<&[DecisionAnswer]>, context: &ClassifyContext) -> Result<Value, CallError> {
    let Some(list) = value else {
        return Err(CallError::plain(format!("{LABEL} returned an unexpected response")));
    };
    let by_name = |name: &str| list.iter().rev().find(|a| a.name.as_deref() == Some(name));
    let mut out = Map::new();
    for (id, question) in &context.questions {
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
    let context = ClassifyContext::read(context);
    let entry = call.entry();
    let questions: Vec<Value> = context.questions.iter().map(|(id, q)| wire_question(id, q)).collect();
    let body = json!({"model": entry.id, "input": wire_input(&context)?, "questions": questions});
    let Some(key) = &call.api_key else {
        return Err(CallError::plain(format!("No API key for provider: {}", entry.provider)));
    };
    let own = [("authorization", format!("Bearer {key}")), ("content-type", "application/json".to_string())];
    let headers = call.request_headers(&own);
    let answer =
        post_json(call, LABEL, &join_url(&entry.base_url, "decisions"), &headers, &body, NO_RETRY_STATUSES).await?;
    let Some(answer) = lenient::event::<DecisionsOutput>(answer) else {
        return Err(CallError::plain(format!("{LABEL} returned an unexpected response")));
    };
    // Set before the answers are read: a request with malformed or refused answers was still billed.
    if let Some(usage) = classifier_usage(call, answer.usage.as_ref()) {
        out.insert("usage".into(), usage);
    }
    out.insert("answers".into(), parse_answers(answer.answers.as_deref(), &context)?);
    Ok(())
}
