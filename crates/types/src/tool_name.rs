//! Tool names and `*` patterns, as `--exclude-tools`, the approval rules and
//! the MCP settings (`toolExposure`, `--tools mcp__…`) write them.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Tool names, or patterns where `*` stands for any text (pi's
/// `createToolNameMatcher`; no other character is special). Entries are
/// trimmed and empty ones ignored.
#[derive(Clone, Debug, Default)]
pub struct ToolNameMatcher {
    patterns: Wildcards,
}

impl ToolNameMatcher {
    pub fn new(entries: &[String]) -> Self {
        ToolNameMatcher { patterns: Wildcards::new(entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty())) }
    }

    pub fn matches(&self, name: &str) -> bool {
        self.patterns.matches(name)
    }
}

/// A set of `*` patterns, compiled once (globset), each against the whole
/// of a name: `*` is any run of characters (`/` included), every other
/// character stands for itself.
#[derive(Clone, Debug, Default)]
pub struct Wildcards {
    set: GlobSet,
}

impl Wildcards {
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Self {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            // Only `*` is special: escape the rest; a run of `*` is one `*`
            // (globset gives `**` a path meaning).
            let glob: Vec<String> = pattern.split('*').map(globset::escape).collect();
            let mut glob = glob.join("*");
            while glob.contains("**") {
                glob = glob.replace("**", "*");
            }
            match GlobBuilder::new(&glob).literal_separator(false).backslash_escape(false).build() {
                Ok(glob) => {
                    builder.add(glob);
                }
                // Not reachable with every meta-character escaped; a pattern
                // that still fails matches nothing.
                Err(e) => tracing::warn!("ignoring the tool pattern {pattern:?}: {e}"),
            }
        }
        Wildcards { set: builder.build().unwrap_or_default() }
    }

    pub fn matches(&self, name: &str) -> bool {
        self.set.is_match(name)
    }
}

/// `pattern` (`*` wildcards) against the whole of `text`.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    Wildcards::new([pattern]).matches(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The matcher these patterns had before globset: leftmost parts, the
    /// last one at the end. Kept to check globset against, case by case.
    fn by_hand(pattern: &str, name: &str) -> bool {
        let mut parts = pattern.split('*');
        let first = parts.next().unwrap_or_default();
        let Some(mut rest) = name.strip_prefix(first) else { return false };
        let parts: Vec<&str> = parts.collect();
        let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
        for part in middle {
            match rest.find(part) {
                Some(i) => rest = &rest[i + part.len()..],
                None => return false,
            }
        }
        rest.len() >= last.len() && rest.ends_with(last)
    }

    #[test]
    fn globset_matches_as_the_hand_written_matcher_did() {
        let patterns = [
            "",
            "*",
            "**",
            "***",
            "a",
            "a*",
            "*a",
            "*a*",
            "a*a",
            "a**b",
            "mcp__*",
            "*__b",
            "mcp__*__b*",
            "mcp__x*",
            "exact",
            "[ls]",
            "l?",
            "{a,b}",
            "a\\*",
            "\\",
            "a/b*",
            "*/*",
            "é*ü",
            "a*b*c",
            "ab*bc",
            "a*bc*c",
            "!x",
        ];
        let names = [
            "",
            "a",
            "aa",
            "ab",
            "abc",
            "abcc",
            "abbc",
            "b",
            "mcp__a__b",
            "mcp__a__bc",
            "mcp__a",
            "exact",
            "exactly",
            "[ls]",
            "l",
            "ls",
            "l?",
            "lx",
            "{a,b}",
            "a\\b",
            "a\\",
            "\\",
            "a/b",
            "a/bc",
            "x/y",
            "éaü",
            "éü",
            "!x",
            "*",
        ];
        for p in patterns {
            for n in names {
                assert_eq!(wildcard_match(p, n), by_hand(p, n), "pattern {p:?} against {n:?}");
            }
        }
    }

    /// Every word of up to four characters over `a b * ? \\ /` as a
    /// pattern, against every word of up to four over `a b ? \\ /`.
    #[test]
    fn globset_matches_as_the_hand_written_matcher_did_on_every_short_word() {
        fn words(alphabet: &[char], max: usize) -> Vec<String> {
            let mut all = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..max {
                last = last.iter().flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}"))).collect();
                all.extend(last.iter().cloned());
            }
            all
        }
        let names = words(&['a', 'b', '?', '\\', '/'], 4);
        for p in words(&['a', 'b', '*', '?', '\\', '/'], 4) {
            let compiled = Wildcards::new([p.as_str()]);
            for n in &names {
                assert_eq!(compiled.matches(n), by_hand(&p, n), "pattern {p:?} against {n:?}");
            }
        }
    }

    #[test]
    fn a_matcher_trims_and_skips_empty_entries() {
        let m = ToolNameMatcher::new(&[" bash ".into(), "".into(), "gr*".into()]);
        assert!(m.matches("bash") && m.matches("grep") && !m.matches("") && !m.matches("read"));
        assert!(!ToolNameMatcher::default().matches("bash"));
    }
}
