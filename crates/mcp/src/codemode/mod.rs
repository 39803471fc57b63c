//! The `codemode` tool: the model writes a JavaScript script that calls the
//! session's other tools (`tools.<name>(args)`, MCP tools included), filters
//! their results and returns only what it prints (`text()`, `image()`,
//! `console`, `return`). Scripts run in an embedded QuickJS ([`engine`]) with
//! pi 1.6.0's globals and limits; each nested call passes the same
//! `tool_call` gate as a direct call.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::mcp::search::{SearchDoc, rank};
use crate::mcp::{ExposedTool, McpManager, naming};
use crate::tools::{GateDecision, Tool, ToolContext, ToolOutput, ToolUpdate};

mod declare;
pub use declare::mcp_result_schema;
mod engine;
pub mod listing;
mod model_calls;
pub mod models;
mod output;
mod store;

pub use models::ModelsHost;

use engine::{Completion, ScriptRequest, ScriptRun};

/// Default `max_output_tokens`.
const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 10_000;
/// Longest wait for a free worker.
const WORKER_WAIT: Duration = Duration::from_secs(60);
/// How long calls cancelled at the script's end get to settle (their
/// cancellation sent, an MCP `notifications/cancelled`) before the result.
const CANCEL_GRACE: Duration = Duration::from_secs(1);
/// A failed call's error text in `details.calls` is cut to this many characters.
const ERROR_PREVIEW_CHARS: usize = 500;

/// Scripts running at once in this process (`PI_CODEMODE_MAX_WORKERS`, default 2).
fn workers() -> &'static Semaphore {
    static WORKERS: OnceLock<Semaphore> = OnceLock::new();
    WORKERS.get_or_init(|| {
        let n = std::env::var("PI_CODEMODE_MAX_WORKERS").ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0);
        Semaphore::new(n.unwrap_or(2))
    })
}

/// A tool scripts may call.
#[derive(Clone)]
pub struct CatalogEntry {
    pub tool: Arc<dyn Tool>,
    pub namespace: Option<String>,
    pub output_schema: Option<Value>,
    /// MCP tools resolve to their `CallToolResult`, even when it is an error.
    pub is_mcp: bool,
    pub search: SearchDoc,
    /// The tool's prompt guidelines: scripts see them with its declaration,
    /// as the system prompt's rules cover only declared tools.
    pub guidelines: Vec<String>,
}

impl CatalogEntry {
    pub fn builtin(tool: Arc<dyn Tool>) -> CatalogEntry {
        let search = SearchDoc {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            extra: String::new(),
            namespace: None,
        };
        let output_schema = tool.output_schema().cloned();
        let guidelines = match tool.prompt_guidelines() {
            [] => crate::system_prompt::builtin_guidelines(tool.name()).iter().map(|g| g.to_string()).collect(),
            own => own.to_vec(),
        };
        CatalogEntry { tool, namespace: None, output_schema, is_mcp: false, search, guidelines }
    }

    pub fn from_exposed(t: ExposedTool) -> CatalogEntry {
        let is_mcp = t.namespace.is_some();
        CatalogEntry {
            tool: t.tool,
            namespace: t.namespace,
            output_schema: t.output_schema,
            is_mcp,
            search: t.search,
            guidelines: Vec::new(),
        }
    }

    /// The tool's description, then its guidelines as a list.
    fn description_with_guidelines(&self) -> String {
        let bullets: Vec<String> =
            self.guidelines.iter().map(|g| g.trim()).filter(|g| !g.is_empty()).map(|g| format!("- {g}")).collect();
        if bullets.is_empty() {
            return self.tool.description().to_string();
        }
        format!("{}\n\n{}", self.tool.description().trim(), bullets.join("\n"))
    }

    /// What scripts see of the tool (`describeTool()`, `ALL_TOOLS`, the listing).
    fn described(&self) -> String {
        format!(
            "{}\n\ncodemode tool declaration:\n```ts\n{}\n```",
            self.description_with_guidelines().trim(),
            declare::declaration(self)
        )
    }
}

/// The `codemode` tool of one model call.
pub struct CodemodeTool {
    builtins: Vec<CatalogEntry>,
    mcp: Option<Arc<McpManager>>,
    /// `models.*` of scripts (None: every call fails with "not available").
    models: Option<Arc<ModelsHost>>,
    /// `models.*` answered by a host loaded when a script first asks.
    later_models: Option<Arc<models::LaterModels>>,
    /// Scripts get the `models` global (off with `createCodemodeExtension({ models: false })`).
    models_global: bool,
    parameters: Value,
    /// The `Nested tools:` part of the description (see [`listing`]).
    listing: String,
    description: String,
}

impl CodemodeTool {
    pub fn new(entries: Vec<CatalogEntry>, mcp: Option<Arc<McpManager>>) -> CodemodeTool {
        let builtins =
            entries.into_iter().filter(|e| !e.is_mcp && e.namespace.is_none() && e.tool.name() != "codemode").collect();
        let parameters = json!({"type": "object", "required": ["code"], "properties": {
            "code": {"type": "string", "description": "Raw JavaScript source."}
        }});
        let mut tool = CodemodeTool {
            builtins,
            mcp,
            models: None,
            later_models: None,
            models_global: true,
            parameters,
            listing: String::new(),
            description: String::new(),
        };
        tool.describe();
        tool
    }

    /// List these tools in the description, as pi's `codemode.inlineBudget` allows.
    pub fn with_listing(mut self, listing: &listing::Listing) -> CodemodeTool {
        self.listing = listing.render();
        self.describe();
        self
    }

    fn describe(&mut self) {
        let base = match DESCRIPTION.rsplit_once(MODELS_LINE) {
            Some((without, _)) if !self.models_global => without,
            _ => DESCRIPTION,
        };
        self.description = format!("{base}{}", self.listing);
    }

    /// Give scripts the session's models (`models.*`).
    pub fn with_models(mut self, models: Option<Arc<ModelsHost>>) -> CodemodeTool {
        self.models = models;
        self
    }

    /// Give scripts models loaded when they first ask (another session's, see [`models::LaterModels`]).
    pub fn with_later_models(mut self, later: models::LaterModels) -> CodemodeTool {
        self.later_models = Some(Arc::new(later));
        self
    }

    /// The models of scripts now (the error text when there are none).
    async fn models_host(&self) -> Result<Arc<ModelsHost>, String> {
        match (&self.models, &self.later_models) {
            (Some(host), _) => Ok(host.clone()),
            (None, Some(later)) => later.host().await,
            (None, None) => Err("models are not available in this session".to_string()),
        }
    }

    /// Leave the `models` global out of scripts and of the description, as
    /// pi's `createCodemodeExtension({ models: false })` does.
    pub fn without_models_global(mut self) -> CodemodeTool {
        self.models_global = false;
        self.describe();
        self
    }

    /// Every callable tool now (MCP tools of servers connected so far).
    fn catalog(&self) -> Vec<CatalogEntry> {
        let mut all = self.builtins.clone();
        if let Some(mcp) = &self.mcp {
            all.extend(mcp.tools().into_iter().map(CatalogEntry::from_exposed));
        }
        all
    }
}

const DESCRIPTION: &str = "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code fence), run as an async function body in a QuickJS sandbox: top-level `await` and `return` work. No Node, file system, network, or timers.
- `await tools.<name>({ ...args })` resolves to a string, or an object if the tool's declaration says so, and rejects with an Error on failure. MCP tools resolve to their `CallToolResult` (`content`, `structuredContent`, `isError`), also when it reports an error. Calls still running when the script ends are cancelled.
- Optional first line: `// @options: {\"max_output_tokens\": 10000, \"timeout_ms\": 60000}`

Globals:
- `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)`, and top-level `return` add output; `exit()` ends the script. With several text items, each starts with a `==> text N/M <==` line, and `console` lines follow the other output in one `<console_output>` block. `image()` also saves the image to a temp file and the result names its path.
- `store(key, value)` and `load(key)` keep JSON values across codemode calls.
- `ALL_TOOLS`, `await searchTools(query, { limit?, namespace? })`, `await describeTool(name)`, `await describeNamespace(name)`: find unlisted tools, such as MCP tools.
- `models`: classifiers and image generation: `await models.getAvailableOfType(\"classifier\" | \"image\")`, `await models.classify(model, { state, images?, questions })`, `await models.generateImages(model, { input: [{ type: \"text\", text }] })`; show a generated image with `image(block)`.";

/// Where the description's `models` line starts (it is the last line).
const MODELS_LINE: &str = "\n- `models`:";

/// Script options from a first line `// @options: {...}`.
#[derive(Debug, Default, PartialEq)]
struct ScriptOptions {
    max_output_tokens: Option<u64>,
    timeout_ms: Option<u64>,
}

fn parse_options(code: &str) -> Result<ScriptOptions, String> {
    const MARK: &str = "// @options:";
    let mut options = ScriptOptions::default();
    for (i, line) in code.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix(MARK) else { continue };
        if i > 0 {
            return Err(format!("The options line must be the first line of the script (found on line {}).", i + 1));
        }
        let v: Value = serde_json::from_str(rest.trim()).map_err(|e| format!("Invalid options line: {e}"))?;
        let num = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(n) => n
                .as_u64()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| format!("Invalid options line: {k} must be a positive integer")),
        };
        options.max_output_tokens = num("max_output_tokens")?;
        options.timeout_ms = num("timeout_ms")?;
    }
    Ok(options)
}

#[async_trait]
impl Tool for CodemodeTool {
    fn name(&self) -> &str {
        "codemode"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let code = args.get("code").and_then(Value::as_str).unwrap_or_default().to_string();
        if code.trim().is_empty() {
            return ToolOutput::error(
                "Expected JavaScript source text (non-empty). Provide JS only, optionally with a first line `// @options: {\"max_output_tokens\": 1000}`.",
            );
        }
        let started = Instant::now();
        let options = match parse_options(&code) {
            Ok(o) => o,
            Err(e) => return output::not_started(started, &e),
        };
        let deadline = options.timeout_ms.map(|ms| started + Duration::from_millis(ms));
        let wait = deadline.map_or(WORKER_WAIT, |d| d.saturating_duration_since(Instant::now()).min(WORKER_WAIT));
        let permit = tokio::select! {
            p = tokio::time::timeout(wait, workers().acquire()) => match p {
                Ok(Ok(p)) => p,
                _ => {
                    let why = match options.timeout_ms {
                        Some(ms) if Duration::from_millis(ms) <= WORKER_WAIT => format!("Script timed out: Execution timed out after {ms} ms while waiting for a free codemode worker"),
                        _ => "No codemode worker became free within 60 seconds".to_string(),
                    };
                    return output::not_started(started, &why);
                }
            },
            _ = ctx.cancel.cancelled() => return output::not_started(started, "Operation aborted"),
        };
        if let Some(mcp) = &self.mcp {
            let named = mcp.servers_named_in(&code);
            if !named.is_empty() {
                mcp.wait_for(Some(&named)).await;
            }
        }
        let session = Session::new(self, &ctx);
        let outcome = session.run(code, deadline, options.timeout_ms).await;
        drop(permit);
        let max_chars = options.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS).saturating_mul(4) as usize;
        let shown = outcome.items.iter().any(|i| i.get("type").and_then(Value::as_str) == Some("image"));
        let note = session.unshown_images_note(shown);
        let mut out = output::finish(started, outcome, &session.calls(), max_chars, &ctx.temp_dir, note.as_deref());
        out.usage = session.model_usage();
        out
    }
}

/// How a nested call ended: what the script gets (`ok`: resolved with
/// `value`, else rejected with it) and, when the tool failed, its error text.
struct Settled {
    ok: bool,
    value: Value,
    failure: Option<String>,
}

/// `text` cut to `max` characters, `...` marking the cut.
fn preview(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(3)).collect();
    format!("{kept}...")
}

/// One call record of `details.calls`.
#[derive(Debug, Clone)]
pub(crate) struct CallRecord {
    pub id: String,
    pub name: String,
    pub args: String,
    pub status: &'static str,
    pub duration_ms: Option<f64>,
    pub error: Option<String>,
    /// A model call's cost (`usage.cost.total`).
    pub cost: Option<f64>,
}

impl CallRecord {
    fn to_json(&self) -> Value {
        let mut v = json!({"id": self.id, "name": self.name, "args": self.args, "status": self.status});
        if let Some(d) = self.duration_ms {
            v["durationMs"] = json!(d);
        }
        if let Some(e) = &self.error {
            v["error"] = json!(e);
        }
        if let Some(c) = self.cost {
            v["cost"] = json!(c);
        }
        v
    }
}

/// A `details.calls` row still running: where it is and when it started.
struct RunningCall {
    index: usize,
    started: Instant,
}

/// The async side of one script run.
struct Session<'a> {
    tool: &'a CodemodeTool,
    ctx: &'a ToolContext,
    calls: std::sync::Mutex<Vec<CallRecord>>,
    /// Model calls of the script: how many, which may run (4 at once), what they cost.
    models: model_calls::ModelCalls,
    /// The stored values on the branch when the script started (`load()`).
    stored: std::sync::OnceLock<Value>,
}

impl<'a> Session<'a> {
    fn new(tool: &'a CodemodeTool, ctx: &'a ToolContext) -> Session<'a> {
        let stored = std::sync::OnceLock::new();
        Session { tool, ctx, calls: std::sync::Mutex::new(Vec::new()), models: Default::default(), stored }
    }

    fn calls(&self) -> Vec<CallRecord> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn publish(&self) {
        let calls: Vec<Value> = self.calls().iter().map(CallRecord::to_json).collect();
        self.ctx.update(ToolUpdate { content: Vec::new(), details: Some(json!({"calls": calls})) });
    }

    async fn run(&self, code: String, deadline: Option<Instant>, timeout_ms: Option<u64>) -> engine::ScriptOutcome {
        let (req_tx, mut req_rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let (comp_tx, comp_rx) = std::sync::mpsc::channel::<Completion>();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let models = self.tool.models_global;
        let _ = self.stored.set(store::snapshot(self.ctx).await);
        let run = ScriptRun {
            code,
            deadline,
            timeout_ms,
            models,
            stop: stop.clone(),
            requests: req_tx,
            completions: comp_rx,
        };
        let spawned = std::thread::Builder::new().name("codemode".into()).spawn(move || {
            let _ = done_tx.send(engine::run_script(run));
        });
        if let Err(e) = spawned {
            return engine::ScriptOutcome {
                error: Some(format!("cannot start a codemode worker: {e}")),
                ..Default::default()
            };
        }
        self.publish();
        let calls_cancel = self.ctx.cancel.child_token();
        let mut running: futures::stream::FuturesUnordered<futures::future::BoxFuture<'_, Completion>> =
            futures::stream::FuturesUnordered::new();
        let mut done_rx = done_rx;
        let mut seq = 0u32;
        let outcome = loop {
            use futures::StreamExt;
            tokio::select! {
                outcome = &mut done_rx => break outcome.unwrap_or_default(),
                Some(request) = req_rx.recv() => match request {
                    ScriptRequest::Call { id, name, args } => {
                        seq += 1;
                        running.push(Box::pin(self.call(id, seq, name, args, calls_cancel.clone())));
                    }
                    ScriptRequest::Model { id, op, args } => {
                        running.push(Box::pin(self.model(id, op, args, calls_cancel.clone())));
                    }
                    ScriptRequest::Sync { op, arg, reply } => {
                        let _ = reply.send(self.answer(&op, &arg).await);
                    }
                },
                Some(completion) = running.next(), if !running.is_empty() => {
                    let _ = comp_tx.send(completion);
                    self.publish();
                }
                _ = self.ctx.cancel.cancelled(), if !stop.load(std::sync::atomic::Ordering::SeqCst) => {
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
        };
        // Calls still running when the script ends (it returned, failed or
        // timed out) are cancelled, and polled so that their cancellation
        // goes out; those that do not settle in time are dropped.
        calls_cancel.cancel();
        if !running.is_empty() {
            use futures::StreamExt;
            let settle = async { while running.next().await.is_some() {} };
            let _ = tokio::time::timeout(CANCEL_GRACE, settle).await;
        }
        drop(running);
        self.cancel_running();
        if outcome.error.is_none() {
            store::commit(self.ctx, &outcome.writes).await;
        }
        outcome
    }

    /// Add a `running` row to `details.calls`, show it, and start its clock.
    fn begin_call(&self, id: String, name: String, args: String) -> RunningCall {
        let index = {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            calls.push(CallRecord { id, name, args, status: "running", duration_ms: None, error: None, cost: None });
            calls.len() - 1
        };
        self.publish();
        RunningCall { index, started: Instant::now() }
    }

    /// Close the row [`begin_call`](Self::begin_call) opened: its time, status, error and cost.
    fn end_call(&self, row: RunningCall, status: &'static str, error: Option<String>, cost: Option<f64>) {
        if let Ok(mut calls) = self.calls.lock() {
            let record = &mut calls[row.index];
            record.duration_ms = Some(row.started.elapsed().as_secs_f64() * 1000.0);
            record.status = status;
            record.error = error;
            record.cost = cost;
        }
    }

    /// Run one nested call through the gate; its completion for the script.
    async fn call(&self, id: u32, seq: u32, name: String, args: Value, cancel: CancellationToken) -> Completion {
        let call_id = format!("{}/{seq}", self.ctx.tool_call_id);
        let row = self.begin_call(call_id.clone(), name.clone(), args.to_string());
        let settled = self.call_inner(&call_id, &name, args, cancel.clone()).await;
        let status = match &settled.failure {
            None => "ok",
            Some(_) if cancel.is_cancelled() => "cancelled",
            Some(_) => "error",
        };
        // pi names no error for a cancelled call.
        let error = settled.failure.filter(|_| status == "error").map(|text| {
            let text = if text.is_empty() { format!("Tool \"{name}\" failed") } else { text };
            preview(&text, ERROR_PREVIEW_CHARS)
        });
        self.end_call(row, status, error, None);
        Completion { id, ok: settled.ok, value: settled.value }
    }

    /// Calls still `running` once the script is over were cut off by its end.
    fn cancel_running(&self) {
        let Ok(mut calls) = self.calls.lock() else { return };
        for record in calls.iter_mut().filter(|r| r.status == "running") {
            record.status = "cancelled";
        }
    }

    async fn call_inner(&self, call_id: &str, name: &str, args: Value, cancel: CancellationToken) -> Settled {
        let refused = |text: String| Settled { ok: false, value: json!(text), failure: Some(text) };
        let catalog = self.tool.catalog();
        let Some(entry) = catalog.into_iter().find(|e| e.tool.name() == name) else {
            return refused(format!("Tool {name} not found"));
        };
        let args = match entry.tool.prepare_arguments_elsewhere(&args).await {
            None => entry.tool.prepare_arguments(args),
            Some(Ok(prepared)) => prepared,
            Some(Err(error)) => return refused(error),
        };
        let args = match crate::tools::validate::coerce_and_validate(name, entry.tool.parameters(), &args) {
            Ok(a) => a,
            Err(e) => return refused(e),
        };
        let args = match &self.ctx.gate {
            Some(gate) => match gate.check(None, call_id, name, &args, &cancel).await {
                GateDecision::Allow { args: replaced } => replaced.unwrap_or(args),
                GateDecision::Block { reason } => return refused(reason),
            },
            None => args,
        };
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel;
        ctx.tool_call_id = call_id.to_string();
        ctx.updates = None;
        let out = entry.tool.execute(args, ctx).await;
        let text = || {
            out.content
                .iter()
                .filter_map(|b| match b {
                    crate::message::ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        // A failed call is an error in `details.calls`, with its text, even
        // when the script gets a value (an MCP result with `isError`).
        let failure = out.is_error.then(text);
        // A tool that declares an output schema (MCP's, an extension's) resolves to its structured
        // content even for an error result; a tool without one resolves to its text.
        let typed = entry.is_mcp || entry.output_schema.is_some();
        // pi-rpc's own tools that return structured content (bash, read, the MCP resource tools).
        let builtin_structured = matches!(name, "bash" | "read")
            || crate::mcp::tools::ResourceToolKind::ALL.iter().any(|kind| kind.name() == name);
        let (ok, value) = match out.structured_content {
            Some(v) if typed || name == "bash" || (builtin_structured && !out.is_error) => (true, v),
            _ if out.is_error => (false, json!(text())),
            _ => (true, json!(text())),
        };
        Settled { ok, value, failure }
    }

    /// A catalog or store question from the script.
    async fn answer(&self, op: &str, arg: &Value) -> Option<Value> {
        match op {
            "resolve" => {
                let ident = arg.as_str()?;
                let mut catalog = self.tool.catalog();
                if catalog.iter().all(|e| naming::identifier(e.tool.name()) != ident)
                    && let Some(mcp) = &self.tool.mcp
                    && ident.starts_with("mcp__")
                {
                    mcp.wait_for(Some(&mcp.servers_named_in(ident))).await;
                    catalog = self.tool.catalog();
                }
                catalog.iter().find(|e| naming::identifier(e.tool.name()) == ident).map(|e| json!(e.tool.name()))
            }
            // The tools' script names, for an unknown member's error (the first of a name wins).
            "identifiers" => {
                self.wait_all().await;
                let mut names: Vec<String> = Vec::new();
                for entry in self.tool.catalog() {
                    let ident = naming::identifier(entry.tool.name());
                    if !names.contains(&ident) {
                        names.push(ident);
                    }
                }
                Some(json!(names))
            }
            "all_tools" => {
                self.wait_all().await;
                let all: Vec<Value> = self
                    .tool
                    .catalog()
                    .iter()
                    .map(|e| json!({"name": e.tool.name(), "description": e.described()}))
                    .collect();
                Some(Value::Array(all))
            }
            "search" => {
                self.wait_all().await;
                let query = arg.get("query").and_then(Value::as_str).unwrap_or_default();
                let limit = arg.get("limit").and_then(Value::as_u64).unwrap_or(8) as usize;
                let ns = arg.get("namespace").and_then(Value::as_str);
                let catalog: Vec<CatalogEntry> = self
                    .tool
                    .catalog()
                    .into_iter()
                    .filter(|e| {
                        ns.is_none_or(|ns| {
                            e.namespace
                                .as_deref()
                                .is_some_and(|n| naming::namespace_matches(ns, n.trim_start_matches("mcp__")))
                        })
                    })
                    .collect();
                let docs: Vec<SearchDoc> = catalog.iter().map(|e| e.search.clone()).collect();
                let found: Vec<Value> = rank(&docs, query, limit)
                    .into_iter()
                    .filter_map(|d| catalog.iter().find(|e| e.tool.name() == d.name))
                    .map(|e| json!({"name": e.tool.name(), "description": e.described()}))
                    .collect();
                Some(Value::Array(found))
            }
            "describe" => {
                let name = arg.as_str()?;
                if name.starts_with("mcp__") {
                    self.wait_all().await;
                }
                self.tool.catalog().iter().find(|e| e.tool.name() == name).map(|e| json!(e.described()))
            }
            "namespace" => {
                self.wait_all().await;
                self.tool.mcp.as_ref()?.namespace_info(arg.as_str()?)
            }
            "store" => self.stored.get().cloned(),
            _ => None,
        }
    }

    async fn wait_all(&self) {
        if let Some(mcp) = &self.tool.mcp {
            mcp.wait_for(None).await;
        }
    }
}

#[cfg(test)]
mod models_tests;
#[cfg(test)]
mod tests;
