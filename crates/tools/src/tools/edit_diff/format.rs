//! The two diff forms of an edit: pi's numbered display diff and a unified
//! patch (jsdiff's `structuredPatch` + `formatPatch` with file headers only),
//! computed in line windows around the replacements.

use super::{CONTEXT_LINES, Kind, Replacement, WINDOW_MARGIN_LINES, diff_parts};

/// The diff details of an edit.
#[derive(Debug, Clone, PartialEq)]
pub struct EditDiff {
    /// Display diff: `+N text`, `-N text`, ` N text`, ` … ...` skip markers.
    pub diff: String,
    /// Unified patch with `--- path` / `+++ path` headers.
    pub patch: String,
    /// First changed line, numbered in the new file.
    pub first_changed_line: Option<usize>,
}

fn count_line_feeds(text: &str) -> usize {
    text.bytes().filter(|b| *b == b'\n').count()
}

struct Shown {
    lines: Vec<String>,
    first_changed_line: Option<usize>,
}

fn numbered(sign: char, n: usize, width: usize, line: &str) -> String {
    format!("{sign}{n:>width$} {line}")
}

/// Format diff parts as display lines, numbering from the given 1-based lines.
fn format_display(parts: &[(Kind, Vec<&str>)], old_start: usize, new_start: usize, width: usize) -> Shown {
    let ctx = CONTEXT_LINES;
    let skip = format!(" {} ...", " ".repeat(width));
    let (mut old_n, mut new_n) = (old_start, new_start);
    let mut out = Vec::new();
    let mut first = None;
    let mut last_was_change = false;
    for (i, (kind, tokens)) in parts.iter().enumerate() {
        let raw: Vec<&str> = tokens.iter().map(|t| t.strip_suffix('\n').unwrap_or(t)).collect();
        if *kind != Kind::Same {
            first.get_or_insert(new_n);
            for line in &raw {
                if *kind == Kind::Added {
                    out.push(numbered('+', new_n, width, line));
                    new_n += 1;
                } else {
                    out.push(numbered('-', old_n, width, line));
                    old_n += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(|(k, _)| *k != Kind::Same);
        let show = |out: &mut Vec<String>, lines: &[&str], old_n: &mut usize, new_n: &mut usize| {
            for line in lines {
                out.push(numbered(' ', *old_n, width, line));
                *old_n += 1;
                *new_n += 1;
            }
        };
        match (last_was_change, next_is_change) {
            (true, true) if raw.len() <= ctx * 2 => show(&mut out, &raw, &mut old_n, &mut new_n),
            (true, true) => {
                let skipped = raw.len() - 2 * ctx;
                show(&mut out, &raw[..ctx], &mut old_n, &mut new_n);
                out.push(skip.clone());
                old_n += skipped;
                new_n += skipped;
                show(&mut out, &raw[raw.len() - ctx..], &mut old_n, &mut new_n);
            }
            (true, false) => {
                let shown = raw.len().min(ctx);
                show(&mut out, &raw[..shown], &mut old_n, &mut new_n);
                if raw.len() > shown {
                    out.push(skip.clone());
                    old_n += raw.len() - shown;
                    new_n += raw.len() - shown;
                }
            }
            (false, true) => {
                let skipped = raw.len().saturating_sub(ctx);
                if skipped > 0 {
                    out.push(skip.clone());
                    old_n += skipped;
                    new_n += skipped;
                }
                show(&mut out, &raw[skipped..], &mut old_n, &mut new_n);
            }
            (false, false) => {
                old_n += raw.len();
                new_n += raw.len();
            }
        }
        last_was_change = false;
    }
    Shown { lines: out, first_changed_line: first }
}

struct Hunk {
    old_start: usize,
    old_lines: usize,
    new_start: usize,
    new_lines: usize,
    lines: Vec<String>,
}

/// jsdiff's `structuredPatch` hunks for one pair of texts.
fn structured_hunks(parts: &[(Kind, Vec<&str>)]) -> Vec<Hunk> {
    let ctx = CONTEXT_LINES;
    let mut parts: Vec<(Kind, Vec<&str>)> = parts.to_vec();
    parts.push((Kind::Same, Vec::new()));
    let mut hunks = Vec::new();
    let (mut old_range, mut new_range) = (0usize, 0usize);
    let mut cur: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (1usize, 1usize);
    let n = parts.len();
    for i in 0..n {
        let (kind, lines) = &parts[i];
        if *kind != Kind::Same {
            if old_range == 0 {
                old_range = old_line;
                new_range = new_line;
                if i > 0 {
                    let prev = &parts[i - 1].1;
                    cur = prev[prev.len().saturating_sub(ctx)..].iter().map(|l| format!(" {l}")).collect();
                    old_range -= cur.len();
                    new_range -= cur.len();
                }
            }
            let sign = if *kind == Kind::Added { '+' } else { '-' };
            cur.extend(lines.iter().map(|l| format!("{sign}{l}")));
            if *kind == Kind::Added {
                new_line += lines.len();
            } else {
                old_line += lines.len();
            }
            continue;
        }
        if old_range != 0 {
            if lines.len() <= ctx * 2 && i + 2 < n {
                cur.extend(lines.iter().map(|l| format!(" {l}")));
            } else {
                let size = lines.len().min(ctx);
                cur.extend(lines[..size].iter().map(|l| format!(" {l}")));
                hunks.push(Hunk {
                    old_start: old_range,
                    old_lines: old_line - old_range + size,
                    new_start: new_range,
                    new_lines: new_line - new_range + size,
                    lines: std::mem::take(&mut cur),
                });
                old_range = 0;
                new_range = 0;
            }
        }
        old_line += lines.len();
        new_line += lines.len();
    }
    for h in &mut hunks {
        let mut fixed = Vec::with_capacity(h.lines.len());
        for line in h.lines.drain(..) {
            match line.strip_suffix('\n') {
                Some(l) => fixed.push(l.to_string()),
                None => {
                    fixed.push(line);
                    fixed.push("\\ No newline at end of file".to_string());
                }
            }
        }
        h.lines = fixed;
    }
    hunks
}

/// Start of the line containing `offset`.
fn line_start_before(text: &str, offset: usize) -> usize {
    if offset == 0 { 0 } else { text.as_bytes()[..offset].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1) }
}

struct Window {
    old_start: usize,
    old_end: usize,
    old_line: usize,
    new_start: usize,
    new_end: usize,
    new_line: usize,
}

/// Whole-line windows with margin around the (sorted, disjoint) replacements.
fn diff_windows(base: &str, replacements: &[Replacement]) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    let (mut offset_delta, mut line_delta) = (0isize, 0isize);
    let (mut cursor_offset, mut cursor_line) = (0usize, 0usize);
    for r in replacements {
        let match_end = r.match_index + r.match_len;
        let mut start = line_start_before(base, r.match_index);
        for _ in 0..WINDOW_MARGIN_LINES {
            if start == 0 {
                break;
            }
            start = line_start_before(base, start - 1);
        }
        let mut end = match_end;
        for i in 0..=WINDOW_MARGIN_LINES {
            if end >= base.len() {
                break;
            }
            let from = if i == 0 { match_end.saturating_sub(1).max(r.match_index) } else { end };
            // Byte search: `from` may sit inside the match's last character.
            end = base.as_bytes()[from..].iter().position(|b| *b == b'\n').map_or(base.len(), |p| from + p + 1);
        }
        let rep_offset_delta = r.new_text.len() as isize - r.match_len as isize;
        let rep_line_delta =
            count_line_feeds(&r.new_text) as isize - count_line_feeds(&base[r.match_index..match_end]) as isize;
        match windows.last_mut() {
            Some(prev) if start <= prev.old_end => {
                prev.old_end = prev.old_end.max(end);
                prev.new_end = (prev.old_end as isize + offset_delta + rep_offset_delta) as usize;
            }
            _ => {
                cursor_line += count_line_feeds(&base[cursor_offset..start]);
                cursor_offset = start;
                windows.push(Window {
                    old_start: start,
                    old_end: end,
                    old_line: cursor_line,
                    new_start: (start as isize + offset_delta) as usize,
                    new_end: (end as isize + offset_delta + rep_offset_delta) as usize,
                    new_line: (cursor_line as isize + line_delta) as usize,
                });
            }
        }
        offset_delta += rep_offset_delta;
        line_delta += rep_line_delta;
    }
    windows
}

/// The display diff and unified patch of an edit, diffing only around its replacements.
pub fn generate_edit_diff(path: &str, base: &str, new_content: &str, replacements: &[Replacement]) -> EditDiff {
    let width = (count_line_feeds(base) + 1).max(count_line_feeds(new_content) + 1).to_string().len();
    let skip = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut first = None;
    for w in diff_windows(base, replacements) {
        let old_text = &base[w.old_start..w.old_end];
        let new_text = new_content.get(w.new_start..w.new_end).unwrap_or_default();
        let parts = diff_parts(old_text, new_text);
        let mut shown = format_display(&parts, w.old_line + 1, w.new_line + 1, width);
        first = first.or(shown.first_changed_line);
        if out.last() == Some(&skip) && shown.lines.first() == Some(&skip) {
            shown.lines.remove(0);
        }
        out.extend(shown.lines);
        for mut h in structured_hunks(&parts) {
            h.old_start += w.old_line;
            h.new_start += w.new_line;
            hunks.push(h);
        }
    }
    let mut patch = vec![format!("--- {path}"), format!("+++ {path}")];
    for h in hunks {
        let old_start = if h.old_lines == 0 { h.old_start.saturating_sub(1) } else { h.old_start };
        let new_start = if h.new_lines == 0 { h.new_start.saturating_sub(1) } else { h.new_start };
        patch.push(format!("@@ -{old_start},{} +{new_start},{} @@", h.old_lines, h.new_lines));
        patch.extend(h.lines);
    }
    EditDiff { diff: out.join("\n"), patch: patch.join("\n") + "\n", first_changed_line: first }
}
