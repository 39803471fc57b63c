//! A command's `newSession({setup})` runs while pi 1.6.0's new extension
//! runtime has no UI yet: pi gives the runtime its mode and UI context only
//! once the setup is done, before the `session_start`s. A handler of the
//! new runtime that runs during the setup (here: a run the setup starts
//! with the new instance's `pi.sendUserMessage`) reads `ctx.hasUI` false and
//! `ctx.mode` `print`, and its UI calls go nowhere (no `extension_ui_request`
//! reaches the client); from the `session_start`s on, `hasUI` is true and
//! the mode `rpc` again. Side by side with pi 1.6.0, with two extensions
//! (each its own host in pi-rpc).
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_host::write_module;
use crate::harness::Sandbox;

/// Extension `NAME` (`a` and `b`): each handler it has logs what its `ctx`
/// says to `LOG_PATH`, notifies and sets a status. `a`'s `/setup-a` starts a
/// new session whose setup sends a message through the new instance's `pi`
/// (kept in `globalThis`, which pi's extensions share) and waits until `b` has seen that run's `agent_end`.
const PROBE: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync, readFileSync } from "node:fs";

const LOG = LOG_PATH;
const shared = globalThis as any;

export default function (pi: ExtensionAPI) {
  shared["newestPi-NAME"] = pi;
  const seen = (label: string, ctx: any) => {
    appendFileSync(LOG, `NAME ${label} hasUI=${ctx.hasUI} mode=${ctx.mode} editor=${JSON.stringify(ctx.ui.getEditorText())}\n`);
    ctx.ui.notify(`NAME ${label}`, "info");
    ctx.ui.setStatus("NAME", label);
  };
  for (const event of ["session_start", "before_agent_start", "turn_start", "agent_end"]) {
    pi.on(event as any, (_event: any, ctx: any) => seen(event, ctx));
  }
  pi.registerCommand("setup-NAME", {
    handler: async (_args, ctx) => {
      await ctx.newSession({
        setup: async () => {
          appendFileSync(LOG, "setup start\n");
          shared["newestPi-NAME"].sendUserMessage("during setup");
          const deadline = Date.now() + 20000;
          while (!readFileSync(LOG, "utf8").includes("b agent_end") && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          appendFileSync(LOG, "setup end\n");
        },
        withSession: async (next) => seen("withSession", next),
      });
    },
  });
}
"#;

/// What one program did: the log (the setup's part sorted, as the two
/// extensions' handlers may interleave) and the UI calls the client got.
async fn setup_without_ui(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let log = sb.cwd.path().join("setup.log");
    let quoted = |path: &Path| Value::from(path.display().to_string()).to_string();
    for name in ["a", "b"] {
        let source = PROBE.replace("NAME", name).replace("LOG_PATH", &quoted(&log));
        write_module(&sb, &format!("{name}.ts"), &source);
    }
    sb.server().set_fallback(Reply::text("ok"));
    let mut pi = crate::extension_builtin_factories::start_saved(&sb, reference, &[])?;
    pi.send(json!({"id": "s", "type": "prompt", "message": "/setup-a"})).await;
    let mut lines = pi.until(|v| v["type"] == "response" && v["id"] == "s").await;
    // Both `session_start`s and `withSession` are logged before the command's answer; let stragglers come.
    tokio::time::sleep(Duration::from_millis(500)).await;
    pi.send(json!({"id": "st", "type": "get_state"})).await;
    lines.extend(pi.until(|v| v["id"] == "st").await);
    pi.close_stdin();
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut before = Vec::new();
    let mut during = Vec::new();
    let mut after = Vec::new();
    let mut phase = 0;
    for line in text.lines() {
        match line {
            "setup start" => phase = 1,
            "setup end" => phase = 2,
            _ => [&mut before, &mut during, &mut after][phase].push(line.to_string()),
        }
    }
    during.sort();
    let mut ui: Vec<String> = lines
        .iter()
        .filter(|v| v["type"] == "extension_ui_request")
        .map(|v| format!("{} {}", v["method"], v.get("message").or(v.get("statusText")).unwrap_or(&Value::Null)))
        .collect();
    ui.sort();
    Some(json!({"before": before, "during": during, "after": after, "ui": ui}))
}

#[tokio::test]
async fn a_new_session_setup_runs_without_ui_as_in_pi() {
    let Some(ours) = setup_without_ui(false).await else { return };
    let Some(theirs) = setup_without_ui(true).await else { return };
    let during = ours["during"].as_array().cloned().unwrap_or_default();
    assert!(during.iter().any(|l| l == "b agent_end hasUI=false mode=print editor=\"\""), "{ours}");
    assert!(during.iter().all(|l| l.as_str().is_some_and(|l| l.contains(" hasUI=false mode=print "))), "{ours}");
    assert!(
        ours["after"]
            .as_array()
            .is_some_and(|a| a.iter().all(|l| l.as_str().is_some_and(|l| l.contains(" hasUI=true mode=rpc ")))),
        "{ours}"
    );
    assert!(
        ours["ui"].as_array().is_some_and(|a| a.iter().all(|l| !l.as_str().unwrap_or_default().contains("agent"))),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}

/// One extension whose `/setup` starts a new session; the setup prompts it
/// through the new instance's `pi` and waits until that run has settled.
const SETUP_RUN: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync, readFileSync } from "node:fs";

const LOG = LOG_PATH;
const shared = globalThis as any;

export default function (pi: ExtensionAPI) {
  shared.newestPi = pi;
  for (const event of ["session_start", "agent_start", "message_end", "agent_end", "agent_settled"]) {
    pi.on(event as any, (_event: any) => appendFileSync(LOG, `${event}\n`));
  }
  pi.registerCommand("setup", {
    handler: async (_args, ctx) => {
      await ctx.newSession({
        setup: async () => {
          shared.newestPi.sendUserMessage("during setup");
          const deadline = Date.now() + 20000;
          while (!readFileSync(LOG, "utf8").includes("agent_settled") && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          appendFileSync(LOG, "setup end\n");
        },
      });
      appendFileSync(LOG, "command end\n");
    },
  });
}
"#;

/// What one program did with `/setup`: what its client got (each line's
/// type and id), what the extension saw, the new session file's entries.
async fn setup_run_seen(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let log = sb.cwd.path().join("setup.log");
    std::fs::write(&log, "").ok()?;
    let quoted = Value::from(log.display().to_string()).to_string();
    write_module(&sb, "setup.ts", &SETUP_RUN.replace("LOG_PATH", &quoted));
    sb.server().set_fallback(Reply::text("ok"));
    let mut pi = crate::extension_builtin_factories::start_saved(&sb, reference, &[])?;
    pi.send(json!({"id": "s", "type": "prompt", "message": "/setup"})).await;
    let mut lines = pi.until(|v| v["type"] == "response" && v["id"] == "s").await;
    // Whatever would still come of that run.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    pi.send(json!({"id": "st", "type": "get_state"})).await;
    lines.extend(pi.until(|v| v["id"] == "st").await);
    pi.close_stdin();
    let client: Vec<String> = lines
        .iter()
        .map(|v| format!("{} {}", v["type"].as_str().unwrap_or_default(), v["id"].as_str().unwrap_or_default()))
        .collect();
    let file = lines.last().and_then(|v| v["data"]["sessionFile"].as_str()).unwrap_or_default().to_string();
    let entries: Vec<String> = std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|e| {
            format!("{} {}", e["type"].as_str().unwrap_or_default(), e["message"]["role"].as_str().unwrap_or_default())
        })
        .collect();
    let extension: Vec<String> = std::fs::read_to_string(&log).unwrap_or_default().lines().map(String::from).collect();
    Some(json!({"client": client, "extension": extension, "entries": entries}))
}

/// pi's RPC mode listens to the new session only once its setup is done:
/// the run the setup starts (and waits for) reaches the extensions and the
/// session file, but none of its events the client.
#[tokio::test]
async fn a_run_during_a_new_session_setup_is_not_shown_to_the_client_as_in_pi() {
    let Some(ours) = setup_run_seen(false).await else { return };
    let Some(theirs) = setup_run_seen(true).await else { return };
    assert_eq!(ours["client"], json!(["response s", "response st"]), "{ours}");
    assert!(ours["entries"].as_array().is_some_and(|e| e.iter().any(|e| e == "message assistant")), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}
