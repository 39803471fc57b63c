//! What the core asks of its client ([`pi_types::client`]), plus the tools that
//! run through it: a client's own tools and `bash` in a client terminal.

pub use pi_types::client::*;

pub mod client_tool;
pub mod terminal;

#[cfg(test)]
mod tests;
