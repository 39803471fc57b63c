//! Migration of v1 (linear, no ids) and v2 (`hookMessage` role) session files to v3.
//!
//! Works on raw JSON values, header first, mutating them the way pi does so
//! that a rewritten file has the same keys in the same order as pi's:
//! * v1 -> v2: every entry gets a fresh 8-hex `id` and `parentId` = previous
//!   entry (a linear chain, first entry `null`); a compaction's numeric
//!   `firstKeptEntryIndex` (an index into the file's records, header = 0)
//!   becomes `firstKeptEntryId` when it points at an earlier entry, and the
//!   index field is removed.
//! * v2 -> v3: `message.role == "hookMessage"` becomes `"custom"`.
//!
//! The header's `version` is bumped at each step (added at the end of the
//! header object when it was absent, as JavaScript does).

use std::collections::HashSet;

use serde_json::Value;

use super::entry::SESSION_VERSION;
use super::record::generate_id;

/// Migrate `records` (header at index 0) to the current version in place.
/// Returns true when anything was changed.
pub(crate) fn migrate_to_current(records: &mut [Value]) -> bool {
    let version = records.first().and_then(|h| h.get("version")).and_then(Value::as_u64).unwrap_or(1);
    if version >= u64::from(SESSION_VERSION) {
        return false;
    }
    if version < 2 {
        migrate_v1_to_v2(records);
    }
    migrate_v2_to_v3(records);
    true
}

fn set_header_version(records: &mut [Value], version: u32) {
    for record in records.iter_mut() {
        if record.get("type").and_then(Value::as_str) == Some("session")
            && let Some(obj) = record.as_object_mut()
        {
            obj.insert("version".into(), Value::from(version));
        }
    }
}

fn migrate_v1_to_v2(records: &mut [Value]) {
    set_header_version(records, 2);
    let mut used: HashSet<String> = HashSet::new();
    let mut prev: Option<String> = None;
    for i in 0..records.len() {
        if records[i].get("type").and_then(Value::as_str) == Some("session") {
            continue;
        }
        let id = generate_id(|candidate| used.contains(candidate));
        used.insert(id.clone());
        // Resolve the compaction's index before borrowing the entry mutably.
        let kept_index = records[i].get("firstKeptEntryIndex").and_then(Value::as_u64);
        let is_compaction = records[i].get("type").and_then(Value::as_str) == Some("compaction");
        let kept_id = match (is_compaction, kept_index) {
            (true, Some(idx)) => usize::try_from(idx)
                .ok()
                .and_then(|idx| records.get(idx))
                .filter(|target| target.get("type").and_then(Value::as_str) != Some("session"))
                .and_then(|target| target.get("id").and_then(Value::as_str))
                .map(str::to_string),
            _ => None,
        };
        let Some(obj) = records[i].as_object_mut() else { continue };
        obj.insert("id".into(), Value::String(id.clone()));
        obj.insert("parentId".into(), prev.clone().map_or(Value::Null, Value::String));
        if is_compaction && obj.get("firstKeptEntryIndex").is_some_and(Value::is_number) {
            if let Some(kept) = kept_id {
                obj.insert("firstKeptEntryId".into(), Value::String(kept));
            }
            obj.shift_remove("firstKeptEntryIndex");
        }
        prev = Some(id);
    }
}

fn migrate_v2_to_v3(records: &mut [Value]) {
    set_header_version(records, 3);
    for record in records.iter_mut() {
        if record.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        if let Some(message) = record.get_mut("message").and_then(Value::as_object_mut)
            && message.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            message.insert("role".into(), Value::String("custom".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1_gets_a_linear_chain_and_compaction_ids() {
        let mut records = vec![
            json!({"type":"session","id":"s","timestamp":"t","cwd":"/p"}),
            json!({"type":"message","timestamp":"t","message":{"role":"user","content":"a","timestamp":1}}),
            json!({"type":"message","timestamp":"t","message":{"role":"assistant","content":[],"timestamp":2}}),
            json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}),
        ];
        assert!(migrate_to_current(&mut records));
        assert_eq!(records[0]["version"], 3);
        // `version` was absent: JavaScript appends it after the existing keys.
        assert_eq!(records[0].as_object().and_then(|o| o.keys().next_back()).map(String::as_str), Some("version"));
        assert_eq!(records[1]["parentId"], Value::Null);
        assert_eq!(records[2]["parentId"], records[1]["id"]);
        assert_eq!(records[3]["parentId"], records[2]["id"]);
        assert_eq!(records[3]["firstKeptEntryId"], records[2]["id"]);
        assert!(records[3].get("firstKeptEntryIndex").is_none());
        for r in &records[1..] {
            let id = r["id"].as_str().unwrap_or_default();
            assert_eq!(id.len(), 8);
            assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn v2_renames_hook_messages_only() {
        let mut records = vec![
            json!({"type":"session","version":2,"id":"s","timestamp":"t","cwd":"/p"}),
            json!({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":1}}),
            json!({"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"u","timestamp":2}}),
        ];
        assert!(migrate_to_current(&mut records));
        assert_eq!(records[0]["version"], 3);
        assert_eq!(records[1]["message"]["role"], "custom");
        assert_eq!(records[1]["id"], "a");
        assert_eq!(records[2]["message"]["role"], "user");
    }

    #[test]
    fn v3_is_untouched() {
        let mut records = vec![json!({"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p"})];
        assert!(!migrate_to_current(&mut records));
    }
}
