//! MCP end to end with real servers from npm (installed into target/tools/mcp
//! by scripts/install-mcp-servers.sh): server-everything over stdio and over
//! streamable HTTP on 127.0.0.1, server-filesystem, and a fault server on the
//! official SDK that crashes and hangs on purpose. The fake model calls the
//! tools; the tests check what reached the model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::harness::{Pi, Sandbox};

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// node and the installed servers, or None (skip) when not installed.
pub(crate) struct Servers {
    pub(crate) node: PathBuf,
    pub(crate) modules: PathBuf,
}

impl Servers {
    pub(crate) fn find() -> Option<Servers> {
        let root = repo_root();
        let node = root.join("target/tools/node/node_modules/.bin/node");
        let modules = root.join("target/tools/mcp/node_modules");
        if node.exists() && modules.join("@modelcontextprotocol/server-everything/dist/index.js").exists() {
            return Some(Servers { node, modules });
        }
        if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("MCP servers not installed: run scripts/install-mcp-servers.sh");
        }
        eprintln!("SKIP: MCP servers not installed (scripts/install-mcp-servers.sh)");
        None
    }

    pub(crate) fn everything(&self, transport: &str) -> Value {
        let script = self.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
        json!({"command": self.node, "args": [script, transport]})
    }

    fn filesystem(&self, root: &Path) -> Value {
        let script = self.modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
        json!({"command": self.node, "args": [script, root]})
    }

    fn fault(&self, pid_file: &Path) -> Value {
        json!({
            "command": self.node,
            "args": [repo_root().join("tests/mcp/fault-server.mjs")],
            "env": {"MCP_SDK_DIR": self.modules.join("@modelcontextprotocol/sdk"), "FAULT_PID_FILE": pid_file, "FAULT_TOKEN": "${PI_TEST_SECRET}"},
            "timeout": 2
        })
    }
}

pub(crate) fn write_mcp(sb: &Sandbox, servers: Value) {
    std::fs::write(sb.agent_dir.path().join("mcp.json"), json!({"mcpServers": servers}).to_string()).unwrap();
}

pub(crate) fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

/// Tool result messages the model got in request `n`, by tool call id.
pub(crate) fn tool_message(sb: &Sandbox, n: usize, id: &str) -> Value {
    let body = &sb.server().requests()[n].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

pub(crate) fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `toolResult` messages of a run, by tool call id.
pub(crate) fn results(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "toolResult")
        .map(|l| l["message"].clone())
        .collect()
}

pub(crate) fn result<'a>(results: &'a [Value], id: &str) -> &'a Value {
    results.iter().find(|r| r["toolCallId"] == id).unwrap_or_else(|| panic!("no result {id}: {results:?}"))
}

pub(crate) fn result_text(r: &Value) -> String {
    r["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn codemode_is_the_default_and_reaches_stdio_tools() {
    let Some(srv) = Servers::find() else { return };
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"input": ["text", "image"]}));
    write_mcp(&sb, json!({"everything": srv.everything("stdio")}));
    let code = "const found = await searchTools('echo back');\n\
                const e = await tools.mcp__everything__echo({message: 'hey'});\n\
                const img = await tools.mcp__everything__get_tiny_image({});\n\
                text(found.map(f => f.name).includes('mcp__everything__echo'));\n\
                text(e.content[0].text);\n\
                image(img.content.find(b => b.type === 'image'));\n\
                store('seen', 1);\n\
                return (await describeNamespace('everything')).tools.length > 5";
    sb.server().push(Reply::tool_call("c1", "codemode", &json!({"code": code}).to_string()));
    sb.server().push(Reply::tool_call("c2", "codemode", r#"{"code":"return load('seen')"}"#));
    sb.server().push(Reply::text("done"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "use mcp"})).await;
    let lines = pi.until_type("agent_settled").await;

    let first = &sb.server().requests()[0].body;
    assert_eq!(tool_names(first), ["read", "bash", "edit", "write", "codemode"]);
    assert!(system_prompt(first).contains("<mcp_servers>\nMCP servers whose tools are not declared to you. Call the tools of `codemode` servers from codemode scripts.\n- mcp__everything (codemode)"), "{}", system_prompt(first));
    let rs = results(&lines);
    let c1 = result(&rs, "c1");
    assert_eq!(c1["isError"], false, "{c1}");
    let text = result_text(c1);
    assert!(text.starts_with("Script completed\nWall time "), "{text}");
    assert!(text.contains("==> text 1/3 <==\ntrue\n==> text 2/3 <==\nEcho: hey\n[Image saved to "), "{text}");
    assert!(text.contains("==> text 3/3 <==\ntrue"), "{text}");
    assert!(c1["content"].as_array().unwrap().iter().any(|b| b["type"] == "image" && b["mimeType"] == "image/png"));
    let calls: Vec<&str> =
        c1["details"]["calls"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(calls, ["mcp__everything__echo", "mcp__everything__get_tiny_image"]);
    assert!(result_text(result(&rs, "c2")).ends_with("Output:\n\n1"), "store survives across calls");
    // The model got the script's output, image included.
    let seen = tool_message(&sb, 1, "c1");
    assert!(text_of(&seen).contains("Echo: hey"), "{seen}");
    assert!(
        sb.server().requests()[1].body.to_string().contains("data:image/png;base64,iVBOR"),
        "the image reached the model"
    );
    pi.close_stdin();
    assert!(pi.wait().await.success());
}

#[tokio::test]
async fn direct_tools_images_errors_and_resources() {
    let Some(srv) = Servers::find() else { return };
    let sb = Sandbox::with_server().await;
    let mut everything = srv.everything("stdio");
    everything["exposure"] = json!("direct");
    everything["toolExposure"] = json!({"get-env": "hidden"});
    // Shorter than the slow tool below (3 s): its progress notifications, every 0.25 s,
    // must reset the timeout (1.25 s of slack for a loaded machine).
    everything["timeout"] = json!(1.5);
    write_mcp(&sb, json!({"everything": everything}));
    sb.server().push(Reply::tool_calls([
        FakeToolCall::new("c1", "mcp__everything__get_sum", r#"{"a":1,"b":2}"#),
        FakeToolCall::new("c2", "mcp__everything__get_tiny_image", "{}"),
        FakeToolCall::new("c3", "mcp__everything__get_sum", r#"{"a":"x"}"#),
        FakeToolCall::new(
            "c4",
            "read_mcp_resource",
            r#"{"server":"everything","uri":"demo://resource/dynamic/text/1"}"#,
        ),
        FakeToolCall::new("c5", "list_mcp_resources", r#"{"server":"everything"}"#),
        FakeToolCall::new("c6", "mcp__everything__get_env", "{}"),
        FakeToolCall::new("c7", "mcp__everything__get_resource_links", r#"{"count":1}"#),
        FakeToolCall::new("c8", "mcp__everything__trigger_long_running_operation", r#"{"duration":3,"steps":12}"#),
    ]));
    sb.server().push(Reply::text("done"));
    // The prompt goes out at once: the first request still declares the
    // direct tools (it waits for their server).
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "sum"})).await;
    let lines = pi.until_type("agent_settled").await;
    let names = tool_names(&sb.server().requests()[0].body);
    assert_eq!(&names[..4], ["read", "bash", "edit", "write"]);
    for t in ["mcp__everything__get_sum", "mcp__everything__echo", "list_mcp_resources", "read_mcp_resource"] {
        assert!(names.iter().any(|n| n == t), "{t} in {names:?}");
    }
    assert!(!names.iter().any(|n| n == "codemode" || n == "mcp__everything__get_env"), "{names:?}");
    let rs = results(&lines);
    assert_eq!(result_text(result(&rs, "c1")), "The sum of 1 and 2 is 3.");
    assert_eq!(result(&rs, "c1")["details"], json!({"server": "everything", "tool": "get-sum"}));
    let end = lines.iter().find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c1").unwrap();
    let image = result(&rs, "c2");
    assert!(image["content"].as_array().unwrap().iter().any(|b| b["type"] == "image"), "{image}");
    assert!(result_text(result(&rs, "c3")).starts_with("Validation failed for tool \"mcp__everything__get_sum\""));
    assert_eq!(result(&rs, "c3")["isError"], true);
    assert!(result_text(result(&rs, "c4")).contains("Resource 1"), "{}", result_text(result(&rs, "c4")));
    let listed: Value = serde_json::from_str(&result_text(result(&rs, "c5"))).unwrap();
    assert_eq!(listed["server"], "everything");
    assert!(listed["resources"].as_array().unwrap().iter().all(|r| r["server"] == "everything"));
    assert_eq!(
        result_text(result(&rs, "c6")),
        "Tool mcp__everything__get_env not found",
        "hidden tools are unreachable"
    );
    assert!(result_text(result(&rs, "c7")).contains("Read it with read_mcp_resource (server \"everything\")]"));
    assert!(end["isError"] == false);
    let slow = result(&rs, "c8");
    assert_eq!(slow["isError"], false, "{slow}");
    assert!(result_text(slow).contains("Long running operation completed"), "{slow}");
    let progress: Vec<&Value> =
        lines.iter().filter(|l| l["type"] == "tool_execution_update" && l["toolCallId"] == "c8").collect();
    assert!(!progress.is_empty(), "progress notifications become tool_execution_update");
    assert!(progress[0]["partialResult"]["content"][0]["text"].as_str().unwrap().contains("1"), "{:?}", progress[0]);
    assert!(text_of(&tool_message(&sb, 1, "c1")).contains("The sum of 1 and 2 is 3."));
}

/// Start server-everything in streamable HTTP mode on 127.0.0.1; its port.
pub(crate) async fn start_http_everything(srv: &Servers) -> (tokio::process::Child, u16) {
    let script = srv.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let mut child = tokio::process::Command::new(&srv.node)
        .arg("--import")
        .arg(repo_root().join("tests/mcp/listen-localhost.mjs"))
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start server-everything");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(port) = line.strip_prefix("LISTENING ") {
                return port.trim().parse::<u16>().ok();
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("server-everything listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

#[tokio::test]
async fn streamable_http_with_expanded_headers() {
    let Some(srv) = Servers::find() else { return };
    let (_server, port) = start_http_everything(&srv).await;
    let sb = Sandbox::with_server().await;
    write_mcp(
        &sb,
        json!({"remote": {
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"X-Team": "${PI_TEST_TEAM}"},
            "exposure": "direct",
            "description": "The everything server over HTTP"
        }}),
    );
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"over http"}"#));
    sb.server().push(Reply::text("done"));
    let secret = "team-s3cret-9f2";
    let mut pi = spawn_with_env(&sb, &[], &[("PI_TEST_TEAM", secret)]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    assert_eq!(result_text(result(&rs, "c1")), "Echo: over http");
    assert!(text_of(&tool_message(&sb, 1, "c1")).contains("Echo: over http"));
    pi.close_stdin();
    assert!(pi.wait().await.success());
    let stdout: String = lines.iter().map(Value::to_string).collect();
    assert!(
        !stdout.contains(secret) && !pi.stderr().contains(secret),
        "header secrets stay out of stdout and debug logs"
    );
    for file in sb.session_files() {
        assert!(!std::fs::read_to_string(file).unwrap().contains(secret));
    }
}

pub(crate) fn spawn_with_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Pi {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    cmd.arg("--mode").arg("rpc").args(args).current_dir(sb.cwd.path()).env_clear();
    for keep in ["PATH", "LANG", "TMPDIR"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path()).env("RUST_LOG", "debug");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    cmd.kill_on_drop(true);
    Pi::start(cmd)
}

#[tokio::test]
async fn filesystem_server_through_tool_search() {
    let Some(srv) = Servers::find() else { return };
    let sb = Sandbox::with_server().await;
    let root = sb.cwd.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "alpha beta gamma\n").unwrap();
    let mut fs = srv.filesystem(&root);
    fs["exposure"] = json!("deferred");
    write_mcp(&sb, json!({"filesystem": fs}));
    sb.server().push(Reply::tool_call("c1", "tool_search", r#"{"query":"read text file contents","limit":3}"#));
    let path = root.join("notes.txt");
    sb.server().push(Reply::tool_call("c2", "mcp__filesystem__read_text_file", &json!({"path": path}).to_string()));
    sb.server().push(Reply::text("done"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "read notes"})).await;
    let lines = pi.until_type("agent_settled").await;
    let reqs = sb.server().requests();
    assert!(tool_names(&reqs[0].body).contains(&"tool_search".to_string()));
    assert!(!tool_names(&reqs[0].body).contains(&"mcp__filesystem__read_text_file".to_string()));
    assert!(
        tool_names(&reqs[1].body).contains(&"mcp__filesystem__read_text_file".to_string()),
        "loaded for the next call"
    );
    let rs = results(&lines);
    assert!(result_text(result(&rs, "c1")).starts_with("Loaded "), "{}", result_text(result(&rs, "c1")));
    assert_eq!(result_text(result(&rs, "c2")), "alpha beta gamma\n");
    assert!(text_of(&tool_message(&sb, 2, "c2")).contains("alpha beta gamma"));
}

pub(crate) fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

pub(crate) fn alive(pid: i32) -> bool {
    // Signal 0: does the process exist (and is it not a reaped zombie)?
    let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !status.is_empty() && !status.split(") ").nth(1).unwrap_or("").starts_with('Z')
}

#[tokio::test]
async fn faults_are_isolated_and_servers_reconnect() {
    let Some(srv) = Servers::find() else { return };
    let sb = Sandbox::with_server().await;
    let pid_file = sb.home.path().join("fault.pids");
    let mut fault = srv.fault(&pid_file);
    fault["exposure"] = json!("direct");
    write_mcp(
        &sb,
        json!({
            "fault": fault,
            "missing": {"command": "/nonexistent/mcp-server"},
            "garbage": {"command": "sh", "args": ["-c", "echo this-is-not-json; sleep 30"], "timeout": 1},
            "bad name": {"command": "x"}
        }),
    );
    let secret = "s3cr3t-token-value";
    sb.server().push(Reply::tool_call("c1", "mcp__fault__crash", "{}"));
    sb.server().push(Reply::tool_call("c2", "mcp__fault__echo", r#"{"text":"back again"}"#));
    sb.server().push(Reply::tool_call("c3", "mcp__fault__hang", "{}"));
    sb.server().push(Reply::tool_call("c4", "mcp__fault__token_length", "{}"));
    sb.server().push(Reply::tool_call("c5", "mcp__fault__garbage", "{}"));
    sb.server().push(Reply::tool_call("c6", "mcp__fault__echo", r#"{"text":"and again"}"#));
    sb.server().push(Reply::text("done"));
    let mut pi = spawn_with_env(&sb, &[], &[("PI_TEST_SECRET", secret)]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "break things"})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    let crash = result(&rs, "c1");
    assert_eq!(crash["isError"], true);
    let crash_text = result_text(crash);
    assert!(crash_text.starts_with("the MCP server exited (exit status: 3) during the request"), "{crash_text}");
    assert_eq!(result_text(result(&rs, "c2")), "echo: back again", "reconnected on the next call");
    let hang = result_text(result(&rs, "c3"));
    assert!(hang.contains("did not answer within 2 s"), "{hang}");
    assert_eq!(result_text(result(&rs, "c4")), format!("token length {}", secret.len()));
    let garbage = result(&rs, "c5");
    assert_eq!(garbage["isError"], true);
    let garbage_text = result_text(garbage);
    assert!(
        garbage_text.starts_with("the MCP server wrote a line that is not JSON-RPC: Traceback: something went wrong"),
        "{garbage_text}"
    );
    assert_eq!(result_text(result(&rs, "c6")), "echo: and again", "reconnected after the garbage");
    for r in &rs {
        let text = result_text(r);
        assert!(!text.contains("rmcp::") && !text.contains("Transport ["), "{text}");
    }
    // One warning names the broken servers and the bad entry; the session goes on.
    let mut notices: Vec<Value> = lines.iter().filter(|l| l["type"] == "extension_ui_request").cloned().collect();
    if notices.is_empty() {
        notices = pi
            .until(|l| l["type"] == "extension_ui_request")
            .await
            .into_iter()
            .filter(|l| l["type"] == "extension_ui_request")
            .collect();
    }
    assert_eq!(notices.len(), 1, "{notices:?}");
    let message = notices[0]["message"].as_str().unwrap();
    assert_eq!(notices[0]["method"], "notify");
    assert_eq!(notices[0]["notifyType"], "warning");
    assert!(message.contains("missing: failed: cannot start /nonexistent/mcp-server"), "{message}");
    assert!(
        message.contains("garbage: failed: the server wrote a line that is not JSON-RPC: this-is-not-json"),
        "{message}"
    );
    assert!(message.contains("invalid server name \"bad name\""), "{message}");
    let state = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["success"], true);

    pi.close_stdin();
    assert!(pi.wait().await.success());
    let stdout: String = lines.iter().map(Value::to_string).collect();
    assert!(!stdout.contains(secret) && !pi.stderr().contains(secret), "secrets stay out of stdout and logs");
    for file in sb.session_files() {
        assert!(!std::fs::read_to_string(file).unwrap().contains(secret), "secrets stay out of session files");
    }
    let started = pids(&pid_file);
    assert_eq!(started.len(), 3, "one restart after the crash, one after the garbage: {started:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(started.iter().all(|p| !alive(*p)), "children reaped at exit: {started:?}");
}

#[tokio::test]
async fn no_mcp_flag_and_untrusted_project_config() {
    let Some(srv) = Servers::find() else { return };
    let sb = Sandbox::with_server().await;
    write_mcp(&sb, json!({"everything": srv.everything("stdio")}));
    std::fs::create_dir_all(sb.cwd.path().join(".pi")).unwrap();
    let mut project = srv.everything("stdio");
    project["exposure"] = json!("direct");
    std::fs::write(sb.cwd.path().join(".pi/mcp.json"), json!({"mcpServers": {"proj": project}}).to_string()).unwrap();
    for _ in 0..3 {
        sb.server().push(Reply::text("ok"));
    }
    let first_tools = |args: &'static [&'static str]| {
        let sb = &sb;
        async move {
            let before = sb.server().request_count();
            let mut pi = sb.spawn(args);
            pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
            pi.until_type("agent_settled").await;
            pi.close_stdin();
            pi.wait().await;
            let body = sb.server().requests()[before].body.clone();
            (tool_names(&body), system_prompt(&body))
        }
    };
    let (tools, prompt) = first_tools(&["--no-session", "--no-mcp"]).await;
    assert_eq!(tools, ["read", "bash", "edit", "write"]);
    assert!(!prompt.contains("<mcp_servers>"));
    let (tools, prompt) = first_tools(&["--no-session", "--no-approve"]).await;
    assert_eq!(tools, ["read", "bash", "edit", "write", "codemode"], "the project's server is ignored");
    assert!(!prompt.contains("mcp__proj"));
    let (tools, _) = first_tools(&["--no-session", "--approve"]).await;
    assert!(tools.iter().any(|t| t == "mcp__proj__echo"), "trusted: {tools:?}");
}

/// The tools one program offered at its first prompt with each `--tools` /
/// `--exclude-tools` choice, a `direct` server configured.
async fn declared_with_patterns(srv: &Servers, reference: bool) -> Option<Vec<Vec<String>>> {
    let sb = Sandbox::with_server().await;
    let mut everything = srv.everything("stdio");
    everything["exposure"] = json!("direct");
    write_mcp(&sb, json!({"everything": everything}));
    sb.server().set_fallback(Reply::text("ok"));
    let mut declared = Vec::new();
    for args in [
        &["--tools", "read,bash"][..],
        &["--tools", "read,mcp__everything__get_*", "--exclude-tools", "mcp__everything__get_env"][..],
        &["-xt", "mcp__*,list_mcp_*,read_mcp_resource"][..],
    ] {
        let before = sb.server().request_count();
        let mut pi = crate::extension_builtin_factories::start(&sb, reference, args)?;
        pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
        pi.until_type("agent_settled").await;
        declared.push(tool_names(&sb.server().requests()[before].body));
        pi.close_stdin();
        pi.wait().await;
    }
    Some(declared)
}

#[tokio::test]
async fn tools_and_exclude_tools_patterns_filter_mcp_tools() {
    let Some(srv) = Servers::find() else { return };
    let Some(declared) = declared_with_patterns(&srv, false).await else { return };
    // A `--tools` list declares no `direct` MCP tool it does not name.
    assert_eq!(declared[0], ["read", "bash"], "{:?}", declared[0]);
    let get: Vec<&str> = declared[1].iter().map(String::as_str).filter(|t| t.starts_with("mcp__")).collect();
    assert!(!get.is_empty() && get.iter().all(|t| t.starts_with("mcp__everything__get_")), "{get:?}");
    assert!(!get.contains(&"mcp__everything__get_env"));
    assert_eq!(declared[1][0], "read");
    assert_eq!(declared[2], ["read", "bash", "edit", "write"]);
    let Some(theirs) = declared_with_patterns(&srv, true).await else { return };
    assert_eq!(declared, theirs, "pi 1.6.0 declares the same");
}
