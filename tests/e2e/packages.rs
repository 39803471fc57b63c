//! pi packages end to end, with no network: an npm package made with
//! `npm pack` and served by a local registry, a git package in a local
//! repository (git's `url.<base>.insteadOf` maps `https://example.test/` to
//! it, so the source is written as a user writes one). `pi install`, `pi
//! list`, `pi remove`, `pi update --extensions`, `-e npm:…` / `-e git:…`,
//! settings `packages`; a package that cannot be installed is skipped with
//! a warning; and pi 1.6.0 and pi-rpc use each other's installs.
//!
//! Needs npm, git, node 22 and the host's packages in `target/tools` (the
//! packages hold TypeScript extensions); skipped without them unless
//! `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::clients::{installed_tool, node22, repo_root};
use crate::extensions::write_script;
use crate::harness::{Pi, Sandbox};
use crate::npm_registry::Registry;

/// What the tests need: node 22 and the host's installed packages.
struct Tools {
    node: PathBuf,
    host_dir: PathBuf,
}

fn tools() -> Option<Tools> {
    let node = node22()?;
    let host_dir = repo_root().join("target/tools/extension-host");
    if !host_dir.join("node_modules/jiti/package.json").is_file() {
        if std::env::var("PI_RPC_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("the extension host's packages are missing in {}", host_dir.display());
        }
        eprintln!("SKIP: the extension host's packages are missing in {}", host_dir.display());
        return None;
    }
    Some(Tools { node, host_dir })
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A pi package: one extension command, one prompt template, one skill
/// (conventional directories, or a `pi` manifest when `manifest`).
fn make_package(dir: &Path, name: &str, version: &str, tag: &str, manifest: bool) {
    let pi = if manifest {
        json!({"extensions": ["./src/*.ts"], "skills": ["./res/skills"], "prompts": ["./res/prompts"]})
    } else {
        json!(null)
    };
    let mut package = json!({"name": name, "version": version, "keywords": ["pi-package"]});
    if manifest {
        package["pi"] = pi;
    }
    write(&dir.join("package.json"), &serde_json::to_string_pretty(&package).expect("json"));
    let (ext, skills, prompts) =
        if manifest { ("src", "res/skills", "res/prompts") } else { ("extensions", "skills", "prompts") };
    write(
        &dir.join(ext).join("tools.ts"),
        &format!(
            "export default function (pi: any) {{\n  pi.registerCommand(\"{tag}-hello\", {{ description: \"{tag} {version}\", handler: async () => {{}} }});\n}}\n"
        ),
    );
    write(
        &dir.join(skills).join(format!("{tag}-skill/SKILL.md")),
        &format!("---\nname: {tag}-skill\ndescription: A skill of {tag}\n---\nBody\n"),
    );
    write(
        &dir.join(prompts).join(format!("{tag}-prompt.md")),
        &format!("---\ndescription: A template of {tag}\n---\nDo it\n"),
    );
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.test", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A git repository served as `https://example.test/demo/git-tools`
/// (through `insteadOf` in the sandbox's `~/.gitconfig`), tagged `v1`.
fn git_package(sb: &Sandbox) -> PathBuf {
    let repos = sb.home.path().join("repos");
    let repo = repos.join("demo/git-tools");
    make_package(&repo, "git-tools", "1.0.0", "gitpkg", true);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "v1"]);
    git(&repo, &["tag", "v1"]);
    write(
        &sb.home.path().join(".gitconfig"),
        &format!("[url \"file://{}/\"]\n\tinsteadOf = https://example.test/\n", repos.display()),
    );
    repo
}

/// The environment of every run: the local registry, a private npm cache.
fn env(sb: &Sandbox, registry: &Registry) -> Vec<(String, PathBuf)> {
    vec![
        ("npm_config_registry".into(), PathBuf::from(&registry.url)),
        ("npm_config_cache".into(), sb.home.path().join("npm-cache")),
        ("npm_config_update_notifier".into(), PathBuf::from("false")),
    ]
}

/// `pi <args>` (pi-rpc) to the end: (exit code, stdout, stderr).
async fn pi_rpc(sb: &Sandbox, registry: &Registry, args: &[&str]) -> (i32, String, String) {
    let mut cmd = sb.command(args);
    cmd.envs(env(sb, registry));
    finish(cmd).await
}

/// `pi <args>` of the reference pi 1.6.0, in the same sandbox, with `input` on stdin.
async fn reference(
    sb: &Sandbox,
    registry: &Registry,
    node: &Path,
    args: &[&str],
    input: &str,
) -> (i32, String, String) {
    use tokio::io::AsyncWriteExt;
    let cli = installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js").expect("reference");
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(cli).args(args).current_dir(sb.cwd.path()).env_clear();
    for keep in ["PATH", "LANG", "TMPDIR"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path()).envs(env(sb, registry));
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
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

async fn finish(mut cmd: tokio::process::Command) -> (i32, String, String) {
    cmd.stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("the command ended")
        .expect("run the command");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn spawn(sb: &Sandbox, registry: &Registry, args: &[&str]) -> Pi {
    let env = env(sb, registry);
    let refs: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (k.as_str(), v.as_path())).collect();
    sb.spawn_with_env(args, &refs)
}

/// `get_commands` of a pi-rpc session: (name, source) pairs.
/// The commands the resources registered (pi's built-in `mcp` left out).
async fn commands(pi: &mut Pi) -> Vec<(String, String)> {
    let reply = pi.call("c", json!({"type": "get_commands"})).await;
    reply["data"]["commands"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|c| !c["path"].as_str().is_some_and(|p| p.starts_with("builtin:")))
                .map(|c| (c["name"].as_str().unwrap_or("").to_string(), c["source"].as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn has(list: &[(String, String)], name: &str, source: &str) -> bool {
    list.iter().any(|(n, s)| n == name && s == source)
}

fn settings_packages(sb: &Sandbox) -> Value {
    let text = std::fs::read_to_string(sb.agent_dir.path().join("settings.json")).expect("settings");
    serde_json::from_str::<Value>(&text).expect("settings JSON")["packages"].clone()
}

fn host_settings(sb: &Sandbox, t: &Tools) {
    sb.write_settings(json!({"extensionHostNode": t.node, "extensionHostDir": t.host_dir}));
}

#[tokio::test]
async fn an_npm_package_from_a_local_tarball_installs_lists_loads_and_is_removed() {
    let Some(t) = tools() else { return };
    let sb = Sandbox::offline();
    host_settings(&sb, &t);
    let registry = Registry::start();
    let source_dir = sb.home.path().join("src/pi-tools");
    make_package(&source_dir, "@demo/pi-tools", "1.0.0", "npmpkg", false);
    registry.publish(&source_dir);

    let (code, out, err) = pi_rpc(&sb, &registry, &["install", "npm:@demo/pi-tools@1.0.0"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Installed npm:@demo/pi-tools@1.0.0"), "{out}");
    let installed = sb.agent_dir.path().join("npm/node_modules/@demo/pi-tools");
    assert!(installed.join("extensions/tools.ts").is_file());
    assert_eq!(settings_packages(&sb), json!(["npm:@demo/pi-tools@1.0.0"]));
    assert_eq!(settings_packages(&sb).as_array().map(Vec::len), Some(1));

    let (code, out, _) = pi_rpc(&sb, &registry, &["list"]).await;
    assert_eq!(code, 0);
    assert_eq!(out, format!("User packages:\n  npm:@demo/pi-tools@1.0.0\n    {}\n", installed.display()));

    let mut pi = spawn(&sb, &registry, &["--no-session"]);
    let list = commands(&mut pi).await;
    assert!(has(&list, "npmpkg-hello", "extension"), "{list:?}\n{}", pi.stderr());
    assert!(has(&list, "npmpkg-prompt", "prompt") && has(&list, "skill:npmpkg-skill", "skill"), "{list:?}");
    drop(pi);

    // Installing again changes nothing; removing drops the files and the entry.
    assert_eq!(pi_rpc(&sb, &registry, &["install", "npm:@demo/pi-tools@1.0.0"]).await.0, 0);
    assert_eq!(settings_packages(&sb).as_array().map(Vec::len), Some(1));
    let (code, out, err) = pi_rpc(&sb, &registry, &["remove", "npm:@demo/pi-tools"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Removed npm:@demo/pi-tools"));
    assert!(!installed.exists());
    assert_eq!(settings_packages(&sb), json!([]));
    let (code, _, err) = pi_rpc(&sb, &registry, &["remove", "npm:@demo/pi-tools"]).await;
    assert_eq!(code, 1);
    assert!(err.trim_end().ends_with("\nNo matching package found for npm:@demo/pi-tools"), "{err}");
    assert_eq!(pi_rpc(&sb, &registry, &["list"]).await.1, "No packages installed.\n");
}

#[tokio::test]
async fn a_git_package_from_a_local_repository_installs_updates_and_loads_with_e() {
    let Some(t) = tools() else { return };
    let sb = Sandbox::offline();
    host_settings(&sb, &t);
    let registry = Registry::start();
    let repo = git_package(&sb);

    // For one run: cached under tmp/extensions, not in the settings.
    let mut pi = spawn(&sb, &registry, &["--no-session", "--no-skills", "-e", "git:example.test/demo/git-tools@v1"]);
    let list = commands(&mut pi).await;
    assert!(
        has(&list, "gitpkg-hello", "extension") && has(&list, "gitpkg-prompt", "prompt"),
        "{list:?}\n{}",
        pi.stderr()
    );
    assert!(has(&list, "skill:gitpkg-skill", "skill"), "-e packages keep their skills with --no-skills: {list:?}");
    drop(pi);
    assert!(sb.agent_dir.path().join("tmp/extensions/git-example.test").is_dir());
    assert!(!sb.agent_dir.path().join("settings.json").exists() || settings_packages(&sb).is_null());

    let (code, out, err) = pi_rpc(&sb, &registry, &["install", "git:example.test/demo/git-tools"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let checkout = sb.agent_dir.path().join("git/example.test/demo/git-tools");
    assert!(checkout.join("src/tools.ts").is_file());
    assert_eq!(settings_packages(&sb), json!(["git:example.test/demo/git-tools"]));

    // A new commit upstream: `pi update --extensions` brings it.
    write(&repo.join("res/prompts/second.md"), "Second\n");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "v2"]);
    let (code, out, err) = pi_rpc(&sb, &registry, &["update", "--extensions"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Updated 1 package:\n  git:example.test/demo/git-tools "), "{out}");
    assert_eq!(pi_rpc(&sb, &registry, &["update", "--extensions"]).await.1, "Packages are already up to date\n");
    let mut pi = spawn(&sb, &registry, &["--no-session"]);
    assert!(has(&commands(&mut pi).await, "second", "prompt"));
}

#[tokio::test]
async fn a_package_that_cannot_be_installed_is_skipped_with_a_warning() {
    let sb = Sandbox::offline();
    let registry = Registry::start();
    sb.write_settings(json!({"packages": ["npm:@demo/absent-in-settings@1.0.0"]}));
    let python = write_script(
        &sb,
        "plain.py",
        "import json, sys\nprint(json.dumps({'type': 'register', 'commands': [{'name': 'py'}]}), flush=True)\nsys.stdin.read()\n",
    );
    let mut pi = spawn(&sb, &registry, &["--no-session", "-e", "npm:@demo/absent@1.0.0", "-e", &python]);
    let list = commands(&mut pi).await;
    assert_eq!(list, [("py".to_string(), "extension".to_string())]);
    assert_eq!(pi.call("s", json!({"type": "get_state"})).await["success"], true);
    let stderr = pi.stderr();
    assert!(
        stderr.contains(
            "Extension package \"npm:@demo/absent@1.0.0\": failed to install (npm install @demo/absent@1.0.0"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("Check the source and try again."), "{stderr}");
    assert!(
        stderr.contains("Run \"pi remove npm:@demo/absent-in-settings@1.0.0\" to remove it from settings.json."),
        "{stderr}"
    );
}

#[tokio::test]
async fn pi_and_pi_rpc_use_each_others_packages() {
    let Some(t) = tools() else { return };
    if installed_tool("reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js").is_none() {
        return;
    }
    let sb = Sandbox::offline();
    host_settings(&sb, &t);
    let registry = Registry::start();
    let source_dir = sb.home.path().join("src/pi-tools");
    make_package(&source_dir, "@demo/pi-tools", "1.0.0", "npmpkg", false);
    registry.publish(&source_dir);
    git_package(&sb);

    // pi 1.6.0 installs the npm package; pi-rpc lists it and loads it.
    let (code, out, err) = reference(&sb, &registry, &t.node, &["install", "npm:@demo/pi-tools@1.0.0"], "").await;
    assert_eq!(code, 0, "pi 1.6.0 install: {out}\n{err}");
    let (_, listed, _) = pi_rpc(&sb, &registry, &["list"]).await;
    let installed = sb.agent_dir.path().join("npm/node_modules/@demo/pi-tools");
    assert!(listed.contains(&format!("  npm:@demo/pi-tools@1.0.0\n    {}\n", installed.display())), "{listed}");
    let mut pi = spawn(&sb, &registry, &["--no-session"]);
    let list = commands(&mut pi).await;
    assert!(has(&list, "npmpkg-hello", "extension") && has(&list, "skill:npmpkg-skill", "skill"), "{list:?}");
    drop(pi);

    // pi-rpc installs the git package; pi 1.6.0 lists it and loads it.
    let (code, out, err) = pi_rpc(&sb, &registry, &["install", "git:example.test/demo/git-tools@v1"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, listed, err) = reference(&sb, &registry, &t.node, &["list"], "").await;
    assert_eq!(code, 0, "{err}");
    let checkout = sb.agent_dir.path().join("git/example.test/demo/git-tools");
    assert!(
        listed.contains("git:example.test/demo/git-tools@v1") && listed.contains(&checkout.display().to_string()),
        "{listed}"
    );
    let (_, out, err) = reference(
        &sb,
        &registry,
        &t.node,
        &["--mode", "rpc", "--no-session"],
        "{\"id\":\"c\",\"type\":\"get_commands\"}\n",
    )
    .await;
    let reply: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == "c")
        .unwrap_or_else(|| panic!("no get_commands reply from pi 1.6.0: {out}\n{err}"));
    let names: Vec<&str> = reply["data"]["commands"]
        .as_array()
        .map(|l| l.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    for expected in ["gitpkg-hello", "npmpkg-hello", "gitpkg-prompt", "skill:gitpkg-skill"] {
        assert!(names.contains(&expected), "pi 1.6.0 misses {expected}: {names:?}");
    }
}

/// A reload that installs a package does so off the session: while npm
/// waits for the registry, other commands (`get_state`) are answered; once
/// the install is done, the reload ends and the package's command is there.
#[tokio::test]
async fn a_reload_that_installs_a_package_does_not_block_the_session() {
    let Some(t) = tools() else { return };
    let sb = Sandbox::offline();
    host_settings(&sb, &t);
    let registry = Registry::start();
    let source_dir = sb.home.path().join("src/slow-tools");
    make_package(&source_dir, "@demo/slow-tools", "1.0.0", "slow", false);
    registry.publish(&source_dir);
    write(
        &sb.agent_dir.path().join("extensions/adder.ts"),
        r#"import * as fs from "node:fs";
import * as path from "node:path";
export default function (pi: any) {
  pi.registerCommand("add", {
    handler: async (_args: string, ctx: any) => {
      const file = path.join(process.env.PI_CODING_AGENT_DIR as string, "settings.json");
      const settings = JSON.parse(fs.readFileSync(file, "utf8"));
      settings.packages = ["npm:@demo/slow-tools@1.0.0"];
      fs.writeFileSync(file, JSON.stringify(settings, null, 2));
      await ctx.reload();
    },
  });
}
"#,
    );
    let mut pi = spawn(&sb, &registry, &["--no-session"]);
    assert!(!has(&commands(&mut pi).await, "slow-hello", "extension"));

    registry.hold();
    pi.send(json!({"id": "r", "type": "prompt", "message": "/add"})).await;
    // npm asked the registry, which does not answer yet: the install is under way.
    while !registry.requests().iter().any(|r| r.contains("slow-tools")) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    // Answered while the registry still holds npm (a blocked session would never answer).
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "s").await;
    assert_eq!(lines.last().map(|v| v["success"].clone()), Some(json!(true)), "{lines:?}");

    registry.release();
    let reply = match lines.into_iter().find(|v| v["type"] == "response" && v["id"] == "r") {
        Some(reply) => reply,
        None => pi.response("r").await,
    };
    assert_eq!(reply["success"], true, "{reply}");
    let list = commands(&mut pi).await;
    assert!(has(&list, "slow-hello", "extension"), "{list:?}\n{}", pi.stderr());
}
