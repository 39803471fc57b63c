//! Validating lines against the committed schemas (embedded at build time).
//!
//! Validating against a whole `oneOf` gives useless errors ("not valid under
//! any of the schemas"), so each family is split into its leaf shapes; a line
//! is checked against the leaves whose discriminators (`const` properties and
//! required members) it carries, and the first leaf's errors are reported
//! with their instance paths.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};

/// How strictly to read the schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// As committed: closed objects reject unknown members.
    Strict,
    /// Unknown members allowed everywhere (for implementations that add fields,
    /// such as pi 1.6's `durationMs`); required members and types still checked.
    Open,
}

/// The committed schema files, by family.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("jsonl/command", include_str!("../../../schemas/jsonl/command.schema.json")),
    ("jsonl/response", include_str!("../../../schemas/jsonl/response.schema.json")),
    ("jsonl/event", include_str!("../../../schemas/jsonl/event.schema.json")),
    ("jsonrpc/request", include_str!("../../../schemas/jsonrpc/request.schema.json")),
    ("jsonrpc/response", include_str!("../../../schemas/jsonrpc/response.schema.json")),
    ("jsonrpc/notification", include_str!("../../../schemas/jsonrpc/notification.schema.json")),
    ("jsonrpc/error", include_str!("../../../schemas/jsonrpc/error.schema.json")),
    ("session/entry", include_str!("../../../schemas/session/entry.schema.json")),
    ("acp/messages", include_str!("../../../schemas/acp/messages.schema.json")),
];

/// One leaf shape of a family and its (lazily compiled) validator.
struct Leaf {
    consts: Vec<(String, Value)>,
    required: Vec<String>,
    schema: Value,
    compiled: OnceLock<Result<jsonschema::Validator, String>>,
}

/// One schema file, split into leaves.
struct Family {
    name: String,
    defs: Value,
    leaves: Vec<Leaf>,
    /// Compiled sub-schemas by JSON pointer (e.g. `/x-results/prompt`).
    parts: Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>,
    root: Value,
}

/// The schemas of both dialects and of session files.
pub struct Schemas {
    families: HashMap<String, Family>,
}

fn open_up(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if obj.get("additionalProperties") == Some(&Value::Bool(false)) {
                obj.remove("additionalProperties");
            }
            obj.values_mut().for_each(open_up);
        }
        Value::Array(items) => items.iter_mut().for_each(open_up),
        _ => {}
    }
}

fn with_defs(schema: &Value, defs: &Value) -> Value {
    let mut obj = match schema {
        Value::Object(m) => m.clone(),
        other => {
            let mut m = Map::new();
            m.insert("allOf".into(), Value::Array(vec![other.clone()]));
            m
        }
    };
    obj.insert("$schema".into(), Value::String("https://json-schema.org/draft/2020-12/schema".into()));
    if !defs.is_null() {
        obj.insert("$defs".into(), defs.clone());
    }
    Value::Object(obj)
}

fn resolve<'a>(node: &'a Value, defs: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) if node.get("properties").is_none() => defs.get(name).map(|d| resolve(d, defs)).unwrap_or(node),
        _ => node,
    }
}

/// Expand `oneOf`/`anyOf`/`$ref` into the leaf object shapes.
fn leaves_of(node: &Value, defs: &Value, out: &mut Vec<Value>, depth: usize) {
    let node = resolve(node, defs);
    let branches = node.get("oneOf").or_else(|| node.get("anyOf")).and_then(Value::as_array);
    match branches {
        Some(items) if depth < 6 => items.iter().for_each(|b| leaves_of(b, defs, out, depth + 1)),
        _ => out.push(node.clone()),
    }
}

fn leaf(schema: Value) -> Leaf {
    let mut consts = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            if let Some(c) = p.get("const") {
                consts.push((k.clone(), c.clone()));
            }
        }
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    Leaf { consts, required, schema, compiled: OnceLock::new() }
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("schema does not compile: {e}"))
}

fn describe(errors: Vec<String>) -> String {
    let mut errors = errors;
    errors.truncate(4);
    errors.join("; ")
}

fn run(validator: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            let text = e.to_string();
            let text = if text.chars().count() > 300 {
                format!("{}…", text.chars().take(300).collect::<String>())
            } else {
                text
            };
            format!("at {}: {text}", if path.is_empty() { "/" } else { &path })
        })
        .collect();
    if errors.is_empty() { Ok(()) } else { Err(describe(errors)) }
}

impl Family {
    fn new(name: &str, text: &str, strictness: Strictness) -> Result<Family, String> {
        let mut root: Value = serde_json::from_str(text).map_err(|e| format!("{name}: bad JSON: {e}"))?;
        if strictness == Strictness::Open {
            open_up(&mut root);
        }
        let defs = root.get("$defs").cloned().unwrap_or(Value::Null);
        let mut shapes = Vec::new();
        leaves_of(&root, &defs, &mut shapes, 0);
        let mut leaves: Vec<Leaf> = shapes.into_iter().map(|s| leaf(with_defs(&s, &defs))).collect();
        // The most specific shapes (more discriminators) first.
        leaves.sort_by_key(|l| std::cmp::Reverse(l.consts.len()));
        Ok(Family { name: name.to_string(), defs, leaves, parts: Mutex::new(HashMap::new()), root })
    }

    fn check(&self, value: &Value) -> Result<(), String> {
        let candidates: Vec<&Leaf> = self
            .leaves
            .iter()
            .filter(|l| l.consts.iter().all(|(k, c)| value.get(k) == Some(c)))
            .filter(|l| l.required.iter().all(|k| value.get(k).is_some()))
            .collect();
        let Some(first) = candidates.first() else {
            let keys: Vec<String> = ["type", "command", "method", "role", "success"]
                .iter()
                .filter_map(|k| value.get(*k).map(|v| format!("{k}={v}")))
                .collect();
            return Err(format!("{}: no known shape for this line ({})", self.name, keys.join(", ")));
        };
        let mut first_error = None;
        for leaf in &candidates {
            let compiled = leaf.compiled.get_or_init(|| compile(&leaf.schema));
            let validator = compiled.as_ref().map_err(|e| format!("{}: {e}", self.name))?;
            match run(validator, value) {
                Ok(()) => return Ok(()),
                Err(e) if first_error.is_none() => first_error = Some(e),
                Err(_) => {}
            }
        }
        let _ = first;
        Err(format!("{}: {}", self.name, first_error.unwrap_or_default()))
    }

    /// Check `value` against the sub-schema at `pointer` (e.g. `/x-results/prompt`).
    fn check_part(&self, pointer: &str, value: &Value) -> Result<(), String> {
        let cached = self.parts.lock().ok().and_then(|m| m.get(pointer).cloned());
        let validator = match cached {
            Some(v) => v,
            None => {
                let Some(part) = self.root.pointer(pointer) else { return Ok(()) };
                let compiled = std::sync::Arc::new(compile(&with_defs(part, &self.defs))?);
                if let Ok(mut m) = self.parts.lock() {
                    m.insert(pointer.to_string(), compiled.clone());
                }
                compiled
            }
        };
        run(&validator, value).map_err(|e| format!("{}{pointer}: {e}", self.name))
    }
}

impl Schemas {
    /// Load the embedded schemas.
    pub fn embedded(strictness: Strictness) -> Result<Schemas, String> {
        let mut families = HashMap::new();
        for (name, text) in EMBEDDED {
            families.insert(name.to_string(), Family::new(name, text, strictness)?);
        }
        Ok(Schemas { families })
    }

    /// The strict embedded schemas, loaded once.
    pub fn strict() -> &'static Schemas {
        static STRICT: OnceLock<Schemas> = OnceLock::new();
        STRICT.get_or_init(|| match Schemas::embedded(Strictness::Strict) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("embedded schemas do not load: {e}");
                Schemas { families: HashMap::new() }
            }
        })
    }

    fn family(&self, name: &str) -> Result<&Family, String> {
        self.families.get(name).ok_or_else(|| format!("no schema family {name}"))
    }

    /// A line the native dialect writes (a response or an event).
    pub fn check_native_output(&self, value: &Value) -> Result<(), String> {
        if value.get("type") == Some(&Value::String("response".into())) {
            self.family("jsonl/response")?.check(value)
        } else {
            self.family("jsonl/event")?.check(value)
        }
    }

    /// A native command line.
    pub fn check_native_command(&self, value: &Value) -> Result<(), String> {
        self.family("jsonl/command")?.check(value)
    }

    /// A line the JSON-RPC dialect writes: a response, a batch of responses, or
    /// a notification. `method_of` names the method of a request id, when known,
    /// to check the `result` against that method's result schema.
    pub fn check_jsonrpc_output(
        &self,
        value: &Value,
        method_of: &dyn Fn(&Value) -> Option<String>,
    ) -> Result<(), String> {
        match value {
            Value::Array(items) => {
                if items.is_empty() {
                    return Err("jsonrpc: an empty batch answer".into());
                }
                items.iter().try_for_each(|item| self.check_jsonrpc_response(item, method_of))
            }
            v if v.get("method").is_some() && v.get("id").is_none() => self.family("jsonrpc/notification")?.check(v),
            v => self.check_jsonrpc_response(v, method_of),
        }
    }

    fn check_jsonrpc_response(
        &self,
        value: &Value,
        method_of: &dyn Fn(&Value) -> Option<String>,
    ) -> Result<(), String> {
        let family = self.family("jsonrpc/response")?;
        family.check(value)?;
        if let (Some(result), Some(id)) = (value.get("result"), value.get("id"))
            && let Some(method) = method_of(id)
            && family.root.pointer(&format!("/x-results/{method}")).is_some()
        {
            family.check_part(&format!("/x-results/{method}"), result)?;
        }
        Ok(())
    }

    /// A message an ACP agent sends: a request or notification to the
    /// client (by its method), a result (by the method of the request it
    /// answers) or an error.
    pub fn check_acp_output(&self, value: &Value, method_of: &dyn Fn(&Value) -> Option<String>) -> Result<(), String> {
        let family = self.family("acp/messages")?;
        if value.get("jsonrpc") != Some(&Value::String("2.0".into())) {
            return Err("acp: \"jsonrpc\" must be \"2.0\"".into());
        }
        if let Some(method) = value.get("method").and_then(Value::as_str) {
            if family.root.pointer(&format!("/x-params/{}", pointer_key(method))).is_none() {
                return Err(format!("acp: the agent does not send \"{method}\""));
            }
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            return family.check_part(&format!("/x-params/{}", pointer_key(method)), &params);
        }
        if let Some(error) = value.get("error") {
            return family.check_part("/x-error", error);
        }
        match (value.get("result"), value.get("id").and_then(method_of)) {
            (Some(result), Some(method))
                if family.root.pointer(&format!("/x-results/{}", pointer_key(&method))).is_some() =>
            {
                family.check_part(&format!("/x-results/{}", pointer_key(&method)), result)
            }
            (Some(_), _) => Ok(()),
            (None, _) => Err("acp: a message without method, result or error".into()),
        }
    }

    /// A request (or notification, or batch) a JSON-RPC client sends.
    pub fn check_jsonrpc_request(&self, value: &Value) -> Result<(), String> {
        match value {
            Value::Array(items) => items.iter().try_for_each(|i| self.family("jsonrpc/request")?.check(i)),
            v => self.family("jsonrpc/request")?.check(v),
        }
    }

    /// One line of a session file.
    pub fn check_session_line(&self, value: &Value) -> Result<(), String> {
        self.family("session/entry")?.check(value)
    }
}

/// A method name as a JSON pointer token (`/` is `~1`).
fn pointer_key(method: &str) -> String {
    method.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn embedded_schemas_load_and_tell_shapes_apart() {
        let s = Schemas::embedded(Strictness::Strict).unwrap();
        s.check_native_output(&json!({"type": "agent_start"})).unwrap();
        s.check_native_output(&json!({"type": "agent_settled", "aborted": false})).unwrap();
        let err = s.check_native_output(&json!({"type": "agent_start", "extra": 1})).unwrap_err();
        assert!(err.contains("extra"), "{err}");
        assert!(s.check_native_output(&json!({"type": "no_such_event"})).is_err());
        s.check_native_output(&json!({"id": "a", "type": "response", "command": "abort", "success": true})).unwrap();
        assert!(
            s.check_native_output(&json!({"type": "response", "command": "abort", "success": true, "data": 1}))
                .is_err()
        );
        s.check_native_output(&json!({"type": "response", "command": "parse", "success": false, "error": "x"}))
            .unwrap();
        s.check_native_output(&json!({"type": "response", "command": "cycle_model", "success": true, "data": null}))
            .unwrap();
        let open = Schemas::embedded(Strictness::Open).unwrap();
        open.check_native_output(&json!({"type": "agent_start", "extra": 1})).unwrap();
    }

    #[test]
    fn jsonrpc_results_are_checked_per_method() {
        let s = Schemas::embedded(Strictness::Strict).unwrap();
        let method = |_: &Value| Some("prompt".to_string());
        s.check_jsonrpc_output(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"accepted": true, "disposition": "started"}}),
            &method,
        )
        .unwrap();
        assert!(
            s.check_jsonrpc_output(&json!({"jsonrpc": "2.0", "id": 1, "result": {"accepted": 1}}), &method).is_err()
        );
        s.check_jsonrpc_output(
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: x"}}),
            &|_| None,
        )
        .unwrap();
        assert!(
            s.check_jsonrpc_output(
                &json!({"jsonrpc": "2.0", "id": null, "error": {"code": 5, "message": "x"}}),
                &|_| None
            )
            .is_err()
        );
        s.check_jsonrpc_output(&json!({"jsonrpc": "2.0", "method": "bashOutput", "params": {"delta": "x"}}), &|_| None)
            .unwrap();
    }

    #[test]
    fn session_lines() {
        let s = Schemas::embedded(Strictness::Strict).unwrap();
        s.check_session_line(&json!({"type": "session", "version": 3, "id": "u", "timestamp": "t", "cwd": "/"}))
            .unwrap();
        s.check_session_line(&json!({"type": "model_change", "id": "a1b2c3d4", "parentId": null, "timestamp": "t", "provider": "p", "modelId": "m"}))
            .unwrap();
        s.check_session_line(&json!({"type": "context_edit", "id": "x", "targetId": "y"})).unwrap();
        assert!(s.check_session_line(&json!({"type": "model_change", "id": "a"})).is_err());
    }
}
