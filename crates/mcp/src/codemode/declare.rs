//! TypeScript declarations of tools for codemode's `describeTool()`,
//! `searchTools()` and `ALL_TOOLS`, rendered from their JSON Schemas.

use serde_json::Value;

use super::CatalogEntry;
use crate::mcp::naming;

const MCP_RESULT: &str = "Promise<{ content: Array<{ data?: string; mimeType?: string; text?: string; type: \"text\" | \"image\" | \"audio\" | \"resource_link\" | \"resource\"; [key: string]: unknown; }>; isError?: boolean; structuredContent?: unknown; [key: string]: unknown; }>";

/// `declare const tools: { name(args: {...}): Promise<...>; };`
pub fn declaration(entry: &CatalogEntry) -> String {
    let name = naming::identifier(entry.tool.name());
    let args = object_type(entry.tool.parameters(), 1);
    let result = if entry.is_mcp {
        MCP_RESULT.to_string()
    } else if let Some(schema) = &entry.output_schema {
        format!("Promise<{}>", type_of(schema, 1))
    } else {
        match entry.tool.name() {
            "bash" => "Promise<{ output: string; truncated: boolean; full_output_path?: string; exit_code: number; wall_time_seconds: number; }>".into(),
            "read" => "Promise<string | { data: string; mimeType: string; note: string; type: \"image\"; }>".into(),
            _ => "Promise<string>".into(),
        }
    };
    format!("declare const tools: {{ {name}(args: {args}): {result}; }};")
}

fn indent(level: usize) -> String {
    "  ".repeat(level)
}

fn object_type(schema: &Value, level: usize) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()) else {
        return "{}".to_string();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("{\n");
    for (key, prop) in props {
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            for line in d.lines() {
                out.push_str(&format!("{}// {line}\n", indent(level)));
            }
        }
        let optional = if required.contains(&key.as_str()) { "" } else { "?" };
        let key =
            if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') { key.clone() } else { format!("{key:?}") };
        out.push_str(&format!("{}{key}{optional}: {};\n", indent(level), type_of(prop, level + 1)));
    }
    out.push_str(&indent(level - 1));
    out.push('}');
    out
}

fn type_of(schema: &Value, level: usize) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" | ");
    }
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            return options.iter().map(|o| type_of(o, level)).collect::<Vec<_>>().join(" | ");
        }
    }
    match schema.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let items = schema.get("items").map_or("unknown".to_string(), |i| type_of(i, level));
                format!("Array<{items}>")
            }
            "object" => object_type(schema, level),
            _ => "unknown".into(),
        },
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(|t| type_of(&serde_json::json!({"type": t}), level))
            .collect::<Vec<_>>()
            .join(" | "),
        _ if schema.get("properties").is_some() => object_type(schema, level),
        _ => "unknown".into(),
    }
}
