//! pi's `codemode` inside an SDK session (`createCodemodeExtension()` loaded
//! in an extension's `createAgentSession`): the script runs in pi-rpc's own
//! codemode ([`pi_mcp::codemode`]), and the tools it calls are the
//! sub-session's, which live in the extension. The request is the built-in
//! tool channel's `runBuiltinTool` with `toolName: "codemode"`, the
//! sub-session's callable tools as `catalog` (`{name, description,
//! parameters, outputSchema?, promptGuidelines, namespace?}`) and the
//! session's operations object as `operations.handle`. Every nested call is
//! a `tool_op` back to that object, as the other built-ins' `*Operations`
//! are:
//!
//! - `callTool` `{name, args}`: the sub-session's `ctx.executeTool()` (its
//!   tool pipeline and `tool_call` / `tool_result` hooks), answered with
//!   pi's outcome `{result: {content, details, structuredContent?}, isError}`;
//! - `branchCustomData` `{customType}` and `appendCustom` `{customType,
//!   data}`: `store()` / `load()` kept on the sub-session's branch.
//!
//! - `modelCatalog` `{}`: the sub-session's model registry
//!   (`ctx.modelRegistry`) as `{<type>: {models, available}}`, asked when
//!   the script first calls `models.*` ([`pi_mcp::codemode::ModelsHost::listed`]);
//! - `modelCall` `{op, model, context}`: `classify` / `generateImages` of
//!   that registry, answered with pi's result object.
//!
//! The script's `details.calls` updates go back as `builtinToolUpdate`s.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use pi_mcp::codemode::models::{LaterModels, ListedModels, TypedModelDelegate};
use pi_mcp::codemode::{CatalogEntry, CodemodeTool, ModelsHost};
use pi_mcp::mcp::search::SearchDoc;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::process::{CallError, Extension};
use super::tool_content::{parse_content, parse_usage};
use crate::tools::SessionLink;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The sub-session's operations object, by its handle.
#[derive(Clone)]
struct SessionOps {
    ext: Arc<Extension>,
    handle: Value,
}

impl SessionOps {
    async fn call(&self, op: &str, args: Value, cancel: Option<&CancellationToken>) -> Result<Value, CallError> {
        let params = json!({"handle": self.handle, "op": op, "args": args});
        // A nested tool may run longer than the call timeout (a command, a sub-agent).
        self.ext.call_streaming("tool_op", params, cancel).await
    }
}

/// One of the sub-session's tools, run by the sub-session when a script calls
/// it; without `ops`, only described (codemode's listing, `codemodeLoadout`).
struct SessionTool {
    ops: Option<SessionOps>,
    name: String,
    description: String,
    parameters: Value,
    output_schema: Option<Value>,
    guidelines: Vec<String>,
    exposure: String,
}

#[async_trait]
impl Tool for SessionTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn prompt_guidelines(&self) -> &[String] {
        &self.guidelines
    }

    fn exposure(&self) -> &str {
        &self.exposure
    }

    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The sub-session's pipeline prepares and validates the arguments (its
    /// tools' `prepareArguments`), as pi's `ctx.executeTool()` does.
    async fn prepare_arguments_elsewhere(&self, args: &Value) -> Option<Result<Value, String>> {
        Some(Ok(args.clone()))
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let Some(ops) = &self.ops else {
            return ToolOutput::error(format!("{} is only described here", self.name));
        };
        let asked = json!({"name": self.name, "args": args});
        match ops.call("callTool", asked, Some(&ctx.cancel)).await {
            Ok(outcome) => {
                let result = outcome.get("result").cloned().unwrap_or(Value::Null);
                let (content, details) = parse_content(&result);
                let is_error = outcome.get("isError").and_then(Value::as_bool).unwrap_or(false);
                let structured_content = result.get("structuredContent").filter(|v| !v.is_null()).cloned();
                ToolOutput {
                    content,
                    details,
                    is_error,
                    usage: parse_usage(&result),
                    structured_content,
                    ..Default::default()
                }
            }
            Err(CallError::Failed(message) | CallError::Dead(message)) => ToolOutput::error(message),
            Err(CallError::Cancelled) => ToolOutput::error("Operation aborted"),
        }
    }
}

/// The sub-session's branch, for `store()` / `load()`.
struct SessionStore {
    ops: SessionOps,
}

#[async_trait]
impl SessionLink for SessionStore {
    async fn branch_custom_data(&self, custom_type: &str) -> Vec<Value> {
        match self.ops.call("branchCustomData", json!({"customType": custom_type}), None).await {
            Ok(Value::Array(data)) => data,
            _ => Vec::new(),
        }
    }

    async fn append_custom(&self, custom_type: &str, data: Value) -> Result<String, String> {
        match self.ops.call("appendCustom", json!({"customType": custom_type, "data": data}), None).await {
            Ok(id) => Ok(id.as_str().unwrap_or_default().to_string()),
            Err(CallError::Failed(m) | CallError::Dead(m)) => Err(m),
            Err(CallError::Cancelled) => Err("Operation aborted".to_string()),
        }
    }
}

/// The sub-session's model registry: every classify / generateImages call is its own.
struct SessionModels {
    ops: SessionOps,
}

impl TypedModelDelegate for SessionModels {
    fn serves(&self, _provider: &str, _api: &str, _op: &str) -> bool {
        true
    }

    fn call(
        &self,
        op: &'static str,
        model: Value,
        context: Value,
        _options: Value,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, Result<Value, String>> {
        let ops = self.ops.clone();
        Box::pin(async move {
            match ops.call("modelCall", json!({"op": op, "model": model, "context": context}), Some(&cancel)).await {
                Ok(result) => Ok(result),
                Err(CallError::Failed(message) | CallError::Dead(message)) => Err(message),
                Err(CallError::Cancelled) => Err(crate::provider::typed::ABORTED.to_string()),
            }
        })
    }
}

/// `models.*` over the sub-session's registry, listed when a script first asks.
fn session_models(ops: SessionOps) -> LaterModels {
    LaterModels::new(move || {
        let ops = ops.clone();
        Box::pin(async move {
            let listed = match ops.call("modelCatalog", json!({}), None).await {
                Ok(listed) => serde_json::from_value::<ListedModels>(listed).map_err(|e| e.to_string())?,
                Err(CallError::Failed(m) | CallError::Dead(m)) => return Err(m),
                Err(CallError::Cancelled) => return Err("Operation aborted".to_string()),
            };
            Ok(ModelsHost::listed(listed, Arc::new(SessionModels { ops })))
        })
    })
}

/// A tool the host describes as `{name, description, parameters, promptGuidelines, exposure, outputSchema?}`.
fn session_tool(ops: Option<SessionOps>, described: &Value) -> Option<SessionTool> {
    let text = |key: &str| described.get(key).and_then(Value::as_str).map(str::to_string);
    Some(SessionTool {
        ops,
        name: text("name")?,
        description: text("description").unwrap_or_default(),
        parameters: described.get("parameters").filter(|p| p.is_object()).cloned().unwrap_or_else(|| json!({})),
        output_schema: described.get("outputSchema").filter(|s| s.is_object()).cloned(),
        guidelines: described
            .get("promptGuidelines")
            .and_then(Value::as_array)
            .map(|g| g.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        exposure: text("exposure").unwrap_or_else(|| "direct".to_string()),
    })
}

/// A sub-session's tool as the host describes it, for listing only: running it is an error result.
pub fn described_tool(described: &Value) -> Option<Arc<dyn Tool>> {
    Some(Arc::new(session_tool(None, described)?))
}

/// A catalog entry of `catalog` (one tool the host described).
fn entry(ops: &SessionOps, described: &Value) -> Option<CatalogEntry> {
    let tool = session_tool(Some(ops.clone()), described)?;
    let name = tool.name.clone();
    let namespace = described.get("namespace").and_then(Value::as_str).map(str::to_string);
    let output_schema = tool.output_schema.clone();
    let guidelines = tool.guidelines.clone();
    let search = SearchDoc {
        name: name.clone(),
        description: tool.description.clone(),
        extra: String::new(),
        namespace: namespace.clone(),
    };
    Some(CatalogEntry { tool: Arc::new(tool), namespace, output_schema, is_mcp: false, search, guidelines })
}

/// Run one codemode script of a sub-session (`runBuiltinTool` with `toolName: "codemode"`).
pub(super) async fn run(ext: Arc<Extension>, params: Value, temp_dir: PathBuf, cancel: CancellationToken) -> Value {
    let ops =
        SessionOps { ext: ext.clone(), handle: params.pointer("/operations/handle").cloned().unwrap_or(Value::Null) };
    let catalog = params.get("catalog").and_then(Value::as_array).cloned().unwrap_or_default();
    let entries: Vec<CatalogEntry> = catalog.iter().filter_map(|t| entry(&ops, t)).collect();
    let mut tool = CodemodeTool::new(entries, None);
    if params.get("models").and_then(Value::as_bool) == Some(false) {
        tool = tool.without_models_global();
    } else {
        tool = tool.with_later_models(session_models(ops.clone()));
    }
    let cwd = params.get("cwd").and_then(Value::as_str).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    let mut ctx = ToolContext::new(cwd);
    ctx.cancel = cancel;
    ctx.temp_dir = temp_dir;
    ctx.tool_call_id = params.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
    ctx.session = Some(Arc::new(SessionStore { ops }));
    let (tx, mut rx) = mpsc::unbounded_channel();
    ctx.updates = Some(tx);
    let call_id = params.get("callId").cloned().unwrap_or(Value::Null);
    let input = params.get("input").cloned().unwrap_or_else(|| json!({}));
    let run = tool.execute(input, ctx);
    tokio::pin!(run);
    let out = loop {
        tokio::select! {
            biased;
            Some(update) = rx.recv() => ext.send_tool_update(&call_id, update),
            out = &mut run => break out,
        }
    };
    while let Ok(update) = rx.try_recv() {
        ext.send_tool_update(&call_id, update);
    }
    super::builtin_tools::output_json(&out)
}
