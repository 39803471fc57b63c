//! pi-session: pi's JSONL sessions (store, tree, context, migration) and the HTML export.
//!
//! It keeps pi-core's module names (`crate::message`, `crate::tools`, …): the
//! modules of the layers below are imported under the same names, so a path
//! reads the same in every crate of the core.

pub(crate) use pi_types::{error, message, op, system_message};

pub mod export_html;
pub mod session;
