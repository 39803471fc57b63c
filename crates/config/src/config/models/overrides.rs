//! How `models.json` layers over a model: pi's `mergeCompat` of `compat`
//! objects and a `modelOverrides` entry's field-by-field patch.

use serde_json::{Map, Value};

use crate::model::Model;

/// pi's `mergeCompat`: fields of `top` win; the routing and chat-template
/// objects merge key by key.
pub(super) fn merge_compat(
    base: Option<Map<String, Value>>,
    top: Option<Map<String, Value>>,
) -> Option<Map<String, Value>> {
    match (base, top) {
        (None, None) => None,
        (Some(b), None) => Some(b),
        (None, Some(t)) => Some(t),
        (Some(mut b), Some(t)) => {
            for (key, value) in t {
                let nested = ["openRouterRouting", "vercelGatewayRouting", "chatTemplateKwargs", "chatTemplateArgs"]
                    .contains(&key.as_str());
                match (b.get_mut(&key), value) {
                    (Some(Value::Object(existing)), Value::Object(incoming)) if nested => existing.extend(incoming),
                    (_, value) => {
                        b.insert(key, value);
                    }
                }
            }
            Some(b)
        }
    }
}

/// Apply a `modelOverrides` entry: object fields merge field by field, others replace.
/// pi's `mergeInputLimits`: the override's fields over the model's, its
/// `images` over theirs, and `images.resize` field by field.
fn merge_input_limits(existing: &mut Map<String, Value>, incoming: Map<String, Value>) {
    for (key, value) in incoming {
        match (existing.get_mut(&key), value) {
            (Some(Value::Object(images)), Value::Object(new_images)) if key == "images" => {
                for (field, value) in new_images {
                    match (images.get_mut(&field), value) {
                        (Some(Value::Object(resize)), Value::Object(new_resize)) if field == "resize" => {
                            resize.extend(new_resize)
                        }
                        (_, value) => {
                            images.insert(field, value);
                        }
                    }
                }
            }
            (_, value) => {
                existing.insert(key, value);
            }
        }
    }
}

pub(super) fn apply_override(model: &mut Model, patch: Map<String, Value>) -> Result<(), String> {
    let mut current = serde_json::to_value(&*model).map_err(|e| e.to_string())?;
    if let Value::Object(obj) = &mut current {
        for (key, value) in patch {
            match (obj.get_mut(&key), value) {
                // pi merges these per level, then per key.
                (Some(Value::Object(existing)), Value::Object(incoming)) if key == "samplingParamsByThinkingLevel" => {
                    for (level, params) in incoming {
                        match (existing.get_mut(&level), params) {
                            (Some(Value::Object(old)), Value::Object(new)) => old.extend(new),
                            (_, params) => {
                                existing.insert(level, params);
                            }
                        }
                    }
                }
                // pi merges `inputLimits` over the model's, and its `images` and their `resize` too.
                (Some(Value::Object(existing)), Value::Object(incoming)) if key == "inputLimits" => {
                    merge_input_limits(existing, incoming)
                }
                (Some(Value::Object(existing)), Value::Object(incoming)) => existing.extend(incoming),
                (_, value) => {
                    obj.insert(key, value);
                }
            }
        }
    }
    *model = serde_json::from_value(current).map_err(|e| e.to_string())?;
    Ok(())
}
