//! The sessions of one `pi serve` process, by session id: one agent actor
//! (and its hub) per loaded session, shared by every connection.
//!
//! A session is loaded when a connection first names it (from its file in
//! the session directory) or creates it, and unloaded by its hub once idle.
//! Loading takes the session's owner lock, so two workers sharing a session
//! directory never both serve one session.
//!
//! In a cluster ([`crate::cluster`]) the owner is whoever holds the
//! session's lease: a session leased by another worker is served here
//! through a mirror of it (so any worker serves any session), and one whose
//! owner is gone is taken over once its lease expires.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pi_core::agent::{AgentConfig, SessionStart};
use pi_core::error::{CoreError, ErrorKind};

use crate::cluster::Cluster;
use crate::cluster::lease::Lease;
use crate::hub::{ConnId, Feed, Finding, Home, Hub, HubOptions, Loaded};
use crate::lock::{OwnerLock, valid_session_id};
use crate::ownership::{Ownership, lock_error};
use crate::replay::ReplayBuffer;

/// How the registry loads sessions.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Where every session of this server lives (shared by the workers).
    pub session_dir: PathBuf,
    /// This worker's name, written into the lock files it holds.
    pub owner: String,
    /// Most sessions loaded at once.
    pub max_sessions: usize,
    pub hub: HubOptions,
    /// `--cluster`: sessions are owned through leases on the bus.
    pub cluster: Option<Cluster>,
}

/// The loaded sessions.
pub struct Registry {
    template: AgentConfig,
    options: RegistryOptions,
    hubs: Mutex<HashMap<String, Arc<Hub>>>,
    next_conn: AtomicU64,
    /// The worker is stopping: it takes no session any more.
    pub(crate) draining: AtomicBool,
    /// Gives unloaded sessions' memory back to the system.
    trim: crate::trim::Trimmer,
}

/// What taking a session gives: its lock or lease, and in a cluster where
/// its events stand.
pub(crate) struct Taken {
    pub ownership: Ownership,
    pub buffer: ReplayBuffer,
    /// Taken over from a worker lost during a run: that worker's name.
    pub interrupted: Option<String>,
}

impl Registry {
    /// `template`: the agent configuration every session starts from (its
    /// session directory is replaced by `options.session_dir`).
    pub fn new(mut template: AgentConfig, options: RegistryOptions) -> Arc<Registry> {
        template.session_dir = options.session_dir.clone();
        // Sessions stay in the server's directory whatever cwd `initialize` picks.
        template.session_dir_explicit = true;
        Arc::new(Registry {
            template,
            options,
            hubs: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
            draining: AtomicBool::new(false),
            trim: Default::default(),
        })
    }

    pub(crate) fn hubs(&self) -> MutexGuard<'_, HashMap<String, Arc<Hub>>> {
        self.hubs.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn session_dir(&self) -> &Path {
        &self.options.session_dir
    }

    /// A fresh connection number.
    pub fn next_conn_id(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Number of loaded sessions.
    pub fn len(&self) -> usize {
        self.hubs().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every loaded session.
    pub fn list(&self) -> Vec<Arc<Hub>> {
        self.hubs().values().cloned().collect()
    }

    /// The loaded session `id` (or its mirror), if it is loaded and not unloading.
    pub fn get(&self, id: &str) -> Option<Arc<Hub>> {
        self.hubs().get(id).filter(|h| !h.is_closing()).cloned()
    }

    /// Take the owner lock of session `id` (a fork's new id: local only).
    pub(crate) fn lock_for(&self, id: &str) -> Result<OwnerLock, crate::lock::LockError> {
        OwnerLock::acquire(&self.options.session_dir, id, &self.options.owner)
    }

    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    pub fn cluster(&self) -> Option<&Cluster> {
        self.options.cluster.as_ref()
    }

    /// True once the worker drains (it takes no session any more).
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Become the owner of session `id`: its lock, or in a cluster its lease
    /// (with where the session's events stand; `generated`: an id this worker
    /// just made, which no event can name yet).
    async fn take(&self, id: &str, generated: bool) -> Result<Taken, CoreError> {
        let capacity = self.options.hub.replay_events;
        match &self.options.cluster {
            None => {
                let ownership = self.lock_for(id).map(Ownership::Local).map_err(lock_error)?;
                Ok(Taken { ownership, buffer: ReplayBuffer::new(capacity), interrupted: None })
            }
            Some(cluster) => {
                if self.is_draining() {
                    return Err(crate::cluster::place::draining());
                }
                // Only a new session is taken this way: leased elsewhere, it exists.
                let lease = Lease::acquire(cluster, &self.options.session_dir, id).await.map_err(|e| match e {
                    crate::cluster::lease::LeaseError::OwnedElsewhere { .. } => {
                        CoreError::invalid("sessionId", format!("Session already exists with id '{id}'"))
                    }
                    other => crate::ownership::lease_error(other),
                })?;
                crate::cluster::place::taken(cluster, id, lease, capacity, generated).await
            }
        }
    }

    /// A new session, with `id` when the client chose one (it must not exist).
    pub async fn create(self: &Arc<Self>, id: Option<String>, parent: Option<String>) -> Result<Arc<Hub>, CoreError> {
        self.create_with(id, parent, |_| {}).await
    }

    /// [`Registry::create`], the session's configuration adjusted by
    /// `configure` (an ACP `session/new`: its cwd, MCP servers, client setup).
    pub async fn create_with(
        self: &Arc<Self>,
        id: Option<String>,
        parent: Option<String>,
        configure: impl FnOnce(&mut AgentConfig),
    ) -> Result<Arc<Hub>, CoreError> {
        let generated = id.is_none();
        let id = match id {
            Some(id) if !valid_session_id(&id) => return Err(invalid_id(&id)),
            Some(id) => id,
            None => pi_core::session::new_session_id(),
        };
        let exists = || CoreError::invalid("sessionId", format!("Session already exists with id '{id}'"));
        // A client's id may name a session on disk; a fresh UUIDv7 names
        // none, so its creation reads no directory (two scans of the whole
        // session directory a session, one of them under the registry's lock).
        let on_disk = |id: &str| !generated && self.file_of(id).is_some();
        if self.hubs().contains_key(&id) || on_disk(&id) {
            return Err(exists());
        }
        let taken = self.take(&id, generated).await?;
        let mut hubs = self.hubs();
        if hubs.contains_key(&id) || on_disk(&id) {
            return Err(exists());
        }
        let start = SessionStart::Fresh { id: String::new(), parent_session: parent };
        self.load(&mut hubs, id.clone(), None, start, configure, taken)
    }

    /// The session `id`: loaded, or loaded from its file. A session being
    /// unloaded is waited for, then loaded again.
    pub async fn open(self: &Arc<Self>, id: &str) -> Result<Arc<Hub>, CoreError> {
        if !valid_session_id(id) {
            return Err(invalid_id(id));
        }
        loop {
            let closing = match self.hubs().get(id) {
                Some(hub) if !hub.is_closing() => return Ok(hub.clone()),
                Some(hub) => Some(hub.clone()),
                None => None,
            };
            if let Some(closing) = closing {
                closing.wait_closed().await;
                continue;
            }
            if self.options.cluster.is_some() {
                return crate::cluster::place::open(self, id).await;
            }
            if self.file_of(id).is_none() {
                return Err(CoreError::not_found(format!("No session found with id '{id}'")));
            }
            let taken = self.take(id, false).await?;
            let mut hubs = self.hubs();
            if hubs.contains_key(id) {
                // Loaded meanwhile by another connection: ours lets go.
                drop(taken);
                continue;
            }
            return self.load_file(&mut hubs, id, taken);
        }
    }

    /// Load session `id` from its file, now that it is ours.
    pub(crate) fn load_file(
        self: &Arc<Self>,
        hubs: &mut HashMap<String, Arc<Hub>>,
        id: &str,
        taken: Taken,
    ) -> Result<Arc<Hub>, CoreError> {
        // Read after the ownership is ours: the previous owner's last writes are in.
        let Some(path) = self.file_of(id) else {
            return Err(CoreError::not_found(format!("No session found with id '{id}'")));
        };
        self.load(hubs, id.to_string(), Some(path.clone()), SessionStart::Open(path), |_| {}, taken)
    }

    /// Register a mirror's hub for session `id` (or the hub loaded meanwhile).
    pub(crate) fn adopt(self: &Arc<Self>, id: &str, loaded: Loaded) -> Result<Arc<Hub>, Box<Loaded>> {
        let mut hubs = self.hubs();
        if hubs.get(id).is_some_and(|h| !h.is_closing()) {
            return Err(Box::new(loaded));
        }
        let hub = crate::pump::start(self.clone(), loaded, self.options.hub.clone());
        hubs.insert(id.to_string(), hub.clone());
        Ok(hub)
    }

    /// The session `id` if it exists, else a new one with that id (the
    /// `?session=` of a connection).
    pub async fn open_or_create(self: &Arc<Self>, id: &str) -> Result<Arc<Hub>, CoreError> {
        match self.open(id).await {
            Err(e) if e.kind == ErrorKind::NotFound => match self.create(Some(id.to_string()), None).await {
                // Created meanwhile by another connection.
                Err(e) if e.kind == ErrorKind::InvalidParams => self.open(id).await,
                other => other,
            },
            other => other,
        }
    }

    /// The session id a reference names: a loaded session's id, a path in
    /// the session directory, or a full or unique partial id (in a cluster
    /// also the id of a session another worker serves).
    pub async fn resolve(&self, reference: &str) -> Result<String, CoreError> {
        if self.hubs().contains_key(reference) || (valid_session_id(reference) && self.file_of(reference).is_some()) {
            return Ok(reference.to_string());
        }
        if let Some(cluster) = &self.options.cluster
            && valid_session_id(reference)
            && Lease::holder(cluster, reference).await.ok().flatten().is_some()
        {
            return Ok(reference.to_string());
        }
        if reference.contains('/') || reference.ends_with(".jsonl") {
            return self.id_of_path(Path::new(reference));
        }
        let loaded: Vec<String> = self.hubs().keys().filter(|id| id.starts_with(reference)).cloned().collect();
        let dirs = [self.options.session_dir.clone()];
        match pi_core::session::resolve_session(reference, &self.options.session_dir, &dirs) {
            Ok(path) => self.id_of_path(&path),
            Err(_) if loaded.len() == 1 => Ok(loaded[0].clone()),
            Err(e) => Err(CoreError::from(e)),
        }
    }

    /// The id in the header of a session file, which must be in the session directory.
    fn id_of_path(&self, path: &Path) -> Result<String, CoreError> {
        let path = if path.is_absolute() { path.to_path_buf() } else { self.options.session_dir.join(path) };
        let outside = || {
            CoreError::invalid(
                "sessionPath",
                format!("{}: pi serve opens only sessions of its session directory", path.display()),
            )
        };
        let dir = std::fs::canonicalize(&self.options.session_dir).map_err(|_| outside())?;
        let parent = path.parent().and_then(|p| std::fs::canonicalize(p).ok()).ok_or_else(outside)?;
        if parent != dir {
            return Err(outside());
        }
        match pi_core::session::read_session_header(&path) {
            Some(header) if valid_session_id(&header.id) => Ok(header.id),
            _ => Err(CoreError::not_found(format!("No session file at {}", path.display()))),
        }
    }

    /// The file of session `id` in the session directory (`<timestamp>_<id>.jsonl`).
    pub(crate) fn file_of(&self, id: &str) -> Option<PathBuf> {
        let suffix = format!("_{id}.jsonl");
        let read = std::fs::read_dir(&self.options.session_dir).ok()?;
        read.flatten().map(|e| e.path()).find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(&suffix)))
    }

    /// Lock, spawn the actor, start its hub, register it.
    fn load(
        self: &Arc<Self>,
        hubs: &mut HashMap<String, Arc<Hub>>,
        id: String,
        file: Option<PathBuf>,
        start: SessionStart,
        configure: impl FnOnce(&mut AgentConfig),
        taken: Taken,
    ) -> Result<Arc<Hub>, CoreError> {
        if hubs.len() >= self.options.max_sessions {
            return Err(CoreError::busy(format!(
                "session limit reached: {} sessions are loaded (--max-sessions)",
                self.options.max_sessions
            ))
            .with_retryable(true));
        }
        let Taken { ownership, buffer, interrupted } = taken;
        let mut config = self.template.clone();
        config.session_fence = ownership.fence();
        config.session = match start {
            SessionStart::Fresh { parent_session, .. } => SessionStart::Fresh { id: id.clone(), parent_session },
            other => other,
        };
        config.session_name = None;
        configure(&mut config);
        let (agent, outputs) = pi_core::agent::spawn(config)?;
        let lease = match &ownership {
            Ownership::Leased(lease) => Some(lease.watch()),
            Ownership::Local(_) => None,
        };
        let loaded = Loaded {
            id: id.clone(),
            session_file: file.map(|p| p.display().to_string()),
            agent,
            feed: Feed::Actor { outputs, lease },
            ownership: Some(ownership),
            buffer,
            log: self.options.cluster.as_ref().map(|c| c.events.clone()),
            interrupted,
        };
        let hub = crate::pump::start(self.clone(), loaded, self.options.hub.clone());
        hubs.insert(id.clone(), hub.clone());
        tracing::debug!("session {id}: loaded ({} loaded)", hubs.len());
        Ok(hub)
    }

    /// The hub of session `old` now serves session `new`.
    pub(crate) fn rekey(&self, old: &str, new: &str, hub: &Arc<Hub>) {
        let mut hubs = self.hubs();
        if hubs.get(old).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            hubs.remove(old);
        }
        hubs.insert(new.to_string(), hub.clone());
    }

    /// Session `id`'s lease was lost: its hub looks at it (every hub, when
    /// none is filed under `id`: a fork under `--cluster` keeps the lease of
    /// the id it was forked from).
    pub(crate) fn look_at_lease(&self, id: &str) {
        let hubs = self.hubs();
        match hubs.get(id) {
            Some(hub) => hub.look_at_lease(),
            None => hubs.values().for_each(|hub| hub.look_at_lease()),
        }
    }

    /// Forget `hub` (its session ended); its memory goes back to the system soon after.
    pub(crate) fn remove(&self, id: &str, hub: &Arc<Hub>) {
        let mut hubs = self.hubs();
        if hubs.get(id).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            hubs.remove(id);
            drop(hubs);
            self.trim.request();
        }
    }
}

impl Home for Registry {
    fn forget(&self, id: &str, hub: &Arc<Hub>) {
        self.remove(id, hub);
    }

    fn rekey(&self, old: &str, new: &str, hub: &Arc<Hub>) {
        Registry::rekey(self, old, new, hub);
    }

    fn lock_for(&self, id: &str) -> Result<OwnerLock, crate::lock::LockError> {
        Registry::lock_for(self, id)
    }

    fn find(self: Arc<Self>, id: String) -> Finding {
        Box::pin(async move { self.open(&id).await })
    }
}

impl Registry {
    /// End the loaded session `id` (abort, flush) and wait until it has
    /// stopped; false when it is not loaded. Its file stays: `open` loads it again.
    pub async fn close(&self, id: &str) -> bool {
        let Some(hub) = self.hubs().get(id).cloned() else { return false };
        hub.shut_down().await;
        hub.wait_closed().await;
        true
    }

    /// Drain (a cluster worker stopping): take no session any more, let
    /// each session's running turn finish (for at most `wait`, then it is
    /// aborted), and hand it over: flushed, its events stored, its lease
    /// released, its mirrors on other workers told (they find it again, and
    /// one of those workers takes it), its clients here closed with 1012.
    /// Then this worker's mirrors of other workers' sessions let go.
    pub async fn drain(self: &Arc<Self>, wait: Duration) {
        self.draining.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + wait;
        let owned: Vec<Arc<Hub>> = self.list().into_iter().filter(|h| !h.is_mirror()).collect();
        let started = std::time::Instant::now();
        let count = owned.len();
        let handovers: Vec<_> = owned
            .into_iter()
            .map(|hub| {
                tokio::spawn(async move {
                    let mut running = hub.running();
                    if tokio::time::timeout_at(deadline, running.wait_for(|r| !*r)).await.is_err() {
                        tracing::warn!("session {}: its turn did not end within the drain time: aborted", hub.id());
                    }
                    hub.shut_down().await;
                    hub.wait_closed().await;
                })
            })
            .collect();
        for handover in handovers {
            let _ = handover.await;
        }
        tracing::info!("pi serve: {count} sessions handed over in {:?}", started.elapsed());
        self.shut_down().await;
    }

    /// End every session (abort, flush) and wait until they have stopped.
    pub async fn shut_down(&self) {
        let hubs = self.list();
        for hub in &hubs {
            hub.shut_down().await;
        }
        for hub in &hubs {
            hub.wait_closed().await;
        }
    }
}

fn invalid_id(id: &str) -> CoreError {
    CoreError::invalid("sessionId", format!("not a valid session id: '{id}' (1 to 128 of A-Z a-z 0-9 . _ -)"))
}
