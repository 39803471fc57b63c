//! Tests of the `read` tool (expected texts recorded from pi 1.6.0).

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::message::join_text;

async fn read(dir: &Path, args: Value) -> ToolOutput {
    ReadTool::new().execute(args, ToolContext::new(dir.to_path_buf())).await
}

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("a.txt"), "hello\nworld\n").unwrap();
    let big: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    std::fs::write(p.join("big.txt"), big).unwrap();
    std::fs::write(p.join("wide.txt"), vec!["x".repeat(99); 600].join("\n")).unwrap();
    std::fs::write(p.join("longline.txt"), format!("{}\nshort\n", "y".repeat(60000))).unwrap();
    std::fs::write(p.join("empty.txt"), "").unwrap();
    std::fs::write(p.join("nonl.txt"), "a\nb").unwrap();
    std::fs::create_dir(p.join("d")).unwrap();
    dir
}

fn truncation_summary(out: &ToolOutput) -> Value {
    let mut t = out.details.as_ref().map(|d| d["truncation"].clone()).unwrap_or(Value::Null);
    if let Some(obj) = t.as_object_mut() {
        obj.shift_remove("content");
    }
    t
}

#[tokio::test]
async fn small_files_are_returned_as_is() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "a.txt"})).await;
    assert!(!out.is_error);
    assert_eq!(join_text(&out.content), "hello\nworld\n");
    assert_eq!(out.details, None);
    assert_eq!(out.structured_content, Some(json!("hello\nworld\n")));
    let abs = dir.path().join("a.txt");
    let out = read(Path::new("/"), json!({"path": abs.to_string_lossy()})).await;
    assert_eq!(join_text(&out.content), "hello\nworld\n");
}

#[tokio::test]
async fn line_limit_truncation_has_pi_notice_and_details() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "big.txt"})).await;
    let text = join_text(&out.content);
    assert!(text.starts_with("line 1\nline 2\n"));
    assert!(text.ends_with("line 2000\n\n[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]"));
    assert_eq!(
        truncation_summary(&out),
        json!({"truncated": true, "truncatedBy": "lines", "totalLines": 2500, "totalBytes": 23893,
               "outputLines": 2000, "outputBytes": 18892, "lastLinePartial": false,
               "firstLineExceedsLimit": false, "maxLines": 2000, "maxBytes": 51200})
    );
}

#[tokio::test]
async fn continuing_with_offset_reaches_the_end() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "big.txt", "offset": 2001})).await;
    let text = join_text(&out.content);
    assert!(text.starts_with("line 2001\n"));
    assert!(text.ends_with("line 2500\n"));
    assert_eq!(text.len(), 5000);
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn offset_and_limit_select_lines_with_a_more_lines_notice() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "big.txt", "offset": 2400, "limit": 50})).await;
    let text = join_text(&out.content);
    assert!(text.starts_with("line 2400\n"));
    assert!(text.ends_with("line 2449\n\n[52 more lines in file. Use offset=2450 to continue.]"));
    let out = read(dir.path(), json!({"path": "a.txt", "limit": 1})).await;
    assert_eq!(join_text(&out.content), "hello\n\n[2 more lines in file. Use offset=2 to continue.]");
    let out = read(dir.path(), json!({"path": "a.txt", "limit": 2})).await;
    assert_eq!(join_text(&out.content), "hello\nworld\n\n[1 more lines in file. Use offset=3 to continue.]");
    let out = read(dir.path(), json!({"path": "a.txt", "offset": 2, "limit": 0})).await;
    assert_eq!(join_text(&out.content), "\n\n[2 more lines in file. Use offset=2 to continue.]");
    let out = read(dir.path(), json!({"path": "nonl.txt", "limit": -1})).await;
    assert_eq!(join_text(&out.content), "a\n\n[3 more lines in file. Use offset=0 to continue.]");
}

#[tokio::test]
async fn offsets_at_zero_negative_and_past_the_end() {
    let dir = fixture();
    for offset in [0, -3] {
        let out = read(dir.path(), json!({"path": "nonl.txt", "offset": offset})).await;
        assert_eq!(join_text(&out.content), "a\nb");
    }
    let out = read(dir.path(), json!({"path": "a.txt", "offset": 3})).await;
    assert!(!out.is_error);
    assert_eq!(join_text(&out.content), "");
    let out = read(dir.path(), json!({"path": "a.txt", "offset": 5})).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "Offset 5 is beyond end of file (3 lines total)");
    let out = read(dir.path(), json!({"path": "big.txt", "offset": 3000})).await;
    assert_eq!(join_text(&out.content), "Offset 3000 is beyond end of file (2501 lines total)");
    let out = read(dir.path(), json!({"path": "empty.txt", "offset": 2})).await;
    assert_eq!(join_text(&out.content), "Offset 2 is beyond end of file (1 lines total)");
    let out = read(dir.path(), json!({"path": "empty.txt"})).await;
    assert_eq!((out.is_error, join_text(&out.content)), (false, String::new()));
}

#[tokio::test]
async fn byte_limit_truncation_names_the_limit() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "wide.txt"})).await;
    let text = join_text(&out.content);
    assert!(text.ends_with("x\n\n[Showing lines 1-512 of 600 (50.0KB limit). Use offset=513 to continue.]"));
    assert_eq!(text.len(), 51273);
    assert_eq!(truncation_summary(&out)["truncatedBy"], "bytes");
    assert_eq!(truncation_summary(&out)["totalBytes"], 59999);
}

#[tokio::test]
async fn an_oversized_first_line_points_to_bash() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "longline.txt"})).await;
    assert_eq!(
        join_text(&out.content),
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' longline.txt | head -c 51200]"
    );
    assert_eq!(
        truncation_summary(&out),
        json!({"truncated": true, "truncatedBy": "bytes", "totalLines": 2, "totalBytes": 60007,
               "outputLines": 0, "outputBytes": 0, "lastLinePartial": false,
               "firstLineExceedsLimit": true, "maxLines": 2000, "maxBytes": 51200})
    );
    let out = read(dir.path(), json!({"path": "longline.txt", "offset": 2})).await;
    assert_eq!(join_text(&out.content), "short\n");
}

#[tokio::test]
async fn missing_files_and_directories_fail_like_pi() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "missing.txt"})).await;
    assert!(out.is_error);
    assert_eq!(out.details, Some(json!({})));
    let missing = dir.path().join("missing.txt");
    assert_eq!(join_text(&out.content), format!("ENOENT: no such file or directory, access '{}'", missing.display()));
    let out = read(dir.path(), json!({"path": "d"})).await;
    assert_eq!(join_text(&out.content), "EISDIR: illegal operation on a directory, read");
}

#[tokio::test]
async fn string_offsets_are_coerced() {
    let dir = fixture();
    let out = read(dir.path(), json!({"path": "a.txt", "offset": "2", "limit": "1"})).await;
    assert_eq!(join_text(&out.content), "world\n\n[1 more lines in file. Use offset=3 to continue.]");
}

#[tokio::test]
async fn crlf_and_invalid_utf8_are_kept_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.txt"), b"\xef\xbb\xbfa\r\nb\xff\r\n").unwrap();
    let out = read(dir.path(), json!({"path": "c.txt"})).await;
    assert_eq!(join_text(&out.content), "\u{feff}a\r\nb\u{fffd}\r\n");
}

#[tokio::test]
async fn images_come_back_as_an_image_block_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(4, 3, image::Rgb([1, 2, 3])))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    // The extension does not matter: the content is sniffed.
    std::fs::write(dir.path().join("pic.dat"), &png).unwrap();
    let out = read(dir.path(), json!({"path": "pic.dat"})).await;
    assert!(!out.is_error);
    assert_eq!(out.content.len(), 2);
    assert_eq!(out.content[0], ContentBlock::text("Read image file [image/png]"));
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    assert_eq!(out.content[1], ContentBlock::Image(ImageContent { data: data.clone(), mime_type: "image/png".into() }));
    assert_eq!(
        out.structured_content,
        Some(json!({"type": "image", "data": data, "mimeType": "image/png", "note": "Read image file [image/png]"}))
    );
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn an_aborted_read_reports_operation_aborted() {
    let dir = fixture();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    ctx.cancel.cancel();
    let out = ReadTool::new().execute(json!({"path": "a.txt"}), ctx).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "Operation aborted");
}

#[test]
fn schema_and_description_match_pi() {
    let tool = ReadTool::new();
    assert_eq!(
        serde_json::to_string(tool.parameters()).unwrap(),
        r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"Path to the file to read (relative or absolute)"},"offset":{"type":"number","description":"Line number to start reading from (1-indexed)"},"limit":{"type":"number","description":"Maximum number of lines to read"}}}"#
    );
    assert!(
        tool.description()
            .starts_with("Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp).")
    );
}
