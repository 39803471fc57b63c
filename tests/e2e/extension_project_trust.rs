//! pi's `project_trust` event in RPC mode, side by side with pi 1.6.0: a
//! project with resources that need trust (here a prompt template in
//! `.pi/prompts`) is offered to the `-e` extensions before it loads. The
//! handler's context has no UI (`hasUI` false, `mode` "rpc"; what it
//! notifies goes to stderr), the first `yes` / `no` decides over
//! `trust.json`, `remember: true` stores the answer there, a throwing
//! handler is a warning and the next one is asked. The extensions asked
//! are the session's: their factory runs once, before `project_trust`, and
//! their first `session_start` is the session's. Until then their runtime is
//! pi's unbound one: the session's actions throw pi's errors, pi's library
//! answers, and what the handler notifies is printed plain on stderr.

use std::path::Path;

use serde_json::{Value, json};

use crate::clients::{installed_tool, node22, repo_root};
use crate::harness::Sandbox;

/// A handler that notes what its context says, then answers `answer` (a JS expression).
fn extension(answer: &str) -> String {
    format!(
        r#"export default function (pi: any) {{
  pi.on("project_trust", async (event: any, ctx: any) => {{
    ctx.ui.notify(`trust asked: cwd ${{event.cwd === ctx.cwd}} ui ${{ctx.hasUI}} mode ${{ctx.mode}} select ${{await ctx.ui.select("t", ["a"])}}`);
    return {answer};
  }});
}}
"#
    )
}

#[derive(Debug, PartialEq)]
struct Seen {
    /// The project's prompt template was loaded (the project was trusted).
    project_loaded: bool,
    /// `trust.json` afterwards, the cwd's key written `<cwd>`.
    trust_file: Option<Value>,
    /// The handler's note reached stderr.
    noted: bool,
    /// A throwing handler was reported with pi's words.
    error_reported: bool,
}

/// A sandbox whose project has a resource that needs trust (a prompt
/// template), the extension host configured; the canonical cwd.
fn project_sandbox(node: &Path) -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::offline();
    sb.write_settings(
        json!({"extensionHostNode": node, "extensionHostDir": repo_root().join("target/tools/extension-host")}),
    );
    let prompts = sb.cwd.path().join(".pi/prompts");
    std::fs::create_dir_all(&prompts).expect("prompts dir");
    std::fs::write(prompts.join("proj.md"), "---\ndescription: project prompt\n---\nHello from the project\n")
        .expect("prompt");
    let cwd = std::fs::canonicalize(sb.cwd.path()).expect("cwd");
    (sb, cwd)
}

/// Run pi-rpc (or pi 1.6.0) in RPC mode with `args`, ask `get_commands`,
/// close its input; its reply, and stderr.
async fn commands_of(sb: &Sandbox, node: &Path, reference: bool, args: &[String]) -> (Value, String) {
    let mut all: Vec<&str> = vec!["--mode", "rpc", "--no-session"];
    all.extend(args.iter().map(String::as_str));
    let input = "{\"id\":\"c\",\"type\":\"get_commands\"}\n";
    let (out, err) = if reference {
        run_reference(sb, node, &all, input).await
    } else {
        let (_, out, err) = sb.run(&all, input).await;
        (out, err)
    };
    let reply = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == "c")
        .unwrap_or_else(|| panic!("no get_commands reply (reference: {reference}): {out}\n{err}"));
    (reply, err)
}

async fn observe(reference: bool, answers: &[&str], stored: Option<bool>) -> Seen {
    let node = node22().expect("node 22");
    let (sb, cwd) = project_sandbox(&node);
    let trust_path = sb.agent_dir.path().join("trust.json");
    if let Some(decision) = stored {
        std::fs::write(&trust_path, format!("{}\n", json!({cwd.display().to_string(): decision}))).expect("trust.json");
    }
    let mut args = Vec::new();
    for (i, answer) in answers.iter().enumerate() {
        let file = sb.home.path().join(format!("trust{i}.ts"));
        std::fs::write(&file, extension(answer)).expect("extension");
        args.extend(["-e".to_string(), file.display().to_string()]);
    }
    let (reply, err) = commands_of(&sb, &node, reference, &args).await;
    let project_loaded = reply["data"]["commands"].as_array().is_some_and(|l| l.iter().any(|c| c["name"] == "proj"));
    let trust_file = std::fs::read_to_string(&trust_path).ok().map(|text| {
        let text = text.replace(&cwd.display().to_string(), "<cwd>");
        serde_json::from_str::<Value>(&text).expect("trust.json is JSON")
    });
    Seen {
        project_loaded,
        trust_file,
        noted: err.contains("trust asked: cwd true ui false mode rpc select undefined"),
        error_reported: err.contains("project_trust error: Cannot read properties of undefined (reading 'trusted')"),
    }
}

/// An extension that writes to `log` each run of its factory and each
/// event it sees (with `ctx.isProjectTrusted()` and its command's
/// presence), and answers `project_trust` with `answer` when it listens.
fn logging_extension(log: &Path, answer: Option<&str>) -> String {
    let trust = answer.map_or(String::new(), |answer| {
        format!(
            r#"  pi.on("project_trust", async () => {{
    note("project_trust");
    return {{ trusted: "{answer}" }};
  }});
"#
        )
    });
    format!(
        r#"import {{ appendFileSync }} from "node:fs";
const note = (line: string) => appendFileSync({log:?}, line + "\n");
export default function (pi: any) {{
  note("factory");
{trust}  pi.registerCommand("logged", {{ description: "d", handler: async () => {{}} }});
  pi.on("session_start", async (event: any, ctx: any) => {{
    note(`session_start ${{event.reason}} trusted ${{ctx.isProjectTrusted()}}`);
  }});
  pi.on("session_shutdown", async (event: any) => note(`session_shutdown ${{event.reason}}`));
}}
"#
    )
}

/// What the lifecycle logs say: the `-e` extension's (asked about trust)
/// and the project's own extension's, and the commands the session has.
#[derive(Debug, PartialEq)]
struct Lifecycle {
    asked: Vec<String>,
    project: Vec<String>,
    commands: Vec<String>,
}

async fn lifecycle(reference: bool, answer: &str) -> Lifecycle {
    let node = node22().expect("node 22");
    let (sb, cwd) = project_sandbox(&node);
    let asked_log = sb.home.path().join("asked.log");
    let project_log = sb.home.path().join("project.log");
    let asked = sb.home.path().join("asked.ts");
    std::fs::write(&asked, logging_extension(&asked_log, Some(answer))).expect("extension");
    let project_dir = cwd.join(".pi/extensions");
    std::fs::create_dir_all(&project_dir).expect("project extensions");
    std::fs::write(
        project_dir.join("project.ts"),
        logging_extension(&project_log, None).replace("\"logged\"", "\"project-logged\""),
    )
    .expect("project extension");
    let (reply, _) = commands_of(&sb, &node, reference, &["-e".to_string(), asked.display().to_string()]).await;
    let read = |log: &Path| -> Vec<String> {
        std::fs::read_to_string(log).unwrap_or_default().lines().map(String::from).collect()
    };
    let mut commands: Vec<String> = reply["data"]["commands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(String::from))
        // pi's `/llama` is not listed by pi-rpc (compat/DEVIATIONS.md, `prompt_templates_and_skills`).
        .filter(|name| name != "llama")
        .collect();
    commands.sort();
    Lifecycle { asked: read(&asked_log), project: read(&project_log), commands }
}

async fn run_reference(sb: &Sandbox, node: &Path, args: &[&str], input: &str) -> (String, String) {
    use tokio::io::AsyncWriteExt;
    let cli = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js").expect("reference");
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(cli).args(args).arg("--offline").current_dir(sb.cwd.path()).env_clear();
    for keep in ["PATH", "LANG", "TMPDIR"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().expect("start pi 1.6.0");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).await.expect("write stdin");
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("pi 1.6.0 ended")
        .expect("wait for pi 1.6.0");
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn tools_ready() -> bool {
    node22().is_some()
        && installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js").is_some()
        && repo_root().join("target/tools/extension-host/node_modules/jiti/package.json").is_file()
}

#[tokio::test]
async fn the_extensions_decide_project_trust_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let cases: [(&str, &[&str], Option<bool>); 3] = [
        ("yes, remembered", &[r#"{ trusted: "yes", remember: true }"#], None),
        ("no over trust.json", &[r#"{ trusted: "no" }"#], Some(true)),
        ("a throwing handler, then yes", &["undefined", r#"{ trusted: "yes" }"#], None),
    ];
    for (name, answers, stored) in cases {
        let (ours, theirs) = tokio::join!(observe(false, answers, stored), observe(true, answers, stored));
        assert_eq!(ours, theirs, "{name}: pi-rpc (left) and pi 1.6.0 (right) differ");
        match name {
            "yes, remembered" => {
                assert!(ours.project_loaded && ours.noted, "{ours:?}");
                assert_eq!(ours.trust_file, Some(json!({"<cwd>": true})));
            }
            "no over trust.json" => assert!(!ours.project_loaded, "{ours:?}"),
            _ => assert!(ours.project_loaded && ours.error_reported && ours.trust_file.is_none(), "{ours:?}"),
        }
    }
}

#[tokio::test]
async fn the_extensions_asked_about_trust_are_the_sessions_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    for answer in ["yes", "no"] {
        let (ours, theirs) = tokio::join!(lifecycle(false, answer), lifecycle(true, answer));
        assert_eq!(ours, theirs, "answer {answer}: pi-rpc (left) and pi 1.6.0 (right) differ");
        // One factory run, before the question; the first session_start is the session's.
        assert_eq!(ours.asked.iter().filter(|l| *l == "factory").count(), 1, "{ours:?}");
        assert_eq!(ours.asked[..2], ["factory".to_string(), "project_trust".to_string()], "{ours:?}");
        let trusted = answer == "yes";
        assert_eq!(ours.asked[2], format!("session_start startup trusted {trusted}"), "{ours:?}");
        assert_eq!(ours.project.first().map(String::as_str) == Some("factory"), trusted, "{ours:?}");
    }
}

/// An extension that tries pi's API while it loads for the trust question
/// (`load`) and while it answers it (`trust`), writing what each call gave
/// to `log`, notifies a line of each level, and answers yes.
fn probing_extension(log: &Path) -> String {
    format!(
        r#"import {{ appendFileSync }} from "node:fs";
import {{ SettingsManager, parseArgs, ModelRuntime, estimateTokens }} from "@earendil-works/pi-coding-agent";
const note = (line: any) => appendFileSync({log:?}, JSON.stringify(line) + "\n");
async function probe(phase: string, pi: any) {{
  const calls: [string, () => any][] = [
    ["getAllTools", () => pi.getAllTools().length],
    ["getCommands", () => pi.getCommands().length],
    ["getActiveTools", () => pi.getActiveTools()],
    ["getThinkingLevel", () => pi.getThinkingLevel()],
    ["getSessionName", () => pi.getSessionName()],
    ["setSessionName", () => pi.setSessionName("n")],
    ["getSettings", () => typeof pi.getSettings()],
    ["setModel", () => pi.setModel({{ provider: "fake", id: "fake-model" }})],
    ["setThinkingLevel", () => pi.setThinkingLevel("low")],
    ["setActiveTools", () => pi.setActiveTools(["read"])],
    ["sendMessage", () => pi.sendMessage({{ customType: "x", content: "c", display: false }})],
    ["sendUserMessage", () => pi.sendUserMessage("hi")],
    ["appendEntry", () => pi.appendEntry("x", {{}})],
    ["setLabel", () => pi.setLabel("e", "l")],
    ["exec", async () => (await pi.exec("echo", ["hi"])).stdout],
    ["settings", () => SettingsManager.create(process.cwd()).getDefaultProjectTrust()],
    ["parseArgs", () => parseArgs(["--model", "a", "-p", "x"])],
    ["estimateTokens", () => estimateTokens({{ role: "user", content: "hello world", timestamp: 0 }})],
    ["modelRuntime", async () => {{
      const rt = await ModelRuntime.create();
      return [rt.getModel("anthropic", "claude-sonnet-4-5")?.id ?? null, rt.getProviderAuthStatus("anthropic")];
    }}],
  ];
  for (const [name, call] of calls) {{
    try {{ const value = await call(); note([phase, name, value === undefined ? "undefined" : value]); }}
    catch (e: any) {{ note([phase, name, {{ error: String(e?.message ?? e) }}]); }}
  }}
}}
export default async function (pi: any) {{
  await probe("load", pi);
  pi.on("project_trust", async (_event: any, ctx: any) => {{
    await probe("trust", pi);
    pi.events.emit("trust-ping", {{ from: "asked" }});
    ctx.ui.notify("an info note");
    ctx.ui.notify("a warning note", "warning");
    ctx.ui.notify("an error note", "error");
    return {{ trusted: "yes" }};
  }});
  pi.on("session_start", async () => note(["session", "getAllTools", pi.getAllTools().length > 0]));
}}
"#
    )
}

/// An extension that notes what other extensions emit on `pi.events`.
fn listening_extension(log: &Path) -> String {
    format!(
        r#"import {{ appendFileSync }} from "node:fs";
export default function (pi: any) {{
  pi.events.on("trust-ping", (data: any) => appendFileSync({log:?}, JSON.stringify(["listener", "trust-ping", data]) + "\n"));
}}
"#
    )
}

/// pi's unbound runtime for an extension asked about trust: the actions
/// that need a session throw pi's errors while it loads and answers;
/// pi's library (settings, `parseArgs`, `estimateTokens`, a model runtime
/// over the agent directory's files) answers, `pi.events` reaches the other
/// extensions; the session's actions work once it started. What the handler notifies is printed on stderr as it
/// is, whatever its level, as pi prints it.
#[tokio::test]
async fn an_extension_asked_about_trust_meets_pis_unbound_runtime() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let probe = |reference: bool| async move {
        let node = node22().expect("node 22");
        let (sb, _) = project_sandbox(&node);
        let log = sb.home.path().join("probe.log");
        let file = sb.home.path().join("probe.ts");
        std::fs::write(&file, probing_extension(&log)).expect("extension");
        let listener = sb.home.path().join("listener.ts");
        std::fs::write(&listener, listening_extension(&log)).expect("listener");
        let args = ["-e".to_string(), file.display().to_string(), "-e".to_string(), listener.display().to_string()];
        let (_, err) = commands_of(&sb, &node, reference, &args).await;
        // Sorted: the other extension's note comes when its process reads the event.
        let mut lines: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        lines.sort_by_key(|l| l.to_string());
        let notes: Vec<String> = err.lines().filter(|l| l.contains(" note")).map(String::from).collect();
        (lines, notes)
    };
    let (ours, theirs) = tokio::join!(probe(false), probe(true));
    let unbound = json!({"error": "Extension runtime not initialized. Action methods cannot be called during extension loading."});
    assert!(ours.0.contains(&json!(["trust", "getAllTools", unbound])), "{:?}", ours.0);
    assert!(ours.0.contains(&json!(["load", "estimateTokens", 3])), "{:?}", ours.0);
    assert!(ours.0.contains(&json!(["session", "getAllTools", true])), "{:?}", ours.0);
    assert!(ours.0.contains(&json!(["listener", "trust-ping", {"from": "asked"}])), "{:?}", ours.0);
    assert_eq!(ours.1, ["an info note", "a warning note", "an error note"], "stderr: {:?}", ours.1);
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}

/// pi-rpc alone (pi has no process extensions and reports load failures
/// its own way): an extension that fails to load while asked about trust
/// is not started again, and its failure is the session's one
/// `extension_error`; a process extension is started again for the
/// session, greeted with the session's `hello`.
#[tokio::test]
async fn a_failed_or_process_extension_asked_about_trust_starts_once_for_the_session() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let node = node22().expect("node 22");
    let (sb, _) = project_sandbox(&node);
    let runs = sb.home.path().join("runs.log");
    let failing = sb.home.path().join("failing.ts");
    std::fs::write(
        &failing,
        format!(
            "import {{ appendFileSync }} from \"node:fs\";\nexport default function () {{\n  appendFileSync({runs:?}, \"factory\\n\");\n  throw new Error(\"no good\");\n}}\n"
        ),
    )
    .expect("failing extension");
    let hellos = sb.home.path().join("hellos.log");
    let process = crate::extensions::write_script(
        &sb,
        "asked.py",
        &format!(
            r#"import json, sys
hello = json.loads(sys.stdin.readline())
with open({hellos:?}, "a") as f:
    f.write(json.dumps(hello.get("sessionId")) + "\n")
print(json.dumps({{"type": "register", "name": "asked", "commands": [{{"name": "asked"}}]}}), flush=True)
for line in sys.stdin:
    pass
"#,
            hellos = hellos.display().to_string()
        ),
    );
    let args = ["--no-session", "-e", &failing.display().to_string(), "-e", &process];
    let mut pi = sb.spawn(&args);
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "s").await;
    let session_id = lines.last().and_then(|v| v["data"]["sessionId"].as_str()).expect("session id").to_string();
    let errors: Vec<&Value> = lines.iter().filter(|v| v["type"] == "extension_error").collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0]["error"].as_str().is_some_and(|e| e.contains("no good")), "{errors:?}");
    assert_eq!(std::fs::read_to_string(&runs).unwrap_or_default(), "factory\n", "the failing factory ran once");
    let greeted: Vec<String> = std::fs::read_to_string(&hellos).unwrap_or_default().lines().map(String::from).collect();
    assert_eq!(greeted, ["\"\"".to_string(), format!("\"{session_id}\"")], "the process extension's hellos");
}

/// A user-level extension applying pi's `createMcpExtension()` in its
/// factory loads while it is asked about trust, and its `/mcp` is the
/// session's: the factory's hand-over is kept for the session, as pi keeps it.
#[tokio::test]
async fn an_extension_applying_pis_mcp_factory_before_trust_keeps_it_for_the_session_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    async fn seen(reference: bool) -> Value {
        let node = node22().expect("node 22");
        let (sb, _cwd) = project_sandbox(&node);
        let file = sb.home.path().join("mcp-factory.ts");
        std::fs::write(
            &file,
            r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
export default function (pi: any) {
  createMcpExtension()(pi);
  pi.on("project_trust", () => ({ trusted: "yes" }));
}
"#,
        )
        .expect("extension");
        let file = file.display().to_string();
        let args = ["--mode", "rpc", "--no-session", "-e", file.as_str()];
        let input = "{\"id\":\"c\",\"type\":\"get_commands\"}\n";
        let out =
            if reference { run_reference(&sb, &node, &args, input).await.0 } else { sb.run(&args, input).await.1 };
        let lines: Vec<Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let errors: Vec<&Value> =
            lines.iter().filter(|l| l["type"] == "extension_error").map(|l| &l["error"]).collect();
        let reply = lines.iter().find(|l| l["id"] == "c").unwrap_or_else(|| panic!("no get_commands reply: {out}"));
        let commands: Vec<Value> = reply["data"]["commands"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["name"] == "mcp" || c["name"] == "proj")
            .map(|c| {
                let from_extension = c["sourceInfo"]["path"].as_str().is_some_and(|p| p.ends_with("mcp-factory.ts"));
                json!({"name": c["name"], "fromExtension": from_extension})
            })
            .collect();
        json!({"commands": commands, "extensionErrors": errors})
    }
    let (ours, theirs) = tokio::join!(seen(false), seen(true));
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
    assert_eq!(ours["extensionErrors"], json!([]), "{ours}");
    assert!(ours["commands"].as_array().is_some_and(|l| l.iter().any(|c| c["fromExtension"] == true)), "{ours}");
}
