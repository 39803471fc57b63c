//! pi's `resolveCliModel` and `resolveModelScopeWithDiagnostics` for the
//! extension host (`lib` functions), answered by pi-rpc's own model resolver
//! (`config::model_resolver`, the one `--model` and `--models` use). The host
//! sends pi's model objects; the answers name models by their index in that
//! list, so the extension gets back the very objects it gave (every field
//! kept), and a custom model as its base's index with the new id.

use serde_json::{Value, json};

use crate::config::model_resolver::{Selected, resolve_cli, resolve_scope};
use crate::model::{Model, ThinkingLevel};

/// The models of `value` (pi's objects), each parsed as pi-rpc's `Model`.
fn models_of(value: Option<&Value>) -> Result<Vec<Model>, String> {
    serde_json::from_value(value.cloned().unwrap_or(Value::Null)).map_err(|e| format!("models: {e}"))
}

fn index_of(models: &[Model], provider: &str, id: &str) -> Option<usize> {
    models.iter().position(|m| m.provider == provider && m.id == id)
}

fn level(value: Option<ThinkingLevel>) -> Value {
    value.and_then(|l| serde_json::to_value(l).ok()).unwrap_or(Value::Null)
}

/// `resolveCliModel({cliProvider, cliModel, cliThinking, inlineApiKey})` among
/// `models`, `usable` the providers with credentials: `{index}` of a listed
/// model, or `{base, id, reasoning}` of a custom one, with `thinkingLevel`,
/// `warning`, `error` as pi answers them.
pub(crate) fn resolve_cli_model(args: &[Value]) -> Result<Value, String> {
    let options = args.first().cloned().unwrap_or(Value::Null);
    let models = models_of(args.get(1))?;
    let usable: Vec<String> = serde_json::from_value(args.get(2).cloned().unwrap_or(json!([]))).unwrap_or_default();
    let text = |key: &str| options.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let Some(pattern) = text("cliModel") else { return Ok(json!({})) };
    let thinking: Option<ThinkingLevel> =
        text("cliThinking").and_then(|t| serde_json::from_value(Value::String(t.to_string())).ok());
    let inline_key = text("inlineApiKey").is_some();
    let is_usable = |provider: &str| usable.iter().any(|p| p == provider);
    match resolve_cli(&models, text("cliProvider"), pattern, thinking, inline_key, &is_usable) {
        Err(error) => Ok(json!({"error": error})),
        Ok(Selected { model, thinking, warning }) => {
            let chosen = match index_of(&models, &model.provider, &model.id) {
                Some(index) if warning.is_none() => json!({"index": index}),
                _ => {
                    // A custom id: the provider's default model (else its first) is the base.
                    let default = crate::config::catalog::default_model_of(&model.provider);
                    let base = default
                        .and_then(|d| index_of(&models, &model.provider, d))
                        .or_else(|| models.iter().position(|m| m.provider == model.provider));
                    json!({"base": base, "id": model.id, "reasoning": model.reasoning})
                }
            };
            Ok(json!({"model": chosen, "thinkingLevel": level(thinking), "warning": warning}))
        }
    }
}

/// The kind of a scope warning, from the words pi-rpc's resolver uses (pi's diagnostic `code`).
fn warning_code(message: &str) -> &'static str {
    if message.starts_with("No models match pattern") {
        "no-match"
    } else if message.starts_with("Invalid thinking level") {
        "invalid-thinking-level"
    } else {
        "ambiguous"
    }
}

/// `resolveModelScopeFromModels(patterns, models)`: `{scoped: [{index,
/// thinkingLevel}], diagnostics}`; patterns resolved one at a time so each
/// diagnostic names its pattern, a model added once.
pub(crate) fn resolve_model_scope(args: &[Value]) -> Result<Value, String> {
    let patterns: Vec<String> =
        serde_json::from_value(args.first().cloned().unwrap_or(json!([]))).map_err(|e| format!("patterns: {e}"))?;
    let models = models_of(args.get(1))?;
    let mut scoped: Vec<(usize, Value)> = Vec::new();
    let mut diagnostics = Vec::new();
    for pattern in &patterns {
        let scope = resolve_scope(std::slice::from_ref(pattern), &models);
        for message in scope.warnings {
            diagnostics.push(
                json!({"type": "warning", "code": warning_code(&message), "message": message, "pattern": pattern}),
            );
        }
        for (model, thinking) in scope.models {
            let Some(index) = index_of(&models, &model.provider, &model.id) else { continue };
            if !scoped.iter().any(|(i, _)| *i == index) {
                scoped.push((index, level(thinking)));
            }
        }
    }
    let scoped: Vec<Value> =
        scoped.into_iter().map(|(index, level)| json!({"index": index, "thinkingLevel": level})).collect();
    Ok(json!({"scoped": scoped, "diagnostics": diagnostics}))
}
