//! Reading a message's top level without interpreting it: the members of an
//! object (or the items of an array) as raw JSON tokens.
//!
//! Ids are echoed exactly as written, so they are never parsed as numbers:
//! `1e400` or `18446744073709551616` stay what the client sent. A member
//! written twice keeps its last value, like every JSON reader that does not
//! reject duplicates (serde_json's `Value` among them), so the id a reply
//! carries is the id the request was read with.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The `null` id token.
pub fn null_id() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).unwrap_or_else(|_| Box::<RawValue>::default())
}

/// The JSON type of a raw token, worded for error messages.
pub fn kind_of_raw(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(b'[') => "an array",
        Some(b'{') => "an object",
        _ => "a number",
    }
}

/// The JSON type of a value, worded for error messages.
pub fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top level of one JSON text.
#[derive(Debug)]
pub enum RawJson<'a> {
    Object(RawObject<'a>),
    Array(Vec<&'a RawValue>),
    /// Anything else, by kind (`null`, `a number`, …).
    Scalar(&'static str),
}

impl<'a> RawJson<'a> {
    /// Parse `text` (syntax is checked in full; values stay raw).
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = (&mut de).deserialize_any(TopVisitor)?;
        de.end()?;
        Ok(parsed)
    }
}

/// The members of an object, in order, each name once (the last value wins).
/// A name is borrowed from the text unless it is written with escapes.
#[derive(Debug, Default)]
pub struct RawObject<'a> {
    members: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> RawObject<'a> {
    /// Parse `text` as an object.
    pub fn parse(text: &'a str) -> Result<Option<Self>, serde_json::Error> {
        Ok(match RawJson::parse(text)? {
            RawJson::Object(o) => Some(o),
            _ => None,
        })
    }

    /// A member's raw value.
    pub fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.members.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// A member that must be a JSON string: `Ok(None)` when absent, `Err(kind)` when not a string.
    pub fn string(&self, name: &str) -> Result<Option<String>, &'static str> {
        self.str(name).map(|s| s.map(Cow::into_owned))
    }

    /// [`RawObject::string`], borrowed from the text when the string has no escapes.
    pub fn str(&self, name: &str) -> Result<Option<Cow<'a, str>>, &'static str> {
        let Some(raw) = self.get(name) else { return Ok(None) };
        let text = raw.get();
        // The token was checked by the parse: a `"…"` without a backslash is its own text.
        if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
            && !inner.contains('\\')
        {
            return Ok(Some(Cow::Borrowed(inner)));
        }
        serde_json::from_str::<String>(text).map(|s| Some(Cow::Owned(s))).map_err(|_| kind_of_raw(raw))
    }

    /// The members, in order.
    pub fn members(&self) -> impl Iterator<Item = (&str, &'a RawValue)> {
        self.members.iter().map(|(n, v)| (n.as_ref(), *v))
    }

    /// The members other than `skip`, parsed into a JSON object. A member
    /// that cannot be represented (`1e400`) fails with its name.
    pub fn to_map(&self, skip: &[&str]) -> Result<serde_json::Map<String, serde_json::Value>, (String, String)> {
        let mut map = serde_json::Map::new();
        for (name, raw) in self.members() {
            if skip.contains(&name) {
                continue;
            }
            let value = serde_json::from_str(raw.get()).map_err(|e| (name.to_string(), e.to_string()))?;
            map.insert(name.to_string(), value);
        }
        Ok(map)
    }
}

struct TopVisitor;

/// A member name, borrowed from the text when it has no escapes.
struct Name<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;

        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }

            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(name)))
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(name.to_string())))
            }

            fn visit_string<E: de::Error>(self, name: String) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(name)))
            }
        }

        deserializer.deserialize_str(NameVisitor)
    }
}

impl<'de> Visitor<'de> for TopVisitor {
    type Value = RawJson<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(Name(name)) = map.next_key::<Name<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            match members.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => members.push((name, value)),
            }
        }
        Ok(RawJson::Object(RawObject { members }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            items.push(item);
        }
        Ok(RawJson::Array(items))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawJson::Scalar("null"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawJson::Scalar("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(RawJson::Scalar("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(RawJson::Scalar("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(RawJson::Scalar("a number"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(RawJson::Scalar("a string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stay_raw_even_when_no_number_type_holds_them() {
        let o = RawObject::parse(r#"{"id":1e400,"type":"get_state"}"#).unwrap().unwrap();
        assert_eq!(o.get("id").unwrap().get(), "1e400");
        let o = RawObject::parse(r#"{"id":-0.0e-7,"x":{"deep":[1e999]}}"#).unwrap().unwrap();
        assert_eq!(o.get("id").unwrap().get(), "-0.0e-7");
        assert!(o.to_map(&["id"]).is_err());
    }

    #[test]
    fn a_repeated_member_keeps_its_last_value() {
        let o = RawObject::parse(r#"{"id":1,"type":"get_state","id":"two"}"#).unwrap().unwrap();
        assert_eq!(o.get("id").unwrap().get(), r#""two""#);
        assert_eq!(o.members().count(), 2);
    }

    #[test]
    fn shapes_and_kinds() {
        assert!(matches!(RawJson::parse("[1, {\"a\":2}]").unwrap(), RawJson::Array(ref a) if a.len() == 2));
        assert!(matches!(RawJson::parse("null").unwrap(), RawJson::Scalar("null")));
        assert!(matches!(RawJson::parse("\"s\"").unwrap(), RawJson::Scalar("a string")));
        assert!(RawJson::parse("{\"a\":1} x").is_err());
        assert!(RawJson::parse("{\"a\":}").is_err());
        let o = RawObject::parse(r#"{"t":5,"s":"x"}"#).unwrap().unwrap();
        assert_eq!(o.string("t"), Err("a number"));
        assert_eq!(o.string("s"), Ok(Some("x".to_string())));
        assert_eq!(o.string("nope"), Ok(None));
    }

    #[test]
    fn names_and_strings_are_read_alike_with_or_without_escapes() {
        let text = r#"{"plain":"get_state","esc\u0061ped":"a\"b\u00e9\n","uni":"é ☃","t\"":"x"}"#;
        let o = RawObject::parse(text).unwrap().unwrap();
        let names: Vec<&str> = o.members().map(|(n, _)| n).collect();
        assert_eq!(names, ["plain", "escaped", "uni", "t\""]);
        assert!(matches!(o.str("plain"), Ok(Some(Cow::Borrowed("get_state")))));
        assert_eq!(o.str("escaped").unwrap().as_deref(), Some("a\"bé\n"));
        assert!(matches!(o.str("escaped"), Ok(Some(Cow::Owned(_)))));
        assert_eq!(o.str("uni").unwrap().as_deref(), Some("é ☃"));
        assert_eq!(o.string("t\""), Ok(Some("x".to_string())));
        // Every string reads as serde_json reads it.
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        for (name, raw) in o.members() {
            assert_eq!(o.str(name).unwrap().as_deref(), value[name].as_str(), "{raw}");
        }
        assert_eq!(o.str("nope"), Ok(None));
        let o = RawObject::parse(r#"{"n":[1],"o":{},"z":null}"#).unwrap().unwrap();
        assert_eq!((o.str("n"), o.str("o"), o.str("z")), (Err("an array"), Err("an object"), Err("null")));
    }
}
