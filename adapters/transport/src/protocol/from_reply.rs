//! Building each typed result from its op's typed reply: one [`FromReply`]
//! impl per (reply type, result shape), so the protocol table's rows are
//! checked against the ops' declared replies when the table compiles.

use pi_core::MessageList;
use pi_core::event::CompactionResult;
use pi_core::model::{Model, ThinkingLevel};
use pi_core::op::{
    BashResult, ClearedQueues, CommandInfo, CycledModel, Disposition, EntryList, ForkMessage, Forked, SessionInfo,
    SessionStats, StateSnapshot, Switched, TreeWithLeaf,
};

use super::results::*;

impl FromReply<Disposition> for DispositionData {
    fn from_reply(disposition: Disposition) -> Self {
        DispositionData { disposition: disposition.as_str() }
    }
}

impl FromReply<Disposition> for PromptResult {
    fn from_reply(disposition: Disposition) -> Self {
        PromptResult { accepted: true, disposition: disposition.as_str() }
    }
}

impl FromReply<Switched> for CancelledData {
    fn from_reply(switched: Switched) -> Self {
        CancelledData {
            cancelled: switched.cancelled,
            attached: switched.attached.map(|a| AttachedData {
                session_id: a.session_id,
                session_path: a.session_file,
                last_seq: a.last_seq,
                replayed: a.replayed,
                gap: a.gap,
            }),
        }
    }
}

impl FromReply<Forked> for ForkData {
    fn from_reply(Forked { text, cancelled }: Forked) -> Self {
        ForkData { text, cancelled }
    }
}

impl FromReply<Box<StateSnapshot>> for StateData {
    fn from_reply(s: Box<StateSnapshot>) -> Self {
        StateData {
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
        }
    }
}

impl FromReply<Box<StateSnapshot>> for StatusResult {
    fn from_reply(s: Box<StateSnapshot>) -> Self {
        StatusResult::of(&s)
    }
}

impl FromReply<MessageList> for MessagesData {
    fn from_reply(messages: MessageList) -> Self {
        MessagesData { messages }
    }
}

impl FromReply<Box<Model>> for Model {
    fn from_reply(model: Box<Model>) -> Self {
        *model
    }
}

impl FromReply<Option<Box<CycledModel>>> for Option<CycleModelData> {
    fn from_reply(cycled: Option<Box<CycledModel>>) -> Self {
        cycled.map(|c| CycleModelData {
            model: c.model,
            thinking_level: c.thinking_level.as_str(),
            is_scoped: c.is_scoped,
        })
    }
}

impl FromReply<Vec<Model>> for ModelsData {
    fn from_reply(models: Vec<Model>) -> Self {
        ModelsData { models }
    }
}

impl FromReply<Option<ThinkingLevel>> for Option<LevelData> {
    fn from_reply(level: Option<ThinkingLevel>) -> Self {
        level.map(|l| LevelData { level: l.as_str() })
    }
}

impl FromReply<Vec<ThinkingLevel>> for LevelsData {
    fn from_reply(levels: Vec<ThinkingLevel>) -> Self {
        LevelsData { levels: levels.iter().map(|l| l.as_str()).collect() }
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

impl FromReply<Box<CompactionResult>> for WireCompactionResult {
    fn from_reply(result: Box<CompactionResult>) -> Self {
        WireCompactionResult::of(*result)
    }
}

impl FromReply<BashResult> for BashData {
    fn from_reply(b: BashResult) -> Self {
        BashData {
            output: b.output,
            exit_code: b.exit_code,
            cancelled: b.cancelled,
            truncated: b.truncated,
            full_output_path: b.full_output_path,
        }
    }
}

impl FromReply<Box<SessionStats>> for SessionStatsData {
    fn from_reply(s: Box<SessionStats>) -> Self {
        SessionStatsData {
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
        }
    }
}

impl FromReply<String> for ExportHtmlData {
    fn from_reply(path: String) -> Self {
        ExportHtmlData { path }
    }
}

impl FromReply<Vec<ForkMessage>> for ForkMessagesData {
    fn from_reply(messages: Vec<ForkMessage>) -> Self {
        let messages = messages.into_iter().map(|m| ForkMessageData { entry_id: m.entry_id, text: m.text }).collect();
        ForkMessagesData { messages }
    }
}

impl FromReply<EntryList> for EntriesData {
    fn from_reply(EntryList { entries, leaf_id }: EntryList) -> Self {
        EntriesData { entries, leaf_id }
    }
}

impl FromReply<TreeWithLeaf> for TreeData {
    fn from_reply(TreeWithLeaf { tree, leaf_id }: TreeWithLeaf) -> Self {
        TreeData { tree: TreeJson(tree), leaf_id }
    }
}

impl FromReply<Option<String>> for LastAssistantTextData {
    fn from_reply(text: Option<String>) -> Self {
        LastAssistantTextData { text }
    }
}

impl FromReply<Vec<CommandInfo>> for CommandsData {
    fn from_reply(commands: Vec<CommandInfo>) -> Self {
        let commands = commands
            .into_iter()
            .map(|c| CommandData {
                name: c.name,
                description: c.description,
                source: c.source.as_str().to_string(),
                location: c.location.map(|l| l.as_str().to_string()),
                path: c.path,
                source_info: c.source_info.map(|i| CommandSourceData {
                    path: i.path,
                    source: i.source,
                    scope: i.scope,
                    origin: i.origin,
                    base_dir: i.base_dir,
                }),
            })
            .collect();
        CommandsData { commands }
    }
}

impl FromReply<ClearedQueues> for QueueData {
    fn from_reply(ClearedQueues { steering, follow_up }: ClearedQueues) -> Self {
        QueueData { steering, follow_up }
    }
}

impl FromReply<SessionInfo> for SessionResult {
    fn from_reply(info: SessionInfo) -> Self {
        SessionResult {
            session_id: info.session_id,
            session_path: info.session_path,
            model: info.model.as_ref().map(|m| m.id.clone()),
            provider: info.model.as_ref().map(|m| m.provider.clone()),
        }
    }
}

impl FromReply<Vec<String>> for ToolsData {
    fn from_reply(tools: Vec<String>) -> Self {
        ToolsData { tools }
    }
}

impl FromReply<Box<pi_core::login::LoginStarted>> for LoginResult {
    fn from_reply(started: Box<pi_core::login::LoginStarted>) -> Self {
        let s = *started;
        LoginResult {
            provider: s.provider,
            name: s.name,
            method: s.method,
            url: s.url,
            instructions: s.instructions,
            user_code: s.user_code,
            verification_uri: s.verification_uri,
            expires_in: s.expires_in_seconds,
        }
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
