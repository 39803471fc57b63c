//! What the actor keeps about templates, skills and extensions
//! ([`ExtensionState`]: the running extensions, their start-up, the hooks and
//! commands in flight, the tools each added), and the signals extension work
//! sends the actor ([`ExtSignal`]). The actor's side is `extension_hooks.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::state::Pending;
use crate::extensions::{ExtensionOptions, Extensions, HostSignal, SignalSink, StartContext};
use crate::message::AgentMessage;
use crate::op::{Op, RequestTag};
use crate::resources::Resources;

/// Messages for the actor about extension work.
#[derive(Debug)]
pub(crate) enum ExtSignal {
    Host(HostSignal),
    /// An extension command finished (`error`: what it answered with, if it failed).
    CommandDone {
        tag: Option<RequestTag>,
        invocation: String,
        error: Option<String>,
    },
    /// Extension `id` answered its start-up `session_start` (or died), and
    /// `resources_discover` (`found`: its answer) when it listens to it.
    Greeted {
        id: usize,
        found: Option<Value>,
    },
    /// The extensions' answers to `resources_discover` after a reload or a
    /// session replacement (each with the extension's path); `reply` is the
    /// reloading command's (`None`: a replacement, ops waited for it).
    ResourcesFound {
        found: Vec<(String, Value)>,
        reply: Option<super::extension_session_op_state::ExtReply>,
    },
    /// Every pi module handled the exit's `session_shutdown` (each awaited in load order).
    SaidGoodbye,
    /// Every old instance handled a reload's `session_shutdown` (each
    /// awaited in load order): the reload goes on with the packages `resolved`.
    ReloadShutDown {
        resolved: Option<Box<pi_extensions::packages::Resolved>>,
        reply: super::extension_session_op_state::ExtReply,
    },
    /// Every extension handled a reload's `session_start` (each awaited in
    /// load order); `reply` is the reloading command's; `added`: the pi
    /// modules the reload loaded, started with the others.
    ReloadStarted {
        reply: super::extension_session_op_state::ExtReply,
        added: Vec<usize>,
    },
    /// Every extension handled a replaced session's `session_start` (each
    /// awaited in load order, as pi's runner awaits them); `reply`: the
    /// `setupDone` of a command's `newSession({setup})`, answered then.
    ReplacementStarted {
        reply: Option<super::extension_session_op_state::ExtReply>,
    },
    /// Every old instance handled a replacement's `session_shutdown` with
    /// the old session current: the new one becomes current now.
    OldRuntimeShutDown(Box<super::parked_switch::ParkedSwitch>),
    /// The session hooks decided about an op.
    SessionHookDone {
        pending: Pending,
        cancelled: bool,
    },
    /// The `input` hooks decided about a client's prompt: `op` carries the
    /// (possibly transformed) text, unless an extension handled it.
    InputDone {
        tag: Option<RequestTag>,
        op: Option<Op>,
        /// Which asking it answers (see [`ExtensionState::input_asked`]).
        decision: u64,
        /// The op is a prompt.
        prompt: bool,
    },
    /// The `session_before_tree` hooks decided about a command's `ctx.navigateTree()`.
    TreeHookDone {
        nav: Box<super::extension_session_op_state::Navigation>,
        decision: Value,
    },
    /// The model's summary of the branch a command's `ctx.navigateTree()` leaves.
    TreeSummaryDone {
        nav: Box<super::extension_session_op_state::Navigation>,
        decision: Value,
        summary: Box<Result<crate::compaction::SummaryOutput, crate::compaction::SummaryError>>,
    },
    /// A command's `ctx.reload()` resolved the settings' pi packages aside
    /// (installing what was missing); `None`: that task failed.
    ReloadPackagesResolved {
        resolved: Option<Box<pi_extensions::packages::Resolved>>,
        reply: super::extension_session_op_state::ExtReply,
    },
    /// The `model_select` / `thinking_level_select` handlers an op's change
    /// set off are done (or started): its answer goes out now.
    SelectionsHandled {
        tag: Option<RequestTag>,
        result: Result<crate::op::Reply, crate::error::CoreError>,
        /// Later ops waited for this answer.
        held: bool,
    },
    /// The `input` hooks decided about extension `id`'s `sendUserMessage`
    /// (`params` with the resulting content), unless one handled it.
    UserMessageInputDone {
        id: usize,
        params: Option<Value>,
        decision: u64,
    },
}

/// What the actor keeps about templates, skills and extensions.
pub(crate) struct ExtensionState {
    handle: Extensions,
    /// The MCP connections of the SDK sessions extensions made
    /// (`createAgentSession`), one manager per session.
    sdk_mcp: Arc<super::actor::sdk_session_conns::SdkSessionConns>,
    resources: Resources,
    /// Per extension: not yet registered nor dead (ops wait until none is).
    starting: Vec<bool>,
    /// Extensions asked to await their start-up `session_start`.
    greeted: HashSet<usize>,
    /// The virtual models each extension registered: `(provider, id)`.
    virtual_of: HashMap<usize, Vec<(String, String)>>,
    /// The providers each extension registered (`registerProvider`).
    providers_of: HashMap<usize, Vec<crate::extensions::protocol::ProviderSpec>>,
    /// A session hook is deciding (ops wait in the actor's deferred queue).
    hook_pending: bool,
    /// The `session_before_tree` hooks of a `ctx.navigateTree()` decide
    /// (pi's session is not idle then: its tree navigation has begun).
    tree_hooks: bool,
    /// `resources_discover` rounds asked after a session replacement and
    /// not yet answered (ops wait, as pi answers after them).
    discovering: usize,
    /// Commands and hooks in flight.
    running: usize,
    /// Replaced sessions whose `session_start` handlers have not all run
    /// (ops wait, as pi answers the replacement after them).
    restarting: usize,
    /// How many times the `input` hooks were asked (the last asking's number).
    inputs_asked: u64,
    /// Prompts and user messages the `input` hooks decide about.
    prompts_deciding: usize,
    /// Extensions a reload or a session replacement has yet to make anew
    /// (each leaves once its new instance handled `session_start`): pi's
    /// new runtime does not list their servers while the factories run.
    awaiting_replacement: Arc<std::sync::Mutex<Vec<usize>>>,
    /// Custom messages for the next prompt (`deliverAs: "nextTurn"`).
    next_turn: Vec<AgentMessage>,
    /// The last `model_select` / `thinking_level_select` sent to extensions
    /// that await them: done when its handlers are, a thinking level's once
    /// the first started (each waits for the one before).
    selection: Option<tokio::sync::oneshot::Receiver<()>>,
    /// Tool names each extension added.
    tools_of: HashMap<usize, Vec<String>>,
    /// The tools each extension's last registration activates on
    /// registration (pi activates a tool when it becomes one of them).
    tools_known: HashMap<usize, HashSet<String>>,
    /// Bumped whenever an extension changes the tools (a run picks them up).
    tools_version: Arc<AtomicU64>,
    /// `--no-tools`: extension tools start inactive.
    no_tools: bool,
    /// `--tools` as an allowlist, and whether it names MCP tools (`mcp__…`).
    tool_allowlist: Option<(crate::tools::ToolNameMatcher, bool)>,
    /// The active tools `--tools` asked for, in order (extension ones included).
    requested_tools: Vec<String>,
    /// Compactions extensions asked for (`ctx.compact()`): `(extension, ticket)`.
    compaction_waiters: Vec<(usize, Value)>,
    /// Session ops of extension commands (`ctx.newSession()`, …) by their tag.
    session_op_replies: super::extension_session_op_state::SessionOpReplies,
    /// The command line's extension flags, until checked once the extensions started.
    flags: Vec<(String, Option<String>)>,
    /// What found the extensions (a reload finds them again).
    discovery: Option<crate::extensions::DiscoverOptions>,
    /// `--tools`' edits of `defaultTools`, when that setting chooses the tools.
    default_tool_edits: Option<Vec<String>>,
    /// Extensions a reload loaded (greeted with reason "reload").
    loaded_by_reload: HashSet<usize>,
    /// A command's `ctx.reload()`, answered once the extensions it loaded started.
    parked_reload: Option<super::extension_session_op_state::ExtReply>,
    /// Start-up answers to `resources_discover` by extension id, held until
    /// every extension has started: they join in load order, as pi asks
    /// its extensions one after the other, not in the order they answer.
    found_at_start: std::collections::BTreeMap<usize, Value>,
    /// Start-up pi modules whose factory ran, waiting for the last one's
    /// (pi binds its runtime, then greets its extensions, once all loaded);
    /// `None` once they were bound and greeted.
    start_phase: Option<Vec<usize>>,
    /// The pi modules' `session_shutdown` at exit (pi disposes its runtime,
    /// every handler awaited, before it exits).
    goodbye: Goodbye,
}

/// Where the exit's `session_shutdown` (reason "quit") stands.
#[derive(Debug, Default)]
pub(crate) enum Goodbye {
    /// Not asked yet.
    #[default]
    NotAsked,
    /// These extensions are handling it, awaited in load order.
    Asked(Vec<usize>),
    /// These extensions handled it.
    Said(Vec<usize>),
}

impl ExtensionState {
    /// Where the exit's `session_shutdown` stands, to read and move on.
    pub(crate) fn goodbye(&mut self) -> &mut Goodbye {
        &mut self.goodbye
    }

    /// Start the extensions of `options`; their signals reach the actor on `internal`.
    pub(crate) fn start(
        resources: Resources,
        options: &ExtensionOptions,
        ctx: &StartContext<'_>,
        sink: Arc<dyn SignalSink>,
    ) -> Self {
        let handle = if options.paths.is_empty() && options.load_errors.is_empty() {
            Extensions::default()
        } else {
            Extensions::start(options, ctx, sink)
        };
        // Those asked about project trust and not kept (retired) never start.
        let mut starting = vec![false; handle.len()];
        for (id, _) in handle.loaded_paths() {
            if let Some(flag) = starting.get_mut(id) {
                *flag = true;
            }
        }
        ExtensionState {
            starting,
            greeted: HashSet::new(),
            virtual_of: HashMap::new(),
            providers_of: HashMap::new(),
            handle,
            sdk_mcp: Arc::default(),
            resources,
            hook_pending: false,
            tree_hooks: false,
            discovering: 0,
            running: 0,
            restarting: 0,
            inputs_asked: 0,
            prompts_deciding: 0,
            awaiting_replacement: Arc::default(),
            next_turn: Vec::new(),
            selection: None,
            tools_of: HashMap::new(),
            tools_known: HashMap::new(),
            tools_version: Arc::default(),
            no_tools: options.no_tools,
            tool_allowlist: options.tool_allowlist.as_ref().map(|list| {
                // pi: an empty allowlist (`--no-tools`) filters MCP-named tools too.
                let names_mcp = list.is_empty() || list.iter().any(|entry| entry.trim().starts_with("mcp__"));
                (crate::tools::ToolNameMatcher::new(list), names_mcp)
            }),
            requested_tools: options.requested_tools.clone(),
            compaction_waiters: Vec::new(),
            session_op_replies: Default::default(),
            flags: options.flags.clone(),
            discovery: options.discovery.clone(),
            default_tool_edits: options.default_tool_edits.clone(),
            loaded_by_reload: HashSet::new(),
            start_phase: Some(Vec::new()),
            goodbye: Goodbye::NotAsked,
            parked_reload: None,
            found_at_start: Default::default(),
        }
    }

    /// Extension `id`'s start-up answer to `resources_discover`, kept until
    /// [`Self::take_found_at_start`].
    pub(super) fn hold_found_at_start(&mut self, id: usize, found: Value) {
        self.found_at_start.insert(id, found);
    }

    /// Once no extension is starting: the held start-up answers, in load order.
    pub(super) fn take_found_at_start(&mut self) -> Vec<(usize, Value)> {
        if self.starting.iter().any(|s| *s) {
            return Vec::new();
        }
        std::mem::take(&mut self.found_at_start).into_iter().collect()
    }

    /// What found the extensions at start (`None`: named by the front end).
    pub(super) fn discovery(&self) -> Option<&crate::extensions::DiscoverOptions> {
        self.discovery.as_ref()
    }

    /// `--tools`' edits of `defaultTools` (`None`: the setting does not choose the tools).
    pub(super) fn default_tool_edits(&self) -> Option<&[String]> {
        self.default_tool_edits.as_deref()
    }

    /// Tools to activate when an extension registers them (as `--tools` asks).
    pub(super) fn request_tools(&mut self, names: Vec<String>) {
        for name in names {
            if !self.requested_tools.contains(&name) {
                self.requested_tools.push(name);
            }
        }
    }

    /// A reload started extension `id`: ops wait until it registered (or
    /// died). `in_turn`: its `session_start` comes in the reload's turn
    /// with the others', not when it registers.
    pub(super) fn loaded_by_reload(&mut self, id: usize, in_turn: bool) {
        if self.starting.len() <= id {
            self.starting.resize(id + 1, false);
        }
        self.starting[id] = true;
        self.loaded_by_reload.insert(id);
        if in_turn {
            self.greeted.insert(id);
        }
    }

    /// A reload's answer: held while an extension it loaded is starting
    /// (pi's reload resolves once every extension got its `session_start`).
    pub(super) fn answer_reload(&mut self, reply: super::extension_session_op_state::ExtReply) {
        if self.loaded_by_reload.iter().any(|id| self.is_starting(*id)) {
            self.parked_reload = Some(reply);
        } else {
            let _ = reply.send(Ok(serde_json::json!({"cancelled": false})));
        }
    }

    /// Answer the held reload once none of the extensions it loaded is starting.
    pub(super) fn release_reload(&mut self) {
        if self.loaded_by_reload.iter().any(|id| self.is_starting(*id)) {
            return;
        }
        if let Some(reply) = self.parked_reload.take() {
            let _ = reply.send(Ok(serde_json::json!({"cancelled": false})));
        }
    }

    /// Whether a reload started extension `id`.
    pub(super) fn is_loaded_by_reload(&self, id: usize) -> bool {
        self.loaded_by_reload.contains(&id)
    }

    /// Once, when the extensions have started: what is wrong with the
    /// command line's extension flags, as `(extension path, error)`, as pi
    /// 1.6.0 checks them against the flags the extensions registered: an
    /// option no extension registers (one error naming them all), a string
    /// flag given without a value. pi exits then; pi-rpc reports them.
    pub(super) fn take_flag_errors(&mut self) -> Vec<(String, String)> {
        let given = std::mem::take(&mut self.flags);
        let mut registered: HashMap<String, (String, Option<String>)> = HashMap::new();
        for ext in (0..self.handle.len()).filter_map(|id| self.handle.get(id)).filter(|e| !e.is_dead()) {
            for flag in ext.registration().map(|r| r.flags).unwrap_or_default() {
                registered.insert(flag.name, (ext.path_string(), flag.kind));
            }
        }
        let mut seen = HashSet::new();
        let mut unknown = Vec::new();
        let mut errors = Vec::new();
        for (name, _) in &given {
            // pi keeps each name once, with its last value.
            if !seen.insert(name.as_str()) {
                continue;
            }
            let value = given.iter().rev().find(|(n, _)| n == name).and_then(|(_, v)| v.as_ref());
            match registered.get(name) {
                None => unknown.push(format!("--{name}")),
                Some((path, kind)) if kind.as_deref() != Some("boolean") && value.is_none() => {
                    errors.push((path.clone(), format!("Extension flag \"--{name}\" requires a value")));
                }
                Some(_) => {}
            }
        }
        if !unknown.is_empty() {
            let plural = if unknown.len() == 1 { "" } else { "s" };
            errors.push(("<command line>".to_string(), format!("Unknown option{plural}: {}", unknown.join(", "))));
        }
        errors
    }

    /// Where the answers to extension commands' session ops wait.
    pub(super) fn session_op_replies(&self) -> &super::extension_session_op_state::SessionOpReplies {
        &self.session_op_replies
    }

    /// Tell a running run that the tools changed.
    pub(crate) fn tools_changed(&self) {
        self.tools_version.fetch_add(1, Ordering::SeqCst);
    }

    /// A command (a built-in one too) is in flight until its `CommandDone`,
    /// or a client's input until the `input` hooks decided.
    pub(super) fn command_started(&mut self) {
        self.running += 1;
    }

    /// No command or hook in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.running == 0
    }

    /// Ops wait: extensions are starting or a session hook decides.
    pub(super) fn gated(&self) -> bool {
        self.hook_pending || self.discovering > 0 || self.restarting > 0 || self.starting.iter().any(|s| *s)
    }

    /// A replaced session's `session_start` goes to the extensions.
    pub(super) fn restart_started(&mut self) {
        self.restarting += 1;
    }

    /// Extensions `ids` are to be made anew, in turn; the list they leave
    /// one by one (see [`left_replacement`]).
    pub(super) fn replacing(&self, ids: &[usize]) -> Arc<std::sync::Mutex<Vec<usize>>> {
        if let Ok(mut list) = self.awaiting_replacement.lock() {
            list.extend_from_slice(ids);
        }
        self.awaiting_replacement.clone()
    }

    /// Extension `id` waits for its new instance (a reload, a replacement).
    pub(super) fn is_awaiting_replacement(&self, id: usize) -> bool {
        self.awaiting_replacement.lock().is_ok_and(|list| list.contains(&id))
    }

    /// Its handlers have all run.
    pub(super) fn restart_done(&mut self) {
        self.restarting = self.restarting.saturating_sub(1);
    }

    /// A `resources_discover` round starts after a session replacement.
    pub(super) fn discovery_started(&mut self) {
        self.discovering += 1;
    }

    /// That round was answered.
    pub(super) fn discovery_done(&mut self) {
        self.discovering = self.discovering.saturating_sub(1);
    }

    /// A command finished (or the `input` hooks decided about a client's input).
    pub(super) fn command_done(&mut self) {
        self.running = self.running.saturating_sub(1);
    }

    /// The `input` hooks are asked about some input (`prompt`: a prompt or
    /// an extension's user message, pi's prompt preflight): the number of
    /// this asking. Later ops do not wait for them, as in pi.
    pub(super) fn input_asked(&mut self, prompt: bool) -> u64 {
        self.inputs_asked += 1;
        self.prompts_deciding += usize::from(prompt);
        self.inputs_asked
    }

    /// The `input` hooks decided about an input [`Self::input_asked`] told.
    pub(super) fn input_decided(&mut self, prompt: bool) {
        self.prompts_deciding = self.prompts_deciding.saturating_sub(usize::from(prompt));
    }

    /// The `input` hooks decide about a prompt (pi's session cannot
    /// navigate its tree meanwhile).
    pub(super) fn prompt_deciding(&self) -> bool {
        self.prompts_deciding > 0
    }

    /// The number of the last time the `input` hooks were asked.
    pub(super) fn last_input_asked(&self) -> u64 {
        self.inputs_asked
    }

    /// A session hook decides: ops wait until [`Self::hook_done`].
    pub(super) fn hook_started(&mut self) {
        self.hook_pending = true;
        self.running += 1;
    }

    pub(super) fn hook_done(&mut self) {
        self.running = self.running.saturating_sub(1);
        self.hook_pending = false;
        self.tree_hooks = false;
    }

    /// The `session_before_tree` hooks start deciding (a hook, see [`ExtensionState::hook_started`]).
    pub(super) fn tree_hooks_started(&mut self) {
        self.hook_started();
        self.tree_hooks = true;
    }

    /// The `session_before_tree` hooks are deciding.
    pub(super) fn tree_hooks_running(&self) -> bool {
        self.tree_hooks
    }

    /// The last selection event's handlers, to wait for (see [`ExtSignal::SelectionsHandled`]).
    pub(super) fn take_selection(&mut self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        self.selection.take()
    }

    pub(super) fn set_selection(&mut self, handled: tokio::sync::oneshot::Receiver<()>) {
        self.selection = Some(handled);
    }

    /// Extension `id` has not registered nor died yet.
    pub(super) fn is_starting(&self, id: usize) -> bool {
        self.starting.get(id) == Some(&true)
    }

    /// Extension `id` is starting and has not been given its start-up
    /// `session_start` yet: it is now (ops keep waiting until it is answered).
    pub(super) fn greet(&mut self, id: usize) -> bool {
        self.is_starting(id) && self.greeted.insert(id)
    }

    /// Start-up pi module `id` registered: it waits for the others'
    /// factories before its `session_start` (true), unless the start-up
    /// phase is over or it is not one.
    pub(super) fn wait_for_start_phase(&mut self, id: usize) -> bool {
        let phased = self.start_phase.is_some() && self.is_start_up_module(id);
        if !phased || !self.greet(id) {
            return false;
        }
        self.start_phase.get_or_insert_with(Vec::new).push(id);
        true
    }

    /// A live pi module loaded at start-up (not by a reload).
    fn is_start_up_module(&self, id: usize) -> bool {
        let module = self.handle.get(id).filter(|e| !e.is_dead());
        !self.loaded_by_reload.contains(&id)
            && module.is_some_and(|e| crate::extensions::discovery::is_pi_module(&e.path))
    }

    /// Once no start-up pi module is still running its factory: those
    /// waiting, in load order (the phase is over from now on).
    pub(super) fn take_start_phase(&mut self) -> Option<Vec<usize>> {
        self.start_phase.as_ref()?;
        let loading = |id: usize| self.is_starting(id) && !self.greeted.contains(&id) && self.is_start_up_module(id);
        if self.handle.loaded_paths().into_iter().any(|(id, _)| loading(id)) {
            return None;
        }
        let waiting = self.start_phase.take().unwrap_or_default();
        let in_order = self.handle.loaded_paths().into_iter().map(|(id, _)| id).filter(|id| waiting.contains(id));
        Some(in_order.collect())
    }

    /// Extension `id` was given its start-up `session_start` and is still starting: it is answering it.
    pub(super) fn is_greeting(&self, id: usize) -> bool {
        self.is_starting(id) && self.greeted.contains(&id)
    }

    /// Extension `id` now registers these virtual models; the ones it registered before are returned.
    pub(super) fn replace_virtual_models(&mut self, id: usize, now: Vec<(String, String)>) -> Vec<(String, String)> {
        let before = self.virtual_of.remove(&id).unwrap_or_default();
        if !now.is_empty() {
            self.virtual_of.insert(id, now);
        }
        before
    }

    /// Extension `id` now registers these providers; the ones it registered before are returned.
    pub(super) fn replace_providers(
        &mut self,
        id: usize,
        now: Vec<crate::extensions::protocol::ProviderSpec>,
    ) -> Vec<crate::extensions::protocol::ProviderSpec> {
        let before = self.providers_of.remove(&id).unwrap_or_default();
        if !now.is_empty() {
            self.providers_of.insert(id, now);
        }
        before
    }

    /// pi's `getRegisteredProviderIds()`: the providers extensions registered,
    /// the config form's in load order, then the native ones (pi's own
    /// llama.cpp provider first), each once.
    pub(super) fn registered_provider_ids(&self) -> Vec<String> {
        let mut owners: Vec<&usize> = self.providers_of.keys().collect();
        owners.sort();
        let specs = || owners.iter().flat_map(|id| self.providers_of[*id].iter());
        let mut ids: Vec<String> = Vec::new();
        let configs = specs().filter(|s| !s.native).map(|s| s.name.clone());
        let natives = specs().filter(|s| s.native).map(|s| s.name.clone());
        for name in configs.chain(std::iter::once(crate::config::llama::PROVIDER.to_string())).chain(natives) {
            if !ids.contains(&name) {
                ids.push(name);
            }
        }
        ids
    }

    /// Whether provider `name`'s registration in effect (the extension
    /// loaded last that registers it) is a native `Provider` object; `None`
    /// when no extension registers it.
    pub(super) fn registered_provider_kind(&self, name: &str) -> Option<bool> {
        let owner = self
            .providers_of
            .iter()
            .filter(|(_, specs)| specs.iter().any(|s| s.name == name))
            .map(|(id, _)| *id)
            .max()?;
        self.providers_of[&owner].iter().find(|s| s.name == name).map(|s| s.native)
    }

    /// The registrations of provider `name` by extensions loaded after `id`, in load order.
    pub(super) fn providers_after(&self, id: usize, name: &str) -> Vec<crate::extensions::protocol::ProviderSpec> {
        let mut later: Vec<(&usize, &crate::extensions::protocol::ProviderSpec)> = self
            .providers_of
            .iter()
            .filter(|(other, _)| **other > id)
            .flat_map(|(other, specs)| specs.iter().filter(|s| s.name == name).map(move |s| (other, s)))
            .collect();
        later.sort_by_key(|(other, _)| **other);
        later.into_iter().map(|(_, spec)| spec.clone()).collect()
    }

    /// The live extension that registered virtual model `provider/id`.
    pub(super) fn virtual_model_owner(&self, provider: &str, id: &str) -> Option<Arc<crate::extensions::Extension>> {
        let owner = self.virtual_of.iter().find(|(_, models)| models.iter().any(|(p, m)| p == provider && m == id))?.0;
        self.handle.get(*owner).filter(|e| !e.is_dead())
    }

    /// Extension `id` registered or died.
    pub(super) fn started(&mut self, id: usize) {
        if let Some(flag) = self.starting.get_mut(id) {
            *flag = false;
        }
    }

    /// The running extensions.
    /// The MCP connections of the SDK sessions extensions made.
    pub(super) fn sdk_mcp(&self) -> &Arc<super::actor::sdk_session_conns::SdkSessionConns> {
        &self.sdk_mcp
    }

    pub(super) fn handle(&self) -> &Extensions {
        &self.handle
    }

    /// Prompt templates and skills.
    pub(super) fn resources(&self) -> &Resources {
        &self.resources
    }

    /// Prompt templates and skills, to add those an extension found.
    pub(super) fn resources_mut(&mut self) -> &mut Resources {
        &mut self.resources
    }

    /// A custom message for the next prompt (`deliverAs: "nextTurn"`).
    pub(super) fn queue_next_turn(&mut self, message: AgentMessage) {
        self.next_turn.push(message);
    }

    /// The messages for this prompt (and none for the next).
    pub(super) fn take_next_turn(&mut self) -> Vec<AgentMessage> {
        std::mem::take(&mut self.next_turn)
    }

    /// The counter a run watches for tool changes, and its value now.
    pub(super) fn tools_version(&self) -> (Arc<AtomicU64>, u64) {
        (self.tools_version.clone(), self.tools_version.load(Ordering::SeqCst))
    }

    /// `--no-tools`: extension tools start inactive.
    pub(super) fn no_tools(&self) -> bool {
        self.no_tools
    }

    /// Whether an extension tool `name` may be registered: `--tools`, when
    /// it is an allowlist, matches it (an MCP-named tool passes an allowlist
    /// that names no MCP tool, as in pi).
    pub(super) fn tool_allowed(&self, name: &str) -> bool {
        match &self.tool_allowlist {
            None => true,
            Some((matcher, names_mcp)) => matcher.matches(name) || (!names_mcp && name.starts_with("mcp__")),
        }
    }

    /// Whether `--tools` names extension tool `name` (its allowlist matches
    /// it, or it asks for it by name): it is activated when registered,
    /// whatever its `defaultActive`.
    pub(super) fn tool_named(&self, name: &str) -> bool {
        self.tool_allowlist.as_ref().is_some_and(|(matcher, _)| matcher.matches(name))
            || self.requested_tools.iter().any(|t| t == name)
    }

    /// Whether pi activates an extension's tool `spec` as it registers it
    /// (its `defaultActive`, unless `--no-tools` or a `--tools` allowlist;
    /// whatever its `defaultActive` when `--tools` names it), and whether
    /// `--tools` names it (it then takes its place in `--tools`' order).
    pub(super) fn activates_on_registration(&self, spec: &crate::extensions::protocol::ToolSpecWire) -> (bool, bool) {
        let declarable = matches!(spec.exposure.as_deref(), None | Some("direct" | "model-only"));
        let by_default = spec.active && !self.no_tools && !self.has_tool_allowlist();
        let named = declarable && self.tool_named(&spec.name);
        (by_default || named, named)
    }

    /// The active tools `--tools` asked for, in order.
    pub(super) fn requested_tools(&self) -> &[String] {
        &self.requested_tools
    }

    /// Whether `--tools` is an allowlist (only the tools it names are activated).
    pub(super) fn has_tool_allowlist(&self) -> bool {
        self.tool_allowlist.is_some()
    }

    /// The tools extension `id` added (forgotten: it re-registers or died).
    pub(super) fn take_tools_of(&mut self, id: usize) -> Vec<String> {
        self.tools_of.remove(&id).unwrap_or_default()
    }

    /// The extension that added tool `name`.
    pub(super) fn tool_owner(&self, name: &str) -> Option<usize> {
        self.tools_of.iter().find(|(_, names)| names.iter().any(|n| n == name)).map(|(owner, _)| *owner)
    }

    /// The tools extension `id`'s last registration activated on registration.
    pub(super) fn known_tools(&self, id: usize) -> HashSet<String> {
        self.tools_known.get(&id).cloned().unwrap_or_default()
    }

    /// Extension `id` waits for the outcome of the compaction it asked for (`ticket`).
    pub(super) fn wait_compaction(&mut self, id: usize, ticket: Value) {
        self.compaction_waiters.push((id, ticket));
    }

    /// The extensions waiting for a compaction's outcome (forgotten).
    pub(super) fn take_compaction_waiters(&mut self) -> Vec<(usize, Value)> {
        std::mem::take(&mut self.compaction_waiters)
    }

    /// Extension `id` now owns `added`; `auto` of them are activated on registration.
    pub(super) fn record_tools(&mut self, id: usize, added: Vec<String>, auto: Vec<String>) {
        self.tools_known.insert(id, auto.into_iter().collect());
        self.tools_of.insert(id, added);
    }
}

/// Extension `id` has its new instance: it leaves `list` ([`ExtensionState::replacing`]).
pub(super) fn left_replacement(list: &std::sync::Mutex<Vec<usize>>, id: usize) {
    if let Ok(mut list) = list.lock()
        && let Some(at) = list.iter().position(|e| *e == id)
    {
        list.remove(at);
    }
}
