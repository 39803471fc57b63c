//! pi's provider events (`before_provider_headers`, `before_provider_request`,
//! `after_provider_response`, `provider_stream_event`) through the
//! TypeScript extension host, run by pi-rpc and by pi 1.6.0 side by side on
//! the same extension and the same fake model server: what the handlers saw
//! and what the server received must agree. pi's own `provider-payload.ts`
//! example logs the payload and the response status the same way in both.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::{Path, PathBuf};

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::{installed_tool, node22};
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::harness::{Pi, Sandbox};

/// Every provider event, recorded; the header and payload changed on the way.
const WATCHER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  const seen: string[] = [];
  let events = 0;
  let origin = "";
  pi.on("before_provider_headers", (event) => {
    seen.push(`headers auth=${Object.keys(event.headers).some((k) => k.toLowerCase() === "authorization")}`);
    event.headers["x-trace"] = "t1";
  });
  pi.on("before_provider_request", (event) => {
    seen.push(`request model=${event.payload.model} stream=${event.payload.stream}`);
    return { ...event.payload, temperature: 0 };
  });
  pi.on("before_provider_request", (event) => {
    seen.push(`request again temperature=${event.payload.temperature}`);
  });
  pi.on("after_provider_response", (event) => {
    seen.push(`response ${event.status} sse=${String(event.headers["content-type"]).includes("event-stream")}`);
  });
  pi.on("provider_stream_event", (event) => {
    events++;
    origin = `${event.provider}/${event.model} ${event.api} ${typeof event.data}`;
  });
  pi.registerCommand("seen", {
    handler: async (_args, ctx) => ctx.ui.notify(`${seen.join("; ")} | stream events: ${events > 0} from ${origin}`, "info"),
  });
}
"#;

pub(crate) fn reference_cli() -> Option<PathBuf> {
    installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js")
}

/// pi 1.6.0 in `sb`, as `sb.spawn` starts pi-rpc.
pub(crate) fn spawn_reference(sb: &Sandbox, node: &Path, cli: &Path) -> Pi {
    spawn_reference_with(sb, node, cli, true)
}

/// pi 1.6.0 in `sb`, offline (`--offline`, `PI_OFFLINE`) or not.
pub(crate) fn spawn_reference_with(sb: &Sandbox, node: &Path, cli: &Path, offline: bool) -> Pi {
    let mut cmd = reference_command(sb, node, cli);
    cmd.arg("--no-session");
    if offline {
        cmd.arg("--offline").env("PI_OFFLINE", "1");
    }
    Pi::start_unchecked(cmd)
}

/// `pi --mode rpc` of pi 1.6.0 in `sb` (its session saved), stdio piped.
pub(crate) fn reference_command(sb: &Sandbox, node: &Path, cli: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(cli).args(["--mode", "rpc"]).current_dir(sb.cwd.path()).env_clear();
    let node_dir = node.parent().map(Path::to_path_buf).unwrap_or_default();
    cmd.env("PATH", format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default()));
    for keep in ["LANG", "TMPDIR"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
    crate::harness::route_reference(&mut cmd);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    cmd.kill_on_drop(true);
    cmd
}

/// What one program's run of [`WATCHER`] showed: the `/seen` note, the request the server got.
async fn watch(mut pi: Pi, sb: &Sandbox) -> (String, Value, Option<String>) {
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    pi.send(json!({"id": "s", "type": "prompt", "message": "/seen"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().map(|v| v["message"].as_str().unwrap_or_default().to_string()).unwrap_or_default();
    let request = sb.server().requests().last().cloned().expect("a model request");
    let trace = request.header("x-trace").map(str::to_string);
    assert_eq!(request.header("authorization"), Some("Bearer test-key-123"), "the credential is still sent");
    (note, request.body, trace)
}

#[tokio::test]
async fn provider_events_see_and_change_the_request_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let mut runs = Vec::new();
    for reference in [false, true] {
        let sb = Sandbox::with_server().await;
        sb.server().set_fallback(Reply::text("Hello."));
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "watcher.ts", WATCHER);
        let pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
        runs.push(watch(pi, &sb).await);
    }
    let (ours, theirs) = (&runs[0], &runs[1]);
    assert_eq!(
        ours.0,
        "headers auth=false; request model=fake-model stream=true; request again temperature=0; response 200 sse=true \
         | stream events: true from fake/fake-model openai-completions object"
    );
    assert_eq!(ours.0, theirs.0, "the handlers saw the same in pi 1.6.0");
    for (body, trace) in [(&ours.1, &ours.2), (&theirs.1, &theirs.2)] {
        assert_eq!(body["temperature"], 0, "the replaced payload was sent: {body}");
        assert_eq!(trace.as_deref(), Some("t1"), "the added header was sent");
    }
}

/// pi's `provider-payload.ts`: the payload and the response's status land in `.pi/provider-payload.log`.
#[tokio::test]
async fn the_provider_payload_example_logs_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let example = cli.parent().and_then(Path::parent).expect("package").join("examples/extensions/provider-payload.ts");
    let mut logs = Vec::new();
    for reference in [false, true] {
        let sb = Sandbox::with_server().await;
        sb.server().set_fallback(Reply::text("Hello."));
        host_settings(&sb, &node, &dir, json!({}));
        std::fs::create_dir_all(sb.cwd.path().join(".pi")).expect(".pi");
        write_module(&sb, "provider-payload.ts", &std::fs::read_to_string(&example).expect("the example"));
        let mut pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
        pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
        let lines = pi.until_type("agent_settled").await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
        let log = std::fs::read_to_string(sb.cwd.path().join(".pi/provider-payload.log")).unwrap_or_default();
        logs.push(log);
    }
    for log in &logs {
        let payload: Value =
            serde_json::from_str(log.split("\n\n").next().unwrap_or_default()).expect("the payload, as JSON");
        assert_eq!(payload["model"], "fake-model", "{log}");
        assert!(payload["messages"].as_array().is_some_and(|m| !m.is_empty()), "{log}");
        assert!(log.contains("\n\n[200] {"), "the status line follows: {log}");
    }
}
