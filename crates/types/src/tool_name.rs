//! Tool names and `*` patterns, as `--exclude-tools` and the approval rules
//! write them.

/// Tool names, or patterns where `*` stands for any text (pi's
/// `createToolNameMatcher`; no other character is special).
#[derive(Clone, Debug, Default)]
pub struct ToolNameMatcher {
    entries: Vec<String>,
}

impl ToolNameMatcher {
    pub fn new(entries: &[String]) -> Self {
        ToolNameMatcher { entries: entries.iter().map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect() }
    }

    pub fn matches(&self, name: &str) -> bool {
        self.entries.iter().any(|e| wildcard_match(e, name))
    }
}

/// `pattern` with `*` wildcards against the whole of `name`.
fn wildcard_match(pattern: &str, name: &str) -> bool {
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
