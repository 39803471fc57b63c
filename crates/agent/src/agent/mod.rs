//! The agent: an actor that owns the session state, handles `Op`s in arrival
//! order and reports everything through one ordered stream of [`Output`].
//!
//! Long work (a model run, an RPC `bash`, a compaction, a retry wait) runs in
//! its own task and talks back to the actor through [`internal::Internal`]
//! messages, so `get_state`, `abort` or `steer` are answered while a run streams.

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::config::{ModelRegistry, Settings};
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::model::ThinkingLevel;
use crate::op::{Op, Reply, RequestTag};
use crate::provider::ProviderRegistry;
use crate::tools::ToolRegistry;

mod actor;
mod cache_warmer;
mod channels;
mod client_state;
mod compaction_decision;
mod compaction_msg;
mod current_session;
mod extension_cache_warming;
mod extension_codemode_loadout;
mod extension_compaction;
mod extension_expand;
mod extension_images;
mod extension_library;
mod extension_login;
mod extension_model_resolver;
mod extension_model_store;
mod extension_packages;
mod extension_resources;
mod extension_session_op_state;
mod extension_state;
mod extension_typed;
mod input_images;
mod internal;
mod listed_catalog;
mod mcp_start;
mod model_choice;
mod nested_calls;
mod parked_switch;
mod preferences;
mod queue;
mod restored_tools;
mod route;
mod run;
mod session_link;
mod session_start;
mod settle;
mod state;
mod system_update;
#[cfg(test)]
mod tests;
mod tool_exec;
mod toolbox;
mod virtual_route;
mod workspace;

pub use extension_library::sessionless_requests;

/// How the agent's session starts.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStart {
    /// `--no-session`: nothing is written.
    InMemory,
    /// A new session file in the session directory.
    New,
    /// Open (or create) this file.
    Open(PathBuf),
    /// `--continue`: the most recent session in the session directory, else a new one.
    Continue,
    /// `--session-id`: the session directory's session with this id, else a new one with it.
    WithId(String),
    /// `--fork`: a copy of this session file in the session directory (with this id).
    Fork { source: PathBuf, id: Option<String> },
    /// A new session with this id, known to be unused (`pi serve` chose it
    /// or checked it), without a directory scan.
    Fresh { id: String, parent_session: Option<String> },
}

/// System prompt sources from the command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemPromptOptions {
    /// `--system-prompt`: replaces the built-in prompt (text or a file path).
    pub replace: Option<String>,
    /// `--append-system-prompt`: appended (text or file path), in order.
    pub append: Vec<String>,
    /// `--no-context-files`: no AGENTS.md / CLAUDE.md in the prompt.
    pub no_context_files: bool,
}

/// Everything the agent needs; built by the front end from flags and files
/// (`pi serve` clones one for each session it opens).
#[derive(Clone)]
pub struct AgentConfig {
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    pub settings: Settings,
    pub models: ModelRegistry,
    pub providers: ProviderRegistry,
    pub tools: ToolRegistry,
    /// Tool names active at start (in order).
    pub active_tools: Vec<String>,
    pub session: SessionStart,
    /// Where new, forked and cloned sessions are written.
    pub session_dir: PathBuf,
    /// True when the session directory came from `--session-dir` or settings
    /// (it then stays put when `initialize` changes the cwd).
    pub session_dir_explicit: bool,
    /// `--provider`, `--model` (pattern, may carry `:thinking`).
    pub provider: Option<String>,
    pub model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
    /// `--models` patterns: the scope `cycle_model` cycles through.
    pub model_scope: Vec<String>,
    pub api_key: Option<String>,
    pub system_prompt: SystemPromptOptions,
    /// `--name`: session display name set at start.
    pub session_name: Option<String>,
    /// Persist queue modes and auto toggles to `settings.json`, as pi does.
    pub persist_settings: bool,
    /// Directory for temporary files (full bash logs).
    pub temp_dir: PathBuf,
    /// Prompt templates and skills (`/name`, `/skill:name`, the skills prompt block).
    pub resources: crate::resources::Resources,
    /// Extensions to start.
    pub extensions: crate::extensions::ExtensionOptions,
    /// MCP servers of this session (from `mcp.json`, or handed over by the
    /// front end, as ACP's `session/new` does); connected in the background.
    pub mcp: crate::mcp::McpOptions,
    /// What the client offers (files, terminals, its own tools) and the approval policy.
    pub client: crate::client::ClientSetup,
    /// Entered before each write of the session file (`pi serve --cluster`'s
    /// fencing epoch: a worker that lost the session cannot write it).
    pub session_fence: Option<crate::session::SharedFence>,
    /// The process's refreshes of the model catalogs (not offline: RPC mode,
    /// `pi serve`, ACP), asked once this session's extensions loaded, as pi's
    /// RPC mode refreshes after its session was made.
    pub catalog_refreshes: Option<std::sync::Arc<crate::auth::catalog_refreshes::CatalogRefreshes>>,
}

/// One item of the ordered output stream.
// Events are the common, large variant; boxing them would cost an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Event(AgentEvent),
    Reply { tag: RequestTag, result: Result<Reply, CoreError> },
}

/// One item of the ordered output stream of an agent started with
/// [`spawn_batched`]: an output, or the events a background task handed over
/// together (a run's streamed deltas), in order: one hand-off for them all.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Outputs {
    One(Output),
    Events(Vec<AgentEvent>),
}

/// An op in the agent's queue. The op is boxed: a tokio channel allocates
/// its slots 32 at a time, at creation, so every idle session pays for 32
/// items (an op inline is 168 bytes).
type QueuedOp = (Option<RequestTag>, Box<Op>);

/// The front end's handle on a running agent.
#[derive(Clone)]
pub struct AgentHandle {
    ops: mpsc::Sender<QueuedOp>,
}

/// The receiving end of an agent's op queue (the actor's, or a relay's).
pub struct OpReceiver(mpsc::Receiver<QueuedOp>);

impl OpReceiver {
    /// The next op, in order; `None` once every handle is gone. Cancel-safe.
    pub async fn recv(&mut self) -> Option<(Option<RequestTag>, Op)> {
        self.0.recv().await.map(|(tag, op)| (tag, *op))
    }

    /// The next op if one is queued already (`None` when none is, or when
    /// every handle is gone: [`OpReceiver::recv`] tells which).
    pub fn try_recv(&mut self) -> Option<(Option<RequestTag>, Op)> {
        self.0.try_recv().ok().map(|(tag, op)| (tag, *op))
    }
}

/// The agent has stopped and accepts no more ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the agent has shut down")]
pub struct AgentClosed;

impl AgentHandle {
    /// A handle whose ops arrive on the returned receiver instead of an
    /// actor: for a front end that relays them to an agent shared elsewhere
    /// (`pi serve`'s ACP sessions retag them for the session's hub).
    pub fn relay(capacity: usize) -> (AgentHandle, OpReceiver) {
        let (ops, rx) = mpsc::channel(capacity.max(1));
        (AgentHandle { ops }, OpReceiver(rx))
    }

    /// Queue an op. With a tag, exactly one `Output::Reply` with that tag follows;
    /// without one the op runs and no reply is sent.
    pub async fn submit(&self, tag: Option<RequestTag>, op: Op) -> Result<(), AgentClosed> {
        self.ops.send((tag, Box::new(op))).await.map_err(|_| AgentClosed)
    }

    /// Wait for room in the op queue. A front end that also drains the
    /// agent's output races this against its output (so a full op queue
    /// and a full output cannot wait on each other), then sends with the permit.
    pub async fn reserve(&self) -> Result<OpPermit<'_>, AgentClosed> {
        self.ops.reserve().await.map(OpPermit).map_err(|_| AgentClosed)
    }
}

/// Room for one op in the agent's queue (see [`AgentHandle::reserve`]).
pub struct OpPermit<'a>(mpsc::Permit<'a, QueuedOp>);

impl OpPermit<'_> {
    /// Queue the op (as [`AgentHandle::submit`] does).
    pub fn send(self, tag: Option<RequestTag>, op: Op) {
        self.0.send((tag, Box::new(op)));
    }
}

/// Capacity of the output stream; producers wait when the client stops reading.
const OUTPUT_CAPACITY: usize = 1024;
const OP_CAPACITY: usize = 1024;

/// Start the agent actor. Startup problems (no usable model, unreadable
/// session) are returned here; afterwards every failure is a reply or event.
pub fn spawn(config: AgentConfig) -> Result<(AgentHandle, mpsc::Receiver<Output>), CoreError> {
    let (out_tx, out_rx) = mpsc::channel(OUTPUT_CAPACITY);
    let handle = start(config, channels::OutputTx::One(out_tx))?;
    Ok((handle, out_rx))
}

/// [`spawn`] for a front end that takes the events of a background task
/// together ([`Outputs::Events`]): the stdio connection, which writes them
/// into one buffer.
pub fn spawn_batched(config: AgentConfig) -> Result<(AgentHandle, mpsc::Receiver<Outputs>), CoreError> {
    let (out_tx, out_rx) = mpsc::channel(OUTPUT_CAPACITY);
    let handle = start(config, channels::OutputTx::Batched(out_tx))?;
    Ok((handle, out_rx))
}

fn start(config: AgentConfig, out: channels::OutputTx) -> Result<AgentHandle, CoreError> {
    let (op_tx, op_rx) = mpsc::channel(OP_CAPACITY);
    let agent = actor::Agent::new(config, out)?;
    tokio::spawn(agent.run(OpReceiver(op_rx)));
    Ok(AgentHandle { ops: op_tx })
}
