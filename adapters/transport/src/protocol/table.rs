//! The rows of the protocol table, in the seeds' order.

use pi_core::model::Model;
use pi_core::op::Op;

use super::client_params::ToolResultParams;
use super::decode::decode;
use super::params::*;
use super::results::*;
use super::{Binding, Command};

/// Every command of the protocol.
pub static COMMANDS: &[Command] = &[
    Command::new("Initialize the session (send it first): `cwd`, `model` (`id` or `provider/id`), `provider`, `apiKey`, `thinkingLevel`, `tools`, all or nothing → `{sessionId, sessionPath, model, provider}`, then the `initialized` notification.").jsonrpc(
        Binding::new::<InitParams, SessionResult>("initialize", |p| decode::<InitParams>(p).map(InitParams::op)),
    ),
    Command::new("Send a user prompt (JSON-RPC: `content`, or `message`), with `images` and, during a run, `streamingBehavior`; answered once it is accepted, queued or handled (JSON-RPC: `{accepted: true, disposition}`), output follows as events.")
        .native(Binding::new::<PromptParams, DispositionData>("prompt", |p| {
            decode::<PromptParams>(p).map(|p| Op::Prompt {
                message: p.message,
                images: p.images,
                streaming_behavior: p.streaming_behavior,
            })
        }))
        .jsonrpc(Binding::new::<ContentPromptParams, PromptResult>("prompt", |p| {
            decode::<ContentPromptParams>(p).and_then(ContentPromptParams::op)
        })),
    Command::new("Send a user message (`content`): steers a running agent, else starts a run.").jsonrpc(Binding::new::<
        ContentParams,
        PromptResult,
    >(
        "sendUserMessage",
        |p| {
            let (message, images) = decode::<ContentParams>(p)?.take()?;
            Ok(Op::SendUserMessage { message, images })
        },
    )),
    Command::new("Queue a steering message, delivered after the current turn's tool calls.")
        .native(Binding::new::<MessageParams, DispositionData>("steer", |p| {
            decode::<MessageParams>(p).map(|p| Op::Steer { message: p.message, images: p.images })
        }))
        .jsonrpc(Binding::new::<ContentParams, PromptResult>("steer", |p| {
            let (message, images) = decode::<ContentParams>(p)?.take()?;
            Ok(Op::Steer { message, images })
        })),
    Command::new("Queue a follow-up message, delivered when the agent would stop.")
        .native(Binding::new::<MessageParams, DispositionData>("follow_up", |p| {
            decode::<MessageParams>(p).map(|p| Op::FollowUp { message: p.message, images: p.images })
        }))
        .jsonrpc(Binding::new::<ContentParams, PromptResult>("followUp", |p| {
            let (message, images) = decode::<ContentParams>(p)?.take()?;
            Ok(Op::FollowUp { message, images })
        })),
    Command::both::<NoParams, Ack>("Abort the current operation; answered once it has ended.", "abort", "abort", |p| {
        decode::<NoParams>(p).map(|_| Op::Abort)
    }),
    Command::new("Switch to a model (native: `provider`, `modelId`; JSON-RPC: `model`, `id` or `provider/id`, fuzzy like `--model`); the result is the model, then `modelChanged`.")
        .native(Binding::new::<SetModelParams, Model>("set_model", |p| {
            decode::<SetModelParams>(p).map(|p| Op::SetModel { provider: p.provider, model_id: p.model_id })
        }))
        .jsonrpc(Binding::new::<ModelParams, Model>("setModel", |p| {
            decode::<ModelParams>(p).and_then(ModelParams::op)
        })),
    Command::both::<NoParams, Option<CycleModelData>>(
        "Switch to the next available model.",
        "cycle_model",
        "cycleModel",
        |p| decode::<NoParams>(p).map(|_| Op::CycleModel),
    ),
    Command::both::<NoParams, ModelsData>(
        "List the models with usable credentials.",
        "get_available_models",
        "getAvailableModels",
        |p| decode::<NoParams>(p).map(|_| Op::GetAvailableModels),
    ),
    Command::both::<LevelParams, Ack>("Set the thinking level.", "set_thinking_level", "setThinkingLevel", |p| {
        decode::<LevelParams>(p).map(|p| Op::SetThinkingLevel { level: p.level })
    }),
    Command::both::<NoParams, Option<LevelData>>(
        "Switch to the next thinking level the model supports.",
        "cycle_thinking_level",
        "cycleThinkingLevel",
        |p| decode::<NoParams>(p).map(|_| Op::CycleThinkingLevel),
    ),
    Command::both::<NoParams, LevelsData>(
        "List the thinking levels the model supports.",
        "get_available_thinking_levels",
        "getAvailableThinkingLevels",
        |p| decode::<NoParams>(p).map(|_| Op::GetAvailableThinkingLevels),
    ),
    Command::new("Set the active tool set (`tools`) → `{tools}`.").jsonrpc(Binding::new::<ToolsParams, ToolsData>("setActiveTools", |p| {
        decode::<ToolsParams>(p).map(|p| Op::SetActiveTools { tools: p.tools })
    })),
    Command::both::<ModeParams, Ack>(
        "Set how steering messages are delivered.",
        "set_steering_mode",
        "setSteeringMode",
        |p| decode::<ModeParams>(p).map(|p| Op::SetSteeringMode { mode: p.mode }),
    ),
    Command::both::<ModeParams, Ack>(
        "Set how follow-up messages are delivered.",
        "set_follow_up_mode",
        "setFollowUpMode",
        |p| decode::<ModeParams>(p).map(|p| Op::SetFollowUpMode { mode: p.mode }),
    ),
    Command::new("Compact the conversation now (native `customInstructions`; JSON-RPC `prompt`).")
        .native(Binding::new::<CompactParams, WireCompactionResult>("compact", |p| {
            decode::<CompactParams>(p).map(|p| Op::Compact { custom_instructions: p.custom_instructions })
        }))
        .jsonrpc(Binding::new::<PromptCompactParams, WireCompactionResult>("compact", |p| {
            decode::<PromptCompactParams>(p)
                .map(|p| Op::Compact { custom_instructions: p.prompt.or(p.custom_instructions) })
        })),
    Command::both::<EnabledParams, Ack>(
        "Turn automatic compaction on or off.",
        "set_auto_compaction",
        "setAutoCompaction",
        |p| decode::<EnabledParams>(p).map(|p| Op::SetAutoCompaction { enabled: p.enabled }),
    ),
    Command::both::<EnabledParams, Ack>("Turn automatic retries on or off.", "set_auto_retry", "setAutoRetry", |p| {
        decode::<EnabledParams>(p).map(|p| Op::SetAutoRetry { enabled: p.enabled })
    }),
    Command::both::<NoParams, Ack>("Cancel a pending automatic retry.", "abort_retry", "abortRetry", |p| {
        decode::<NoParams>(p).map(|_| Op::AbortRetry)
    }),
    Command::both::<BashParams, BashData>(
        "Run a shell command; its output streams (`bash_execution_update`, `bashOutput`) and joins the context at the next prompt.",
        "bash",
        "bash",
        |p| {
            decode::<BashParams>(p)
                .map(|p| Op::Bash { command: p.command, exclude_from_context: p.exclude_from_context.unwrap_or(false) })
        },
    ),
    Command::both::<NoParams, Ack>("Abort the running `bash` command.", "abort_bash", "abortBash", |p| {
        decode::<NoParams>(p).map(|_| Op::AbortBash)
    }),
    Command::both::<NewSessionParams, CancelledData>("Start a new session.", "new_session", "newSession", |p| {
        decode::<NewSessionParams>(p).map(|p| Op::NewSession { parent_session: p.parent_session })
    }),
    Command::new("Resume a session (`sessionId`: an id, a unique id prefix or a path).").jsonrpc(Binding::new::<
        ResumeSessionParams,
        CancelledData,
    >("resumeSession", |p| {
        decode::<ResumeSessionParams>(p).and_then(ResumeSessionParams::op)
    })),
    Command::both::<SwitchSessionParams, CancelledData>(
        "Load another session file.",
        "switch_session",
        "switchSession",
        |p| {
            decode::<SwitchSessionParams>(p)
                .map(|p| Op::SwitchSession { session_path: p.session_path, after_seq: p.after_seq })
        },
    ),
    Command::both::<ForkParams, ForkData>(
        "Fork a new session from a user message of the active branch.",
        "fork",
        "fork",
        |p| decode::<ForkParams>(p).map(|p| Op::Fork { entry_id: p.entry_id }),
    ),
    Command::both::<NoParams, CancelledData>("Copy the active branch into a new session.", "clone", "clone", |p| {
        decode::<NoParams>(p).map(|_| Op::Clone)
    }),
    Command::both::<NoParams, ForkMessagesData>(
        "List the user messages one can fork from.",
        "get_fork_messages",
        "getForkMessages",
        |p| decode::<NoParams>(p).map(|_| Op::GetForkMessages),
    ),
    Command::both::<EntriesParams, EntriesData>("Session entries in append order.", "get_entries", "getEntries", |p| {
        decode::<EntriesParams>(p).map(|p| Op::GetEntries { since: p.since })
    }),
    Command::both::<NoParams, TreeData>("The session as a tree of entries.", "get_tree", "getTree", |p| {
        decode::<NoParams>(p).map(|_| Op::GetTree)
    }),
    Command::both::<NoParams, StateData>("The session state.", "get_state", "getState", |p| {
        decode::<NoParams>(p).map(|_| Op::GetState)
    }),
    Command::new("A short status: `{idle, model, provider, thinkingLevel, contextUsage (0..1), activeTools, sessionId}`.")
        .jsonrpc(Binding::new::<NoParams, StatusResult>("getStatus", |p| decode::<NoParams>(p).map(|_| Op::GetState))),
    Command::both::<NoParams, MessagesData>("The conversation's messages.", "get_messages", "getMessages", |p| {
        decode::<NoParams>(p).map(|_| Op::GetMessages)
    }),
    Command::both::<NoParams, SessionStatsData>(
        "Token, cost and context statistics.",
        "get_session_stats",
        "getSessionStats",
        |p| decode::<NoParams>(p).map(|_| Op::GetSessionStats),
    ),
    Command::both::<NoParams, LastAssistantTextData>(
        "Text of the last assistant message.",
        "get_last_assistant_text",
        "getLastAssistantText",
        |p| decode::<NoParams>(p).map(|_| Op::GetLastAssistantText),
    ),
    Command::both::<ExportHtmlParams, ExportHtmlData>(
        "Export the session as a self-contained HTML file.",
        "export_html",
        "exportHtml",
        |p| decode::<ExportHtmlParams>(p).map(|p| Op::ExportHtml { output_path: p.output_path }),
    ),
    Command::both::<NameParams, Ack>("Set the session's display name.", "set_session_name", "setSessionName", |p| {
        decode::<NameParams>(p).map(|p| Op::SetSessionName { name: p.name })
    }),
    Command::both::<NoParams, CommandsData>(
        "Extension commands, prompt templates and skills.",
        "get_commands",
        "getCommands",
        |p| decode::<NoParams>(p).map(|_| Op::GetCommands),
    ),
    Command::both::<NoParams, QueueData>(
        "Empty both message queues and return what they held.",
        "clear_queue",
        "clearQueue",
        |p| decode::<NoParams>(p).map(|_| Op::ClearQueue),
    ),
    Command::new("Log in to a provider with its subscription (OAuth): `provider`, `method` (`browser`, `device_code`), `enterpriseDomain` (GitHub Copilot) → `{provider, name, method, url}` or `{…, userCode, verificationUri}` as soon as the sign-in waits for the user; the `loginCompleted` notification follows (the credential is then in auth.json, shared with pi).")
        .jsonrpc(Binding::new::<LoginParams, LoginResult>("login", |p| decode::<LoginParams>(p).map(LoginParams::op))),
    Command::new("Abort everything, answer `{}`, flush the session and exit 0.").jsonrpc(Binding::new::<NoParams, Ack>("shutdown", |p| {
        decode::<NoParams>(p).map(|_| Op::Shutdown { abort: true })
    })),
    Command::new("The result of a tool the client runs itself (declared in `initialize` `clientTools`), answering its `toolCall` notification: `toolCallId`, `output: {content}`, `isError` → `{}`.")
        .jsonrpc(Binding::new::<ToolResultParams, Ack>("toolResult", |p| decode::<ToolResultParams>(p).map(ToolResultParams::op))),
    Command::new(
        "The answer to an extension dialog (native: no response is sent for it; JSON-RPC: also a notification).",
    )
    .native(Binding::new::<UiAnswer, Ack>("extension_ui_response", |p| decode::<UiAnswer>(p).map(UiAnswer::op)))
    .jsonrpc(Binding::new::<RpcUiAnswer, Ack>("extension:response", |p| decode::<RpcUiAnswer>(p).map(RpcUiAnswer::op))),
];
