//! The coding tools the model can call (read, write, edit, bash, grep, find, ls)
//! and the registry that validates arguments and runs them.
//!
//! A tool never fails the protocol: every failure is a `ToolOutput` with
//! `is_error: true` that the model sees.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::message::{ContentBlock, Usage};
use crate::provider::ToolSpec;

pub mod bash;
pub mod coerce;
pub mod edit;
pub mod edit_diff;
pub mod find;
pub mod grep;
pub mod image;
pub mod image_blocks;
pub use pi_types::js;
mod listing;
pub mod ls;
pub mod operations;
pub mod path;
pub mod powershell;
pub mod read;
mod session_link;
pub mod shell;
pub mod temp_outputs;
pub mod truncate;
pub mod validate;
pub mod write;

pub use session_link::SessionLink;

/// Names of the tools active by default (as in pi).
pub const DEFAULT_ACTIVE_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// Names of every built-in tool, in declaration order (pi's; `powershell`
/// registered but never active by default).
pub const ALL_BUILTIN_TOOLS: [&str; 8] = ["read", "bash", "powershell", "edit", "write", "grep", "find", "ls"];

/// What a tool produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    /// Tool-specific structured data (diff, truncation info, …).
    pub details: Option<Value>,
    pub is_error: bool,
    /// Nested model usage, if the tool called a model.
    pub usage: Option<Usage>,
    /// pi 1.6's `result.structuredContent` of `tool_execution_end` (bash:
    /// `{output,truncated,exit_code,wall_time_seconds}`, read: the text or an
    /// image object); not part of the toolResult message.
    pub structured_content: Option<Value>,
    /// pi's `terminate`: no follow-up model request after this tool batch
    /// when every result of the batch asks for it.
    pub terminate: bool,
    /// The tool's own result says it failed (an MCP result with `isError`):
    /// pi shows `result.isError: true` in `tool_execution_end`, which a
    /// thrown failure ([`ToolOutput::error`]) does not have.
    pub result_is_error: bool,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { content: vec![ContentBlock::text(text)], ..Default::default() }
    }

    /// An error result; pi attaches empty `details` to errors.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: Some(Value::Object(Default::default())),
            is_error: true,
            ..Default::default()
        }
    }

    /// Attach `structuredContent`.
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// A partial result streamed while a tool runs (the accumulated output so far).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUpdate {
    pub content: Vec<ContentBlock>,
    pub details: Option<Value>,
}

/// What a running tool may use.
#[derive(Clone)]
pub struct ToolContext {
    /// Working directory relative paths resolve against.
    pub cwd: PathBuf,
    /// Cancelled on abort; tools must stop promptly.
    pub cancel: CancellationToken,
    /// Where partial results go (None: nobody listens).
    pub updates: Option<mpsc::UnboundedSender<ToolUpdate>>,
    /// Extra environment for child processes.
    pub env: Vec<(String, String)>,
    /// Directory for temporary files (full bash logs).
    pub temp_dir: PathBuf,
    /// Id of the call being executed (set by the executor; empty otherwise).
    pub tool_call_id: String,
    /// Consulted by the executor before each call (extension `tool_call` hooks).
    pub gate: Option<Arc<dyn ToolCallGate>>,
    /// The client: approvals, and the files, terminals and tools it offers.
    pub client: Option<crate::client::ClientLink>,
    /// Operations an extension supplied for this tool (pi's `*Operations`):
    /// the tool reads, writes, lists and runs through them instead of locally.
    pub operations: Option<Arc<dyn operations::ToolOperations>>,
    /// Runs the calls this tool makes to other tools (pi's `ctx.executeTool()`).
    pub nested: Option<Arc<dyn NestedToolCalls>>,
    /// The session the call runs in (None: no session, as a tool run
    /// outside an agent).
    pub session: Option<Arc<dyn SessionLink>>,
    /// The session's `shellPath` and `shellCommandPrefix` (the `bash` tool's).
    pub shell: shell::ShellSettings,
    /// The limits `read` fits images into: the selected model's
    /// `inputLimits.images.resize` over pi's defaults; `None` sends them as
    /// they are (the settings' `images.autoResize: false`).
    pub image_resize: Option<image::Limits>,
    /// The limits the session fits the images of a tool's result into once
    /// its hooks ran: those of the model whose limits apply to the
    /// conversation (pi's: for a virtual selection, the model its latest
    /// answer came from); `None` as [`ToolContext::image_resize`].
    pub result_image_resize: Option<image::Limits>,
}

impl ToolContext {
    /// A context for `cwd` with no listener and a fresh token.
    pub fn new(cwd: PathBuf) -> Self {
        ToolContext {
            cwd,
            cancel: CancellationToken::new(),
            updates: None,
            env: Vec::new(),
            temp_dir: std::env::temp_dir(),
            tool_call_id: String::new(),
            gate: None,
            client: None,
            operations: None,
            nested: None,
            session: None,
            shell: shell::ShellSettings::default(),
            image_resize: Some(image::Limits::default()),
            result_image_resize: Some(image::Limits::default()),
        }
    }

    /// The supplied operations, if any (see [`operations`]).
    pub(crate) fn ops(&self) -> Option<operations::Ops<'_>> {
        self.operations.as_deref().map(|ops| operations::Ops { ops, cancel: &self.cancel })
    }

    /// The client, when it reads files for the tools (the editor's buffers).
    pub fn client_reads(&self) -> Option<&crate::client::ClientLink> {
        self.client.as_ref().filter(|c| c.capabilities.read_text_file)
    }

    /// The client, when it writes files for the tools (edits land in the editor).
    pub fn client_writes(&self) -> Option<&crate::client::ClientLink> {
        self.client.as_ref().filter(|c| c.capabilities.write_text_file)
    }

    /// Send a partial result (ignored when nobody listens).
    pub fn update(&self, update: ToolUpdate) {
        if let Some(tx) = &self.updates {
            let _ = tx.send(update);
        }
    }
}

/// What a [`ToolCallGate`] decided about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum GateDecision {
    /// Run it, with replaced arguments when `Some`.
    Allow { args: Option<Value> },
    /// Do not run it: the model sees `reason` as an error result.
    Block { reason: String },
}

/// A check run before each validated tool call (extension `tool_call` hooks).
/// `parent`: the call whose tool made this one (pi's `ctx.executeTool()`), `None` for a model's call.
#[async_trait]
pub trait ToolCallGate: Send + Sync {
    async fn check(
        &self,
        parent: Option<&str>,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> GateDecision;

    /// Look at (and possibly change) the result of a call that ran (pi's `tool_result` hooks).
    async fn after(
        &self,
        _parent: Option<&str>,
        _tool_call_id: &str,
        _tool_name: &str,
        _args: &Value,
        output: ToolOutput,
        _cancel: &CancellationToken,
    ) -> ToolOutput {
        output
    }
}

/// How a call a tool made to another tool ended (pi's `AgentToolCallOutcome`).
#[derive(Debug, Clone, Default)]
pub struct NestedOutcome {
    /// `<calling call's id>/<n>`.
    pub tool_call_id: String,
    /// The arguments the call was made with.
    pub arguments: Value,
    pub output: ToolOutput,
    /// Milliseconds the tool ran; `None` when it did not run.
    pub duration_ms: Option<u64>,
}

/// Runs the calls a running tool makes to other tools (pi's `ctx.tools`
/// and `ctx.executeTool()`): the same validation, hooks and events as the
/// model's calls, with the calling call as their parent.
#[async_trait]
pub trait NestedToolCalls: Send + Sync {
    /// The tools a tool may call now.
    async fn callable(&self) -> Vec<ToolSpec>;

    /// Run `name` for the call `caller_id`. Never fails: an unknown tool,
    /// invalid arguments, a blocked call or a failure is an error outcome.
    /// `updates` gets the nested tool's partial results.
    async fn execute(
        &self,
        caller_id: &str,
        name: &str,
        args: Value,
        cancel: CancellationToken,
        updates: Option<mpsc::UnboundedSender<ToolUpdate>>,
    ) -> NestedOutcome;
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments (an object schema).
    fn parameters(&self) -> &Value;
    /// Run with arguments already validated against `parameters`.
    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput;

    /// A one-line summary for the system prompt's tool list (pi's
    /// `promptSnippet`); built-in tools have theirs in `system_prompt`.
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }

    /// Rule bullets for the system prompt while the tool is active (pi's `promptGuidelines`).
    fn prompt_guidelines(&self) -> &[String] {
        &[]
    }

    /// pi's `exposure`: how the model reaches it (`direct`, `model-only`,
    /// `codemode`, `deferred` or `hidden`; pi-rpc's own tools are `direct`).
    fn exposure(&self) -> &str {
        "direct"
    }

    /// May other tools call it through `ctx.executeTool()` (pi's `exposure`):
    /// `direct` tools while active, `codemode` / `deferred` ones always,
    /// `model-only` and `hidden` ones never.
    fn callable(&self, active: bool) -> bool {
        active
    }

    /// Repair common argument mistakes before validation (pi's
    /// `prepareArguments`; edit folds legacy `oldText`/`newText` into `edits`).
    /// Must be idempotent.
    fn prepare_arguments(&self, args: Value) -> Value {
        args
    }

    /// pi's `prepareArguments` when it runs outside pi-rpc (an extension's
    /// tool): asked before validation; `None` when the tool has none there,
    /// an error text when it failed (the call's error result, as in pi).
    async fn prepare_arguments_elsewhere(&self, _args: &Value) -> Option<Result<Value, String>> {
        None
    }

    /// pi's `executionMode: "sequential"`: a batch of the model's calls with
    /// one of this tool runs one call at a time, and nested calls of it run
    /// one at a time across the batch.
    fn sequential(&self) -> bool {
        false
    }

    /// JSON Schema of the result's `structured_content` (pi's `outputSchema`):
    /// a codemode script's call of the tool resolves to that value.
    fn output_schema(&self) -> Option<&Value> {
        None
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters().clone(),
        }
    }
}

pub use pi_types::tool_name::ToolNameMatcher;

/// All known tools by name, in registration order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    order: Vec<String>,
    tools: HashMap<String, Arc<dyn Tool>>,
    /// `--exclude-tools`: names never registered, whoever offers them.
    excluded: Option<ToolNameMatcher>,
}

impl ToolRegistry {
    /// The eight built-in tools, in pi's order.
    pub fn builtin() -> Self {
        let mut reg = ToolRegistry::default();
        reg.register(Arc::new(read::ReadTool::new()));
        reg.register(Arc::new(bash::BashTool::new()));
        reg.register(Arc::new(powershell::powershell_tool()));
        reg.register(Arc::new(edit::EditTool::new()));
        reg.register(Arc::new(write::WriteTool::new()));
        reg.register(Arc::new(grep::GrepTool::new()));
        reg.register(Arc::new(find::FindTool::new()));
        reg.register(Arc::new(ls::LsTool::new()));
        reg
    }

    /// Remove the tools matching these names or `*` patterns, and refuse
    /// them from now on (extension and MCP tools included).
    pub fn exclude(&mut self, patterns: &[String]) {
        let matcher = ToolNameMatcher::new(patterns);
        let gone: Vec<String> = self.order.iter().filter(|n| matcher.matches(n)).cloned().collect();
        for name in gone {
            self.unregister(&name);
        }
        self.excluded = Some(matcher);
    }

    /// True when `--exclude-tools` keeps this name out.
    pub fn is_excluded(&self, name: &str) -> bool {
        self.excluded.as_ref().is_some_and(|m| m.matches(name))
    }

    /// Add or replace a tool (an excluded name is dropped).
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name().to_string();
        if self.is_excluded(&name) {
            tracing::debug!("tool {name} is excluded (--exclude-tools)");
            return;
        }
        if !self.tools.contains_key(&name) {
            self.order.push(name.clone());
        }
        self.tools.insert(name, tool);
    }

    /// Remove a tool; returns it.
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.order.retain(|n| n != name);
        self.tools.remove(name)
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Names in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// Look the tool up and validate `args`; unknown tools and invalid
    /// arguments become error outputs with pi's texts.
    #[allow(clippy::result_large_err)]
    pub fn prepare(&self, name: &str, args: &Value) -> Result<Arc<dyn Tool>, ToolOutput> {
        self.prepare_call(name, args.clone()).map(|(tool, _)| tool)
    }

    /// Look the tool up, prepare and coerce `args` as pi does, and validate
    /// them: the tool and the arguments to execute it with.
    #[allow(clippy::result_large_err)]
    pub fn prepare_call(&self, name: &str, args: Value) -> Result<(Arc<dyn Tool>, Value), ToolOutput> {
        let Some(tool) = self.get(name) else {
            return Err(ToolOutput::error(format!("Tool {name} not found")));
        };
        let prepared = tool.prepare_arguments(args);
        let coerced = validate::coerce_and_validate(name, tool.parameters(), &prepared).map_err(ToolOutput::error)?;
        Ok((tool, coerced))
    }

    /// [`ToolRegistry::prepare`], with a preparation that runs elsewhere
    /// ([`Tool::prepare_arguments_elsewhere`]) asked first: the tool, and
    /// the prepared arguments when there was such a preparation (what the
    /// `tool_call` hooks see and the tool gets, as in pi).
    #[allow(clippy::result_large_err)]
    pub async fn prepare_with_hooks(
        &self,
        name: &str,
        args: &Value,
    ) -> Result<(Arc<dyn Tool>, Option<Value>), ToolOutput> {
        let Some(tool) = self.get(name) else {
            return Err(ToolOutput::error(format!("Tool {name} not found")));
        };
        match tool.prepare_arguments_elsewhere(args).await {
            None => self.prepare(name, args).map(|tool| (tool, None)),
            Some(Err(error)) => Err(ToolOutput::error(error)),
            Some(Ok(prepared)) => {
                validate::coerce_and_validate(name, tool.parameters(), &prepared).map_err(ToolOutput::error)?;
                Ok((tool, Some(prepared)))
            }
        }
    }

    /// Validate `args` and run the tool.
    pub async fn run(&self, name: &str, args: Value, ctx: ToolContext) -> ToolOutput {
        match self.prepare_call(name, args) {
            Ok((tool, args)) => tool.execute(args, ctx).await,
            Err(out) => out,
        }
    }
}

#[cfg(test)]
mod name_matcher_tests {
    use super::*;

    #[test]
    fn names_and_star_patterns() {
        let m = ToolNameMatcher::new(&["bash".into(), "mcp__*__read".into(), "gr*".into()]);
        assert!(m.matches("bash") && !m.matches("bash2"));
        assert!(m.matches("mcp__fs__read") && !m.matches("mcp__fs__write"));
        assert!(m.matches("grep") && m.matches("gr") && !m.matches("agrep"));
        assert!(!ToolNameMatcher::new(&["[ls]".into()]).matches("l"), "only * is special");
        let mut reg = ToolRegistry::builtin();
        reg.exclude(&["bash".into(), "f*".into()]);
        assert!(!reg.contains("bash") && !reg.contains("find") && reg.contains("read"));
        reg.register(Arc::new(bash::BashTool::new()));
        assert!(!reg.contains("bash"), "an excluded tool stays out");
    }
}
