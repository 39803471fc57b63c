//! pi-compat: the conformance kit and the fake model server (127.0.0.1 only).

pub mod fake_server;
