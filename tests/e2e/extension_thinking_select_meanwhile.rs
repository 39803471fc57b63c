//! What runs while a pi module's `thinking_level_select` handlers do, side
//! by side with pi 1.6.0. pi emits the event without awaiting it: the first
//! handler runs up to its first wait inside the level's change, the next
//! one (the next extension's) once it is done, and every command sent
//! meanwhile is answered at once and sees the new level (`get_state`, another
//! `set_thinking_level`, whose handlers start at once, a `set_model`, a
//! `prompt`, whose run takes the new level). An extension's own
//! `pi.setThinkingLevel()` returns once the first handler ran up to its
//! first wait.
//! Compared: the client's transcript (responses, events, UI calls in order).
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::extension_model_select_meanwhile::{assert_as_in_pi, notified, observed, response, start_two, until_all};

/// A `thinking_level_select` handler that notifies, waits, then notifies
/// what it reads; a command that sets the level itself.
const SLOW_THINKING: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default function (pi: ExtensionAPI) {
  pi.on("thinking_level_select", async (event, ctx) => {
    ctx.ui.notify(`a start ${event.level} from ${event.previousLevel} (${pi.getThinkingLevel()} idle ${ctx.isIdle()})`, "info");
    await pause(1000);
    // Whether the prompt's run is over by then depends on the machine: not read here.
    ctx.ui.notify(`a end ${event.level} (${pi.getThinkingLevel()} ${ctx.model?.id})`, "info");
  });
  pi.registerCommand("think", {
    description: "set the thinking level from the extension",
    handler: async (args, ctx) => {
      pi.setThinkingLevel(args.trim());
      ctx.ui.notify(`a set ${args.trim()} returned (${pi.getThinkingLevel()})`, "info");
    },
  });
}
"#;

/// Another extension's handler, which pi runs once the first one is done,
/// and a command of this second extension that sets the level.
const OTHER_THINKING: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.on("thinking_level_select", async (event, ctx) => {
    ctx.ui.notify(`b ${event.level} (${pi.getThinkingLevel()})`, "info");
  });
  pi.on("model_select", async (event, ctx) => {
    ctx.ui.notify(`b model ${event.model.id} (${pi.getThinkingLevel()})`, "info");
  });
  pi.registerCommand("think-b", {
    description: "set the thinking level from the second extension",
    handler: async (args, ctx) => {
      pi.setThinkingLevel(args.trim());
      ctx.ui.notify(`b set ${args.trim()} returned (${pi.getThinkingLevel()})`, "info");
    },
  });
}
"#;

/// Whether `line` is what a handler notified after its wait, or the second
/// extension's `thinking_level_select` handler, which runs after it.
fn after_a_wait(line: &str) -> bool {
    line.starts_with("notify a end") || (line.starts_with("notify b ") && !line.starts_with("notify b model"))
}

/// `lines` apart: what the handlers of each of `levels` notified after the
/// first one's wait, in order (when one level's end comes against
/// another's depends on the machine's load), and the rest in order.
fn apart(lines: &[Value], levels: &[&str]) -> (Value, Vec<String>) {
    let (handlers, rest): (Vec<String>, Vec<String>) = lines.iter().filter_map(observed).partition(|l| after_a_wait(l));
    let of_level = |level: &str| {
        let marker = format!(" {level} (");
        json!(handlers.iter().filter(|line| line.contains(&marker)).collect::<Vec<_>>())
    };
    (levels.iter().map(|level| (level.to_string(), of_level(level))).collect(), rest)
}

/// What one program showed: commands sent while a `thinking_level_select`
/// handler waits, each extension's own `pi.setThinkingLevel()`, then a
/// cycled level and a model's switch while a handler waits.
async fn observe(reference: bool) -> Value {
    let Some((sb, mut pi)) = start_two(reference, SLOW_THINKING, OTHER_THINKING).await else { return Value::Null };

    // A level, then a read, another level, a read and a prompt while its handler waits (300 ms apart:
    // the next extension's handlers of the first level start before the second level's end).
    pi.send(json!({"id": "t1", "type": "set_thinking_level", "level": "low"})).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    pi.send(json!({"id": "s1", "type": "get_state"})).await;
    // pi writes an answer read with the next line's after what that line's handlers do at once.
    tokio::time::sleep(Duration::from_millis(150)).await;
    pi.send(json!({"id": "t2", "type": "set_thinking_level", "level": "high"})).await;
    pi.send(json!({"id": "s2", "type": "get_state"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    let wanted: [&dyn Fn(&Value) -> bool; 3] =
        [&|line: &Value| line["type"] == "agent_settled", &notified("a end high"), &notified("b high")];
    let meanwhile = until_all(&mut pi, &wanted).await;
    let first_end = meanwhile.iter().position(notified("a end low"));
    let answered_first = [response("t2"), response("s2"), response("p")]
        .iter()
        .map(|answered| meanwhile.iter().position(answered) < first_end)
        .collect::<Vec<bool>>();
    // When the run ends against the handlers' wait depends on the machine: only the order within each is compared.
    let (handlers, rest) = apart(&meanwhile, &["low", "high"]);
    let requests: Vec<String> =
        sb.server().requests().iter().map(|r| format!("{} {}", r.body["model"], r.body["reasoning_effort"])).collect();

    // Each extension's own `pi.setThinkingLevel()`.
    let mut own = Vec::new();
    for (id, line, last) in [("x", "/think medium", "b medium"), ("y", "/think-b minimal", "b minimal")] {
        pi.send(json!({"id": id, "type": "prompt", "message": line})).await;
        let wanted: [&dyn Fn(&Value) -> bool; 2] = [&response(id), &notified(last)];
        own.extend(until_all(&mut pi, &wanted).await.iter().filter_map(observed));
    }
    let state = pi.call("s3", json!({"type": "get_state"})).await;

    // A cycled level, then a model whose switch sets the level too, while the cycled one's handler waits.
    pi.send(json!({"id": "c1", "type": "cycle_thinking_level"})).await;
    // Apart enough that the next extension's handlers of the first level start before the second level's end.
    tokio::time::sleep(Duration::from_millis(300)).await;
    pi.send(json!({"id": "m", "type": "set_model", "provider": "fake", "modelId": "fake-other"})).await;
    // pi checks the login before it switches: a line read meanwhile sees the old model.
    let mut switched = pi.until(response("m")).await;
    pi.send(json!({"id": "s4", "type": "get_state"})).await;
    let wanted: [&dyn Fn(&Value) -> bool; 3] = [&response("s4"), &notified("a end off"), &notified("b off")];
    switched.extend(until_all(&mut pi, &wanted).await);
    let first_end = switched.iter().position(notified("a end low"));
    let switch_answered_first = switched.iter().position(response("m")) < first_end;
    let (switch_handlers, switch_rest) = apart(&switched, &["low", "off"]);
    pi.close_stdin();
    json!({
        "meanwhile": {"handlers": handlers, "rest": rest, "answered before the first wait ended": answered_first},
        "requests": requests,
        "own": own,
        "state": observed(&state),
        "switch": {"handlers": switch_handlers, "rest": switch_rest, "answered first": switch_answered_first},
    })
}

#[tokio::test]
async fn commands_sent_while_thinking_level_select_handlers_run_are_answered_as_pi_answers_them() {
    assert_as_in_pi(observe).await;
}
