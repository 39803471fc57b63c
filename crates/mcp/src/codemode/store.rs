//! codemode's `store()` / `load()` kept in the session, as pi 1.6.0 keeps
//! them: a script reads the values of the `codemode-store` custom entries on
//! the current branch, applied from the root; a script that succeeds and
//! stored or deleted something appends one such entry,
//! `{set: {key: value}, delete: [key]}`, through the session link (the
//! agent's own session writing, as an extension's `pi.appendEntry()`). So a
//! resumed session keeps the values and each branch sees only those written
//! on its path. Without a session (a tool run outside an agent) the store
//! starts empty and writes are dropped. The size limits are the prelude's.

use serde_json::{Map, Value, json};

use crate::tools::ToolContext;

/// The custom entry type holding one script's writes.
pub const STORE_ENTRY_TYPE: &str = "codemode-store";

/// The stored values on the call's branch, read as the script starts (as
/// pi reads them), for its first `store()` / `load()`.
pub(super) async fn snapshot(ctx: &ToolContext) -> Value {
    let Some(session) = &ctx.session else { return json!({}) };
    Value::Object(values_of(&session.branch_custom_data(STORE_ENTRY_TYPE).await))
}

/// Keep a successful script's writes: append them as one entry (nothing
/// when the script wrote nothing).
pub(super) async fn commit(ctx: &ToolContext, writes: &[Value]) {
    let (Some(session), Some(data)) = (&ctx.session, entry_data(writes)) else { return };
    if let Err(error) = session.append_custom(STORE_ENTRY_TYPE, data).await {
        tracing::warn!("codemode store: the script's writes were not saved: {error}");
    }
}

/// The values of these entries' data, applied in order (deletions, then
/// the values set). Data of another shape is skipped, as pi skips it.
pub(super) fn values_of(entries: &[Value]) -> Map<String, Value> {
    let mut values = Map::new();
    for data in entries {
        let Some((set, deleted)) = parse_entry(data) else { continue };
        for key in deleted {
            values.shift_remove(key);
        }
        for (key, value) in set {
            values.insert(key, value);
        }
    }
    values
}

/// One entry's values set, by key, and its keys deleted.
type EntryWrites<'a> = (Vec<(String, Value)>, Vec<&'a str>);

/// An entry's values set (an array's by index, as JavaScript's
/// `Object.entries` reads one) and keys deleted; `None` for another shape.
fn parse_entry(data: &Value) -> Option<EntryWrites<'_>> {
    let deleted = data.get("delete")?.as_array()?;
    let deleted: Vec<&str> = deleted.iter().map(Value::as_str).collect::<Option<_>>()?;
    let set = match data.get("set")? {
        Value::Object(set) => set.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Array(set) => set.iter().enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect(),
        _ => return None,
    };
    Some((set, deleted))
}

/// The entry data of the prelude's writes (`[key, json]` stored, `[key]`
/// deleted, one per key, in order); `None` when there are none.
pub(super) fn entry_data(writes: &[Value]) -> Option<Value> {
    let mut set = Map::new();
    let mut deleted = Vec::new();
    for write in writes {
        let Some(key) = write.get(0).and_then(Value::as_str) else { continue };
        match write.get(1).and_then(Value::as_str) {
            Some(json) => match serde_json::from_str::<Value>(json) {
                Ok(value) => {
                    set.insert(key.to_string(), value);
                }
                Err(e) => tracing::warn!("codemode store: {key:?} is not JSON ({e}); left out"),
            },
            None => deleted.push(Value::String(key.to_string())),
        }
    }
    (!set.is_empty() || !deleted.is_empty()).then(|| json!({"set": set, "delete": deleted}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_apply_from_the_root_and_other_shapes_are_skipped() {
        let entries = [
            json!({"set": {"a": 1, "k": "one"}, "delete": []}),
            json!({"set": {"k": "two"}, "delete": ["a"]}),
            json!({"set": {"x": 1}}),
            json!({"set": {"x": 1}, "delete": [1]}),
            json!({"set": ["zero"], "delete": []}),
            Value::Null,
        ];
        assert_eq!(Value::Object(values_of(&entries)), json!({"k": "two", "0": "zero"}));
    }

    #[test]
    fn writes_become_one_entry_or_none() {
        let writes = [json!(["k", "{\"a\":[1]}"]), json!(["gone"]), json!(["n", "null"])];
        assert_eq!(entry_data(&writes), Some(json!({"set": {"k": {"a": [1]}, "n": null}, "delete": ["gone"]})));
        assert_eq!(entry_data(&[]), None);
    }
}
