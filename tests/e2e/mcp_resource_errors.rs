//! The resource tools' errors in pi 1.6.0's words, side by side with pi
//! (server-everything, `direct`, so the tools are declared): a server
//! without resources (the servers with resources named), a read without a
//! server or a URI, a cursor without a server, an argument that is not a
//! string.
//!
//! Needs node, the MCP servers and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::harness::Sandbox;
use crate::mcp::{Servers, result, result_text, results, write_mcp};
use crate::mcp_oauth::start;

/// The calls and, for each, `[isError, text]` in one program.
async fn resource_errors(srv: &Servers, reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let mut everything = srv.everything("stdio");
    everything["exposure"] = json!("direct");
    write_mcp(&sb, json!({"everything": everything}));
    let calls = [
        ("c1", "read_mcp_resource", r#"{"server":"nope","uri":"demo://resource/static/document/1"}"#),
        ("c2", "list_mcp_resources", r#"{"server":"nope"}"#),
        ("c3", "read_mcp_resource", r#"{"server":" ","uri":"demo://resource/static/document/1"}"#),
        ("c4", "read_mcp_resource", r#"{"server":"everything","uri":""}"#),
        ("c5", "list_mcp_resources", r#"{"cursor":"abc"}"#),
        ("c6", "list_mcp_resource_templates", r#"{"server":"  ","cursor":"abc"}"#),
    ];
    sb.server().push(Reply::tool_calls(calls.iter().map(|&(id, tool, args)| FakeToolCall::new(id, tool, args))));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "resources"})).await;
    let lines = pi.until_type("agent_settled").await;
    pi.close_stdin();
    let rs = results(&lines);
    let answers = calls.iter().map(|(id, _, _)| {
        let r = result(&rs, id);
        (id.to_string(), json!([r["isError"], result_text(r)]))
    });
    Some(Value::Object(answers.collect()))
}

#[tokio::test]
async fn the_resource_tools_errors_are_pis() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = resource_errors(&srv, false).await else { return };
    let error = |text: &str| json!([true, text]);
    assert_eq!(
        ours["c1"],
        error("MCP server \"nope\" has no resources. Servers with resources: everything"),
        "{ours:#}"
    );
    assert_eq!(ours["c3"], error("server must be provided"), "{ours:#}");
    assert_eq!(ours["c4"], error("uri must be provided"), "{ours:#}");
    assert_eq!(ours["c5"], error("cursor can only be used when a server is specified"), "{ours:#}");
    let Some(theirs) = resource_errors(&srv, true).await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
