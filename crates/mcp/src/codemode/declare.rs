//! TypeScript declarations of tools for codemode (its description's
//! listing, `describeTool()`, `searchTools()`, `ALL_TOOLS`), rendered from
//! their JSON Schemas the way pi 1.6.0 renders them: objects on one line
//! with their properties sorted by name, or one property per line under
//! `//` comments when a property has a description or a constraint the type
//! cannot express; local `$ref`s resolved; unions deduplicated.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::CatalogEntry;
use crate::mcp::naming;

/// Longest rendered input type before it is rendered without constraint
/// tags, then as `unknown`.
const INPUT_MAX_CHARS: usize = 16_000;
/// `$ref` expansions per rendered schema.
const MAX_REF_EXPANSIONS: usize = 32;
/// Longest constraint tag kept.
const MAX_TAG_CHARS: usize = 80;
/// Keywords shown as `@keyword value` tags, in this order.
const TAG_KEYWORDS: [&str; 11] = [
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
];
const LOWER_BOUNDS: [&str; 4] = ["minimum", "exclusiveMinimum", "minLength", "minItems"];
const UPPER_BOUNDS: [&str; 4] = ["maximum", "exclusiveMaximum", "maxLength", "maxItems"];

/// `declare const tools: { name(args: {...}): Promise<...>; };`
pub fn declaration(entry: &CatalogEntry) -> String {
    let output = script_output_schema(entry);
    format!("declare const tools: {{ {} }};", signature(entry.tool.name(), entry.tool.parameters(), &output))
}

/// `name(args: T): Promise<R>;` with the name scripts use.
pub fn signature(name: &str, input: &Value, output: &Value) -> String {
    format!(
        "{}(args: {}): Promise<{}>;",
        naming::identifier(name),
        schema_to_type(input, Some(INPUT_MAX_CHARS)),
        schema_to_type(output, None)
    )
}

/// What a tool's script call resolves to: its output schema; MCP tools
/// their `CallToolResult`; pi's `bash`, `read` and MCP resource tools their
/// structured results; other tools their text.
pub fn script_output_schema(entry: &CatalogEntry) -> Value {
    if entry.is_mcp {
        return mcp_result_schema(entry.output_schema.as_ref());
    }
    if let Some(schema) = &entry.output_schema {
        return schema.clone();
    }
    builtin_output_schema(entry.tool.name()).unwrap_or_else(|| json!({"type": "string"}))
}

/// The structured results of pi's own `bash`, `read` and MCP resource tools.
fn builtin_output_schema(name: &str) -> Option<Value> {
    match name {
        "bash" => Some(json!({
            "type": "object",
            "required": ["output", "truncated", "exit_code", "wall_time_seconds"],
            "properties": {
                "output": {"type": "string", "description": "Combined stdout and stderr, possibly truncated"},
                "truncated": {"type": "boolean"},
                "full_output_path": {"type": "string", "description": "Full output, when truncated"},
                "exit_code": {"type": "number"},
                "wall_time_seconds": {"type": "number"}
            }
        })),
        "read" => Some(json!({"anyOf": [
            {"type": "string"},
            {"type": "object", "required": ["type", "data", "mimeType", "note"], "properties": {
                "type": {"const": "image"}, "data": {"type": "string"},
                "mimeType": {"type": "string"}, "note": {"type": "string"}
            }}
        ]})),
        "list_mcp_resources" => Some(listing_schema(
            "resources",
            json!({"type": "object", "required": ["server", "uri", "name"], "properties": {
                "server": {"type": "string"}, "uri": {"type": "string"}, "name": {"type": "string"},
                "title": {"type": "string"}, "description": {"type": "string"}, "mimeType": {"type": "string"},
                "size": {"type": "number"}
            }}),
        )),
        "list_mcp_resource_templates" => Some(listing_schema(
            "resourceTemplates",
            json!({"type": "object", "required": ["server", "uriTemplate", "name"], "properties": {
                "server": {"type": "string"},
                "uriTemplate": {"type": "string", "description": "RFC 6570 URI template"},
                "name": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"},
                "mimeType": {"type": "string"}
            }}),
        )),
        "read_mcp_resource" => Some(json!({
            "type": "object",
            "required": ["server", "uri", "contents"],
            "properties": {
                "server": {"type": "string"}, "uri": {"type": "string"},
                "contents": {"type": "array", "items": {"anyOf": [
                    {"type": "object", "required": ["uri", "text"], "properties": {
                        "uri": {"type": "string"}, "mimeType": {"type": "string"}, "text": {"type": "string"}}},
                    {"type": "object", "required": ["uri", "blob"], "properties": {
                        "uri": {"type": "string"}, "mimeType": {"type": "string"},
                        "blob": {"type": "string", "description": "base64"}}}
                ]}}
            }
        })),
        _ => None,
    }
}

/// The result of `list_mcp_resources` / `list_mcp_resource_templates`: the
/// `items` under `field`, the server asked, a cursor, the servers that failed.
fn listing_schema(field: &str, items: Value) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert("server".into(), json!({"type": "string"}));
    properties.insert(field.into(), json!({"type": "array", "items": items}));
    properties.insert("nextCursor".into(), json!({"type": "string"}));
    properties.insert(
        "errors".into(),
        json!({"type": "array", "description": "Servers that could not be listed", "items": {
            "type": "object", "required": ["server", "error"],
            "properties": {"server": {"type": "string"}, "error": {"type": "string"}}
        }}),
    );
    json!({"type": "object", "required": [field], "properties": properties})
}

/// An MCP tool's `CallToolResult` with the tool's own output schema as `structuredContent`.
pub fn mcp_result_schema(structured: Option<&Value>) -> Value {
    let block = json!({
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"enum": ["text", "image", "audio", "resource_link", "resource"]},
            "text": {"type": "string"}, "data": {"type": "string"}, "mimeType": {"type": "string"}
        },
        "additionalProperties": true
    });
    json!({
        "type": "object",
        "required": ["content"],
        "properties": {
            "content": {"type": "array", "items": block},
            "structuredContent": structured.map(|s| relocate_refs(s, "#/properties/structuredContent")).unwrap_or(json!({})),
            "isError": {"type": "boolean"}
        },
        "additionalProperties": true
    })
}

/// `schema` moved under `pointer` of another schema: its local `$ref`s point below it.
fn relocate_refs(schema: &Value, pointer: &str) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| match (key.as_str(), value) {
                    ("$ref", Value::String(r)) if r == "#" || r.starts_with("#/") => {
                        (key.clone(), Value::String(format!("{pointer}{}", &r[1..])))
                    }
                    ("const" | "enum" | "default" | "examples", _) => (key.clone(), value.clone()),
                    _ => (key.clone(), relocate_refs(value, pointer)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| relocate_refs(i, pointer)).collect()),
        other => other.clone(),
    }
}

/// The TypeScript type of `schema`; longer than `max_chars`, it is rendered
/// again without constraint tags, and is `unknown` if still too long.
pub fn schema_to_type(schema: &Value, max_chars: Option<usize>) -> String {
    let render = |tags: bool| Renderer { root: schema, resolving: HashSet::new(), expansions: 0, tags }.render(schema);
    let typed = render(true);
    let Some(max) = max_chars else { return typed };
    if typed.chars().count() <= max {
        return typed;
    }
    let untagged = render(false);
    if untagged.chars().count() <= max { untagged } else { "unknown".to_string() }
}

/// The subschema a local `$ref` names in `root`.
pub fn resolve_ref<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    if reference != "#" && !reference.starts_with("#/") {
        return None;
    }
    let mut current = root;
    for segment in reference.get(2..).unwrap_or_default().split('/').filter(|s| !s.is_empty()) {
        let key = percent_decode(segment)?.replace("~1", "/").replace("~0", "~");
        current = current.as_object()?.get(&key)?;
    }
    (current.is_object() || current.is_boolean()).then_some(current)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A JSON value as JavaScript's `JSON.stringify` writes it (integral numbers without a fraction).
fn js_json(value: &Value) -> String {
    match value {
        Value::Number(n) => js_number(n),
        other => other.to_string(),
    }
}

fn js_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

/// `[A-Za-z_$][A-Za-z0-9_$]*`
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Distinct types joined with `|`; `unknown` absorbs the others, none is `never`.
fn union(types: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for t in types {
        if !unique.contains(&t) {
            unique.push(t);
        }
    }
    if unique.iter().any(|t| t == "unknown") {
        return "unknown".into();
    }
    if unique.is_empty() { "never".into() } else { unique.join(" | ") }
}

struct Renderer<'a> {
    root: &'a Value,
    resolving: HashSet<String>,
    expansions: usize,
    tags: bool,
}

impl Renderer<'_> {
    fn render(&mut self, schema: &Value) -> String {
        let map = match schema {
            Value::Bool(true) => return "unknown".into(),
            Value::Bool(false) => return "never".into(),
            Value::Object(map) => map,
            _ => return "unknown".into(),
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            if self.resolving.contains(reference) || self.expansions >= MAX_REF_EXPANSIONS {
                return "unknown".into();
            }
            let root = self.root;
            let Some(target) = resolve_ref(reference, root) else { return "unknown".into() };
            self.expansions += 1;
            self.resolving.insert(reference.clone());
            let rendered = self.render(target);
            self.resolving.remove(reference);
            return rendered;
        }
        if let Some(c) = map.get("const") {
            return js_json(c);
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            return union(values.iter().map(js_json).collect());
        }
        let variants = match (map.get("anyOf"), map.get("oneOf")) {
            (Some(Value::Array(v)), _) | (_, Some(Value::Array(v))) => Some(v),
            _ => None,
        };
        if let Some(variants) = variants {
            return union(variants.iter().map(|v| self.render(v)).collect());
        }
        if let Some(Value::Array(parts)) = map.get("allOf") {
            let parts: Vec<String> = parts.iter().map(|p| self.render(p)).filter(|p| p != "unknown").collect();
            if parts.is_empty() {
                return "unknown".into();
            }
            return parts
                .iter()
                .map(|p| if p.contains(" | ") { format!("({p})") } else { p.clone() })
                .collect::<Vec<_>>()
                .join(" & ");
        }
        match map.get("type") {
            Some(Value::Array(types)) => {
                let rendered = types
                    .iter()
                    .map(|t| {
                        let mut one = map.clone();
                        one.insert("type".into(), t.clone());
                        self.render(&Value::Object(one))
                    })
                    .collect();
                union(rendered)
            }
            Some(Value::String(t)) => match t.as_str() {
                "string" => "string".into(),
                "number" | "integer" => "number".into(),
                "boolean" => "boolean".into(),
                "null" => "null".into(),
                "array" => self.array_type(map),
                "object" => self.object_type(map),
                _ => "unknown".into(),
            },
            None if ["properties", "additionalProperties", "required"].iter().any(|k| map.contains_key(*k)) => {
                self.object_type(map)
            }
            None if map.contains_key("items") || map.contains_key("prefixItems") => self.array_type(map),
            _ => "unknown".into(),
        }
    }

    fn array_type(&mut self, map: &serde_json::Map<String, Value>) -> String {
        if let Some(items) = map.get("items").filter(|i| !i.is_array()) {
            return format!("Array<{}>", self.render(items));
        }
        let tuple = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(t)), _) | (_, Some(Value::Array(t))) => t.clone(),
            _ => Vec::new(),
        };
        if tuple.is_empty() {
            return "unknown[]".into();
        }
        format!("[{}]", tuple.iter().map(|i| self.render(i)).collect::<Vec<_>>().join(", "))
    }

    fn object_type(&mut self, map: &serde_json::Map<String, Value>) -> String {
        let empty = serde_json::Map::new();
        let properties = map.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let mut members: Vec<String> = names
            .iter()
            .map(|name| {
                let key =
                    if is_identifier(name) { name.to_string() } else { Value::String(name.to_string()).to_string() };
                let optional = if required.contains(&name.as_str()) { "" } else { "?" };
                format!("{key}{optional}: {};", self.render(&properties[name.as_str()]))
            })
            .collect();
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => members.push("[key: string]: unknown;".into()),
            Some(additional) => members.push(format!("[key: string]: {};", self.render(additional))),
            None if names.is_empty() => members.push("[key: string]: unknown;".into()),
            None => {}
        }
        if members.is_empty() {
            return "{}".into();
        }
        let comments: Vec<Vec<String>> = names
            .iter()
            .map(|name| {
                let property = &properties[name.as_str()];
                let mut lines: Vec<String> = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .split(['\r', '\n', '\u{2028}', '\u{2029}'])
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect();
                let tags = if self.tags { constraint_tags(property) } else { String::new() };
                if !tags.is_empty() {
                    lines.push(tags);
                }
                lines
            })
            .collect();
        if comments.iter().all(Vec::is_empty) {
            return format!("{{ {} }}", members.join(" "));
        }
        let mut lines = vec!["{".to_string()];
        for (index, comment) in comments.iter().enumerate() {
            lines.extend(comment.iter().map(|line| format!("  // {line}")));
            lines.push(format!("  {}", members[index].replace('\n', "\n  ")));
        }
        lines.extend(members[names.len()..].iter().map(|member| format!("  {member}")));
        lines.push("}".into());
        lines.join("\n")
    }
}

/// What a property's type cannot say: `@integer @minimum 1 @default 20`.
fn constraint_tags(property: &Value) -> String {
    let Some(own) = property.as_object() else { return String::new() };
    // An optional field's constraints may sit in its one non-null branch.
    let variants = own.get("anyOf").or_else(|| own.get("oneOf")).and_then(Value::as_array);
    let non_null: Vec<&Value> =
        variants.map(|v| v.iter().filter(|b| b.get("type") != Some(&json!("null"))).collect()).unwrap_or_default();
    let mut schemas = vec![own.clone()];
    if let [branch] = non_null.as_slice()
        && let Some(branch) = branch.as_object()
    {
        schemas.push(branch.clone());
    }
    // Draft-04's boolean `exclusiveMinimum` / `exclusiveMaximum`.
    for schema in &mut schemas {
        for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
            if schema.get(flag) == Some(&Value::Bool(true)) {
                let value = schema.remove(bound).unwrap_or(Value::Null);
                schema.insert(flag.into(), value);
            }
        }
    }
    let mut tags: Vec<String> = Vec::new();
    let integer = |t: Option<&Value>| match t {
        Some(Value::String(s)) => s == "integer",
        Some(Value::Array(a)) => a.iter().any(|t| t == "integer"),
        _ => false,
    };
    if schemas.iter().any(|s| integer(s.get("type"))) {
        tags.push("@integer".into());
    }
    for keyword in TAG_KEYWORDS {
        let values: Vec<&Value> = schemas.iter().filter_map(|s| s.get(keyword)).collect();
        let lower = LOWER_BOUNDS.contains(&keyword);
        if lower || UPPER_BOUNDS.contains(&keyword) {
            let numbers: Vec<&serde_json::Number> = values.iter().filter_map(|v| v.as_number()).collect();
            let pick = numbers.into_iter().reduce(|a, b| {
                let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
                if (lower && y > x) || (!lower && y < x) { b } else { a }
            });
            if let Some(n) = pick {
                tags.push(format!("@{keyword} {}", js_number(n)));
            }
            continue;
        }
        let mut seen: Vec<&Value> = Vec::new();
        for value in values {
            if seen.contains(&value) {
                continue;
            }
            seen.push(value);
            match value {
                Value::Number(n) => tags.push(format!("@{keyword} {}", js_number(n))),
                Value::String(s) => tags.push(format!("@{keyword} {s}")),
                _ => {}
            }
        }
    }
    if schemas.iter().any(|s| s.get("uniqueItems") == Some(&Value::Bool(true))) {
        tags.push("@uniqueItems".into());
    }
    if let Some(default) = own.get("default").filter(|d| !d.is_null()) {
        tags.push(format!("@default {}", js_json(default)));
    }
    if own.get("deprecated") == Some(&Value::Bool(true)) {
        tags.push("@deprecated".into());
    }
    tags.into_iter()
        .filter(|tag| tag.encode_utf16().count() <= MAX_TAG_CHARS)
        .map(|tag| {
            tag.chars()
                .map(|c| match c {
                    '\r' | '\n' | '\u{2028}' | '\u{2029}' => format!("\\u{:04x}", c as u32),
                    c => c.to_string(),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The object `schema` (a local `$ref` followed) names, if it is one.
fn follow_ref<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    let mut seen = 0;
    while let Some(reference) = current.get("$ref").and_then(Value::as_str) {
        let Some(target) = resolve_ref(reference, root) else { break };
        seen += 1;
        if seen > MAX_REF_EXPANSIONS {
            break;
        }
        current = target;
    }
    current
}

/// An object schema's field names, `{ output, exit_code, full_output_path? }`,
/// object fields `depth` levels deep and `const` fields with their value.
fn describe_fields(schema: &Value, root: &Value, depth: usize) -> Option<String> {
    let resolved = follow_ref(schema, root);
    if resolved.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let properties = resolved.get("properties")?.as_object()?;
    let required: Vec<&str> = resolved
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, field)| {
            let nested = match follow_ref(field, root).get("const") {
                Some(c) => Some(js_json(c)),
                None if depth > 0 => describe_fields(field, root, depth - 1),
                None => None,
            };
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            match nested {
                Some(nested) => format!("{name}{optional}: {nested}"),
                None => format!("{name}{optional}"),
            }
        })
        .collect();
    Some(format!("{{ {} }}", fields.join(", ")))
}

/// The fields of each object variant of an `anyOf` / `oneOf`, joined by `|`.
fn describe_union_fields(schema: &Value, root: &Value) -> Option<String> {
    let resolved = follow_ref(schema, root);
    let variants = resolved.get("anyOf").or_else(|| resolved.get("oneOf"))?.as_array()?;
    if variants.is_empty() {
        return None;
    }
    let described: Option<Vec<String>> = variants.iter().map(|v| describe_fields(v, root, 0)).collect();
    described.map(|d| d.join(" | "))
}

/// What a script call of `name` resolves to, in one line.
pub fn describe_output(name: &str, schema: &Value) -> String {
    let rendered = schema_to_type(schema, None);
    if rendered == "string" {
        return "a string".into();
    }
    if let Some(fields) = describe_fields(schema, schema, 1).or_else(|| describe_union_fields(schema, schema)) {
        return format!("`{fields}`");
    }
    if !rendered.contains('\n') {
        return format!("`{rendered}`");
    }
    format!("a value; `await describeTool({})` shows its type", Value::String(name.to_string()))
}
