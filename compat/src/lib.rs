//! pi-compat: the conformance kit for both dialects, the JSON Schemas of the
//! wire, and the fake model and OAuth servers (127.0.0.1 only) shared with the
//! e2e tests.

pub use pi_fake_oauth as fake_oauth;
pub use pi_fake_server as fake_server;
pub mod kit;
pub mod schemas;

/// `PI_RPC_ORIGIN_OVERRIDES` for a program under test: pi's catalog server
/// (pi.dev) sent to 127.0.0.1 where nothing listens, so a program that
/// refreshes the model catalogs (RPC mode or `pi serve`, not offline, with a
/// built-in provider's key) is refused at once, stores nothing and never
/// reaches the internet. The e2e harness, the reliability suites and
/// `scripts/test.sh` set it.
pub const NO_CATALOG_SERVER: &str = "https://pi.dev=http://127.0.0.1:9";
