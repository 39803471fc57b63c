//! Images for the `read` tool: recognising a supported image by its first
//! bytes, and preparing it as pi does — BMP converted to PNG, images over
//! 2000x2000 or over 4.5MB of base64 resized (PNG or JPEG, whichever is
//! smaller), with the hint texts pi adds for the model.

use std::io::Cursor;

use base64::Engine;
use image::{DynamicImage, ImageDecoder, ImageReader, imageops::FilterType};

const PNG_SIGNATURE: [u8; 8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/// Largest base64 payload sent inline (headroom below Anthropic's 5MB).
const MAX_INLINE_BYTES: usize = 4_718_592;
const MAX_DIMENSION: u32 = 2000;
const JPEG_QUALITIES: [u8; 5] = [80, 85, 70, 55, 40];

fn u16_le(b: &[u8], at: usize) -> u32 {
    b.get(at).copied().unwrap_or(0) as u32 | (b.get(at + 1).copied().unwrap_or(0) as u32) << 8
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u16_le(b, at) | u16_le(b, at + 2) << 16
}

fn u32_be(b: &[u8], at: usize) -> u32 {
    (0..4).fold(0u32, |acc, i| acc << 8 | b.get(at + i).copied().unwrap_or(0) as u32)
}

fn ascii_at(b: &[u8], at: usize, text: &str) -> bool {
    b.get(at..at + text.len()) == Some(text.as_bytes())
}

fn is_png(b: &[u8]) -> bool {
    b.len() >= 16 && u32_be(b, 8) == 13 && ascii_at(b, 12, "IHDR")
}

fn is_animated_png(b: &[u8]) -> bool {
    let mut offset = PNG_SIGNATURE.len();
    while offset + 8 <= b.len() {
        if ascii_at(b, offset + 4, "acTL") {
            return true;
        }
        if ascii_at(b, offset + 4, "IDAT") {
            return false;
        }
        let next = offset + 12 + u32_be(b, offset) as usize;
        if next <= offset || next > b.len() {
            return false;
        }
        offset = next;
    }
    false
}

fn is_bmp(b: &[u8]) -> bool {
    if b.len() < 26 {
        return false;
    }
    let declared_size = u32_le(b, 2);
    let pixel_offset = u32_le(b, 10);
    let dib_size = u32_le(b, 14);
    if declared_size != 0 && declared_size < 26 {
        return false;
    }
    if (pixel_offset as u64) < 14 + dib_size as u64 || (declared_size != 0 && pixel_offset >= declared_size) {
        return false;
    }
    let (planes, bits) = if dib_size == 12 {
        (u16_le(b, 22), u16_le(b, 24))
    } else if (40..=124).contains(&dib_size) && b.len() >= 30 {
        (u16_le(b, 26), u16_le(b, 28))
    } else {
        return false;
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bits)
}

/// The MIME type of a supported image from its first bytes (pi reads 4100):
/// JPEG (not JPEG-LS), non-animated PNG, GIF, WebP, BMP.
pub fn detect_image_mime(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(&[0xff, 0xd8, 0xff]) {
        return (b.get(3) != Some(&0xf7)).then_some("image/jpeg");
    }
    if b.starts_with(&PNG_SIGNATURE) {
        return (is_png(b) && !is_animated_png(b)).then_some("image/png");
    }
    if ascii_at(b, 0, "GIF87a") || ascii_at(b, 0, "GIF89a") {
        return Some("image/gif");
    }
    if ascii_at(b, 0, "RIFF") && ascii_at(b, 8, "WEBP") {
        return Some("image/webp");
    }
    if ascii_at(b, 0, "BM") && is_bmp(b) {
        return Some("image/bmp");
    }
    None
}

/// An image ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessedImage {
    /// Base64 of the image bytes.
    pub data: String,
    pub mime_type: String,
    /// Notes for the model (conversion, resizing).
    pub hints: Vec<String>,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decode with the EXIF orientation applied.
fn decode(bytes: &[u8]) -> Option<DynamicImage> {
    let reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format().ok()?;
    let mut decoder = reader.into_decoder().ok()?;
    let orientation = decoder.orientation().ok();
    let mut img = DynamicImage::from_decoder(decoder).ok()?;
    if let Some(o) = orientation {
        img.apply_orientation(o);
    }
    Some(img)
}

fn encode_png(img: &DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    DynamicImage::ImageRgba8(img.to_rgba8()).write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png).ok()?;
    Some(out)
}

fn encode_jpeg(img: &DynamicImage, quality: u8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
    DynamicImage::ImageRgb8(img.to_rgb8()).write_with_encoder(encoder).ok()?;
    Some(out)
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// `x.toFixed(2)` for a positive ratio.
fn to_fixed_2(x: f64) -> String {
    let n = (x * 100.0).round() as u64;
    format!("{}.{:02}", n / 100, n % 100)
}

/// The limits an image is resized into (pi's `ImageResizeOptions`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub max_width: u32,
    pub max_height: u32,
    /// Largest base64 payload.
    pub max_bytes: usize,
    /// The first JPEG quality tried.
    pub jpeg_quality: u8,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_width: MAX_DIMENSION,
            max_height: MAX_DIMENSION,
            max_bytes: MAX_INLINE_BYTES,
            jpeg_quality: JPEG_QUALITIES[0],
        }
    }
}

impl Limits {
    /// pi's `ImageResizeOptions` object (`maxWidth`, `maxHeight`,
    /// `maxBytes`, `jpegQuality`) over the defaults: a field left out, or
    /// not a positive number, keeps its default.
    pub fn from_options(options: Option<&serde_json::Value>) -> Limits {
        let number = |key: &str| {
            options.and_then(|o| o.get(key)).and_then(serde_json::Value::as_f64).filter(|n| n.is_finite() && *n > 0.0)
        };
        let defaults = Limits::default();
        Limits {
            max_width: number("maxWidth").map_or(defaults.max_width, |n| n as u32),
            max_height: number("maxHeight").map_or(defaults.max_height, |n| n as u32),
            max_bytes: number("maxBytes").map_or(defaults.max_bytes, |n| n as usize),
            jpeg_quality: number("jpegQuality").map_or(defaults.jpeg_quality, |n| n.min(100.0) as u8),
        }
    }

    /// The limits a model's images are fitted into, as pi reads them: its
    /// own `inputLimits.images.resize` over pi's defaults.
    pub fn of_model(model: &pi_types::model::Model) -> Limits {
        let resize = model.extra.get("inputLimits").and_then(|l| l.get("images")).and_then(|i| i.get("resize"));
        Limits::from_options(resize)
    }
}

/// An image fitted into [`Limits`] (pi's `ResizedImage`).
#[derive(Debug, Clone, PartialEq)]
pub struct Resized {
    /// Base64 of the image bytes.
    pub data: String,
    pub mime_type: String,
    pub original_width: u32,
    pub original_height: u32,
    pub width: u32,
    pub height: u32,
    pub was_resized: bool,
}

impl Resized {
    /// pi's `formatDimensionNote`: the note for the model when resized.
    pub fn dimension_note(&self) -> Option<String> {
        if !self.was_resized {
            return None;
        }
        let (ow, oh, w, h) = (self.original_width, self.original_height, self.width, self.height);
        let scale = ow as f64 / w as f64;
        Some(format!(
            "[Image: original {ow}x{oh}, displayed at {w}x{h}. Multiply coordinates by {} to map to original image.]",
            to_fixed_2(scale)
        ))
    }
}

/// Any decodable image as PNG (EXIF orientation applied); `None` when it cannot be decoded.
pub fn convert_to_png(bytes: &[u8]) -> Option<Vec<u8>> {
    decode(bytes).and_then(|img| encode_png(&img))
}

/// Resize to fit `limits` (pi's strategy): scale into the largest
/// dimensions, then the smaller of PNG and JPEG at the first quality, then
/// lower JPEG qualities, then 75% steps. `None` when it cannot be decoded or
/// fitted.
pub fn resize(bytes: &[u8], mime: &str, limits: &Limits) -> Option<Resized> {
    let img = decode(bytes)?;
    let (ow, oh) = (img.width(), img.height());
    let fitted = |data: String, mime_type: &str, width: u32, height: u32, was_resized: bool| Resized {
        data,
        mime_type: mime_type.to_string(),
        original_width: ow,
        original_height: oh,
        width,
        height,
        was_resized,
    };
    if ow <= limits.max_width && oh <= limits.max_height && base64_len(bytes.len()) < limits.max_bytes {
        return Some(fitted(b64(bytes), mime, ow, oh, false));
    }
    let (mut w, mut h) = (ow, oh);
    if w > limits.max_width {
        h = ((h as f64 * limits.max_width as f64) / w as f64).round() as u32;
        w = limits.max_width;
    }
    if h > limits.max_height {
        w = ((w as f64 * limits.max_height as f64) / h as f64).round() as u32;
        h = limits.max_height;
    }
    let mut qualities = vec![limits.jpeg_quality];
    for q in JPEG_QUALITIES[1..].iter() {
        if !qualities.contains(q) {
            qualities.push(*q);
        }
    }
    let (mut w, mut h) = (w.max(1), h.max(1));
    loop {
        let resized = img.resize_exact(w, h, FilterType::Lanczos3);
        let png = encode_png(&resized)?;
        let jpeg = encode_jpeg(&resized, qualities[0])?;
        let (first, second) = if base64_len(jpeg.len()) < base64_len(png.len()) {
            ((jpeg, "image/jpeg"), (png, "image/png"))
        } else {
            ((png, "image/png"), (jpeg, "image/jpeg"))
        };
        for (data, kind) in [first, second] {
            if base64_len(data.len()) < limits.max_bytes {
                return Some(fitted(b64(&data), kind, w, h, true));
            }
        }
        for q in &qualities[1..] {
            let data = encode_jpeg(&resized, *q)?;
            if base64_len(data.len()) < limits.max_bytes {
                return Some(fitted(b64(&data), "image/jpeg", w, h, true));
            }
        }
        if w == 1 && h == 1 {
            return None;
        }
        let nw = if w == 1 { 1 } else { ((w as f64 * 0.75).floor() as u32).max(1) };
        let nh = if h == 1 { 1 } else { ((h as f64 * 0.75).floor() as u32).max(1) };
        if nw == w && nh == h {
            return None;
        }
        (w, h) = (nw, nh);
    }
}

/// The lower-case base of a MIME type (parameters left out).
fn base_mime(mime: &str) -> String {
    mime.split(';').next().unwrap_or(mime).trim().to_ascii_lowercase()
}

/// pi's inline image types: the one a MIME type names (`image/jpg` is
/// JPEG), `None` for a type sent converted to PNG.
fn inline_mime(mime: &str) -> Option<&'static str> {
    match base_mime(mime).as_str() {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    }
}

/// Prepare an image's bytes for the model as pi's `processImage` does: an
/// inline type (PNG, JPEG, GIF, WebP) kept, any other converted to PNG,
/// then fitted into `resize` (pi's `autoResizeImages`; `None`: sent as it
/// is). The error is pi's text for an image that cannot be sent.
pub fn process_image(bytes: &[u8], mime: &str, resize: Option<&Limits>) -> Result<ProcessedImage, String> {
    let (bytes, mime, converted_from) = match inline_mime(mime) {
        Some(kind) => (bytes.to_vec(), kind, None),
        None => {
            let png = convert_to_png(bytes)
                .ok_or("[Image omitted: could not be converted to a supported inline image format.]")?;
            (png, "image/png", Some(base_mime(mime)))
        }
    };
    let (data, mime_type, note) = match resize {
        Some(limits) => {
            let resized = self::resize(&bytes, mime, limits)
                .ok_or("[Image omitted: could not be resized below the inline image size limit.]")?;
            let note = resized.dimension_note();
            (resized.data, resized.mime_type, note)
        }
        None => (b64(&bytes), mime.to_string(), None),
    };
    let mut hints = Vec::new();
    if let Some(from) = converted_from.filter(|from| *from != mime_type) {
        hints.push(format!("[Image converted from {from} to {mime_type}.]"));
    }
    hints.extend(note);
    Ok(ProcessedImage { data, mime_type, hints })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_resize_limits_go_over_pis_defaults_field_by_field() {
        let mut model: pi_types::model::Model = serde_json::from_value(serde_json::json!({
            "id": "m", "name": "m", "api": "openai-completions", "provider": "p", "baseUrl": "http://x",
            "reasoning": false, "input": ["text", "image"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 1, "maxTokens": 1}))
        .unwrap();
        assert_eq!(Limits::of_model(&model), Limits::default());
        let limits = serde_json::json!({"images": {"resize": {"maxWidth": 640, "maxBytes": 1000, "jpegQuality": -1}}});
        model.extra.insert("inputLimits".into(), limits);
        assert_eq!(Limits::of_model(&model), Limits { max_width: 640, max_bytes: 1000, ..Limits::default() });
    }

    pub(crate) fn png_bytes(w: u32, h: u32) -> Vec<u8> {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 256) as u8])
        }));
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
        out
    }

    fn encoded(w: u32, h: u32, format: image::ImageFormat) -> Vec<u8> {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(w, h, image::Rgb([10, 20, 30])));
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), format).unwrap();
        out
    }

    #[test]
    fn recognises_supported_formats_by_content() {
        assert_eq!(detect_image_mime(&png_bytes(2, 2)), Some("image/png"));
        assert_eq!(detect_image_mime(&encoded(2, 2, image::ImageFormat::Jpeg)), Some("image/jpeg"));
        assert_eq!(detect_image_mime(&encoded(2, 2, image::ImageFormat::Gif)), Some("image/gif"));
        assert_eq!(detect_image_mime(&encoded(2, 2, image::ImageFormat::WebP)), Some("image/webp"));
        assert_eq!(detect_image_mime(&encoded(2, 2, image::ImageFormat::Bmp)), Some("image/bmp"));
        assert_eq!(detect_image_mime(b"BM not really a bitmap header"), None);
        assert_eq!(detect_image_mime(b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(detect_image_mime(&[0xff, 0xd8, 0xff, 0xf7]), None);
        assert_eq!(detect_image_mime(b"hello world"), None);
    }

    #[test]
    fn animated_png_is_not_an_image() {
        let mut apng = png_bytes(2, 2);
        // Insert an acTL chunk right after IHDR (8 + 25 bytes).
        let actl = [0, 0, 0, 8, b'a', b'c', b'T', b'L', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        apng.splice(33..33, actl);
        assert_eq!(detect_image_mime(&apng), None);
    }

    #[test]
    fn small_images_pass_through_unchanged() {
        let png = png_bytes(10, 10);
        let out = process_image(&png, "image/png", Some(&Limits::default())).unwrap();
        assert_eq!(out.mime_type, "image/png");
        assert_eq!(out.data, b64(&png));
        assert!(out.hints.is_empty());
    }

    #[test]
    fn bmp_is_converted_to_png_with_a_hint() {
        let bmp = encoded(4, 3, image::ImageFormat::Bmp);
        let out = process_image(&bmp, "image/bmp", Some(&Limits::default())).unwrap();
        assert_eq!(out.mime_type, "image/png");
        assert_eq!(out.hints, ["[Image converted from image/bmp to image/png.]"]);
        let bytes = base64::engine::general_purpose::STANDARD.decode(&out.data).unwrap();
        assert_eq!(detect_image_mime(&bytes), Some("image/png"));
    }

    #[test]
    fn without_auto_resize_an_image_is_sent_as_it_is_and_a_bmp_still_converted() {
        let png = png_bytes(2400, 600);
        let out = process_image(&png, "image/png", None).unwrap();
        assert_eq!((out.mime_type.as_str(), out.hints.len()), ("image/png", 0));
        assert_eq!(out.data, b64(&png));
        let bmp = encoded(4, 3, image::ImageFormat::Bmp);
        let out = process_image(&bmp, "image/bmp", None).unwrap();
        assert_eq!(out.hints, ["[Image converted from image/bmp to image/png.]"]);
    }

    #[test]
    fn large_images_are_resized_with_a_dimension_note() {
        let png = png_bytes(2400, 600);
        let out = process_image(&png, "image/png", Some(&Limits::default())).unwrap();
        assert_eq!(
            out.hints,
            [
                "[Image: original 2400x600, displayed at 2000x500. Multiply coordinates by 1.20 to map to original image.]"
            ]
        );
        let bytes = base64::engine::general_purpose::STANDARD.decode(&out.data).unwrap();
        let img = decode(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), (2000, 500));
    }

    #[test]
    fn undecodable_images_are_omitted_with_pi_text() {
        let mut broken = png_bytes(2, 2);
        broken.truncate(40);
        assert_eq!(
            process_image(&broken, "image/png", Some(&Limits::default())),
            Err("[Image omitted: could not be resized below the inline image size limit.]".to_string())
        );
        assert_eq!(
            process_image(b"BMxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "image/bmp", Some(&Limits::default())),
            Err("[Image omitted: could not be converted to a supported inline image format.]".to_string())
        );
    }
}
