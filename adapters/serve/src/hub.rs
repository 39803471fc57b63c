//! One loaded session: its agent (the actor itself, or in a cluster a
//! mirror of the session owned by another worker) and the pump that owns its
//! output (started by `pump::start`). Connections attach to a hub and detach from it;
//! a hub that moved (a mirror whose owner was lost or handed the session
//! over) names its successor, which its connections now belong to.
//!
//! A hub knows the registry that holds it only as its [`Home`]: what its
//! pump asks of it (forget it, file it under a new id, find a moved session).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_core::agent::{AgentHandle, Output};
use pi_core::error::CoreError;
use pi_core::op::{Op, RequestTag};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::cluster::events::{EventLog, Stored};
use crate::cluster::lease::LeaseWatch;
use crate::cluster::mirror::{MirrorCtl, MirrorItem};
pub use crate::conn::{ConnHandle, ConnId, Kick, Queued, actor_tag};
use crate::lock::{LockError, OwnerLock};
use crate::ownership::Ownership;
use crate::replay::ReplayBuffer;

/// The session ended (or is unloading): attach elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the session has ended")]
pub struct HubClosed;

pub(crate) enum Control {
    Attach {
        conn: ConnHandle,
        tag: Option<RequestTag>,
        after_seq: Option<u64>,
        done: oneshot::Sender<bool>,
    },
    Detach {
        conn: ConnId,
        done: oneshot::Sender<()>,
    },
    /// Older events read from the stream for the attach waiting as `key`.
    Fetched {
        key: u64,
        result: Result<Vec<Stored>, String>,
    },
    /// A mirror's session was found again after its owner let go.
    Moved(Result<Arc<Hub>, CoreError>),
    /// The connections have moved to the successor: the pump ends.
    MovedAll,
    /// The session's lease may have gone to another worker: the pump looks
    /// (as it does whenever it wakes).
    LookAtLease,
}

/// A loaded session, shared by the registry and the connections attached to it.
pub struct Hub {
    pub(crate) id: Mutex<String>,
    agent: AgentHandle,
    pub(crate) control: mpsc::Sender<Control>,
    pub(crate) closing: AtomicBool,
    /// Its connections are on their way to a successor (the session moved
    /// to another worker): ops wait for it rather than start a new session.
    pub(crate) moving: AtomicBool,
    pub(crate) closed: CancellationToken,
    mirror: bool,
    pub(crate) successor: Mutex<Option<Arc<Hub>>>,
    pub(crate) running: watch::Sender<bool>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("id", &self.id()).field("mirror", &self.mirror).finish()
    }
}

impl Hub {
    pub fn id(&self) -> String {
        self.id.lock().map(|id| id.clone()).unwrap_or_default()
    }

    pub fn agent(&self) -> &AgentHandle {
        &self.agent
    }

    /// True for a mirror of a session owned by another worker.
    pub fn is_mirror(&self) -> bool {
        self.mirror
    }

    /// True once the session is unloading or over: attach to a fresh load.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Resolves once the session has ended and let go of its lock.
    pub async fn wait_closed(&self) {
        self.closed.cancelled().await;
    }

    /// True while its connections are being moved to a successor.
    pub fn is_moving(&self) -> bool {
        self.moving.load(Ordering::SeqCst)
    }

    /// The hub this one's connections now belong to (itself unless it moved).
    pub fn follow(self: &Arc<Self>) -> Arc<Hub> {
        let mut hub = self.clone();
        loop {
            let next = hub.successor.lock().ok().and_then(|s| s.clone());
            match next {
                Some(next) => hub = next,
                None => return hub,
            }
        }
    }

    /// Whether a prompt's run is going on (changes as runs start and settle).
    pub fn running(&self) -> watch::Receiver<bool> {
        self.running.subscribe()
    }

    /// Attach `conn`: with `tag`, the reply `Attached` is queued first; with
    /// `after_seq`, the events after it; then the pending dialogs, then live events.
    pub async fn attach(
        &self,
        conn: ConnHandle,
        tag: Option<RequestTag>,
        after_seq: Option<u64>,
    ) -> Result<(), HubClosed> {
        let (done, attached) = oneshot::channel();
        let msg = Control::Attach { conn, tag, after_seq, done };
        if self.is_closing() || self.control.send(msg).await.is_err() {
            return Err(HubClosed);
        }
        match attached.await {
            Ok(true) => Ok(()),
            _ => Err(HubClosed),
        }
    }

    /// Have the pump look at the session's lease (it may have been lost).
    /// A full control queue needs nothing more: the pump wakes for what is
    /// queued, and looks then.
    pub(crate) fn look_at_lease(&self) {
        let _ = self.control.try_send(Control::LookAtLease);
    }

    /// Stop sending to `conn` (answered once nothing more is queued for it).
    pub async fn detach(&self, conn: ConnId) {
        let (done, detached) = oneshot::channel();
        if self.control.send(Control::Detach { conn, done }).await.is_ok() {
            let _ = detached.await;
        }
    }

    /// End the session (server shutdown): abort its work, flush, stop. A
    /// mirror only lets go of its owner's session.
    pub async fn shut_down(&self) {
        // From now on it takes nothing new: connections and peers go to its next load.
        self.closing.store(true, Ordering::SeqCst);
        let _ = self.agent.submit(None, Op::Shutdown { abort: true }).await;
    }
}

/// How a session's hub behaves.
#[derive(Debug, Clone)]
pub struct HubOptions {
    pub replay_events: usize,
    pub idle_unload: Duration,
}

/// Where a hub's output comes from.
pub(crate) enum Feed {
    /// This worker's actor; in a cluster, the session's lease (in doubt, or
    /// gone to another worker).
    Actor { outputs: mpsc::Receiver<Output>, lease: Option<LeaseWatch> },
    /// The owner's frames, through [`crate::cluster::mirror`].
    Mirror { items: mpsc::Receiver<MirrorItem>, ctl: MirrorCtl },
}

/// What starts a hub.
pub(crate) struct Loaded {
    pub id: String,
    pub session_file: Option<String>,
    pub agent: AgentHandle,
    pub feed: Feed,
    /// Its lock or lease (none for a mirror).
    pub ownership: Option<Ownership>,
    pub buffer: ReplayBuffer,
    /// In a cluster: the event stream (a local session also publishes to it).
    pub log: Option<Arc<EventLog>>,
    /// Taken over from a worker lost during a run: that worker's name.
    pub interrupted: Option<String>,
}

/// A session found again (or not), on its way.
pub(crate) type Finding = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Arc<Hub>, CoreError>> + Send>>;

/// What a hub's pump asks of the registry that holds it.
pub(crate) trait Home: Send + Sync {
    /// Forget `hub` as session `id` (it ended or moved).
    fn forget(&self, id: &str, hub: &Arc<Hub>);
    /// `hub` now serves session `new`, no longer `old`.
    fn rekey(&self, old: &str, new: &str, hub: &Arc<Hub>);
    /// The owner lock of session `id` (a fork's new id).
    fn lock_for(&self, id: &str) -> Result<OwnerLock, LockError>;
    /// Load session `id` again, wherever it is now served.
    fn find(self: Arc<Self>, id: String) -> Finding;
}

impl Hub {
    /// A hub for `loaded`, and the receiving end of its control channel.
    pub(crate) fn new(loaded: &Loaded) -> (Arc<Hub>, mpsc::Receiver<Control>) {
        let (control_tx, control_rx) = mpsc::channel(64);
        let hub = Arc::new(Hub {
            id: Mutex::new(loaded.id.clone()),
            agent: loaded.agent.clone(),
            control: control_tx,
            closing: AtomicBool::new(false),
            moving: AtomicBool::new(false),
            closed: CancellationToken::new(),
            mirror: matches!(loaded.feed, Feed::Mirror { .. }),
            successor: Mutex::new(None),
            running: watch::channel(false).0,
        });
        (hub, control_rx)
    }
}
