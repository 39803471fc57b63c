//! The protocol table: every command once, with its name in each dialect,
//! the params type serde decodes it with, the op it becomes, and the typed
//! result its reply is sent as.
//!
//! Both decoders look commands up here, replies are encoded through the
//! row's result type, and the JSON Schemas, the README's method table and
//! the kit's coverage of our commands are generated from it. A new command
//! is a row here, its op handler in the core, and its tests.

pub mod client_params;
pub mod decode;
mod from_reply;
pub mod model_json;
pub mod params;
pub mod results;
mod state_json;
mod table;
pub mod ui;

use std::sync::OnceLock;

use pi_core::op::{Op, Reply, TypedOp};
use schemars::JsonSchema;
#[cfg(feature = "schemas")]
use schemars::{Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::streamed::{PIECE_BYTES, Serialized, StreamedJson, write_within};

pub use decode::FieldError;
pub use results::FromReply;
pub use table::COMMANDS;

/// A result type of the table: built from a reply, serialized onto the wire.
pub trait WireResult: Sized + Serialize + JsonSchema + Send + 'static {
    /// False for [`results::Ack`]: no native `data`, `{}` in JSON-RPC.
    const DATA: bool = true;

    /// True for results that can be big (a session's messages or entries):
    /// one bigger than [`PIECE_BYTES`] is [`streamed`](WireResult::streamed).
    const STREAMS: bool = false;

    /// The result as it is written when it is too big to serialise in memory.
    fn streamed(self) -> StreamedJson {
        Box::new(Serialized(self))
    }

    /// Append the result's JSON to `out`: the bytes `serde_json` writes for
    /// it (a result answered often may write them more directly).
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
}

/// A command's result, serialized.
#[derive(Debug)]
pub enum Encoded {
    /// The command has no result data.
    Absent,
    Value(Box<RawValue>),
}

/// How [`Binding::encode_into`] wrote a command's result.
pub enum Written {
    /// The command has no result data (nothing was written).
    Absent,
    /// The result was appended to the buffer.
    Inline,
    /// A result bigger than [`PIECE_BYTES`] (nothing was written): to be
    /// written as it is serialised.
    Streamed(StreamedJson),
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Written::Absent => "Absent",
            Written::Inline => "Inline",
            Written::Streamed(_) => "Streamed",
        })
    }
}

/// The reply did not fit the command's result type, or could not be serialized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot encode the reply to {command}: {detail}")]
pub struct EncodeError {
    pub command: &'static str,
    pub detail: String,
}

/// A command's shape in one dialect.
#[derive(Clone, Copy)]
pub struct Binding {
    /// The native `type` or the JSON-RPC `method`.
    pub name: &'static str,
    decode: fn(&Map<String, Value>) -> Result<Op, FieldError>,
    #[cfg(feature = "schemas")]
    params_schema: fn(&mut SchemaGenerator) -> Schema,
    encode: fn(Reply, &mut Vec<u8>) -> Option<std::io::Result<Written>>,
    #[cfg(feature = "schemas")]
    result_schema: fn(&mut SchemaGenerator) -> Option<Schema>,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Binding({})", self.name)
    }
}

#[cfg(feature = "schemas")]
fn params_schema<P: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<P>()
}

#[cfg(feature = "schemas")]
fn result_schema<R: WireResult>(g: &mut SchemaGenerator) -> Option<Schema> {
    R::DATA.then(|| g.subschema_for::<R>())
}

/// Append `R`'s result for `reply`, op `C`'s reply, to `out` (nothing when
/// it has no data, or when it is streamed); `None` when the reply is another
/// op's. On an error `out` is left as it was.
fn encode<C: TypedOp, R: WireResult + FromReply<C::Reply>>(
    reply: Reply,
    out: &mut Vec<u8>,
) -> Option<std::io::Result<Written>> {
    let result = R::from_reply(C::take_reply(reply)?);
    if !R::DATA {
        return Some(Ok(Written::Absent));
    }
    if R::STREAMS {
        // Serialised in memory up to a piece; a bigger result is streamed.
        let body = result.streamed();
        return Some(match write_within(&*body, out, PIECE_BYTES) {
            Ok(true) => Ok(Written::Inline),
            Ok(false) => Ok(Written::Streamed(body)),
            Err(e) => Err(e),
        });
    }
    let start = out.len();
    Some(match result.write_json(out) {
        Ok(()) => Ok(Written::Inline),
        Err(e) => {
            out.truncate(start);
            Err(e.into())
        }
    })
}

impl Binding {
    /// A binding of op `C` whose params are `P` (decoded by `decode`, made
    /// by the table's `bind!` so that it can only make a `C`) and whose
    /// result `R` is built from `C`'s reply.
    // `P` is used only for the schemas (feature `schemas`).
    #[cfg_attr(not(feature = "schemas"), allow(clippy::extra_unused_type_parameters))]
    const fn new<C: TypedOp, P: DeserializeOwned + JsonSchema, R: WireResult + FromReply<C::Reply>>(
        name: &'static str,
        decode: fn(&Map<String, Value>) -> Result<Op, FieldError>,
    ) -> Binding {
        Binding {
            name,
            decode,
            #[cfg(feature = "schemas")]
            params_schema: params_schema::<P>,
            encode: encode::<C, R>,
            #[cfg(feature = "schemas")]
            result_schema: result_schema::<R>,
        }
    }

    /// Decode the params into the command's op.
    pub fn decode(&self, params: &Map<String, Value>) -> Result<Op, FieldError> {
        (self.decode)(params)
    }

    /// Encode the reply through the command's result type, whole.
    pub fn encode(&self, reply: Reply) -> Result<Encoded, EncodeError> {
        let error = |detail: String| EncodeError { command: self.name, detail };
        let mut json = Vec::new();
        match self.encode_into(reply, &mut json)? {
            Written::Absent => return Ok(Encoded::Absent),
            Written::Inline => {}
            Written::Streamed(body) => body.write_json(&mut json).map_err(|e| error(e.to_string()))?,
        }
        let text = String::from_utf8(json).map_err(|e| error(e.to_string()))?;
        RawValue::from_string(text).map(Encoded::Value).map_err(|e| error(e.to_string()))
    }

    /// Encode the reply through the command's result type, appended to
    /// `out` (the response's bytes before its result) with no copy; a big
    /// result (more than [`PIECE_BYTES`]) is left to be written as it is
    /// serialised. On an error `out` is left as it was.
    pub fn encode_into(&self, reply: Reply, out: &mut Vec<u8>) -> Result<Written, EncodeError> {
        let error = |detail: String| EncodeError { command: self.name, detail };
        match (self.encode)(reply, out) {
            Some(Ok(written)) => Ok(written),
            Some(Err(e)) => Err(error(e.to_string())),
            None => Err(error("the reply is not this command's".to_string())),
        }
    }

    /// The schema of the params (a `$ref` into `g`'s definitions).
    #[cfg(feature = "schemas")]
    pub fn params_schema(&self, g: &mut SchemaGenerator) -> Schema {
        (self.params_schema)(g)
    }

    /// The schema of the result; `None` when the command has no result data.
    #[cfg(feature = "schemas")]
    pub fn result_schema(&self, g: &mut SchemaGenerator) -> Option<Schema> {
        (self.result_schema)(g)
    }
}

/// One command of the protocol.
#[derive(Clone, Copy)]
pub struct Command {
    /// What the command does (schema descriptions, the README's table).
    pub doc: &'static str,
    /// Its native `type`, if the native dialect has it.
    pub native: Option<Binding>,
    /// Its JSON-RPC `method`, if the JSON-RPC dialect has it.
    pub jsonrpc: Option<Binding>,
}

impl Command {
    const fn new(doc: &'static str) -> Command {
        Command { doc, native: None, jsonrpc: None }
    }

    const fn native(mut self, binding: Binding) -> Command {
        self.native = Some(binding);
        self
    }

    const fn jsonrpc(mut self, binding: Binding) -> Command {
        self.jsonrpc = Some(binding);
        self
    }

    /// The same binding in both dialects, under two names.
    const fn both(doc: &'static str, native: Binding, method: &'static str) -> Command {
        let mut jsonrpc = native;
        jsonrpc.name = method;
        Command::new(doc).native(native).jsonrpc(jsonrpc)
    }
}

/// One dialect's bindings by the length of their names, made from the table
/// once: a name is compared with the few of its length only (every record
/// is looked up, so the lookup is not a scan of the whole table).
struct ByLength(Vec<Vec<&'static Binding>>);

impl ByLength {
    fn of(dialect: fn(&'static Command) -> Option<&'static Binding>) -> ByLength {
        let mut lengths: Vec<Vec<&'static Binding>> = Vec::new();
        for binding in COMMANDS.iter().filter_map(dialect) {
            let len = binding.name.len();
            if lengths.len() <= len {
                lengths.resize_with(len + 1, Vec::new);
            }
            lengths[len].push(binding);
        }
        ByLength(lengths)
    }

    fn find(&self, name: &str) -> Option<&'static Binding> {
        self.0.get(name.len())?.iter().find(|b| b.name == name).copied()
    }
}

/// The native command of this `type`.
pub fn native(name: &str) -> Option<&'static Binding> {
    static NATIVE: OnceLock<ByLength> = OnceLock::new();
    NATIVE.get_or_init(|| ByLength::of(|c| c.native.as_ref())).find(name)
}

/// The JSON-RPC command of this `method`.
pub fn jsonrpc(method: &str) -> Option<&'static Binding> {
    static JSONRPC: OnceLock<ByLength> = OnceLock::new();
    JSONRPC.get_or_init(|| ByLength::of(|c| c.jsonrpc.as_ref())).find(method)
}

/// The README's method table (one row per command), in table order.
pub fn markdown_table() -> String {
    let mut out = String::from("| JSON-RPC method | native `type` | what it does |\n| --- | --- | --- |\n");
    for c in COMMANDS {
        let name = |b: &Option<Binding>| b.map_or_else(|| "–".to_string(), |b| format!("`{}`", b.name));
        out.push_str(&format!("| {} | {} | {} |\n", name(&c.jsonrpc), name(&c.native), c.doc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_per_dialect() {
        for dialect in [|c: &Command| c.native, |c: &Command| c.jsonrpc] {
            let mut names: Vec<&str> = COMMANDS.iter().filter_map(dialect).map(|b| b.name).collect();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count);
        }
        assert!(native("get_state").is_some() && jsonrpc("getState").is_some() && native("getState").is_none());
    }

    #[test]
    fn every_name_finds_its_binding() {
        for command in COMMANDS {
            if let Some(binding) = &command.native {
                assert!(std::ptr::eq(native(binding.name).unwrap(), binding), "{}", binding.name);
                assert!(native(&format!("{}x", binding.name)).is_none() && native(&binding.name[1..]).is_none());
            }
            if let Some(binding) = &command.jsonrpc {
                assert!(std::ptr::eq(jsonrpc(binding.name).unwrap(), binding), "{}", binding.name);
                assert!(jsonrpc(&binding.name.to_uppercase()).is_none());
            }
        }
        let long = "x".repeat(1000);
        assert!(native("").is_none() && native(&long).is_none() && jsonrpc(&long).is_none());
    }

    #[test]
    fn the_readme_shows_the_table() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
        let table = markdown_table();
        assert!(readme.contains(&table), "README.md's method table is stale; it should read:\n{table}");
    }

    #[test]
    fn params_decode_through_the_table() {
        let map = |v: Value| v.as_object().cloned().unwrap_or_default();
        let decode = |b: &Binding, v: Value| b.decode(&map(v));
        let prompt = native("prompt").unwrap();
        let images = serde_json::json!({"message": "hi", "images": [{"type": "image", "data": "AA==", "mimeType": "image/png"}], "streamingBehavior": "followUp"});
        assert!(
            matches!(decode(prompt, images), Ok(Op::Prompt { ref images, streaming_behavior: Some(_), .. }) if images.len() == 1)
        );
        let e = decode(prompt, serde_json::json!({"message": "hi", "images": [{"data": 5}]})).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("images", "images[0].data must be a string, got a number"));
        let e = decode(prompt, serde_json::json!({"message": "hi", "streamingBehavior": "later"})).unwrap_err();
        assert_eq!(e.message, "invalid streamingBehavior \"later\": expected \"steer\" or \"followUp\"");
        let e = decode(jsonrpc("prompt").unwrap(), serde_json::json!({})).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("content", "'content' is required"));
        let e = decode(jsonrpc("setActiveTools").unwrap(), serde_json::json!({"tools": ["read", 3]})).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("tools", "tools[1] must be a string, got a number"));
        let e = decode(jsonrpc("setActiveTools").unwrap(), serde_json::json!({})).unwrap_err();
        assert_eq!(e.message, "missing required field \"tools\" (an array of strings)");
        let e = decode(native("set_model").unwrap(), serde_json::json!({"provider": "p"})).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("modelId", "missing required field \"modelId\" (a string)")
        );
        assert_eq!(
            decode(jsonrpc("initialize").unwrap(), serde_json::json!({"thinkingLevel": null, "tools": null})),
            Ok(Op::Initialize(Default::default()))
        );
        let e = decode(jsonrpc("initialize").unwrap(), serde_json::json!({"thinkingLevel": "lots"})).unwrap_err();
        assert_eq!(e.field, "thinkingLevel");
        assert!(e.message.starts_with("Invalid thinking level: lots"), "{}", e.message);
    }

    #[test]
    fn replies_encode_through_the_result_types() {
        let ack = native("abort").unwrap().encode(Reply::Ack).unwrap();
        assert!(matches!(ack, Encoded::Absent));
        let levels = pi_core::op::Reply::CycleThinkingLevel(None);
        match native("cycle_thinking_level").unwrap().encode(levels).unwrap() {
            Encoded::Value(raw) => assert_eq!(raw.get(), "null"),
            Encoded::Absent => panic!("null data expected"),
        }
        let status = jsonrpc("getStatus").unwrap().encode(Reply::Ack).unwrap_err();
        assert_eq!(status.command, "getStatus");
    }
}
