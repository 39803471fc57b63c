//! End-to-end tests: spawn the `pi` binary against the fake model server
//! (127.0.0.1:0) or the offline faux model, and check what it writes.

// Skipped tests say so on stderr.
#![allow(clippy::print_stderr)]

mod acp_bridge;
mod acp_clients;
mod acp_sessions;
mod anthropic_federation;
mod aws_credentials;
mod big_replies;
mod cache_warming;
mod cli_options;
mod client_tools;
mod clients;
mod codemode_models;
mod codex_proxy;
mod dialects_agree;
mod examples_side_by_side;
mod extension_agent_core;
mod extension_api;
mod extension_host;
mod extension_host_install;
mod extension_mcp;
mod extension_project_trust;
mod extension_provider_events;
mod extension_provider_refresh;
mod extension_provider_store_lock;
mod extension_providers;
mod extension_sdk_clients;
mod extension_sdk_models;
mod extension_sdk_services;
mod extension_sdk_session;
mod extension_sdk_session_files;
mod extensions;
mod extensions_jsonrpc;
mod framing;
mod harness;
mod jsonrpc_basic;
mod list_models;
mod llama_cpp;
mod mcp;
mod mcp_sdks;
mod native_basic;
mod native_compaction;
mod native_config;
mod native_input;
mod native_run;
mod native_sessions;
mod native_state;
mod native_tools;
mod npm_registry;
mod oauth;
mod oauth_vs_pi;
mod packages;
mod pi_parity;
mod providers;
mod reliability;
mod rpc_client;
mod serve;
mod serve_cluster;
mod serve_cluster_auth;
mod serve_cluster_lease;
mod serve_faults;
mod serve_nginx;
mod templates;
mod wire_apis;
