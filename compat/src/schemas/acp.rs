//! The ACP schema file: what an ACP agent sends, described by the ACP
//! project's own Rust types (`agent-client-protocol-schema`, through
//! schemars): params of its requests and notifications to the client, the
//! results of the client's requests, and the error object, by method.

use pi_acp_agent::schema::v1 as acp;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::generate::SchemaFile;

fn sub<T: JsonSchema>(g: &mut schemars::SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

/// `schemas/acp/messages.schema.json`.
pub fn messages() -> SchemaFile {
    let mut g = SchemaSettings::draft2020_12().for_serialize().into_generator();
    let params: Map<String, Value> = [
        ("session/update", sub::<acp::SessionNotification>(&mut g)),
        ("session/request_permission", sub::<acp::RequestPermissionRequest>(&mut g)),
        ("fs/read_text_file", sub::<acp::ReadTextFileRequest>(&mut g)),
        ("fs/write_text_file", sub::<acp::WriteTextFileRequest>(&mut g)),
        ("terminal/create", sub::<acp::CreateTerminalRequest>(&mut g)),
        ("terminal/output", sub::<acp::TerminalOutputRequest>(&mut g)),
        ("terminal/wait_for_exit", sub::<acp::WaitForTerminalExitRequest>(&mut g)),
        ("terminal/kill", sub::<acp::KillTerminalRequest>(&mut g)),
        ("terminal/release", sub::<acp::ReleaseTerminalRequest>(&mut g)),
        ("$/cancel_request", sub::<acp::CancelRequestNotification>(&mut g)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let results: Map<String, Value> = [
        ("initialize", sub::<acp::InitializeResponse>(&mut g)),
        ("authenticate", sub::<acp::AuthenticateResponse>(&mut g)),
        ("session/new", sub::<acp::NewSessionResponse>(&mut g)),
        ("session/load", sub::<acp::LoadSessionResponse>(&mut g)),
        ("session/resume", sub::<acp::ResumeSessionResponse>(&mut g)),
        ("session/fork", sub::<acp::ForkSessionResponse>(&mut g)),
        ("session/delete", sub::<acp::DeleteSessionResponse>(&mut g)),
        ("session/list", sub::<acp::ListSessionsResponse>(&mut g)),
        ("session/prompt", sub::<acp::PromptResponse>(&mut g)),
        ("session/set_mode", sub::<acp::SetSessionModeResponse>(&mut g)),
        ("session/set_config_option", sub::<acp::SetSessionConfigOptionResponse>(&mut g)),
        ("session/close", sub::<acp::CloseSessionResponse>(&mut g)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let error = sub::<acp::Error>(&mut g);
    let defs: Map<String, Value> = g.take_definitions(true).into_iter().collect();
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://pi-rpc.invalid/schemas/acp/messages.schema.json",
        "title": "ACP agent messages",
        "description": "What an ACP agent sends (protocol version 1), from agent-client-protocol-schema: `x-params` by method of its requests and notifications, `x-results` by method of the client's requests, `x-error` the error object.",
        "x-params": params,
        "x-results": results,
        "x-error": error,
        "$defs": defs,
    });
    SchemaFile { path: "acp/messages.schema.json", schema }
}
