//! pi's agent loop (`@earendil-works/pi-agent-core`) run by an extension
//! in-process, side by side with pi 1.6.0: `agentLoop` with the default
//! stream function, `new Agent(...)` with `ctx.modelRegistry.streamSimple`,
//! each with one tool, against the fake model server; and `agent.abort()`
//! in the middle of a streamed reply. The extension reports what its loop
//! saw (events, the streaming message as it was at each update, messages,
//! the tool's result); the model requests the loop made are compared too.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::extension_sdk_session::PACE_MS;
use crate::harness::Sandbox;

/// An extension with three small agents of its own, each reporting what its
/// loop saw with `notify`.
const MINI_AGENTS: &str = r#"import { Agent, agentLoop } from "@earendil-works/pi-agent-core";
import { Type } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const shout = {
  name: "shout",
  label: "Shout",
  description: "Upper-cases a text",
  parameters: Type.Object({ text: Type.String() }),
  execute: async (_id: string, params: { text: string }) => ({
    content: [{ type: "text" as const, text: params.text.toUpperCase() }],
    details: { length: params.text.length },
  }),
};

function part(c: any): string {
  if (c.type === "text") return c.text;
  if (c.type === "toolCall") return `${c.name}(${JSON.stringify(c.arguments)})`;
  return c.type;
}

/** A copy of a value without what differs from run to run (clock readings). */
function stable(value: any): any {
  const volatile = ["timestamp", "durationMs"];
  return JSON.parse(JSON.stringify(value, (key, v) => (volatile.includes(key) ? undefined : v)));
}

/** An event as the loop saw it when it came: the streaming message as it was then (its
 * response id, usage, stop reason and the blocks' signatures included). */
function seen(e: any): any {
  if (e.type === "message_update") return ["message_update", stable(e.assistantMessageEvent), stable(e.message)];
  if (e.type === "message_start" || e.type === "message_end") return [e.type, stable(e.message)];
  if (e.type === "tool_execution_end") return `tool_execution_end:${e.toolName}:${e.isError}`;
  return e.type;
}

/** What a run showed. */
function summary(events: any[], messages: any[]) {
  return JSON.stringify({
    events,
    messages: messages.map((m) => ({
      role: m.role,
      content: typeof m.content === "string" ? m.content : m.content.map(part),
      stopReason: m.stopReason,
      errorMessage: m.errorMessage,
      toolName: m.toolName,
      isError: m.isError,
      details: m.details,
      provider: m.provider,
      model: m.model,
    })),
  });
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("loop", {
    handler: async (_args, ctx) => {
      const events: any[] = [];
      const stream = agentLoop(
        [{ role: "user", content: "shout hello", timestamp: Date.now() }],
        { messages: [], tools: [shout] },
        { model: ctx.model!, convertToLlm: (m: any[]) => m, getApiKey: (p: string) => ctx.modelRegistry.getApiKeyForProvider(p) },
      );
      for await (const event of stream) events.push(seen(event));
      ctx.ui.notify(summary(events, await stream.result()), "info");
    },
  });
  pi.registerCommand("agent", {
    handler: async (_args, ctx) => {
      const events: any[] = [];
      const agent = new Agent({
        initialState: { systemPrompt: "You shout.", model: ctx.model!, tools: [shout] },
        streamFn: (model: any, context: any, options: any) => ctx.modelRegistry.streamSimple(model, context, options),
      });
      agent.subscribe((event: any) => {
        events.push(seen(event));
      });
      await agent.prompt("shout again");
      ctx.ui.notify(summary(events, agent.state.messages), "info");
    },
  });
  pi.registerCommand("abort", {
    handler: async (_args, ctx) => {
      const events: any[] = [];
      const agent = new Agent({
        initialState: { systemPrompt: "You talk.", model: ctx.model! },
        getApiKey: (p: string) => ctx.modelRegistry.getApiKeyForProvider(p),
      } as any);
      agent.subscribe((event: any) => {
        events.push(seen(event));
        if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") agent.abort();
      });
      await agent.prompt("talk");
      ctx.ui.notify(summary(events, agent.state.messages), "info");
    },
  });
}
"#;

/// What one program did: the summary each command notified, and the
/// messages and tools of every model request its loops made.
struct Run {
    notes: Vec<Value>,
    requests: Vec<Value>,
}

/// The parts of a recorded OpenAI-style request that the loop decides.
fn request_view(body: &Value) -> Value {
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["function"]["name"].as_str()).collect())
        .unwrap_or_default();
    json!({"model": body["model"], "messages": body["messages"], "tools": tools})
}

async fn run(reference: bool, node: &std::path::Path, dir: &std::path::Path, cli: &std::path::Path) -> Run {
    let sb = Sandbox::with_server().await;
    host_settings(&sb, node, dir, json!({}));
    write_module(&sb, "mini-agents.ts", MINI_AGENTS);
    // /loop and /agent: a tool call, then the answer. Paced: each frame is read on its own, so
    // what the loop sees of the streaming message (changed as the reply comes) is not timing's.
    for text in ["hello", "again"] {
        let call = Reply::tool_call("c1", "shout", &format!(r#"{{"text": "{text}"}}"#)).with_thinking("Loud.");
        sb.server().push(call.paced_ms(PACE_MS));
        sb.server().push(Reply::text(&format!("Shouted {text}.")).paced_ms(PACE_MS));
    }
    // /abort: the reply stops after its first piece; the agent aborts on it.
    sb.server().push(Reply::text_chunks(["Once upon", " a time"]).hang_after(1).paced_ms(PACE_MS));
    let mut pi = if reference { spawn_reference(&sb, node, cli) } else { sb.spawn(&["--no-session"]) };
    let mut notes = Vec::new();
    for command in ["loop", "agent", "abort"] {
        pi.send(json!({"id": command, "type": "prompt", "message": format!("/{command}")})).await;
        let lines = pi.until(|v| v["method"] == "notify").await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "/{command}: {lines:?}");
        let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default();
        notes.push(serde_json::from_str(note).unwrap_or_else(|e| panic!("/{command} notified {note}: {e}")));
    }
    let requests = sb.server().requests().iter().map(|r| request_view(&r.body)).collect();
    for request in sb.server().requests() {
        assert_eq!(request.header("authorization"), Some("Bearer test-key-123"), "the provider's credential is sent");
    }
    Run { notes, requests }
}

#[tokio::test]
async fn an_extensions_agent_loop_runs_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let ours = run(false, &node, &dir, &cli).await;
    let theirs = run(true, &node, &dir, &cli).await;

    // What the loops saw is pi's, event by event.
    for (i, command) in ["/loop", "/agent", "/abort"].iter().enumerate() {
        assert_eq!(ours.notes[i], theirs.notes[i], "{command}: pi-rpc, then pi 1.6.0");
    }
    // And it is what the fake model server answered: the tool call, the tool's result, the answer.
    let contents = |note: &Value| -> Vec<Value> {
        note["messages"].as_array().unwrap().iter().map(|m| json!([m["role"], m["content"]])).collect()
    };
    assert_eq!(
        contents(&ours.notes[0]),
        [
            json!(["system", ""]),
            json!(["user", "shout hello"]),
            json!(["assistant", ["thinking", r#"shout({"text":"hello"})"#]]),
            json!(["toolResult", ["HELLO"]]),
            json!(["assistant", ["Shouted hello."]]),
        ],
        "{}",
        ours.notes[0]
    );
    assert_eq!(ours.notes[1]["messages"][3]["content"], json!(["AGAIN"]), "{}", ours.notes[1]);
    assert_eq!(ours.notes[1]["messages"][3]["details"], json!({"length": 5}));
    let aborted = ours.notes[2]["messages"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(aborted["stopReason"], "aborted", "{}", ours.notes[2]);
    assert_eq!(ours.notes[2]["events"].as_array().unwrap().last().unwrap(), "agent_end");

    // The loops' model requests: the same transcripts and tools as pi's.
    assert_eq!(ours.requests.len(), 5, "{:?}", ours.requests);
    assert_eq!(ours.requests, theirs.requests);
}
