//! pi's image helpers `convertToPng` and `resizeImage` for the extension
//! host (`lib` functions), computed by the read tool's own image code
//! (`tools::image`), so an extension's images are prepared as pi-rpc
//! prepares a read image. Bytes travel as base64.

use base64::Engine;
use serde_json::{Value, json};

use crate::tools::image::{Limits, convert_to_png, resize};

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
    let options = args.get(2).cloned().unwrap_or(Value::Null);
    let number = |key: &str| options.get(key).and_then(Value::as_f64).filter(|n| n.is_finite() && *n > 0.0);
    let defaults = Limits::default();
    let limits = Limits {
        max_width: number("maxWidth").map_or(defaults.max_width, |n| n as u32),
        max_height: number("maxHeight").map_or(defaults.max_height, |n| n as u32),
        max_bytes: number("maxBytes").map_or(defaults.max_bytes, |n| n as usize),
        jpeg_quality: number("jpegQuality").map_or(defaults.jpeg_quality, |n| n.min(100.0) as u8),
    };
    let format = mime.split('/').nth(1).unwrap_or("png");
    let mime = if mime.is_empty() { format!("image/{format}") } else { mime.to_string() };
    Ok(resize(&bytes, &mime, &limits).map_or(Value::Null, |r| {
        json!({"data": r.data, "mimeType": r.mime_type, "originalWidth": r.original_width,
               "originalHeight": r.original_height, "width": r.width, "height": r.height, "wasResized": r.was_resized})
    }))
}
