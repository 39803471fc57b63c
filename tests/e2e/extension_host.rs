//! The TypeScript extension host end to end: pi modules that throw (at
//! load, in a command, in an event handler), hang, or call `process.exit()`
//! are reported and stopped while the session and the other extensions go on;
//! a missing Node.js is one clear `extension_error` and nothing else breaks;
//! without a pi module no Node.js process is started at all.
//!
//! Needs node 22 and the host's packages from `target/tools`
//! (`scripts/install-test-tools.sh`); skipped without them unless
//! `PI_RPC_REQUIRE_TOOLS=1`.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::{node22, repo_root};
use crate::extensions::write_script;
use crate::harness::{Pi, Sandbox};

/// The host's packages (jiti, typebox) installed for the tests.
pub(crate) fn host_dir() -> Option<PathBuf> {
    let dir = repo_root().join("target/tools/extension-host");
    if dir.join("node_modules/jiti/package.json").is_file() {
        return Some(dir);
    }
    if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("the extension host's packages are missing in {}: run scripts/install-test-tools.sh", dir.display());
    }
    eprintln!("SKIP: the extension host's packages are missing in {}", dir.display());
    None
}

/// Settings that point the host at the test tools (`node`: the Node.js to use).
pub(crate) fn host_settings(sb: &Sandbox, node: &std::path::Path, dir: &std::path::Path, extra: Value) {
    let mut settings = json!({
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "extensionHostNode": node,
        "extensionHostDir": dir,
    });
    if let (Value::Object(s), Value::Object(e)) = (&mut settings, extra) {
        s.extend(e);
    }
    sb.write_settings(settings);
}

pub(crate) fn write_module(sb: &Sandbox, name: &str, source: &str) -> String {
    let dir = sb.agent_dir.path().join("extensions");
    std::fs::create_dir_all(&dir).expect("extensions dir");
    let path = dir.join(name);
    std::fs::write(&path, source).expect("write module");
    path.display().to_string()
}

fn errors_of<'a>(lines: &'a [Value], path: &str) -> Vec<&'a Value> {
    lines.iter().filter(|v| v["type"] == "extension_error" && v["extensionPath"] == path).collect()
}

/// A process extension beside the pi modules, with one command.
const PYTHON: &str = "import json, sys\nprint(json.dumps({'type': 'register', 'commands': [{'name': 'py'}]}), flush=True)\nsys.stdin.read()\n";

const GOOD: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  pi.registerCommand("still-here", { handler: async (_args, ctx) => ctx.ui.notify(`alive in ${ctx.mode}`, "info") });
  pi.on("turn_end", async () => { throw new Error("turn_end handler failed"); });
}
"#;

#[tokio::test]
async fn throwing_hanging_and_exiting_extensions_are_isolated() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({"extensionTimeoutMs": 2000}));
    let good = write_module(&sb, "good.ts", GOOD);
    // Loaded on their own below (`-e`), not discovered here.
    let at_load =
        write_script(&sb, "at-load.ts", "export default function () { throw new Error(\"boom at load\"); }\n");
    let no_factory = write_script(&sb, "no-factory.ts", "export const answer: number = 42;\n");
    let commands = write_module(
        &sb,
        "commands.ts",
        r#"export default function (pi: any) {
  pi.registerCommand("throw", { handler: async () => { throw new Error("command failed"); } });
  pi.registerCommand("later", { handler: async () => { setTimeout(() => { throw new Error("stray async error"); }, 10); } });
}
"#,
    );
    let hangs = write_module(
        &sb,
        "hangs.ts",
        "export default function (pi: any) {\n  pi.registerCommand(\"hang\", { handler: async () => { for (;;) {} } });\n}\n",
    );
    let exits = write_module(
        &sb,
        "exits.ts",
        "export default function (pi: any) {\n  pi.registerCommand(\"bye\", { handler: async () => { process.exit(3); } });\n}\n",
    );
    let python = write_script(&sb, "plain.py", PYTHON);
    sb.server().push(Reply::text("Hi."));
    let mut pi = sb.spawn(&["--no-session", "-e", &python]);

    // Startup: the two broken modules are reported, the others register.
    let lines = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(lines["success"], true);
    let commands_list = pi.call("c", json!({"type": "get_commands"})).await;
    let mut names: Vec<&str> =
        commands_list["data"]["commands"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    names.sort();
    assert_eq!(names, ["bye", "hang", "later", "mcp", "py", "still-here", "throw"], "mcp: the built-in command");

    // A throwing command: reported, the extension keeps running.
    pi.send(json!({"id": "t", "type": "prompt", "message": "/throw"})).await;
    let lines = pi.until(|v| v["id"] == "t").await;
    let failed = lines.iter().find(|v| v["type"] == "extension_error").expect("command error");
    assert_eq!(failed["extensionPath"], "command:throw");
    assert_eq!(failed["error"], "command failed");
    // An error thrown later, outside any handler: reported, still running.
    // Its command's reply and the error thrown 10 ms after it may come in either order.
    pi.send(json!({"id": "l", "type": "prompt", "message": "/later"})).await;
    let mut lines = pi.until(|v| v["type"] == "extension_error").await;
    let stray = lines.pop().unwrap();
    let reply = match lines.into_iter().find(|v| v["type"] == "response" && v["id"] == "l") {
        Some(reply) => reply,
        None => pi.response("l").await,
    };
    assert_eq!(reply["success"], true, "{reply}");
    assert_eq!(
        (stray["extensionPath"].as_str(), stray["error"].as_str()),
        (Some(commands.as_str()), Some("stray async error"))
    );

    // process.exit() in a command: that host ends, the error says how.
    pi.send(json!({"id": "b", "type": "prompt", "message": "/bye"})).await;
    let lines = pi.until(|v| v["type"] == "extension_error" && v["extensionPath"] == exits.as_str()).await;
    let exited = lines.last().unwrap();
    assert_eq!(exited["event"], "command", "{exited}");
    assert!(exited["error"].as_str().unwrap().contains("exit status: 3"), "{exited}");

    // A hung command: stopped after the call timeout; meanwhile the session answers.
    pi.send(json!({"id": "h", "type": "prompt", "message": "/hang"})).await;
    let state = pi.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(state["success"], true);
    let lines = pi.until(|v| v["type"] == "extension_error" && v["extensionPath"] == hangs.as_str()).await;
    let hung = lines.last().unwrap();
    assert_eq!(hung["event"], "command");
    assert!(hung["error"].as_str().unwrap().contains("within 2000 ms"), "{hung}");

    // The rest goes on: the good extension, the Python one, a model run.
    pi.send(json!({"id": "g", "type": "prompt", "message": "/still-here"})).await;
    let lines = pi.until(|v| v["id"] == "g").await;
    assert!(lines.iter().any(|v| v["method"] == "notify" && v["message"] == "alive in rpc"), "{lines:?}");
    let commands_list = pi.call("c2", json!({"type": "get_commands"})).await;
    let mut names: Vec<&str> =
        commands_list["data"]["commands"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    names.sort();
    assert_eq!(names, ["later", "mcp", "py", "still-here", "throw"], "the dead extensions' commands are gone");
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    let lines = pi.until(|v| v["type"] == "agent_settled").await;
    // turn_end is an actionable boundary pi awaits: the handler's error comes before the turn ends.
    let handler = errors_of(&lines, &good);
    assert_eq!(handler.len(), 1, "{lines:?}");
    let position = |pred: &dyn Fn(&Value) -> bool| lines.iter().position(pred);
    let error_at = position(&|v| v["type"] == "extension_error" && v["extensionPath"] == good.as_str());
    assert!(error_at < position(&|v| v["type"] == "turn_end"), "{lines:?}");
    assert_eq!(
        (handler[0]["event"].as_str(), handler[0]["error"].as_str()),
        (Some("turn_end"), Some("turn_end handler failed"))
    );

    pi.close_stdin();
    let rest = pi.drain().await;
    assert!(pi.wait().await.success());
    let all_errors: Vec<Value> = rest.into_iter().filter(|v| v["type"] == "extension_error").collect();
    assert!(all_errors.is_empty(), "quiet shutdown: {all_errors:?}");
    check_load_errors(&sb, &at_load, &no_factory).await;
}

/// Load failures are reported with pi's wording, and the session starts anyway.
async fn check_load_errors(sb: &Sandbox, at_load: &str, no_factory: &str) {
    let mut pi: Pi = sb.spawn(&["--no-session", "--no-extensions", "-e", at_load, "-e", no_factory]);
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["id"] == "s").await;
    let load = errors_of(&lines, at_load);
    assert_eq!(load.len(), 1, "{lines:?}");
    assert_eq!(load[0]["event"], "load");
    assert_eq!(load[0]["error"], "Failed to load extension: boom at load");
    let factory = errors_of(&lines, no_factory);
    assert_eq!(factory[0]["error"], format!("Extension does not export a valid factory function: {no_factory}"));
    assert_eq!(lines.last().unwrap()["success"], true);
}

#[tokio::test]
async fn without_node_one_clear_error_and_the_rest_works() {
    let Some(dir) = host_dir() else { return };
    let sb = Sandbox::with_server().await;
    let missing = sb.home.path().join("no-such-node");
    host_settings(&sb, &missing, &dir, json!({}));
    let module = write_module(&sb, "gate.ts", GOOD);
    let python = write_script(&sb, "plain.py", PYTHON);
    sb.server().push(Reply::text("Hi."));
    let mut pi = sb.spawn(&["--no-session", "-e", &python]);
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["id"] == "s").await;
    let errors: Vec<&Value> = lines.iter().filter(|v| v["type"] == "extension_error").collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["extensionPath"], module.as_str());
    assert_eq!(errors[0]["event"], "startup");
    let text = errors[0]["error"].as_str().unwrap();
    assert!(text.contains("Node.js >= 20") && text.contains(&missing.display().to_string()), "{text}");
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    assert_eq!(commands["data"]["commands"][0]["name"], "py", "before the built-in mcp, as in pi");
    pi.call("p", json!({"type": "prompt", "message": "hello"})).await;
    pi.until(|v| v["type"] == "agent_settled").await;
}

#[tokio::test]
async fn no_pi_module_no_node_process() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let sb = Sandbox::offline();
    // A Node.js that leaves a mark when started.
    let mark = sb.home.path().join("node-started");
    let spy = sb.home.path().join("node-spy");
    std::fs::write(&spy, format!("#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n", mark.display(), node.display()))
        .expect("write spy");
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    sb.write_settings(json!({"extensionHostNode": spy, "extensionHostDir": dir}));
    let python = write_script(
        &sb,
        "plain.py",
        "import json, sys\nprint(json.dumps({'type': 'register'}), flush=True)\nsys.stdin.read()\n",
    );
    let mut pi = sb.spawn(&["--no-session", "-e", &python]);
    assert_eq!(pi.call("s", json!({"type": "get_state"})).await["success"], true);
    pi.close_stdin();
    pi.drain().await;
    pi.wait().await;
    assert!(!mark.exists(), "no pi module: node must not start");

    // The same with a pi module does start it (the spy works).
    let module = write_module(&sb, "hello.ts", GOOD);
    let mut pi = sb.spawn(&["--no-session", "-e", &module]);
    let commands = pi.call("c", json!({"type": "get_commands"})).await;
    assert_eq!(commands["data"]["commands"][0]["name"], "still-here", "before the built-in mcp, as in pi");
    assert!(mark.exists());
}

#[test]
fn the_hosts_helpers_compute_what_pis_compute() {
    let Some(node) = node22() else { return };
    let package = repo_root().join("target/tools/reference/node_modules/@earendil-works/pi-coding-agent");
    if !package.join("dist/index.js").is_file() {
        if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("the reference pi is missing in {}: run scripts/install-test-tools.sh", package.display());
        }
        eprintln!("SKIP: the reference pi is missing in {}", package.display());
        return;
    }
    let script = repo_root().join("tests/extension-host/shims_match_pi.mjs");
    let host = repo_root().join("target/tools/extension-host");
    let out = std::process::Command::new(node).arg(script).arg(&package).arg(&host).output().expect("run node");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// pi's `ctx.reload()` loads every extension again: one whose host crashed
/// (`process.exit()`) is started afresh, its command back and its
/// `session_start` with reason "reload"; it is not reported again.
#[tokio::test]
async fn a_crashed_extension_is_loaded_afresh_by_a_reload() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    let exits = write_module(
        &sb,
        "exits.ts",
        r#"export default function (pi: any) {
  pi.registerCommand("bye", { handler: async () => { process.exit(3); } });
  pi.on("session_start", async (event: any, ctx: any) => ctx.ui.notify(`exits start ${event.reason}`, "info"));
}
"#,
    );
    write_module(
        &sb,
        "reloader.ts",
        "export default function (pi: any) {\n  pi.registerCommand(\"again\", { handler: async (_args: string, ctx: any) => { await ctx.reload(); } });\n}\n",
    );
    let mut pi = sb.spawn(&["--no-session"]);
    let names = |reply: &Value| {
        let mut names: Vec<String> = reply["data"]["commands"]
            .as_array()
            .map(|list| list.iter().filter_map(|c| c["name"].as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    assert_eq!(names(&pi.call("c1", json!({"type": "get_commands"})).await), ["again", "bye", "mcp"]);

    pi.send(json!({"id": "b", "type": "prompt", "message": "/bye"})).await;
    pi.until(|v| v["type"] == "extension_error" && v["extensionPath"] == exits.as_str()).await;
    assert_eq!(
        names(&pi.call("c2", json!({"type": "get_commands"})).await),
        ["again", "mcp"],
        "the crashed one's command is gone"
    );

    pi.send(json!({"id": "r", "type": "prompt", "message": "/again"})).await;
    // The command's reply and the new instance's greeting, in either order.
    let (mut replied, mut started) = (false, false);
    let lines = pi
        .until(|v| {
            replied |= v["type"] == "response" && v["id"] == "r";
            started |= v["method"] == "notify" && v["message"] == "exits start reload";
            replied && started
        })
        .await;
    let reply = lines.iter().find(|v| v["type"] == "response" && v["id"] == "r");
    assert_eq!(reply.map(|v| v["success"].clone()), Some(json!(true)), "{lines:?}");
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    assert_eq!(names(&pi.call("c3", json!({"type": "get_commands"})).await), ["again", "bye", "mcp"], "loaded afresh");
    pi.close_stdin();
    assert!(pi.wait().await.success());
}
