//! Generating the JSON Schemas in `schemas/` from the Rust wire types.
//!
//! schemars describes the payloads (with the doc comments as descriptions);
//! this module assembles the envelopes of each message family around them
//! (`id`, `type`/`command` of native responses, `jsonrpc`/`id`/`method` of
//! JSON-RPC messages), then normalises: `$ref`s that carry sibling
//! properties are inlined, every object with listed properties is closed
//! (`additionalProperties: false`) unless it says otherwise, and unused
//! definitions are dropped. One function, [`generate`], yields every file;
//! `gen-schemas` writes them and the drift test compares them.

use pi_core::message::AgentMessage;
use pi_core::model::Model;
use pi_core::session::{SessionEntry, SessionHeader};
use pi_jsonl::wire::{self, WireCompactionResult, WireEvent};
use pi_jsonl::wire_command::WireCommand;
use pi_jsonrpc::params::{ClientRequest, ExtensionResponseParams};
use pi_jsonrpc::wire as rpc;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::normalize::normalize;

/// One generated schema file.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaFile {
    /// Path relative to the `schemas/` directory, e.g. `jsonl/event.schema.json`.
    pub path: &'static str,
    pub schema: Value,
}

impl SchemaFile {
    /// The file's text: pretty JSON and a final newline.
    pub fn text(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.schema).unwrap_or_default();
        s.push('\n');
        s
    }
}

const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";
const BASE_ID: &str = "https://pi-rpc.invalid/schemas/";

fn generator(serialize: bool) -> SchemaGenerator {
    let settings = SchemaSettings::draft2020_12();
    let settings = if serialize { settings.for_serialize() } else { settings.for_deserialize() };
    settings.into_generator()
}

/// The schema of `T` in `g` (a `$ref` when `T` has a name), as a value.
fn sub<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

fn any_id(description: &str) -> Value {
    json!({ "description": description })
}

fn jsonrpc_id() -> Value {
    json!({ "description": "Request id: a string, a number or null, echoed verbatim.", "type": ["string", "number", "null"] })
}

/// Assemble a root schema with the generator's definitions.
fn root(
    path: &'static str,
    title: &str,
    description: &str,
    body: Map<String, Value>,
    g: &mut SchemaGenerator,
) -> SchemaFile {
    let mut schema = Map::new();
    schema.insert("$schema".into(), json!(DRAFT));
    schema.insert("$id".into(), json!(format!("{BASE_ID}{path}")));
    schema.insert("title".into(), json!(title));
    schema.insert("description".into(), json!(description));
    schema.extend(body);
    let defs = g.take_definitions(true);
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    let mut value = Value::Object(schema);
    normalize(&mut value);
    SchemaFile { path, schema: value }
}

/// Add properties (first in key order) and required names to every branch of `oneOf`.
fn add_to_branches(schema: &mut Map<String, Value>, props: &[(&str, Value)], required: &[&str]) {
    let Some(branches) = schema.get_mut("oneOf").and_then(Value::as_array_mut) else { return };
    for b in branches {
        let Some(obj) = b.as_object_mut() else { continue };
        let mut new_props = Map::new();
        for (k, v) in props {
            new_props.insert((*k).to_string(), v.clone());
        }
        if let Some(Value::Object(old)) = obj.remove("properties") {
            for (k, v) in old {
                new_props.entry(k).or_insert(v);
            }
        }
        obj.insert("properties".into(), Value::Object(new_props));
        let mut req: Vec<Value> = required.iter().map(|r| json!(r)).collect();
        if let Some(Value::Array(old)) = obj.remove("required") {
            req.extend(old.into_iter().filter(|v| !required.iter().any(|r| v == r)));
        }
        obj.insert("required".into(), Value::Array(req));
    }
}

/// Take the root schema of `T` (its body keys, definitions stay in `g`).
fn body_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Map<String, Value> {
    let mut v = g.root_schema_for::<T>().to_value();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.remove("description");
        if let Some(Value::Object(defs)) = obj.remove("$defs") {
            g.definitions_mut().extend(defs);
        }
    }
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn native_commands() -> SchemaFile {
    let mut g = generator(false);
    let mut body = body_of::<WireCommand>(&mut g);
    add_to_branches(
        &mut body,
        &[("id", any_id("Optional correlation id of any JSON type, echoed verbatim on the response."))],
        &[],
    );
    root(
        "jsonl/command.schema.json",
        "pi native dialect: command",
        "One line a client writes to a native-dialect server (`pi --mode rpc`). Lines are LF-terminated; a trailing CR is stripped.",
        body,
        &mut g,
    )
}

fn native_events() -> SchemaFile {
    let mut g = generator(true);
    let body = body_of::<WireEvent>(&mut g);
    root(
        "jsonl/event.schema.json",
        "pi native dialect: event",
        "One event line a native-dialect server writes (everything that is not a `response`).",
        body,
        &mut g,
    )
}

/// What a native command's successful response carries in `data`.
enum Data {
    /// No `data` member.
    None,
    /// `data` with this schema.
    Schema(Value),
    /// `data` with this schema, or null.
    OrNull(Value),
}

/// Every native command and its success data, in the seed's order.
fn native_data(g: &mut SchemaGenerator) -> Vec<(&'static str, Data)> {
    let disposition = sub::<wire::DispositionData>(g);
    let cancelled = sub::<wire::CancelledData>(g);
    vec![
        ("prompt", Data::Schema(disposition.clone())),
        ("steer", Data::Schema(disposition.clone())),
        ("follow_up", Data::Schema(disposition)),
        ("abort", Data::None),
        ("new_session", Data::Schema(cancelled.clone())),
        ("get_state", Data::Schema(sub::<wire::StateData>(g))),
        ("get_messages", Data::Schema(sub::<wire::MessagesData>(g))),
        ("set_model", Data::Schema(sub::<Model>(g))),
        ("cycle_model", Data::OrNull(sub::<wire::CycleModelData>(g))),
        ("get_available_models", Data::Schema(sub::<wire::ModelsData>(g))),
        ("set_thinking_level", Data::None),
        ("cycle_thinking_level", Data::OrNull(sub::<wire::LevelData>(g))),
        ("get_available_thinking_levels", Data::Schema(sub::<wire::LevelsData>(g))),
        ("set_steering_mode", Data::None),
        ("set_follow_up_mode", Data::None),
        ("compact", Data::Schema(sub::<WireCompactionResult>(g))),
        ("set_auto_compaction", Data::None),
        ("set_auto_retry", Data::None),
        ("abort_retry", Data::None),
        ("bash", Data::Schema(sub::<wire::BashData>(g))),
        ("abort_bash", Data::None),
        ("get_session_stats", Data::Schema(sub::<wire::SessionStatsData>(g))),
        ("export_html", Data::Schema(sub::<wire::ExportHtmlData>(g))),
        ("switch_session", Data::Schema(cancelled.clone())),
        ("fork", Data::Schema(sub::<wire::ForkData>(g))),
        ("clone", Data::Schema(cancelled)),
        ("get_fork_messages", Data::Schema(sub::<wire::ForkMessagesData>(g))),
        ("get_entries", Data::Schema(sub::<wire::EntriesData>(g))),
        ("get_tree", Data::Schema(sub::<wire::TreeData>(g))),
        ("get_last_assistant_text", Data::Schema(sub::<wire::LastAssistantTextData>(g))),
        ("set_session_name", Data::None),
        ("get_commands", Data::Schema(sub::<wire::CommandsData>(g))),
        ("clear_queue", Data::Schema(sub::<wire::QueueData>(g))),
    ]
}

fn response_id() -> Value {
    any_id("The request's `id`, echoed verbatim; absent when the request had none and on parse errors.")
}

fn native_responses() -> SchemaFile {
    let mut g = generator(true);
    let mut branches = vec![json!({
        "description": "A failed command: unparsable line (`command: \"parse\"`), unknown or malformed command, or a command that could not be carried out.",
        "type": "object",
        "properties": {
            "id": response_id(),
            "type": { "const": "response" },
            "command": { "description": "The command type; `parse` for unparsable lines; absent when the line had no usable `type`.", "type": "string" },
            "success": { "const": false },
            "error": { "description": "What went wrong, readable.", "type": "string" }
        },
        "required": ["type", "success", "error"]
    })];
    for (command, data) in native_data(&mut g) {
        let mut props = Map::new();
        props.insert("id".into(), response_id());
        props.insert("type".into(), json!({ "const": "response" }));
        props.insert("command".into(), json!({ "const": command }));
        props.insert("success".into(), json!({ "const": true }));
        let mut required = vec![json!("type"), json!("command"), json!("success")];
        match data {
            Data::None => {}
            Data::Schema(s) => {
                props.insert("data".into(), s);
                required.push(json!("data"));
            }
            Data::OrNull(s) => {
                props.insert("data".into(), json!({ "anyOf": [s, { "type": "null" }] }));
                required.push(json!("data"));
            }
        }
        branches.push(json!({
            "description": format!("A successful `{command}` response."),
            "type": "object",
            "properties": props,
            "required": required
        }));
    }
    let mut body = Map::new();
    body.insert("oneOf".into(), Value::Array(branches));
    root(
        "jsonl/response.schema.json",
        "pi native dialect: response",
        "A `response` line: exactly one per command, after any events the command causes before it.",
        body,
        &mut g,
    )
}

/// The JSON-RPC method's native command (for its result), from the method table.
fn native_of(method: &str) -> Option<&'static str> {
    pi_jsonrpc::methods::METHOD_TABLE.iter().find(|(m, _)| *m == method).and_then(|(_, n)| *n)
}

/// The result schema of every JSON-RPC method, keyed by method.
fn rpc_results(g: &mut SchemaGenerator) -> Vec<(&'static str, Value)> {
    let native: Vec<(&'static str, Data)> = native_data(g);
    let empty = sub::<rpc::EmptyResult>(g);
    let prompt = sub::<rpc::PromptResult>(g);
    let session = sub::<rpc::SessionResult>(g);
    pi_jsonrpc::methods::METHOD_TABLE
        .iter()
        .map(|(method, _)| {
            let schema = match *method {
                "initialize" => session.clone(),
                "resumeSession" => sub::<wire::CancelledData>(g),
                "prompt" | "sendUserMessage" | "steer" | "followUp" => prompt.clone(),
                "getStatus" => sub::<rpc::StatusResult>(g),
                "setActiveTools" => sub::<wire::ToolsData>(g),
                "shutdown" => empty.clone(),
                m => match native_of(m).and_then(|n| native.iter().find(|(c, _)| *c == n)) {
                    Some((_, Data::None)) | None => empty.clone(),
                    Some((_, Data::Schema(s))) => s.clone(),
                    Some((_, Data::OrNull(s))) => json!({ "anyOf": [s, { "type": "null" }] }),
                },
            };
            (*method, schema)
        })
        .collect()
}

fn rpc_requests() -> SchemaFile {
    let mut g = generator(false);
    let mut body = body_of::<ClientRequest>(&mut g);
    add_to_branches(&mut body, &[("jsonrpc", json!({ "const": "2.0" })), ("id", jsonrpc_id())], &["jsonrpc"]);
    // Params may be left out when the method requires none.
    let defs = g.definitions().clone();
    if let Some(branches) = body.get_mut("oneOf").and_then(Value::as_array_mut) {
        for b in branches.iter_mut() {
            let params_ref = b.pointer("/properties/params/$ref").and_then(Value::as_str).unwrap_or("").to_string();
            let def = params_ref.rsplit('/').next().and_then(|name| defs.get(name));
            let needs = def.is_some_and(|d| {
                d.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty()) || d.get("anyOf").is_some()
            });
            if !needs && let Some(Value::Array(req)) = b.get_mut("required") {
                req.retain(|r| r != "params");
            }
        }
        let response_params = sub::<ExtensionResponseParams>(&mut g);
        branches.push(json!({
            "description": "The client's answer to an `extension:ui` dialog (a notification: no `id`, no response).",
            "type": "object",
            "properties": {
                "jsonrpc": { "const": "2.0" },
                "method": { "const": "extension:response" },
                "params": response_params
            },
            "required": ["jsonrpc", "method", "params"]
        }));
    }
    root(
        "jsonrpc/request.schema.json",
        "pi JSON-RPC dialect: request",
        "A request (with `id`) or notification (without) a client sends. `params` is an object (by name); `[]` counts as no params. Batches are arrays of these.",
        body,
        &mut g,
    )
}

fn rpc_responses() -> SchemaFile {
    let mut g = generator(true);
    let error = sub::<super::error_object::ErrorObjectSchema>(&mut g);
    let results = rpc_results(&mut g);
    let mut result_defs = Map::new();
    for (method, schema) in results {
        result_defs.insert(method.to_string(), schema);
    }
    let mut body = Map::new();
    body.insert(
        "oneOf".into(),
        json!([
            {
                "description": "A successful response; the shape of `result` depends on the method (see `x-results`).",
                "type": "object",
                "properties": { "jsonrpc": { "const": "2.0" }, "id": jsonrpc_id(), "result": {} },
                "required": ["jsonrpc", "id", "result"]
            },
            {
                "description": "An error response; `id` is null when the request's id could not be read.",
                "type": "object",
                "properties": { "jsonrpc": { "const": "2.0" }, "id": jsonrpc_id(), "error": error },
                "required": ["jsonrpc", "id", "error"]
            }
        ]),
    );
    body.insert("x-results".into(), Value::Object(result_defs));
    root(
        "jsonrpc/response.schema.json",
        "pi JSON-RPC dialect: response",
        "A response to one request (a batch is answered with an array of these). `x-results` maps each method to the schema of its `result`.",
        body,
        &mut g,
    )
}

fn rpc_notifications() -> SchemaFile {
    let mut g = generator(true);
    let mut body = body_of::<rpc::ServerNotification>(&mut g);
    add_to_branches(&mut body, &[("jsonrpc", json!({ "const": "2.0" }))], &["jsonrpc"]);
    root(
        "jsonrpc/notification.schema.json",
        "pi JSON-RPC dialect: notification",
        "A notification the server sends (no `id`).",
        body,
        &mut g,
    )
}

fn rpc_errors() -> SchemaFile {
    let mut g = generator(true);
    let body = body_of::<super::error_object::ErrorObjectSchema>(&mut g);
    root(
        "jsonrpc/error.schema.json",
        "pi JSON-RPC dialect: error object",
        "The `error` member of an error response, with the code table of the dialect.",
        body,
        &mut g,
    )
}

fn session_entries() -> SchemaFile {
    let mut g = generator(true);
    let header = sub::<SessionHeader>(&mut g);
    let entry = sub::<SessionEntry>(&mut g);
    // Messages are reachable from entries; make sure the definition is there.
    let _ = sub::<AgentMessage>(&mut g);
    let mut body = Map::new();
    body.insert(
        "oneOf".into(),
        json!([
            { "description": "Line 1: the session header.", "$ref": header["$ref"] },
            { "description": "Every later line: one entry of the session tree.", "$ref": entry["$ref"] }
        ]),
    );
    root(
        "session/entry.schema.json",
        "pi session file line",
        "One line of a session file (JSONL, v3): the header first, then entries appended in order.",
        body,
        &mut g,
    )
}

/// Every schema file, in a stable order.
pub fn generate() -> Vec<SchemaFile> {
    vec![
        native_commands(),
        native_responses(),
        native_events(),
        rpc_requests(),
        rpc_responses(),
        rpc_notifications(),
        rpc_errors(),
        session_entries(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemas::check::EMBEDDED;

    /// The drift test: the committed schemas are exactly what the Rust types generate.
    #[test]
    fn committed_schemas_match_the_rust_types() {
        let files = generate();
        assert_eq!(files.len(), EMBEDDED.len());
        for file in files {
            let name = file.path.trim_end_matches(".schema.json");
            let committed = EMBEDDED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t);
            assert!(
                committed == Some(file.text().as_str()),
                "schemas/{} is stale: run `cargo run -p pi-compat --bin gen-schemas` and commit the result",
                file.path
            );
        }
    }

    #[test]
    fn generated_schemas_are_valid_draft_2020_12() {
        for file in generate() {
            assert!(jsonschema::meta::is_valid(&file.schema), "{} is not a valid schema", file.path);
        }
    }
}
