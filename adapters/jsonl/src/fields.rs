//! Typed field access on request objects, with error texts that name the
//! field and the expected type. Shared by both dialects.

use pi_core::message::ImageContent;
use pi_core::model::ThinkingLevel;
use pi_core::op::QueueMode;
use serde_json::{Map, Value};

/// A field that is missing or has the wrong type or value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        FieldError { field: field.to_string(), message: message.into() }
    }
}

/// JSON type name for messages.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Read fields of one request object.
pub struct Fields<'a> {
    obj: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    pub fn new(obj: &'a Map<String, Value>) -> Self {
        Fields { obj }
    }

    pub fn raw(&self, name: &str) -> Option<&'a Value> {
        self.obj.get(name)
    }

    pub fn req_str(&self, name: &str) -> Result<String, FieldError> {
        match self.obj.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            None => Err(FieldError::new(name, format!("missing required field \"{name}\" (a string)"))),
            Some(other) => {
                Err(FieldError::new(name, format!("field \"{name}\" must be a string, got {}", kind_of(other))))
            }
        }
    }

    /// An optional string; `null` counts as absent.
    pub fn opt_str(&self, name: &str) -> Result<Option<String>, FieldError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => {
                Err(FieldError::new(name, format!("field \"{name}\" must be a string, got {}", kind_of(other))))
            }
        }
    }

    pub fn req_bool(&self, name: &str) -> Result<bool, FieldError> {
        match self.obj.get(name) {
            Some(Value::Bool(b)) => Ok(*b),
            None => Err(FieldError::new(name, format!("missing required field \"{name}\" (a boolean)"))),
            Some(other) => {
                Err(FieldError::new(name, format!("field \"{name}\" must be a boolean, got {}", kind_of(other))))
            }
        }
    }

    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, FieldError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => {
                Err(FieldError::new(name, format!("field \"{name}\" must be a boolean, got {}", kind_of(other))))
            }
        }
    }

    pub fn opt_str_list(&self, name: &str) -> Result<Option<Vec<String>>, FieldError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => {
                        Err(FieldError::new(name, format!("{name}[{i}] must be a string, got {}", kind_of(other))))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(FieldError::new(
                name,
                format!("field \"{name}\" must be an array of strings, got {}", kind_of(other)),
            )),
        }
    }

    /// Optional `images`: an array of `{type:"image", data, mimeType}`.
    pub fn images(&self, name: &str) -> Result<Vec<ImageContent>, FieldError> {
        let items = match self.obj.get(name) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(FieldError::new(
                    name,
                    format!("field \"{name}\" must be an array, got {}", kind_of(other)),
                ));
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let Value::Object(img) = item else {
                    return Err(FieldError::new(name, format!("{name}[{i}] must be an object, got {}", kind_of(item))));
                };
                let get = |key: &str| match img.get(key) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    _ => Err(FieldError::new(name, format!("{name}[{i}].{key} must be a string"))),
                };
                Ok(ImageContent { data: get("data")?, mime_type: get("mimeType")? })
            })
            .collect()
    }

    pub fn thinking_level(&self, name: &str) -> Result<ThinkingLevel, FieldError> {
        let raw = self.req_str(name)?;
        raw.parse().map_err(|e: pi_core::model::ParseThinkingLevelError| FieldError::new(name, e.to_string()))
    }

    pub fn queue_mode(&self, name: &str) -> Result<QueueMode, FieldError> {
        let raw = self.req_str(name)?;
        raw.parse().map_err(|e: String| FieldError::new(name, e))
    }
}
