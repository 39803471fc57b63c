//! Building each typed result from the core's reply: one [`FromReply`]
//! impl per result shape, matched on the one reply variant it accepts.

use pi_core::event::CompactionResult;
use pi_core::model::Model;
use pi_core::op::Reply;

use super::results::*;

impl FromReply for DispositionData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Prompt { disposition } => Some(DispositionData { disposition: disposition.as_str() }),
            _ => None,
        }
    }
}

impl FromReply for PromptResult {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Prompt { disposition } => Some(PromptResult { accepted: true, disposition: disposition.as_str() }),
            _ => None,
        }
    }
}

impl FromReply for CancelledData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Switched { cancelled } => Some(CancelledData { cancelled, attached: None }),
            Reply::Attached(a) => Some(CancelledData {
                cancelled: false,
                attached: Some(AttachedData {
                    session_id: a.session_id,
                    session_path: a.session_file,
                    last_seq: a.last_seq,
                    replayed: a.replayed,
                    gap: a.gap,
                }),
            }),
            _ => None,
        }
    }
}

impl FromReply for ForkData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Fork { text, cancelled } => Some(ForkData { text, cancelled }),
            _ => None,
        }
    }
}

impl FromReply for StateData {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::State(s) = reply else { return None };
        Some(StateData {
            model: s.model,
            thinking_level: s.thinking_level.as_str(),
            is_streaming: s.is_streaming,
            is_compacting: s.is_compacting,
            steering_mode: s.steering_mode.as_str(),
            follow_up_mode: s.follow_up_mode.as_str(),
            session_file: s.session_file,
            session_id: s.session_id,
            session_name: s.session_name,
            auto_compaction_enabled: s.auto_compaction_enabled,
            message_count: s.message_count,
            pending_message_count: s.pending_message_count,
        })
    }
}

impl FromReply for StatusResult {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::State(s) => Some(StatusResult::of(&s)),
            _ => None,
        }
    }
}

impl FromReply for MessagesData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Messages(messages) => Some(MessagesData { messages }),
            _ => None,
        }
    }
}

impl FromReply for Model {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Model(model) => Some(*model),
            _ => None,
        }
    }
}

impl FromReply for Option<CycleModelData> {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::CycleModel(cycled) = reply else { return None };
        Some(cycled.map(|c| CycleModelData {
            model: c.model,
            thinking_level: c.thinking_level.as_str(),
            is_scoped: c.is_scoped,
        }))
    }
}

impl FromReply for ModelsData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Models(models) => Some(ModelsData { models }),
            _ => None,
        }
    }
}

impl FromReply for Option<LevelData> {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::CycleThinkingLevel(level) => Some(level.map(|l| LevelData { level: l.as_str() })),
            _ => None,
        }
    }
}

impl FromReply for LevelsData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::ThinkingLevels(levels) => Some(LevelsData { levels: levels.iter().map(|l| l.as_str()).collect() }),
            _ => None,
        }
    }
}

impl WireCompactionResult {
    pub fn of(r: CompactionResult) -> Self {
        WireCompactionResult {
            summary: r.summary,
            first_kept_entry_id: r.first_kept_entry_id,
            tokens_before: r.tokens_before,
            estimated_tokens_after: r.estimated_tokens_after,
            usage: r.usage,
            details: r.details,
        }
    }
}

impl FromReply for WireCompactionResult {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Compaction(result) => Some(WireCompactionResult::of(*result)),
            _ => None,
        }
    }
}

impl FromReply for BashData {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::Bash(b) = reply else { return None };
        Some(BashData {
            output: b.output,
            exit_code: b.exit_code,
            cancelled: b.cancelled,
            truncated: b.truncated,
            full_output_path: b.full_output_path,
        })
    }
}

impl FromReply for SessionStatsData {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::SessionStats(s) = reply else { return None };
        Some(SessionStatsData {
            session_file: s.session_file,
            session_id: s.session_id,
            user_messages: s.user_messages,
            assistant_messages: s.assistant_messages,
            tool_calls: s.tool_calls,
            tool_results: s.tool_results,
            total_messages: s.total_messages,
            tokens: TokensData {
                input: s.tokens.input,
                output: s.tokens.output,
                cache_read: s.tokens.cache_read,
                cache_write: s.tokens.cache_write,
                total: s.tokens.total,
            },
            cost: s.cost,
            context_usage: s.context_usage.map(ContextUsageData::of),
        })
    }
}

impl FromReply for ExportHtmlData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::ExportHtml { path } => Some(ExportHtmlData { path }),
            _ => None,
        }
    }
}

impl FromReply for ForkMessagesData {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::ForkMessages(messages) = reply else { return None };
        let messages = messages.into_iter().map(|m| ForkMessageData { entry_id: m.entry_id, text: m.text }).collect();
        Some(ForkMessagesData { messages })
    }
}

impl FromReply for EntriesData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Entries { entries, leaf_id } => Some(EntriesData { entries, leaf_id }),
            _ => None,
        }
    }
}

impl FromReply for TreeData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Tree { tree, leaf_id } => Some(TreeData { tree: TreeJson(tree), leaf_id }),
            _ => None,
        }
    }
}

impl FromReply for LastAssistantTextData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::LastAssistantText(text) => Some(LastAssistantTextData { text }),
            _ => None,
        }
    }
}

impl FromReply for CommandsData {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::Commands(commands) = reply else { return None };
        let commands = commands
            .into_iter()
            .map(|c| CommandData {
                name: c.name,
                description: c.description,
                source: c.source.as_str().to_string(),
                location: c.location.map(|l| l.as_str().to_string()),
                path: c.path,
            })
            .collect();
        Some(CommandsData { commands })
    }
}

impl FromReply for QueueData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::QueueCleared { steering, follow_up } => Some(QueueData { steering, follow_up }),
            _ => None,
        }
    }
}

impl FromReply for SessionResult {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::Session(info) = reply else { return None };
        Some(SessionResult {
            session_id: info.session_id,
            session_path: info.session_path,
            model: info.model.as_ref().map(|m| m.id.clone()),
            provider: info.model.as_ref().map(|m| m.provider.clone()),
        })
    }
}

impl FromReply for ToolsData {
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::ActiveTools(tools) => Some(ToolsData { tools }),
            _ => None,
        }
    }
}

impl FromReply for LoginResult {
    fn from_reply(reply: Reply) -> Option<Self> {
        let Reply::LoginStarted(s) = reply else { return None };
        let s = *s;
        Some(LoginResult {
            provider: s.provider,
            name: s.name,
            method: s.method,
            url: s.url,
            instructions: s.instructions,
            user_code: s.user_code,
            verification_uri: s.verification_uri,
            expires_in: s.expires_in_seconds,
        })
    }
}

impl super::WireResult for super::results::Ack {
    const DATA: bool = false;
}

/// The results that can be as big as the session: written as they are serialised.
macro_rules! streamed_results {
    ($($t:ty),* $(,)?) => { $(impl super::WireResult for $t { const STREAMS: bool = true; })* };
}

streamed_results!(MessagesData, ForkMessagesData, EntriesData);

impl super::WireResult for TreeData {
    const STREAMS: bool = true;

    fn streamed(self) -> crate::streamed::StreamedJson {
        Box::new(self)
    }
}

macro_rules! wire_results {
    ($($t:ty),* $(,)?) => { $(impl super::WireResult for $t {})* };
}

wire_results!(
    DispositionData,
    PromptResult,
    CancelledData,
    ForkData,
    StateData,
    StatusResult,
    Model,
    Option<CycleModelData>,
    ModelsData,
    Option<LevelData>,
    LevelsData,
    WireCompactionResult,
    BashData,
    SessionStatsData,
    ExportHtmlData,
    LastAssistantTextData,
    CommandsData,
    QueueData,
    SessionResult,
    ToolsData,
    LoginResult,
);
