//! End-to-end tests: spawn the `pi` binary against the fake model server.
