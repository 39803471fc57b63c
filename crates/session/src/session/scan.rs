//! A quick look at one session line: is it certainly a JSON object that
//! `serde_json` reads, and what are its `type`, `id`, `parentId` and (for a
//! `message`) the message's `role`? That is all an entry's place in the tree
//! needs, so the body of a message is read from the file only when it is
//! needed (see `slot`).
//!
//! The check is a validating skip over the line. Strings are scanned 64
//! bytes at a time without stopping at each escape (a pi session line has
//! one every 20 bytes or so): vector compares give a bit per `"`, `\` and
//! control byte of the block, the bytes escaped by a backslash are worked
//! out from the backslash bits with a few integer operations (runs of
//! backslashes included), so the string's end is the first quote not
//! escaped; then only the escaped bytes are looked at, to check that each
//! escape is one JSON has. It only ever answers "certainly valid"
//! ([`scan_line`] gives `Some`); whatever it is not sure of (escaped keys,
//! surrogate escapes, exponents, control characters, deep nesting, a
//! repeated key it reads) gets `None`, and the line is read the careful way,
//! which decides.

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

/// Bits of one 64-byte block (bit `k` for byte `k`): its quotes,
/// backslashes and control bytes (below 0x20), and the codes of the
/// escapes pi's text is full of (`\"`, `\\`, `\n`, `\t`): escapes with
/// another code are looked at one by one.
struct Block {
    quote: u64,
    backslash: u64,
    control: u64,
    common_code: u64,
}

impl Block {
    fn of(bytes: &[u8; 64]) -> Block {
        let mut block = Block { quote: 0, backslash: 0, control: 0, common_code: 0 };
        let (chunks, _) = bytes.as_chunks::<16>();
        for (k, chunk) in chunks.iter().enumerate() {
            let v = u8x16::from(*chunk);
            let bits = |m: u8x16| u64::from(m.to_bitmask()) << (16 * k);
            let quote = v.simd_eq(u8x16::splat(b'"'));
            let backslash = v.simd_eq(u8x16::splat(b'\\'));
            let common_code = quote | backslash | v.simd_eq(u8x16::splat(b'n')) | v.simd_eq(u8x16::splat(b't'));
            block.quote |= bits(quote);
            block.backslash |= bits(backslash);
            block.common_code |= bits(common_code);
            block.control |= bits(v.min(u8x16::splat(0x1f)).simd_eq(v));
        }
        block
    }
}

/// Every other bit, from bit 0.
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// The bytes of a block escaped by a backslash (the byte after a backslash
/// that is not itself escaped), from its `backslash` bits. `carry` says
/// whether the block's first byte is escaped (the last block ended with an
/// escaping backslash) and is set for the next block. A run of backslashes
/// escapes every other byte from its start, so whether the byte after the
/// run is escaped depends on the run's length: the runs starting on odd
/// bits are told from those on even bits by an addition that carries
/// through each run.
fn escaped_bytes(backslash: u64, carry: &mut u64) -> u64 {
    let backslash = backslash & !*carry;
    let follows_escape = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN_BITS & !follows_escape;
    let (even_runs, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    (EVEN_BITS ^ (even_runs << 1)) & follows_escape
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
            let key = self.plain_bytes()?;
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
        std::str::from_utf8(self.plain_bytes()?).ok()
    }

    /// The bytes of a string without escapes, else `None`. Keys are only
    /// compared with the few this scan reads, so they are not checked for
    /// UTF-8 (nor is any other string here: the careful reading decodes
    /// invalid UTF-8 as U+FFFD, as node does).
    fn plain_bytes(&mut self) -> Option<&'a [u8]> {
        let start = self.i + 1;
        let escaped = self.string()?;
        if escaped {
            return None;
        }
        self.b.get(start..self.i - 1)
    }

    /// Skip a string (at its `"`); whether it held escapes.
    fn string(&mut self) -> Option<bool> {
        self.eat(b'"')?;
        let mut escaped = false;
        let mut carry = 0;
        // A block of 64 bytes at a time while 64 are left.
        while let Some(bytes) = self.b.get(self.i..).and_then(|rest| rest.first_chunk::<64>()) {
            let block = Block::of(bytes);
            let escapes = escaped_bytes(block.backslash, &mut carry);
            let ends = block.quote & !escapes;
            // The bytes of the string in this block: those before its end.
            let inside = match ends {
                0 => u64::MAX,
                ends => (ends & ends.wrapping_neg()) - 1,
            };
            if block.control & inside != 0 {
                return None; // a raw control character is not valid JSON text
            }
            let codes = escapes & inside;
            escaped |= codes != 0;
            let mut others = codes & !block.common_code;
            while others != 0 {
                let at = self.i + others.trailing_zeros() as usize;
                others &= others - 1;
                match bytes[at - self.i] {
                    b'/' | b'b' | b'f' | b'r' => {}
                    _ => self.unicode_escape(at - 1)?,
                }
            }
            if ends != 0 {
                self.i += ends.trailing_zeros() as usize + 1;
                return Some(escaped);
            }
            self.i += 64;
        }
        // The last bytes one at a time, from the backslash when the last
        // block ended in the middle of an escape.
        self.i -= carry as usize;
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
                    _ => {
                        self.unicode_escape(self.i)?;
                        self.i += 6;
                    }
                }
                Some(false)
            }
            _ => None,
        }
    }

    /// Check the `\u` escape whose `\` is at `at`; anything else after a
    /// `\` is not JSON. `\u` escapes of surrogates are left to the careful
    /// reading.
    #[cold]
    #[inline(never)]
    fn unicode_escape(&self, at: usize) -> Option<()> {
        match *self.b.get(at + 1)? {
            b'u' => {
                let hex = std::str::from_utf8(self.b.get(at + 2..at + 6)?).ok()?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let code = u32::from_str_radix(hex, 16).ok()?;
                if (0xD800..=0xDFFF).contains(&code) {
                    return None;
                }
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
        // 64-byte block (and across two), after an escape and before the end.
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
            // Every offset of a 64-byte block, and across two.
            for pad in 0..140 {
                for tail in ["", "z", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"] {
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

    #[test]
    fn runs_of_backslashes_and_quotes_are_read_as_serde_reads_them() {
        // Strings of escapes and a few kinds of bytes, so that runs of
        // backslashes of every length, escaped quotes and escapes fall at every
        // place of a block and across blocks; now and then a token that is not
        // valid JSON text (a raw quote or control byte, a bad escape).
        let valid: &[&str] = &["\\\\", "\\\\", "\\\\", "\\\"", "\\n", "\\/", "\\u00e9", "a", "n", "u", "é", " "];
        let invalid: &[&str] = &["\"", "\\q", "\u{1}", "\\u12", "\\ud800"];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..20_000 {
            let tokens = next(120);
            let text: String = (0..tokens)
                .map(|_| match next(250) {
                    0 => invalid[next(invalid.len())],
                    _ => valid[next(valid.len())],
                })
                .collect();
            let line = format!(r#"{{"type":"custom","id":"a","x":"{text}","y":"{text}"}}"#);
            let serde_reads = serde_json::from_str::<serde_json::Value>(&line).is_ok();
            let scanned = head(&line).is_some();
            // The scan never accepts what serde refuses; it doubts only surrogate escapes.
            assert!(!scanned || serde_reads, "{line:?}");
            if !text.contains("\\ud800") {
                assert_eq!(scanned, serde_reads, "{line:?}");
            }
            if scanned {
                accepted += 1;
            } else {
                refused += 1;
            }
        }
        assert!(accepted > 1_000 && refused > 1_000, "{accepted} accepted, {refused} refused");
    }
}
