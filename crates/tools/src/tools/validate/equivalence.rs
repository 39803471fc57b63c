//! The validator's outcomes on every tool schema found in the repository and a
//! set of schemas covering each keyword, with generated mismatching arguments,
//! held to the outcomes recorded from the hand-written validator that
//! `jsonschema` replaced (the two were compared case by case before it was
//! deleted; the one difference, `multipleOf` past 2^53, is in DEVIATIONS.md).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::tools::ToolRegistry;

/// (name, schema) of every schema the comparison runs on.
pub(super) fn schemas() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let reg = ToolRegistry::builtin();
    let mut names: Vec<&str> = reg.names().collect();
    names.sort_unstable();
    for name in names {
        out.push((format!("builtin:{name}"), reg.get(name).map(|t| t.parameters().clone()).unwrap_or_default()));
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["compat/scenarios", "crates/provider/src/provider/testdata"] {
        json_files(&repo.join(dir), &mut files);
    }
    files.sort();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Ok(value) = serde_json::from_str::<Value>(&text) else { continue };
        let short = file.strip_prefix(&repo).unwrap_or(&file).display().to_string();
        harvest(&value, &short, &mut out);
    }
    for (i, schema) in keyword_schemas().into_iter().enumerate() {
        out.push((format!("keywords:{i}"), schema));
    }
    let mut seen = Vec::new();
    out.retain(|(_, s)| {
        let text = s.to_string();
        let new = !seen.contains(&text);
        seen.push(text);
        new
    });
    out
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Tool schemas inside a scenario or a captured request: `parameters`, `inputSchema`, `input_schema`.
fn harvest(value: &Value, file: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let is_schema = matches!(key.as_str(), "parameters" | "inputSchema" | "input_schema")
                    && child.as_object().is_some_and(|s| {
                        s.contains_key("type") || s.contains_key("properties") || s.contains_key("required")
                    });
                if is_schema {
                    out.push((format!("{file}:{key}"), child.clone()));
                }
                harvest(child, file, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| harvest(i, file, out)),
        _ => {}
    }
}

/// Schemas that exercise each keyword the validator knows, the extension
/// tools' TypeBox schemas of the kit, and references back to the root.
fn keyword_schemas() -> Vec<Value> {
    vec![
        json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        json!({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}, "required": ["names"]}),
        json!({
            "type": "object",
            "required": ["mode"],
            "additionalProperties": false,
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "n": {"type": "integer", "minimum": 1, "maximum": 5},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "minItems": 1, "uniqueItems": true},
                "name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
                "kind": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25},
                "tenth": {"type": "number", "multipleOf": 0.1},
                "step": {"type": "integer", "multipleOf": 3},
                "fixed": {"const": "x"},
                "nullable": {"type": ["string", "null"]}
            }
        }),
        json!({
            "type": "object",
            "properties": {
                "action": {"oneOf": [
                    {"type": "object", "required": ["kind", "path"], "properties": {"kind": {"const": "read"}, "path": {"type": "string"}}},
                    {"type": "object", "required": ["kind", "text"], "properties": {"kind": {"const": "say"}, "text": {"type": "string", "minLength": 1}}}
                ]},
                "shape": {"anyOf": [
                    {"type": "object", "required": ["w", "h"], "properties": {"w": {"type": "number"}, "h": {"type": "number"}}},
                    {"type": "object", "required": ["r"], "properties": {"r": {"type": "number"}}}
                ]},
                "either": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
            },
            "required": ["action"]
        }),
        json!({
            "type": "object",
            "definitions": {
                "node": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/definitions/node"}}
                }}
            },
            "properties": {"tree": {"$ref": "#/definitions/node"}},
            "required": ["tree"]
        }),
        json!({
            "type": "object",
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "additionalProperties": false}},
            "properties": {"points": {"type": "array", "items": {"$ref": "#/$defs/point"}}, "origin": {"$ref": "#/$defs/point"}}
        }),
        json!({
            "type": "object",
            "properties": {"value": {"type": "string"}, "next": {"$ref": "#"}},
            "required": ["value"]
        }),
        json!({
            "type": "object",
            "patternProperties": {"^x-": {"type": "integer"}, "^y": {"type": "boolean"}},
            "additionalProperties": {"type": "string"},
            "propertyNames": {"maxLength": 6},
            "minProperties": 1,
            "maxProperties": 3
        }),
        json!({
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": {"type": "boolean"}},
                "tuple": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}]},
                "some": {"type": "array", "contains": {"type": "string", "const": "yes"}},
                "none": {"not": {"type": "string"}},
                "cond": {"if": {"type": "number"}, "then": {"minimum": 10}, "else": {"type": "string", "minLength": 3}},
                "both": {"allOf": [{"type": "object", "required": ["a"]}, {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]}]},
                "never": false,
                "big": {"enum": (0..25).collect::<Vec<i32>>()}
            }
        }),
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "SQL"},
                "params": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]}},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                "options": {"type": "object", "properties": {"timeout": {"type": "number"}, "dry": {"type": "boolean"}}, "additionalProperties": false}
            },
            "required": ["query"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        }),
        json!({
            "type": "object",
            "properties": {
                "dangling": {"$ref": "#/definitions/missing"},
                "elsewhere": {"$ref": "other.json#/x"},
                "kept": {"type": "string"},
                "inUnion": {"anyOf": [{"$ref": "#/$defs/gone"}, {"type": "integer"}]}
            },
            "required": ["kept"]
        }),
        json!({
            "type": "object",
            "properties": {
                "a b/c%~": {"type": "object", "properties": {"x y": {"type": "number"}, "#q": {"type": "boolean"}}},
                "\u{e9}t\u{e9}": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer"}]},
                "100%": {"type": ["integer", "null"]}
            }
        }),
    ]
}

/// Values that do not fit most schemas.
fn pool() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-7),
        json!(2.5),
        json!(0.3),
        json!(1e21),
        json!(""),
        json!("x"),
        json!("42"),
        json!(" 12 "),
        json!("true"),
        json!("0x10"),
        json!("yes"),
        json!([]),
        json!([1, "a"]),
        json!(["a", "a"]),
        json!({}),
        json!({"a": 1, "kind": "say"}),
    ]
}

/// A value that fits `schema` closely enough to reach its inner keywords.
fn example(schema: &Value, root: &Value, depth: usize) -> Value {
    let Some(s) = schema.as_object() else { return json!("s") };
    if depth > 4 {
        return json!(null);
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r.strip_prefix('#').and_then(|p| if p.is_empty() { Some(root) } else { root.pointer(p) });
        return target.map_or(json!(null), |t| example(t, root, depth + 1));
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(first) = s.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = s.get(key).and_then(Value::as_array).and_then(|b| b.first()) {
            return example(first, root, depth + 1);
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("string"),
        _ if s.contains_key("properties") => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut map = Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    map.insert(k.clone(), example(p, root, depth + 1));
                }
            }
            Value::Object(map)
        }
        "array" => {
            let item = match s.get("items").or_else(|| s.get("prefixItems")) {
                Some(Value::Array(tuple)) => tuple.first().cloned().unwrap_or_default(),
                Some(i) => i.clone(),
                None => json!({}),
            };
            json!([example(&item, root, depth + 1)])
        }
        "number" => json!(3.5),
        "integer" => json!(2),
        "boolean" => json!(true),
        "null" => json!(null),
        _ => json!("abc"),
    }
}

/// Every place in a value (JSON pointers), the root included.
fn places(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, c) in map {
                places(c, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                places(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// The generated arguments for one schema: its example, the example with each
/// place replaced by each pool value or removed, with an unknown key, and the pool.
pub(super) fn arguments(schema: &Value) -> Vec<Value> {
    let base = example(schema, schema, 0);
    let mut out = vec![base.clone()];
    let mut at = Vec::new();
    places(&base, String::new(), &mut at);
    for place in at.iter().filter(|p| !p.is_empty()) {
        for v in pool() {
            let mut changed = base.clone();
            if let Some(slot) = changed.pointer_mut(place) {
                *slot = v;
                out.push(changed);
            }
        }
        let (parent, last) = place.rsplit_once('/').unwrap_or_default();
        let mut removed = base.clone();
        if let Some(Value::Object(map)) = removed.pointer_mut(parent) {
            map.shift_remove(&last.replace("~1", "/").replace("~0", "~"));
            out.push(removed);
        }
    }
    for place in at.iter() {
        let mut extra = base.clone();
        if let Some(Value::Object(map)) = extra.pointer_mut(place) {
            map.insert("x-extra".into(), json!(1));
            map.insert("zzz_unknown_key".into(), json!("v"));
            out.push(extra);
        }
    }
    out.extend(pool());
    out
}

/// The outcome of one case, as text: the coerced arguments or the error, then the
/// errors of the uncoerced arguments.
pub(super) fn outcome(
    check: impl Fn(&Value) -> Result<Value, String>,
    errors: impl Fn(&Value) -> Vec<super::SchemaError>,
    args: &Value,
) -> String {
    let checked = match check(args) {
        Ok(v) => format!("ok {v}"),
        Err(e) => format!("err {e}"),
    };
    let raw: Vec<String> = errors(args).into_iter().map(|e| format!("{} {}", e.path, e.message)).collect();
    format!("{checked}\nraw {}", raw.join(" | "))
}

/// FNV-1a (64 bits) of a text: a stable digest of a schema's outcomes.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// (arguments, outcome) of each case of one schema.
type Cases = Vec<(Value, String)>;

/// Every case's outcome with the current validator, by schema: (name, schema, cases).
fn current_outcomes() -> Vec<(String, Value, Cases)> {
    schemas()
        .into_iter()
        .map(|(name, schema)| {
            let cases = arguments(&schema)
                .into_iter()
                .map(|args| {
                    let got = outcome(
                        |a| super::coerce_and_validate("t", &schema, a),
                        |a| super::schema_errors(&schema, a),
                        &args,
                    );
                    (args, got)
                })
                .collect();
            (name, schema, cases)
        })
        .collect()
}

const SAMPLE_EVERY: usize = 10;

fn recorded_path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools/validate/testdata").join(file)
}

/// The outcomes recorded when the validator moved to `jsonschema` (the old
/// validator's, compared case by case): per schema, a digest of the
/// schema and one of its outcomes, and the full text of every 10th case of the
/// schemas written in this file. A schema found in the repository that was
/// changed or added since is left out (its file belongs to another test).
/// `PI_RECORD_VALIDATION=1` writes them again.
#[test]
fn outcomes_match_the_recorded_ones() {
    let outcomes = current_outcomes();
    let mut digests = String::new();
    let mut sample = String::new();
    for (name, schema, cases) in &outcomes {
        let all: String = cases.iter().map(|(a, o)| format!("{a}\n{o}\n")).collect();
        let _ = writeln!(digests, "{name}\t{:016x}\t{}\t{:016x}", fnv1a(&schema.to_string()), cases.len(), fnv1a(&all));
        if name.starts_with("keywords:") {
            for (args, got) in cases.iter().step_by(SAMPLE_EVERY) {
                let _ = writeln!(sample, "== {name} {args}\n{got}");
            }
        }
    }
    if std::env::var_os("PI_RECORD_VALIDATION").is_some() {
        std::fs::create_dir_all(recorded_path("")).unwrap();
        std::fs::write(recorded_path("outcome-digests.tsv"), &digests).unwrap();
        std::fs::write(recorded_path("outcome-sample.txt"), &sample).unwrap();
        return;
    }
    let recorded_digests = std::fs::read_to_string(recorded_path("outcome-digests.tsv")).unwrap();
    let recorded_sample = std::fs::read_to_string(recorded_path("outcome-sample.txt")).unwrap();
    let mut compared = 0;
    for line in digests.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let Some(recorded) =
            recorded_digests.lines().find(|r| r.split('\t').take(2).eq(fields.iter().take(2).copied()))
        else {
            assert!(!fields[0].starts_with("keywords:"), "no recorded outcomes for {}", fields[0]);
            continue;
        };
        assert_eq!(line, recorded, "the outcomes of {} changed", fields[0]);
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} schemas compared");
    for (ours, recorded) in sample.split("\n== ").zip(recorded_sample.split("\n== ")) {
        assert_eq!(ours, recorded);
    }
    assert_eq!(sample, recorded_sample);
}
