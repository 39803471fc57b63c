//! Matching and diffing for the `edit` tool: exact-then-fuzzy matching of
//! every `oldText` against the original (LF-normalized) text, pi's error
//! texts, splicing that keeps the file's line endings, and the two diff forms
//! pi reports (`diff`: numbered display lines with context; `patch`: a unified
//! patch), both computed only in windows around the replacements.

/// Lines of context around changes (display diff and patch).
const CONTEXT_LINES: usize = 4;
/// Unchanged lines diffed on each side of a replacement.
const WINDOW_MARGIN_LINES: usize = 32;

/// One edit as the model sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// A replacement of `match_len` bytes at `match_index` of the base text.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub match_index: usize,
    pub match_len: usize,
    pub new_text: String,
}

/// The edits applied to the normalized text.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub base: String,
    pub new_content: String,
    pub replacements: Vec<Replacement>,
}

/// `CRLF` and lone `CR` to `LF`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Split a leading byte order mark off decoded text.
pub fn split_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    }
}

fn is_js_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

/// pi's fuzzy form: NFKC, trailing whitespace of each line removed, smart
/// quotes, Unicode dashes and special spaces replaced by their ASCII forms.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc = icu_normalizer::ComposingNormalizerBorrowed::new_nfkc().normalize(text);
    let trimmed: Vec<&str> = nfkc.split('\n').map(|l| l.trim_end_matches(is_js_space)).collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => '\'',
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{a0}' | '\u{2002}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect()
}

struct Found {
    index: usize,
    len: usize,
    fuzzy: bool,
}

/// Exact match first, then a match in fuzzy-normalized space.
fn fuzzy_find(content: &str, old: &str) -> Option<Found> {
    if let Some(index) = content.find(old) {
        return Some(Found { index, len: old.len(), fuzzy: false });
    }
    let fc = normalize_for_fuzzy_match(content);
    let fo = normalize_for_fuzzy_match(old);
    fc.find(&fo).map(|index| Found { index, len: fo.len(), fuzzy: true })
}

/// Occurrences as pi counts them (`split(x).length - 1` in fuzzy space; an
/// old text that normalizes to nothing splits between every UTF-16 unit).
fn count_occurrences(content: &str, old: &str) -> usize {
    let fo = normalize_for_fuzzy_match(old);
    let fc = normalize_for_fuzzy_match(content);
    if fo.is_empty() {
        return super::truncate::utf16_len(&fc).saturating_sub(1);
    }
    fc.matches(fo.as_str()).count()
}

fn not_found(path: &str, i: usize, total: usize) -> String {
    if total == 1 {
        format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )
    } else {
        format!(
            "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
        )
    }
}

fn duplicate(path: &str, i: usize, total: usize, n: usize) -> String {
    if total == 1 {
        format!(
            "Found {n} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )
    } else {
        format!(
            "Found {n} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        )
    }
}

fn apply_replacements(content: &str, replacements: &[Replacement], offset: usize) -> String {
    let mut result = content.to_string();
    for r in replacements.iter().rev() {
        let at = r.match_index - offset;
        result.replace_range(at..at + r.match_len, &r.new_text);
    }
    result
}

/// Byte spans of lines, each with its `\n`.
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, b) in content.bytes().enumerate() {
        if b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < content.len() {
        spans.push((start, content.len()));
    }
    spans
}

/// Widen fuzzy replacements to whole lines so untouched lines keep their
/// original text while touched lines are rewritten from the fuzzy base.
fn widen_to_lines(original: &str, base: &str, replacements: &[Replacement]) -> Result<Vec<Replacement>, String> {
    let orig_lines = line_spans(original);
    let base_lines = line_spans(base);
    if orig_lines.len() != base_lines.len() {
        return Err("Cannot preserve unchanged lines because the base content has a different line count.".into());
    }
    let outside = || "Replacement range is outside the base content.".to_string();
    let mut groups: Vec<(usize, usize, Vec<Replacement>)> = Vec::new();
    let mut sorted = replacements.to_vec();
    sorted.sort_by_key(|r| r.match_index);
    for r in sorted {
        let start_line =
            base_lines.iter().position(|(s, e)| r.match_index >= *s && r.match_index < *e).ok_or_else(outside)?;
        let end = r.match_index + r.match_len;
        let mut end_line = start_line;
        while end_line < base_lines.len() && base_lines[end_line].1 < end {
            end_line += 1;
        }
        if end_line >= base_lines.len() {
            return Err(outside());
        }
        match groups.last_mut() {
            Some(g) if start_line < g.1 => {
                g.1 = g.1.max(end_line + 1);
                g.2.push(r);
            }
            _ => groups.push((start_line, end_line + 1, vec![r])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, last, reps)| {
            let group_start = base_lines[first].0;
            let group_end = base_lines[last - 1].1;
            let orig_start = orig_lines[first].0;
            Replacement {
                match_index: orig_start,
                match_len: orig_lines[last - 1].1 - orig_start,
                new_text: apply_replacements(&base[group_start..group_end], &reps, group_start),
            }
        })
        .collect())
}

/// Match every edit against the same LF-normalized text and apply them all,
/// with pi's error texts (empty oldText, not found, not unique, overlap, no change).
pub fn apply_edits(normalized: &str, edits: &[Edit], path: &str) -> Result<Applied, String> {
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit { old_text: normalize_to_lf(&e.old_text), new_text: normalize_to_lf(&e.new_text) })
        .collect();
    let total = edits.len();
    for (i, e) in edits.iter().enumerate() {
        if e.old_text.is_empty() {
            return Err(if total == 1 {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{i}].oldText must not be empty in {path}.")
            });
        }
    }
    let used_fuzzy = edits.iter().any(|e| fuzzy_find(normalized, &e.old_text).is_some_and(|f| f.fuzzy));
    let base_for_matching = if used_fuzzy { normalize_for_fuzzy_match(normalized) } else { normalized.to_string() };
    let mut matched: Vec<(usize, Replacement)> = Vec::new();
    for (i, e) in edits.iter().enumerate() {
        let found = fuzzy_find(&base_for_matching, &e.old_text).ok_or_else(|| not_found(path, i, total))?;
        let n = count_occurrences(&base_for_matching, &e.old_text);
        if n > 1 {
            return Err(duplicate(path, i, total, n));
        }
        matched.push((i, Replacement { match_index: found.index, match_len: found.len, new_text: e.new_text.clone() }));
    }
    matched.sort_by_key(|(_, r)| r.match_index);
    for pair in matched.windows(2) {
        let ((pi, prev), (ci, cur)) = (&pair[0], &pair[1]);
        if prev.match_index + prev.match_len > cur.match_index {
            return Err(format!(
                "edits[{pi}] and edits[{ci}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ));
        }
    }
    let matched: Vec<Replacement> = matched.into_iter().map(|(_, r)| r).collect();
    let replacements = if used_fuzzy { widen_to_lines(normalized, &base_for_matching, &matched)? } else { matched };
    let new_content = apply_replacements(normalized, &replacements, 0);
    if new_content == normalized {
        return Err(if total == 1 {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok(Applied { base: normalized.to_string(), new_content, replacements })
}

/// Line ending of the line containing `offset` (a lone CR counts only in files without LF).
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let lf =
        content[offset..].find('\n').map(|i| i + offset).or_else(|| content[..offset.min(content.len())].rfind('\n'));
    match lf {
        None if content.contains('\r') => "\r",
        None => "\n",
        Some(i) if i > 0 && content.as_bytes()[i - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

/// Apply replacements found in the LF-normalized text to the original text,
/// keeping untouched bytes (and line endings); new line breaks take the
/// ending of the line where the replaced range starts.
pub fn apply_to_original(original: &str, replacements: &[Replacement]) -> String {
    let crlfs: Vec<usize> = original.match_indices("\r\n").map(|(i, _)| i).collect();
    let mut crlf_before = 0;
    let mut to_original = |offset: usize| {
        while crlf_before < crlfs.len() && crlfs[crlf_before] - crlf_before < offset {
            crlf_before += 1;
        }
        offset + crlf_before
    };
    let mut out = String::with_capacity(original.len());
    let push = |out: &mut String, part: &str| {
        if part.is_empty() {
            return;
        }
        if out.ends_with('\r') && part.starts_with('\n') {
            out.push('\n');
        }
        out.push_str(part);
    };
    let mut position = 0;
    for r in replacements {
        let start = to_original(r.match_index);
        push(&mut out, &original[position..start]);
        let ending = line_ending_at(original, start);
        let text = if ending == "\n" { r.new_text.clone() } else { r.new_text.replace('\n', ending) };
        push(&mut out, &text);
        position = to_original(r.match_index + r.match_len);
    }
    push(&mut out, &original[position..]);
    out
}

mod format;
pub use format::{EditDiff, generate_edit_diff};

/// Line tokens (each with its `\n`) diffed into parts, as jsdiff's `diffLines`.
fn diff_parts<'a>(old: &'a str, new: &'a str) -> Vec<(Kind, Vec<&'a str>)> {
    let o: Vec<&str> = old.split_inclusive('\n').collect();
    let n: Vec<&str> = new.split_inclusive('\n').collect();
    let (mut oi, mut ni) = (0, 0);
    let mut parts = Vec::new();
    for (kind, count) in myers::diff(&o, &n) {
        let lines = match kind {
            Kind::Removed => {
                oi += count;
                o[oi - count..oi].to_vec()
            }
            Kind::Added => {
                ni += count;
                n[ni - count..ni].to_vec()
            }
            Kind::Same => {
                oi += count;
                ni += count;
                n[ni - count..ni].to_vec()
            }
        };
        parts.push((kind, lines));
    }
    parts
}

mod myers;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Same,
    Added,
    Removed,
}
