//! JSON's optional whitespace taken out of a line, so that a session written
//! with spacing (`", "`, `": "`: Python's `json.dumps`, editors, scripts)
//! reads on the same fast path as pi's compact lines.
//!
//! Only whitespace next to a structural character (`{ } [ ] : ,`) or at either
//! end of the line is removed: that is the only place JSON allows it, so the
//! result is valid JSON exactly when the line is, and holds the same value
//! (whitespace between two other tokens, as in `tru e` or `1 2`, is kept, and
//! the line stays as invalid as it was). Strings are copied as they are.

/// The line without its optional whitespace, or `None` when it has none
/// (the line is already compact).
pub(crate) fn compact_json(line: &[u8]) -> Option<Vec<u8>> {
    let first = first_removable(line)?;
    let mut out = Vec::with_capacity(line.len());
    out.extend_from_slice(&line[..first]);
    let mut i = first;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i);
                out.extend_from_slice(&line[i..end]);
                i = end;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {
                let start = i;
                while i < line.len() && is_space(line[i]) {
                    i += 1;
                }
                let before = out.last().copied();
                let after = line.get(i).copied();
                let removable = before.is_none_or(is_structural) || after.is_none_or(is_structural);
                if !removable {
                    out.extend_from_slice(&line[start..i]);
                }
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Where the first removable whitespace is, when there is any.
fn first_removable(line: &[u8]) -> Option<usize> {
    let mut i = 0;
    let mut before: Option<u8> = None;
    while i < line.len() {
        match line[i] {
            b'"' => {
                i = string_end(line, i);
                before = Some(b'"');
            }
            b' ' | b'\t' | b'\r' | b'\n' => {
                let start = i;
                while i < line.len() && is_space(line[i]) {
                    i += 1;
                }
                if before.is_none_or(is_structural) || line.get(i).copied().is_none_or(is_structural) {
                    return Some(start);
                }
                before = Some(line[start.saturating_sub(1)]);
            }
            byte => {
                before = Some(byte);
                i += 1;
            }
        }
    }
    None
}

/// The index just past the string starting at `start` (its `"`), or the
/// end of the line for an unterminated string.
fn string_end(line: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(at) = memchr::memchr2(b'"', b'\\', &line[i..]) {
        let at = i + at;
        if line[at] == b'"' {
            return at + 1;
        }
        // An escape: the next byte is part of it, whatever it is.
        i = at + 2;
        if i >= line.len() {
            return line.len();
        }
    }
    line.len()
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_structural(byte: u8) -> bool {
    matches!(byte, b'{' | b'}' | b'[' | b']' | b':' | b',')
}

#[cfg(test)]
mod tests {
    use super::compact_json;
    use serde_json::Value;

    fn compact(text: &str) -> String {
        match compact_json(text.as_bytes()) {
            Some(bytes) => String::from_utf8(bytes).unwrap(),
            None => text.to_string(),
        }
    }

    #[test]
    fn spacing_outside_strings_goes_and_strings_stay() {
        let spaced =
            "  { \"type\": \"message\", \"a\" : [ 1 , 2.5, -3 ], \"s\": \"x, y: \\\" z \\\\\" ,\t\"n\": null }\r";
        let compacted = compact(spaced);
        assert_eq!(compacted, r#"{"type":"message","a":[1,2.5,-3],"s":"x, y: \" z \\","n":null}"#);
        let value: Value = serde_json::from_str(spaced).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&compacted).unwrap(), value);
        assert_eq!(compacted, serde_json::to_string(&value).unwrap());
        assert_eq!(compact_json(compacted.as_bytes()), None, "already compact");
        assert_eq!(compact_json(br#"{"a":"  spaces in a string  "}"#), None);
    }

    #[test]
    fn invalid_lines_stay_invalid() {
        for line in [r#"{"a": tru e}"#, r#"{"a": 1 2}"#, r#"{"a": "x" "y"}"#, r#"{"a": nu ll}"#, r#"{"a": - 1}"#] {
            assert!(serde_json::from_str::<Value>(line).is_err());
            assert!(serde_json::from_str::<Value>(&compact(line)).is_err(), "{line} -> {}", compact(line));
        }
        // Unterminated strings and trailing escapes are copied as they are.
        for line in [r#"{"a": "x"#, r#"{"a": "x\"#, r#"{ "a": "\"#] {
            assert!(serde_json::from_str::<Value>(&compact(line)).is_err(), "{line}");
        }
    }

    #[test]
    fn every_spacing_of_a_line_compacts_to_the_same_value() {
        let line = r#"{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"a, b: c \\ \" d"}],"timestamp":1}}"#;
        let value: Value = serde_json::from_str(line).unwrap();
        for space in [" ", "  ", "\t", " \r "] {
            // A space after every structural character outside the text.
            let spaced = line.replace("\":", &format!("\":{space}")).replace(",\"", &format!(",{space}\""));
            let spaced = spaced.replace('{', &format!("{{{space}")).replace('}', &format!("{space}}}"));
            assert_eq!(serde_json::from_str::<Value>(&spaced).unwrap(), value, "{spaced}");
            assert_eq!(compact(&spaced), serde_json::to_string(&value).unwrap(), "{spaced}");
        }
    }
}
