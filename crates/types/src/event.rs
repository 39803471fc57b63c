//! The core's one event enum: everything a front end may tell its client,
//! declared once in the `events!` table below with the names each seed
//! dialect writes it as.
//!
//! Adapters map these to their wire in one exhaustive `match`. Field values are
//! already in pi's shapes (messages, tool results) so the native dialect can
//! serialize them as they are.

use serde_json::Value;

use crate::message::{AgentMessage, ContentBlock, ToolCall, Usage};
use crate::model::{Model, ThinkingLevel};
use crate::op::RequestTag;

/// A streaming step inside one assistant message (pi's `assistantMessageEvent`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AssistantStreamEvent {
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
        content: String,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
    },
    ToolCallStart {
        content_index: usize,
        id: String,
        tool_name: String,
    },
    ToolCallDelta {
        content_index: usize,
        delta: String,
    },
    /// Boxed: a `message_update` stays small (it carries every delta).
    ToolCallEnd {
        content_index: usize,
        tool_call: Box<ToolCall>,
    },
}

/// Result payload of a finished tool (or a partial one while it runs).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolResultPayload {
    pub content: Vec<ContentBlock>,
    pub details: Option<Value>,
    /// The tool's structured result (pi 1.6's `structuredContent`: bash's
    /// `{output, truncated, exit_code, wall_time_seconds}`, read's text), boxed
    /// so that events stay small.
    #[serde(default)]
    pub structured_content: Option<Box<Value>>,
    /// The result itself reports an error (`result.isError: true`, MCP).
    /// Defaulted so events stored by an older `pi serve --cluster` worker still read.
    #[serde(default)]
    pub is_error: bool,
    /// The tool's own model usage (pi's `result.usage`: an extension tool
    /// that ran a sub-agent). Defaulted for events stored before it existed;
    /// boxed so that events stay small.
    #[serde(default)]
    pub usage: Option<Box<crate::message::Usage>>,
    /// The tool asked to end the run after this batch (pi's `result.terminate`:
    /// an extension tool's `terminate: true`). Defaulted for events stored before it existed.
    #[serde(default)]
    pub terminate: bool,
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Manual => "manual",
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// What a successful compaction produced.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub estimated_tokens_after: u64,
    pub usage: Option<Usage>,
    pub details: Value,
}

/// Where a summarisation retry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SummarizationSource {
    Compaction(CompactionReason),
    BranchSummary,
}

/// A request for user interaction made by an extension.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtensionUiRequest {
    /// Unique id the client echoes in its response (dialogs only).
    pub id: String,
    /// Name of the extension that asked.
    pub extension: String,
    pub kind: ExtensionUiKind,
}

/// The nine UI methods of the extension UI sub-protocol.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ExtensionUiKind {
    Select { title: String, options: Vec<String>, timeout_ms: Option<u64> },
    Confirm { title: String, message: String, timeout_ms: Option<u64> },
    Input { title: String, placeholder: Option<String>, timeout_ms: Option<u64> },
    Editor { title: String, prefill: Option<String>, timeout_ms: Option<u64> },
    Notify { message: String, notify_type: Option<String> },
    SetStatus { status_key: String, status_text: Option<String> },
    SetWidget { widget_key: String, widget_lines: Option<Vec<String>>, widget_placement: Option<String> },
    SetTitle { title: String },
    SetEditorText { text: String },
}

impl ExtensionUiKind {
    /// Dialogs wait for an answer; the other methods are fire-and-forget.
    pub fn is_dialog(&self) -> bool {
        matches!(
            self,
            ExtensionUiKind::Select { .. }
                | ExtensionUiKind::Confirm { .. }
                | ExtensionUiKind::Input { .. }
                | ExtensionUiKind::Editor { .. }
        )
    }

    /// The method name of the native sub-protocol.
    pub fn method(&self) -> &'static str {
        match self {
            ExtensionUiKind::Select { .. } => "select",
            ExtensionUiKind::Confirm { .. } => "confirm",
            ExtensionUiKind::Input { .. } => "input",
            ExtensionUiKind::Editor { .. } => "editor",
            ExtensionUiKind::Notify { .. } => "notify",
            ExtensionUiKind::SetStatus { .. } => "setStatus",
            ExtensionUiKind::SetWidget { .. } => "setWidget",
            ExtensionUiKind::SetTitle { .. } => "setTitle",
            ExtensionUiKind::SetEditorText { .. } => "set_editor_text",
        }
    }
}

/// Context window usage after a model reply.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContextUsage {
    pub tokens: u64,
    pub context_window: u64,
}

/// Declares every event once: its data, and for each seed dialect the
/// messages it is written as. From it come [`AgentEvent`], [`EventKind`],
/// the dialects' name lists ([`NATIVE`], [`JSONRPC`]) and, for each dialect, a
/// macro (`pi_types::native_wire!`, `pi_types::jsonrpc_wire!`) that the
/// dialect wraps its wire enum in: it gives each variant its name from here
/// (a variant the table does not list, or a listed one the enum lacks, does
/// not compile) and an exhaustive `name()`. Every event must be in each
/// dialect's section, as a message's source or as not shown, or this file
/// does not compile. What a dialect writes for an event is its own exhaustive
/// `match` (`map_event`); its tests check that it writes the names given here.
macro_rules! events {
    (
        $d:tt
        events {
            $(
                $(#[$meta:meta])*
                $name:ident $({ $($(#[$fmeta:meta])* $field:ident: $fty:ty),* $(,)? })? $(($inner:ty))?
            ),* $(,)?
        }
        $(
            $(#[$dmeta:meta])*
            $dialect:ident => $names:ident, $wire_macro:ident {
                not shown: $($hidden:ident),* ;
                $( $wire:ident = $wname:literal <- $($from:ident),* ; )*
            }
        )*
    ) => {
        /// Everything the agent core reports.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub enum AgentEvent {
            $($(#[$meta])* $name $({ $($(#[$fmeta])* $field: $fty),* })? $(($inner))?,)*
        }

        /// Which event, without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum EventKind {
            $($name,)*
        }

        impl AgentEvent {
            pub fn kind(&self) -> EventKind {
                match self {
                    $(AgentEvent::$name { .. } => EventKind::$name,)*
                }
            }
        }

        impl EventKind {
            /// Every event, in the table's order.
            pub const ALL: &[EventKind] = &[$(EventKind::$name),*];
        }

        $(
            $(#[$dmeta])*
            pub const $names: WireNames = WireNames {
                dialect: stringify!($dialect),
                messages: &[$(($wname, &[$(EventKind::$from),*])),*],
                not_shown: &[$(EventKind::$hidden),*],
            };

            // Every event is in the dialect's section (a source of one of its
            // messages, or not shown): an event left out makes this match
            // non-exhaustive.
            const _: () = {
                #[allow(unreachable_patterns, dead_code)]
                fn $dialect(kind: EventKind) {
                    match kind {
                        $($(EventKind::$from => (),)*)*
                        $(EventKind::$hidden => (),)*
                    }
                }
            };

            /// Wraps this dialect's wire enum: each variant gets its name from
            /// the event table, and the enum an exhaustive `name()`.
            #[macro_export]
            macro_rules! $wire_macro {
                $(
                    (@name $wire $d($d rest:tt)*) => { $d crate::__wire_enum!(@named $wname $d($d rest)*); };
                )*
                (@name $d other:ident $d($d rest:tt)*) => {
                    compile_error!(concat!(
                        "`", stringify!($d other), "` is not a message of the ", stringify!($dialect),
                        " dialect in the event table (crates/types/src/event.rs)"
                    ));
                };
                ($d(#[$d attr:meta])* $d vis:vis enum $d ty:ident { $d($d body:tt)* }) => {
                    $d crate::__wire_enum!(@munch $wire_macro [$d(#[$d attr])* $d vis enum $d ty] [] $d($d body)*);

                    impl $d ty {
                        /// The message's name on the wire (from the event table).
                        pub fn name(&self) -> &'static str {
                            match self {
                                $($d ty::$wire { .. } => $wname,)*
                            }
                        }
                    }
                };
            }
        )*
    };
}

/// The walk of a dialect's wire enum behind its table macro (see [`events!`]):
/// each variant is looked up in the table, which hands it back with its name.
#[doc(hidden)]
#[macro_export]
macro_rules! __wire_enum {
    (@munch $lookup:ident [$($head:tt)*] [$($done:tt)*]) => {
        $($head)* { $($done)* }
    };
    (@munch $lookup:ident $head:tt $done:tt
        $(#[$m:meta])* $v:ident $({ $($fields:tt)* })? $(( $($tuple:tt)* ))? $(, $($rest:tt)*)?) => {
        $crate::$lookup!(@name $v $lookup $head $done
            [$(#[$m])* $v $({ $($fields)* })? $(( $($tuple)* ))?] [$($($rest)*)?]);
    };
    (@named $name:literal $lookup:ident $head:tt [$($done:tt)*] [$($variant:tt)*] [$($rest:tt)*]) => {
        $crate::__wire_enum!(@munch $lookup $head [$($done)* #[serde(rename = $name)] $($variant)*,] $($rest)*);
    };
}

/// One dialect's messages made from events (see [`events!`]).
#[derive(Debug)]
pub struct WireNames {
    pub dialect: &'static str,
    /// Each message's name, and the events written as it.
    pub messages: &'static [(&'static str, &'static [EventKind])],
    /// The events this dialect does not show.
    pub not_shown: &'static [EventKind],
}

impl WireNames {
    /// The names `kind` may be written as (none: not shown).
    pub fn of(&self, kind: EventKind) -> Vec<&'static str> {
        self.messages.iter().filter(|(_, from)| from.contains(&kind)).map(|(name, _)| *name).collect()
    }
}

events! {
    $
    events {
        AgentStart,
        AgentEnd {
            messages: Vec<AgentMessage>,
            will_retry: bool,
        },
        /// The whole run of one prompt is over: no retry, compaction retry or queued message follows.
        AgentSettled {
            aborted: bool,
            usage: Box<Usage>,
        },
        TurnStart,
        // Messages, usages, tool arguments and results are boxed in events:
        // an event is as big as its largest variant, and every text delta is
        // moved as one through the run's batches, the agent's queue and the
        // output channel (whose 32 slots are allocated per session at creation).
        TurnEnd {
            message: Box<AgentMessage>,
            tool_results: Vec<AgentMessage>,
        },
        MessageStart {
            message: Box<AgentMessage>,
        },
        MessageUpdate {
            event: AssistantStreamEvent,
            /// The message's usage so far (zeros until the provider reports it);
            /// shared, as it changes far less often than the deltas come.
            usage: std::sync::Arc<Usage>,
        },
        MessageEnd {
            message: Box<AgentMessage>,
        },
        // `parent_tool_call_id`: the call whose tool made this one (pi's
        // `ctx.executeTool()`); `None` for a call of the model.
        ToolExecutionStart {
            tool_call_id: String,
            tool_name: String,
            args: Box<Value>,
            parent_tool_call_id: Option<String>,
        },
        ToolExecutionUpdate {
            tool_call_id: String,
            tool_name: String,
            args: Box<Value>,
            partial_result: Box<ToolResultPayload>,
            parent_tool_call_id: Option<String>,
        },
        ToolExecutionEnd {
            tool_call_id: String,
            tool_name: String,
            result: Box<ToolResultPayload>,
            is_error: bool,
            /// Milliseconds the tool ran; `None` for a call refused before running.
            duration_ms: Option<u64>,
            parent_tool_call_id: Option<String>,
        },
        QueueUpdate {
            steering: Vec<String>,
            follow_up: Vec<String>,
        },
        CompactionStart {
            reason: CompactionReason,
        },
        CompactionEnd {
            reason: CompactionReason,
            result: Option<Box<CompactionResult>>,
            aborted: bool,
            will_retry: bool,
            error_message: Option<String>,
        },
        AutoRetryStart {
            attempt: u32,
            max_attempts: u32,
            delay_ms: u64,
            error_message: String,
        },
        AutoRetryEnd {
            success: bool,
            attempt: u32,
            final_error: Option<String>,
        },
        SummarizationRetryScheduled {
            attempt: u32,
            max_attempts: u32,
            delay_ms: u64,
            error_message: String,
        },
        SummarizationRetryAttemptStart {
            source: SummarizationSource,
        },
        SummarizationRetryFinished,
        /// A chunk of output of an RPC `bash` command; `request` is the command's tag.
        BashExecutionUpdate {
            request: Option<RequestTag>,
            delta: String,
        },
        ThinkingLevelChanged {
            level: ThinkingLevel,
        },
        ModelChanged {
            model: Box<Model>,
            thinking_level: ThinkingLevel,
        },
        SessionInfoChanged {
            name: String,
        },
        /// An entry was appended to the session outside the message flow (the
        /// `context_edit` that hides a retried or recovered attempt from the
        /// model, the `usage` entry of a prompt-cache refresh), as written to
        /// the session file.
        EntryAppended {
            entry: Box<Value>,
        },
        /// Context usage after an assistant reply (drives JSON-RPC `contextUsage`).
        ContextUsage(ContextUsage),
        /// A model or tool error the client should hear about (the native dialect shows it in messages).
        RunError {
            error: crate::error::CoreError,
            will_retry: bool,
        },
        ExtensionError {
            extension_path: String,
            event: String,
            error: String,
        },
        ExtensionUiRequest(Box<ExtensionUiRequest>),
        /// The core asks the client (an approval, a file, a terminal, a client
        /// tool's result) and waits for an `Op::ClientResponse` with this id.
        ClientRequest(Box<crate::client::ClientRequest>),
        /// The core stopped waiting for this request (abort, timeout): a late answer is ignored.
        ClientRequestEnded {
            id: String,
        },
        /// A login started by `Op::Login` ended: the credential is stored, or why not.
        LoginEnd {
            provider: String,
            error: Option<String>,
        },
    }

    /// The native dialect's event lines (their `type`).
    native => NATIVE, native_wire {
        not shown: ModelChanged, ContextUsage, RunError, ClientRequestEnded, LoginEnd;
        AgentStart = "agent_start" <- AgentStart;
        AgentEnd = "agent_end" <- AgentEnd;
        AgentSettled = "agent_settled" <- AgentSettled;
        TurnStart = "turn_start" <- TurnStart;
        TurnEnd = "turn_end" <- TurnEnd;
        MessageStart = "message_start" <- MessageStart;
        MessageUpdate = "message_update" <- MessageUpdate;
        MessageEnd = "message_end" <- MessageEnd;
        BashExecutionUpdate = "bash_execution_update" <- BashExecutionUpdate;
        ToolExecutionStart = "tool_execution_start" <- ToolExecutionStart;
        ToolExecutionUpdate = "tool_execution_update" <- ToolExecutionUpdate;
        ToolExecutionEnd = "tool_execution_end" <- ToolExecutionEnd;
        QueueUpdate = "queue_update" <- QueueUpdate;
        CompactionStart = "compaction_start" <- CompactionStart;
        CompactionEnd = "compaction_end" <- CompactionEnd;
        AutoRetryStart = "auto_retry_start" <- AutoRetryStart;
        AutoRetryEnd = "auto_retry_end" <- AutoRetryEnd;
        SummarizationRetryScheduled = "summarization_retry_scheduled" <- SummarizationRetryScheduled;
        SummarizationRetryAttemptStart = "summarization_retry_attempt_start" <- SummarizationRetryAttemptStart;
        SummarizationRetryFinished = "summarization_retry_finished" <- SummarizationRetryFinished;
        ThinkingLevelChanged = "thinking_level_changed" <- ThinkingLevelChanged;
        SessionInfoChanged = "session_info_changed" <- SessionInfoChanged;
        EntryAppended = "entry_appended" <- EntryAppended;
        ExtensionError = "extension_error" <- ExtensionError;
        // Approvals are extension UI dialogs here.
        ExtensionUiRequest = "extension_ui_request" <- ExtensionUiRequest, ClientRequest;
    }

    /// The JSON-RPC dialect's notifications (their `method`).
    jsonrpc => JSONRPC, jsonrpc_wire {
        not shown: AgentStart, AgentEnd, TurnStart, TurnEnd, MessageStart, SummarizationRetryScheduled,
            SummarizationRetryAttemptStart, SummarizationRetryFinished, ThinkingLevelChanged, ClientRequestEnded, EntryAppended;
        // Not an event: it follows the `initialize` response.
        Initialized = "initialized" <- ;
        AssistantMessage = "assistantMessage" <- MessageUpdate, MessageEnd;
        // A client tool's call is a `toolCall` too.
        ToolCall = "toolCall" <- ToolExecutionStart, ClientRequest;
        ToolUpdate = "toolUpdate" <- ToolExecutionUpdate;
        ToolResult = "toolResult" <- ToolExecutionEnd;
        TurnEnd = "turnEnd" <- AgentSettled;
        QueueUpdate = "queueUpdate" <- QueueUpdate;
        CompactionStart = "compactionStart" <- CompactionStart;
        CompactionEnd = "compactionEnd" <- CompactionEnd;
        AutoRetryStart = "autoRetryStart" <- AutoRetryStart;
        AutoRetryEnd = "autoRetryEnd" <- AutoRetryEnd;
        BashOutput = "bashOutput" <- BashExecutionUpdate;
        ModelChanged = "modelChanged" <- ModelChanged;
        SessionNameChanged = "sessionNameChanged" <- SessionInfoChanged;
        ContextUsage = "contextUsage" <- ContextUsage;
        Error = "error" <- RunError;
        ExtensionError = "extension:error" <- ExtensionError;
        // Approvals are `extension:ui` dialogs.
        ExtensionUi = "extension:ui" <- ExtensionUiRequest, ClientRequest;
        LoginCompleted = "loginCompleted" <- LoginEnd;
    }
}

/// Where a background task's events go (the actor's queue; a test's list).
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    async fn emit(&self, event: AgentEvent);

    /// Emit several events, in order (a sink may hand them on together).
    async fn emit_all(&self, events: Vec<AgentEvent>) {
        for event in events {
            self.emit(event).await;
        }
    }

    /// Hand on several events at once if that needs no wait, as
    /// [`EventSink::emit_all`] would; else give them back (by default).
    fn try_emit_all(&self, events: Vec<AgentEvent>) -> Result<(), Vec<AgentEvent>> {
        Err(events)
    }

    /// [`EventSink::try_emit_all`] for the events of a streaming reply,
    /// with the reply's message as it stands after them (`stopped`: its
    /// stop reason is the provider's, not yet the default). A sink that
    /// shows the message itself while it streams (pi-ai's partial message
    /// of an extension's model call) takes the fields the events do not
    /// carry from it: the response id, usage, stop reason, signatures.
    fn try_emit_streamed(
        &self,
        events: Vec<AgentEvent>,
        _message: &crate::message::AssistantMessage,
        _stopped: bool,
    ) -> Result<(), Vec<AgentEvent>> {
        self.try_emit_all(events)
    }

    /// [`EventSink::emit_all`] for the events of a streaming reply that
    /// [`EventSink::try_emit_streamed`] gave back, with the reply's message
    /// as it stands after them (by default, the message is not needed).
    async fn emit_streamed(
        &self,
        events: Vec<AgentEvent>,
        _message: &crate::message::AssistantMessage,
        _stopped: bool,
    ) {
        self.emit_all(events).await;
    }

    /// [`EventSink::emit_streamed`] while the reply's body may be read on
    /// (an extension listens to each stream event): `handed_over` is told
    /// once the events reached whatever handles them, in order before
    /// anything sent later, even when their handlers are not done yet (by
    /// default, once they are emitted).
    async fn emit_streamed_reading_on(
        &self,
        events: Vec<AgentEvent>,
        message: &crate::message::AssistantMessage,
        stopped: bool,
        handed_over: &(dyn Fn() + Sync),
    ) {
        self.emit_streamed(events, message, stopped).await;
        handed_over();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// In each dialect a name is given once, and an event is either shown or not.
    #[test]
    fn each_dialect_names_each_message_once_and_shows_or_hides_each_event() {
        for names in [&NATIVE, &JSONRPC] {
            let mut seen = HashSet::new();
            for (name, _) in names.messages {
                assert!(seen.insert(*name), "{}: {name} twice", names.dialect);
            }
            for kind in EventKind::ALL {
                let shown = !names.of(*kind).is_empty();
                assert_ne!(shown, names.not_shown.contains(kind), "{}: {kind:?}", names.dialect);
            }
        }
    }

    /// Every text delta is moved as a whole event, several times on its way
    /// to the client (the run's batch, the agent's queue, the output
    /// channel): an event is as big as its largest variant, so the big and
    /// rare payloads are boxed. Under 128 bytes a move is a few register
    /// copies, not a call to `memcpy` (264 bytes before they were boxed).
    #[test]
    fn an_event_stays_small() {
        use std::mem::size_of;
        assert!(size_of::<AssistantStreamEvent>() <= 56, "AssistantStreamEvent: {}", size_of::<AssistantStreamEvent>());
        assert!(size_of::<AgentEvent>() <= 104, "AgentEvent: {}", size_of::<AgentEvent>());
    }
}
