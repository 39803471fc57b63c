//! pi-compat: the conformance kit for both dialects, the JSON Schemas of the
//! wire, and the fake model and OAuth servers (127.0.0.1 only) shared with the
//! e2e tests.

pub use pi_fake_oauth as fake_oauth;
pub use pi_fake_server as fake_server;
pub mod kit;
pub mod schemas;
