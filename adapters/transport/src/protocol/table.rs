//! The rows of the protocol table, in the seeds' order. Each binding names
//! the op it decodes into (`pi_core::op::ops::…`): its decoder can only make
//! that op, and its result type must be buildable from that op's reply, so a
//! row that does not fit its op does not compile.

use pi_core::model::Model;
use pi_core::op::{Op, ops};
use serde_json::{Map, Value};

use super::client_params::ToolResultParams;
use super::decode::{FieldError, decode};
use super::params::*;
use super::results::*;
use super::{Binding, Command};

/// One dialect's binding of op `$op`: its name, params type and result type,
/// and how the decoded params become the op.
macro_rules! bind {
    ($op:ident, $name:literal, $params:ty => $result:ty, $decode:expr) => {
        Binding::new::<ops::$op, $params, $result>($name, |p| {
            let decode: fn(&Map<String, Value>) -> Result<ops::$op, FieldError> = $decode;
            decode(p).map(Op::from)
        })
    };
}

/// Every command of the protocol.
pub static COMMANDS: &[Command] = &[
    Command::new("Initialize the session (send it first): `cwd`, `model` (`id` or `provider/id`), `provider`, `apiKey`, `thinkingLevel`, `tools`, all or nothing → `{sessionId, sessionPath, model, provider}`, then the `initialized` notification.").jsonrpc(
        bind!(Initialize, "initialize", InitParams => SessionResult, |p| decode::<InitParams>(p).map(InitParams::op)),
    ),
    Command::new("Send a user prompt (JSON-RPC: `content`, or `message`), with `images` and, during a run, `streamingBehavior`; answered once it is accepted, queued or handled (JSON-RPC: `{accepted: true, disposition}`), output follows as events.")
        .native(bind!(Prompt, "prompt", PromptParams => DispositionData, |p| {
            decode::<PromptParams>(p).map(|p| ops::Prompt {
                message: p.message,
                images: p.images,
                streaming_behavior: p.streaming_behavior,
            })
        }))
        .jsonrpc(bind!(Prompt, "prompt", ContentPromptParams => PromptResult, |p| {
            decode::<ContentPromptParams>(p).and_then(ContentPromptParams::op)
        })),
    Command::new("Send a user message (`content`): steers a running agent, else starts a run.").jsonrpc(bind!(SendUserMessage, "sendUserMessage", ContentParams => PromptResult, |p| {
            let (message, images) = decode::<ContentParams>(p)?.take()?;
            Ok(ops::SendUserMessage { message, images })
        })),
    Command::new("Queue a steering message, delivered after the current turn's tool calls.")
        .native(bind!(Steer, "steer", MessageParams => DispositionData, |p| {
            decode::<MessageParams>(p).map(|p| ops::Steer { message: p.message, images: p.images })
        }))
        .jsonrpc(bind!(Steer, "steer", ContentParams => PromptResult, |p| {
            let (message, images) = decode::<ContentParams>(p)?.take()?;
            Ok(ops::Steer { message, images })
        })),
    Command::new("Queue a follow-up message, delivered when the agent would stop.")
        .native(bind!(FollowUp, "follow_up", MessageParams => DispositionData, |p| {
            decode::<MessageParams>(p).map(|p| ops::FollowUp { message: p.message, images: p.images })
        }))
        .jsonrpc(bind!(FollowUp, "followUp", ContentParams => PromptResult, |p| {
            let (message, images) = decode::<ContentParams>(p)?.take()?;
            Ok(ops::FollowUp { message, images })
        })),
    Command::both("Abort the current operation; answered once it has ended.", bind!(Abort, "abort", NoParams => Ack, |p| {
        decode::<NoParams>(p).map(|_| ops::Abort)
    }), "abort"),
    Command::new("Switch to a model (native: `provider`, `modelId`; JSON-RPC: `model`, `id` or `provider/id`, fuzzy like `--model`); the result is the model, then `modelChanged`.")
        .native(bind!(SetModel, "set_model", SetModelParams => Model, |p| {
            decode::<SetModelParams>(p).map(|p| ops::SetModel { provider: p.provider, model_id: p.model_id })
        }))
        .jsonrpc(bind!(SetModel, "setModel", ModelParams => Model, |p| {
            decode::<ModelParams>(p).and_then(ModelParams::op)
        })),
    Command::both("Switch to the next available model.", bind!(CycleModel, "cycle_model", NoParams => Option<CycleModelData>, |p| decode::<NoParams>(p).map(|_| ops::CycleModel)), "cycleModel"),
    Command::both("List the models with usable credentials.", bind!(GetAvailableModels, "get_available_models", NoParams => ModelsData, |p| decode::<NoParams>(p).map(|_| ops::GetAvailableModels)), "getAvailableModels"),
    Command::both("Set the thinking level.", bind!(SetThinkingLevel, "set_thinking_level", LevelParams => Ack, |p| {
        decode::<LevelParams>(p).map(|p| ops::SetThinkingLevel { level: p.level })
    }), "setThinkingLevel"),
    Command::both("Switch to the next thinking level the model supports.", bind!(CycleThinkingLevel, "cycle_thinking_level", NoParams => Option<LevelData>, |p| decode::<NoParams>(p).map(|_| ops::CycleThinkingLevel)), "cycleThinkingLevel"),
    Command::both("List the thinking levels the model supports.", bind!(GetAvailableThinkingLevels, "get_available_thinking_levels", NoParams => LevelsData, |p| decode::<NoParams>(p).map(|_| ops::GetAvailableThinkingLevels)), "getAvailableThinkingLevels"),
    Command::new("Set the active tool set (`tools`) → `{tools}`.").jsonrpc(bind!(SetActiveTools, "setActiveTools", ToolsParams => ToolsData, |p| {
        decode::<ToolsParams>(p).map(|p| ops::SetActiveTools { tools: p.tools })
    })),
    Command::both("Set how steering messages are delivered.", bind!(SetSteeringMode, "set_steering_mode", ModeParams => Ack, |p| decode::<ModeParams>(p).map(|p| ops::SetSteeringMode { mode: p.mode })), "setSteeringMode"),
    Command::both("Set how follow-up messages are delivered.", bind!(SetFollowUpMode, "set_follow_up_mode", ModeParams => Ack, |p| decode::<ModeParams>(p).map(|p| ops::SetFollowUpMode { mode: p.mode })), "setFollowUpMode"),
    Command::new("Compact the conversation now (native `customInstructions`; JSON-RPC `prompt`).")
        .native(bind!(Compact, "compact", CompactParams => WireCompactionResult, |p| {
            decode::<CompactParams>(p).map(|p| ops::Compact { custom_instructions: p.custom_instructions })
        }))
        .jsonrpc(bind!(Compact, "compact", PromptCompactParams => WireCompactionResult, |p| {
            decode::<PromptCompactParams>(p)
                .map(|p| ops::Compact { custom_instructions: p.prompt.or(p.custom_instructions) })
        })),
    Command::both("Turn automatic compaction on or off.", bind!(SetAutoCompaction, "set_auto_compaction", EnabledParams => Ack, |p| decode::<EnabledParams>(p).map(|p| ops::SetAutoCompaction { enabled: p.enabled })), "setAutoCompaction"),
    Command::both("Turn automatic retries on or off.", bind!(SetAutoRetry, "set_auto_retry", EnabledParams => Ack, |p| {
        decode::<EnabledParams>(p).map(|p| ops::SetAutoRetry { enabled: p.enabled })
    }), "setAutoRetry"),
    Command::both("Cancel a pending automatic retry.", bind!(AbortRetry, "abort_retry", NoParams => Ack, |p| {
        decode::<NoParams>(p).map(|_| ops::AbortRetry)
    }), "abortRetry"),
    Command::both("Run a shell command; its output streams (`bash_execution_update`, `bashOutput`) and joins the context at the next prompt.", bind!(Bash, "bash", BashParams => BashData, |p| {
            decode::<BashParams>(p)
                .map(|p| ops::Bash { command: p.command, exclude_from_context: p.exclude_from_context.unwrap_or(false) })
        }), "bash"),
    Command::both("Abort the running `bash` command.", bind!(AbortBash, "abort_bash", NoParams => Ack, |p| {
        decode::<NoParams>(p).map(|_| ops::AbortBash)
    }), "abortBash"),
    Command::both("Start a new session.", bind!(NewSession, "new_session", NewSessionParams => CancelledData, |p| {
        decode::<NewSessionParams>(p).map(|p| ops::NewSession { parent_session: p.parent_session })
    }), "newSession"),
    Command::new("Resume a session (`sessionId`: an id, a unique id prefix or a path).").jsonrpc(bind!(ResumeSession, "resumeSession", ResumeSessionParams => CancelledData, |p| {
        decode::<ResumeSessionParams>(p).and_then(ResumeSessionParams::op)
    })),
    Command::both("Load another session file.", bind!(SwitchSession, "switch_session", SwitchSessionParams => CancelledData, |p| {
            decode::<SwitchSessionParams>(p)
                .map(|p| ops::SwitchSession { session_path: p.session_path, after_seq: p.after_seq })
        }), "switchSession"),
    Command::both("Fork a new session from a user message of the active branch.", bind!(Fork, "fork", ForkParams => ForkData, |p| decode::<ForkParams>(p).map(|p| ops::Fork { entry_id: p.entry_id })), "fork"),
    Command::both("Copy the active branch into a new session.", bind!(Clone, "clone", NoParams => CancelledData, |p| {
        decode::<NoParams>(p).map(|_| ops::Clone)
    }), "clone"),
    Command::both("List the user messages one can fork from.", bind!(GetForkMessages, "get_fork_messages", NoParams => ForkMessagesData, |p| decode::<NoParams>(p).map(|_| ops::GetForkMessages)), "getForkMessages"),
    Command::both("Session entries in append order.", bind!(GetEntries, "get_entries", EntriesParams => EntriesData, |p| {
        decode::<EntriesParams>(p).map(|p| ops::GetEntries { since: p.since })
    }), "getEntries"),
    Command::both("The session as a tree of entries.", bind!(GetTree, "get_tree", NoParams => TreeData, |p| {
        decode::<NoParams>(p).map(|_| ops::GetTree)
    }), "getTree"),
    Command::both("The session state.", bind!(GetState, "get_state", NoParams => StateData, |p| {
        decode::<NoParams>(p).map(|_| ops::GetState)
    }), "getState"),
    Command::new("A short status: `{idle, model, provider, thinkingLevel, contextUsage (0..1), activeTools, sessionId}`.")
        .jsonrpc(bind!(GetState, "getStatus", NoParams => StatusResult, |p| decode::<NoParams>(p).map(|_| ops::GetState))),
    Command::both("The conversation's messages.", bind!(GetMessages, "get_messages", NoParams => MessagesData, |p| {
        decode::<NoParams>(p).map(|_| ops::GetMessages)
    }), "getMessages"),
    Command::both("Token, cost and context statistics.", bind!(GetSessionStats, "get_session_stats", NoParams => SessionStatsData, |p| decode::<NoParams>(p).map(|_| ops::GetSessionStats)), "getSessionStats"),
    Command::both("Text of the last assistant message.", bind!(GetLastAssistantText, "get_last_assistant_text", NoParams => LastAssistantTextData, |p| decode::<NoParams>(p).map(|_| ops::GetLastAssistantText)), "getLastAssistantText"),
    Command::both("Export the session as a self-contained HTML file.", bind!(ExportHtml, "export_html", ExportHtmlParams => ExportHtmlData, |p| decode::<ExportHtmlParams>(p).map(|p| ops::ExportHtml { output_path: p.output_path })), "exportHtml"),
    Command::both("Set the session's display name.", bind!(SetSessionName, "set_session_name", NameParams => Ack, |p| {
        decode::<NameParams>(p).map(|p| ops::SetSessionName { name: p.name })
    }), "setSessionName"),
    Command::both("Extension commands, prompt templates and skills.", bind!(GetCommands, "get_commands", NoParams => CommandsData, |p| decode::<NoParams>(p).map(|_| ops::GetCommands)), "getCommands"),
    Command::both("Empty both message queues and return what they held.", bind!(ClearQueue, "clear_queue", NoParams => QueueData, |p| decode::<NoParams>(p).map(|_| ops::ClearQueue)), "clearQueue"),
    Command::new("Log in to a provider with its subscription (OAuth): `provider`, `method` (`browser`, `device_code`), `enterpriseDomain` (GitHub Copilot) → `{provider, name, method, url}` or `{…, userCode, verificationUri}` as soon as the sign-in waits for the user; the `loginCompleted` notification follows (the credential is then in auth.json, shared with pi).")
        .jsonrpc(bind!(Login, "login", LoginParams => LoginResult, |p| decode::<LoginParams>(p).map(LoginParams::op))),
    Command::new("Abort everything, answer `{}`, flush the session and exit 0.").jsonrpc(bind!(Shutdown, "shutdown", NoParams => Ack, |p| {
        decode::<NoParams>(p).map(|_| ops::Shutdown { abort: true })
    })),
    Command::new("The result of a tool the client runs itself (declared in `initialize` `clientTools`), answering its `toolCall` notification: `toolCallId`, `output: {content}`, `isError` → `{}`.")
        .jsonrpc(bind!(ClientResponse, "toolResult", ToolResultParams => Ack, |p| decode::<ToolResultParams>(p).map(ToolResultParams::op))),
    Command::new(
        "The answer to an extension dialog (native: no response is sent for it; JSON-RPC: also a notification).",
    )
    .native(bind!(ExtensionUiResponse, "extension_ui_response", UiAnswer => Ack, |p| decode::<UiAnswer>(p).map(UiAnswer::op)))
    .jsonrpc(bind!(ExtensionUiResponse, "extension:response", RpcUiAnswer => Ack, |p| decode::<RpcUiAnswer>(p).map(RpcUiAnswer::op))),
];
