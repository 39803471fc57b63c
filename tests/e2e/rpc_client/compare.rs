//! Compares two `RpcClient` driver reports (pi-rpc's and pi 1.6.0's) value
//! by value, after normalising what two runs of the same program also differ
//! in, and nothing else:
//!
//! - **paths**: the sandbox's cwd, home and agent dir inside any string become
//!   `<cwd>`, `<home>`, `<agent>`; the fake model server's URL becomes
//!   `<server>`; a session file path becomes `<session-file:N>`, numbered by
//!   first appearance;
//! - **ids**: strings shaped as generated ids ([`is_generated_id`]: an entry
//!   id of 8 hex digits, a UUID) become `<id:N>`, numbered by first
//!   appearance over the whole report (keys taken in sorted order), so an id
//!   that points at another (`parentId`, `leafId`, `entryId`) still has to
//!   point at the same thing; a model id or a tool call id is left as it is;
//! - **times**: the values of [`TIME_KEYS`] become `<time>` (they are clock
//!   readings or durations).
//!
//! What is left must be equal, apart from the paths named by a
//! [`KnownDifference`] (each with its reason, listed in compat/DEVIATIONS.md).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

/// An entry id (8 lowercase hex digits) or a UUID (session ids, UI ids).
pub fn is_generated_id(s: &str) -> bool {
    let hex = |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_hexdigit());
    let parts: Vec<&str> = s.split('-').collect();
    match parts.as_slice() {
        [one] => hex(one, 8),
        [a, b, c, d, e] => hex(a, 8) && hex(b, 4) && hex(c, 4) && hex(d, 4) && hex(e, 12),
        _ => false,
    }
}

/// Keys whose values are clock readings or measured durations.
pub const TIME_KEYS: &[&str] = &["timestamp", "durationMs", "wall_time_seconds"];

/// Where one run lived: replaced by placeholders in its report.
pub struct RunPlaces<'a> {
    pub cwd: &'a Path,
    pub home: &'a Path,
    pub agent_dir: &'a Path,
    pub server_url: &'a str,
}

/// `report` with ids, times and paths replaced by placeholders.
pub fn normalised(report: &Value, places: &RunPlaces) -> Value {
    let mut ids = Numbering::default();
    let mut files = Numbering::default();
    let mut places_text: Vec<(String, &str)> = vec![
        (places.cwd.display().to_string(), "<cwd>"),
        (places.home.display().to_string(), "<home>"),
        (places.agent_dir.display().to_string(), "<agent>"),
        (places.server_url.trim_end_matches('/').to_string(), "<server>"),
    ];
    // The longest first, so that a directory inside another is named as itself.
    places_text.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
    let mut walk = Walk { ids: &mut ids, files: &mut files, places: &places_text };
    walk.value(report, None)
}

#[derive(Default)]
struct Numbering(HashMap<String, usize>);

impl Numbering {
    fn name(&mut self, kind: &str, value: &str) -> String {
        let next = self.0.len() + 1;
        let n = *self.0.entry(value.to_string()).or_insert(next);
        format!("<{kind}:{n}>")
    }
}

struct Walk<'a> {
    ids: &'a mut Numbering,
    files: &'a mut Numbering,
    places: &'a [(String, &'static str)],
}

impl Walk<'_> {
    fn value(&mut self, value: &Value, key: Option<&str>) -> Value {
        let key = key.unwrap_or_default();
        match value {
            _ if TIME_KEYS.contains(&key) && !value.is_null() => Value::String("<time>".into()),
            Value::String(s) if is_generated_id(s) => Value::String(self.ids.name("id", s)),
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|item| self.value(item, None)).collect()),
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    let v = self.value(&map[k], Some(k));
                    out.insert(k.clone(), v);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    fn text(&mut self, s: &str) -> String {
        let mut out = s.to_string();
        for (text, name) in self.places {
            if !text.is_empty() {
                out = out.replace(text.as_str(), name);
            }
        }
        if out.ends_with(".jsonl") && !out.contains(char::is_whitespace) {
            return self.files.name("session-file", &out);
        }
        out
    }
}

/// One place where the two reports differ.
#[derive(Debug)]
pub struct Difference {
    /// A JSON pointer into the report.
    pub path: String,
    pub reference: Option<Value>,
    pub ours: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or("(absent)".to_string(), |v| clip(&v.to_string()));
        write!(f, "{}: pi 1.6.0 {}, pi-rpc {}", self.path, show(&self.reference), show(&self.ours))
    }
}

fn clip(text: &str) -> String {
    if text.chars().count() <= 300 {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(300).collect::<String>())
    }
}

/// Every place where `reference` and `ours` differ (both normalised).
pub fn differences(reference: &Value, ours: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    diff_into(&mut out, String::new(), Some(reference), Some(ours));
    out
}

fn diff_into(out: &mut Vec<Difference>, path: String, reference: Option<&Value>, ours: Option<&Value>) {
    match (reference, ours) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
            keys.sort();
            for k in keys {
                diff_into(out, format!("{path}/{}", escape(k)), a.get(k), b.get(k));
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                diff_into(out, format!("{path}/{i}"), a.get(i), b.get(i));
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Difference { path, reference: a.cloned(), ours: b.cloned() }),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A difference kept on purpose: the JSON pointers it covers (`*` stands for
/// one segment, `**` for any number of them), and why.
pub struct KnownDifference {
    pub paths: &'static [&'static str],
    /// Only where this holds of the two values ([`always`] when any values).
    pub when: fn(&Difference) -> bool,
    pub reason: &'static str,
}

/// A [`KnownDifference::when`] that holds for any values.
pub fn always(_: &Difference) -> bool {
    true
}

impl KnownDifference {
    pub fn covers(&self, difference: &Difference) -> bool {
        self.paths.iter().any(|pattern| pointer_matches(pattern, &difference.path)) && (self.when)(difference)
    }
}

fn pointer_matches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    segments_match(&pattern, &path)
}

/// `*` matches one segment, `**` any number of them (none included).
fn segments_match(pattern: &[&str], path: &[&str]) -> bool {
    match (pattern.split_first(), path.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => {
            segments_match(rest, path) || (!path.is_empty() && segments_match(pattern, &path[1..]))
        }
        (Some((p, rest)), Some((s, tail))) => (*p == "*" || p == s) && segments_match(rest, tail),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn places() -> RunPlaces<'static> {
        RunPlaces {
            cwd: Path::new("/tmp/a/work"),
            home: Path::new("/tmp/a/home"),
            agent_dir: Path::new("/tmp/a/agent"),
            server_url: "http://127.0.0.1:4000/v1",
        }
    }

    #[test]
    fn ids_are_numbered_by_first_appearance_so_links_must_still_agree() {
        let (x, y) = ("0a1b2c3d", "9f8e7d6c");
        let (q, r) = ("11111111", "01234567-89ab-cdef-0123-456789abcdef");
        let entries = |a: &str, b: &str, leaf: &str| {
            json!({"entries": [{"id": a, "parentId": null}, {"id": b, "parentId": a}], "leafId": leaf,
                   "model": {"id": "fake-model"}})
        };
        let n = |v: Value| normalised(&v, &places());
        assert!(differences(&n(entries(x, y, y)), &n(entries(q, r, r))).is_empty());
        let d = differences(&n(entries(x, y, y)), &n(entries(q, r, q)));
        assert_eq!(d.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["/leafId"]);
        assert_eq!(n(entries(x, y, y))["model"]["id"], "fake-model", "a model id is not a generated id");
        assert!(!is_generated_id("call_1") && !is_generated_id("0a1b2c3") && is_generated_id(r));
    }

    #[test]
    fn paths_times_and_session_files_are_placeholders_other_values_are_not() {
        let a = json!({"p": "/tmp/a/work/export.html", "f": "/tmp/a/agent/sessions/x/1_u.jsonl", "timestamp": 5,
                       "u": "http://127.0.0.1:4000/v1", "n": 1});
        let n = normalised(&a, &places());
        assert_eq!(
            n,
            json!({"p": "<cwd>/export.html", "f": "<session-file:1>", "timestamp": "<time>", "u": "<server>", "n": 1})
        );
        let mut b = a.clone();
        b["n"] = json!(2);
        let d = differences(&n, &normalised(&b, &places()));
        assert_eq!(d.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["/n"]);
    }

    #[test]
    fn a_missing_key_an_extra_item_and_a_null_against_absent_are_differences() {
        let a = json!({"x": [1, 2], "y": null});
        let b = json!({"x": [1, 2, 3], "z": 1});
        let paths: Vec<String> = differences(&a, &b).into_iter().map(|d| d.path).collect();
        assert_eq!(paths, ["/x/2", "/y", "/z"]);
    }

    #[test]
    fn known_difference_patterns() {
        let at = |path: &str| Difference { path: path.into(), reference: Some(json!(1)), ours: None };
        let k = KnownDifference { paths: &["/a/*/b", "/c/**", "/**/e/f"], when: always, reason: "test" };
        assert!(k.covers(&at("/a/3/b")));
        assert!(!k.covers(&at("/a/3/b/d")));
        assert!(k.covers(&at("/c/1/2")));
        assert!(!k.covers(&at("/d")));
        assert!(k.covers(&at("/x/1/e/f")) && k.covers(&at("/e/f")));
        assert!(!k.covers(&at("/x/e/f/g")) && !k.covers(&at("/x/e")));
        let only_absent_here = KnownDifference { paths: &["/**"], when: |d| d.ours.is_none(), reason: "test" };
        assert!(only_absent_here.covers(&at("/a")));
        assert!(!only_absent_here.covers(&Difference { path: "/a".into(), reference: None, ours: Some(json!(1)) }));
    }
}
