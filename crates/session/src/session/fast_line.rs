//! Reading one session line of the shape pi writes straight into a typed entry.
//!
//! serde's derived readers for internally tagged and untagged enums
//! (`KnownEntry`, `StoredMessage`, `AgentMessage`, `ContentBlock`) first
//! copy the whole object into an intermediate buffer, then read it again;
//! for a 40 KB tool result that is several copies of every string. pi writes
//! the tag first (`type`, `role`), so here the tag is read first and the rest
//! of the object goes straight to the variant's reader, and the text of a text
//! block is kept as the JSON literal it was written as (see
//! [`Text::from_canonical_json`]).
//!
//! This is only a fast way to the result the careful reading gives: anything
//! unusual (a tag that is not the first key, keys written with escapes,
//! duplicate or unknown keys where the careful reading would treat them
//! differently, roles or types we do not model) is refused with an error and
//! the caller takes the careful path. The caller also checks that the entry
//! serialises back to exactly the line's bytes.

use std::ops::Range;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::entry::{EntryBase, KnownEntry, MessageEntry, StoredMessage};
use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, Text, TextContent, ToolResultMessage, UserContent, UserMessage,
};

/// A typed entry read from `line`, or `None` when the line is not of the
/// plain shape this reader takes (the careful path then reads it).
#[cfg(test)]
pub(crate) fn read_known_entry(line: &[u8]) -> Option<KnownEntry> {
    read_line(line).map(|read| read.entry)
}

/// What [`read_line`] found in one line.
pub(crate) struct ReadLine {
    pub(crate) entry: KnownEntry,
    /// Where the `usage` object of an assistant message lies in the line.
    /// pi writes fields our `Usage` keeps last (`reasoning`) before
    /// `totalTokens`, so that object is the one part of pi's assistant
    /// lines that the typed entry writes differently.
    pub(crate) usage: Option<Range<usize>>,
}

/// [`read_known_entry`], with the position of an assistant message's usage.
pub(crate) fn read_line(line: &[u8]) -> Option<ReadLine> {
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let (entry, usage) = deserializer.deserialize_map(EntryVisitor).ok()?;
    deserializer.end().ok()?;
    // The usage's text is borrowed from `line`: its offset is where it lies.
    let usage = usage.and_then(|raw| {
        let start = (raw.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
        let span = start..start + raw.get().len();
        (line.get(span.clone()) == Some(raw.get().as_bytes())).then_some(span)
    });
    Some(ReadLine { entry, usage })
}

/// The error that sends a line to the careful path.
fn refuse<E: de::Error>() -> E {
    E::custom("not the plain shape; read carefully")
}

/// The value of the first key, which must be `tag`.
fn first_tag<'de, A: MapAccess<'de>>(map: &mut A, tag: &str) -> Result<&'de str, A::Error> {
    match map.next_key::<&'de str>()? {
        Some(key) if key == tag => map.next_value::<&'de str>(),
        _ => Err(refuse()),
    }
}

/// Store a field read once; a second occurrence refuses the line.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(refuse()),
    }
}

fn required<T, E: de::Error>(slot: Option<T>) -> Result<T, E> {
    slot.ok_or_else(refuse)
}

/// An unknown key kept in `extra`; the tag key or a repeated key refuses the line.
fn keep_extra<'de, A: MapAccess<'de>>(
    map: &mut A,
    extra: &mut Map<String, Value>,
    key: &str,
    tag: &str,
) -> Result<(), A::Error> {
    if key == tag {
        return Err(refuse());
    }
    let value = map.next_value::<Value>()?;
    match extra.insert(key.to_string(), value) {
        None => Ok(()),
        Some(_) => Err(refuse()),
    }
}

/// The rest of the object read by the type's own (derived) reader.
fn rest<'de, T: Deserialize<'de>, A: MapAccess<'de>>(map: A) -> Result<T, A::Error> {
    T::deserialize(MapAccessDeserializer::new(map))
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = (KnownEntry, Option<&'de RawValue>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a session entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let tag = first_tag(&mut map, "type")?;
        let entry = match tag {
            "message" => return message_entry(map).map(|(entry, usage)| (KnownEntry::Message(entry), usage)),
            "model_change" => rest(map).map(KnownEntry::ModelChange)?,
            "thinking_level_change" => rest(map).map(KnownEntry::ThinkingLevelChange)?,
            "compaction" => rest(map).map(KnownEntry::Compaction)?,
            "branch_summary" => rest(map).map(KnownEntry::BranchSummary)?,
            "custom" => rest(map).map(KnownEntry::Custom)?,
            "custom_message" => rest(map).map(KnownEntry::CustomMessage)?,
            "label" => rest(map).map(KnownEntry::Label)?,
            "session_info" => rest(map).map(KnownEntry::SessionInfo)?,
            _ => return Err(refuse()),
        };
        let extra = match &entry {
            KnownEntry::Message(e) => &e.extra,
            KnownEntry::ModelChange(e) => &e.extra,
            KnownEntry::ThinkingLevelChange(e) => &e.extra,
            KnownEntry::Compaction(e) => &e.extra,
            KnownEntry::BranchSummary(e) => &e.extra,
            KnownEntry::Custom(e) => &e.extra,
            KnownEntry::CustomMessage(e) => &e.extra,
            KnownEntry::Label(e) => &e.extra,
            KnownEntry::SessionInfo(e) => &e.extra,
        };
        // A derived reader puts a repeated tag key into `extra`.
        if extra.contains_key("type") { Err(refuse()) } else { Ok((entry, None)) }
    }
}

fn message_entry<'de, A: MapAccess<'de>>(mut map: A) -> Result<(MessageEntry, Option<&'de RawValue>), A::Error> {
    let (mut id, mut parent_id, mut timestamp, mut message) = (None, None, None, None);
    let mut extra = Map::new();
    while let Some(key) = map.next_key::<&'de str>()? {
        match key {
            "id" => once(&mut id, map.next_value::<String>()?)?,
            "parentId" => once(&mut parent_id, map.next_value::<Option<String>>()?)?,
            "timestamp" => once(&mut timestamp, map.next_value::<String>()?)?,
            "message" => once(&mut message, map.next_value_seed(MessageSeed)?)?,
            other => keep_extra(&mut map, &mut extra, other, "type")?,
        }
    }
    let base = EntryBase { id: required(id)?, parent_id: parent_id.flatten(), timestamp: required(timestamp)? };
    let (message, usage) = required(message)?;
    Ok((MessageEntry { base, message: StoredMessage::Known(message), extra }, usage))
}

struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = (AgentMessage, Option<&'de RawValue>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed {
    type Value = (AgentMessage, Option<&'de RawValue>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let message = match first_tag(&mut map, "role")? {
            "user" => return user_message(map).map(|m| (AgentMessage::User(m), None)),
            "assistant" => {
                return assistant_message(map).map(|(m, usage)| (AgentMessage::Assistant(m), Some(usage)));
            }
            "toolResult" => return tool_result_message(map).map(|m| (AgentMessage::ToolResult(m), None)),
            "bashExecution" => rest(map).map(AgentMessage::BashExecution)?,
            "compactionSummary" => rest(map).map(AgentMessage::CompactionSummary)?,
            "branchSummary" => rest(map).map(AgentMessage::BranchSummary)?,
            "custom" => rest(map).map(AgentMessage::Custom)?,
            _ => return Err(refuse()),
        };
        let extra = match &message {
            AgentMessage::BashExecution(m) => &m.extra,
            AgentMessage::CompactionSummary(m) => &m.extra,
            AgentMessage::BranchSummary(m) => &m.extra,
            AgentMessage::Custom(m) => &m.extra,
            _ => return Ok((message, None)),
        };
        // A derived reader puts a repeated tag key into `extra`.
        if extra.contains_key("role") { Err(refuse()) } else { Ok((message, None)) }
    }
}

fn user_message<'de, A: MapAccess<'de>>(mut map: A) -> Result<UserMessage, A::Error> {
    let (mut content, mut timestamp) = (None, None);
    let mut extra = Map::new();
    while let Some(key) = map.next_key::<&'de str>()? {
        match key {
            "content" => once(&mut content, map.next_value_seed(UserContentSeed)?)?,
            "timestamp" => once(&mut timestamp, map.next_value::<i64>()?)?,
            other => keep_extra(&mut map, &mut extra, other, "role")?,
        }
    }
    Ok(UserMessage { content: required(content)?, timestamp: required(timestamp)?, extra })
}

/// An assistant message, and the text of its usage object.
fn assistant_message<'de, A: MapAccess<'de>>(mut map: A) -> Result<(AssistantMessage, &'de RawValue), A::Error> {
    let (mut content, mut api, mut provider, mut model, mut usage) = (None, None, None, None, None);
    let (mut stop_reason, mut timestamp, mut response_id, mut error_message) = (None, None, None, None);
    let (mut raw_stop_reason, mut duration_ms, mut thinking_level) = (None, None, None);
    let mut extra = Map::new();
    while let Some(key) = map.next_key::<&'de str>()? {
        match key {
            "content" => once(&mut content, map.next_value_seed(BlocksSeed)?)?,
            "api" => once(&mut api, map.next_value::<String>()?)?,
            "provider" => once(&mut provider, map.next_value::<String>()?)?,
            "model" => once(&mut model, map.next_value::<String>()?)?,
            "usage" => once(&mut usage, map.next_value::<&'de RawValue>()?)?,
            "stopReason" => once(&mut stop_reason, map.next_value()?)?,
            "timestamp" => once(&mut timestamp, map.next_value::<i64>()?)?,
            "responseId" => once(&mut response_id, map.next_value::<Option<String>>()?)?,
            "errorMessage" => once(&mut error_message, map.next_value::<Option<String>>()?)?,
            "rawStopReason" => once(&mut raw_stop_reason, map.next_value::<Option<String>>()?)?,
            "durationMs" => once(&mut duration_ms, map.next_value::<Option<u64>>()?)?,
            "thinkingLevel" => once(&mut thinking_level, map.next_value::<Option<String>>()?)?,
            other => keep_extra(&mut map, &mut extra, other, "role")?,
        }
    }
    let usage_text: &'de RawValue = required(usage)?;
    let usage = serde_json::from_str(usage_text.get()).map_err(|_| refuse::<A::Error>())?;
    let message = AssistantMessage {
        content: required(content)?,
        api: required(api)?,
        provider: required(provider)?,
        model: required(model)?,
        usage,
        stop_reason: required(stop_reason)?,
        timestamp: required(timestamp)?,
        response_id: response_id.flatten(),
        error_message: error_message.flatten(),
        raw_stop_reason: raw_stop_reason.flatten(),
        duration_ms: duration_ms.flatten(),
        thinking_level: thinking_level.flatten(),
        extra,
    };
    Ok((message, usage_text))
}

fn tool_result_message<'de, A: MapAccess<'de>>(mut map: A) -> Result<ToolResultMessage, A::Error> {
    let (mut tool_call_id, mut tool_name, mut content, mut details) = (None, None, None, None);
    let (mut usage, mut is_error, mut timestamp, mut duration_ms) = (None, None, None, None);
    let mut nested_calls = None;
    let mut extra = Map::new();
    while let Some(key) = map.next_key::<&'de str>()? {
        match key {
            "toolCallId" => once(&mut tool_call_id, map.next_value::<String>()?)?,
            "toolName" => once(&mut tool_name, map.next_value::<String>()?)?,
            "content" => once(&mut content, map.next_value_seed(BlocksSeed)?)?,
            "details" => once(&mut details, map.next_value::<Option<Value>>()?)?,
            "usage" => once(&mut usage, map.next_value()?)?,
            "isError" => once(&mut is_error, map.next_value::<bool>()?)?,
            "durationMs" => once(&mut duration_ms, map.next_value::<Option<u64>>()?)?,
            "timestamp" => once(&mut timestamp, map.next_value::<i64>()?)?,
            // A record of another shape is left to the careful reading (which keeps the line's text).
            "nestedCalls" => {
                let value = map.next_value::<Value>()?;
                once(&mut nested_calls, serde_json::from_value(value).map_err(|_| refuse::<A::Error>())?)?
            }
            other => keep_extra(&mut map, &mut extra, other, "role")?,
        }
    }
    Ok(ToolResultMessage {
        tool_call_id: required(tool_call_id)?,
        tool_name: required(tool_name)?,
        content: required(content)?,
        details: details.flatten(),
        usage: usage.flatten(),
        is_error: required(is_error)?,
        duration_ms: duration_ms.flatten(),
        timestamp: required(timestamp)?,
        nested_calls,
        extra,
    })
}

/// User content: a string, or a list of blocks.
struct UserContentSeed;

impl<'de> DeserializeSeed<'de> for UserContentSeed {
    type Value = UserContent;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<UserContent, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UserContentSeed {
    type Value = UserContent;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or a list of content blocks")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<UserContent, E> {
        Ok(UserContent::Text(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<UserContent, E> {
        Ok(UserContent::Text(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<UserContent, A::Error> {
        BlocksSeed.visit_seq(seq).map(UserContent::Blocks)
    }
}

/// A list of content blocks.
struct BlocksSeed;

impl<'de> DeserializeSeed<'de> for BlocksSeed {
    type Value = Vec<ContentBlock>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<ContentBlock>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for BlocksSeed {
    type Value = Vec<ContentBlock>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of content blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<ContentBlock>, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(block) = seq.next_element_seed(BlockSeed)? {
            blocks.push(block);
        }
        Ok(blocks)
    }
}

struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = ContentBlock;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ContentBlock, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BlockSeed {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a content block")
    }

    // Derived block readers ignore unknown keys (a repeated `type` among
    // them); the caller's byte comparison refuses such lines.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        match first_tag(&mut map, "type")? {
            "text" => text_content(map).map(ContentBlock::Text),
            "thinking" => rest(map).map(ContentBlock::Thinking),
            "image" => rest(map).map(ContentBlock::Image),
            "toolCall" => rest(map).map(ContentBlock::ToolCall),
            _ => Err(refuse()),
        }
    }
}

/// A text block whose text is kept as the literal it was written as.
fn text_content<'de, A: MapAccess<'de>>(mut map: A) -> Result<TextContent, A::Error> {
    let (mut text, mut text_signature) = (None, None);
    while let Some(key) = map.next_key::<&'de str>()? {
        match key {
            "text" => {
                let literal = map.next_value::<Box<RawValue>>()?;
                once(&mut text, Text::from_canonical_json(literal).ok_or_else(refuse)?)?;
            }
            "textSignature" => once(&mut text_signature, map.next_value::<Option<String>>()?)?,
            _ => return Err(refuse()),
        }
    }
    Ok(TextContent { text: required(text)?, text_signature: text_signature.flatten() })
}
