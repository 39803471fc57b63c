//! The message of V8's `JSON.parse` error (node 22) for a text that is not
//! JSON, for the places pi 1.6.0 reports that message as it is (an
//! `mcp.json` that is not JSON): positions and columns count UTF-16 units,
//! as JavaScript strings do.

/// Why parsing stopped: a message of its own, or the character at the
/// position is not what may come there (V8 names it by its kind).
enum Fail {
    At(&'static str),
    Unexpected,
}

/// V8's message for `text`, or `None` when `text` is JSON.
pub fn json_parse_error(text: &str) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut parser = Parser { s: &units, pos: 0 };
    let fail = parser.document().err()?;
    Some(parser.message(fail))
}

/// What holds the values being read (V8's continuation stack).
enum Frame {
    Object,
    Array,
}

struct Parser<'a> {
    s: &'a [u16],
    pos: usize,
}

const fn unit(c: char) -> u16 {
    c as u16
}

impl Parser<'_> {
    fn peek(&self) -> Option<u16> {
        self.s.get(self.pos).copied()
    }

    fn is(&self, c: char) -> bool {
        self.peek() == Some(unit(c))
    }

    fn digit(&self) -> bool {
        self.peek().is_some_and(|c| (unit('0')..=unit('9')).contains(&c))
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(c) if [' ', '\t', '\n', '\r'].iter().any(|w| unit(*w) == c)) {
            self.pos += 1;
        }
    }

    /// One JSON text: a value, then nothing but whitespace.
    fn document(&mut self) -> Result<(), Fail> {
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            // An opened container wants its first value at once.
            if self.value(&mut stack)? {
                continue;
            }
            // A value was read: what may follow it.
            loop {
                self.skip_whitespace();
                match stack.last() {
                    None if self.pos < self.s.len() => {
                        return Err(Fail::At("Unexpected non-whitespace character after JSON"));
                    }
                    None => return Ok(()),
                    Some(Frame::Object) if self.is(',') => {
                        self.pos += 1;
                        self.property_name("Expected double-quoted property name")?;
                        break;
                    }
                    Some(Frame::Array) if self.is(',') => {
                        self.pos += 1;
                        break;
                    }
                    Some(Frame::Object) if self.is('}') => {
                        self.pos += 1;
                        stack.pop();
                    }
                    Some(Frame::Array) if self.is(']') => {
                        self.pos += 1;
                        stack.pop();
                    }
                    Some(Frame::Object) => return Err(Fail::At("Expected ',' or '}' after property value")),
                    Some(Frame::Array) => return Err(Fail::At("Expected ',' or ']' after array element")),
                }
            }
        }
    }

    /// One value; `true` when it opened a container, whose first value comes next.
    fn value(&mut self, stack: &mut Vec<Frame>) -> Result<bool, Fail> {
        self.skip_whitespace();
        let Some(c) = self.peek() else { return Err(Fail::Unexpected) };
        match char::from_u32(u32::from(c)) {
            Some('"') => self.string()?,
            Some('-' | '0'..='9') => self.number()?,
            Some('{') => {
                self.pos += 1;
                self.skip_whitespace();
                if !self.is('}') {
                    stack.push(Frame::Object);
                    self.property_name("Expected property name or '}'")?;
                    return Ok(true);
                }
                self.pos += 1;
            }
            Some('[') => {
                self.pos += 1;
                self.skip_whitespace();
                if !self.is(']') {
                    stack.push(Frame::Array);
                    return Ok(true);
                }
                self.pos += 1;
            }
            Some('t') => self.literal("true")?,
            Some('f') => self.literal("false")?,
            Some('n') => self.literal("null")?,
            _ => return Err(Fail::Unexpected),
        }
        Ok(false)
    }

    /// A property's name and its colon (`missing`: the message when no name comes).
    fn property_name(&mut self, missing: &'static str) -> Result<(), Fail> {
        self.skip_whitespace();
        if !self.is('"') {
            return Err(Fail::At(missing));
        }
        self.string()?;
        self.skip_whitespace();
        if !self.is(':') {
            return Err(Fail::At("Expected ':' after property name"));
        }
        self.pos += 1;
        Ok(())
    }

    fn string(&mut self) -> Result<(), Fail> {
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else { return Err(Fail::At("Unterminated string")) };
            if c == unit('"') {
                self.pos += 1;
                return Ok(());
            }
            if c < 0x20 {
                return Err(Fail::At("Bad control character in string literal"));
            }
            self.pos += 1;
            if c != unit('\\') {
                continue;
            }
            let Some(escaped) = self.peek() else { return Err(Fail::At("Unterminated string")) };
            if escaped == unit('u') {
                self.pos += 1;
                for _ in 0..4 {
                    if !self.peek().is_some_and(|h| char::from_u32(u32::from(h)).is_some_and(|h| h.is_ascii_hexdigit()))
                    {
                        return Err(Fail::At("Bad Unicode escape"));
                    }
                    self.pos += 1;
                }
            } else if ['"', '\\', '/', 'b', 'f', 'n', 'r', 't'].iter().any(|e| unit(*e) == escaped) {
                self.pos += 1;
            } else {
                return Err(Fail::At("Bad escaped character"));
            }
        }
    }

    fn number(&mut self) -> Result<(), Fail> {
        if self.is('-') {
            self.pos += 1;
            if !self.digit() {
                return Err(Fail::At("No number after minus sign"));
            }
        }
        if self.is('0') {
            self.pos += 1;
            if self.digit() {
                return Err(Fail::Unexpected);
            }
        } else {
            self.digits();
        }
        if self.is('.') {
            self.pos += 1;
            if !self.digit() {
                return Err(Fail::At("Unterminated fractional number"));
            }
            self.digits();
        }
        if self.is('e') || self.is('E') {
            self.pos += 1;
            if self.is('+') || self.is('-') {
                self.pos += 1;
            }
            if !self.digit() {
                return Err(Fail::At("Exponent part is missing a number"));
            }
            self.digits();
        }
        Ok(())
    }

    fn digits(&mut self) {
        while self.digit() {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), Fail> {
        for c in word.chars() {
            if !self.is(c) {
                return Err(Fail::Unexpected);
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// The error's message, as V8 words it.
    fn message(&self, fail: Fail) -> String {
        let at = |what: &str| {
            let (line, column) = self.line_and_column();
            // V8's one message that names JSON itself.
            let place = if what.ends_with("after JSON") { "" } else { " in JSON" };
            format!("{what}{place} at position {} (line {line} column {column})", self.pos)
        };
        let Some(c) = self.peek() else {
            return match fail {
                Fail::At(what) => at(what),
                Fail::Unexpected => "Unexpected end of JSON input".to_string(),
            };
        };
        match fail {
            Fail::At(what) => at(what),
            Fail::Unexpected if c == unit('"') => at("Unexpected string"),
            Fail::Unexpected if c == unit('-') || (unit('0')..=unit('9')).contains(&c) => at("Unexpected number"),
            Fail::Unexpected => self.unexpected_token(c),
        }
    }

    /// `Unexpected token 'x', "…" is not valid JSON`, with the text around
    /// the position when the text is long.
    fn unexpected_token(&self, c: u16) -> String {
        const CONTEXT: usize = 10;
        let text = |from: usize, to: usize| String::from_utf16_lossy(&self.s[from..to.min(self.s.len())]);
        let whole = text(0, self.s.len());
        if ["NaN", "Infinity", "undefined", "[object Object]"].contains(&whole.as_str()) {
            return format!("\"{whole}\" is not valid JSON");
        }
        let token = String::from_utf16_lossy(&[c]);
        let (pos, len) = (self.pos, self.s.len());
        let context = if len <= CONTEXT * 2 + 1 {
            format!("\"{whole}\"")
        } else if pos < CONTEXT {
            format!("\"{}\"...", text(0, pos + CONTEXT))
        } else if pos < len - CONTEXT {
            format!("...\"{}\"...", text(pos - CONTEXT, pos + CONTEXT))
        } else {
            format!("...\"{}\"", text(pos - CONTEXT, len))
        };
        format!("Unexpected token '{token}', {context} is not valid JSON")
    }

    /// The 1-based line and column of the position (`\r\n`, `\r` and `\n` end lines).
    fn line_and_column(&self) -> (usize, usize) {
        let (mut line, mut line_start, mut i) = (1, 0, 0);
        while i < self.pos {
            if self.s[i] == unit('\r') && i + 1 < self.pos && self.s[i + 1] == unit('\n') {
                i += 1;
            }
            if self.s[i] == unit('\r') || self.s[i] == unit('\n') {
                line += 1;
                line_start = i + 1;
            }
            i += 1;
        }
        (line, 1 + self.pos - line_start)
    }
}

#[cfg(test)]
mod tests {
    use super::json_parse_error;

    /// Messages node 22's `JSON.parse` gives for these texts.
    #[test]
    fn the_messages_are_v8s() {
        let cases = [
            ("", "Unexpected end of JSON input"),
            ("{", "Expected property name or '}' in JSON at position 1 (line 1 column 2)"),
            ("{\"a\":1", "Expected ',' or '}' after property value in JSON at position 6 (line 1 column 7)"),
            ("{\"a\" 1}", "Expected ':' after property name in JSON at position 5 (line 1 column 6)"),
            ("[1 2]", "Expected ',' or ']' after array element in JSON at position 3 (line 1 column 4)"),
            ("{\"a\":1,\n \"b\"}", "Expected ':' after property name in JSON at position 12 (line 2 column 5)"),
            ("tru", "Unexpected end of JSON input"),
            ("trux", "Unexpected token 'x', \"trux\" is not valid JSON"),
            ("{\"mcpServers\": {\"a\": x}}", "Unexpected token 'x', ...\"s\": {\"a\": x}}\" is not valid JSON"),
            ("\"abc", "Unterminated string in JSON at position 4 (line 1 column 5)"),
            ("\"a\u{1}\"", "Bad control character in string literal in JSON at position 2 (line 1 column 3)"),
            ("\"\\x\"", "Bad escaped character in JSON at position 2 (line 1 column 3)"),
            ("\"\\u12G4\"", "Bad Unicode escape in JSON at position 5 (line 1 column 6)"),
            ("-", "No number after minus sign in JSON at position 1 (line 1 column 2)"),
            ("[-01]", "Unexpected number in JSON at position 3 (line 1 column 4)"),
            ("[1.e]", "Unterminated fractional number in JSON at position 3 (line 1 column 4)"),
            ("[1e+]", "Exponent part is missing a number in JSON at position 4 (line 1 column 5)"),
            ("undefined", "\"undefined\" is not valid JSON"),
            ("{\"a\":1}}", "Unexpected non-whitespace character after JSON at position 7 (line 1 column 8)"),
            ("{\"é\": ü}", "Unexpected token 'ü', \"{\"é\": ü}\" is not valid JSON"),
            ("[\"😀\" 1]", "Expected ',' or ']' after array element in JSON at position 6 (line 1 column 7)"),
            (
                "{\r\n\"a\": 1\r\n\"b\"}",
                "Expected ',' or '}' after property value in JSON at position 11 (line 3 column 1)",
            ),
            ("{\r\"a\": 1\r\"b\"}", "Expected ',' or '}' after property value in JSON at position 9 (line 3 column 1)"),
            (
                "[1,2,3,4,5,6,7,8,9,x,1,2,3,4,5,6,7,8,9]",
                "Unexpected token 'x', ...\"5,6,7,8,9,x,1,2,3,4,\"... is not valid JSON",
            ),
            ("{\"a\":1 ,\"b\":2 , }", "Expected double-quoted property name in JSON at position 16 (line 1 column 17)"),
            ("{\"a\":", "Unexpected end of JSON input"),
            ("{\"a\"", "Expected ':' after property name in JSON at position 4 (line 1 column 5)"),
            ("[nul]", "Unexpected token ']', \"[nul]\" is not valid JSON"),
        ];
        for (text, message) in cases {
            assert_eq!(json_parse_error(text).as_deref(), Some(message), "{text:?}");
        }
        for json in ["\t{}\t\n", "[1.5e3, -0, \"\\u00e9\\n\\/\", true, false, null]", "{\"a\": {\"b\": []}}"] {
            assert_eq!(json_parse_error(json), None, "{json:?}");
        }
    }
}
