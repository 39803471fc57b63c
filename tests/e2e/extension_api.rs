//! pi's extension API beyond registration, end to end through the
//! TypeScript extension host: the built-in tool factories with the
//! extension's own operations (pi's `*Operations`, as its `ssh.ts` runs
//! tools on another machine) and `bash`'s spawn hook; `newSession`'s
//! `setup` holding the `session_start` of process extensions too.
//!
//! Needs node 22 and the host's packages from `target/tools`
//! (`scripts/install-test-tools.sh`); skipped without them unless
//! `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::extensions::write_script;
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

/// A TypeScript command's `newSession` whose (slow) setup writes to the new session.
const SETUP: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  pi.registerCommand("fresh", {
    handler: async (_args, ctx) => {
      await ctx.newSession({
        setup: async (sm: any) => {
          await new Promise((resolve) => setTimeout(resolve, 400));
          sm.appendCustomEntry("handoff", { done: true });
        },
        withSession: async (next) => next.ui.notify("with done", "info"),
      });
    },
  });
}
"#;

/// A process extension that, on the new session's `session_start`, reads the
/// session (`getSession`) and tells what it holds; `{awaited}`: it asks to be
/// awaited (its `session_start` is a request, answered late).
fn observer(label: &str, awaited: bool) -> String {
    format!(
        r#"import json, sys, time
label, awaited = "{label}", {awaited}
print(json.dumps({{"type": "register", "name": label, "events": ["session_start"], "awaitSessionStart": awaited}}), flush=True)
def ask(method):
    print(json.dumps({{"type": "request", "id": "q", "method": method, "params": {{}}}}), flush=True)
    for line in sys.stdin:
        m = json.loads(line)
        if m.get("type") == "response" and m.get("id") == "q":
            return m.get("result")
def started(event):
    if event.get("reason") == "new":
        kinds = ",".join(e["type"] for e in ask("getSession")["entries"])
        time.sleep(0.3)
        print(json.dumps({{"type": "request", "method": "notify", "params": {{"message": label + " " + kinds}}}}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "request" and m.get("method") == "session_start":
        started(m["params"])
        print(json.dumps({{"type": "response", "id": m["id"], "result": None}}), flush=True)
    elif m.get("type") == "event" and m["event"]["type"] == "session_start":
        started(m["event"])
"#,
        awaited = if awaited { "True" } else { "False" }
    )
}

/// pi starts every extension only once a command's `newSession` setup is
/// done, each awaited: a process extension (any language) gets its
/// `session_start` after the setup wrote to the new session, and one that
/// asks to be awaited has handled it before `withSession` runs.
#[tokio::test]
async fn a_new_session_setup_holds_the_session_start_of_process_extensions() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "a-setup.ts", SETUP);
    let awaited = write_script(&sb, "awaited.py", &observer("awaited", true));
    let notified = write_script(&sb, "notified.py", &observer("notified", false));
    let mut pi = sb.spawn(&["-e", &awaited, "-e", &notified]);

    pi.send(json!({"id": "c", "type": "prompt", "message": "/fresh"})).await;
    let mut lines = pi.until(|v| v["id"] == "c").await;
    let notes = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .filter(|v| v["method"] == "notify")
            .filter_map(|v| v["message"].as_str().map(String::from))
            .collect()
    };
    if !notes(&lines).iter().any(|n| n.starts_with("notified")) {
        // Told, not awaited: its note may come after the command's answer.
        lines.extend(
            pi.until(|v| v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with("notified")))
                .await,
        );
    }
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let notes = notes(&lines);
    let at = |prefix: &str| {
        notes.iter().position(|n| n.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {notes:?}"))
    };
    // Both saw the setup's entry: their session_start came after the setup.
    assert_eq!(notes[at("awaited")], "awaited model_change,thinking_level_change,custom");
    assert_eq!(notes[at("notified")], "notified model_change,thinking_level_change,custom");
    // The awaited one had handled it before withSession ran.
    assert!(at("awaited") < at("with done"), "{notes:?}");
}
