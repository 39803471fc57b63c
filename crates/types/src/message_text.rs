//! [`Text`]: the string of a text block, shared rather than copied.
//!
//! A text block can be large (a tool result of a 40 KB file); the same block
//! lives in the session's records, in the agent's conversation and in every
//! reply that lists the messages. `Text` keeps one copy behind an `Arc`:
//! cloning it is a reference-count bump, and writing to it (streamed deltas)
//! copies it first if it is shared, so it behaves as a plain `String`.
//!
//! Read from a session file, a text is kept as the JSON string literal it was
//! written as, provided that literal is exactly what `serde_json` would write
//! for its contents ([`Text::from_canonical_json`]): serialising it again is
//! a copy of those bytes, and the decoded string is only made when something
//! reads it.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A string that is cheap to clone (see the module documentation).
#[derive(Clone)]
pub struct Text(Arc<Body>);

#[derive(Clone)]
struct Body {
    /// The canonical JSON literal the text was read as, if it was read so.
    json: Option<Box<RawValue>>,
    /// The decoded text (made on first read when `json` is set).
    text: OnceLock<String>,
}

impl Text {
    /// The text of a canonical JSON string literal, kept as it is; `None`
    /// when `literal` is not a string literal in the form `serde_json`
    /// writes (only `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and `\u00XX`
    /// with lowercase hex for the other control characters are escaped).
    pub fn from_canonical_json(literal: Box<RawValue>) -> Option<Text> {
        is_canonical_string(literal.get()).then(|| Text(Arc::new(Body { json: Some(literal), text: OnceLock::new() })))
    }

    /// The text as a string slice (decoded on first use when read as JSON).
    pub fn as_str(&self) -> &str {
        self.0.text.get_or_init(|| decode(&self.0.json))
    }

    /// Append `s`; a shared text is copied first, so other holders keep theirs.
    pub fn push_str(&mut self, s: &str) {
        let body = Arc::make_mut(&mut self.0);
        // Already decoded and not kept as JSON (a streamed block): in place.
        if body.json.is_none()
            && let Some(text) = body.text.get_mut()
        {
            text.push_str(s);
            return;
        }
        let mut text = std::mem::take(&mut body.text).into_inner().unwrap_or_else(|| decode(&body.json));
        text.push_str(s);
        body.json = None;
        body.text = OnceLock::from(text);
    }

    /// The text as an owned `String` (moved out when not shared).
    pub fn into_string(self) -> String {
        match Arc::try_unwrap(self.0) {
            Ok(body) if body.json.is_none() => body.text.into_inner().unwrap_or_default(),
            Ok(body) => Text(Arc::new(body)).as_str().to_string(),
            Err(shared) => Text(shared).as_str().to_string(),
        }
    }
}

/// The string a canonical literal denotes. A canonical literal always
/// decodes; an empty string is the only sensible stand-in should it not.
fn decode(json: &Option<Box<RawValue>>) -> String {
    json.as_ref().and_then(|json| serde_json::from_str(json.get()).ok()).unwrap_or_default()
}

/// True when `literal` (valid JSON, as a `RawValue` is) is a string literal
/// exactly as `serde_json` writes the string it denotes. Valid JSON has no
/// raw quote or control character inside a string and its escapes are well
/// formed, so only two escapes can differ from what `serde_json` writes:
/// `\/` (never written) and `\uXXXX` (written only as lowercase `\u00XX`
/// for a control character without a short escape). Both are found with a
/// vectorised search for their two bytes, so a text with an escape every few
/// bytes (source code) is not stopped at each of them.
fn is_canonical_string(literal: &str) -> bool {
    let Some(body) = literal.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else { return false };
    let body = body.as_bytes();
    let starts_escape = |at: usize| {
        // `\` at `at` starts an escape when an even number of backslashes
        // (escaped backslashes) precede it; the run cannot reach past the
        // body, whose first byte follows the opening quote.
        body[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
    };
    let slash_ok = memchr::memmem::find_iter(body, b"\\/").all(|at| !starts_escape(at));
    slash_ok
        && memchr::memmem::find_iter(body, b"\\u")
            .all(|at| !starts_escape(at) || body.get(at + 2..at + 6).is_some_and(is_canonical_unicode_escape))
}

/// `XXXX` of a `\uXXXX` escape `serde_json` writes: `00` + lowercase hex of a
/// control character that has no short escape.
fn is_canonical_unicode_escape(hex: &[u8]) -> bool {
    let lower_hex = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let [b'0', b'0', high, low] = hex else { return false };
    let (Some(high), Some(low)) = (lower_hex(*high), lower_hex(*low)) else { return false };
    let code = high * 16 + low;
    code < 0x20 && !matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
}

impl Default for Text {
    fn default() -> Self {
        Text::from(String::new())
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Text(Arc::new(Body { json: None, text: OnceLock::from(text) }))
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text::from(text.to_string())
    }
}

impl From<Text> for String {
    fn from(text: Text) -> Self {
        text.into_string()
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.0.text.get(), &self.0.json) {
            // Not decoded yet: the literal is what `serde_json` would write.
            (None, Some(json)) => json.serialize(serializer),
            _ => serializer.serialize_str(self.as_str()),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

impl schemars::JsonSchema for Text {
    fn inline_schema() -> bool {
        String::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        String::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).expect("valid JSON")
    }

    #[test]
    fn canonical_literals_are_exactly_what_serde_json_writes() {
        let samples = [
            "plain",
            "",
            "quote \" backslash \\ slash / tab \t newline \n cr \r",
            "\u{8}\u{c}\u{0}\u{1f}\u{7f} é 💡 \u{2028}",
        ];
        for s in samples {
            let written = serde_json::to_string(s).expect("serializes");
            let text = Text::from_canonical_json(literal(&written)).expect("canonical");
            assert_eq!(text.as_str(), s);
            assert_eq!(serde_json::to_string(&text).expect("serializes"), written);
        }
        let not_canonical =
            [r#""caf\u00e9""#, r#""a\/b""#, r#""\u001F""#, r#""\u000a""#, r#""\ud83d\udca1""#, "5", "null"];
        for s in not_canonical {
            assert!(Text::from_canonical_json(literal(s)).is_none(), "{s}");
        }
    }

    /// The escape-by-escape reading the vectorised search replaced.
    fn canonical_read_escape_by_escape(literal: &str) -> bool {
        let Some(mut rest) = literal.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else { return false };
        while let Some(at) = rest.find('\\') {
            let escape = &rest.as_bytes()[at + 1..];
            let len = match escape.first() {
                Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                Some(b'u') if escape.get(1..5).is_some_and(is_canonical_unicode_escape) => 6,
                _ => return false,
            };
            rest = &rest[at + len..];
        }
        true
    }

    #[test]
    fn the_escape_search_agrees_with_reading_escape_by_escape() {
        // Every string of up to four pieces, each a character or an escape
        // (canonical or not), so runs of backslashes meet `u` and `/` in
        // every parity.
        let pieces = [
            "a",
            "u",
            "/",
            "0",
            "\\\\",
            "\\/",
            "\\u",
            "\\n",
            "\\\"",
            "\\u0001",
            "\\u001f",
            "\\u001F",
            "\\u000a",
            "\\u0041",
            "\\u00e9",
            "\\ud83d\\udca1",
            "é",
        ];
        let mut literals = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> =
                literals.iter().flat_map(|l| pieces.iter().map(move |p| format!("{l}{p}"))).collect();
            literals.extend(longer);
            literals.dedup();
        }
        let mut canonical = 0;
        for body in &literals {
            let literal = format!("\"{body}\"");
            let Ok(raw) = RawValue::from_string(literal.clone()) else { continue };
            let expected = canonical_read_escape_by_escape(&literal);
            assert_eq!(is_canonical_string(raw.get()), expected, "{literal}");
            if expected {
                canonical += 1;
                let decoded: String = serde_json::from_str(&literal).expect("valid");
                assert_eq!(serde_json::to_string(&decoded).expect("serializes"), literal);
            }
        }
        assert!(canonical > 1000, "{canonical} canonical literals");
    }

    #[test]
    fn shared_text_behaves_as_a_string() {
        let read = Text::from_canonical_json(literal(r#""a\nb""#)).expect("canonical");
        let mut copy = read.clone();
        copy.push_str("c");
        assert_eq!(read, "a\nb");
        assert_eq!(copy, "a\nbc");
        assert_eq!(serde_json::to_string(&copy).expect("serializes"), r#""a\nbc""#);
        assert_eq!(serde_json::to_value(&read).expect("to value"), serde_json::json!("a\nb"));
        assert_eq!(read.clone().into_string(), "a\nb");
        assert_eq!(Text::from("x").into_string(), "x");
        assert_eq!(format!("{read:?}"), format!("{:?}", "a\nb"));
    }
}
