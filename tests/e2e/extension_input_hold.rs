//! Prompts an `input` hook holds, side by side with pi 1.6.0: of the work
//! deferred past a run's `agent_settled` (a client's prompts, an
//! extension's `sendUserMessage`), each is decided by the hooks, and its run
//! over, before the next starts, whether the hook answers `continue`,
//! `handled` or `transform`. Compared: the client's transcript (events, UI
//! calls, responses and their dispositions in order), the session file's
//! entries, what the model was asked.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_awaited_events::{entries, side_by_side, start, step};
use crate::extension_awaited_settled::{asked, notified};
use crate::extension_host::{host_dir, write_module};
use crate::extension_provider_events::reference_cli;
use crate::harness::Pi;

/// An `agent_settled` handler that waits after the first run until the
/// test says go on (it writes `go-on` in the working directory), then sends
/// a user message; an `input` hook that says what it was asked, waits (for
/// "slow one" until the test says go on, for "second one" a while longer,
/// else 150 ms), then handles `handle…`, transforms `transform…` and lets
/// the rest through.
const HOLDING_HOOK: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { existsSync } from "node:fs";
import { join } from "node:path";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const goOn = async (cwd: string) => {
  while (!existsSync(join(cwd, "go-on"))) await pause(20);
};

export default function (pi: ExtensionAPI) {
  let settled = 0;
  pi.on("agent_settled", async (_event, ctx) => {
    const run = settled++;
    ctx.ui.notify(`settling ${run}`, "info");
    if (run !== 0) return;
    await goOn(ctx.cwd);
    pi.sendUserMessage("from the extension");
    ctx.ui.notify(`settled ${run} done`, "info");
  });
  pi.registerCommand("nav", {
    description: "navigates the tree",
    handler: async (_args, ctx) => {
      const outcome = await ctx.navigateTree("nowhere", { summarize: false }).then(
        () => "navigated",
        (error: Error) => error.message,
      );
      ctx.ui.notify(`nav: ${outcome}`, "info");
    },
  });
  pi.on("input", async (event, ctx) => {
    ctx.ui.notify(`input ${event.text} (${event.source}, ${event.streamingBehavior ?? "-"})`, "info");
    if (event.text === "slow one") await goOn(ctx.cwd);
    else if (event.text === "second one") await goOn(ctx.cwd).then(() => pause(100));
    else await pause(150);
    if (event.text.startsWith("handle")) {
      ctx.ui.notify(`handled ${event.text}`, "info");
      return { action: "handled" };
    }
    if (event.text.startsWith("transform")) {
      ctx.ui.notify(`transformed ${event.text}`, "info");
      return { action: "transform", text: `transformed: ${event.text}` };
    }
    ctx.ui.notify(`continue ${event.text}`, "info");
    return { action: "continue" };
  });
}
"#;

/// Tell the extension to go on.
fn go_on(sb: &crate::harness::Sandbox) {
    std::fs::write(sb.cwd.path().join("go-on"), "").expect("go-on");
}

/// One line of the transcript; a response with its id and disposition or error.
fn shown(line: &Value) -> Option<String> {
    match line["type"].as_str()? {
        "response" => {
            let outcome = line["data"]["disposition"].as_str().or(line["error"].as_str()).unwrap_or_default();
            Some(format!("response {} {}", line["id"].as_str()?, outcome).trim().to_string())
        }
        "extension_error" => Some(format!("extension_error {}", line["error"].as_str()?)),
        _ => step(line),
    }
}

/// Lines until `done` matches one, or until none came for `quiet`.
async fn until_or_quiet(pi: &mut Pi, quiet: Duration, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let mut lines = Vec::new();
    while let Ok(line) = tokio::time::timeout(quiet, pi.next()).await {
        let last = done(&line);
        lines.push(line);
        if last {
            break;
        }
    }
    lines
}

/// Lines until the `runs`th `agent_settled`, or until none came for 3 s.
async fn until_settled(pi: &mut Pi, runs: usize) -> Vec<Value> {
    let mut settled = 0;
    let enough = |l: &Value| {
        settled += usize::from(l["type"] == "agent_settled");
        settled == runs
    };
    until_or_quiet(pi, Duration::from_secs(3), enough).await
}

/// One program with the holding hook, started and its commands listed; `None` without the tools.
async fn start_holding(reference: bool) -> Option<(crate::harness::Sandbox, Pi)> {
    let sb = crate::harness::Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    sb.server().set_fallback(Reply::text("an answer"));
    write_module(&sb, "holding.ts", HOLDING_HOOK);
    let mut pi = start(&sb, reference, json!({}))?;
    pi.call("c", json!({"type": "get_commands"})).await;
    Some((sb, pi))
}

/// What one program showed when three prompts arrive while the first run's
/// `agent_settled` handler waits, and that handler then sends a user message.
async fn observe_deferred(reference: bool) -> Value {
    let Some((sb, mut pi)) = start_holding(reference).await else { return Value::Null };
    pi.send(json!({"id": "p1", "type": "prompt", "message": "hello"})).await;
    let mut lines = pi.until(|l| notified(l, "settling 0")).await;
    pi.send(json!({"id": "p2", "type": "prompt", "message": "second"})).await;
    pi.send(json!({"id": "p3", "type": "prompt", "message": "handle third"})).await;
    pi.send(json!({"id": "p4", "type": "prompt", "message": "transform fourth"})).await;
    pi.send(json!({"id": "s0", "type": "get_state"})).await;
    // Read while the handler waits (the run is over for pi: not streaming).
    lines.extend(pi.until(|l| l["id"] == "s0").await);
    go_on(&sb);
    // The first run's end; pi: the runs of "second", "transformed: transform fourth", "from the extension".
    lines.extend(until_settled(&mut pi, 4).await);
    pi.call("s", json!({"type": "get_state"})).await;
    let transcript: Vec<String> = lines.iter().filter_map(shown).collect();
    let session = entries(&sb);
    pi.close_stdin();
    json!({"transcript": transcript, "session": session, "asked": asked(&sb)})
}

#[tokio::test]
async fn work_deferred_past_agent_settled_waits_for_the_input_hooks_decision_as_in_pi() {
    let Some(theirs) = side_by_side(observe_deferred).await else { return };
    // What pi does, spelled out: each deferred item asked about once the one before is decided and its run over.
    let transcript: Vec<&str> =
        theirs["transcript"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let at = |what: &str| transcript.iter().position(|s| *s == what).unwrap_or(usize::MAX);
    assert!(at("notify settling 1") < at("notify input handle third (rpc, -)"), "{transcript:?}");
    assert!(at("response p3 handled") < at("notify input transform fourth (rpc, -)"), "{transcript:?}");
    assert!(at("notify settling 2") < at("notify input from the extension (extension, -)"), "{transcript:?}");
    let lasts: Vec<Value> = theirs["asked"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|request| request.as_array().and_then(|m| m.last()).cloned().unwrap_or_default())
        .collect();
    let expected = ["user hello", "user second", "user transformed: transform fourth", "user from the extension"];
    assert_eq!(lasts, expected.map(Value::from).to_vec(), "{:?}", theirs["asked"]);
}

/// What one program showed when a second prompt (with `behavior`), a
/// `get_state`, an `abort` and a command that navigates the tree arrive while idle and the `input` hook still
/// decides about a first prompt: the transcript without the answers to
/// `get_state` and `abort` and without the second prompt's decision and
/// answer (their place against the hook's UI calls and the first run's
/// events is a race), that answer, whether `get_state` and `abort` were
/// answered before the hook decided, and what the model was asked.
async fn observe_idle(reference: bool, behavior: Option<&str>) -> Value {
    let sb = crate::harness::Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    // The first run lasts: the second prompt is decided while it runs.
    sb.server().push(Reply::text("an answer").paced_ms(60));
    sb.server().set_fallback(Reply::text("an answer"));
    write_module(&sb, "holding.ts", HOLDING_HOOK);
    let Some(mut pi) = start(&sb, reference, json!({})) else { return Value::Null };
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p1", "type": "prompt", "message": "slow one"})).await;
    let mut second = json!({"id": "p2", "type": "prompt", "message": "second one"});
    if let Some(behavior) = behavior {
        second["streamingBehavior"] = json!(behavior);
    }
    pi.send(second).await;
    pi.send(json!({"id": "s0", "type": "get_state"})).await;
    pi.send(json!({"id": "a", "type": "abort"})).await;
    pi.send(json!({"id": "n", "type": "prompt", "message": "/nav"})).await;
    // Both prompts asked about, `get_state`, `abort` and the command answered: the hook decides about the first now.
    let mut left = 5;
    let asked_and_answered = |l: &Value| {
        let navigated = l["method"] == "notify" && l["message"].as_str().is_some_and(|m| m.starts_with("nav:"));
        let answered = ["s0", "a", "n"].iter().any(|id| l["id"] == *id);
        left -= usize::from(notified(l, "input second one (rpc, -)") || answered || navigated);
        left == 0
    };
    let mut lines = until_or_quiet(&mut pi, Duration::from_secs(2), asked_and_answered).await;
    go_on(&sb);
    // The first prompt's run, then the run of the user message its `agent_settled` handler sends.
    lines.extend(until_settled(&mut pi, 2).await);
    pi.call("s", json!({"type": "get_state"})).await;
    let shown_lines: Vec<String> = lines.iter().filter_map(shown).collect();
    let at = |what: &str| shown_lines.iter().position(|s| s.starts_with(what)).unwrap_or(usize::MAX);
    let decided = at("notify continue slow one");
    let answered_meanwhile = json!({
        "state": at("response s0") < decided,
        "abort": at("response a") < decided,
        "streaming": lines.iter().find(|l| l["id"] == "s0").map(|l| l["data"]["isStreaming"].clone()),
    });
    let raced = ["response s0", "response a", "response n", "notify nav:", "notify continue second one", "response p2"];
    let navigation = shown_lines.iter().find(|s| s.starts_with("notify nav:"));
    let transcript: Vec<&String> = shown_lines.iter().filter(|s| !raced.iter().any(|r| s.starts_with(r))).collect();
    let second = shown_lines.iter().find(|s| s.starts_with("response p2"));
    pi.close_stdin();
    json!({
        "transcript": transcript,
        "second": second,
        "meanwhile": answered_meanwhile,
        "navigation": navigation,
        "asked": asked(&sb),
    })
}

#[tokio::test]
async fn a_prompt_sent_while_the_input_hook_decides_about_another_is_not_held_as_in_pi() {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return;
    }
    for behavior in [None, Some("followUp")] {
        let (ours, theirs) = tokio::join!(observe_idle(false, behavior), observe_idle(true, behavior));
        assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0 ({behavior:?})");
        // What pi does, spelled out: the hook is asked about the second prompt before it decided about the first
        // (not streaming then: no `streamingBehavior`), and `get_state` and `abort` are answered meanwhile.
        let transcript: Vec<&str> =
            theirs["transcript"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let at = |what: &str| transcript.iter().position(|s| *s == what).unwrap_or(usize::MAX);
        assert!(at("notify input second one (rpc, -)") < at("notify continue slow one"), "{transcript:?}");
        assert_eq!(theirs["meanwhile"], json!({"state": true, "abort": true, "streaming": false}));
        // Decided once the first prompt's run started: refused, or queued as its follow-up.
        let second = if behavior.is_some() {
            "response p2 queued"
        } else {
            "response p2 Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
        };
        assert_eq!(theirs["second"], json!(second));
        // The prompt holds the session: a command cannot navigate its tree meanwhile.
        let refused = "notify nav: Wait for the current response to finish before navigating the session tree.";
        assert_eq!(theirs["navigation"], json!(refused));
    }
}

/// What one program showed when a `steer` and a `follow_up` arrive while
/// idle: each asked about, decided and queued in turn.
async fn observe_idle_queueing(reference: bool) -> Value {
    let Some((_sandbox, mut pi)) = start_holding(reference).await else { return Value::Null };
    let mut lines = Vec::new();
    for (id, kind, text) in [("q1", "steer", "idle steer"), ("q2", "follow_up", "idle follow")] {
        pi.send(json!({"id": id, "type": kind, "message": text})).await;
        lines.extend(until_or_quiet(&mut pi, Duration::from_secs(5), |l| l["id"] == id).await);
    }
    pi.close_stdin();
    json!(lines.iter().filter_map(shown).collect::<Vec<_>>())
}

#[tokio::test]
async fn a_steer_or_follow_up_sent_while_idle_tells_the_input_hook_no_streaming_behavior_as_in_pi() {
    let Some(theirs) = side_by_side(observe_idle_queueing).await else { return };
    // Nothing streams: pi's hook hears no `streamingBehavior`.
    let transcript: Vec<&str> = theirs.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(transcript.contains(&"notify input idle steer (rpc, -)"), "{transcript:?}");
    assert!(transcript.contains(&"notify input idle follow (rpc, -)"), "{transcript:?}");
}
