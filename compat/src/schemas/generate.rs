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
use pi_core::session::{SessionEntry, SessionHeader};
use pi_jsonl::wire::WireEvent;
use pi_jsonrpc::wire as rpc;
use pi_transport::protocol::results::Ack;
use pi_transport::protocol::{Binding, COMMANDS};
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

/// The properties, required names and other keywords of a params type, inlined from its definition.
fn params_members(g: &mut SchemaGenerator, binding: &Binding) -> (Map<String, Value>, Vec<Value>, Map<String, Value>) {
    let schema = binding.params_schema(g).to_value();
    let def = match schema.get("$ref").and_then(Value::as_str) {
        Some(target) => {
            let name = target.rsplit('/').next().unwrap_or_default();
            g.definitions().get(name).cloned().unwrap_or(schema.clone())
        }
        None => schema.clone(),
    };
    let mut def = match def {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let props = match def.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let required = match def.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    for key in ["type", "description", "title", "$schema"] {
        def.remove(key);
    }
    (props, required, def)
}

fn native_commands() -> SchemaFile {
    let mut g = generator(false);
    let mut branches = Vec::new();
    for command in COMMANDS {
        let Some(binding) = &command.native else { continue };
        let (params, required, extra) = params_members(&mut g, binding);
        let mut props = Map::new();
        props.insert("type".into(), json!({ "const": binding.name }));
        props.insert("id".into(), any_id("Optional correlation id of any JSON type, echoed verbatim on the response."));
        props.extend(params);
        let mut branch = Map::new();
        branch.insert("description".into(), json!(command.doc));
        branch.insert("type".into(), json!("object"));
        branch.insert("properties".into(), Value::Object(props));
        let mut req = vec![json!("type")];
        req.extend(required);
        branch.insert("required".into(), Value::Array(req));
        branch.extend(extra);
        branches.push(Value::Object(branch));
    }
    let mut body = Map::new();
    body.insert("oneOf".into(), Value::Array(branches));
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
    // A dialog answer gets no response.
    for binding in COMMANDS.iter().filter_map(|c| c.native.as_ref()).filter(|b| b.name != "extension_ui_response") {
        let command = binding.name;
        let mut props = Map::new();
        props.insert("id".into(), response_id());
        props.insert("type".into(), json!({ "const": "response" }));
        props.insert("command".into(), json!({ "const": command }));
        props.insert("success".into(), json!({ "const": true }));
        let mut required = vec![json!("type"), json!("command"), json!("success")];
        if let Some(data) = binding.result_schema(&mut g) {
            props.insert("data".into(), data.to_value());
            required.push(json!("data"));
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

/// The result schema of every JSON-RPC method, keyed by method.
fn rpc_results(g: &mut SchemaGenerator) -> Vec<(&'static str, Value)> {
    let empty = sub::<Ack>(g);
    COMMANDS
        .iter()
        .filter_map(|c| c.jsonrpc.as_ref())
        .map(|b| (b.name, b.result_schema(g).map_or_else(|| empty.clone(), |s| s.to_value())))
        .collect()
}

fn rpc_requests() -> SchemaFile {
    let mut g = generator(false);
    let mut branches = Vec::new();
    let mut ui_response_params = None;
    for command in COMMANDS {
        let Some(binding) = &command.jsonrpc else { continue };
        let params = binding.params_schema(&mut g).to_value();
        let (_, required, extra) = params_members(&mut g, binding);
        // Params may be left out when the method requires none.
        let needs_params = !required.is_empty() || extra.contains_key("anyOf");
        if binding.name == "extension:response" {
            ui_response_params = Some(params.clone());
        }
        let mut req = vec![json!("jsonrpc"), json!("method")];
        if needs_params {
            req.push(json!("params"));
        }
        branches.push(json!({
            "description": command.doc,
            "type": "object",
            "properties": {
                "jsonrpc": { "const": "2.0" },
                "id": jsonrpc_id(),
                "method": { "const": binding.name },
                "params": params
            },
            "required": req
        }));
    }
    if let Some(params) = ui_response_params {
        branches.push(json!({
            "description": "The client's answer to an `extension:ui` dialog (a notification: no `id`, no response).",
            "type": "object",
            "properties": {
                "jsonrpc": { "const": "2.0" },
                "method": { "const": "extension:response" },
                "params": params
            },
            "required": ["jsonrpc", "method", "params"]
        }));
    }
    let mut body = Map::new();
    body.insert("oneOf".into(), Value::Array(branches));
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
        super::acp::messages(),
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
