//! pi's words and order for the errors `jsonschema` finds.
//!
//! pi's validator reports one message per failing keyword and walks a schema
//! in a fixed order: `type` first (a value of the wrong type gets nothing else
//! from that schema), then the value's own keywords, then the members of an
//! object or an array, then `allOf`, `anyOf`, `oneOf`, `not`, `if` and `$ref`.
//! A union that no branch accepts is explained by one branch: the one its tag
//! selects, else the one that declares most of the object's keys (on a tie,
//! the one whose first error is deepest). [`explain`] words each error kind in
//! one table ([`message`]) and sorts the messages by that walk ([`order_key`]).

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind as Kind;
use jsonschema::paths::Location;
use serde_json::Value;

use super::compiled::UNRESOLVED;
use super::{SchemaError, is_integer, types_of};
use crate::tools::js::{js_number_string, js_stringify};

/// Where the errors' paths start.
pub(super) struct Frame<'a> {
    /// The registered schema, which `#…` references point into.
    pub(super) root: &'a Value,
    /// The schema the paths start from, once `skip` segments are left out.
    pub(super) base: &'a Value,
    /// The checked value.
    pub(super) value: &'a Value,
    pub(super) skip: usize,
    /// The references that name nothing, by the number of their marker.
    pub(super) unresolved: &'a [String],
}

/// One message, at a place in the schema and a place in the value.
#[derive(PartialEq)]
struct Found {
    schema: Vec<String>,
    at: Vec<String>,
    message: String,
}

/// `jsonschema`'s errors as pi words and orders them.
pub(super) fn explain<'e>(errors: impl IntoIterator<Item = ValidationError<'e>>, frame: &Frame) -> Vec<SchemaError> {
    let errors: Vec<ValidationError> = errors.into_iter().collect();
    found(&errors, frame).into_iter().map(|f| SchemaError { path: pointer(&f.at), message: f.message }).collect()
}

/// The messages of one list of errors (a whole check, or one branch of a union), sorted.
fn found(errors: &[ValidationError], frame: &Frame) -> Vec<Found> {
    let located: Vec<(Vec<String>, Vec<String>, &ValidationError)> = errors
        .iter()
        .map(|e| {
            (
                segments(e.evaluation_path()).split_off(frame.skip.min(depth(e.evaluation_path()))),
                segments(e.instance_path()),
                e,
            )
        })
        .collect();
    // (schema holding `type`, place) of each value of the wrong type.
    let wrong_type: Vec<(usize, &[String], &[String])> = located
        .iter()
        .enumerate()
        .filter(|(_, (_, _, e))| matches!(e.kind(), Kind::Type { .. }))
        .map(|(i, (schema, at, _))| (i, &schema[..schema.len().saturating_sub(1)], at.as_slice()))
        .collect();
    let mut out: Vec<Found> = Vec::new();
    for (i, (schema, at, e)) in located.iter().enumerate() {
        let shadowed =
            wrong_type.iter().any(|(j, node, place)| *j != i && schema.starts_with(node) && at.starts_with(place));
        if shadowed {
            continue;
        }
        for f in message(schema, at, e, frame) {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out.sort_by_cached_key(|f| order_key(f, frame));
    out
}

/// The table: each `jsonschema` error kind in pi's words.
fn message(schema: &[String], at: &[String], e: &ValidationError, frame: &Frame) -> Vec<Found> {
    let one = |message: String| vec![Found { schema: schema.to_vec(), at: at.to_vec(), message }];
    let below = |key: &str, message: &str| Found {
        schema: schema.to_vec(),
        at: at.iter().cloned().chain([key.to_string()]).collect(),
        message: message.to_string(),
    };
    let num = |limit: &Value| js_number_string(limit.as_f64().unwrap_or(f64::NAN));
    let count = |limit: u64| js_number_string(limit as f64);
    let node = || schema_at(frame, &schema[..schema.len().saturating_sub(1)]);
    match e.kind() {
        Kind::Type { .. } => {
            let types = node().and_then(Value::as_object).map(types_of).unwrap_or_default();
            one(format!("expected {}, got {}", types.join(" or "), type_name(e.instance())))
        }
        Kind::Required { property } => vec![below(property.as_str().unwrap_or_default(), "missing")],
        Kind::AdditionalProperties { unexpected } => unexpected.iter().map(|k| below(k, "unknown field")).collect(),
        Kind::PropertyNames { error } => {
            let end = schema.iter().rposition(|s| s == "propertyNames").map_or(schema.len(), |i| i + 1);
            let key = error.instance().as_str().unwrap_or_default().to_string();
            vec![Found {
                schema: schema[..end].to_vec(),
                at: at.iter().cloned().chain([key]).collect(),
                message: "invalid property name".into(),
            }]
        }
        Kind::AnyOf { context } | Kind::OneOfNotValid { context } => union(schema, at, e.instance(), context, frame),
        Kind::OneOfMultipleValid { .. } => one("matches more than one alternative".into()),
        Kind::Enum { options } => {
            one(format!("expected one of {}", list_values(options.as_array().map_or(&[], Vec::as_slice))))
        }
        Kind::Constant { expected_value } => one(format!("expected {}", js_stringify(expected_value))),
        Kind::MinLength { limit } => one(format!("expected at least {} characters", count(*limit))),
        Kind::MaxLength { limit } => one(format!("expected at most {} characters", count(*limit))),
        Kind::Pattern { pattern } => {
            let written = node().and_then(|n| n.get("pattern")).and_then(Value::as_str).unwrap_or(pattern);
            one(format!("expected to match {written}"))
        }
        Kind::Minimum { limit } => one(format!("expected >= {}", num(limit))),
        Kind::Maximum { limit } => one(format!("expected <= {}", num(limit))),
        Kind::ExclusiveMinimum { limit } => one(format!("expected > {}", num(limit))),
        Kind::ExclusiveMaximum { limit } => one(format!("expected < {}", num(limit))),
        Kind::MultipleOf { multiple_of } => one(format!("expected a multiple of {}", js_number_string(*multiple_of))),
        Kind::MinProperties { limit } => one(format!("expected at least {} properties", count(*limit))),
        Kind::MaxProperties { limit } => one(format!("expected at most {} properties", count(*limit))),
        Kind::MinItems { limit } => one(format!("expected at least {} items", count(*limit))),
        Kind::MaxItems { limit } => one(format!("expected at most {} items", count(*limit))),
        Kind::UniqueItems => one("expected unique items".into()),
        Kind::Contains => one("expected at least 1 matching item".into()),
        Kind::Not { .. } => one("must not match the schema in not".into()),
        Kind::FalseSchema => {
            let unresolved = (schema.last().map(String::as_str) == Some("$ref"))
                .then(|| {
                    node()?.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?.strip_prefix(UNRESOLVED)?.parse().ok()
                })
                .flatten()
                .and_then(|i: usize| frame.unresolved.get(i));
            match unresolved {
                Some(reference) => one(format!("unresolved reference {reference}")),
                None => one("no value is allowed here".into()),
            }
        }
        Kind::Referencing(_) => {
            let reference = node().and_then(|n| n.get("$ref")).and_then(Value::as_str).unwrap_or_default();
            one(format!("unresolved reference {reference}"))
        }
        _ => one(e.to_string()),
    }
}

/// A union no branch accepts, explained by its closest branch.
fn union(
    schema: &[String],
    at: &[String],
    value: &Value,
    context: &[Vec<ValidationError>],
    frame: &Frame,
) -> Vec<Found> {
    let keyword = schema.last().map_or("", String::as_str);
    let holder = schema_at(frame, &schema[..schema.len().saturating_sub(1)]);
    let branches: Vec<&Value> =
        holder.and_then(|n| n.get(keyword)).and_then(Value::as_array).map(|b| b.iter().collect()).unwrap_or_default();
    let resolved: Vec<&Value> = branches
        .iter()
        .map(|b| b.get("$ref").and_then(Value::as_str).and_then(|r| resolve(frame.root, r)).unwrap_or(b))
        .collect();
    if let (Some((key, tags)), Value::Object(map)) = (tag_of(&resolved), value) {
        return match tags.iter().position(|t| map.get(&key) == Some(t)) {
            Some(i) => context.get(i).map(|errors| found(errors, frame)).unwrap_or_default(),
            None => vec![Found {
                schema: schema.to_vec(),
                at: at.iter().cloned().chain([key]).collect(),
                message: format!("expected one of {}", list_values(&tags)),
            }],
        };
    }
    let mut best: Option<(Vec<Found>, usize)> = None;
    for (i, errors) in context.iter().enumerate() {
        let errors = found(errors, frame);
        let Some(first) = errors.first() else { continue };
        let declared = match (value, resolved.get(i).and_then(|r| r.get("properties")).and_then(Value::as_object)) {
            (Value::Object(map), Some(props)) => map.keys().filter(|k| props.contains_key(*k)).count(),
            _ => 0,
        };
        let better = match &best {
            None => true,
            Some((kept, kept_declared)) => {
                declared > *kept_declared
                    || (declared == *kept_declared && pointer(&first.at).len() > pointer(&kept[0].at).len())
            }
        };
        if better {
            best = Some((errors, declared));
        }
    }
    match best {
        Some((errors, _)) => errors,
        None => vec![Found { schema: schema.to_vec(), at: at.to_vec(), message: "matches no alternative".into() }],
    }
}

/// The rank of a keyword in pi's walk of one schema; the members of an object
/// (`patternProperties`, `additionalProperties`, `propertyNames`) share one, by key.
fn keyword_rank(keyword: &str) -> usize {
    const WALK: [&[&str]; 27] = [
        &["type"],
        &["enum"],
        &["const"],
        &["minLength"],
        &["maxLength"],
        &["pattern"],
        &["minimum"],
        &["maximum"],
        &["exclusiveMinimum"],
        &["exclusiveMaximum"],
        &["multipleOf"],
        &["required"],
        &["properties"],
        &["patternProperties", "additionalProperties", "propertyNames"],
        &["minProperties"],
        &["maxProperties"],
        &["items", "prefixItems"],
        &["minItems"],
        &["maxItems"],
        &["uniqueItems"],
        &["contains"],
        &["allOf"],
        &["anyOf"],
        &["oneOf"],
        &["not"],
        &["if", "then", "else"],
        &["$ref"],
    ];
    WALK.iter().position(|ks| ks.contains(&keyword)).unwrap_or(WALK.len())
}

/// Where a message comes in pi's walk: one number per step of its schema path.
fn order_key(f: &Found, frame: &Frame) -> Vec<usize> {
    let position = |keys: Option<&Value>, name: Option<&String>| -> usize {
        match (keys, name) {
            (Some(Value::Object(map)), Some(name)) => map.keys().position(|k| k == name),
            (Some(Value::Array(items)), Some(name)) => items.iter().position(|k| k.as_str() == Some(name)),
            _ => None,
        }
        .unwrap_or(usize::MAX)
    };
    let mut key = Vec::new();
    let mut node = Some(frame.base);
    let mut value = Some(frame.value);
    let mut at = f.at.iter();
    let mut schema = f.schema.iter();
    while let Some(keyword) = schema.next() {
        key.push(keyword_rank(keyword));
        let here = node.and_then(|n| n.get(keyword));
        match keyword.as_str() {
            "properties" => {
                let name = schema.next();
                key.push(position(here, name));
                node = here.and_then(|p| p.get(name?));
                value = step(value, at.next());
            }
            "patternProperties" | "additionalProperties" | "propertyNames" => {
                let place = at.next();
                key.push(position(value, place));
                if keyword == "patternProperties" {
                    let pattern = schema.next();
                    key.extend([0, position(here, pattern)]);
                    node = here.and_then(|p| p.get(pattern?));
                } else {
                    key.push(if keyword == "additionalProperties" { 1 } else { 2 });
                    node = here;
                }
                value = step(value, place);
            }
            "required" => key.push(position(here, at.next())),
            "items" | "prefixItems" => {
                let tuple_index = if here.is_some_and(Value::is_array) { schema.next() } else { None };
                let place = at.next();
                key.push(place.and_then(|p| p.parse().ok()).unwrap_or(usize::MAX));
                node = match tuple_index {
                    Some(i) => here.and_then(|t| t.get(i.parse::<usize>().ok()?)),
                    None => here,
                };
                value = step(value, place);
            }
            "allOf" | "anyOf" | "oneOf" => {
                let index = schema.next().and_then(|i| i.parse::<usize>().ok());
                key.push(index.unwrap_or(0));
                node = index.and_then(|i| here?.get(i));
            }
            "$ref" => node = here.and_then(Value::as_str).and_then(|r| resolve(frame.root, r)),
            _ => node = here,
        }
    }
    key
}

fn step<'v>(value: Option<&'v Value>, place: Option<&String>) -> Option<&'v Value> {
    match value? {
        Value::Object(map) => map.get(place?),
        Value::Array(items) => items.get(place?.parse::<usize>().ok()?),
        _ => None,
    }
}

/// The schema at a path of keywords and names from the frame's base, following `$ref`s.
fn schema_at<'a>(frame: &Frame<'a>, path: &[String]) -> Option<&'a Value> {
    let mut node = frame.base;
    for segment in path {
        node = match (segment.as_str(), node) {
            ("$ref", n) => resolve(frame.root, n.get("$ref")?.as_str()?)?,
            (name, Value::Object(map)) => map.get(name)?,
            (index, Value::Array(items)) => items.get(index.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// A local reference (`#`, `#/definitions/…`) in the registered schema.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    if path.is_empty() { Some(root) } else { root.pointer(path) }
}

fn depth(location: &Location) -> usize {
    location.as_str().matches('/').count()
}

fn segments(location: &Location) -> Vec<String> {
    let text = location.as_str();
    if text.is_empty() {
        return Vec::new();
    }
    text[1..].split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect()
}

fn pointer(at: &[String]) -> String {
    at.iter().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
    }
}

fn list_values(values: &[Value]) -> String {
    const LISTED: usize = 20;
    if values.len() <= LISTED {
        return js_stringify(&Value::Array(values.to_vec()));
    }
    let listed = js_stringify(&Value::Array(values[..LISTED].to_vec()));
    format!("{}, ... and {} more]", &listed[..listed.len() - 1], values.len() - LISTED)
}

/// The discriminating property of a tagged union: a key whose `const` values
/// are primitive and distinct across all branches.
fn tag_of(branches: &[&Value]) -> Option<(String, Vec<Value>)> {
    let first = branches.first()?.get("properties")?.as_object()?;
    for key in first.keys() {
        let tags: Vec<Option<&Value>> = branches
            .iter()
            .map(|b| b.get("properties").and_then(|p| p.get(key)).and_then(|t| t.get("const")))
            .collect();
        let primitive = tags.iter().all(|t| t.is_some_and(|t| !t.is_object() && !t.is_array()));
        if !primitive {
            continue;
        }
        let values: Vec<Value> = tags.into_iter().flatten().cloned().collect();
        let distinct = values.iter().enumerate().all(|(i, a)| !values[..i].contains(a));
        if distinct {
            return Some((key.clone(), values));
        }
    }
    None
}
