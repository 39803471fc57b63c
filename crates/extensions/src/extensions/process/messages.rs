//! What an extension's messages do: its registration, the answers to pi-rpc's
//! calls, and its requests, served in order or aside (dialogs, and long work
//! that calls back into the extension).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{CallError, Extension, READY, STARTING, lock};
use crate::extensions::protocol::{self, Incoming};
use crate::extensions::ui::{is_dialog_method, is_ui_method, ui_call};
use crate::extensions::{ExtRequest, HostSignal};
use crate::tools::ToolUpdate;

pub(super) async fn handle_message(ext: &Arc<Extension>, message: Incoming) {
    match message {
        Incoming::Register(registration) => {
            if let Err(e) = registration.validate() {
                ext.fail("register", e);
                return;
            }
            for event in registration.events.iter().filter(|e| !protocol::is_known_event(e)) {
                tracing::debug!("extension {}: subscribes to \"{event}\", which pi-rpc never sends", ext.name());
            }
            if let (Some(name), Ok(mut slot)) = (registration.name.clone(), ext.name.write()) {
                *slot = name;
            }
            if let Ok(mut slot) = ext.registration.write() {
                *slot = Some(registration);
            }
            let _ = ext.status.compare_exchange(STARTING, READY, Ordering::SeqCst, Ordering::SeqCst);
            ext.settled.cancel();
            ext.signals.deliver(HostSignal::Registered { id: ext.id }).await;
        }
        Incoming::Response { id, outcome } => {
            let call = lock(&ext.pending).remove(&id);
            match call {
                Some(call) => {
                    let _ = call.tx.send(outcome.map_err(CallError::Failed));
                }
                None => tracing::debug!("extension {}: response to unknown request {id}", ext.name()),
            }
        }
        Incoming::Cancel { id } => {
            if let Some(token) = lock(&ext.dialogs).remove(&id) {
                token.cancel();
            }
        }
        // A dialog waits for the user: served aside so reading goes on.
        Incoming::Request { id, method, params } if is_dialog_method(&method) => {
            serve_aside(ext, id, move |ext, dismissed| async move {
                Ok(ui_call(&ext.ui, &ext.signals, ext.id, &ext.name(), &method, &params, &dismissed).await)
            });
        }
        // Long work that calls back into the extension: served aside, and
        // withdrawn when the extension cancels it.
        Incoming::Request { id, method, params } if is_long_method(&method) || is_model_call(&method, &params) => {
            serve_aside(
                ext,
                id,
                move |ext, withdrawn| async move { serve_long(&ext, &method, params, withdrawn).await },
            );
        }
        // `pi.setModel()`: handed to the agent in order; its answer, which
        // waits for the `model_select` handlers (this extension's too), aside.
        Incoming::Request { id, method, params } if method == "setModel" => {
            let answer = hand_to_agent(ext, ExtRequest::SetModel(params)).await;
            let ext = ext.clone();
            tokio::spawn(async move {
                let outcome = answer.await;
                if let Some(id) = id {
                    ext.send(&protocol::response(&id, outcome));
                }
            });
        }
        Incoming::Request { id, method, params } => {
            // Served in order: what the extension sent first is emitted first.
            let outcome = handle_request(ext, &method, params).await;
            if let Some(id) = id {
                ext.send(&protocol::response(&id, outcome));
            }
        }
    }
}

/// Serve a request aside from the reading loop: the extension may cancel it
/// by its id (`Incoming::Cancel`) until it is answered.
fn serve_aside<F, Fut>(ext: &Arc<Extension>, id: Option<Value>, serve: F)
where
    F: FnOnce(Arc<Extension>, CancellationToken) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Value, String>> + Send,
{
    let ext = ext.clone();
    let cancelled = CancellationToken::new();
    let key = id.as_ref().map(protocol::id_key);
    if let Some(key) = &key {
        lock(&ext.dialogs).insert(key.clone(), cancelled.clone());
    }
    tokio::spawn(async move {
        let outcome = serve(ext.clone(), cancelled).await;
        if let Some(key) = &key {
            lock(&ext.dialogs).remove(key);
        }
        if let Some(id) = id {
            ext.send(&protocol::response(&id, outcome));
        }
    });
}

/// Hand a request to the agent and wait for its answer.
async fn ask_agent(ext: &Extension, request: ExtRequest) -> Result<Value, String> {
    hand_to_agent(ext, request).await.await
}

/// Hand a request to the agent now: its answer, to wait for.
async fn hand_to_agent(
    ext: &Extension,
    request: ExtRequest,
) -> impl std::future::Future<Output = Result<Value, String>> + Send + 'static {
    let (reply, answer) = oneshot::channel();
    let delivered = ext.signals.deliver(HostSignal::Request { id: ext.id, request, reply }).await;
    async move {
        if !delivered {
            return Err("the agent has shut down".to_string());
        }
        answer.await.unwrap_or_else(|_| Err("the agent has shut down".to_string()))
    }
}

/// Requests served aside from the reading loop (they call back into the extension).
fn is_long_method(method: &str) -> bool {
    matches!(
        method,
        "runBuiltinTool"
            | "modelStream"
            | "sessionOp"
            | "executeTool"
            | "providerHook"
            | "mcpCommand"
            | "mcpTools"
            | "mcpCallTool"
            | "streamService"
            | "providerRefresh"
    )
}

/// `ctx.modelRegistry.classify / generateImages`: a model call, which may
/// go back to an extension (a provider's own implementation, `provider_typed`);
/// `ModelRuntime.login`'s OAuth login, which asks the extension's interaction
/// (`login_interaction`) while it runs; `ModelRuntime.resolveModel`, whose
/// router may be this extension's (`route_model`).
fn is_model_call(method: &str, params: &Value) -> bool {
    method == "models"
        && matches!(
            params.get("op").and_then(Value::as_str),
            Some("classify" | "generateImages" | "login" | "resolveModel")
        )
}

async fn serve_long(
    ext: &Arc<Extension>,
    method: &str,
    params: Value,
    withdrawn: CancellationToken,
) -> Result<Value, String> {
    match method {
        "runBuiltinTool" => {
            Ok(crate::extensions::builtin_tools::run(ext.clone(), params, ext.temp_dir.clone(), withdrawn).await)
        }
        "executeTool" => {
            let scope = ext.nested_scope(&params);
            Ok(crate::extensions::nested::execute(scope, params, withdrawn, |id, update| {
                ext.send_tool_update(id, update)
            })
            .await)
        }
        "modelStream" => {
            let (reply, answer) = oneshot::channel();
            let signal = HostSignal::ModelStream { id: ext.id, params, cancel: withdrawn, reply };
            if !ext.signals.deliver(signal).await {
                return Err("the agent has shut down".to_string());
            }
            answer.await.unwrap_or_else(|_| Err("the agent has shut down".to_string()))
        }
        // A command's session op: the session hooks it runs ask this extension too.
        "sessionOp" => ask_agent(ext, ExtRequest::SessionOp(params)).await,
        // An SDK session's `/mcp`: it waits for the servers to connect, as pi-rpc's `/mcp` does.
        "mcpCommand" => ask_agent(ext, ExtRequest::Mcp { method: method.to_string(), params }).await,
        // An SDK session's MCP tools: a call's progress goes back as `builtinToolUpdate`s for its `callId`.
        "mcpTools" | "mcpCallTool" => {
            let call_id = params.get("callId").cloned().filter(|_| method == "mcpCallTool");
            let (updates, mut progress) = tokio::sync::mpsc::unbounded_channel::<ToolUpdate>();
            let forward = async {
                while let Some(update) = progress.recv().await {
                    if let Some(call_id) = &call_id {
                        ext.send_tool_update(call_id, update);
                    }
                }
            };
            let updates = call_id.is_some().then_some(updates);
            let request = ExtRequest::SessionMcp { method: method.to_string(), params, cancel: withdrawn, updates };
            let (answer, ()) = tokio::join!(ask_agent(ext, request), forward);
            answer
        }
        "models" => ask_agent(ext, ExtRequest::Models(params, withdrawn)).await,
        // A provider stream's `onPayload` / `onResponse` / `onProviderStreamEvent`: pi's provider events.
        "providerHook" => crate::extensions::provider_stream::serve_hook(ext.stream_observer(&params), params).await,
        // A call about a stream the agent serves (an MCP transport's `authProvider`).
        "streamService" => match ext.stream_service(&params) {
            Some(service) => service(params).await,
            None => Err("that stream is closed".to_string()),
        },
        // A provider's network refresh: its turn among the process's sessions, or its end.
        "providerRefresh" => Ok(provider_refresh(ext, &params).await),
        other => Err(format!("unknown method: {other}")),
    }
}

/// `providerRefresh`: `{action: "begin", provider, credential}` (a digest)
/// answers `{run: true, ticket}` (refresh, then `{action: "end", ticket,
/// ok}`) or `{run: false}` (refreshed within the window: read the stored
/// catalog); without the process's refreshes every refresh runs.
async fn provider_refresh(ext: &Arc<Extension>, params: &Value) -> Value {
    use crate::extensions::provider_refreshes::{RefreshKey, RefreshTurn};
    let Some(refreshes) = &ext.provider_refreshes else { return json!({"run": true}) };
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    if text("action") == "end" {
        if let Some(ticket) = params.get("ticket").and_then(Value::as_u64) {
            refreshes.end(ticket, params.get("ok").and_then(Value::as_bool) == Some(true));
        }
        return Value::Null;
    }
    let key = RefreshKey { extension: ext.path.clone(), provider: text("provider"), credential: text("credential") };
    match refreshes.begin(key, ext.exited.clone()).await {
        RefreshTurn::Run(ticket) => json!({"run": true, "ticket": ticket}),
        RefreshTurn::Done => json!({"run": false}),
    }
}

/// Serve one request of the extension.
async fn handle_request(ext: &Arc<Extension>, method: &str, params: Value) -> Result<Value, String> {
    if is_ui_method(method) {
        let never = CancellationToken::new();
        return Ok(ui_call(&ext.ui, &ext.signals, ext.id, &ext.name(), method, &params, &never).await);
    }
    let request = match method {
        // A sign of life while starting (the start-up clock restarts with any line).
        "starting" => return Ok(Value::Null),
        "fail" => {
            let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let event = Some(text("event")).filter(|e| !e.is_empty()).unwrap_or_else(|| "load".to_string());
            ext.fail(&event, text("error"));
            return Ok(Value::Null);
        }
        "reportError" => {
            let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let signal = HostSignal::Error { path: ext.path_string(), event: text("event"), error: text("error") };
            ext.signals.deliver(signal).await;
            return Ok(Value::Null);
        }
        "toolUpdate" => {
            let call_id = params.get("toolCallId").and_then(Value::as_str).unwrap_or_default();
            let tx = lock(&ext.tool_updates).get(call_id).cloned();
            if let Some(tx) = tx {
                let (content, details) = crate::extensions::tool_content::parse_content(&params);
                let _ = tx.send(ToolUpdate { content, details });
            }
            return Ok(Value::Null);
        }
        "streamData" => {
            let name = params.get("stream").and_then(Value::as_str).unwrap_or_default();
            let tx = lock(&ext.streams).get(name).cloned();
            if let Some(tx) = tx {
                let _ = tx.send(params.get("data").cloned().unwrap_or(Value::Null));
            }
            return Ok(Value::Null);
        }
        "builtinTools" => return Ok(crate::extensions::builtin_tools::specs()),
        "callableTools" => return Ok(crate::extensions::nested::callable(ext.nested_scope(&params)).await),
        "sendUserMessage" => ExtRequest::SendUserMessage(params),
        "sendMessage" => ExtRequest::SendMessage(params),
        "appendEntry" => ExtRequest::AppendEntry(params),
        "setSessionName" => ExtRequest::SetSessionName(params),
        "getState" => ExtRequest::GetState,
        "getMessages" => ExtRequest::GetMessages,
        "getCommands" => ExtRequest::GetCommands,
        other => match ExtRequest::from_method(other, params) {
            Some(request) => request,
            None => return Err(format!("unknown method: {other}")),
        },
    };
    ask_agent(ext, request).await
}
