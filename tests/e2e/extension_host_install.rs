//! No manual step for TypeScript extensions: with a fresh HOME and none of
//! the host's packages installed, the first pi module makes pi-rpc run
//! `npm install` itself (here from a local registry serving the packages
//! made with `npm pack`), announced by one line on stderr; a second start
//! installs nothing; two processes starting at once install once; a failed
//! install is one `extension_error` naming the command, and the session goes on.
//!
//! Needs node 22, npm and the host's packages in `target/tools` (the
//! registry publishes those); skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::clients::{node22, repo_root};
use crate::extensions::write_script;
use crate::harness::{Pi, Sandbox};
use crate::npm_registry::Registry;

const INSTALL_LINE: &str = "installing the TypeScript extension host's packages";

const MODULE: &str = r#"import { Type } from "typebox";
export default function (pi: any) {
  const schema = Type.Object({ text: Type.String() });
  pi.registerCommand("installed-host", { description: `schema ${schema.type}`, handler: async () => {} });
}
"#;

/// A registry serving the host's packages, and the Node.js to run them.
fn registry_with_host_packages() -> Option<(PathBuf, Registry)> {
    let node = node22()?;
    let installed = repo_root().join("target/tools/extension-host/node_modules");
    if !installed.join("jiti/package.json").is_file() {
        if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("the extension host's packages are missing in {}", installed.display());
        }
        eprintln!("SKIP: the extension host's packages are missing in {}", installed.display());
        return None;
    }
    // Every package installed there: the pinned ones and what they depend on.
    let registry = Registry::start();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&installed).expect("host node_modules").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('@') {
            dirs.extend(std::fs::read_dir(&path).expect("scope").flatten().map(|e| e.path()));
        } else if !name.starts_with('.') {
            dirs.push(path);
        }
    }
    for dir in dirs.iter().filter(|d| d.join("package.json").is_file()) {
        registry.publish(dir);
    }
    Some((node, registry))
}

/// The default host directory of a sandbox (no `XDG_DATA_HOME`, no setting).
fn default_host_dir(sb: &Sandbox) -> PathBuf {
    sb.home.path().join(".local/share/pi-rpc/extension-host")
}

fn spawn(sb: &Sandbox, registry_url: &str, args: &[&str]) -> Pi {
    let cache = sb.home.path().join("npm-cache");
    sb.spawn_with_env(
        args,
        &[
            ("npm_config_registry", Path::new(registry_url)),
            ("npm_config_cache", &cache),
            ("npm_config_update_notifier", Path::new("false")),
            ("RUST_LOG", Path::new("info")),
        ],
    )
}

/// The commands the extensions registered (pi's built-in `mcp` left out).
fn command_names(reply: &Value) -> Vec<String> {
    reply["data"]["commands"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| !c["path"].as_str().is_some_and(|p| p.starts_with("builtin:")))
                .filter_map(|c| c["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

async fn finish(mut pi: Pi) -> String {
    pi.close_stdin();
    pi.drain().await;
    pi.wait().await;
    pi.stderr()
}

#[tokio::test]
async fn a_fresh_home_installs_the_host_once_and_the_first_extension_works() {
    let Some((node, registry)) = registry_with_host_packages() else { return };
    let sb = Sandbox::offline();
    sb.write_settings(json!({"extensionHostNode": node}));
    let module = write_script(&sb, "first.ts", MODULE);
    assert!(!default_host_dir(&sb).exists());

    let mut pi = spawn(&sb, &registry.url, &["--no-session", "-e", &module]);
    let reply = pi.call("c", json!({"type": "get_commands"})).await;
    assert_eq!(command_names(&reply), ["installed-host"], "{:?}\n{}", pi.transcript, pi.stderr());
    let command = reply["data"]["commands"].as_array().and_then(|c| c.iter().find(|c| c["name"] == "installed-host"));
    assert_eq!(command.map(|c| c["description"].clone()), Some(json!("schema object")));
    let stderr = finish(pi).await;
    let announced: Vec<&str> = stderr.lines().filter(|l| l.contains(INSTALL_LINE)).collect();
    assert_eq!(announced.len(), 1, "{stderr}");
    assert!(announced[0].contains(&default_host_dir(&sb).display().to_string()), "{}", announced[0]);
    assert!(announced[0].contains("jiti@2.7.0") && announced[0].contains("npm install"), "{}", announced[0]);
    assert!(default_host_dir(&sb).join("node_modules/typebox/package.json").is_file());
    assert!(registry.requests().iter().any(|r| r.starts_with("/jiti/-/")), "{:?}", registry.requests());

    // Idempotent: the next start installs nothing.
    let served = registry.requests().len();
    let mut pi = spawn(&sb, &registry.url, &["--no-session", "-e", &module]);
    assert_eq!(command_names(&pi.call("c", json!({"type": "get_commands"})).await), ["installed-host"]);
    let stderr = finish(pi).await;
    assert!(!stderr.contains(INSTALL_LINE), "{stderr}");
    assert_eq!(registry.requests().len(), served);
}

#[tokio::test]
async fn two_processes_starting_at_once_install_once() {
    let Some((node, registry)) = registry_with_host_packages() else { return };
    let sb = Sandbox::offline();
    sb.write_settings(json!({"extensionHostNode": node}));
    let module = write_script(&sb, "first.ts", MODULE);
    let mut first = spawn(&sb, &registry.url, &["--no-session", "-e", &module]);
    let mut second = spawn(&sb, &registry.url, &["--no-session", "-e", &module]);
    first.send(json!({"id": "c", "type": "get_commands"})).await;
    second.send(json!({"id": "c", "type": "get_commands"})).await;
    let a = first.response("c").await;
    let b = second.response("c").await;
    assert_eq!(command_names(&a), ["installed-host"], "{}", first.stderr());
    assert_eq!(command_names(&b), ["installed-host"], "{}", second.stderr());
    let stderr = format!("{}{}", finish(first).await, finish(second).await);
    assert_eq!(stderr.matches(INSTALL_LINE).count(), 1, "{stderr}");
}

#[tokio::test]
async fn a_failed_install_is_one_extension_error_and_the_session_goes_on() {
    let Some((node, _registry)) = registry_with_host_packages() else { return };
    // A registry that has none of the packages.
    let empty = Registry::start();
    let sb = Sandbox::offline();
    sb.write_settings(json!({"extensionHostNode": node}));
    let module = write_script(&sb, "first.ts", MODULE);
    let python = write_script(
        &sb,
        "plain.py",
        "import json, sys\nprint(json.dumps({'type': 'register', 'commands': [{'name': 'py'}]}), flush=True)\nsys.stdin.read()\n",
    );
    let mut pi = spawn(&sb, &empty.url, &["--no-session", "-e", &module, "-e", &python]);
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["id"] == "s").await;
    let errors: Vec<&Value> = lines.iter().filter(|v| v["type"] == "extension_error").collect();
    assert_eq!(errors.len(), 1, "{lines:?}");
    assert_eq!(errors[0]["extensionPath"], module.as_str());
    assert_eq!(errors[0]["event"], "startup");
    let text = errors[0]["error"].as_str().unwrap_or_default();
    assert!(text.contains("`npm install --prefix") && text.contains("jiti@2.7.0"), "{text}");
    assert!(text.contains("404"), "{text}");
    assert_eq!(command_names(&pi.call("c", json!({"type": "get_commands"})).await), ["py"]);
    let state = pi.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(state["success"], true);
}
