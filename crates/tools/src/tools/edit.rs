//! The `edit` tool: exact text replacement of one or more disjoint regions of
//! a file, each `oldText` matched against the original text; keeps a BOM and
//! the file's line endings; reports pi's numbered diff, a unified patch and
//! the first changed line.

use async_trait::async_trait;
use nix::unistd::{AccessFlags, access};
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

use super::edit_diff::{Edit, apply_edits, apply_to_original, generate_edit_diff, normalize_to_lf, split_bom};
use super::path::{node_fs_error, resolve_to_cwd};
use super::validate::coerce;
use super::write::lock_file;
use super::{Tool, ToolContext, ToolOutput};

const DESCRIPTION: &str = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.";

/// The `edit` tool.
pub struct EditTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
}

impl EditTool {
    pub fn new() -> Self {
        EditTool { parameters: OnceLock::new() }
    }
}

impl Default for EditTool {
    fn default() -> Self {
        Self::new()
    }
}

fn is_single_edit(v: &Value) -> bool {
    v.get("oldText").is_some_and(Value::is_string) && v.get("newText").is_some_and(Value::is_string)
}

/// pi's argument repair: `edits` sent as a JSON string or as one object, and
/// the legacy top-level `oldText`/`newText` appended to `edits`.
pub fn prepare_edit_arguments(args: Value) -> Value {
    let Value::Object(mut map) = args else { return args };
    match map.get("edits") {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(parsed @ Value::Array(_)) => {
                map.insert("edits".into(), parsed);
            }
            Ok(parsed) if is_single_edit(&parsed) => {
                map.insert("edits".into(), Value::Array(vec![parsed]));
            }
            _ => {}
        },
        Some(single) if single.is_object() && is_single_edit(single) => {
            let single = single.clone();
            map.insert("edits".into(), Value::Array(vec![single]));
        }
        _ => {}
    }
    if !is_single_edit(&Value::Object(map.clone())) {
        return Value::Object(map);
    }
    let mut edits = match map.get("edits") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let old = map.shift_remove("oldText").unwrap_or_default();
    let new = map.shift_remove("newText").unwrap_or_default();
    edits.push(json!({"oldText": old, "newText": new}));
    // Like `{ ...rest, edits }`: an existing `edits` key keeps its place.
    map.insert("edits".into(), Value::Array(edits));
    Value::Object(map)
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> &Value {
        self.parameters.get_or_init(schema)
    }

    fn prepare_arguments(&self, args: Value) -> Value {
        prepare_edit_arguments(args)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let args = coerce(self.parameters(), prepare_edit_arguments(args));
        let edits: Vec<Edit> = match args.get("edits").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => list
                .iter()
                .map(|e| Edit {
                    old_text: e.get("oldText").and_then(Value::as_str).unwrap_or_default().to_string(),
                    new_text: e.get("newText").and_then(Value::as_str).unwrap_or_default().to_string(),
                })
                .collect(),
            _ => return ToolOutput::error("Edit tool input is invalid. edits must contain at least one replacement."),
        };
        let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
        let absolute = resolve_to_cwd(path, &ctx.cwd);
        let _lock = lock_file(&absolute).await;
        let aborted = || ToolOutput::error("Operation aborted");
        if ctx.cancel.is_cancelled() {
            return aborted();
        }
        let ops = ctx.ops();
        let bytes = match (&ops, ctx.client_reads()) {
            // An extension's operations (pi's `EditOperations`).
            (Some(ops), _) => {
                if let Err(e) = ops.access(&absolute).await {
                    if ctx.cancel.is_cancelled() {
                        return aborted();
                    }
                    return ToolOutput::error(format!("Could not edit file: {path}. {}.", e.message()));
                }
                if ctx.cancel.is_cancelled() {
                    return aborted();
                }
                match ops.read_file(&absolute).await {
                    Ok(b) => b,
                    Err(e) => return ToolOutput::error(e.message()),
                }
            }
            // The editor's text, unsaved changes included.
            (None, Some(client)) => match client.read_text_file(absolute.clone(), &ctx.cancel).await {
                Ok(text) => text.into_bytes(),
                Err(crate::client::ClientFailure::Cancelled) => return aborted(),
                Err(e) => {
                    return ToolOutput::error(format!(
                        "Could not edit file: {path}. The client could not read it: {e}"
                    ));
                }
            },
            (None, None) => {
                if let Err(errno) = access(&absolute, AccessFlags::R_OK | AccessFlags::W_OK) {
                    if ctx.cancel.is_cancelled() {
                        return aborted();
                    }
                    return ToolOutput::error(format!("Could not edit file: {path}. Error code: {errno:?}."));
                }
                match tokio::fs::read(&absolute).await {
                    Ok(b) => b,
                    Err(e) => return ToolOutput::error(node_fs_error(&e, "read", None)),
                }
            }
        };
        if ctx.cancel.is_cancelled() {
            return aborted();
        }
        let raw = String::from_utf8_lossy(&bytes);
        let (bom, content) = split_bom(&raw);
        let normalized = normalize_to_lf(content);
        let applied = match apply_edits(&normalized, &edits, path) {
            Ok(a) => a,
            Err(message) => return ToolOutput::error(message),
        };
        let diff = generate_edit_diff(path, &applied.base, &applied.new_content, &applied.replacements);
        if ctx.cancel.is_cancelled() {
            return aborted();
        }
        let body = if content == normalized {
            applied.new_content.clone()
        } else {
            apply_to_original(content, &applied.replacements)
        };
        match (&ops, ctx.client_writes()) {
            (Some(ops), _) => {
                if let Err(e) = ops.write_file(&absolute, &format!("{bom}{body}")).await {
                    return ToolOutput::error(e.message());
                }
            }
            (None, Some(client)) => {
                match client.write_text_file(absolute.clone(), format!("{bom}{body}"), &ctx.cancel).await {
                    Ok(()) => {}
                    Err(crate::client::ClientFailure::Cancelled) => return aborted(),
                    Err(e) => return ToolOutput::error(format!("Could not write {path} through the client: {e}")),
                }
            }
            (None, None) => {
                if let Err(e) = tokio::fs::write(&absolute, format!("{bom}{body}")).await {
                    return ToolOutput::error(node_fs_error(&e, "open", Some(&absolute)));
                }
            }
        }
        if ctx.cancel.is_cancelled() {
            return aborted();
        }
        let mut details = Map::new();
        details.insert("diff".into(), Value::String(diff.diff));
        details.insert("patch".into(), Value::String(diff.patch));
        if let Some(line) = diff.first_changed_line {
            details.insert("firstChangedLine".into(), json!(line));
        }
        ToolOutput::text(format!("Successfully replaced {} block(s) in {path}.", edits.len()))
            .with_details(Value::Object(details))
    }
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["path", "edits"],
        "properties": {
            "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["oldText", "newText"],
                    "properties": {
                        "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
                        "newText": {"type": "string", "description": "Replacement text for this targeted edit."}
                    }
                },
                "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."
            }
        }
    })
}

#[cfg(test)]
mod tests;
