//! Session file records: the header line and the entries of the tree (v3 format).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::message::{AgentMessage, Usage, UserContent};

/// Current session file version.
pub const SESSION_VERSION: u32 = 3;

/// First line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    #[schemars(extend("const" = "session"))]
    pub kind: String,
    #[serde(default = "default_version")]
    pub version: u32,
    /// Session id (a UUID).
    pub id: String,
    /// ISO 8601 creation time.
    pub timestamp: String,
    /// Absolute working directory of the session.
    #[serde(default)]
    pub cwd: String,
    /// Path of the session this one was forked or cloned from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_version() -> u32 {
    1
}

/// Fields every tree entry has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryBase {
    /// 8 lowercase hex characters, unique within the file.
    pub id: String,
    /// Parent entry id; null for a root.
    pub parent_id: Option<String>,
    /// ISO 8601 time the entry was appended.
    pub timestamp: String,
}

/// A message stored in the session; unknown roles are kept raw.
// Boxing `Known` would change every construction site; entries are few and short-lived.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StoredMessage {
    Known(AgentMessage),
    Other(Value),
}

/// Roles of [`AgentMessage`].
const KNOWN_ROLES: [&str; 8] =
    ["system", "user", "assistant", "toolResult", "bashExecution", "compactionSummary", "branchSummary", "custom"];

/// An object whose `type` (or `role`) is a string outside `known`: kept as it is.
fn open_object_schema(tag: &str, known: &[&str], description: &str) -> schemars::Schema {
    schemars::json_schema!({
        "description": description,
        "type": "object",
        "properties": { tag: { "type": "string", "not": { "enum": known } } },
        "required": [tag],
        "additionalProperties": true
    })
}

impl JsonSchema for StoredMessage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StoredMessage".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let known = generator.subschema_for::<AgentMessage>();
        let other = open_object_schema(
            "role",
            &KNOWN_ROLES,
            "A message of a role this version does not know (written by another program), preserved as written.",
        );
        schemars::json_schema!({ "anyOf": [known, other] })
    }
}

impl StoredMessage {
    pub fn known(&self) -> Option<&AgentMessage> {
        match self {
            StoredMessage::Known(m) => Some(m),
            StoredMessage::Other(_) => None,
        }
    }
}

/// `message` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessageEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub message: StoredMessage,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `model_change` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelChangeEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub provider: String,
    pub model_id: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `thinking_level_change` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelChangeEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub thinking_level: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `compaction` entry: a summary replacing the history before `firstKeptEntryId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// The prompt and tools declared at the compaction (one system message
    /// replaying the earlier ones): it leads the compacted context.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "system_message_with_role")]
    #[schemars(with = "Option<crate::message::SystemMessage>")]
    pub system_message: Option<crate::message::SystemMessage>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `branch_summary` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub from_id: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `custom` entry: extension state, not part of the model context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub custom_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `custom_message` entry: extension-injected message that is part of the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub custom_type: String,
    pub content: UserContent,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `label` entry: a bookmark on another entry (`label` absent clears it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    pub target_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `session_info` entry (display name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfoEntry {
    #[serde(flatten)]
    pub base: EntryBase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A session entry of a known type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum KnownEntry {
    Message(MessageEntry),
    ModelChange(ModelChangeEntry),
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    Compaction(CompactionEntry),
    BranchSummary(BranchSummaryEntry),
    Custom(CustomEntry),
    CustomMessage(CustomMessageEntry),
    Label(LabelEntry),
    SessionInfo(SessionInfoEntry),
}

/// One line of a session file after the header. Entries of unknown type
/// (written by a newer pi) are preserved as raw JSON.
// Boxing `Known` would change every construction site used across the crate.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEntry {
    Known(KnownEntry),
    Unknown(Value),
}

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SessionEntry::Known(e) => e.serialize(serializer),
            SessionEntry::Unknown(v) => v.serialize(serializer),
        }
    }
}

/// Serialized untagged: a known entry as itself, an unknown one as written.
impl JsonSchema for SessionEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SessionEntry".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let known = generator.subschema_for::<KnownEntry>();
        let mut taken = KNOWN_TYPES.to_vec();
        taken.push("session");
        let unknown = open_object_schema(
            "type",
            &taken,
            "An entry of a type this version does not know (written by a newer pi), preserved as written.",
        );
        schemars::json_schema!({ "anyOf": [known, unknown] })
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(SessionEntry::from_value(value))
    }
}

const KNOWN_TYPES: [&str; 9] = [
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

impl SessionEntry {
    /// Classify a parsed line; a known type with a broken shape is kept raw too.
    pub fn from_value(value: Value) -> Self {
        let known = value.get("type").and_then(Value::as_str).is_some_and(|t| KNOWN_TYPES.contains(&t));
        if known && let Ok(entry) = serde_json::from_value::<KnownEntry>(value.clone()) {
            return SessionEntry::Known(entry);
        }
        SessionEntry::Unknown(value)
    }

    pub fn base(&self) -> Option<&EntryBase> {
        match self {
            SessionEntry::Known(k) => Some(match k {
                KnownEntry::Message(e) => &e.base,
                KnownEntry::ModelChange(e) => &e.base,
                KnownEntry::ThinkingLevelChange(e) => &e.base,
                KnownEntry::Compaction(e) => &e.base,
                KnownEntry::BranchSummary(e) => &e.base,
                KnownEntry::Custom(e) => &e.base,
                KnownEntry::CustomMessage(e) => &e.base,
                KnownEntry::Label(e) => &e.base,
                KnownEntry::SessionInfo(e) => &e.base,
            }),
            SessionEntry::Unknown(_) => None,
        }
    }

    /// Entry id (unknown entries: their `id` field if it is a string).
    pub fn id(&self) -> Option<&str> {
        match self {
            SessionEntry::Known(_) => self.base().map(|b| b.id.as_str()),
            SessionEntry::Unknown(v) => v.get("id").and_then(Value::as_str),
        }
    }

    /// Parent id (unknown entries: their `parentId` field if it is a string).
    pub fn parent_id(&self) -> Option<&str> {
        match self {
            SessionEntry::Known(_) => self.base().and_then(|b| b.parent_id.as_deref()),
            SessionEntry::Unknown(v) => v.get("parentId").and_then(Value::as_str),
        }
    }

    /// ISO timestamp of the entry.
    pub fn timestamp(&self) -> Option<&str> {
        match self {
            SessionEntry::Known(_) => self.base().map(|b| b.timestamp.as_str()),
            SessionEntry::Unknown(v) => v.get("timestamp").and_then(Value::as_str),
        }
    }

    /// The type name as written in the file.
    pub fn type_name(&self) -> &str {
        match self {
            SessionEntry::Known(k) => match k {
                KnownEntry::Message(_) => "message",
                KnownEntry::ModelChange(_) => "model_change",
                KnownEntry::ThinkingLevelChange(_) => "thinking_level_change",
                KnownEntry::Compaction(_) => "compaction",
                KnownEntry::BranchSummary(_) => "branch_summary",
                KnownEntry::Custom(_) => "custom",
                KnownEntry::CustomMessage(_) => "custom_message",
                KnownEntry::Label(_) => "label",
                KnownEntry::SessionInfo(_) => "session_info",
            },
            SessionEntry::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The message of a `message` entry, if it has a known role.
    pub fn message(&self) -> Option<&AgentMessage> {
        match self {
            SessionEntry::Known(KnownEntry::Message(e)) => e.message.known(),
            _ => None,
        }
    }
}

/// ISO 8601 UTC timestamp with milliseconds, as pi writes them.
pub fn iso_now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_pi_key_order() {
        let line = r#"{"type":"model_change","id":"a1b2c3d4","parentId":null,"timestamp":"2024-12-03T14:05:00.000Z","provider":"openai","modelId":"gpt-4o"}"#;
        let e: SessionEntry = serde_json::from_str(line).unwrap();
        assert!(matches!(e, SessionEntry::Known(KnownEntry::ModelChange(_))));
        assert_eq!(serde_json::to_string(&e).unwrap(), line);
    }

    #[test]
    fn unknown_types_and_roles_are_kept() {
        let line = r#"{"type":"context_edit","id":"g6h7i8j9","parentId":"f6g7h8i9","timestamp":"t","targetId":"c3d4e5f6","replacement":null}"#;
        let e: SessionEntry = serde_json::from_str(line).unwrap();
        assert!(matches!(e, SessionEntry::Unknown(_)));
        assert_eq!(e.id(), Some("g6h7i8j9"));
        assert_eq!(e.parent_id(), Some("f6g7h8i9"));
        assert_eq!(serde_json::to_string(&e).unwrap(), line);

        let sys = r#"{"type":"message","id":"a0b1c2d3","parentId":null,"timestamp":"t","message":{"role":"system","content":"","timestamp":1}}"#;
        let e: SessionEntry = serde_json::from_str(sys).unwrap();
        assert!(matches!(e.message(), Some(AgentMessage::System(_))), "system messages are modelled");
        assert_eq!(e.id(), Some("a0b1c2d3"));
        assert_eq!(serde_json::to_string(&e).unwrap(), sys);
    }
}

/// A compaction's `systemMessage` is written as pi writes it, a whole
/// message with `"role": "system"` first (pi 1.6.0 reads one without the
/// role as a message of no known kind).
mod system_message_with_role {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::{Map, Value};

    use crate::message::SystemMessage;

    pub fn serialize<S: Serializer>(message: &Option<SystemMessage>, out: S) -> Result<S::Ok, S::Error> {
        let Some(message) = message else { return out.serialize_none() };
        let fields = match serde_json::to_value(message).map_err(serde::ser::Error::custom)? {
            Value::Object(fields) => fields,
            _ => return Err(serde::ser::Error::custom("a system message is an object")),
        };
        let mut with_role = Map::with_capacity(fields.len() + 1);
        with_role.insert("role".into(), Value::String("system".into()));
        with_role.extend(fields.into_iter().filter(|(key, _)| key != "role"));
        Value::Object(with_role).serialize(out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Option<SystemMessage>, D::Error> {
        let Some(mut value) = Option::<Value>::deserialize(input)? else { return Ok(None) };
        if let Value::Object(fields) = &mut value {
            fields.remove("role");
        }
        serde_json::from_value(value).map(Some).map_err(serde::de::Error::custom)
    }
}
