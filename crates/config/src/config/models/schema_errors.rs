//! pi's wording for a `models.json` that is JSON but not a valid one: the
//! path of the member at fault, dot-separated from the file's root
//! (`providers.fake.models.0.id`), and what it must be (`must be array`,
//! `must have required properties id`), as pi's schema check words it.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

/// Deserialize `value`, the member at `base` (`providers.fake`, empty for
/// the root); the error is `<path>: <what it must be>`.
pub(super) fn deserialize_at<T: DeserializeOwned>(value: Value, base: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let mut path = base.to_string();
        for segment in error.path().iter() {
            let name = match segment {
                Segment::Seq { index } => index.to_string(),
                Segment::Map { key } => key.clone(),
                Segment::Enum { variant } => variant.clone(),
                Segment::Unknown => continue,
            };
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&name);
        }
        describe(&path, &error.inner().to_string())
    })
}

/// serde's message about the member at `path` in pi's words (serde's own
/// when pi's schema check has no counterpart).
fn describe(path: &str, message: &str) -> String {
    if let Some(field) = message.strip_prefix("missing field `").and_then(|rest| rest.split('`').next()) {
        let at = if path.is_empty() { field.to_string() } else { format!("{path}.{field}") };
        return format!("{at}: must have required properties {field}");
    }
    let expected = message.split_once(", expected ").map(|(_, e)| e).unwrap_or_default();
    let must = if expected.starts_with("a sequence") {
        "must be array".to_string()
    } else if expected.starts_with("a string") {
        "must be string".to_string()
    } else if expected.starts_with("a boolean") {
        "must be boolean".to_string()
    } else if expected.starts_with("a map") || expected.starts_with("struct") {
        "must be object".to_string()
    } else if ["u64", "u32", "i64", "f64", "a number"].iter().any(|n| expected.starts_with(n)) {
        "must be number".to_string()
    } else {
        message.to_string()
    };
    format!("{}: {must}", if path.is_empty() { "root" } else { path })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)] // only deserialized
    struct Provider {
        models: Option<Vec<ModelEntry>>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)] // only deserialized
    struct ModelEntry {
        id: String,
        reasoning: Option<bool>,
    }

    #[test]
    fn the_member_at_fault_is_named_by_its_path_as_pi_names_it() {
        let at = |value| deserialize_at::<Provider>(value, "providers.fake").unwrap_err();
        assert_eq!(at(json!({"models": "nope"})), "providers.fake.models: must be array");
        assert_eq!(at(json!({"models": [{"id": 5}]})), "providers.fake.models.0.id: must be string");
        assert_eq!(at(json!({"models": [{}]})), "providers.fake.models.0.id: must have required properties id");
        assert_eq!(
            at(json!({"models": [{"id": "m", "reasoning": 1}]})),
            "providers.fake.models.0.reasoning: must be boolean"
        );
        assert_eq!(at(json!(5)), "providers.fake: must be object");
    }
}
