//! Serde helpers for the typed stream events: each reads a field as leniently
//! as pi does (and as the untyped `Value` reads they replaced did), so a field
//! of an unexpected JSON type reads as absent instead of failing the event.
//!
//! Use them on fields of a `#[serde(default)]` struct:
//! `#[serde(deserialize_with = "lenient::u64")] index: Option<u64>`.
//! [`event`] reads a whole event; a tagged enum keeps a `#[serde(other)]`
//! variant so unknown event types are skipped, as before.

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::Value;

/// A non-negative integer (`Value::as_u64`); anything else is `None`.
pub fn u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Value::deserialize(d).map(|v| v.as_u64())
}

/// An integer that fits `i64` (`Value::as_i64`); anything else is `None`.
pub fn i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Value::deserialize(d).map(|v| v.as_i64())
}

/// Any number (`Value::as_f64`); anything else is `None`.
pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Value::deserialize(d).map(|v| v.as_f64())
}

/// A boolean (`Value::as_bool`); anything else is `None`.
pub fn bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Value::deserialize(d).map(|v| v.as_bool())
}

/// A string (`Value::as_str`); anything else is `None`.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A string, `""` when it is anything else (`as_str().unwrap_or("")`).
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    string(d).map(Option::unwrap_or_default)
}

/// The value as it is, `null` included (`Some(Value::Null)`, as `Value::get` gives it).
pub fn any<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A JSON object read as `T`; anything else (or an object `T` cannot read) is `T::default()`.
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Value::deserialize(d).map(|v| event(v).unwrap_or_default())
}

/// `Some` whenever the field is there (`null` included), read as `T` when it
/// is an object and as `T::default()` otherwise (`Value::get(..).is_some()`).
pub fn present<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(|v| Some(event(v).unwrap_or_default()))
}

/// The field read by `T`'s own `Deserialize`, `None` when that fails
/// (`serde_json::from_value(v).ok()`).
pub fn parsed<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(|v| T::deserialize(v).ok())
}

/// A JSON object read as `T`, `None` when the field is anything else.
pub fn some_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(event)
}

/// A JSON array of objects, each read as `T` (items that are not objects, or
/// that `T` cannot read, are left out); empty when the field is anything else.
pub fn items<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Array(items) => items.into_iter().filter_map(event).collect(),
        _ => Vec::new(),
    })
}

/// A JSON array, each item read as `T`, `T::default()` for an item that is no
/// object (so it still counts, as a `""` text in a join); empty when the field
/// is anything else.
pub fn each<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<Vec<T>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Array(items) => items.into_iter().map(|item| event(item).unwrap_or_default()).collect(),
        _ => Vec::new(),
    })
}

/// [`each`], but `None` when the field is no array.
pub fn some_each<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Array(items) => Some(items.into_iter().map(|item| event(item).unwrap_or_default()).collect()),
        _ => None,
    })
}

/// The string items of a JSON array (other items left out); empty when the
/// field is anything else.
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| match item {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}

/// The first item read as an object `T`, as a JSON pointer's `/0` finds it
/// (an array's first item, or an object's member `"0"`); `None` otherwise.
pub fn first<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Value::deserialize(d).map(|v| match v {
        Value::Array(items) => items.into_iter().next().and_then(event),
        Value::Object(mut members) => members.remove("0").and_then(event),
        _ => None,
    })
}

/// A JSON object read as `T`; `None` for anything else (arrays, numbers, …) or
/// when `T` cannot read it.
pub fn event<T: DeserializeOwned>(value: Value) -> Option<T> {
    if !value.is_object() {
        return None;
    }
    T::deserialize(value).ok()
}

/// [`event`] for a borrowed value.
pub fn event_ref<T: DeserializeOwned>(value: &Value) -> Option<T> {
    if !value.is_object() {
        return None;
    }
    T::deserialize(value).ok()
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Inner {
        #[serde(deserialize_with = "u64")]
        n: Option<u64>,
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Fields {
        #[serde(deserialize_with = "u64")]
        count: Option<u64>,
        #[serde(deserialize_with = "string")]
        name: Option<String>,
        #[serde(deserialize_with = "text")]
        text: String,
        #[serde(deserialize_with = "any")]
        raw: Option<Value>,
        #[serde(deserialize_with = "object")]
        inner: Inner,
        #[serde(deserialize_with = "items")]
        list: Vec<Inner>,
        #[serde(deserialize_with = "each")]
        all: Vec<Inner>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Tagged {
        Known(Fields),
        #[serde(other)]
        Other,
    }

    #[test]
    fn fields_of_another_type_read_as_absent() {
        let read: Fields = event(json!({
            "count": "3", "name": 7, "text": null, "raw": null, "inner": [1], "list": {"n": 1}
        }))
        .unwrap();
        assert_eq!(read, Fields { raw: Some(Value::Null), ..Fields::default() });
        let read: Fields = event(json!({
            "count": 3, "name": "a", "text": "t", "inner": {"n": -1}, "list": [{"n": 2}, 5, {"n": "x"}],
            "all": [{"n": 2}, 5]
        }))
        .unwrap();
        assert_eq!(read.all, vec![Inner { n: Some(2) }, Inner { n: None }]);
        assert_eq!(read.count, Some(3));
        assert_eq!(read.name.as_deref(), Some("a"));
        assert_eq!(read.text, "t");
        assert_eq!(read.inner, Inner { n: None });
        assert_eq!(read.list, vec![Inner { n: Some(2) }, Inner { n: None }]);
        assert_eq!(json!(1.5).as_u64(), None);
        assert_eq!(event::<Fields>(json!({"count": 1.5})).unwrap().count, None);
    }

    #[test]
    fn unknown_or_untyped_events_are_the_catch_all() {
        assert_eq!(event::<Tagged>(json!({"type": "ping"})), Some(Tagged::Other));
        assert!(
            matches!(event::<Tagged>(json!({"type": "known", "count": 2})), Some(Tagged::Known(f)) if f.count == Some(2))
        );
        assert_eq!(event::<Tagged>(json!({"type": 5})), None);
        assert_eq!(event::<Tagged>(json!({"count": 5})), None);
        assert_eq!(event::<Tagged>(json!([{"type": "known"}])), None);
    }
}
