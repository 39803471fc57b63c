//! A quick look at one session line: is it certainly a JSON object that
//! `serde_json` reads, and what are its `type`, `id`, `parentId` and (for a
//! `message`) the message's `role`? That is all an entry's place in the tree
//! needs, so the body of a message is read from the file only when it is
//! needed (see `slot`).
//!
//! The check is a validating skip over the line, strings scanned sixteen
//! bytes at a time: one vector compare finds every `"`, `\` and control
//! byte of the sixteen, and the stops are then taken from that mask (a pi
//! session line stops every 20 bytes or so, mostly at escapes). It only ever answers "certainly valid" ([`scan_line`] gives
//! `Some`); whatever it is not sure of (escaped keys, surrogate escapes,
//! exponents, control characters, deep nesting, a repeated key it reads) gets
//! `None`, and the line is read the careful way, which decides.

use wide::u8x16;

/// What a line holds, for an entry whose body is read later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineHead<'a> {
    /// The `type` field.
    pub(crate) kind: &'a str,
    /// The `id` field (a string, or absent).
    pub(crate) id: Option<&'a str>,
    /// The `parentId` field (a string, or null/absent).
    pub(crate) parent: Option<&'a str>,
    /// The `role` of the `message` object, when there is one.
    pub(crate) role: Option<&'a str>,
}

/// Nesting deeper than this is left to the careful reading (serde_json's
/// own limit is 128).
const MAX_DEPTH: u32 = 100;

/// The head of `line` when it is certainly one valid JSON object whose
/// captured fields have the expected types; `None` when unsure.
pub(crate) fn scan_line(line: &[u8]) -> Option<LineHead<'_>> {
    let mut scan = Scan { b: line, i: 0, depth: 0 };
    scan.ws();
    if scan.peek()? != b'{' {
        return None;
    }
    let head = scan.top_object()?;
    scan.ws();
    (scan.i == line.len()).then_some(head)
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
}

/// The stops of a string scan among 16 bytes: a bit per `"`, `\\` or
/// control byte (below 0x20), lowest byte first.
fn stops(chunk: [u8; 16]) -> u32 {
    let bytes = u8x16::from(chunk);
    let quote = bytes.simd_eq(u8x16::splat(b'"'));
    let backslash = bytes.simd_eq(u8x16::splat(b'\\'));
    let control = bytes.min(u8x16::splat(0x1f)).simd_eq(bytes);
    (quote | backslash | control).to_bitmask()
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.i += 1)
    }

    /// The top-level object, capturing the head fields.
    fn top_object(&mut self) -> Option<LineHead<'a>> {
        self.enter()?;
        let mut head = LineHead { kind: "", id: None, parent: None, role: None };
        let (mut kind, mut id, mut parent, mut message) = (false, false, false, false);
        self.members(|scan, key| {
            match key {
                b"type" => {
                    once(&mut kind)?;
                    head.kind = scan.plain_string()?;
                }
                b"id" => {
                    once(&mut id)?;
                    head.id = Some(scan.plain_string()?);
                }
                b"parentId" => {
                    once(&mut parent)?;
                    head.parent = match scan.peek()? {
                        b'n' => scan.literal(b"null").map(|_| None)?,
                        _ => Some(scan.plain_string()?),
                    };
                }
                b"message" => {
                    once(&mut message)?;
                    match scan.peek()? {
                        b'{' => head.role = scan.message_object()?,
                        _ => scan.value()?,
                    }
                }
                _ => scan.value()?,
            }
            Some(())
        })?;
        kind.then_some(head)
    }

    /// A message object, capturing its `role`.
    fn message_object(&mut self) -> Option<Option<&'a str>> {
        self.enter()?;
        let (mut role, mut seen) = (None, false);
        self.members(|scan, key| {
            if key == b"role" {
                once(&mut seen)?;
                role = Some(scan.plain_string()?);
            } else {
                scan.value()?;
            }
            Some(())
        })?;
        Some(role)
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// The members of an object (at its `{`), each key handed to `member`
    /// with the scan at the value. Keys with escapes are left to the careful reading.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            self.depth -= 1;
            return Some(());
        }
        loop {
            let key = self.plain_string()?.as_bytes();
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => {
                self.enter()?;
                self.members(|scan, _| scan.value())
            }
            b'[' => self.array(),
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn array(&mut self) -> Option<()> {
        self.enter()?;
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_none() {
            loop {
                self.value()?;
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.ws();
                    }
                    b']' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A number of JSON's grammar; exponents and very long numbers are left
    /// to the careful reading (they can be out of range there).
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            let at = self.i;
            self.digits();
            if self.i == at {
                return None;
            }
        }
        match self.peek() {
            Some(b'e' | b'E') => None,
            _ => (self.i - start <= 300).then_some(()),
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }

    /// A string without escapes (its text), else `None`.
    fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.i + 1;
        let escaped = self.string()?;
        if escaped {
            return None;
        }
        std::str::from_utf8(&self.b[start..self.i - 1]).ok()
    }

    /// Skip a string (at its `"`); whether it held escapes.
    fn string(&mut self) -> Option<bool> {
        self.eat(b'"')?;
        let mut escaped = false;
        // Sixteen bytes at a time while sixteen are left.
        while let Some(chunk) = self.b.get(self.i..self.i + 16).and_then(|c| <[u8; 16]>::try_from(c).ok()) {
            let start = self.i;
            let mut mask = stops(chunk);
            while mask != 0 {
                let at = start + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if at < self.i {
                    continue; // the second byte of an escape already taken
                }
                self.i = at;
                if self.string_stop(&mut escaped)? {
                    return Some(escaped);
                }
            }
            self.i = self.i.max(start + 16);
        }
        // The last few bytes one at a time.
        loop {
            match self.peek()? {
                b'"' | b'\\' | 0..0x20 => {
                    if self.string_stop(&mut escaped)? {
                        return Some(escaped);
                    }
                }
                _ => self.i += 1,
            }
        }
    }

    /// At a stop of a string scan: a `"` ends the string (`true`), an escape
    /// is taken (`false`, `escaped` set); a raw control character is not
    /// valid JSON text (`None`).
    #[inline]
    fn string_stop(&mut self, escaped: &mut bool) -> Option<bool> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                Some(true)
            }
            b'\\' => {
                *escaped = true;
                // The two-byte escapes (most of them: `\n`, `\"`, `\\`) here, `\u` apart.
                match self.b.get(self.i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 2,
                    _ => self.unicode_escape()?,
                }
                Some(false)
            }
            _ => None,
        }
    }

    /// A `\u` escape (at its `\`); anything else after a `\` is not JSON. `\u`
    /// escapes of surrogates are left to the careful reading.
    #[cold]
    #[inline(never)]
    fn unicode_escape(&mut self) -> Option<()> {
        match *self.b.get(self.i + 1)? {
            b'u' => {
                let hex = std::str::from_utf8(self.b.get(self.i + 2..self.i + 6)?).ok()?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let code = u32::from_str_radix(hex, 16).ok()?;
                if (0xD800..=0xDFFF).contains(&code) {
                    return None;
                }
                self.i += 6;
                Some(())
            }
            _ => None,
        }
    }
}

/// Mark a captured key as seen; a second time is left to the careful reading.
fn once(seen: &mut bool) -> Option<()> {
    (!std::mem::replace(seen, true)).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(line: &str) -> Option<LineHead<'_>> {
        scan_line(line.as_bytes())
    }

    #[test]
    fn heads_of_plain_and_spaced_lines() {
        let plain = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"x\"\\\n\t\u00e9 é"}],"timestamp":1}}"#;
        assert_eq!(head(plain), Some(LineHead { kind: "message", id: Some("a1"), parent: None, role: Some("user") }));
        let spaced = r#"{ "type": "message", "id": "b", "parentId": "a1", "message": { "content": [], "role": "assistant", "n": -1.5 } }"#;
        assert_eq!(
            head(spaced),
            Some(LineHead { kind: "message", id: Some("b"), parent: Some("a1"), role: Some("assistant") })
        );
        assert_eq!(head(r#"{"type":"custom","id":"c","data":[1,true,false,null,{}]}"#).map(|h| h.role), Some(None));
    }

    #[test]
    fn every_line_serde_refuses_or_doubts_is_left_to_the_careful_reading() {
        for line in [
            r#"{"type":"message","id":"a","message":{"role":"user","content":"x"#,
            r#"{"type":"message","id":"a"} trailing"#,
            r#"{"type":"message","id":"a",}"#,
            r#"{"type":"message","id":"a","x":01}"#,
            r#"{"type":"message","id":"a","x":1e5}"#,
            r#"{"type":"message","id":"a","x":1.}"#,
            r#"{"type":"message","id":"a","x":"\ud800"}"#,
            r#"{"type":"message","id":"a","x":"\q"}"#,
            "{\"type\":\"message\",\"id\":\"a\",\"x\":\"\t\"}",
            r#"{"type":"message","type":"custom","id":"a"}"#,
            r#"{"\u0074ype":"message","id":"a"}"#,
            r#"{"type":"message","id":7}"#,
            r#"{"type":"message","id":"a","parentId":3}"#,
            r#"{"id":"a"}"#,
            r#"[1]"#,
            r#"{"type":"message","id":"a","x":tru}"#,
        ] {
            assert_eq!(head(line), None, "{line}");
        }
        let deep = format!(r#"{{"type":"custom","id":"a","d":{}{}}}"#, "[".repeat(150), "]".repeat(150));
        assert_eq!(head(&deep), None);
    }

    #[test]
    fn lines_it_accepts_are_lines_serde_reads() {
        // Control bytes, quotes and escapes at every offset of the 16-byte
        // scan, escapes across a chunk's end, and the bytewise tail.
        for pad in 0..40 {
            let text = format!("{}\\\"é\\\\\\u001b", "a".repeat(pad));
            let line = format!(r#"{{"type":"message","id":"a","message":{{"role":"user","content":"{text}"}}}}"#);
            assert!(head(&line).is_some(), "{line}");
            assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
            let raw_control = format!("{{\"type\":\"message\",\"id\":\"a\",\"x\":\"{}\u{1}\"}}", "a".repeat(pad));
            assert_eq!(head(&raw_control), None);
        }
    }

    #[test]
    fn the_vector_scan_agrees_with_serde_at_every_offset() {
        // Valid and invalid string bodies, each placed at every offset of a
        // 16-byte chunk (and across two), after an escape and before the end.
        let bodies = [
            r#"\""#,
            r#"\\"#,
            r#"\/"#,
            r#"\n\t"#,
            r#"\u00e9"#,
            r#"\u20AC\""#,
            "é→日本",
            r#"\\\""#,
            "\u{1}",
            "\u{1f}",
            "\t",
            r#"\n"#,
            r#"\x"#,
            r#"\u12"#,
            r#"\u12g4"#,
            r#"\"#,
            r#"a\\\"b\u0041"#,
        ];
        for body in bodies {
            for pad in 0..36 {
                for tail in ["", "z", "0123456789abcdef0"] {
                    let text = format!("{}{body}{tail}", "a".repeat(pad));
                    // In a string with 16 more bytes after it (the vector scan), and
                    // as the line's last string (the bytewise tail).
                    for line in [
                        format!(r#"{{"type":"custom","id":"a","x":"{text}","fill":"0123456789abcdef"}}"#),
                        format!(r#"{{"type":"custom","id":"a","x":"{text}"}}"#),
                    ] {
                        let serde_reads = serde_json::from_str::<serde_json::Value>(&line).is_ok();
                        assert_eq!(head(&line).is_some(), serde_reads, "{line:?}");
                    }
                }
            }
        }
    }
}
