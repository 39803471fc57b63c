//! Markdown front matter (`---` YAML block) as pi reads it, plus the
//! JavaScript whitespace rules (`\s`, `String.trim`) its text handling uses.

use std::collections::HashMap;

use yaml_rust2::{Yaml, YamlLoader};

/// A top-level front-matter value, reduced to what templates and skills use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FmValue {
    Str(String),
    Bool(bool),
    /// Numbers, null, lists, maps: present but neither a string nor a boolean.
    Other,
}

/// Parsed front matter: top-level keys (only string keys are kept) and the body.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FrontMatter {
    pub fields: HashMap<String, FmValue>,
    pub body: String,
}

impl FrontMatter {
    /// The value of `key` when it is a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.fields.get(key) {
            Some(FmValue::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// True only when `key` is the boolean `true`.
    pub fn is_true(&self, key: &str) -> bool {
        matches!(self.fields.get(key), Some(FmValue::Bool(true)))
    }
}

/// Split `content` into front matter and body, the way pi does:
/// BOM stripped, CRLF/CR normalised to LF; front matter only when the text
/// starts with `---` and a later line starts with `---`; the body after the
/// closing marker is trimmed, a text without front matter is kept as is.
/// A YAML error is returned as its message (pi skips such files).
pub(crate) fn parse(content: &str) -> Result<FrontMatter, String> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    let Some((yaml, body)) = split(&normalized) else {
        return Ok(FrontMatter { fields: HashMap::new(), body: normalized });
    };
    let body = js_trim(body).to_string();
    if yaml.is_empty() {
        return Ok(FrontMatter { fields: HashMap::new(), body });
    }
    // pi's YAML parser rejects a line indented with a tab; yaml-rust2 accepts some.
    if yaml.split('\n').any(|l| l.starts_with('\t') && !l.trim_start().is_empty() && !l.trim_start().starts_with('#')) {
        return Err("Tabs are not allowed as indentation".to_string());
    }
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| e.to_string())?;
    if docs.len() > 1 {
        return Err("Source contains multiple documents".to_string());
    }
    let mut fields = HashMap::new();
    if let Some(Yaml::Hash(hash)) = docs.into_iter().next() {
        for (key, value) in hash {
            let key = match key {
                Yaml::String(s) | Yaml::Real(s) => s,
                Yaml::Integer(i) => i.to_string(),
                Yaml::Boolean(b) => b.to_string(),
                _ => continue,
            };
            let value = match value {
                Yaml::String(s) => FmValue::Str(s),
                Yaml::Boolean(b) => FmValue::Bool(b),
                _ => FmValue::Other,
            };
            fields.insert(key, value);
        }
    }
    Ok(FrontMatter { fields, body })
}

/// The body without front matter (errors propagate like [`parse`]).
pub(crate) fn strip(content: &str) -> Result<String, String> {
    parse(content).map(|fm| fm.body)
}

/// `(yaml, rest)` when `text` has a front-matter block: it starts with `---`
/// and the first `\n---` at or after index 3 closes it.
fn split(text: &str) -> Option<(&str, &str)> {
    if !text.starts_with("---") {
        return None;
    }
    let end = 3 + text[3..].find("\n---")?;
    // pi takes the YAML from index 4 (after `---` and one character).
    let start = text[3..].chars().next().map_or(3, |c| 3 + c.len_utf8());
    let yaml = if start <= end { &text[start..end] } else { "" };
    Some((yaml, &text[end + 4..]))
}

/// JavaScript's `\s`: ASCII whitespace, NBSP, the Unicode space separators,
/// line/paragraph separators and the BOM (but not U+0085).
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0b}' | '\u{0c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// JavaScript's `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}
