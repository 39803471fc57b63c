//! Amazon Bedrock `ConverseStream` (`POST /model/{id}/converse-stream`) of
//! the fake server: a scripted [`StreamReply`] as AWS event-stream messages
//! (`messageStart`, `contentBlockDelta`/`Start`/`Stop`, `messageStop`,
//! `metadata`), and the SigV4 check of the requests ([`verify_sigv4`]).
//!
//! Reasoning parts become `reasoningContent` deltas (with a signature
//! before the block stops), text parts `text` deltas, tool calls a
//! `contentBlockStart` with `toolUse` then `toolUse.input` deltas. The reply's
//! finish reason maps to Bedrock's (`end_turn`, `tool_use`, `max_tokens`);
//! `RawData` goes out as one `contentBlockDelta` payload, `RawBytes` verbatim.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use serde_json::{Value, json};

use super::RecordedRequest;
use super::openai::Frame;
use super::reply::{Ending, FakeUsage, Part, StreamReply};
pub use super::request_info::RequestInfo;

/// The response content type of a `ConverseStream` answer.
pub const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// Where a Converse request carries its prompt ([`RequestInfo::of`]).
pub const PROMPT: &[&str] = &["messages"];

/// One event-stream message of type `event`.
pub fn event(event_type: &str, payload: &Value) -> Vec<u8> {
    message(
        vec![
            (":event-type", event_type.to_string()),
            (":content-type", "application/json".to_string()),
            (":message-type", "event".to_string()),
        ],
        payload.to_string().into_bytes(),
    )
}

/// One event-stream `exception` message (e.g. `ThrottlingException`).
pub fn exception(exception_type: &str, message_text: &str) -> Vec<u8> {
    message(
        vec![
            (":exception-type", exception_type.to_string()),
            (":content-type", "application/json".to_string()),
            (":message-type", "exception".to_string()),
        ],
        json!({"message": message_text}).to_string().into_bytes(),
    )
}

fn message(headers: Vec<(&str, String)>, payload: Vec<u8>) -> Vec<u8> {
    let headers = headers.into_iter().map(|(k, v)| Header::new(k.to_string(), HeaderValue::String(v.into())));
    let mut out = Vec::new();
    // Writing into a Vec cannot fail short of a message over the format's limits.
    let _ = write_message_to(&Message::new_from_parts(headers.collect(), payload), &mut out);
    out
}

fn stop_reason(reason: &str) -> &str {
    match reason {
        "stop" => "end_turn",
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        other => other,
    }
}

/// All frames of a streamed reply, in order (up to the cut for
/// [`Ending::Cut`] and [`Ending::Hang`]; no `messageStop` with
/// [`Ending::NoFinishReason`]).
pub fn render(reply: &StreamReply, info: &RequestInfo) -> Vec<Frame> {
    let limit = match reply.ending {
        Ending::Cut | Ending::Hang => reply.cut_after.unwrap_or(reply.parts.len()),
        _ => reply.parts.len(),
    };
    let mut frames = vec![Frame { bytes: event("messageStart", &json!({"role": "assistant"})), is_part: false }];
    // The open block: (kind, Bedrock index); a new kind closes it.
    let mut open: Option<(&str, usize)> = None;
    let mut next_index = 0usize;
    let mut tool_index: Option<usize> = None;
    let close = |open: &mut Option<(&str, usize)>, frames: &mut Vec<Frame>| {
        if let Some((kind, index)) = open.take() {
            if kind == "reasoning" {
                let signature = json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": format!("sig-{index}")}}});
                frames.push(Frame { bytes: event("contentBlockDelta", &signature), is_part: false });
            }
            frames
                .push(Frame { bytes: event("contentBlockStop", &json!({"contentBlockIndex": index})), is_part: false });
        }
    };
    for part in reply.parts.iter().take(limit) {
        let (kind, bytes) = match part {
            Part::RawBytes(b) => {
                frames.push(Frame { bytes: b.clone(), is_part: true });
                continue;
            }
            Part::RawData(d) => {
                let payload: Value = serde_json::from_str(d).unwrap_or_else(|_| json!(d));
                frames.push(Frame { bytes: event("contentBlockDelta", &payload), is_part: true });
                continue;
            }
            Part::Reasoning { text, .. } => ("reasoning", Some(json!({"reasoningContent": {"text": text}}))),
            Part::Text(t) => ("text", Some(json!({"text": t}))),
            Part::ToolCallStart { id, name, .. } => {
                close(&mut open, &mut frames);
                let index = next_index;
                next_index += 1;
                tool_index = Some(index);
                open = Some(("tool", index));
                let start = json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}});
                frames.push(Frame { bytes: event("contentBlockStart", &start), is_part: true });
                continue;
            }
            Part::ToolCallArgs { fragment, .. } => ("tool", Some(json!({"toolUse": {"input": fragment}}))),
        };
        let index = match open {
            Some((k, index)) if k == kind => index,
            _ if kind == "tool" => tool_index.unwrap_or(next_index),
            _ => {
                close(&mut open, &mut frames);
                let index = next_index;
                next_index += 1;
                open = Some((kind, index));
                index
            }
        };
        if let Some(delta) = bytes {
            let payload = json!({"contentBlockIndex": index, "delta": delta});
            frames.push(Frame { bytes: event("contentBlockDelta", &payload), is_part: true });
        }
    }
    if matches!(reply.ending, Ending::Cut | Ending::Hang) {
        return frames;
    }
    close(&mut open, &mut frames);
    let has_tools = reply.parts.iter().any(|p| matches!(p, Part::ToolCallStart { .. }));
    let reason = reply.finish_reason.clone().unwrap_or_else(|| if has_tools { "tool_calls" } else { "stop" }.into());
    if reply.ending != Ending::NoFinishReason {
        let stop = json!({"stopReason": stop_reason(&reason)});
        frames.push(Frame { bytes: event("messageStop", &stop), is_part: false });
    }
    let u = reply.usage.unwrap_or(FakeUsage {
        prompt_tokens: info.prompt_estimate,
        completion_tokens: super::openai::output_chars(reply).div_ceil(4),
        cached_tokens: 0,
        reasoning_tokens: 0,
    });
    let input = u.prompt_tokens.saturating_sub(u.cached_tokens);
    let metadata = json!({
        "usage": {"inputTokens": input, "outputTokens": u.completion_tokens,
            "totalTokens": u.prompt_tokens + u.completion_tokens, "cacheReadInputTokens": u.cached_tokens},
        "metrics": {"latencyMs": 1}
    });
    frames.push(Frame { bytes: event("metadata", &metadata), is_part: false });
    frames
}

/// The parts of a SigV4 `Authorization` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigV4Authorization {
    pub access_key_id: String,
    pub date: String,
    pub region: String,
    pub service: String,
    pub signed_headers: Vec<String>,
    pub signature: String,
}

/// Parse `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`.
pub fn parse_authorization(value: &str) -> Result<SigV4Authorization, String> {
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ").ok_or("not an AWS4-HMAC-SHA256 authorization")?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (key, value) = part.trim().split_once('=').ok_or("malformed authorization")?;
        match key {
            "Credential" => credential = Some(value),
            "SignedHeaders" => signed = Some(value),
            "Signature" => signature = Some(value),
            _ => return Err(format!("unknown authorization field {key}")),
        }
    }
    let scope: Vec<&str> = credential.ok_or("no Credential")?.split('/').collect();
    let [access_key_id, date, region, service, "aws4_request"] = scope.as_slice() else {
        return Err("malformed credential scope".into());
    };
    Ok(SigV4Authorization {
        access_key_id: access_key_id.to_string(),
        date: date.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        signed_headers: signed.ok_or("no SignedHeaders")?.split(';').map(str::to_string).collect(),
        signature: signature.ok_or("no Signature")?.to_string(),
    })
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn parse_amz_date(value: &str) -> Option<SystemTime> {
    let digits = |r: std::ops::Range<usize>| value.get(r)?.parse::<i64>().ok();
    if value.len() != 16 || value.as_bytes()[8] != b'T' || !value.ends_with('Z') {
        return None;
    }
    let (y, m, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (hh, mm, ss) = (digits(9..11)?, digits(11..13)?, digits(13..15)?);
    // Days from the civil date (proleptic Gregorian), Howard Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Check a request's SigV4 signature with the secret of its access key:
/// the canonical request is rebuilt from the headers it lists as signed (the
/// path as received, the body as received) and signed again with
/// `aws-sigv4`; the signatures must be equal and the date within 15 minutes.
pub fn verify_sigv4(request: &RecordedRequest, access_key_id: &str, secret: &str) -> Result<(), String> {
    check_sigv4(request, access_key_id, secret, Some(Duration::from_secs(15 * 60)))
}

/// [`verify_sigv4`] with a chosen clock-skew limit (`None`: any date, for
/// the AWS test-suite vectors).
pub fn check_sigv4(
    request: &RecordedRequest,
    access_key_id: &str,
    secret: &str,
    max_skew: Option<Duration>,
) -> Result<(), String> {
    use aws_sigv4::http_request::{PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign};
    let auth = parse_authorization(request.header("authorization").ok_or("no authorization header")?)?;
    if auth.access_key_id != access_key_id {
        return Err(format!("unknown access key {}", auth.access_key_id));
    }
    let amz_date = request.header("x-amz-date").ok_or("no x-amz-date")?;
    if !amz_date.starts_with(&auth.date) {
        return Err("the credential date is not the request date".into());
    }
    let time = parse_amz_date(amz_date).ok_or("malformed x-amz-date")?;
    let skew = SystemTime::now().duration_since(time).or_else(|e| Ok::<_, ()>(e.duration())).unwrap_or_default();
    if max_skew.is_some_and(|max| skew > max) {
        return Err("the request time is more than 15 minutes off".into());
    }
    let signed = |name: &str| auth.signed_headers.iter().any(|h| h == name);
    let session_token = request.header("x-amz-security-token").filter(|_| signed("x-amz-security-token"));
    let mut headers: Vec<(String, String)> = Vec::new();
    for name in &auth.signed_headers {
        if matches!(name.as_str(), "x-amz-date" | "x-amz-security-token" | "x-amz-content-sha256") {
            continue;
        }
        let values: Vec<&str> = request.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect();
        if values.is_empty() {
            return Err(format!("signed header {name} is missing"));
        }
        headers.push((name.clone(), values.join(",")));
    }
    let identity = aws_credential_types::Credentials::new(
        access_key_id,
        secret,
        session_token.map(str::to_string),
        None,
        "fake-server",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.excluded_headers = None;
    if signed("x-amz-content-sha256") {
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(&auth.region)
        .name(&auth.service)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let host = request.header("host").ok_or("no host header")?;
    let uri = format!("http://{host}{}", request.path);
    let signable = SignableRequest::new(
        &request.method,
        uri,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(&request.raw_body),
    )
    .map_err(|e| e.to_string())?;
    let (instructions, signature) = sign(signable, &params).map_err(|e| e.to_string())?.into_parts();
    if let Some(sent) = request.header("x-amz-content-sha256")
        && let Some((_, expected)) = instructions.headers().find(|(k, _)| *k == "x-amz-content-sha256")
        && sent != expected
    {
        return Err("x-amz-content-sha256 does not match the body".into());
    }
    if signature != auth.signature {
        return Err("The request signature we calculated does not match the signature you provided.".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
