//! The extensions asked about project trust, kept for the session as pi
//! keeps them: pi loads the user-level and command-line extensions once,
//! asks them (`project_trust`), then loads only the project's extensions
//! beside them, so each factory runs once and the first `session_start` an
//! extension sees is the session's. Here those extensions were started
//! before the agent existed; [`Extensions::start`] adopts them: their
//! signals go to the agent from then on, the agent is told of their
//! registrations (and of those that failed to load), and the remaining
//! extensions of the session start beside them, in the session's order.
//!
//! pi-rpc's own process extensions (another language, not pi modules) were
//! greeted with a `hello` that names no session: they are started again
//! for the session, as the protocol gives a process its session facts
//! only at start.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde_json::{Value, json};

use super::preload_mcp::{self, PreSessionMcp};
use super::{
    ExtRequest, Extension, ExtensionOptions, Extensions, HostSignal, Shared, Signals, SpawnTemplate, StartContext,
};

/// What a refused request is answered while no session runs.
const NO_SESSION: &str = "not available before project trust is decided";

/// The answer to a request that needs no session, computed aside.
pub type SessionlessAnswer = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, String>> + Send>>;

/// What answers the requests that need no session (pi's library functions,
/// which pi answers while its extensions load): `None` for the others.
pub type SessionlessRequests = Arc<dyn Fn(ExtRequest) -> Option<SessionlessAnswer> + Send + Sync>;

/// Answer a request of an extension started before the session: what it
/// emits on `pi.events` delivered to the other extensions of `bus` (pi's
/// event bus is theirs from the start), one that needs no session by
/// `sessionless`, the others refused.
fn answer_before_session(sessionless: Option<&SessionlessRequests>, bus: Option<&Extensions>, signal: HostSignal) {
    match signal {
        HostSignal::Request { id, request: ExtRequest::Emit(params), reply } if bus.is_some() => {
            let channel = params.get("channel").and_then(Value::as_str).unwrap_or_default();
            if let Some(bus) = bus {
                bus.broadcast_bus(id, channel, params.get("data").cloned().unwrap_or(Value::Null));
            }
            let _ = reply.send(Ok(Value::Null));
        }
        HostSignal::Request { request, reply, .. } => match sessionless.and_then(|answer| answer(request)) {
            Some(answer) => {
                tokio::spawn(async move {
                    let _ = reply.send(answer.await);
                });
            }
            None => {
                let _ = reply.send(Err(NO_SESSION.to_string()));
            }
        },
        HostSignal::ModelStream { reply, .. } => {
            let _ = reply.send(Err(NO_SESSION.to_string()));
        }
        HostSignal::Registered { .. } | HostSignal::Died { .. } | HostSignal::Error { .. } | HostSignal::Event(_) => {}
    }
}

/// Where the signals of extensions started before the agent go: the trust
/// question's queue, then nowhere (requests answered without a session or
/// refused), then the agent.
pub(super) struct Relay {
    target: RwLock<Option<Signals>>,
    sessionless: Option<SessionlessRequests>,
    /// The extensions it relays for (their event bus), once started.
    bus: std::sync::OnceLock<std::sync::Weak<Shared>>,
    /// Built-in extension factories applied before the session (pi's
    /// `createMcpExtension()` in a factory) and MCP servers registered or
    /// unregistered then: accepted now, handed to the session when it
    /// adopts the extension, as pi keeps them for it.
    deferred: Mutex<Vec<(usize, ExtRequest)>>,
    /// The MCP servers registered before the session, as pi lists them then.
    mcp: PreSessionMcp,
    /// MCP calls waiting for the extensions loaded before theirs (see [`Relay::release_parked`]).
    parked: Mutex<Vec<ParkedMcpCall>>,
    /// Extensions whose death [`Extensions::adopt`] told the session: their
    /// own report of it, if still on its way, is not told again.
    death_told: Mutex<std::collections::HashSet<usize>>,
}

impl Relay {
    /// `mcp`: where the MCP servers registered before the session are kept.
    pub(super) fn new(target: Signals, sessionless: Option<SessionlessRequests>, mcp: PreSessionMcp) -> Arc<Relay> {
        Arc::new(Relay {
            target: RwLock::new(Some(target)),
            sessionless,
            bus: std::sync::OnceLock::new(),
            deferred: Mutex::new(Vec::new()),
            mcp,
            parked: Mutex::default(),
            death_told: Mutex::default(),
        })
    }

    /// The extensions started with this relay as their signal sink.
    pub(super) fn serve(&self, extensions: &Extensions) {
        let _ = self.bus.set(Arc::downgrade(&extensions.shared));
    }

    /// Send what comes from now on to `target` (`None`: answer requests without a session, drop the rest).
    pub(super) fn point_at(&self, target: Option<Signals>) {
        *self.target.write().unwrap_or_else(PoisonError::into_inner) = target;
    }

    /// The requests kept for the session, in their order.
    fn take_deferred(&self) -> Vec<(usize, ExtRequest)> {
        std::mem::take(&mut *self.deferred.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Whether a request made before the session is kept for it: a built-in
/// extension factory's hand-over (no answer the extension reads).
fn kept_for_the_session(request: &ExtRequest) -> bool {
    matches!(request, ExtRequest::Mcp { method, .. } if method == "useBuiltinExtension")
}

#[async_trait::async_trait]
impl super::SignalSink for Relay {
    async fn deliver(&self, signal: HostSignal) -> bool {
        if let HostSignal::Died { id, .. } = &signal
            && self.death_told.lock().unwrap_or_else(PoisonError::into_inner).contains(id)
        {
            return true;
        }
        let target = self.target.read().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(target) = target {
            return target.deliver(signal).await;
        }
        self.answer_unbound(signal);
        true
    }
}

impl Relay {
    /// Answer a signal of an extension no session has adopted yet: a
    /// built-in factory's hand-over kept for the session, an MCP server
    /// registration answered as pi answers it then and kept for the
    /// session, the rest as [`answer_before_session`] answers it.
    pub(super) fn answer_unbound(&self, signal: HostSignal) {
        let bus = self.bus.get().and_then(std::sync::Weak::upgrade).map(|shared| Extensions { shared });
        let signal = match signal {
            HostSignal::Request { id, request, reply } if kept_for_the_session(&request) => {
                self.deferred.lock().unwrap_or_else(PoisonError::into_inner).push((id, request));
                let _ = reply.send(Ok(Value::Null));
                return;
            }
            HostSignal::Request { id, request: ExtRequest::Mcp { method, params }, reply }
                if preload_mcp::is_registration(&method) =>
            {
                self.parked.lock().unwrap_or_else(PoisonError::into_inner).push(ParkedMcpCall {
                    id,
                    method,
                    params,
                    reply,
                });
                self.release_parked();
                return;
            }
            other => other,
        };
        answer_before_session(self.sessionless.as_ref(), bus.as_ref(), signal);
    }
}

/// An MCP registration call of extension `id` not answered yet.
struct ParkedMcpCall {
    id: usize,
    method: String,
    params: Value,
    reply: tokio::sync::oneshot::Sender<Result<Value, String>>,
}

impl Relay {
    /// Answer the MCP calls whose extension comes after no extension still
    /// loading: pi loads its extensions one after the other, so what an
    /// extension's factory sees of the registrations (and which names are
    /// taken) is what those loaded before it made; pi-rpc loads them side
    /// by side, and holds such a call until then. The others wait for the
    /// next signal (an extension loaded or failed).
    pub(super) fn release_parked(&self) {
        let Some(bus) = self.bus.get().and_then(std::sync::Weak::upgrade).map(|shared| Extensions { shared }) else {
            return;
        };
        let list = bus.list();
        let waiting = |id: usize| list.iter().any(|e| e.id < id && !e.is_ready() && !e.is_dead());
        let due: Vec<ParkedMcpCall> = {
            let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
            let (due, still): (Vec<_>, Vec<_>) = parked.drain(..).partition(|call| !waiting(call.id));
            *parked = still;
            due
        };
        for ParkedMcpCall { id, method, params, reply } in due {
            let path = bus.get(id).map(|e| e.path_string()).unwrap_or_default();
            let loaded = |id: usize| bus.get(id).is_some_and(|e| e.is_ready());
            let answer = self.mcp.answer(id, &path, &method, &params, loaded);
            if answer.is_ok() && method != "getMcpServers" {
                let request = ExtRequest::Mcp { method, params };
                self.deferred.lock().unwrap_or_else(PoisonError::into_inner).push((id, request));
            }
            let _ = reply.send(answer);
        }
    }
}

/// Extensions started before the session (to ask about project trust),
/// to be adopted by the session's [`Extensions::start`] once. Cloning
/// shares them; the first start that takes them has them.
#[derive(Clone, Default)]
pub struct PreloadedExtensions(Arc<Mutex<Option<Preload>>>);

pub(super) struct Preload {
    pub(super) extensions: Extensions,
    pub(super) relay: Arc<Relay>,
}

impl PreloadedExtensions {
    pub(super) fn new(extensions: Extensions, relay: Arc<Relay>) -> PreloadedExtensions {
        PreloadedExtensions(Arc::new(Mutex::new(Some(Preload { extensions, relay }))))
    }

    /// Whether extensions wait to be adopted.
    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).is_none()
    }

    pub(super) fn take(&self) -> Option<Preload> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl std::fmt::Debug for PreloadedExtensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreloadedExtensions").field("waiting", &!self.is_empty()).finish()
    }
}

impl PartialEq for PreloadedExtensions {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Extensions {
    /// The session's extensions, `preload`'s among them: those of
    /// `options.paths` already running are kept (told the session's facts),
    /// the others start now; the list follows `options.paths`. The agent
    /// hears of the kept ones' registrations (or failures) on `signals`,
    /// as if they had just started.
    pub(super) fn adopt(
        preload: Preload,
        options: &ExtensionOptions,
        ctx: &StartContext<'_>,
        signals: Signals,
    ) -> Self {
        let old = preload.extensions.shared.clone();
        let host = old.template.as_ref().and_then(|t| t.host.lock().unwrap_or_else(PoisonError::into_inner).clone());
        let template = SpawnTemplate {
            options: options.clone(),
            cwd: ctx.cwd.to_path_buf(),
            temp_dir: ctx.temp_dir.to_path_buf(),
            host: Mutex::new(host),
        };
        let before = preload.extensions.list();
        let (kept, dropped): (Vec<Arc<Extension>>, Vec<Arc<Extension>>) = before.iter().cloned().partition(|e| {
            !e.is_retired() && super::discovery::is_pi_module(&e.path) && options.paths.contains(&e.path)
        });
        // A kept extension whose death is known is told dead below, once: its own report, if still on
        // its way, is dropped. One dying now reports itself, to the session from here on.
        let known_dead: Vec<(usize, (String, String))> =
            kept.iter().filter(|e| e.is_dead()).filter_map(|e| Some((e.id, e.death()?))).collect();
        preload.relay.death_told.lock().unwrap_or_else(PoisonError::into_inner).extend(known_dead.iter().map(|d| d.0));
        preload.relay.point_at(Some(signals.clone()));
        let deferred = preload.relay.take_deferred();
        let session = (ctx.session_id, ctx.session_file);
        let mut next_id = before.len();
        let mut list: Vec<Arc<Extension>> = Vec::with_capacity(options.paths.len());
        for path in &options.paths {
            let ext = match kept.iter().find(|e| e.path == *path) {
                Some(ext) => ext.clone(),
                None => {
                    next_id += 1;
                    template.spawn(next_id - 1, path, session, &old.ui, &signals, &old.quiet, Some(&list))
                }
            };
            list.push(ext);
        }
        let grace = options.timeouts.shutdown_grace;
        for ext in &dropped {
            // Not the session's (or started again for it): gone without a session_shutdown.
            ext.retire();
            let ext = ext.clone();
            tokio::spawn(async move { ext.stop(grace).await });
        }
        list.extend(dropped);
        let update = json!({
            "type": "session",
            "sessionId": ctx.session_id,
            "sessionFile": ctx.session_file,
            "projectTrusted": options.project_trusted,
        });
        let mut told = Vec::new();
        for ext in &kept {
            if let Some((_, (event, error))) = known_dead.iter().find(|d| d.0 == ext.id) {
                told.push(HostSignal::Died { id: ext.id, event: event.clone(), error: error.clone() });
            } else if ext.is_dead() {
                // Its death is being recorded: its own report comes.
            } else {
                ext.send(&update);
                // One still loading registers itself, to the agent now.
                if ext.is_ready() {
                    told.push(HostSignal::Registered { id: ext.id });
                }
            }
        }
        let errors = options.load_errors.clone();
        let sink = signals.clone();
        let kept_ids: Vec<usize> = kept.iter().filter(|e| !e.is_dead()).map(|e| e.id).collect();
        tokio::spawn(async move {
            // What the kept extensions handed over before the session (built-in factories, MCP servers), first.
            for (id, request) in deferred.into_iter().filter(|(id, _)| kept_ids.contains(id)) {
                let (reply, answer) = tokio::sync::oneshot::channel();
                sink.deliver(HostSignal::Request { id, request, reply }).await;
                if let Ok(Err(error)) = answer.await {
                    tracing::warn!("what an extension did before the session was refused by it: {error}");
                }
            }
            for (path, error) in errors {
                sink.deliver(HostSignal::Error { path, event: "load".to_string(), error }).await;
            }
            for signal in told {
                sink.deliver(signal).await;
            }
        });
        let shared = Arc::new(Shared {
            list: RwLock::new(Arc::new(list)),
            ui: old.ui.clone(),
            timeouts: options.timeouts,
            quiet: old.quiet.clone(),
            signals: Some(signals),
            template: Some(template),
        });
        Extensions::with_prompt_listener(shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::SignalSink;

    fn died(id: usize) -> HostSignal {
        HostSignal::Died { id, event: "load".to_string(), error: "no good".to_string() }
    }

    /// A kept extension's death, told to the session by `adopt`, is not told
    /// again when the extension's own report (sent once its process is
    /// reaped) comes after the session took the relay over.
    #[tokio::test]
    async fn a_death_told_to_the_session_is_not_told_again() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(4);
        let dir = std::env::temp_dir();
        let relay = Relay::new(Arc::new(tx), None, PreSessionMcp::new(dir.clone(), dir));
        relay.death_told.lock().unwrap_or_else(PoisonError::into_inner).insert(0);
        relay.deliver(died(0)).await;
        relay.deliver(died(1)).await;
        assert!(matches!(rx.recv().await, Some(HostSignal::Died { id: 1, .. })));
        assert!(rx.try_recv().is_err(), "extension 0's death reached the session twice");
    }
}
