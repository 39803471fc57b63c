//! System One classification: TypeSafe's protocol (`typesafe-system-one`,
//! served by TypeSafe, OpenRouter, Vercel's gateway, OpenCode, GitHub Copilot
//! and llama.cpp's decision models) and Cloudflare Workers AI's REST form of
//! it (`cloudflare-workers-ai-system-one`), as pi-ai 1.6.0 sends them.
//!
//! TypeSafe: `POST {baseUrl}/systemone` with `{model, state, questions}`;
//! Cloudflare: `POST {baseUrl}/run` with `{model, input: {state, questions}}`,
//! the answer inside Cloudflare's envelope (`result`, or `result.result` of a
//! completed run record). Public `bool` questions travel as `noul`. Images go
//! as TypeSafe `assets` (with the opt-in header on TypeSafe itself), as
//! `image_url` parts before the state (OpenRouter), or as a list of data URLs
//! (Clef, llama.cpp).

use serde_json::{Map, Value, json};

use super::wire::{ClassifyContext, CloudflareError, Entry, Envelope, Image, RunRecord, SystemOneOutput};
use super::{CallError, TypedCall, classifier_usage, join_url, post_json, required_number};
use crate::provider::lenient;

pub const TYPESAFE_API: &str = "typesafe-system-one";
pub const CLOUDFLARE_API: &str = "cloudflare-workers-ai-system-one";
const TYPESAFE_LABEL: &str = "System One API";
const CLOUDFLARE_LABEL: &str = "Cloudflare Workers AI";
/// TypeSafe's opt-in header for its experimental image input.
const IMAGE_OPT_IN: (&str, &str) = ("TypeSafe-Danger-Zone-Images", "true");
/// Clef takes at most this many images a request.
const MAX_DATA_URL_IMAGES: usize = 4;

/// How a model takes images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImageInput {
    /// `images`: data URLs (Clef, llama.cpp).
    DataUrls,
    /// `image_url` parts before the state (OpenRouter).
    StateImageUrls,
    /// TypeSafe's `assets`, named in the state.
    Assets,
}

/// The API's transport: which label, URL, payload and envelope.
struct Transport {
    label: &'static str,
    cloudflare: bool,
}

impl Transport {
    fn of(entry: &Entry) -> Transport {
        if entry.api == CLOUDFLARE_API {
            Transport { label: CLOUDFLARE_LABEL, cloudflare: true }
        } else {
            Transport { label: TYPESAFE_LABEL, cloudflare: false }
        }
    }

    /// The image form and opt-in header pi detects when the catalog has no `compat`.
    fn detected(&self, entry: &Entry) -> (ImageInput, bool) {
        if self.cloudflare {
            let clef = entry.id.starts_with("@cf/cloudflare/clef");
            (if clef { ImageInput::DataUrls } else { ImageInput::Assets }, false)
        } else if entry.provider == "openrouter" || entry.base_url.contains("openrouter.ai") {
            (ImageInput::StateImageUrls, false)
        } else {
            (ImageInput::Assets, true)
        }
    }

    /// `{base}/systemone` (`{base}/run` on Cloudflare); GitHub Copilot
    /// serves System One under `/v1`, which its chat APIs lack, so pi adds
    /// it to the (login's) base URL per request.
    fn url(&self, entry: &Entry) -> String {
        if self.cloudflare {
            return join_url(&entry.base_url, "run");
        }
        if entry.provider == "github-copilot" {
            return join_url(&join_url(&entry.base_url, "v1"), "systemone");
        }
        join_url(&entry.base_url, "systemone")
    }

    fn payload(&self, entry: &Entry, request: Map<String, Value>) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(entry.id));
        if self.cloudflare {
            body.insert("input".into(), Value::Object(request));
        } else {
            body.extend(request);
        }
        Value::Object(body)
    }

    /// The object holding `answers` and `usage`.
    fn output(&self, body: Value) -> Result<SystemOneOutput, CallError> {
        let unexpected = || CallError::plain(format!("{} returned an unexpected response", self.label));
        if !self.cloudflare {
            return lenient::event(body).ok_or_else(unexpected);
        }
        let envelope: Envelope = lenient::event(body).ok_or_else(unexpected)?;
        if envelope.success == Some(false) {
            return Err(CallError::plain(cloudflare_error(&envelope.errors)));
        }
        let result = envelope.result.filter(Value::is_object).ok_or_else(unexpected)?;
        let record: RunRecord = lenient::event_ref(&result).unwrap_or_default();
        if record.answers.is_some() {
            return lenient::event(result).ok_or_else(unexpected);
        }
        if record.state.as_ref().and_then(Value::as_str) != Some("Completed") {
            let state = match record.state {
                None => "undefined".to_string(),
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
            };
            return Err(CallError::plain(format!("{CLOUDFLARE_LABEL} run did not complete (state: {state})")));
        }
        record.result.and_then(lenient::event).ok_or_else(unexpected)
    }
}

fn cloudflare_error(errors: &[CloudflareError]) -> String {
    let messages: Vec<&str> = errors.iter().filter_map(|e| e.message.as_deref()).collect();
    if messages.is_empty() {
        format!("{CLOUDFLARE_LABEL} request failed")
    } else {
        format!("{CLOUDFLARE_LABEL} error: {}", messages.join("; "))
    }
}

/// The questions as the script wrote them, with `bool` renamed `noul`, and the state.
fn wire_request(context: &ClassifyContext) -> Map<String, Value> {
    let mut questions = Map::new();
    for (id, question) in &context.questions {
        let mut q = question.raw.clone();
        if let Value::Object(fields) = &mut q
            && question.kind() == "bool"
        {
            fields.insert("type".into(), json!("noul"));
        }
        questions.insert(id.clone(), q);
    }
    let mut request = Map::new();
    request.insert("state".into(), context.state.clone().unwrap_or(Value::Null));
    request.insert("questions".into(), Value::Object(questions));
    request
}

/// Put the context's images into the request in the model's form.
fn add_images(
    label: &str,
    entry: &Entry,
    form: ImageInput,
    images: &[Image],
    request: &mut Map<String, Value>,
) -> Result<(), CallError> {
    let state = request.remove("state").unwrap_or(Value::Null);
    match form {
        ImageInput::DataUrls => {
            if images.len() > MAX_DATA_URL_IMAGES {
                return Err(CallError::plain(format!(
                    "{label} accepts at most {MAX_DATA_URL_IMAGES} images for {}, got {}",
                    entry.id,
                    images.len()
                )));
            }
            let mut urls = Vec::new();
            for image in images {
                if !matches!(image.mime_type.as_str(), "image/png" | "image/jpeg" | "image/webp") {
                    return Err(CallError::plain(format!(
                        "{label} accepts PNG, JPEG, and WebP images for {}, got {}",
                        entry.id, image.mime_type
                    )));
                }
                urls.push(json!(image.data_url()));
            }
            request.insert("state".into(), state);
            request.insert("images".into(), Value::Array(urls));
        }
        ImageInput::StateImageUrls => {
            let mut parts: Vec<Value> =
                images.iter().map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})).collect();
            parts.push(state);
            request.insert("state".into(), Value::Array(parts));
        }
        ImageInput::Assets => {
            let mut assets = Map::new();
            for (index, image) in images.iter().enumerate() {
                let format = match image.mime_type.as_str() {
                    "image/png" => "png",
                    "image/jpeg" => "jpeg",
                    other => {
                        return Err(CallError::plain(format!(
                            "{label} accepts PNG and JPEG images for {}, got {other}",
                            entry.id
                        )));
                    }
                };
                let data = image.data.clone().unwrap_or(Value::Null);
                assets.insert(
                    format!("<image-{}>", index + 1),
                    json!({"type": "image", "format": format, "data_base64": data}),
                );
            }
            let mut named: Vec<Value> = assets.keys().map(|k| json!(k)).collect();
            named.push(state);
            request.insert("state".into(), Value::Array(named));
            request.insert("assets".into(), Value::Object(assets));
        }
    }
    Ok(())
}

fn probabilities(label: &str, value: Option<&Map<String, Value>>, id: &str) -> Result<Value, CallError> {
    let Some(map) = value else {
        return Err(CallError::plain(format!("{label} returned invalid probabilities for {id}")));
    };
    let mut out = Map::new();
    for (key, p) in map {
        out.insert(key.clone(), required_number(label, Some(p), &format!("probability for {id}.{key}"))?);
    }
    Ok(Value::Object(out))
}

/// The answers in the public shape, one per question of the context.
fn parse_answers(label: &str, output: &SystemOneOutput, context: &ClassifyContext) -> Result<Value, CallError> {
    let Some(answers) = &output.answers else {
        return Err(CallError::plain(format!("{label} returned an unexpected response")));
    };
    let mut out = Map::new();
    for (id, question) in &context.questions {
        let Some(Some(answer)) = answers.get(id) else {
            return Err(CallError::plain(format!("{label} did not return an answer for {id}")));
        };
        let kind = answer.kind.as_deref();
        let confidence = || required_number(label, answer.confidence.as_ref(), &format!("confidence for {id}"));
        let parsed = match question.kind() {
            "choice" => {
                let Some(choice) = answer.choice.as_deref().filter(|_| kind == Some("choice")) else {
                    return Err(CallError::plain(format!("{label} did not return a choice answer for {id}")));
                };
                json!({
                    "type": "choice", "choice": choice,
                    "probabilities": probabilities(label, answer.probabilities.as_ref(), id)?,
                    "confidence": confidence()?,
                })
            }
            "score" => {
                if kind != Some("score") {
                    return Err(CallError::plain(format!("{label} did not return a score answer for {id}")));
                }
                let score = required_number(label, answer.score.as_ref(), &format!("score for {id}"))?;
                json!({"type": "score", "score": score, "confidence": confidence()?})
            }
            _ => {
                if kind != Some("noul") {
                    return Err(CallError::plain(format!("{label} did not return a bool answer for {id}")));
                }
                let p = required_number(label, answer.noul.as_ref(), &format!("probability for {id}"))?;
                json!({"type": "bool", "probability": p})
            }
        };
        out.insert(id.clone(), parsed);
    }
    Ok(Value::Object(out))
}

/// Classify over TypeSafe's or Cloudflare's System One endpoint.
pub async fn classify(call: &TypedCall, context: &Value) -> Value {
    let entry = call.entry();
    let transport = Transport::of(&entry);
    let mut out = call.result_head("answers", json!({}));
    if let Err(error) = run(call, &entry, &transport, &ClassifyContext::read(context), &mut out).await {
        call.fail(&mut out, error.text(Some(&format!("{} error", transport.label))));
    }
    Value::Object(out)
}

async fn run(
    call: &TypedCall,
    entry: &Entry,
    transport: &Transport,
    context: &ClassifyContext,
    out: &mut Map<String, Value>,
) -> Result<(), CallError> {
    let label = transport.label;
    let mut request = wire_request(context);
    let mut own = Vec::new();
    if let Some(key) = &call.api_key {
        own.push(("authorization", format!("Bearer {key}")));
    }
    own.push(("content-type", "application/json".to_string()));
    if !context.images.is_empty() {
        if !entry.input.iter().any(|m| m == "image") {
            return Err(CallError::plain(format!("{label} does not support image input for {}", entry.id)));
        }
        let (detected_form, detected_opt_in) = transport.detected(entry);
        let form = match entry.compat.image_input.as_deref() {
            Some("images") => ImageInput::DataUrls,
            Some("state-image-urls") => ImageInput::StateImageUrls,
            Some("assets") => ImageInput::Assets,
            _ => detected_form,
        };
        add_images(label, entry, form, &context.images, &mut request)?;
        if entry.compat.send_image_opt_in_header.unwrap_or(detected_opt_in) {
            own.insert(0, (IMAGE_OPT_IN.0, IMAGE_OPT_IN.1.to_string()));
        }
    }
    if call.api_key.is_none() {
        return Err(CallError::plain(format!("No API key for provider: {}", entry.provider)));
    }
    let headers = call.request_headers(&own);
    let body = post_json(call, label, &transport.url(entry), &headers, &transport.payload(entry, request), &[]).await?;
    let result = transport.output(body)?;
    // Set before the answers are read: a request with malformed answers was still billed.
    if let Some(usage) = classifier_usage(call, result.usage.as_ref()) {
        out.insert("usage".into(), usage);
    }
    out.insert("answers".into(), parse_answers(label, &result, context)?);
    Ok(())
}
