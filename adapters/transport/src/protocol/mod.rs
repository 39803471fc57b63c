//! The protocol table: every command once, with its name in each dialect,
//! the params type serde decodes it with, the op it becomes, and the typed
//! result its reply is sent as.
//!
//! Both decoders look commands up here, replies are encoded through the
//! row's result type, and the JSON Schemas, the README's method table and
//! the kit's coverage of our commands are generated from it. A new command
//! is a row here, its op handler in the core, and its tests.

pub mod decode;
mod from_reply;
pub mod params;
pub mod results;
mod table;
pub mod ui;

use pi_core::op::{Op, Reply};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use decode::FieldError;
pub use results::FromReply;
pub use table::COMMANDS;

/// A result type of the table: built from a reply, serialized onto the wire.
pub trait WireResult: FromReply + Serialize + JsonSchema {
    /// False for [`results::Ack`]: no native `data`, `{}` in JSON-RPC.
    const DATA: bool = true;
}

/// A command's result, serialized.
#[derive(Debug)]
pub enum Encoded {
    /// The command has no result data.
    Absent,
    Value(Box<RawValue>),
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
    params_schema: fn(&mut SchemaGenerator) -> Schema,
    encode: fn(Reply) -> Option<Result<Encoded, serde_json::Error>>,
    result_schema: fn(&mut SchemaGenerator) -> Option<Schema>,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Binding({})", self.name)
    }
}

fn params_schema<P: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<P>()
}

fn result_schema<R: WireResult>(g: &mut SchemaGenerator) -> Option<Schema> {
    R::DATA.then(|| g.subschema_for::<R>())
}

fn encode<R: WireResult>(reply: Reply) -> Option<Result<Encoded, serde_json::Error>> {
    let result = R::from_reply(reply)?;
    Some(match R::DATA {
        false => Ok(Encoded::Absent),
        true => serde_json::value::to_raw_value(&result).map(Encoded::Value),
    })
}

impl Binding {
    /// A binding whose params are `P` (decoded by `decode`) and whose result is `R`.
    pub const fn new<P: DeserializeOwned + JsonSchema, R: WireResult>(
        name: &'static str,
        decode: fn(&Map<String, Value>) -> Result<Op, FieldError>,
    ) -> Binding {
        Binding {
            name,
            decode,
            params_schema: params_schema::<P>,
            encode: encode::<R>,
            result_schema: result_schema::<R>,
        }
    }

    /// Decode the params into the command's op.
    pub fn decode(&self, params: &Map<String, Value>) -> Result<Op, FieldError> {
        (self.decode)(params)
    }

    /// Encode the reply through the command's result type.
    pub fn encode(&self, reply: Reply) -> Result<Encoded, EncodeError> {
        let error = |detail: String| EncodeError { command: self.name, detail };
        match (self.encode)(reply) {
            Some(Ok(encoded)) => Ok(encoded),
            Some(Err(e)) => Err(error(e.to_string())),
            None => Err(error("the reply is not this command's".to_string())),
        }
    }

    /// The schema of the params (a `$ref` into `g`'s definitions).
    pub fn params_schema(&self, g: &mut SchemaGenerator) -> Schema {
        (self.params_schema)(g)
    }

    /// The schema of the result; `None` when the command has no result data.
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

    /// The same params and result in both dialects, under two names.
    const fn both<P: DeserializeOwned + JsonSchema, R: WireResult>(
        doc: &'static str,
        native: &'static str,
        method: &'static str,
        decode: fn(&Map<String, Value>) -> Result<Op, FieldError>,
    ) -> Command {
        Command::new(doc).native(Binding::new::<P, R>(native, decode)).jsonrpc(Binding::new::<P, R>(method, decode))
    }
}

/// The native command of this `type`.
pub fn native(name: &str) -> Option<&'static Binding> {
    COMMANDS.iter().filter_map(|c| c.native.as_ref()).find(|b| b.name == name)
}

/// The JSON-RPC command of this `method`.
pub fn jsonrpc(method: &str) -> Option<&'static Binding> {
    COMMANDS.iter().filter_map(|c| c.jsonrpc.as_ref()).find(|b| b.name == method)
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
