//! The JSON Schemas of the dialects (ACP's from the ACP project's types) and of session files: generated from the
//! Rust wire types ([`generate`]), committed under `schemas/`, embedded here
//! for validation ([`check`]).

pub mod acp;
mod error_object;
pub mod generate;
mod normalize;

pub use error_object::CODE_TABLE;
pub use generate::{SchemaFile, generate};

pub mod check;
pub use check::{Schemas, Strictness};
