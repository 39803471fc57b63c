//! `pi serve`: the agent flags of `pi`, plus where to listen and the
//! server's limits; builds the session registry and runs the WebSocket
//! server until SIGTERM or SIGINT.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU8;
use std::time::Duration;

use clap::Parser;
use pi_serve::cluster::events::Retention;
use pi_serve::cluster::{Cluster, ClusterOptions};
use pi_serve::hub::HubOptions;
use pi_serve::listener::ListenLimits;
use pi_serve::registry::{Registry, RegistryOptions};
use pi_serve::server::{Listen, ServeOptions};

use crate::args::Args;

/// pi serve: many sessions in one process over WebSocket (`/rpc`), with
/// `/healthz` and `/readyz`. Plain HTTP: TLS belongs to the load balancer.
#[derive(Debug, Parser)]
#[command(
    name = "pi serve",
    bin_name = "pi serve",
    about = "Many sessions in one process over WebSocket (/rpc), with /healthz and /readyz; plain HTTP (TLS belongs to the load balancer).",
    long_about = None,
    disable_version_flag = true
)]
pub struct ServeArgs {
    /// `HOST:PORT` (port 0 picks a free port; the first stdout line names it) or `unix:PATH`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: String,

    /// File holding the bearer token clients must present (else PI_SERVE_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// An Origin browser clients may connect from (repeatable; none: browsers are refused).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,

    /// Most open connections, counted from the accept on (WebSockets and connections not yet upgraded).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_connections: usize,

    /// The listen backlog (capped by the kernel's net.core.somaxconn).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub backlog: u32,

    /// Seconds a client may take to send the headers of its request.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub header_timeout: f64,

    /// Seconds from accepting a connection to its WebSocket (or its plain HTTP answer).
    #[arg(long, value_name = "SECONDS", default_value_t = 15.0)]
    pub handshake_timeout: f64,

    /// Most sessions loaded at once.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_sessions: usize,

    /// Largest message accepted, in bytes (larger: the connection is closed with 1009).
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,

    /// Events of a session kept for clients that re-attach with afterSeq.
    #[arg(long, value_name = "N", default_value_t = 2048)]
    pub replay_events: usize,

    /// Messages queued for a connection before it counts as not reading (at least replay-events + 256).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub queue_messages: usize,

    /// Milliseconds a connection holds a live event before writing it, so the
    /// events that come meanwhile share one write (fewer system calls, that
    /// much more latency; replies are never held). Default 0: written at once.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub write_delay_ms: u64,

    /// Seconds a session with no connection and nothing running stays loaded.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub idle_unload: f64,

    /// This worker's name in the lock files and leases of the sessions it owns (default: host:pid).
    #[arg(long, value_name = "NAME")]
    pub worker_name: Option<String>,

    /// Join a cluster on NATS JetStream: `nats://HOST:PORT` (comma-separated or repeated for several servers).
    #[arg(long = "cluster", value_name = "URL", value_delimiter = ',')]
    pub cluster: Vec<String>,

    /// A NATS credentials file (`.creds`) for --cluster.
    #[arg(long, value_name = "FILE")]
    pub cluster_credentials: Option<PathBuf>,

    /// Seconds a session's lease outlives its owner's last renewal (--cluster; the bucket keeps the first worker's value).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub lease_ttl: f64,

    /// On SIGTERM (--cluster): seconds running turns may take to finish before the sessions are handed over
    /// (set the orchestrator's grace period a few seconds above it); 0: no drain.
    #[arg(long, value_name = "SECONDS", default_value_t = 25.0)]
    pub drain_seconds: f64,

    /// Events of each session the cluster's event stream keeps for replay (--cluster; set by the first worker).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub event_retention: i64,

    /// Seconds the cluster's event stream keeps an event (--cluster; set by the first worker).
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400.0)]
    pub event_max_age: f64,

    #[command(flatten)]
    pub agent: Args,
}

fn token(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    let token = match &args.token_file {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", file.display()))?
                .trim()
                .to_string(),
        ),
        None => std::env::var("PI_SERVE_TOKEN").ok().map(|t| t.trim().to_string()),
    };
    match token {
        Some(t) if t.is_empty() => anyhow::bail!("the token is empty (--token-file or PI_SERVE_TOKEN)"),
        other => Ok(other),
    }
}

fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

fn worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), std::process::id())
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    args.agent.check().map_err(anyhow::Error::msg)?;
    if !args.agent.messages.is_empty() {
        anyhow::bail!("pi serve takes no messages");
    }
    let listen = Listen::parse(&args.listen).map_err(anyhow::Error::msg)?;
    let mut template = crate::setup::build_agent_config(&args.agent)?;
    // As RPC mode: the catalogs refreshed in the background, once at the
    // start and for each session whose extensions need more.
    let catalogs = crate::model_catalogs::background_refreshes(&args.agent);
    template.catalog_refreshes = catalogs.clone();
    let owner = args.worker_name.clone().unwrap_or_else(worker_name);
    let cluster = match args.cluster.is_empty() {
        true => None,
        false => Some(
            Cluster::connect(ClusterOptions {
                urls: args.cluster.clone(),
                credentials: args.cluster_credentials.clone(),
                lease_ttl: seconds("--lease-ttl", args.lease_ttl)?,
                worker: owner.clone(),
                retention: Retention {
                    per_session: args.event_retention.max(1),
                    max_age: seconds("--event-max-age", args.event_max_age)?,
                },
            })
            .await
            .map_err(anyhow::Error::msg)?,
        ),
    };
    let options = RegistryOptions {
        session_dir: template.session_dir.clone(),
        owner,
        max_sessions: args.max_sessions,
        hub: HubOptions { replay_events: args.replay_events, idle_unload: seconds("--idle-unload", args.idle_unload)? },
        cluster,
    };
    tracing::info!("pi serve: sessions in {}", options.session_dir.display());
    let registry = Registry::new(template, options);
    let serve = ServeOptions {
        listen,
        token: token(&args)?,
        allowed_origins: args.allow_origins.clone(),
        max_connections: args.max_connections,
        max_message_bytes: args.max_message_bytes,
        queue_messages: args.queue_messages.max(args.replay_events + 256),
        write_delay: std::time::Duration::from_millis(args.write_delay_ms),
        limits: ListenLimits {
            backlog: args.backlog.max(1),
            header_timeout: seconds("--header-timeout", args.header_timeout)?,
            handshake_timeout: seconds("--handshake-timeout", args.handshake_timeout)?,
        },
        drain: seconds("--drain-seconds", args.drain_seconds)?,
    };
    // As RPC mode: the llama.cpp server's models are listed in the background.
    if !crate::offline(&args.agent) && !args.agent.no_extensions {
        tokio::spawn(crate::list_llama_models());
    }
    if let Some(catalogs) = &catalogs {
        catalogs.start();
    }
    let stop = crate::dialect::termination(Arc::new(AtomicU8::new(0)));
    pi_serve::server::run(registry, serve, |address| crate::say(&address), stop).await?;
    Ok(())
}
