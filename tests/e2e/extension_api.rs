//! pi's extension API beyond registration, end to end through the
//! TypeScript extension host: the built-in tool factories with the
//! extension's own operations (pi's `*Operations`, as its `ssh.ts` runs
//! tools on another machine) and `bash`'s spawn hook.
//!
//! Needs node 22 and the host's packages from `target/tools`
//! (`scripts/install-test-tools.sh`); skipped without them unless
//! `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::harness::Sandbox;

/// Tools made with pi's factories: `read` and `remote_ls` through in-memory
/// "remote" operations, `bash` with a spawn hook, `remote_bash` through an
/// `exec` operation.
const FACTORIES: &str = r#"import { createBashTool, createLsToolDefinition, createReadTool } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  const files = new Map([["/remote/notes.txt", "line one\nline two\n"]]);
  const calls: string[] = [];
  pi.registerTool(createReadTool(process.cwd(), {
    operations: {
      access: async (p: string) => { calls.push(`access ${p}`); if (!files.has(p)) throw new Error(`no such remote file: ${p}`); },
      readFile: async (p: string) => { calls.push(`read ${p}`); return Buffer.from(files.get(p)!); },
    },
  }));
  pi.registerTool(createBashTool(process.cwd(), {
    spawnHook: ({ command, cwd, env }) => ({ command: `echo "[hooked]" && ${command}`, cwd, env: { ...env, WHO: "ada" } }),
  }));
  pi.registerTool({
    ...createBashTool(process.cwd(), {
      operations: {
        exec: async (command: string, cwd: string, { onData }: { onData: (d: Buffer) => void }) => {
          calls.push(`exec ${command}`);
          onData(Buffer.from(`remote ran: ${command}\n`));
          return { exitCode: command.includes("fail") ? 2 : 0 };
        },
      },
    }),
    name: "remote_bash",
  });
  pi.registerTool({
    ...createLsToolDefinition(process.cwd(), {
      operations: {
        exists: async () => true,
        stat: async (p: string) => ({ isDirectory: () => !p.endsWith(".txt") }),
        readdir: async () => ["b.txt", "a"],
      },
    }),
    name: "remote_ls",
  });
  pi.registerCommand("calls", { handler: async (_args, ctx) => ctx.ui.notify(calls.join(", "), "info") });
}
"#;

fn result_text(end: &Value) -> String {
    end["result"]["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

#[tokio::test]
async fn builtin_tool_factories_run_with_the_extensions_operations() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    let module = write_module(&sb, "factories.ts", FACTORIES);
    sb.server().push(Reply::tool_calls([
        FakeToolCall::new("c1", "read", r#"{"path": "/remote/notes.txt"}"#),
        FakeToolCall::new("c2", "bash", r#"{"command": "echo $WHO"}"#),
        FakeToolCall::new("c3", "remote_bash", r#"{"command": "uname"}"#),
        FakeToolCall::new("c4", "remote_ls", r#"{"path": "/remote"}"#),
        FakeToolCall::new("c5", "read", r#"{"path": "/remote/missing.txt"}"#),
        FakeToolCall::new("c6", "remote_bash", r#"{"command": "fail now"}"#),
    ]));
    sb.server().push(Reply::text("Done."));
    let mut pi = sb.spawn(&["--no-session"]);

    pi.send(json!({"id": "p", "type": "prompt", "message": "use the tools"})).await;
    let lines = pi.until_type("agent_settled").await;
    let end = |id: &str| {
        lines
            .iter()
            .find(|v| v["type"] == "tool_execution_end" && v["toolCallId"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no end for {id}: {lines:?}"))
    };
    assert_eq!(result_text(&end("c1")), "line one\nline two\n");
    assert_eq!(result_text(&end("c2")), "[hooked]\nada\n");
    assert_eq!(result_text(&end("c3")), "remote ran: uname\n");
    assert_eq!(result_text(&end("c4")), "a/\nb.txt");
    let missing = end("c5");
    assert_eq!(
        (missing["isError"].as_bool(), result_text(&missing).as_str()),
        (Some(true), "no such remote file: /remote/missing.txt")
    );
    let failed = end("c6");
    assert_eq!(failed["isError"], true, "{failed}");
    assert_eq!(result_text(&failed), "remote ran: fail now\n\n\nCommand exited with code 2");

    // The first request offered the factory-made tools under their names.
    let first = &sb.server().requests()[0];
    let mut offered: Vec<&str> =
        first.body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    offered.sort();
    assert_eq!(offered, ["bash", "edit", "read", "remote_bash", "remote_ls", "write"]);

    pi.send(json!({"id": "c", "type": "prompt", "message": "/calls"})).await;
    let lines = pi.until(|v| v["id"] == "c").await;
    let note = lines.iter().find(|v| v["method"] == "notify").expect("notify");
    // The calls of one batch run concurrently: compare them sorted.
    let mut calls: Vec<&str> = note["message"].as_str().unwrap().split(", ").collect();
    calls.sort();
    assert_eq!(
        calls,
        [
            "access /remote/missing.txt",
            "access /remote/notes.txt",
            "exec fail now",
            "exec uname",
            "read /remote/notes.txt"
        ]
    );
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let _ = module;
}

/// The text of the system message of a recorded OpenAI-style request.
fn system_text(body: &Value) -> String {
    let first = &body["messages"][0];
    match &first["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// pi's `prompt-customizer.ts` adds a `tool_guidance` section through
/// `systemPromptOptions`: the model gets the same section from pi-rpc and from pi 1.6.0.
#[tokio::test]
async fn prompt_customizer_adds_its_section_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let example = cli
        .parent()
        .and_then(std::path::Path::parent)
        .expect("package")
        .join("examples/extensions/prompt-customizer.ts");
    let mut sections = Vec::new();
    for reference in [false, true] {
        let sb = Sandbox::with_server().await;
        sb.server().set_fallback(Reply::text("Hello."));
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "prompt-customizer.ts", &std::fs::read_to_string(&example).expect("the example"));
        let mut pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
        pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
        let lines = pi.until_type("agent_settled").await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
        let system = system_text(&sb.server().requests()[0].body);
        let section = system
            .find("<tool_guidance>")
            .and_then(|start| {
                system[start..].find("</tool_guidance>").map(|end| system[start..start + end].to_string())
            })
            .unwrap_or_else(|| panic!("no tool_guidance section in: {system}"));
        sections.push(section);
    }
    assert!(sections[0].contains("- Use `read` for file contents"), "{}", sections[0]);
    assert_eq!(sections[0], sections[1], "the same section as pi 1.6.0");
}
