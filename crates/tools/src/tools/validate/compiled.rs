//! The tool's schema compiled by `jsonschema`, whole and by part.
//!
//! The schema is registered once under a private URI, without the keywords pi's
//! validator does not check (and without the patterns the `regex` crate cannot
//! compile, which pi's validator skips). A part of it (coercion asks whether a
//! value fits one property or one branch of a union) is compiled as
//! `{"$ref": "<uri>#<pointer>"}`, so its references back to the root (`#`,
//! `#/definitions/…`, `#/$defs/…`) resolve as they do in the whole. A schema
//! `jsonschema` cannot compile is not checked; a warning is logged.
//!
//! What is compiled is kept for the whole process, keyed by the schema's JSON
//! text ([`SHARED`]): the same tool's next check reuses its registry and every
//! part already compiled instead of compiling them again.

use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use jsonschema::{Draft, PatternOptions, Registry, Validator as Compiled};
use serde_json::{Map, Value, json};

use super::SchemaError;
use super::explain::{Frame, explain};

/// Where the schema is registered; nothing is ever fetched from it.
const BASE: &str = "urn:pi-rpc:tool-schema";

/// The `$defs` entries (`false`) that references naming nothing are pointed at.
pub(super) const UNRESOLVED: &str = "pi-rpc-unresolved-";

/// Keywords pi's validator does not check: taken out before compiling.
const UNCHECKED: [&str; 14] = [
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "minContains",
    "maxContains",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "format",
    "$dynamicRef",
    "$recursiveRef",
];

/// Schemas compiled so far in this process, by their JSON text (`None`: not checkable).
static SHARED: Mutex<Option<HashMap<String, Option<Arc<Shared>>>>> = Mutex::new(None);
/// Past this many distinct schemas the cache starts again empty.
const MAX_SHARED: usize = 512;

/// A schema ready to check values: the whole, and its parts on demand.
pub(super) struct CompiledSchema<'a> {
    checked: Option<Checked>,
    /// The pointers are found by the parts' addresses: the schema must outlive them.
    original: PhantomData<&'a Value>,
}

/// One schema's compiled form, shared by every check of the same schema text.
struct Shared {
    schema: Arc<Value>,
    /// The references that name nothing, by the number of their marker.
    unresolved: Vec<String>,
    registry: Registry<'static>,
    /// The parts compiled so far, by JSON pointer (`None`: the part does not compile).
    validators: Mutex<HashMap<String, Option<Arc<Compiled>>>>,
}

struct Checked {
    shared: Arc<Shared>,
    /// The JSON pointer of every part of the original schema, by address.
    pointers: HashMap<usize, String>,
    /// Schemas that are not parts of this one, by address (kept for this check only).
    standalone: RefCell<HashMap<usize, Option<Arc<Compiled>>>>,
}

impl<'a> CompiledSchema<'a> {
    pub(super) fn new(original: &'a Value) -> Self {
        let checked = shared(original).map(|shared| {
            let mut pointers = HashMap::new();
            index_pointers(original, String::new(), &mut pointers);
            Checked { shared, pointers, standalone: RefCell::new(HashMap::new()) }
        });
        CompiledSchema { checked, original: PhantomData }
    }

    /// Whether `v` is valid against `node`, a part of the schema (the root included).
    pub(super) fn passes(&self, node: &Value, v: &Value) -> bool {
        let Some(checked) = &self.checked else { return true };
        let validator = match checked.pointers.get(&address(node)) {
            Some(pointer) => checked.validator(pointer),
            None => checked.standalone(node),
        };
        validator.is_none_or(|validator| validator.is_valid(v))
    }

    /// The errors of `v` against the whole schema, in pi's words and order.
    pub(super) fn errors(&self, v: &Value) -> Vec<SchemaError> {
        let Some(checked) = &self.checked else { return Vec::new() };
        let Some(validator) = checked.validator("") else { return Vec::new() };
        let shared = &checked.shared;
        // The validator is `{"$ref": …}`: every schema path starts with that `$ref`.
        let frame =
            Frame { root: &shared.schema, base: &shared.schema, value: v, skip: 1, unresolved: &shared.unresolved };
        explain(validator.iter_errors(v), &frame)
    }
}

/// The compiled form of `original`, from the process-wide cache or compiled now.
fn shared(original: &Value) -> Option<Arc<Shared>> {
    let key = original.to_string();
    if let Ok(guard) = SHARED.lock()
        && let Some(found) = guard.as_ref().and_then(|map| map.get(&key))
    {
        return found.clone();
    }
    let built = Shared::compile(original).map(Arc::new);
    if let Ok(mut guard) = SHARED.lock() {
        let map = guard.get_or_insert_with(HashMap::new);
        if map.len() >= MAX_SHARED {
            map.clear();
        }
        map.insert(key, built.clone());
    }
    built
}

impl Shared {
    fn compile(original: &Value) -> Option<Shared> {
        let (schema, unresolved) = Copier::copy(original);
        let schema = Arc::new(schema);
        let registry =
            Registry::new().draft(Draft::Draft202012).add(BASE, Arc::clone(&schema)).and_then(|b| b.prepare());
        match registry {
            Ok(registry) => Some(Shared { schema, unresolved, registry, validators: Mutex::new(HashMap::new()) }),
            Err(e) => {
                tracing::warn!("tool schema not checked: {e}");
                None
            }
        }
    }

    fn validator(&self, pointer: &str) -> Option<Arc<Compiled>> {
        if let Ok(validators) = self.validators.lock()
            && let Some(found) = validators.get(pointer)
        {
            return found.clone();
        }
        let reference = json!({ "$ref": format!("{BASE}#{}", uri_fragment(pointer)) });
        let built = options().with_registry(&self.registry).build(&reference);
        let built = match built {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!("tool schema part {pointer:?} not checked: {e}");
                None
            }
        };
        if let Ok(mut validators) = self.validators.lock() {
            validators.insert(pointer.to_string(), built.clone());
        }
        built
    }
}

impl Checked {
    fn validator(&self, pointer: &str) -> Option<Arc<Compiled>> {
        self.shared.validator(pointer)
    }

    /// A schema that is not part of the tool's schema, compiled on its own.
    fn standalone(&self, node: &Value) -> Option<Arc<Compiled>> {
        let key = address(node);
        if let Some(found) = self.standalone.borrow().get(&key) {
            return found.clone();
        }
        let built = options().build(&Copier::copy(node).0).ok().map(Arc::new);
        self.standalone.borrow_mut().insert(key, built.clone());
        built
    }
}

fn options<'i>() -> jsonschema::ValidationOptions<'i> {
    jsonschema::options().should_validate_formats(false).with_pattern_options(PatternOptions::regex())
}

fn address(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

fn index_pointers(v: &Value, pointer: String, out: &mut HashMap<usize, String>) {
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                index_pointers(child, format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                index_pointers(child, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
    out.insert(address(v), pointer);
}

/// A JSON pointer as a URI fragment (percent-encoded).
fn uri_fragment(pointer: &str) -> String {
    let mut out = String::with_capacity(pointer.len());
    for b in pointer.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Makes the copy that is compiled: without what pi's validator skips (the
/// [`UNCHECKED`] keywords, boolean `exclusiveMinimum`/`exclusiveMaximum`,
/// patterns the `regex` crate does not compile), and with each `$ref` that
/// names nothing in the schema pointed at a `false` schema, so it rejects only
/// the values at its place (pi: `unresolved reference …`).
struct Copier<'r> {
    root: &'r Value,
    unresolved: Vec<String>,
}

impl<'r> Copier<'r> {
    /// The copy of `root` and the references that name nothing, in the order of their markers.
    fn copy(root: &'r Value) -> (Value, Vec<String>) {
        let mut copier = Copier { root, unresolved: Vec::new() };
        let mut copy = copier.part(root);
        if !copier.unresolved.is_empty()
            && let Value::Object(map) = &mut copy
            && let Value::Object(defs) = map.entry("$defs").or_insert_with(|| Value::Object(Map::new()))
        {
            for i in 0..copier.unresolved.len() {
                defs.insert(format!("{UNRESOLVED}{i}"), Value::Bool(false));
            }
        }
        (copy, copier.unresolved)
    }

    fn part(&mut self, schema: &Value) -> Value {
        let Value::Object(map) = schema else { return schema.clone() };
        let mut out = Map::new();
        for (key, value) in map {
            let keep = match key.as_str() {
                k if UNCHECKED.contains(&k) => None,
                "exclusiveMinimum" | "exclusiveMaximum" if value.is_boolean() => None,
                "pattern" if value.as_str().is_some_and(|p| regex::Regex::new(p).is_err()) => None,
                "$ref" => Some(match value.as_str() {
                    Some(r) if self.resolves(r) => value.clone(),
                    Some(r) => {
                        self.unresolved.push(r.to_string());
                        Value::String(format!("#/$defs/{UNRESOLVED}{}", self.unresolved.len() - 1))
                    }
                    None => value.clone(),
                }),
                "properties" | "$defs" | "definitions" => Some(self.each_value(value, |_| true)),
                "patternProperties" => Some(self.each_value(value, |pattern| regex::Regex::new(pattern).is_ok())),
                "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => Some(match value {
                    Value::Array(items) => Value::Array(items.iter().map(|i| self.part(i)).collect()),
                    other => self.part(other),
                }),
                "not" | "if" | "then" | "else" | "additionalProperties" | "propertyNames" | "contains" => {
                    Some(self.part(value))
                }
                _ => Some(value.clone()),
            };
            if let Some(value) = keep {
                out.insert(key.clone(), value);
            }
        }
        Value::Object(out)
    }

    /// Whether a reference names a part of the schema (`#` and `#/…` only, as pi's validator reads them).
    fn resolves(&self, reference: &str) -> bool {
        match reference.strip_prefix('#') {
            Some("") => true,
            Some(pointer) => self.root.pointer(pointer).is_some(),
            None => false,
        }
    }

    fn each_value(&mut self, value: &Value, keep: impl Fn(&str) -> bool) -> Value {
        match value {
            Value::Object(map) => {
                Value::Object(map.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), self.part(v))).collect())
            }
            other => other.clone(),
        }
    }
}

/// Whether the process-wide cache holds `schema` (tests).
#[cfg(test)]
pub(super) fn is_shared(schema: &Value) -> bool {
    SHARED.lock().is_ok_and(|g| g.as_ref().is_some_and(|m| m.contains_key(&schema.to_string())))
}
