//! The pattern language of scenario expectations.
//!
//! A pattern is JSON. Objects match as subsets (every key of the pattern must
//! match; other keys of the line are ignored), arrays match element by element
//! with the same length, scalars match by equality (numbers within a relative
//! 1e-9, as float costs differ in the last digit between implementations).
//! Special forms:
//!
//! | pattern | matches |
//! |---|---|
//! | `"$any"` | any value (the key must be present) |
//! | `"$absent"` | (as an object member) the key is absent |
//! | `"$string"`, `"$number"`, `"$int"`, `"$bool"`, `"$null"`, `"$object"`, `"$array"` | a value of that type |
//! | `"$nonempty"` | a non-empty string or array |
//! | `"$re:<regex>"` | a string the regex finds a match in |
//! | `"$$…"` | the literal string `"$…"` |
//! | `{"$exact": v}` | exactly `v` (no subset rule, no special forms) |
//! | `{"$only": {…}}` | an object with exactly these keys, each matching its pattern |
//! | `{"$len": n}` | an array or string of length `n` |
//! | `{"$some": p}` | an array with an element matching `p` |
//! | `{"$all": p}` | an array whose elements all match `p` |
//! | `{"$startsWith": [p…]}` | an array whose first elements match `p…` |
//! | `{"$not": p}` | anything `p` does not match |
//! | `{"$anyOf": [p…]}` | anything one of `p…` matches |

use regex::Regex;
use serde_json::Value;

/// Whether `actual` matches `pattern`.
pub fn matches(pattern: &Value, actual: &Value) -> bool {
    explain(pattern, actual).is_none()
}

/// `None` when `actual` matches `pattern`, else where and why it does not.
pub fn explain(pattern: &Value, actual: &Value) -> Option<String> {
    mismatch(pattern, Some(actual), "")
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 { format!("{}…", s.chars().take(120).collect::<String>()) } else { s }
}

fn fail(path: &str, what: String) -> Option<String> {
    Some(format!("at {}: {what}", if path.is_empty() { "/" } else { path }))
}

fn special_string(p: &str, actual: Option<&Value>, path: &str) -> Option<Option<String>> {
    let check = |ok: bool, want: &str| -> Option<String> {
        if ok {
            None
        } else {
            fail(path, format!("expected {want}, got {}", actual.map(short).unwrap_or_else(|| "nothing".into())))
        }
    };
    let r = match p {
        "$any" => check(actual.is_some(), "a value"),
        "$absent" => check(actual.is_none(), "no value"),
        "$string" => check(actual.is_some_and(Value::is_string), "a string"),
        "$number" => check(actual.is_some_and(Value::is_number), "a number"),
        "$int" => check(actual.is_some_and(|v| v.is_i64() || v.is_u64()), "an integer"),
        "$bool" => check(actual.is_some_and(Value::is_boolean), "a boolean"),
        "$null" => check(actual.is_some_and(Value::is_null), "null"),
        "$object" => check(actual.is_some_and(Value::is_object), "an object"),
        "$array" => check(actual.is_some_and(Value::is_array), "an array"),
        "$nonempty" => check(
            actual.is_some_and(|v| match v {
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => false,
            }),
            "a non-empty string or array",
        ),
        _ => {
            if let Some(re) = p.strip_prefix("$re:") {
                let found = match (Regex::new(re), actual) {
                    (Ok(r), Some(Value::String(s))) => r.is_match(s),
                    _ => false,
                };
                check(found, &format!("a string matching /{re}/"))
            } else {
                return None;
            }
        }
    };
    Some(r)
}

fn mismatch(pattern: &Value, actual: Option<&Value>, path: &str) -> Option<String> {
    match pattern {
        Value::String(p) if p.starts_with("$$") => {
            let literal = Value::String(p[1..].to_string());
            if actual == Some(&literal) {
                None
            } else {
                fail(path, format!("expected {}, got {}", short(&literal), actual.map(short).unwrap_or_default()))
            }
        }
        Value::String(p) if p.starts_with('$') => match special_string(p, actual, path) {
            Some(r) => r,
            None => fail(path, format!("unknown pattern {p}")),
        },
        Value::Object(obj) if obj.len() == 1 && obj.keys().all(|k| k.starts_with('$')) => {
            operator(obj.iter().next(), actual, path)
        }
        Value::Object(obj) => {
            let Some(Value::Object(act)) = actual else {
                return fail(path, format!("expected an object, got {}", actual.map(short).unwrap_or_default()));
            };
            for (k, p) in obj {
                let sub = format!("{path}/{k}");
                if let Some(e) = mismatch(p, act.get(k), &sub) {
                    return Some(e);
                }
            }
            None
        }
        Value::Array(items) => {
            let Some(Value::Array(act)) = actual else {
                return fail(path, format!("expected an array, got {}", actual.map(short).unwrap_or_default()));
            };
            if items.len() != act.len() {
                return fail(
                    path,
                    format!(
                        "expected {} elements, got {}: {}",
                        items.len(),
                        act.len(),
                        short(&Value::Array(act.clone()))
                    ),
                );
            }
            items.iter().zip(act).enumerate().find_map(|(i, (p, a))| mismatch(p, Some(a), &format!("{path}/{i}")))
        }
        scalar => {
            let same = match (scalar, actual) {
                (Value::Number(a), Some(Value::Number(b))) => close(a.as_f64(), b.as_f64()),
                (p, Some(a)) => p == a,
                (_, None) => false,
            };
            if same {
                None
            } else {
                fail(
                    path,
                    format!(
                        "expected {}, got {}",
                        short(scalar),
                        actual.map(short).unwrap_or_else(|| "nothing".into())
                    ),
                )
            }
        }
    }
}

/// Numbers match within a relative 1e-9 (float costs are computed in different orders).
fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
        _ => false,
    }
}

fn operator(op: Option<(&String, &Value)>, actual: Option<&Value>, path: &str) -> Option<String> {
    let (name, arg) = op?;
    match name.as_str() {
        "$exact" => {
            if actual == Some(arg) {
                None
            } else {
                fail(path, format!("expected exactly {}, got {}", short(arg), actual.map(short).unwrap_or_default()))
            }
        }
        "$only" => {
            let (Value::Object(want), Some(Value::Object(got))) = (arg, actual) else {
                return fail(path, format!("expected an object, got {}", actual.map(short).unwrap_or_default()));
            };
            if let Some(extra) = got.keys().find(|k| !want.contains_key(*k)) {
                return fail(path, format!("unexpected member {extra:?}"));
            }
            mismatch(arg, actual, path)
        }
        "$len" => {
            let len = match actual {
                Some(Value::Array(a)) => Some(a.len()),
                Some(Value::String(s)) => Some(s.chars().count()),
                _ => None,
            };
            if len.is_some() && len.map(|l| l as u64) == arg.as_u64() {
                None
            } else {
                fail(path, format!("expected length {arg}, got {len:?}"))
            }
        }
        "$some" => match actual {
            Some(Value::Array(a)) if a.iter().any(|x| matches(arg, x)) => None,
            _ => fail(path, format!("no element matches {}", short(arg))),
        },
        "$all" => match actual {
            Some(Value::Array(a)) => {
                a.iter().enumerate().find_map(|(i, x)| mismatch(arg, Some(x), &format!("{path}/{i}")))
            }
            _ => fail(path, "expected an array".into()),
        },
        "$startsWith" => match (arg, actual) {
            (Value::Array(prefix), Some(Value::Array(a))) if a.len() >= prefix.len() => {
                prefix.iter().zip(a).enumerate().find_map(|(i, (p, x))| mismatch(p, Some(x), &format!("{path}/{i}")))
            }
            _ => fail(path, format!("expected an array starting with {}", short(arg))),
        },
        "$not" => {
            if mismatch(arg, actual, path).is_some() {
                None
            } else {
                fail(path, format!("expected anything but {}", short(arg)))
            }
        }
        "$anyOf" => match arg {
            Value::Array(options) if options.iter().any(|p| mismatch(p, actual, path).is_none()) => None,
            _ => fail(path, format!("matches none of {}", short(arg))),
        },
        other => fail(path, format!("unknown operator {other}")),
    }
}

/// The pattern keys a scenario uses, for coverage: every literal value of
/// `key` found anywhere in `pattern`.
pub fn literal_values(pattern: &Value, key: &str, out: &mut Vec<Value>) {
    match pattern {
        Value::Object(obj) => {
            for (k, v) in obj {
                if k == key && !matches!(v, Value::Object(_) | Value::Array(_)) {
                    out.push(v.clone());
                }
                literal_values(v, key, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| literal_values(v, key, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn subset_and_special_forms() {
        let line = json!({"type": "response", "id": 3, "data": {"a": [1, 2], "s": "hello"}, "n": null});
        assert!(matches(&json!({"type": "response"}), &line));
        assert!(matches(&json!({"id": 3.0, "data": {"a": [1, "$int"]}}), &line));
        assert!(matches(&json!({"error": "$absent", "n": "$null", "data": {"s": "$re:^hel"}}), &line));
        assert!(!matches(&json!({"data": {"a": [1]}}), &line));
        assert!(matches(&json!({"data": {"a": {"$len": 2}}}), &line));
        assert!(matches(&json!({"data": {"a": {"$some": 2}}}), &line));
        assert!(matches(&json!({"data": {"$exact": {"a": [1, 2], "s": "hello"}}}), &line));
        assert!(!matches(&json!({"data": {"$exact": {"a": [1, 2]}}}), &line));
        assert!(matches(&json!({"type": {"$anyOf": ["x", "response"]}}), &line));
        assert!(matches(&json!({"data": {"$only": {"a": "$array", "s": "$string"}}}), &line));
        assert!(!matches(&json!({"data": {"$only": {"a": "$array"}}}), &line));
        assert!(matches(&json!({"type": {"$not": "event"}}), &line));
        assert!(matches(&json!("$$x"), &json!("$x")));
        let why = explain(&json!({"data": {"s": "bye"}}), &line).unwrap();
        assert!(why.contains("/data/s"), "{why}");
    }
}
