//! `pi mcp add`, `pi mcp remove` and `pi mcp list`, pi-rpc and pi 1.6.0
//! side by side: the same command lines run by each program on a fresh
//! HOME, agent directory and project of its own, and everything compared
//! whole — exit codes, what was printed on stdout and stderr (the
//! sandboxes' paths named), and the `mcp.json` files written, byte for byte.
//! `list` connects a real server (server-everything over stdio).
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_provider_events::reference_cli;
use crate::harness::Sandbox;
use crate::mcp::Servers;

/// One `pi …` of either program in `sb`, to its end: exit code, stdout, stderr.
pub(crate) async fn pi_cli(sb: &Sandbox, reference: bool, args: &[&str]) -> Option<(i32, String, String)> {
    let mut cmd = if reference {
        let mut cmd = tokio::process::Command::new(node22()?);
        cmd.arg(reference_cli()?).args(args).current_dir(sb.cwd.path()).env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        cmd
    } else {
        sb.command(args)
    };
    cmd.stdin(Stdio::null());
    let done = tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output()).await.ok()?.ok()?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some((done.status.code().unwrap_or(-1), text(&done.stdout), text(&done.stderr)))
}

/// `text` with the sandbox's directories named.
fn named(sb: &Sandbox, text: &str) -> String {
    text.replace(&sb.agent_dir.path().display().to_string(), "<agent>")
        .replace(&sb.cwd.path().display().to_string(), "<cwd>")
        .replace(&sb.home.path().display().to_string(), "<home>")
}

/// The command lines, each one's outcome, and the files they left.
async fn session(srv: &Servers, reference: bool) -> Option<Value> {
    let sb = Sandbox::offline();
    let everything = srv.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let (node, everything) = (srv.node.display().to_string(), everything.display().to_string());
    let steps: Vec<Vec<&str>> = vec![
        vec!["add", "everything", "--description", "The everything server", "--", &node, &everything, "stdio"],
        vec!["add", "remote", "--url", "http://127.0.0.1:9/mcp", "--header", "X-Team=blue", "--exposure", "direct"],
        vec!["add", "remote", "--url", "http://127.0.0.1:9/mcp", "--bearer-token-env-var", "DOCS_TOKEN"],
        vec![
            "add",
            "signin",
            "--url",
            "https://example.com/mcp",
            "--oauth-client-id",
            "abc",
            "--oauth-callback-port",
            "8123",
        ],
        vec!["add", "tool", "--env", "A=1", "--cwd", "/tmp", "--exposure", "codemode-deferred", "--", "cmd", "--flag"],
        vec!["add", "proj", "-l", "--", "node", "-v"],
        vec!["add", "bad!", "--", "x"],
        vec!["add", "x", "--url", "ftp://example.com"],
        vec!["add", "x", "--env", "A=1", "--url", "http://example.com"],
        vec!["add", "x", "--header", "oops", "--url", "http://example.com"],
        vec!["add", "x", "--url", "http://example.com", "--exposure", "everywhere"],
        vec!["add", "x", "--url", "http://example.com", "--oauth-callback-port", "http"],
        vec![
            "add",
            "x",
            "--url",
            "http://example.com",
            "--oauth-client-registration",
            "cimd",
            "--oauth-client-id",
            "a",
        ],
        vec!["add", "x"],
        vec!["add", "x", "--bogus", "1"],
        vec!["add", "x", "--url"],
        vec!["remove", "nothere"],
        vec!["remove", "proj"],
        vec!["remove", "everything", "-l"],
        vec!["remove", "tool"],
        vec!["remove"],
        vec!["frob"],
    ];
    let mut outcomes = Vec::new();
    for step in &steps {
        let mut args = vec!["mcp"];
        args.extend(step.iter().copied());
        let (code, stdout, stderr) = pi_cli(&sb, reference, &args).await?;
        outcomes.push(json!({"args": named(&sb, &step.join(" ")), "exit": code, "stdout": named(&sb, &stdout), "stderr": named(&sb, &stderr)}));
    }
    let read = |path: std::path::PathBuf| std::fs::read_to_string(path).map(|t| named(&sb, &t)).ok();
    let global = read(sb.agent_dir.path().join("mcp.json"));
    let project = read(sb.cwd.path().join(".pi/mcp.json"));
    // `list` with only the everything server (a tool of its own exposure) and a disabled one.
    let mut file: Value = serde_json::from_str(global.as_deref().unwrap_or("{}")).unwrap_or_default();
    if let Some(servers) = file["mcpServers"].as_object_mut() {
        servers.retain(|name, _| name == "everything");
        servers["everything"]["command"] = json!(node);
        servers["everything"]["args"] = json!([everything, "stdio"]);
        servers["everything"]["toolExposure"] = json!({"echo": "direct"});
        servers.insert("off".into(), json!({"command": "nowhere", "enabled": false}));
    }
    std::fs::write(sb.agent_dir.path().join("mcp.json"), file.to_string()).unwrap();
    let mut lists = Vec::new();
    for args in [&["mcp", "list"][..], &["mcp", "list", "--json"]] {
        let (code, stdout, stderr) = pi_cli(&sb, reference, args).await?;
        lists.push(json!({"exit": code, "stdout": named(&sb, &stdout), "stderr": named(&sb, &stderr)}));
    }
    let (help_exit, help, _) = pi_cli(&sb, reference, &["mcp", "--help"]).await?;
    let names_commands = ["mcp add", "mcp remove", "mcp list"].iter().all(|c| help.contains(c));
    Some(json!({
        "steps": outcomes,
        "global mcp.json": global,
        "project mcp.json": project,
        "list": lists,
        "help": {"exit": help_exit, "names add, remove and list": names_commands},
    }))
}

#[tokio::test]
async fn pi_mcp_add_remove_and_list_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = session(&srv, false).await.unwrap();
    let step = |n: usize| &ours["steps"][n];
    assert_eq!(step(0)["exit"], 0, "{ours:#}");
    assert_eq!(
        step(0)["stdout"],
        "Added global MCP server \"everything\" in <agent>/mcp.json.\nCheck it with: pi mcp list\n"
    );
    assert_eq!(
        step(2)["stdout"].as_str().unwrap().lines().next(),
        Some("Replaced global MCP server \"remote\" in <agent>/mcp.json.")
    );
    assert_eq!(ours["list"][0]["exit"], 0, "{ours:#}");
    assert!(ours["list"][0]["stdout"].as_str().unwrap().starts_with("everything: connected, "), "{ours:#}");
    assert_eq!(ours["help"]["exit"], 0);
    if let Some(theirs) = session(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        for (n, (a, b)) in theirs["steps"].as_array().unwrap().iter().zip(ours["steps"].as_array().unwrap()).enumerate()
        {
            assert_eq!(a, b, "step {n}: pi 1.6.0 and pi-rpc");
        }
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// `list` of a trusted project whose `mcp.json` overrides two global servers
/// (one of them turned off) and has two bad overrides, then `login` and
/// `logout` command lines with options they do not take, a mistyped name,
/// `--local` for a global server, a provider's server and a bad `--timeout`.
async fn override_and_login_session(srv: &Servers, reference: bool) -> Option<Value> {
    let sb = Sandbox::offline();
    let everything = srv.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let global = json!({"mcpServers": {
        "everything": {"command": srv.node, "args": [everything, "stdio"]},
        "remote": {"url": "http://127.0.0.1:9/mcp"},
        "provided": {"url": "http://127.0.0.1:9/mcp", "auth": {"provider": "anthropic"}, "enabled": false},
    }});
    std::fs::write(sb.agent_dir.path().join("mcp.json"), global.to_string()).unwrap();
    let project = json!({"mcpServers": {
        "everything": {"exposure": "direct"},
        "remote": {"enabled": false},
        "ghost": {"enabled": false},
        "provided": {"exposure": "direct", "timeout": 5},
    }});
    std::fs::create_dir_all(sb.cwd.path().join(".pi")).unwrap();
    std::fs::write(sb.cwd.path().join(".pi/mcp.json"), project.to_string()).unwrap();
    let trust = json!({sb.cwd.path().display().to_string(): true});
    std::fs::write(sb.agent_dir.path().join("trust.json"), format!("{trust}\n")).unwrap();
    let steps: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["list", "--json"],
        vec!["login", "everything", "--bogus"],
        vec!["logout", "remote", "--timeout", "5"],
        vec!["login"],
        vec!["login", "remote", "extra"],
        vec!["login", "--timeout"],
        vec!["login", "everythin"],
        vec!["login", "everything", "-l"],
        vec!["login", "provided"],
        vec!["logout", "everything"],
        vec!["login", "remote", "--timeout", "soon"],
        vec!["login", "remote", "--timeout", "-1"],
        vec!["logout", "remote", "--local"],
        vec!["logout", "remote"],
    ];
    let mut outcomes = Vec::new();
    for step in &steps {
        let mut args = vec!["mcp"];
        args.extend(step.iter().copied());
        let (code, stdout, stderr) = pi_cli(&sb, reference, &args).await?;
        outcomes.push(
            json!({"args": step.join(" "), "exit": code, "stdout": named(&sb, &stdout), "stderr": named(&sb, &stderr)}),
        );
    }
    Some(json!(outcomes))
}

#[tokio::test]
async fn pi_mcp_list_shows_project_overrides_and_login_reads_its_options_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = override_and_login_session(&srv, false).await.unwrap();
    let list = ours[0]["stdout"].as_str().unwrap_or_default();
    assert!(list.contains("\n  project override: <cwd>/.pi/mcp.json\n"), "{ours:#}");
    assert_eq!(ours[2]["stderr"], "Unknown option --bogus.\nUse \"pi mcp --help\" for usage.\n", "{ours:#}");
    if let Some(theirs) = override_and_login_session(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs:#}");
        for (n, (a, b)) in theirs.as_array().unwrap().iter().zip(ours.as_array().unwrap()).enumerate() {
            assert_eq!(a, b, "step {n}: pi 1.6.0 and pi-rpc");
        }
    }
}
