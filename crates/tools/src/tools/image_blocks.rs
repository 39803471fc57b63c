//! Images that enter the conversation other than through `read`, prepared
//! as pi 1.6.0 prepares them: a prompt's (and a queued message's) images
//! and the images a tool's result carries, each through
//! [`process_image`] — the read tool's own image code — with the settings'
//! `images.autoResize`.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::image::{Limits, process_image};
use crate::message::{ContentBlock, ImageContent};

/// The bytes of a base64 payload, read leniently as Node's
/// `Buffer.from(data, "base64")` reads it (URL-safe letters, missing
/// padding and stray characters accepted).
fn payload_bytes(data: &str) -> Vec<u8> {
    let mut letters: String = data
        .chars()
        .filter_map(|c| match c {
            '-' => Some('+'),
            '_' => Some('/'),
            c if c.is_ascii_alphanumeric() || c == '+' || c == '/' => Some(c),
            _ => None,
        })
        .collect();
    if letters.len() % 4 == 1 {
        letters.pop();
    }
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    GeneralPurpose::new(&base64::alphabet::STANDARD, config).decode(letters).unwrap_or_default()
}

/// One image as pi's `processImage` prepares it: the image to send and its
/// notes, or pi's text for one that cannot be sent.
fn prepared(image: &ImageContent, resize: Option<&Limits>) -> Result<(ImageContent, Vec<String>), String> {
    let processed = process_image(&payload_bytes(&image.data), &image.mime_type, resize)?;
    Ok((ImageContent { data: processed.data, mime_type: processed.mime_type }, processed.hints))
}

/// A user message's images as pi prepares a prompt's (`_normalizePromptImages`)
/// and a queued message's at its delivery: each image prepared, one that
/// cannot be sent left out, their notes added to the first text after a
/// blank line; the content becomes the text, its other blocks, then the
/// images. `None` when the content has no image or does not start with a
/// text (pi leaves such a message as it is).
pub fn prepare_user_images(content: &[ContentBlock], resize: Option<&Limits>) -> Option<Vec<ContentBlock>> {
    let (ContentBlock::Text(first), rest) = content.split_first()? else { return None };
    if !rest.iter().any(|block| matches!(block, ContentBlock::Image(_))) {
        return None;
    }
    let mut images = Vec::new();
    let mut others = Vec::new();
    let mut hints = Vec::new();
    for block in rest {
        let ContentBlock::Image(image) = block else {
            others.push(block.clone());
            continue;
        };
        match prepared(image, resize) {
            Ok((image, notes)) => {
                images.push(ContentBlock::Image(image));
                hints.extend(notes);
            }
            Err(omitted) => hints.push(omitted),
        }
    }
    let mut text = first.clone();
    if !hints.is_empty() {
        text.text = format!("{}\n\n{}", first.text, hints.join("\n")).into();
    }
    let mut blocks = vec![ContentBlock::Text(text)];
    blocks.extend(others);
    blocks.extend(images);
    Some(blocks)
}

/// A tool result's images as pi prepares them after the `tool_result`
/// hooks (`normalizeToolResultImages`): each image prepared, its notes in a
/// text block after it; one that cannot be prepared kept as the tool gave
/// it. `None` when nothing changed.
pub fn prepare_tool_result_images(content: &[ContentBlock], resize: Option<&Limits>) -> Option<Vec<ContentBlock>> {
    if !content.iter().any(|block| matches!(block, ContentBlock::Image(_))) {
        return None;
    }
    let mut blocks = Vec::with_capacity(content.len());
    let mut changed = false;
    for block in content {
        let ContentBlock::Image(image) = block else {
            blocks.push(block.clone());
            continue;
        };
        match prepared(image, resize) {
            Ok((ready, hints)) if ready != *image || !hints.is_empty() => {
                blocks.push(ContentBlock::Image(ready));
                if !hints.is_empty() {
                    blocks.push(ContentBlock::text(hints.join("\n")));
                }
                changed = true;
            }
            _ => blocks.push(block.clone()),
        }
    }
    changed.then_some(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> String {
        let img = image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(w, h, image::Rgb([200, 10, 10])));
        let mut out = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    fn image(data: &str, mime: &str) -> ContentBlock {
        ContentBlock::Image(ImageContent { data: data.to_string(), mime_type: mime.to_string() })
    }

    fn text_of(block: &ContentBlock) -> String {
        match block {
            ContentBlock::Text(t) => t.text.to_string(),
            other => panic!("not a text: {other:?}"),
        }
    }

    #[test]
    fn a_prompts_large_image_is_resized_and_noted_and_a_broken_one_left_out() {
        let content = [ContentBlock::text("look"), image(&png(2400, 10), "image/png"), image("AAAA", "image/png")];
        let out = prepare_user_images(&content, Some(&Limits::default())).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(
            text_of(&out[0]),
            "look\n\n[Image: original 2400x10, displayed at 2000x8. Multiply coordinates by 1.20 to map to original \
             image.]\n[Image omitted: could not be resized below the inline image size limit.]"
        );
        assert!(matches!(&out[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
    }

    #[test]
    fn without_resizing_a_prompts_images_stay_and_a_jpg_type_is_named_jpeg() {
        let data = png(2400, 10);
        let content = [ContentBlock::text("look"), image(&data, "image/jpg")];
        let out = prepare_user_images(&content, None).unwrap();
        assert_eq!(out, [ContentBlock::text("look"), image(&data, "image/jpeg")]);
        assert_eq!(prepare_user_images(&[ContentBlock::text("no image")], None), None);
    }

    #[test]
    fn a_tool_results_images_change_only_when_prepared_differently() {
        let small = png(4, 4);
        assert_eq!(prepare_tool_result_images(&[image(&small, "image/png")], Some(&Limits::default())), None);
        assert_eq!(prepare_tool_result_images(&[image("AAAA", "image/png")], Some(&Limits::default())), None);
        let out = prepare_tool_result_images(&[image(&png(10, 2100), "image/png")], Some(&Limits::default())).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(
            text_of(&out[1]),
            "[Image: original 10x2100, displayed at 10x2000. Multiply coordinates by 1.00 to map to original image.]"
        );
    }
}
