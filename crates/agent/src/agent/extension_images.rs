//! pi's image helpers `convertToPng` and `resizeImage` for the extension
//! host (`lib` functions), computed by the read tool's own image code
//! (`tools::image`), so an extension's images are prepared as pi-rpc
//! prepares a read image; and an SDK session's prompt and tool-result
//! images prepared as the running session's (`tools::image_blocks`).
//! Bytes travel as base64.

use base64::Engine;
use serde_json::{Value, json};

use crate::message::ContentBlock;
use crate::tools::image::{Limits, convert_to_png, resize};
use crate::tools::image_blocks::{prepare_tool_result_images, prepare_user_images};

fn bytes_of(value: Option<&Value>) -> Result<Vec<u8>, String> {
    let text = value.and_then(Value::as_str).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("image data: {e}"))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `convertToPng(base64, mimeType)`: `{data, mimeType: "image/png"}`, the
/// input itself when it is PNG already, `null` when it cannot be decoded.
pub(crate) fn convert(args: &[Value]) -> Result<Value, String> {
    let mime = args.get(1).and_then(Value::as_str).unwrap_or_default();
    if mime == "image/png" {
        return Ok(json!({"data": args.first().cloned().unwrap_or(Value::Null), "mimeType": mime}));
    }
    let Ok(bytes) = bytes_of(args.first()) else { return Ok(Value::Null) };
    Ok(convert_to_png(&bytes).map_or(Value::Null, |png| json!({"data": b64(&png), "mimeType": "image/png"})))
}

/// `resizeImage(base64, mimeType, options)`: pi's `ResizedImage`, `null`
/// when the image cannot be decoded or fitted.
pub(crate) fn resize_image(args: &[Value]) -> Result<Value, String> {
    let Ok(bytes) = bytes_of(args.first()) else { return Ok(Value::Null) };
    let mime = args.get(1).and_then(Value::as_str).unwrap_or_default();
    let limits = Limits::from_options(args.get(2));
    let format = mime.split('/').nth(1).unwrap_or("png");
    let mime = if mime.is_empty() { format!("image/{format}") } else { mime.to_string() };
    Ok(resize(&bytes, &mime, &limits).map_or(Value::Null, |r| {
        json!({"data": r.data, "mimeType": r.mime_type, "originalWidth": r.original_width,
               "originalHeight": r.original_height, "width": r.width, "height": r.height, "wasResized": r.was_resized})
    }))
}

/// The limits of an SDK session's images: its model's resize options (an
/// object, else pi's defaults), `false` when its `images.autoResize` is off.
fn session_limits(options: Option<&Value>) -> Option<Limits> {
    match options {
        Some(Value::Bool(false)) => None,
        options => Some(Limits::from_options(options.filter(|o| o.is_object()))),
    }
}

/// An SDK session's images prepared as the running session prepares its own
/// (`prepareUserImages(content, options)`: a prompt's or a queued message's;
/// `prepareToolResultImages(content, options)`: a tool result's after the
/// `tool_result` hooks): the prepared content, `null` when nothing changed.
pub(crate) fn prepare(args: &[Value], tool_result: bool) -> Result<Value, String> {
    let content: Vec<ContentBlock> =
        serde_json::from_value(args.first().cloned().unwrap_or(Value::Null)).map_err(|e| format!("content: {e}"))?;
    let limits = session_limits(args.get(1));
    let prepared = if tool_result {
        prepare_tool_result_images(&content, limits.as_ref())
    } else {
        prepare_user_images(&content, limits.as_ref())
    };
    Ok(prepared.map_or(Value::Null, |blocks| json!(blocks)))
}
