//! Template arguments: pi's shell-like argument splitting and the `$1`,
//! `$@`, `$ARGUMENTS`, `${N:-default}`, `${@:-default}`, `${@:N}`, `${@:N:L}`
//! substitutions.

use super::frontmatter::is_js_whitespace;

/// Split `input` into arguments.
///
/// Whitespace separates arguments. A `"` or `'` opens a quoted part only at
/// the start of an argument (so `doesn't` stays one word with its
/// apostrophe); inside it, a backslash before the same quote character
/// yields the quote, every other character (other backslashes included) is
/// kept. `""` gives an empty argument. A quote never closed is kept as a
/// literal character and the text after it is split normally.
pub fn parse_command_args(input: &str) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut in_quote: Option<char> = None;
    let mut quote_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = in_quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                in_quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            in_quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if is_js_whitespace(c) {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if in_quote.is_some() && i + 1 == chars.len() {
            // Unclosed: the quote becomes text and parsing resumes after it
            // (the argument was empty when the quote opened it).
            in_quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// Replace the placeholders of `content` with `args`, in one left-to-right
/// pass (values are never substituted again):
///
/// * `$1`, `$2`, … one argument (missing → empty);
/// * `$@`, `$ARGUMENTS` all arguments joined with spaces;
/// * `${N:-default}` argument N, or `default` when missing or empty;
/// * `${@:-default}`, `${ARGUMENTS:-default}` all arguments, or `default` when there are none;
/// * `${@:N}` arguments from the N-th on (`0` counts as `1`);
/// * `${@:N:L}` `L` arguments from the N-th.
///
/// Anything else after a `$` is kept as written.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        match placeholder(after, args, &all) {
            Some((value, used)) => {
                out.push_str(&value);
                rest = &after[used..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The value of the placeholder at the start of `s` (the text after a `$`)
/// and how many bytes of `s` it spans.
fn placeholder(s: &str, args: &[String], all: &str) -> Option<(String, usize)> {
    if let Some(inner) = s.strip_prefix('{') {
        // `{target:-default}`
        let target = leading_digits(inner)
            .or_else(|| ["ARGUMENTS", "@"].into_iter().find(|t| inner.starts_with(t)))
            .filter(|t| inner[t.len()..].starts_with(":-"));
        if let Some(target) = target {
            let default_start = target.len() + 2;
            if let Some(close) = inner[default_start..].find('}') {
                let default = &inner[default_start..default_start + close];
                let value = match target {
                    "@" | "ARGUMENTS" => Some(all),
                    n => arg_at(args, n),
                };
                let value = value.filter(|v| !v.is_empty()).unwrap_or(default);
                return Some((value.to_string(), 1 + default_start + close + 1));
            }
        }
        // `{@:N}` / `{@:N:L}`
        let slice = inner.strip_prefix("@:")?;
        let start = leading_digits(slice)?;
        let mut used = 3 + start.len();
        let mut length = None;
        if let Some(len) = slice[start.len()..].strip_prefix(':').and_then(leading_digits) {
            length = Some(len);
            used += 1 + len.len();
        }
        if !s[used..].starts_with('}') {
            return None;
        }
        let from = parse_index(start).saturating_sub(1).min(args.len());
        let to = length.map_or(args.len(), |l| from.saturating_add(parse_index(l)).min(args.len()));
        return Some((args[from..to].join(" "), used + 1));
    }
    if s.starts_with("ARGUMENTS") {
        return Some((all.to_string(), "ARGUMENTS".len()));
    }
    if s.starts_with('@') {
        return Some((all.to_string(), 1));
    }
    let n = leading_digits(s)?;
    Some((arg_at(args, n).unwrap_or("").to_string(), n.len()))
}

/// The ASCII digits at the start of `s`, if any (JavaScript's `\d` is ASCII only).
fn leading_digits(s: &str) -> Option<&str> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The 1-based argument named by the decimal string `n` (`0` names none).
fn arg_at<'a>(args: &'a [String], n: &str) -> Option<&'a str> {
    let n = parse_index(n);
    if n == 0 { None } else { args.get(n - 1).map(String::as_str) }
}

/// A decimal index; values too large for `usize` saturate (they name no argument).
fn parse_index(digits: &str) -> usize {
    digits.parse::<usize>().unwrap_or(usize::MAX)
}
