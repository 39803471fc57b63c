//! pi's `project_trust` event in RPC mode, side by side with pi 1.6.0: a
//! project with resources that need trust (here a prompt template in
//! `.pi/prompts`) is offered to the `-e` extensions before it loads. The
//! handler's context has no UI (`hasUI` false, `mode` "rpc"; what it
//! notifies goes to stderr), the first `yes` / `no` decides over
//! `trust.json`, `remember: true` stores the answer there, a throwing
//! handler is a warning and the next one is asked.

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

async fn observe(reference: bool, answers: &[&str], stored: Option<bool>) -> Seen {
    let sb = Sandbox::offline();
    let node = node22().expect("node 22");
    sb.write_settings(
        json!({"extensionHostNode": node, "extensionHostDir": repo_root().join("target/tools/extension-host")}),
    );
    let prompts = sb.cwd.path().join(".pi/prompts");
    std::fs::create_dir_all(&prompts).expect("prompts dir");
    std::fs::write(prompts.join("proj.md"), "---\ndescription: project prompt\n---\nHello from the project\n")
        .expect("prompt");
    let cwd = std::fs::canonicalize(sb.cwd.path()).expect("cwd");
    let trust_path = sb.agent_dir.path().join("trust.json");
    if let Some(decision) = stored {
        std::fs::write(&trust_path, format!("{}\n", json!({cwd.display().to_string(): decision}))).expect("trust.json");
    }
    let mut args: Vec<String> = vec!["--mode".into(), "rpc".into(), "--no-session".into()];
    for (i, answer) in answers.iter().enumerate() {
        let file = sb.home.path().join(format!("trust{i}.ts"));
        std::fs::write(&file, extension(answer)).expect("extension");
        args.extend(["-e".to_string(), file.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let input = "{\"id\":\"c\",\"type\":\"get_commands\"}\n";
    let (out, err) = if reference {
        run_reference(&sb, &node, &args, input).await
    } else {
        let (_, out, err) = sb.run(&args, input).await;
        (out, err)
    };
    let reply = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == "c")
        .unwrap_or_else(|| panic!("no get_commands reply (reference: {reference}): {out}\n{err}"));
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
