//! codemode's `store()` / `load()` kept in the session, as pi 1.6.0 keeps
//! them: real codemode runs against the fake model server store values, a
//! new process resumes the session (`--continue`) and loads them, and tree
//! navigation (an extension command's `ctx.navigateTree()`), `fork`,
//! `switch_session` and `new_session` each see only the values written on
//! their branch. Side by side with pi 1.6.0: the `codemode-store` entries of
//! each session file (data and place), their `entry_appended` events and
//! what each script loaded must be the same.

use std::path::{Path, PathBuf};

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::harness::{Pi, Sandbox};
use crate::mcp::{result, result_text, results};
use crate::native_sessions::{data, session_file};

const SAVE: &str = "store('a', 1); store('k', 'one'); return load('k')";
const CHANGE: &str = "store('k', 'two'); store('b', [2]); store('gone', 0); store('gone', undefined); store('a', undefined); return load('a') === undefined";
const FAIL: &str = "store('bad', true); throw new Error('not kept')";
const LOAD: &str = "return JSON.stringify({a: load('a'), k: load('k'), b: load('b'), bad: load('bad'), f: load('f')})";

/// [`LOAD`], then store `f` (its own branch's mark).
fn load_and_mark(mark: &str) -> String {
    format!(
        "const seen = JSON.stringify({{a: load('a'), k: load('k'), b: load('b'), f: load('f')}}); store('f', '{mark}'); return seen"
    )
}

/// A command that moves the session's leaf (pi's tree navigation).
const GOTO: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  pi.registerCommand("goto", {
    handler: async (args, ctx) => {
      const result = await ctx.navigateTree(args.trim(), { summarize: false });
      ctx.ui.notify(JSON.stringify(result), "info");
    },
  });
}
"#;

/// pi 1.6.0 (node, cli) or pi-rpc (None).
type Program<'a> = Option<(&'a Path, &'a Path)>;

fn spawn(sb: &Sandbox, program: Program<'_>, args: &[&str]) -> Pi {
    let mut all = vec!["--tools", "read,bash,codemode"];
    all.extend_from_slice(args);
    match program {
        Some((node, cli)) => {
            let mut cmd = reference_command(sb, node, cli);
            cmd.arg("--offline").args(&all).env("PI_OFFLINE", "1");
            Pi::start_unchecked(cmd)
        }
        None => sb.spawn(&all),
    }
}

/// What a program showed: each script's outcome (its last output line, or
/// its first when it failed), the `codemode-store` entries announced, and
/// those of each session file with the types of the entries around them.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    outputs: Vec<String>,
    announced: Vec<Value>,
    files: Vec<Vec<Value>>,
}

/// Prompt `text` with one codemode call per script, each in its own model
/// reply, then a closing text; record the scripts' outcomes.
async fn prompt(sb: &Sandbox, pi: &mut Pi, seen: &mut Seen, text: &str, scripts: &[&str]) {
    let ids: Vec<String> = (0..scripts.len()).map(|i| format!("{text}-{i}")).collect();
    for (id, code) in ids.iter().zip(scripts) {
        sb.server().push(Reply::tool_call(id, "codemode", &json!({ "code": code }).to_string()));
    }
    sb.server().push(Reply::text(&format!("{text} done")));
    pi.send(json!({"id": text, "type": "prompt", "message": text})).await;
    let lines = pi.until_type("agent_settled").await;
    let ended = results(&lines);
    for id in &ids {
        let out = result_text(result(&ended, id));
        let line = if out.starts_with("Script completed") { out.lines().last() } else { out.lines().next() };
        seen.outputs.push(line.unwrap_or_default().to_string());
    }
    seen.announced.extend(
        lines
            .iter()
            .filter(|l| l["type"] == "entry_appended" && l["entry"]["customType"] == "codemode-store")
            .map(|l| l["entry"]["data"].clone()),
    );
}

fn entries(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().skip(1).filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// An entry's type, a message's with its role.
fn kind(entry: Option<&Value>) -> String {
    match entry {
        Some(e) if e["type"] == "message" => format!("message:{}", e["message"]["role"].as_str().unwrap_or_default()),
        Some(e) => e["type"].as_str().unwrap_or_default().to_string(),
        None => "none".to_string(),
    }
}

/// The `codemode-store` entries of a session file: data, and the entries
/// before (the parent) and after (the child) each.
fn store_entries(path: &Path) -> Vec<Value> {
    let all = entries(path);
    let by_id = |id: &Value| all.iter().find(|e| &e["id"] == id);
    all.iter()
        .filter(|e| e["type"] == "custom" && e["customType"] == "codemode-store")
        .map(|e| {
            let child = all.iter().find(|c| c["parentId"] == e["id"]);
            json!({"data": e["data"], "parent": kind(by_id(&e["parentId"])), "child": kind(child)})
        })
        .collect()
}

/// The id of the assistant message that says `text`.
fn assistant_id(path: &Path, text: &str) -> String {
    let said = |e: &&Value| {
        e["message"]["role"] == "assistant"
            && e["message"]["content"].as_array().is_some_and(|c| c.iter().any(|b| b["text"] == text))
    };
    entries(path).iter().find(said).and_then(|e| e["id"].as_str()).unwrap_or_default().to_string()
}

async fn goto(pi: &mut Pi, id: &str) {
    pi.send(json!({"id": "goto", "type": "prompt", "message": format!("/goto {id}")})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default();
    assert_eq!(note, r#"{"cancelled":false}"#, "{lines:?}");
}

/// One session stored into, then resumed in a new process and loaded from.
async fn stored_and_resumed(sb: &Sandbox, program: Program<'_>, seen: &mut Seen) -> PathBuf {
    let mut pi = spawn(sb, program, &[]);
    prompt(sb, &mut pi, seen, "one", &[SAVE]).await;
    prompt(sb, &mut pi, seen, "two", &[CHANGE, FAIL]).await;
    let original = session_file(&mut pi).await;
    pi.close_stdin();
    pi.wait().await;
    let mut pi = spawn(sb, program, &["--continue"]);
    prompt(sb, &mut pi, seen, "three", &[LOAD]).await;
    pi.close_stdin();
    pi.wait().await;
    original
}

/// [`stored_and_resumed`], then the branches: back to the first exchange by
/// tree navigation (a value stored there) and forward again, a fork before
/// the second prompt, a switch back, a new session.
async fn branches(sb: &Sandbox, program: Program<'_>) -> Seen {
    let mut seen = Seen::default();
    let original = stored_and_resumed(sb, program, &mut seen).await;
    let mut pi = spawn(sb, program, &["--continue"]);
    let leaf = entries(&original).last().and_then(|e| e["id"].as_str()).unwrap_or_default().to_string();
    goto(&mut pi, &assistant_id(&original, "one done")).await;
    prompt(sb, &mut pi, &mut seen, "four", &[&load_and_mark("nav")]).await;
    goto(&mut pi, &leaf).await;
    prompt(sb, &mut pi, &mut seen, "five", &[LOAD]).await;
    let forkable = data(&mut pi, "fm", json!({"type": "get_fork_messages"})).await;
    let two = forkable["messages"].as_array().and_then(|m| m.iter().find(|m| m["text"] == "two")).cloned();
    let two = two.and_then(|m| m["entryId"].as_str().map(str::to_string)).expect("the second prompt is forkable");
    data(&mut pi, "fork", json!({"type": "fork", "entryId": two})).await;
    prompt(sb, &mut pi, &mut seen, "six", &[&load_and_mark("fork")]).await;
    let forked = session_file(&mut pi).await;
    data(&mut pi, "switch", json!({"type": "switch_session", "sessionPath": original})).await;
    prompt(sb, &mut pi, &mut seen, "seven", &[LOAD]).await;
    data(&mut pi, "new", json!({"type": "new_session"})).await;
    prompt(sb, &mut pi, &mut seen, "eight", &[LOAD]).await;
    let fresh = session_file(&mut pi).await;
    pi.close_stdin();
    pi.wait().await;
    seen.files = [original, forked, fresh].iter().map(|f| store_entries(f)).collect();
    seen
}

/// A sandbox with the fake model server and the navigation command, or None
/// (skip) without Node.js or the extension host's packages.
async fn sandbox() -> Option<(Sandbox, PathBuf)> {
    let (node, dir) = (node22()?, host_dir()?);
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "goto.ts", GOTO);
    Some((sb, node))
}

const BOTH: &str = r#"{"k":"two","b":[2]}"#;
const FIRST: &str = r#"{"a":1,"k":"one"}"#;

#[tokio::test]
async fn a_resumed_session_loads_what_its_scripts_stored() {
    let sb = Sandbox::with_server().await;
    let mut seen = Seen::default();
    let original = stored_and_resumed(&sb, None, &mut seen).await;
    assert_eq!(seen.outputs, ["one", "true", "Script failed", BOTH], "a failed script's writes are dropped");
    let set = |data: Value| json!({"data": data, "parent": "message:assistant", "child": "message:toolResult"});
    assert_eq!(
        store_entries(&original),
        [
            set(json!({"set": {"a": 1, "k": "one"}, "delete": []})),
            set(json!({"set": {"k": "two", "b": [2]}, "delete": ["gone", "a"]})),
        ],
        "one entry per successful script that wrote, between its call and its result"
    );
    assert_eq!(seen.announced, store_entries(&original).iter().map(|e| e["data"].clone()).collect::<Vec<_>>());
}

#[tokio::test]
async fn navigation_forks_switches_and_new_sessions_see_their_branch_only() {
    let Some((sb, _)) = sandbox().await else { return };
    let seen = branches(&sb, None).await;
    assert_eq!(
        seen.outputs[4..],
        [FIRST, BOTH, FIRST, BOTH, "{}"],
        "navigated back, forward again, forked, switched back, new"
    );
    let marks = |file: &[Value]| -> Vec<Value> { file.iter().map(|e| e["data"]["set"]["f"].clone()).collect() };
    assert_eq!(marks(&seen.files[0]), [Value::Null, Value::Null, json!("nav")], "the navigated branch's entry");
    assert_eq!(marks(&seen.files[1]), [Value::Null, json!("fork")], "the fork keeps the first entry");
    assert!(seen.files[2].is_empty(), "loading alone appends nothing: {:?}", seen.files[2]);
}

#[tokio::test]
async fn store_entries_and_loaded_values_match_pi() {
    let Some(cli) = reference_cli() else { return };
    let Some((ours_sb, node)) = sandbox().await else { return };
    let Some((theirs_sb, _)) = sandbox().await else { return };
    let (ours, theirs) = tokio::join!(branches(&ours_sb, None), branches(&theirs_sb, Some((&node, &cli))));
    assert_eq!(theirs.outputs[3], BOTH, "pi resumed the values: {theirs:?}");
    assert_eq!(ours, theirs);
}
