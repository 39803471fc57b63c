//! What runs while a pi module's `model_select` handlers do, side by side
//! with pi 1.6.0. pi switches the model (and its thinking level) before it
//! awaits the handlers, and runs each RPC line as its own task: a command
//! sent while a handler waits is answered at once and sees the new model
//! (`get_state`, `get_messages`, `set_thinking_level`, a `prompt`, whose run
//! goes to the new model), and `set_model` is answered once the handlers
//! are done. An extension's own `pi.setModel()` resolves once every
//! extension's `model_select` handlers are done, its own included.
//! Compared: the client's transcript (responses, events, UI calls in order).
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_awaited_events::{start, step};
use crate::extension_host::{host_dir, write_module};
use crate::extension_provider_events::reference_cli;
use crate::harness::Pi;
use crate::harness::Sandbox;

/// A `model_select` handler that waits, then notifies; a
/// `thinking_level_select` handler that notifies at once; a command that
/// switches the model itself and tells when its `pi.setModel()` resolved.
const SLOW_SELECTION: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default function (pi: ExtensionAPI) {
  pi.on("model_select", async (event, ctx) => {
    await pause(400);
    ctx.ui.notify(`model_select ${event.model.id} from ${event.previousModel?.id} (${ctx.model?.id})`, "info");
  });
  pi.on("thinking_level_select", async (event, ctx) => {
    ctx.ui.notify(`thinking_level_select ${event.level}`, "info");
  });
  pi.registerCommand("switch", {
    description: "switch the model from the extension",
    handler: async (args, ctx) => {
      const model = ctx.modelRegistry.find("fake", args.trim());
      const ok = await pi.setModel(model);
      ctx.ui.notify(`setModel ${args.trim()} resolved ${ok} (${ctx.model?.id})`, "info");
    },
  });
}
"#;

/// Another extension's `model_select` handler, which the command's `pi.setModel()` awaits too.
const OTHER_SELECTION: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.on("model_select", async (event, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 100));
    ctx.ui.notify(`other model_select ${event.model.id}`, "info");
  });
}
"#;

/// A line of the transcript, with what a `get_state` / `get_messages` answered.
pub(crate) fn observed(line: &Value) -> Option<String> {
    match line["command"].as_str() {
        Some("get_state") if line["type"] == "response" => {
            Some(format!("state {} {}", line["data"]["model"]["id"], line["data"]["thinkingLevel"]))
        }
        Some("get_messages") if line["type"] == "response" => {
            Some(format!("messages {}", line["data"]["messages"].as_array().map_or(0, Vec::len)))
        }
        _ => step(line),
    }
}

/// Read until every one of `wanted` was seen (each a predicate on one line).
pub(crate) async fn until_all(pi: &mut Pi, wanted: &[&dyn Fn(&Value) -> bool]) -> Vec<Value> {
    let mut seen = vec![false; wanted.len()];
    pi.until(|line| {
        for (i, wants) in wanted.iter().enumerate() {
            seen[i] |= wants(line);
        }
        seen.iter().all(|s| *s)
    })
    .await
}

pub(crate) fn response(id: &'static str) -> impl Fn(&Value) -> bool {
    move |line: &Value| line["type"] == "response" && line["id"] == id
}

pub(crate) fn notified(prefix: &'static str) -> impl Fn(&Value) -> bool {
    move |line: &Value| line["message"].as_str().is_some_and(|m| m.starts_with(prefix))
}

/// What one program showed: commands sent while a `model_select` handler
/// waits, a prompt sent then, and a command's own `pi.setModel()`.
async fn observe(reference: bool) -> Value {
    let Some((sb, mut pi)) = start_two(reference, SLOW_SELECTION, OTHER_SELECTION).await else { return Value::Null };
    let pause = || tokio::time::sleep(Duration::from_millis(100));

    // Read-only commands sent while the handler waits.
    pi.send(json!({"id": "m1", "type": "set_model", "provider": "fake", "modelId": "fake-other"})).await;
    pause().await;
    pi.send(json!({"id": "s1", "type": "get_state"})).await;
    pi.send(json!({"id": "g1", "type": "get_messages"})).await;
    let wanted: [&dyn Fn(&Value) -> bool; 4] =
        [&response("m1"), &response("g1"), &notified("model_select"), &notified("other")];
    let reads: Vec<String> = until_all(&mut pi, &wanted).await.iter().filter_map(observed).collect();

    // Back to the reasoning model; a level, a read and a prompt sent meanwhile.
    pi.send(json!({"id": "m2", "type": "set_model", "provider": "fake", "modelId": "fake-model"})).await;
    pause().await;
    pi.send(json!({"id": "t", "type": "set_thinking_level", "level": "low"})).await;
    pi.send(json!({"id": "s2", "type": "get_state"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    let wanted: [&dyn Fn(&Value) -> bool; 3] =
        [&response("m2"), &|line: &Value| line["type"] == "agent_settled", &notified("other")];
    let run = until_all(&mut pi, &wanted).await;
    let requests: Vec<String> =
        sb.server().requests().iter().map(|r| format!("{} {}", r.body["model"], r.body["reasoning_effort"])).collect();
    // When the run ends against the handler's wait depends on the machine: only the order within each is compared.
    let (selection, rest): (Vec<String>, Vec<String>) =
        run.iter().filter_map(observed).partition(|s| s == "response set_model" || s.contains("model_select"));
    let answered_first = run.iter().position(response("p")) < run.iter().position(response("m2"));

    // The command's own `pi.setModel()`.
    pi.send(json!({"id": "x", "type": "prompt", "message": "/switch fake-other"})).await;
    let wanted: [&dyn Fn(&Value) -> bool; 2] = [&response("x"), &notified("setModel")];
    let command: Vec<String> = until_all(&mut pi, &wanted).await.iter().filter_map(observed).collect();
    let last = pi.call("s3", json!({"type": "get_state"})).await;
    pi.close_stdin();
    json!({
        "reads": reads,
        "writes": {"selection": selection, "rest": rest, "prompt first": answered_first, "requests": requests},
        "command": command,
        "state": observed(&last),
    })
}

/// pi-rpc or pi 1.6.0 (`reference`) with the fake provider's reasoning
/// model, which replies "done", and two extensions (`a-slow.ts` and
/// `b-other.ts`, loaded in that order), their commands listed.
pub(crate) async fn start_two(reference: bool, first: &str, second: &str) -> Option<(Sandbox, Pi)> {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    sb.server().set_fallback(Reply::text("done"));
    write_module(&sb, "a-slow.ts", first);
    write_module(&sb, "b-other.ts", second);
    let mut pi = start(&sb, reference, json!({}))?;
    pi.call("c", json!({"type": "get_commands"})).await;
    Some((sb, pi))
}

/// What `observe` saw of pi-rpc equals what it saw of pi 1.6.0 (skipped without the tools).
pub(crate) async fn assert_as_in_pi<Observed: Future<Output = Value>>(observe: impl Fn(bool) -> Observed) {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return;
    }
    let (ours, theirs) = tokio::join!(observe(false), observe(true));
    eprintln!("pi-rpc: {ours:#}\npi 1.6.0: {theirs:#}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn commands_sent_while_model_select_handlers_run_are_answered_as_pi_answers_them() {
    assert_as_in_pi(observe).await;
}
