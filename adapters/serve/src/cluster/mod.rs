//! `pi serve --cluster`: the workers share NATS JetStream (Debian's
//! `nats-server`, the `async-nats` crate).
//!
//! * [`lease`]: one owner per session, a lease in a KV bucket with a TTL,
//!   renewed by its owner, with a fencing epoch (the revision that created it);
//!   `lease_write`: a lease's compare-and-set write, a plain request.
//! * [`keeper`]: the thread (and bus connection) the renewals run on.
//! * [`renew`]: the renewals of every lease of the worker, in one loop.
//! * [`fence`]: the epoch on shared storage, checked before every write of
//!   the session file; [`claims`]: the threads that record new epochs
//!   (the keeper's runtime's blocking pool, ended when idle);
//!   `compact_id`: a lease's session id, inline when it is a UUID;
//!   [`losses`]: the leases lost, told to their sessions' hubs.
//! * [`events`]: every session's events on a JetStream stream, replayed by
//!   any worker from `afterSeq`.
//! * [`wire`]: what workers say to each other, and on which subjects.
//! * [`mirror`]: a worker's hub for a session owned by another worker
//!   (commands relayed to the owner, its events relayed back).
//! * [`peer`]: the owner's side of those mirrors.
//! * [`place`]: where a session is served: here, or mirrored from its owner.
//!
//! Without `--cluster` none of this runs: one process behaves as before
//! (the OS file lock of [`crate::lock`] keeps one owner per session file).

pub mod claims;
mod compact_id;
pub mod events;
pub mod fence;
mod first_connection;
pub mod keeper;
pub mod lease;
mod lease_state;
mod lease_write;
pub mod losses;
pub mod mirror;
pub mod peer;
pub mod place;
pub mod renew;
pub mod wire;

use std::path::PathBuf;
use std::time::Duration;

/// How a worker joins the cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// `nats://HOST:PORT` URLs (any one will do; the client fails over).
    pub urls: Vec<String>,
    /// A NATS credentials file (`.creds`: a user JWT and its NKey seed).
    pub credentials: Option<PathBuf>,
    /// How long a lease outlives its owner's last renewal.
    pub lease_ttl: Duration,
    /// This worker's name (in leases: who owns a session).
    pub worker: String,
    /// How long the event stream keeps events (when this worker creates it).
    pub retention: events::Retention,
}

/// The read buffer of the worker's bus connection (async-nats' default).
const READ_BUFFER: u16 = 65535;

/// The KV bucket of the leases.
pub const LEASE_BUCKET: &str = "pi_leases";

/// A worker's connection to the cluster.
#[derive(Clone)]
pub struct Cluster {
    pub client: async_nats::Client,
    pub jetstream: async_nats::jetstream::Context,
    /// The lease bucket through this connection (who holds a lease, and
    /// releases; new leases are created through the keeper's connection).
    pub leases: std::sync::Arc<async_nats::jetstream::kv::Store>,
    pub events: std::sync::Arc<events::EventLog>,
    pub keeper: keeper::Keeper,
    /// The leases this worker lost (its renewals and its event stream tell
    /// them; the registry's hubs hear of them).
    pub losses: std::sync::Arc<losses::Losses>,
    /// Where new leases' epochs are claimed.
    pub claims: claims::Claims,
    pub options: ClusterOptions,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("urls", &self.options.urls).field("worker", &self.options.worker).finish()
    }
}

impl Cluster {
    /// Connect (retrying in the background while the server is away) and
    /// open the lease bucket (created on first use).
    ///
    /// The joining runs in a future of its own on the heap: the connections',
    /// the stream's and the bucket's futures are large, and in the caller's
    /// future (or on the stack of the thread that polls it, the main thread's
    /// for `pi serve`) their room would stay resident as long as the worker
    /// runs; on the heap it is freed once the worker has joined (and given
    /// back by the allocator's next trim).
    pub async fn connect(options: ClusterOptions) -> Result<Cluster, String> {
        Box::pin(Cluster::join(options)).await
    }

    async fn join(options: ClusterOptions) -> Result<Cluster, String> {
        let client = connect_client(&options, "", READ_BUFFER).await?;
        let jetstream = async_nats::jetstream::new(client.clone());
        let leases = match jetstream.get_key_value(LEASE_BUCKET).await {
            Ok(store) => store,
            Err(_) => {
                create_lease_bucket(&jetstream, options.lease_ttl).await?;
                jetstream
                    .get_key_value(LEASE_BUCKET)
                    .await
                    .map_err(|e| format!("--cluster: cannot open the lease bucket {LEASE_BUCKET}: {e}"))?
            }
        };
        let leases = std::sync::Arc::new(leases);
        let losses = std::sync::Arc::new(losses::Losses::default());
        let events = events::open(jetstream.clone(), options.retention, client.max_payload(), losses.clone()).await?;
        let keeper = keeper::Keeper::start(&options, leases.clone(), losses.clone()).await?;
        let claims = keeper.claims.clone();
        tracing::info!("pi serve: in the cluster at {} as {}", options.urls.join(","), options.worker);
        Ok(Cluster { client, jetstream, leases, events, keeper, losses, claims, options })
    }
}

/// A connection to the bus (retrying in the background while the server is
/// away), named after the worker and `role`, reading into a buffer of
/// `read_buffer` bytes (a message's payload shares that buffer until it is
/// dropped, so each refill while answers are alive takes a new one).
pub(crate) async fn connect_client(
    options: &ClusterOptions,
    role: &str,
    read_buffer: u16,
) -> Result<async_nats::Client, String> {
    let label = if role.is_empty() { String::new() } else { format!(" ({role})") };
    let first = first_connection::FirstConnection::new();
    let observer = first.clone();
    let mut connect = async_nats::ConnectOptions::new()
        .name(format!("pi serve {}{label}", options.worker))
        .event_callback(move |event| {
            let label = label.clone();
            observer.observe(&event);
            async move { tracing::info!("cluster bus{label}: {event}") }
        })
        .read_buffer_capacity(read_buffer)
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5));
    if let Some(path) = &options.credentials {
        connect = connect
            .credentials_file(path)
            .await
            .map_err(|e| format!("--cluster-credentials {}: {e}", path.display()))?;
    }
    let urls = options.urls.join(",");
    // Each URL a server of its own (the client's `&str` form takes one URL, not a list).
    let client = connect.connect(options.urls.as_slice()).await.map_err(|e| format!("--cluster {urls}: {e}"))?;
    // The client retries in the background; at start, credentials the
    // server refuses stop the worker rather than being retried forever.
    match first.outcome(Duration::from_secs(30)).await {
        Some(Ok(())) => Ok(client),
        Some(Err(refusal)) => Err(match &options.credentials {
            Some(path) => {
                format!("--cluster {urls}: the NATS server refused --cluster-credentials {}: {refusal}", path.display())
            }
            None => format!(
                "--cluster {urls}: the NATS server refused the connection ({refusal}); does it need --cluster-credentials?"
            ),
        }),
        None => Err(format!("--cluster {urls}: no NATS server answered within 30 s")),
    }
}

/// Create the lease bucket: the stream a KV bucket is made of, created
/// directly (the client's `create_key_value` first asks for the account's
/// limits in a shape Debian's nats-server 2.9 does not answer in).
async fn create_lease_bucket(jetstream: &async_nats::jetstream::Context, ttl: Duration) -> Result<(), String> {
    use async_nats::jetstream::stream;
    let config = stream::Config {
        name: format!("KV_{LEASE_BUCKET}"),
        description: Some("pi serve: which worker owns each session".to_string()),
        subjects: vec![format!("$KV.{LEASE_BUCKET}.>")],
        max_messages_per_subject: 1,
        max_age: ttl,
        discard: stream::DiscardPolicy::New,
        storage: stream::StorageType::File,
        num_replicas: 1,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        duplicate_window: Duration::from_secs(2).min(ttl),
        ..Default::default()
    };
    match jetstream.create_stream(config).await {
        Ok(_) => Ok(()),
        // Created meanwhile by another worker.
        Err(e) if jetstream.get_key_value(LEASE_BUCKET).await.is_ok() => {
            tracing::debug!("lease bucket: {e}");
            Ok(())
        }
        Err(e) => Err(format!(
            "--cluster: cannot create the lease bucket {LEASE_BUCKET}: {e} (is JetStream enabled? nats-server -js)"
        )),
    }
}
