//! Normalising what varies between runs, so that scenarios can state exact
//! values: sandbox paths, the fake server's port, timestamps, UUIDs, entry ids
//! (numbered in order of first appearance, consistently across the transcript
//! and the session files of one run), temp file names and durations.
//!
//! | value | becomes |
//! |---|---|
//! | sandbox paths | `<cwd>`, `<agent>`, `<sessions>`, `<home>`, `<tmp>`, `<sandbox>` |
//! | `127.0.0.1:PORT` | `127.0.0.1:<port>` |
//! | `timestamp`-like keys holding numbers | `"<ts>"` |
//! | ISO 8601 times (also `2026-01-02T03-04-05-678Z` in file names) | `<iso>` |
//! | UUIDs | `<uuid1>`, `<uuid2>`, … |
//! | 8-hex entry ids in id-like keys | `<e1>`, `<e2>`, … |
//! | `pi-bash-<hex>` temp names | `pi-bash-<hex>` |
//! | `durationMs` | `"<ms>"` |

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

/// Keys holding entry ids.
const ID_KEYS: &[&str] = &["id", "parentId", "entryId", "firstKeptEntryId", "leafId", "targetId", "fromId", "since"];

/// Keys holding millisecond epoch times.
const TIME_KEYS: &[&str] = &["timestamp", "labelTimestamp"];

/// The replacements of one scenario run.
pub struct Normalizer {
    paths: Vec<(String, String)>,
    entry_ids: HashMap<String, String>,
    uuids: HashMap<String, String>,
    uuid_re: Option<Regex>,
    iso_re: Option<Regex>,
    port_re: Option<Regex>,
    hex_re: Option<Regex>,
    bash_re: Option<Regex>,
}

fn replace_all(re: &Option<Regex>, text: String, with: &str) -> String {
    match re {
        Some(r) => r.replace_all(&text, with).into_owned(),
        None => text,
    }
}

impl Normalizer {
    /// `paths`: (absolute path, placeholder) pairs; longer paths are replaced first.
    pub fn new(mut paths: Vec<(String, String)>) -> Normalizer {
        paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let re = |s: &str| Regex::new(s).ok();
        Normalizer {
            paths,
            entry_ids: HashMap::new(),
            uuids: HashMap::new(),
            uuid_re: re(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
            iso_re: re(r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}(?:[.-]\d{1,9})?Z"),
            port_re: re(r"(127\.0\.0\.1|localhost):\d+"),
            hex_re: re(r"^[0-9a-f]{8}$"),
            bash_re: re(r"pi-bash-[0-9a-f]+"),
        }
    }

    fn entry_id(&mut self, id: &str) -> String {
        let n = self.entry_ids.len() + 1;
        self.entry_ids.entry(id.to_string()).or_insert_with(|| format!("<e{n}>")).clone()
    }

    /// Normalise a string that is not an entry id.
    pub fn text(&mut self, s: &str) -> String {
        let mut out = s.to_string();
        for (path, placeholder) in &self.paths {
            if !path.is_empty() && out.contains(path.as_str()) {
                out = out.replace(path.as_str(), placeholder);
            }
        }
        out = replace_all(&self.port_re, out, "$1:<port>");
        out = replace_all(&self.iso_re, out, "<iso>");
        out = replace_all(&self.bash_re, out, "pi-bash-<hex>");
        if let Some(uuid_re) = &self.uuid_re {
            let found: Vec<String> = uuid_re.find_iter(&out).map(|m| m.as_str().to_string()).collect();
            for u in found {
                let n = self.uuids.len() + 1;
                let name = self.uuids.entry(u.clone()).or_insert_with(|| format!("<uuid{n}>")).clone();
                out = out.replace(&u, &name);
            }
        }
        out
    }

    /// Normalise a whole value.
    pub fn value(&mut self, v: &Value) -> Value {
        self.walk(v, None)
    }

    fn walk(&mut self, v: &Value, key: Option<&str>) -> Value {
        match v {
            Value::Object(obj) => {
                let mut out = Map::new();
                for (k, x) in obj {
                    out.insert(k.clone(), self.walk(x, Some(k)));
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                let ids_list = key.is_some_and(|k| ID_KEYS.contains(&k));
                Value::Array(items.iter().map(|x| self.walk(x, if ids_list { key } else { None })).collect())
            }
            Value::String(s) => {
                let hex = self.hex_re.as_ref().is_some_and(|r| r.is_match(s));
                if key.is_some_and(|k| ID_KEYS.contains(&k)) && hex {
                    Value::String(self.entry_id(s))
                } else {
                    Value::String(self.text(s))
                }
            }
            Value::Number(_) if key.is_some_and(|k| TIME_KEYS.contains(&k)) => Value::String("<ts>".into()),
            Value::Number(_) if key == Some("durationMs") => Value::String("<ms>".into()),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn varying_values_become_placeholders() {
        let mut n =
            Normalizer::new(vec![("/tmp/sb/work".into(), "<cwd>".into()), ("/tmp/sb".into(), "<sandbox>".into())]);
        let v = json!({
            "id": "a1b2c3d4", "parentId": "a1b2c3d4", "leafId": "ffffffff", "timestamp": 1733234567890_i64,
            "sessionFile": "/tmp/sb/sessions/2026-01-02T03-04-05-678Z_0191a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b.jsonl",
            "cwd": "/tmp/sb/work", "baseUrl": "http://127.0.0.1:43211/v1", "when": "2026-01-02T03:04:05.678Z",
            "path": "/tmp/sb/tmp/pi-bash-0123abcd.log", "durationMs": 12
        });
        assert_eq!(
            n.value(&v),
            json!({
                "id": "<e1>", "parentId": "<e1>", "leafId": "<e2>", "timestamp": "<ts>",
                "sessionFile": "<sandbox>/sessions/<iso>_<uuid1>.jsonl",
                "cwd": "<cwd>", "baseUrl": "http://127.0.0.1:<port>/v1", "when": "<iso>",
                "path": "<sandbox>/tmp/pi-bash-<hex>.log", "durationMs": "<ms>"
            })
        );
    }
}
