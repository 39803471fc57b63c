//! The `content` and `details` an extension returns for a tool result, an update or a hook, read into content blocks.

use serde_json::Value;

use crate::message::ContentBlock;

/// `content` (a string or content blocks) and `details` of a tool result or update.
pub(crate) fn parse_content(v: &Value) -> (Vec<ContentBlock>, Option<Value>) {
    let content = match v.get("content") {
        Some(Value::String(s)) => vec![ContentBlock::text(s.clone())],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => ContentBlock::text(s.clone()),
                other => {
                    serde_json::from_value(other.clone()).unwrap_or_else(|_| ContentBlock::text(other.to_string()))
                }
            })
            .collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![ContentBlock::text(other.to_string())],
    };
    let details = v.get("details").filter(|d| !d.is_null()).cloned();
    (content, details)
}

/// A result's `usage` (pi's `Usage`), when it has a readable one.
pub(crate) fn parse_usage(result: &Value) -> Option<crate::message::Usage> {
    result.get("usage").filter(|u| u.is_object()).and_then(|u| serde_json::from_value(u.clone()).ok())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_accepts_strings_and_blocks() {
        let (c, d) = parse_content(&json!({"content": "hi", "details": {"n": 1}}));
        assert_eq!(c, vec![ContentBlock::text("hi")]);
        assert_eq!(d, Some(json!({"n": 1})));
        let (c, d) = parse_content(&json!({"content": [{"type": "text", "text": "a"}, "b"]}));
        assert_eq!(c, vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(d, None);
    }
}
