//! Output truncation shared by the tools: head/tail cuts by lines and bytes
//! (UTF-8 safe), long-line cuts, and sizes formatted as pi formats them.
//!
//! Two independent limits apply, whichever is hit first: a line count and a
//! byte count. Whole lines are kept, except that a tail cut whose last line
//! alone is too big keeps the end of that line.

use serde::Serialize;

/// Default line limit of tool output.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte limit of tool output (50KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line shown, in UTF-16 code units (pi counts JS string length).
pub const GREP_MAX_LINE_LENGTH: usize = 500;
/// "No line limit" as pi writes it (`Number.MAX_SAFE_INTEGER`).
pub const NO_LINE_LIMIT: usize = 9_007_199_254_740_991;

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// The result of a truncation; serializes exactly like pi's `TruncationResult`
/// (it is part of tool `details`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Truncation {
    /// The truncation as a JSON value (for tool details).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn untouched(content: &str, total_lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// Limits of one truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_lines: DEFAULT_MAX_LINES, max_bytes: DEFAULT_MAX_BYTES }
    }
}

impl Limits {
    /// Only the byte limit (grep, find, ls).
    pub fn bytes_only() -> Self {
        Limits { max_lines: NO_LINE_LIMIT, max_bytes: DEFAULT_MAX_BYTES }
    }
}

/// Lines as pi counts them: split on `\n`, a trailing newline does not start a line.
pub fn split_lines_for_counting(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = content.split('\n').collect();
    if content.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// A byte count as pi shows it: `512B`, `1.5KB`, `2.0MB` (one decimal, ties away from zero).
pub fn format_size(bytes: usize) -> String {
    fn one_decimal(value_times_ten: f64) -> String {
        let n = value_times_ten.round() as u64;
        format!("{}.{}", n / 10, n % 10)
    }
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{}KB", one_decimal(bytes as f64 * 10.0 / 1024.0))
    } else {
        format!("{}MB", one_decimal(bytes as f64 * 10.0 / (1024.0 * 1024.0)))
    }
}

/// Keep the first lines/bytes (file reads). Never returns a partial line; when
/// the first line alone is over the byte limit the content is empty and
/// `first_line_exceeds_limit` is set.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let Limits { max_lines, max_bytes } = limits;
    let lines = split_lines_for_counting(content);
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut result = Truncation {
        content: String::new(),
        truncated: true,
        truncated_by: Some(TruncatedBy::Bytes),
        total_lines,
        total_bytes: content.len(),
        output_lines: 0,
        output_bytes: 0,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    };
    if lines.first().is_some_and(|l| l.len() > max_bytes) {
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(max_lines) {
        let line_bytes = line.len() + usize::from(i > 0);
        if bytes + line_bytes > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += line_bytes;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    result.content = lines[..kept].join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept;
    result.output_bytes = result.content.len();
    result
}

/// Keep the last lines/bytes (command output). When the last line alone is
/// over the byte limit, its end is kept and `last_line_partial` is set.
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let Limits { max_lines, max_bytes } = limits;
    let lines = split_lines_for_counting(content);
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut last_line_partial = false;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let line_bytes = line.len() + usize::from(!kept.is_empty());
        if bytes + line_bytes > max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let end = tail_bytes(line, max_bytes);
                bytes = end.len();
                kept.push(end);
                last_line_partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += line_bytes;
    }
    if kept.len() >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    kept.reverse();
    let output = kept.join("\n");
    Truncation {
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept.len(),
        output_bytes: output.len(),
        last_line_partial,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
        content: output,
    }
}

/// The last `max_bytes` bytes of `s`, starting at a character boundary.
pub fn tail_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The first `max_bytes` bytes of `s`, ending at a character boundary.
pub fn head_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Length of `s` in UTF-16 code units (JavaScript's `length`).
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// At most the first `max_units` UTF-16 code units of `s`, never splitting a character.
pub fn slice_head_utf16(s: &str, max_units: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max_units {
            return &s[..i];
        }
    }
    s
}

/// Cut a line longer than `max_chars` (UTF-16 units) and mark it `... [truncated]`.
/// Returns the text and whether it was cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    if utf16_len(line) <= max_chars {
        return (line.to_string(), false);
    }
    (format!("{}... [truncated]", slice_head_utf16(line, max_chars)), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn sizes_are_formatted_like_pi() {
        let got: Vec<String> =
            [0, 1023, 1024, 1280, 1331, 51200, 1048576, 1572864, 1101004].iter().map(|b| format_size(*b)).collect();
        assert_eq!(got, ["0B", "1023B", "1.0KB", "1.3KB", "1.3KB", "50.0KB", "1.0MB", "1.5MB", "1.0MB"]);
    }

    #[test]
    fn small_content_is_untouched() {
        let t = truncate_head("a\nb\n", Limits::default());
        assert!(!t.truncated);
        assert_eq!(t.content, "a\nb\n");
        assert_eq!((t.total_lines, t.total_bytes, t.output_lines), (2, 4, 2));
        assert_eq!(truncate_head("", Limits::default()).total_lines, 0);
    }

    #[test]
    fn head_cuts_at_the_line_limit() {
        let text = numbered(2500);
        let t = truncate_head(&text, Limits::default());
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.total_lines, t.total_bytes, t.output_lines, t.output_bytes), (2500, 23893, 2000, 18892));
        assert!(t.content.ends_with("line 2000"));
        // Exactly at the limit: not truncated.
        assert!(!truncate_head(&numbered(2000), Limits::default()).truncated);
    }

    #[test]
    fn tail_cuts_at_the_line_limit_without_final_newline() {
        let t = truncate_tail(&numbered(2500), Limits::default());
        assert!(t.content.starts_with("line 501\n"));
        assert!(t.content.ends_with("line 2500"));
        assert_eq!((t.output_lines, t.output_bytes), (2000, 19500));
    }

    #[test]
    fn byte_limit_wins_when_hit_first() {
        let text = vec!["x".repeat(99); 600].join("\n");
        for t in [truncate_head(&text, Limits::default()), truncate_tail(&text, Limits::default())] {
            assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
            assert_eq!((t.total_lines, t.total_bytes, t.output_lines, t.output_bytes), (600, 59999, 512, 51199));
        }
    }

    #[test]
    fn oversized_first_line_of_head_gives_empty_content() {
        let text = format!("{}\nb", "é".repeat(30000));
        let t = truncate_head(&text, Limits::default());
        assert!(t.first_line_exceeds_limit);
        assert_eq!((t.content.as_str(), t.output_lines, t.total_bytes), ("", 0, 60002));
    }

    #[test]
    fn oversized_last_line_of_tail_keeps_its_end_on_a_char_boundary() {
        let text = format!("a\n{}", "é".repeat(30000));
        let t = truncate_tail(&text, Limits::default());
        assert!(t.last_line_partial);
        assert_eq!((t.output_lines, t.output_bytes), (1, 51200));
        assert_eq!(t.content.chars().count(), 25600);
        // An odd byte budget must not split the two-byte character.
        assert_eq!(tail_bytes("éé", 3), "é");
        assert_eq!(head_bytes("éé", 3), "é");
    }

    #[test]
    fn truncation_serializes_in_pi_key_order() {
        let t = truncate_head(&numbered(2500), Limits::default());
        let json = serde_json::to_string(&t.to_value()).unwrap_or_default();
        let keys: Vec<&str> = json.split("\":").filter_map(|s| s.rsplit('"').next()).collect();
        assert!(json.contains("\"truncatedBy\":\"lines\""));
        let expected = [
            "content",
            "truncated",
            "truncatedBy",
            "totalLines",
            "totalBytes",
            "outputLines",
            "outputBytes",
            "lastLinePartial",
            "firstLineExceedsLimit",
            "maxLines",
            "maxBytes",
        ];
        assert_eq!(&keys[..expected.len()], expected);
        assert!(truncate_head("x", Limits::default()).to_value()["truncatedBy"].is_null());
    }

    #[test]
    fn long_lines_are_cut_in_utf16_units_without_splitting_pairs() {
        let line = format!("{}😀b", "a".repeat(499));
        let (text, cut) = truncate_line(&line, GREP_MAX_LINE_LENGTH);
        assert!(cut);
        assert_eq!(text, format!("{}... [truncated]", "a".repeat(499)));
        assert_eq!(truncate_line("short", 500), ("short".to_string(), false));
        assert_eq!(utf16_len("a😀"), 3);
    }
}
