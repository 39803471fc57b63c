//! The conformance kit: scenarios as data (`compat/scenarios/<dialect>/*.json`),
//! a driver that plays them against any program speaking the native pi
//! dialect or the JSON-RPC dialect, normalisation of what varies, matching
//! rules, schema validation of every line, and a report.

pub mod coverage;
pub mod driver;
pub mod expect;
pub mod junit;
pub mod normalize;
pub mod pattern;
pub mod run;
pub mod sandbox;
pub mod scenario;
pub mod tolerance;

pub use run::{Dialect, Options, Outcome, Profile, run_all};
pub use scenario::{Scenario, load_dir, load_file};

#[cfg(test)]
mod tests;
