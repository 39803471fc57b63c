//! pi-rpc's built-in tools run for an extension: pi's tool factories
//! (`createBashTool(cwd, options)`, `createReadToolDefinition`, …) build
//! tools whose `execute` asks pi-rpc, with `runBuiltinTool`, to run `read`,
//! `bash`, … with the arguments, working directory and environment the
//! extension's tool settled on. When the extension supplied its own
//! operations (pi's `*Operations`), each operation the tool performs is a
//! `tool_op` request back to the extension, and `exec` output comes back as
//! `streamData` messages: the tool is pi-rpc's, the machine it works on the
//! extension's.
//!
//! `runBuiltinTool` params: `{toolName, toolCallId, input, cwd?, env?: {name:
//! value}, callId?, operations?: {handle, supplied: [names]}, resizeImages?,
//! resizeOptions?}` (`resizeImages: false`: `read` sends images as they are,
//! pi's `autoResizeImages: false`; `resizeOptions`: the model's
//! `inputLimits.images.resize`, over pi's defaults); its result is
//! `{content, details?, isError}`. While it runs, partial results go to the
//! extension as `builtinToolUpdate` notifications (`{callId, content,
//! details?}`). `builtinTools` answers each built-in's `name, description,
//! parameters, promptSnippet, promptGuidelines`. `toolName: "codemode"` is an
//! SDK session's codemode script ([`super::session_codemode`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::process::{CallError, Extension};
use crate::tools::operations::{OperationError, ToolOperations};
use crate::tools::shell::ExecSink;
use crate::tools::{ALL_BUILTIN_TOOLS, ToolContext, ToolRegistry};

/// Every built-in tool as the factories describe it.
pub(super) fn specs() -> Value {
    let registry = ToolRegistry::builtin();
    let tools: Vec<Value> = ALL_BUILTIN_TOOLS
        .iter()
        .filter_map(|name| registry.get(name))
        .map(|tool| {
            json!({
                "name": tool.name(),
                "description": tool.description(),
                "parameters": tool.parameters(),
                "promptSnippet": tool.prompt_snippet().unwrap_or(crate::system_prompt::tool_summary(tool.name())),
                "promptGuidelines": [],
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// Run a built-in tool for extension `ext`; `cancel` ends it (the extension withdrew the request).
pub(super) async fn run(ext: Arc<Extension>, params: Value, temp_dir: PathBuf, cancel: CancellationToken) -> Value {
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let name = text("toolName");
    if name == "codemode" {
        return super::session_codemode::run(ext, params, temp_dir, cancel).await;
    }
    let registry = ToolRegistry::builtin();
    let input = params.get("input").cloned().unwrap_or_else(|| json!({}));
    let (tool, args) = match registry.prepare_call(&name, input) {
        Ok(found) => found,
        Err(out) => return output_json(&out),
    };
    let cwd = params.get("cwd").and_then(Value::as_str).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    let mut ctx = ToolContext::new(cwd);
    ctx.cancel = cancel;
    ctx.temp_dir = temp_dir;
    ctx.tool_call_id = text("toolCallId");
    ctx.image_resize = match params.get("resizeImages") {
        Some(Value::Bool(false)) => None,
        _ => Some(crate::tools::image::Limits::from_options(params.get("resizeOptions"))),
    };
    if let Some(env) = params.get("env").and_then(Value::as_object) {
        ctx.env = env.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
    }
    if let Some(ops) = params.get("operations").filter(|o| o.is_object()) {
        let supplied = ops.get("supplied").and_then(Value::as_array).cloned().unwrap_or_default();
        ctx.operations = Some(Arc::new(ExtensionOperations {
            ext: ext.clone(),
            handle: ops.get("handle").cloned().unwrap_or(Value::Null),
            supplied: supplied.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        }));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    ctx.updates = Some(tx);
    let call_id = params.get("callId").cloned().unwrap_or(Value::Null);
    let run = tool.execute(args, ctx);
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
    output_json(&out)
}

/// A tool's output as the extension host reads it: `{content, details?, isError, structuredContent?}`.
pub fn output_json(out: &crate::tools::ToolOutput) -> Value {
    let mut v = json!({"content": out.content, "isError": out.is_error});
    if let Some(details) = &out.details {
        v["details"] = details.clone();
    }
    if let Some(structured) = &out.structured_content {
        v["structuredContent"] = structured.clone();
    }
    v
}

/// The `exec` operation a `user_bash` handler returned (pi's `{operations}`),
/// held by the extension under `handle` until this is dropped.
pub struct UserBashOperations {
    ops: ExtensionOperations,
}

impl UserBashOperations {
    pub(super) fn new(ext: Arc<Extension>, handle: Value) -> UserBashOperations {
        UserBashOperations { ops: ExtensionOperations { ext, handle, supplied: vec!["exec".to_string()] } }
    }

    pub fn operations(&self) -> &dyn ToolOperations {
        &self.ops
    }
}

impl Drop for UserBashOperations {
    fn drop(&mut self) {
        let params = json!({"handle": self.ops.handle});
        self.ops.ext.send(&json!({"type": "request", "method": "releaseOperations", "params": params}));
    }
}

/// The operations an extension supplied, performed by asking it.
struct ExtensionOperations {
    ext: Arc<Extension>,
    /// The extension's name for the operations object.
    handle: Value,
    supplied: Vec<String>,
}

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

fn operation_error(e: CallError) -> OperationError {
    match e {
        CallError::Failed(m) | CallError::Dead(m) => OperationError::Failed(m),
        CallError::Cancelled => OperationError::Aborted,
    }
}

#[async_trait]
impl ToolOperations for ExtensionOperations {
    fn supplies(&self, name: &str) -> bool {
        self.supplied.iter().any(|s| s == name)
    }

    async fn call(&self, name: &str, args: Value, cancel: &CancellationToken) -> Result<Value, OperationError> {
        let params = json!({"handle": self.handle, "op": name, "args": args});
        self.ext.call("tool_op", params, Some(cancel)).await.map_err(operation_error)
    }

    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        timeout: Option<f64>,
        sink: &mut (dyn ExecSink + '_),
        cancel: &CancellationToken,
    ) -> Result<Option<i64>, OperationError> {
        let stream = format!("exec-{}", NEXT_STREAM.fetch_add(1, Ordering::Relaxed));
        let mut data = self.ext.open_stream(&stream);
        let env: serde_json::Map<String, Value> = env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let args = json!({"command": command, "cwd": cwd.display().to_string(), "env": env, "timeout": timeout, "stream": stream});
        let call = self.call("exec", args, cancel);
        tokio::pin!(call);
        let take = |sink: &mut (dyn ExecSink + '_), chunk: Value| {
            let bytes = chunk.as_str().and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok());
            if let Some(bytes) = bytes {
                sink.data(&bytes);
            }
        };
        let result = loop {
            let deadline = sink.deadline();
            tokio::select! {
                biased;
                Some(chunk) = data.recv() => take(sink, chunk),
                result = &mut call => break result,
                _ = async { tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)).await }, if deadline.is_some() => sink.tick(),
            }
        };
        while let Ok(chunk) = data.try_recv() {
            take(sink, chunk);
        }
        self.ext.close_stream(&stream);
        let value = result?;
        Ok(value.get("exitCode").and_then(Value::as_i64))
    }
}
