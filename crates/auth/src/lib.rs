//! pi-auth: the subscription logins (OAuth) of pi-ai 1.6.0, shared with pi
//! through `auth.json`, and the refreshes that keep them valid.
//!
//! It keeps pi-core's module names (`crate::config`, `crate::provider`, …):
//! the modules of the layers below are imported under the same names.

pub(crate) use pi_config::config;
pub(crate) use pi_provider::provider;
#[cfg(test)]
pub(crate) use pi_types::message;
pub(crate) use pi_types::model;

pub mod auth;
