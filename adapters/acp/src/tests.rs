//! Unit tests of the ACP mappings: the client's answers read as the core's,
//! requests ACP has no method for, tool kinds and locations, prompts.

use std::path::Path;

use agent_client_protocol_schema::v1 as acp;
use pi_core::client::{ClientReply, ClientRequestKind, ExitStatus, PermissionAnswer};
use serde_json::json;

use crate::requests::{Expect, answer, outbound};
use crate::updates::{locations, prompt_message, tool_kind};

#[test]
fn permission_outcomes_read_as_the_core_answers() {
    let selected = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
    for (id, expected) in [
        ("allow_once", PermissionAnswer::AllowOnce),
        ("allow_always", PermissionAnswer::AllowAlways),
        ("reject_once", PermissionAnswer::RejectOnce),
        ("reject_always", PermissionAnswer::RejectAlways),
        // An option we never offered does not allow anything.
        ("something_else", PermissionAnswer::RejectOnce),
    ] {
        assert_eq!(answer(&Expect::Permission, Ok(selected(id))), Ok(ClientReply::Permission(expected)), "{id}");
    }
    let dismissed = json!({"outcome": {"outcome": "cancelled"}});
    assert_eq!(answer(&Expect::Permission, Ok(dismissed)), Ok(ClientReply::Permission(PermissionAnswer::Cancelled)));
    assert!(answer(&Expect::Permission, Ok(json!({"outcome": 3}))).unwrap_err().contains("not valid"));
}

#[test]
fn file_and_terminal_answers_and_client_errors() {
    assert_eq!(answer(&Expect::Text, Ok(json!({"content": "buffer"}))), Ok(ClientReply::Text("buffer".into())));
    assert_eq!(answer(&Expect::Done, Ok(json!(null))), Ok(ClientReply::Done));
    let exit = answer(&Expect::TerminalExit, Ok(json!({"exitCode": 3, "signal": null})));
    assert_eq!(exit, Ok(ClientReply::TerminalExited(ExitStatus { exit_code: Some(3), signal: None })));
    let error = acp::Error::resource_not_found(None).data(json!("/x/gone.txt"));
    let failed = answer(&Expect::Text, Err(error)).unwrap_err();
    assert!(failed.contains("/x/gone.txt"), "{failed}");
}

#[test]
fn requests_map_to_acp_methods_and_client_tools_have_none() {
    let cwd = Path::new("/work");
    let read = ClientRequestKind::ReadTextFile { path: "/work/a.txt".into() };
    let (method, params, expect) = outbound("s1", &read, cwd).unwrap();
    assert_eq!((method, expect), ("fs/read_text_file", Expect::Text));
    assert_eq!(params, json!({"sessionId": "s1", "path": "/work/a.txt"}));
    let tool = ClientRequestKind::ToolCall { tool_call_id: "c".into(), tool_name: "weather".into(), args: json!({}) };
    assert!(outbound("s1", &tool, cwd).is_none(), "ACP has no client-declared tools");
}

#[test]
fn tool_kinds_and_locations() {
    assert_eq!(tool_kind("read"), acp::ToolKind::Read);
    assert_eq!(tool_kind("edit"), acp::ToolKind::Edit);
    assert_eq!(tool_kind("bash"), acp::ToolKind::Execute);
    assert_eq!(tool_kind("grep"), acp::ToolKind::Search);
    assert_eq!(tool_kind("mcp__kit__echo"), acp::ToolKind::Other);
    let at = locations("read", &json!({"path": "src/a.rs", "offset": 12}), Path::new("/p"));
    assert_eq!(serde_json::to_value(at).unwrap(), json!([{"path": "/p/src/a.rs", "line": 12}]));
    assert!(locations("bash", &json!({"path": "x"}), Path::new("/p")).is_empty());
}

#[test]
fn prompts_keep_text_resources_and_images() {
    let prompt: Vec<acp::ContentBlock> = serde_json::from_value(json!([
        {"type": "text", "text": "look"},
        {"type": "resource", "resource": {"uri": "file:///p/n.md", "text": "notes"}},
        {"type": "resource_link", "uri": "file:///p/o.md", "name": "o.md"},
        {"type": "image", "mimeType": "image/png", "data": "AAAA"}
    ]))
    .unwrap();
    let (text, images) = prompt_message(&prompt);
    assert_eq!(text, "look\n<file path=\"/p/n.md\">\nnotes\n</file>\n@/p/o.md");
    assert_eq!((images.len(), images[0].mime_type.as_str()), (1, "image/png"));
}
