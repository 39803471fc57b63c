//! pi-serve: `pi serve`, many agent sessions in one process over WebSocket.
//!
//! * [`acp`]: ACP connections' sessions, from the registry.
//! * [`registry`]: the loaded sessions by id, shared by every connection.
//! * [`hub`]: one loaded session (its actor, or a mirror of it) and its connections.
//! * [`pump`]: a hub's output: numbered, buffered, published, routed to connections.
//! * [`conn`]: a connection as a hub sees it, and queueing for it without waiting.
//! * [`interrupted`]: what clients hear when a run was lost with its worker.
//! * [`replay`]: sequence numbers and the bounded buffer of a session's latest events.
//! * [`link`]: a connection's side: attach, switch, forward ops, its bounded queue.
//! * [`lock`]: one owner per session across workers (an OS file lock).
//! * [`cluster`]: `--cluster`: leases with fencing on NATS JetStream.
//! * [`ownership`]: a session's lock or lease, held while it is loaded.
//! * [`listener`]: the listening socket, the fd limit, connections before they upgrade.
//! * [`server`]: the HTTP/WebSocket endpoint: `/rpc`, `/healthz`, `/readyz`, auth and limits.
//! * `trim`: unloaded sessions' memory given back to the system, and the
//!   allocator's per-thread caches bounded ([`bound_thread_caches`]).

pub mod acp;
pub mod cluster;
pub mod conn;
pub mod hub;
pub mod interrupted;
pub mod link;
pub mod listener;
pub mod lock;
pub mod ownership;
mod pump;
pub mod registry;
pub mod replay;
pub mod server;
mod socket;
#[cfg(test)]
mod tests;
mod trim;

pub use trim::{TUNABLE as THREAD_CACHE_TUNABLE, bound_thread_caches};
