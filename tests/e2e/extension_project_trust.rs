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
    let cwd = add_project_prompt(&sb);
    (sb, cwd)
}

/// Give `sb`'s project a resource that needs trust (a prompt template); the canonical cwd.
fn add_project_prompt(sb: &Sandbox) -> std::path::PathBuf {
    let prompts = sb.cwd.path().join(".pi/prompts");
    std::fs::create_dir_all(&prompts).expect("prompts dir");
    std::fs::write(prompts.join("proj.md"), "---\ndescription: project prompt\n---\nHello from the project\n")
        .expect("prompt");
    std::fs::canonicalize(sb.cwd.path()).expect("cwd")
}

/// pi-rpc (or pi 1.6.0) in RPC mode in `sb`, no session file, offline, with `args`.
pub(crate) fn spawn_either(sb: &Sandbox, node: &Path, reference: bool, args: &[&str]) -> crate::harness::Pi {
    if !reference {
        let mut all = vec!["--no-session"];
        all.extend_from_slice(args);
        return sb.spawn(&all);
    }
    let cli = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js").expect("reference");
    let mut cmd = crate::extension_provider_events::reference_command(sb, node, &cli);
    cmd.args(["--no-session", "--offline"]).args(args).env("PI_OFFLINE", "1");
    crate::harness::Pi::start_unchecked(cmd)
}

/// The JSON lines of `log`, sorted (extensions in separate processes write in no fixed order).
fn sorted_log(log: &Path) -> Vec<Value> {
    let mut lines: Vec<Value> = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    lines.sort_by_key(|l| l.to_string());
    lines
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

pub(crate) fn tools_ready() -> bool {
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
        let lines = sorted_log(&log);
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

/// A user-level extension registering MCP servers while it loads for the
/// trust question and while it answers it (`SERVER` is server-everything's
/// stdio config); `LOG` gets what each call gave.
const MCP_REGISTRAR: &str = r#"import { appendFileSync } from "node:fs";
const SERVER: any = SERVER_CONFIG;
const note = (...line: any[]) => appendFileSync(LOG, JSON.stringify(["registrar", ...line]) + "\n");
const names = (pi: any) => pi.getMcpServers().map((s: any) => `${s.name}:${s.config.exposure}:${s.extensionPath.endsWith("registrar.ts")}`);
function attempt(phase: string, what: string, call: () => any) {
  try { const value = call(); note(phase, what, value === undefined ? "undefined" : value); }
  catch (e: any) { note(phase, what, { error: String(e?.message ?? e).replaceAll(AGENT_DIR, "<agent>") }); }
}
export default function (pi: any) {
  attempt("load", "register early", () => pi.registerMcpServer("early", SERVER));
  attempt("load", "servers", () => names(pi));
  attempt("load", "register a bad name", () => pi.registerMcpServer("no spaces", SERVER));
  attempt("load", "unregister an unknown one", () => pi.unregisterMcpServer("missing"));
  pi.on("project_trust", async () => {
    attempt("trust", "servers", () => names(pi));
    attempt("trust", "register late", () => pi.registerMcpServer("late", { ...SERVER, exposure: "hidden" }));
    attempt("trust", "register gone", () => pi.registerMcpServer("gone", SERVER));
    attempt("trust", "unregister gone", () => pi.unregisterMcpServer("gone"));
    attempt("trust", "servers after", () => names(pi));
    return { trusted: "undecided" };
  });
  pi.on("mcp_servers_change", (event: any) => note("event", "mcp_servers_change", event.servers.map((s: any) => s.name)));
  pi.on("session_start", () => attempt("session", "servers", () => names(pi)));
}
"#;

/// A command-line extension (asked about trust before the user-level
/// registrar, as pi asks them): what it sees of the registrar's servers,
/// and taking one of their names.
const MCP_NEIGHBOUR: &str = r#"import { appendFileSync } from "node:fs";
const note = (...line: any[]) => appendFileSync(LOG, JSON.stringify(["neighbour", ...line]) + "\n");
export default function (pi: any) {
  pi.on("project_trust", async () => {
    note("trust", "servers", pi.getMcpServers().map((s: any) => s.name));
    try { pi.registerMcpServer("early", { command: "node" }); note("trust", "take early", "accepted"); }
    catch (e: any) { note("trust", "take early", String(e?.message).replaceAll(AGENT_DIR, "<agent>")); }
    return { trusted: "undecided" };
  });
}
"#;

/// MCP servers registered by the extensions asked about trust, before the
/// session starts, are kept for the session as pi keeps them: the calls
/// answer as pi's (a loading extension's own registration counts once it
/// has loaded, pi's errors for a bad name and a name taken), nothing is
/// announced, and the session's MCP client connects them: the first
/// request offers the server's tools and the model's call runs.
#[tokio::test]
async fn mcp_servers_registered_before_the_session_are_the_sessions_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let Some(servers) = crate::mcp::Servers::find() else { return };
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let server = json!({"command": servers.node, "args": [script, "stdio"], "exposure": "direct"});
    let node = node22().expect("node 22");
    let dir = repo_root().join("target/tools/extension-host");
    let seen = |reference: bool| {
        let (server, node, dir) = (server.clone(), node.clone(), dir.clone());
        async move {
            use pi_compat::fake_server::{FakeToolCall, Reply};
            let sb = Sandbox::with_server().await;
            sb.server().push(Reply::tool_calls([FakeToolCall::new("c1", "mcp__early__get_sum", r#"{"a":1,"b":2}"#)]));
            sb.server().set_fallback(Reply::text("done"));
            crate::extension_host::host_settings(&sb, &node, &dir, json!({}));
            add_project_prompt(&sb);
            let log = sb.home.path().join("mcp.log");
            let agent_dir = sb.agent_dir.path().display().to_string();
            let fill = |source: &str| {
                source
                    .replace("SERVER_CONFIG", &server.to_string())
                    .replace("AGENT_DIR", &format!("{agent_dir:?}"))
                    .replace("LOG", &format!("{:?}", log.display().to_string()))
            };
            crate::extension_host::write_module(&sb, "registrar.ts", &fill(MCP_REGISTRAR));
            let neighbour = sb.home.path().join("neighbour.ts");
            std::fs::write(&neighbour, fill(MCP_NEIGHBOUR)).expect("neighbour");
            let neighbour = neighbour.display().to_string();
            let mut pi = spawn_either(&sb, &node, reference, &["-e", &neighbour]);
            pi.send(json!({"id": "p", "type": "prompt", "message": "sum"})).await;
            let lines = pi.until_type("agent_settled").await;
            let errors: Vec<&Value> = lines.iter().filter(|v| v["type"] == "extension_error").collect();
            let sum = crate::mcp::result_text(crate::mcp::result(&crate::mcp::results(&lines), "c1"));
            pi.close_stdin();
            let requests = sb.server().requests();
            let first_tools: Vec<String> = crate::mcp::tool_names(&requests[0].body)
                .into_iter()
                .filter(|t| t.starts_with("mcp__early__get_s"))
                .collect();
            json!({"log": sorted_log(&log), "sum": sum, "firstTools": first_tools, "errors": errors})
        }
    };
    let (ours, theirs) = tokio::join!(seen(false), seen(true));
    let log = ours["log"].as_array().cloned().unwrap_or_default();
    for expected in [
        json!(["registrar", "load", "servers", []]),
        json!(["registrar", "trust", "servers after", ["early:direct:true", "late:hidden:true"]]),
        json!(["registrar", "session", "servers", ["early:direct:true", "late:hidden:true"]]),
        // Asked first, as pi asks the command-line extensions first: the registrar's "late" is not there yet.
        json!(["neighbour", "trust", "servers", ["early"]]),
        json!([
            "neighbour",
            "trust",
            "take early",
            "MCP server \"early\" is already registered by extension \"<agent>/extensions/registrar.ts\""
        ]),
    ] {
        assert!(log.contains(&expected), "{expected} not in {log:?}");
    }
    assert!(!log.iter().any(|l| l[1] == "event"), "nothing announced: {log:?}");
    assert_eq!(ours["sum"], "The sum of 1 and 2 is 3.", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}

/// An extension's `ModelRuntime` registering a provider with an OAuth
/// login (`registerProvider(id, {oauth})`) signs in with it as pi's
/// runtime does, while it answers the trust question and in the session:
/// the registration's `login` gets pi-ai's callbacks over the caller's
/// `notify` / `prompt`, the credential is stored with `type: "oauth"`, the
/// auth answers read it through `getApiKey`, and an API-key login is
/// refused, as the registration gives no key.
#[tokio::test]
async fn a_model_runtimes_registered_oauth_login_signs_in_as_in_pi() {
    if !tools_ready() {
        assert_ne!(std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref(), Ok("1"), "node 22, pi 1.6.0 or the host missing");
        return;
    }
    let seen = |reference: bool| async move {
        let node = node22().expect("node 22");
        let (sb, _) = project_sandbox(&node);
        let log = sb.home.path().join("oauth.log");
        let file = sb.home.path().join("oauth.ts");
        let auth = sb.agent_dir.path().join("auth.json");
        let source = OAUTH_LOGIN
            .replace("LOG", &format!("{:?}", log.display().to_string()))
            .replace("AUTH_PATH", &format!("{:?}", auth.display().to_string()));
        std::fs::write(&file, source).expect("extension");
        let file = file.display().to_string();
        let mut pi = spawn_either(&sb, &node, reference, &["-e", &file]);
        pi.send(json!({"id": "p", "type": "prompt", "message": "/oauth-probe"})).await;
        pi.until(|v| v["method"] == "notify" && v["message"] == "probed").await;
        pi.close_stdin();
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect::<Vec<Value>>()
    };
    let (ours, theirs) = tokio::join!(seen(false), seen(true));
    let credential =
        json!({"access": "acc-42-42", "refresh": "ref", "expires": 4102444800000_u64, "extra": 1, "type": "oauth"});
    for phase in ["trust", "session"] {
        assert!(ours.contains(&json!([phase, "login", credential])), "{phase}: {ours:?}");
        assert!(ours.contains(&json!([phase, "stored", credential])), "{phase}: {ours:?}");
        assert!(ours.contains(&json!([phase, "auth", "key-acc-42-42", "OAuth"])), "{phase}: {ours:?}");
    }
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}

/// [`a_model_runtimes_registered_oauth_login_signs_in_as_in_pi`]'s extension.
const OAUTH_LOGIN: &str = r#"import { appendFileSync, readFileSync } from "node:fs";
import { ModelRuntime } from "@earendil-works/pi-coding-agent";
const note = (...line: any[]) => appendFileSync(LOG, JSON.stringify(line) + "\n");
const MODEL = { id: "m1", name: "M1", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 };
const oauth = {
  name: "Mine SSO",
  login: async (callbacks: any) => {
    note("callbacks", Object.keys(callbacks).sort());
    callbacks.onAuth({ url: "https://sso.example/auth", instructions: "sign in" });
    callbacks.onProgress("waiting");
    const code = await callbacks.onPrompt({ message: "Code?" });
    const manual = await callbacks.onManualCodeInput();
    return { access: `acc-${code}-${manual}`, refresh: "ref", expires: 4102444800000, extra: 1 };
  },
  refreshToken: async (credential: any) => credential,
  getApiKey: (credential: any) => `key-${credential.access}`,
};
async function probe(phase: string) {
  const runtime = await ModelRuntime.create();
  runtime.registerProvider("mine", { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [MODEL], oauth } as any);
  note(phase, "status before", runtime.getProviderAuthStatus("mine"));
  const seen: any[] = [];
  const interaction = { notify: (event: any) => seen.push(["notify", event]), prompt: async (question: any) => { seen.push(["prompt", question]); return "42"; } };
  await runtime.login("mine", "oauth", interaction as any).then((c: any) => note(phase, "login", c), (e: any) => note(phase, "login", { error: String(e?.message), code: e?.code }));
  note(phase, "seen", seen);
  let stored: any = null;
  try { stored = JSON.parse(readFileSync(AUTH_PATH, "utf8")).mine ?? null; } catch {}
  note(phase, "stored", stored);
  note(phase, "status", runtime.getProviderAuthStatus("mine"));
  const auth = await runtime.getAuth("mine").catch((e: any) => ({ error: String(e?.message) }));
  note(phase, "auth", (auth as any)?.auth?.apiKey ?? null, (auth as any)?.source ?? null);
  const keyLogin = await runtime.login("mine", "api_key", { notify: () => {}, prompt: async () => "k" } as any).then(() => "accepted", (e: any) => String(e?.message));
  note(phase, "api key login", keyLogin);
  await runtime.logout("mine");
}
export default function (pi: any) {
  pi.on("project_trust", async () => { await probe("trust"); return { trusted: "yes" }; });
  pi.registerCommand("oauth-probe", { handler: async (_args: string, ctx: any) => { await probe("session"); ctx.ui.notify("probed", "info"); } });
}
"#;
