//! The tools of pi's built-in extensions in `getAllTools()`, without any
//! factory: `codemode` and `tool_search` (`builtin:codemode`,
//! `builtin:tool-search`, `model-only`, inactive until `setActiveTools()`
//! names them) from `session_start` on, and the MCP servers' tools
//! (`builtin:mcp`, a `codemode` server's as `deferred`) once they connect;
//! `--tools` leaves out the two it does not name but not MCP's,
//! `--no-extensions` and `--no-tools` leave out all of them. Run by pi-rpc and by pi 1.6.0
//! side by side with a real MCP server (server-everything over stdio).
//!
//! Needs node 22, the host's packages, the MCP servers and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::extension_builtin_factories::start;
use crate::extension_host::write_module;
use crate::harness::Sandbox;
use crate::mcp::{Servers, write_mcp};

/// Reports the built-in extensions' tools at `session_start` and in `/tools`
/// (`/tools wait` first waits until an MCP tool is listed), then activates
/// `codemode` and `tool_search` and reports the active tools.
const LISTER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const isBuiltins = (name: string) =>
  name === "codemode" || name === "tool_search" || name.startsWith("mcp__") || name.includes("_mcp_resource");

export default function (pi: ExtensionAPI) {
  const listed = (names: (name: string) => boolean) =>
    pi.getAllTools()
      .filter((t) => names(t.name))
      .map((t) => ({ name: t.name, path: t.sourceInfo.path, source: t.sourceInfo.source, exposure: t.exposure }));
  let atStart: unknown = null;
  pi.on("session_start", () => {
    atStart = listed((name) => name === "codemode" || name === "tool_search");
  });
  pi.registerCommand("tools", {
    handler: async (args, ctx) => {
      for (let i = 0; args === "wait" && i < 600 && !pi.getAllTools().some((t) => t.name.startsWith("mcp__")); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const now = listed(isBuiltins);
      pi.setActiveTools(["read", "codemode", "tool_search"]);
      ctx.ui.notify(JSON.stringify({ atStart, now, active: pi.getActiveTools() }), "info");
    },
  });
}
"#;

/// What one program's `/tools` reported, with `flags`.
async fn listing(reference: bool, servers: &Servers, flags: &[&str]) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"everything": servers.everything("stdio")}));
    let path = write_module(&sb, "lister.ts", LISTER);
    let mut args = flags.to_vec();
    if flags.contains(&"--no-extensions") {
        args.extend(["-e", path.as_str()]);
    }
    let mut pi = start(&sb, reference, &args)?;
    let no_mcp_tools = flags.contains(&"--no-extensions") || flags.contains(&"--no-tools");
    let wait = if no_mcp_tools { "/tools" } else { "/tools wait" };
    pi.send(json!({"id": "t", "type": "prompt", "message": wait})).await;
    // (`--tools` may first bring MCP's warning that no tool reaches its tools.)
    let lines =
        pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with('{'))).await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    pi.close_stdin();
    Some(serde_json::from_str(&note).expect("the note is JSON"))
}

/// The tool names of a `{name, path, source, exposure}` listing.
fn names(listed: &Value) -> Vec<String> {
    listed.as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

#[tokio::test]
async fn get_all_tools_lists_the_built_in_extensions_tools_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let Some(ours) = listing(false, &servers, &[]).await else { return };
    let Some(theirs) = listing(true, &servers, &[]).await else { return };
    let builtin =
        |name: &str, path: &str| json!({"name": name, "path": path, "source": "builtin", "exposure": "model-only"});
    assert_eq!(
        ours["atStart"],
        json!([builtin("codemode", "builtin:codemode"), builtin("tool_search", "builtin:tool-search")])
    );
    let now = ours["now"].as_array().expect("a listing");
    assert_eq!(now[..2], [builtin("codemode", "builtin:codemode"), builtin("tool_search", "builtin:tool-search")]);
    let echo = now.iter().find(|t| t["name"] == "mcp__everything__echo").expect("the server's tools are listed");
    assert_eq!(echo["path"], "builtin:mcp");
    assert_eq!(echo["exposure"], "deferred", "a codemode server's tools are registered as deferred");
    assert_eq!(ours["active"], json!(["read", "codemode", "tool_search"]), "setActiveTools activates them");
    assert_eq!(ours, theirs, "pi 1.6.0 lists the same");
}

#[tokio::test]
async fn tools_and_no_extensions_leave_the_built_in_extensions_tools_out_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let cases: [(&[&str], Value); 3] = [
        (&["--tools", "read"], json!(["read"])),
        (&["--no-extensions"], json!(["read"])),
        (&["--no-tools"], json!([])),
    ];
    for (flags, active) in cases {
        let Some(ours) = listing(false, &servers, flags).await else { return };
        let Some(theirs) = listing(true, &servers, flags).await else { return };
        assert_eq!(ours["atStart"], json!([]), "{flags:?}");
        assert!(!names(&ours["now"]).iter().any(|n| n == "codemode" || n == "tool_search"), "{flags:?}: {ours}");
        assert_eq!(ours["active"], active, "{flags:?}");
        assert_eq!(ours, theirs, "{flags:?}: as in pi 1.6.0");
    }
}
