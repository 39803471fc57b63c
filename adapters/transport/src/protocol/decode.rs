//! Decoding a command's params with serde into the table's params types.
//!
//! The params object is read through a deserializer whose error type keeps
//! what went wrong as data (a missing field, a wrong type, a rejected
//! value), and `serde_path_to_error` adds where. One function words it for
//! both dialects: `field "enabled" must be a boolean, got a string`.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize as _;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Expected, IntoDeserializer, Unexpected, Visitor};
use serde_json::{Map, Value};

/// A field that is missing or has the wrong type or value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The top-level field at fault (JSON-RPC `data.field`).
    pub field: String,
    /// What is wrong, readable.
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        FieldError { field: field.to_string(), message: message.into() }
    }
}

/// What went wrong, as data (the error type of [`ValueDeserializer`]).
#[derive(Debug)]
pub enum ParamError {
    Missing(&'static str),
    Type { got: &'static str, expected: String },
    Message(String),
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Missing(name) => write!(f, "missing field {name}"),
            ParamError::Type { got, expected } => write!(f, "expected {expected}, got {got}"),
            ParamError::Message(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ParamError {}

impl de::Error for ParamError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ParamError::Message(msg.to_string())
    }

    fn invalid_type(unexpected: Unexpected<'_>, expected: &dyn Expected) -> Self {
        ParamError::Type { got: kind_of_unexpected(&unexpected), expected: phrase(&expected.to_string()) }
    }

    fn missing_field(field: &'static str) -> Self {
        ParamError::Missing(field)
    }
}

fn kind_of_unexpected(u: &Unexpected<'_>) -> &'static str {
    match u {
        Unexpected::Bool(_) => "a boolean",
        Unexpected::Unsigned(_) | Unexpected::Signed(_) | Unexpected::Float(_) => "a number",
        Unexpected::Char(_) | Unexpected::Str(_) | Unexpected::Bytes(_) => "a string",
        Unexpected::Unit | Unexpected::Option => "null",
        Unexpected::Seq => "an array",
        Unexpected::Map | Unexpected::StructVariant => "an object",
        _ => "a value",
    }
}

/// serde's wording of an expected type, in JSON's terms.
fn phrase(expected: &str) -> String {
    match expected {
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        e if e.starts_with("struct ") => "an object".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" | "f32" | "f64" => "a number".into(),
        e => e.to_string(),
    }
}

/// Decode params into `P`.
pub fn decode<P: DeserializeOwned>(params: &Map<String, Value>) -> Result<P, FieldError> {
    serde_path_to_error::deserialize(MapDeserializer::new(params)).map_err(|e| {
        let path = e.path().to_string();
        word::<P>(if path == "." { "" } else { &path }, e.into_inner())
    })
}

fn word<P: DeserializeOwned>(path: &str, error: ParamError) -> FieldError {
    let top = |p: &str| p.split(['.', '[']).next().unwrap_or(p).to_string();
    match error {
        ParamError::Missing(name) if path.is_empty() => {
            let expected = expected_of::<P>(name).map(|e| format!(" ({e})")).unwrap_or_default();
            FieldError::new(name, format!("missing required field \"{name}\"{expected}"))
        }
        ParamError::Missing(name) => FieldError::new(&top(path), format!("missing required field \"{path}.{name}\"")),
        ParamError::Type { got, expected } if !path.contains(['.', '[']) => {
            FieldError::new(path, format!("field \"{path}\" must be {expected}, got {got}"))
        }
        ParamError::Type { got, expected } => {
            FieldError::new(&top(path), format!("{path} must be {expected}, got {got}"))
        }
        ParamError::Message(message) => FieldError::new(&top(path), message),
    }
}

/// The JSON type field `name` of `P` must have (`a string`): `P` is
/// deserialized from `{name: <probe>}` and the probe notes what is asked of it.
fn expected_of<P: DeserializeOwned>(name: &'static str) -> Option<&'static str> {
    let asked = Cell::new(None);
    let _ = P::deserialize(ProbeMap { name, asked: &asked, done: false });
    asked.get()
}

/// A one-member map whose value only records the type requested of it.
struct ProbeMap<'a> {
    name: &'static str,
    asked: &'a Cell<Option<&'static str>>,
    done: bool,
}

impl<'de> de::Deserializer<'de> for ProbeMap<'_> {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> de::MapAccess<'de> for ProbeMap<'_> {
    type Error = ParamError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ParamError> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        seed.deserialize(BorrowedStrDeserializer::new(self.name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ParamError> {
        seed.deserialize(Probe { asked: self.asked })
    }
}

/// A one-item sequence whose item only records the type requested of it.
struct ProbeItems<'a> {
    asked: &'a Cell<Option<&'static str>>,
    done: bool,
}

impl<'de> de::SeqAccess<'de> for ProbeItems<'_> {
    type Error = ParamError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, ParamError> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        seed.deserialize(Probe { asked: self.asked }).map(Some)
    }
}

/// Records the first type asked of it, then fails.
struct Probe<'a> {
    asked: &'a Cell<Option<&'static str>>,
}

impl Probe<'_> {
    fn ask<T>(&self, kind: &'static str) -> Result<T, ParamError> {
        if self.asked.get().is_none() {
            self.asked.set(Some(kind));
        }
        Err(ParamError::Message("probed".into()))
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ParamError> {
        self.ask("a value")
    }

    fn deserialize_bool<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ParamError> {
        self.ask("a boolean")
    }

    fn deserialize_str<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ParamError> {
        self.ask("a string")
    }

    fn deserialize_string<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ParamError> {
        self.ask("a string")
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, ParamError> {
        self.ask("a string")
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        let item = Cell::new(None);
        let _ = visitor.visit_seq(ProbeItems { asked: &item, done: false });
        self.ask(if item.get() == Some("a string") { "an array of strings" } else { "an array" })
    }

    fn deserialize_map<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ParamError> {
        self.ask("an object")
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, ParamError> {
        self.ask("an object")
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        visitor.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit
        unit_struct newtype_struct tuple tuple_struct identifier ignored_any
    }
}

/// A deserializer over a borrowed JSON value with [`ParamError`]s.
pub struct ValueDeserializer<'a> {
    value: &'a Value,
}

/// A deserializer over a borrowed JSON object with [`ParamError`]s.
pub struct MapDeserializer<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> MapDeserializer<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        MapDeserializer { map }
    }
}

struct Members<'a> {
    iter: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
}

impl<'de> de::MapAccess<'de> for Members<'de> {
    type Error = ParamError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ParamError> {
        match self.iter.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ParamError> {
        let value = self.value.take().ok_or_else(|| ParamError::Message("value without a key".into()))?;
        seed.deserialize(ValueDeserializer { value })
    }
}

struct Items<'a> {
    iter: std::slice::Iter<'a, Value>,
}

impl<'de> de::SeqAccess<'de> for Items<'de> {
    type Error = ParamError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, ParamError> {
        self.iter.next().map(|value| seed.deserialize(ValueDeserializer { value })).transpose()
    }
}

impl<'de> de::Deserializer<'de> for MapDeserializer<'de> {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        visitor.visit_map(Members { iter: self.map.iter(), value: None })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'de> {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (_, Some(i), _) => visitor.visit_i64(i),
                (_, _, Some(f)) => visitor.visit_f64(f),
                _ => Err(ParamError::Message(format!("number out of range: {n}"))),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Items { iter: items.iter() }),
            Value::Object(map) => MapDeserializer::new(map).deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        match self.value {
            Value::String(s) => visitor.visit_enum(IntoDeserializer::<ParamError>::into_deserializer(s.as_str())),
            other => Err(de::Error::invalid_type(unexpected(other), &visitor)),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(_) => Unexpected::Other("a number"),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

/// `deserialize_with` for fields read through `FromStr` (its error text is the message).
pub fn parse_str<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: de::Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    struct StrVisitor<T>(PhantomData<T>);
    impl<T: std::str::FromStr<Err: fmt::Display>> Visitor<'_> for StrVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
            s.parse().map_err(E::custom)
        }
    }
    d.deserialize_str(StrVisitor(PhantomData))
}

/// [`parse_str`] for optional fields (`null` and absent are `None`).
pub fn parse_opt_str<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: de::Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    struct Wrapped<T>(T);
    impl<'de, T: std::str::FromStr<Err: fmt::Display>> de::Deserialize<'de> for Wrapped<T> {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            parse_str(d).map(Wrapped)
        }
    }
    Ok(Option::<Wrapped<T>>::deserialize(d)?.map(|w| w.0))
}
