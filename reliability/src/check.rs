//! What the agent's output must satisfy for what was sent: every record is
//! one JSON value; every request with an id is answered exactly once (a
//! mutated one at most once); nothing is answered that was not asked;
//! notifications are never answered.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::inputs::{Dialect, Expect};

/// The id member of a message, raw, telling absent from `null`.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default, borrow)]
    method: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as Deserialize>::deserialize(d).map(Some)
}

/// The answers found in the output: per raw id, how many; and how many
/// answers had no usable id (absent or `null`), how many of those were
/// successes (an answered notification).
#[derive(Debug, Default)]
pub struct Answers {
    pub by_id: HashMap<String, usize>,
    pub without_id: usize,
    pub successes_without_id: usize,
}

/// Read every output record; the first violation found on the way is returned.
pub fn answers(dialect: Dialect, records: &[Vec<u8>]) -> Result<Answers, String> {
    let mut out = Answers::default();
    for (i, record) in records.iter().enumerate() {
        let Ok(text) = std::str::from_utf8(record) else {
            return Err(format!("output record {} is not UTF-8", i + 1));
        };
        let Ok(value) = serde_json::from_str::<&RawValue>(text) else {
            return Err(format!("output record {} is not JSON: {}", i + 1, text.chars().take(200).collect::<String>()));
        };
        let items: Vec<&RawValue> = match value.get().trim_start().starts_with('[') {
            true if dialect != Dialect::Native => serde_json::from_str(value.get()).unwrap_or_default(),
            _ => vec![value],
        };
        for item in items {
            let Ok(head) = serde_json::from_str::<Head>(item.get()) else {
                return Err(format!("output record {} is not a JSON object: {}", i + 1, shorten(item.get())));
            };
            let is_answer = match dialect {
                Dialect::Native => head.kind.as_deref() == Some("response"),
                _ => head.method.is_none(),
            };
            if !is_answer {
                continue;
            }
            match head.id.map(RawValue::get).filter(|id| *id != "null") {
                Some(id) => *out.by_id.entry(id.to_string()).or_default() += 1,
                None => {
                    out.without_id += 1;
                    let success = match dialect {
                        Dialect::Native => item.get().contains(r#""success":true"#),
                        _ => head.result.is_some(),
                    };
                    out.successes_without_id += usize::from(success);
                }
            }
        }
    }
    Ok(out)
}

fn shorten(text: &str) -> String {
    text.chars().take(200).collect()
}

/// Hold the answers to what was owed; every violation, one line each.
pub fn violations(dialect: Dialect, expects: &[Expect], answers: &Answers) -> Vec<String> {
    let mut owed: HashMap<&str, (usize, usize)> = HashMap::new(); // id -> (at least, at most)
    let (mut anonymous, mut broken) = (0usize, 0usize);
    for e in expects {
        match e {
            Expect::Reply(id) => {
                let o = owed.entry(id).or_default();
                o.0 += 1;
                o.1 += 1;
            }
            Expect::MaybeReply(id) => owed.entry(id).or_default().1 += 1,
            Expect::Anonymous => anonymous += 1,
            Expect::Broken => broken += 1,
            Expect::Silent => {}
        }
    }
    let mut found = Vec::new();
    for (id, (least, most)) in &owed {
        let got = answers.by_id.get(*id).copied().unwrap_or(0);
        if got < *least {
            found.push(format!("request {id} was not answered"));
        } else if got > *most {
            found.push(format!("request {id} was answered {got} times"));
        }
    }
    for (id, got) in &answers.by_id {
        if !owed.contains_key(id.as_str()) {
            found.push(format!("an answer with id {id} ({got}×), which no request had"));
        }
    }
    if answers.without_id < anonymous {
        found.push(format!("{anonymous} commands without id, only {} answers without id", answers.without_id));
    }
    if answers.without_id > anonymous + broken {
        found.push(format!(
            "{} answers without a usable id, at most {} expected",
            answers.without_id,
            anonymous + broken
        ));
    }
    if dialect != Dialect::Native && answers.successes_without_id > 0 {
        found.push(format!(
            "{} successful answers without id: a notification was answered",
            answers.successes_without_id
        ));
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(texts: &[&str]) -> Vec<Vec<u8>> {
        texts.iter().map(|t| t.as_bytes().to_vec()).collect()
    }

    #[test]
    fn answers_are_counted_per_raw_id() {
        let out = lines(&[
            r#"{"id":"a","type":"response","command":"get_state","success":true}"#,
            r#"{"type":"agent_start"}"#,
            r#"{"id":1.50,"type":"response","success":false}"#,
            r#"{"type":"response","command":"parse","success":false}"#,
        ]);
        let a = answers(Dialect::Native, &out).unwrap();
        assert_eq!(a.by_id.get("\"a\""), Some(&1));
        assert_eq!(a.by_id.get("1.50"), Some(&1));
        assert_eq!(a.without_id, 1);
        let owed = [Expect::Reply("\"a\"".into()), Expect::MaybeReply("1.50".into()), Expect::Broken];
        assert!(violations(Dialect::Native, &owed, &a).is_empty());
        let owed = [Expect::Reply("\"a\"".into()), Expect::Reply("\"b\"".into())];
        assert_eq!(
            violations(Dialect::Native, &owed, &a),
            [
                "1 answers without a usable id, at most 0 expected",
                "an answer with id 1.50 (1×), which no request had",
                "request \"b\" was not answered",
            ]
        );
    }

    #[test]
    fn batches_and_answered_notifications() {
        let out =
            lines(&[r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":null,"result":{}}]"#, "not json"]);
        assert!(answers(Dialect::JsonRpc, &out).unwrap_err().contains("record 2 is not JSON"));
        let a = answers(Dialect::JsonRpc, &out[..1]).unwrap();
        let v = violations(Dialect::JsonRpc, &[Expect::Reply("1".into()), Expect::Broken], &a);
        assert_eq!(v, ["1 successful answers without id: a notification was answered"]);
    }
}
