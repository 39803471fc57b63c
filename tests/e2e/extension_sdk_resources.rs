//! Prompt templates, skill commands and pi packages' resources inside pi's
//! SDK session, side by side with pi 1.6.0: a `DefaultResourceLoader` over
//! an agent directory whose settings name a local pi package (skills,
//! prompts, a theme, an extension), `createAgentSession` with it, and
//! `session.prompt("/tmpl a b")`, `"/skill:x y"`, the package's template and
//! skill, an unknown skill and `/name`, plain text, a skill whose file went,
//! `sendUserMessage` (not expanded unless asked), `expandPromptTemplates:
//! false`, and `steer` / `followUp` / `sendUserMessage` queued during a run;
//! then a session without a loader (pi's agent directory's template and
//! skill). Each program's extension command notifies a JSON summary of the
//! loader's `getSkills()/getPrompts()/getExtensions()/getThemes()` and the
//! user messages the sessions sent; the user messages of the longest
//! conversation the fake model server received are compared too.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::extension_sdk_runner::module_note;
use crate::extension_sdk_services::{notified_json, side_by_side, start_module};
use crate::harness::Sandbox;

const SDK_RESOURCES: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, Theme } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** A theme as the loader gives it: pi's `Theme`, painting in the terminal's colour mode. */
const themeSummary = (t: any) => ({
  name: t.name,
  sourcePath: t.sourcePath ?? null,
  sourceInfo: t.sourceInfo ?? null,
  isTheme: t instanceof Theme,
  appearance: t.appearance,
  painted: [t.fg("accent", "a"), t.bg("selectedBg", "b"), t.getFgAnsi("muted"), t.getThinkingBorderColor("high")("c")],
});

const textOf = (m: any) => (typeof m.content === "string" ? m.content : m.content.filter((c: any) => c.type === "text").map((c: any) => c.text).join(""));
const userTexts = (session: any) => session.messages.filter((m: any) => m.role === "user").map(textOf);

const loaderSummary = (loader: any) => ({
  skills: loader.getSkills(),
  prompts: loader.getPrompts(),
  extensions: loader.getExtensions().extensions.map((e: any) => ({ path: e.path, resolvedPath: e.resolvedPath, sourceInfo: e.sourceInfo, commands: [...e.commands.keys()] })),
  extensionErrors: loader.getExtensions().errors,
  themes: loader.getThemes().themes.map(themeSummary),
  themeDiagnostics: loader.getThemes().diagnostics,
  // pi-rpc's loader only: the packages' extension files it hands to the loader's extensions.
  packageExtensions: loader.packageExtensions ?? null,
});

export default function (pi: ExtensionAPI) {
  pi.registerCommand("subres", {
    handler: async (_args, ctx) => {
      const agentDir = path.join(ctx.cwd, "sdk-agent");
      const loader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir });
      await loader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, resourceLoader: loader, sessionManager: SessionManager.inMemory(ctx.cwd) });
      for (const text of ["/tmpl a b", "/skill:x y  ", "/pkg-tmpl one 'two three'", "/skill:pkg-skill", "/skill:nobody here", "/nothing here", "plain /tmpl"]) {
        await session.prompt(text);
      }
      await session.sendUserMessage("/tmpl not expanded");
      await session.sendUserMessage("/tmpl asked", { expandPromptTemplates: true });
      await session.prompt("/tmpl kept", { expandPromptTemplates: false });
      // A skill whose file went after the loader read it: sent as typed.
      fs.rmSync(path.join(agentDir, "skills", "gone"), { recursive: true });
      await session.prompt("/skill:gone z");
      // Queued while the model answers: steer and followUp expand, sendUserMessage does not.
      let queued = false;
      const unsubscribe = session.subscribe((e: any) => {
        if (queued || e.type !== "message_start" || e.message.role !== "assistant") return;
        queued = true;
        void session.steer("/tmpl s t");
        void session.followUp("/skill:x f");
        void session.sendUserMessage("/tmpl u", { deliverAs: "followUp" });
      });
      await session.prompt("go");
      unsubscribe();
      const sent = userTexts(session);

      // Without a resource loader: the session's own, over the cwd and pi's agent directory.
      const { session: plain } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd) });
      await plain.prompt("/top q r");
      await plain.prompt("/skill:top-skill");
      // A template added later expands once the session reloads.
      fs.writeFileSync(path.join(getAgentDir(), "prompts", "later.md"), "Later: $1\n");
      await plain.prompt("/later before");
      await plain.reload();
      await plain.prompt("/later after");
      // Without a resource loader but with an agent directory: that directory's.
      const { session: inDir } = await createAgentSession({ cwd: ctx.cwd, agentDir, model: ctx.model, sessionManager: SessionManager.inMemory(ctx.cwd) });
      await inDir.prompt("/tmpl d e");
      await inDir.prompt("/top not here");
      ctx.ui.notify(JSON.stringify({ loader: loaderSummary(loader), sent, plain: userTexts(plain), inDir: userTexts(inDir) }), "info");
    },
  });
}
"#;

const PKG_EXTENSION: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  pi.registerCommand("pkg-cmd", { description: "From a package", handler: async () => {} });
}
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
    std::fs::write(path, text).expect("write");
}

/// `<cwd>/sdk-agent`: an agent directory with a template, a skill and a
/// local package `<cwd>/my-pkg` (skills, prompts, a theme, an extension) in
/// its settings; pi's own agent directory gets a template and a skill.
fn prepare(sb: &Sandbox, reference_pkg: &Path) {
    let cwd = sb.cwd.path();
    let agent = sb.agent_dir.path();
    let sdk = cwd.join("sdk-agent");
    let pkg = cwd.join("my-pkg");
    write(&sdk.join("settings.json"), &json!({"packages": [pkg]}).to_string());
    write(
        &sdk.join("prompts/tmpl.md"),
        "---\ndescription: A template\n---\nFirst $1, second $2, all $@, rest ${@:2}.\n",
    );
    write(&sdk.join("skills/x/SKILL.md"), "---\nname: x\ndescription: The x skill.\n---\n\nDo x things.\n\n");
    write(&sdk.join("skills/gone/SKILL.md"), "---\nname: gone\ndescription: Soon gone.\n---\nGone.\n");
    write(&pkg.join("package.json"), &json!({"name": "my-pkg", "version": "1.0.0"}).to_string());
    write(
        &pkg.join("skills/pkg-skill/SKILL.md"),
        "---\nname: pkg-skill\ndescription: From a package.\n---\nUse the package.\n",
    );
    write(&pkg.join("prompts/pkg-tmpl.md"), "Package template: $1 and $2 ($ARGUMENTS).\n");
    write(&pkg.join("extensions/pkg-ext.ts"), PKG_EXTENSION);
    let theme =
        std::fs::read_to_string(reference_pkg.join("dist/modes/interactive/theme/dark.json")).expect("pi's dark theme");
    let mut theme: Value = serde_json::from_str(&theme).expect("theme json");
    theme["name"] = json!("pkg-theme");
    write(&pkg.join("themes/pkg-theme.json"), &theme.to_string());
    // pi's `createAgentSession({agentDir})` takes its models from there: the fake server's.
    std::fs::copy(agent.join("models.json"), sdk.join("models.json")).expect("models.json");
    write(&agent.join("prompts/top.md"), "Top: $@\n");
    write(&agent.join("skills/top-skill/SKILL.md"), "---\ndescription: The top skill.\n---\nTop skill body.\n");
}

/// What `/<command>` notified in one program, with the user messages of the
/// fake server's last request (`received`); sandbox paths replaced.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let cli = reference_cli()?;
    let package = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
    let module = ("sdk-resources.ts", SDK_RESOURCES);
    let (sb, mut pi) = start_module(reference, module, Some(json!({})), |sb| prepare(sb, &package)).await?;
    let mut summary = notified_json(&mut pi, &sb, command).await;
    summary["received"] = received_user_texts(&sb);
    Some(summary)
}

/// The user messages of the longest conversation the fake server received.
fn received_user_texts(sb: &Sandbox) -> Value {
    let text_of = |content: &Value| match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    let requests = sb.server().requests();
    // The longest conversation: the loader's session's last call, every prompt in it.
    let longest = requests
        .iter()
        .map(|r| r.body.clone())
        .filter(|b| b["messages"].is_array())
        .max_by_key(|b| b["messages"].as_array().map_or(0, Vec::len));
    let mut texts: Vec<String> = longest
        .map(|b| b["messages"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .collect();
    for (dir, name) in [(sb.cwd.path(), "<cwd>"), (sb.agent_dir.path(), "<agent>"), (sb.home.path(), "<home>")] {
        for t in &mut texts {
            *t = t.replace(&dir.display().to_string(), name);
        }
    }
    json!(texts)
}

/// pi-rpc's summary, then pi 1.6.0's.
async fn both() -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, "subres").await
}

#[tokio::test]
async fn an_sdk_session_expands_templates_and_skills_as_pis() {
    let Some((ours, theirs)) = both().await else { return };
    let sent = &ours["sent"];
    assert_eq!(sent[0], "First a, second b, all a b, rest b.", "{ours}");
    assert!(
        sent[1].as_str().is_some_and(|t| t.starts_with("<skill name=\"x\"") && t.ends_with("</skill>\n\ny")),
        "{ours}"
    );
    assert_eq!(sent[2], "Package template: one and two three (one two three).\n", "{ours}");
    assert_eq!(ours["plain"][0], "Top: q r\n", "{ours}");
    assert_eq!(ours["plain"][2], "/later before", "{ours}");
    assert_eq!(ours["plain"][3], "Later: after\n", "{ours}");
    let has = |text: &str| sent.as_array().is_some_and(|all| all.iter().any(|t| t == text));
    for text in ["/tmpl not expanded", "/tmpl kept", "/skill:gone z", "First s, second t, all s t, rest t.", "/tmpl u"]
    {
        assert!(has(text), "{text} in {sent}");
    }
    assert_eq!(ours["inDir"], json!(["First d, second e, all d e, rest e.", "/top not here"]), "{ours}");
    for key in ["sent", "plain", "inDir", "received"] {
        assert_eq!(ours[key], theirs[key], "{key}: pi-rpc, then pi 1.6.0");
    }
}

#[tokio::test]
async fn a_loader_includes_pi_packages_resources_as_pis() {
    let Some((ours, theirs)) = both().await else { return };
    let (ours, theirs) = (&ours["loader"], &theirs["loader"]);
    let skills: Vec<&str> =
        ours["skills"]["skills"].as_array().expect("skills").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(skills, ["gone", "x", "pkg-skill"], "{ours}");
    assert_eq!(ours["themes"][0]["name"], "pkg-theme", "{ours}");
    // pi's `Theme` object, which paints (not the file's JSON).
    assert_eq!(ours["themes"][0]["isTheme"], true, "{ours}");
    assert!(ours["themes"][0]["painted"][0].as_str().is_some_and(|a| a.starts_with('\u{1b}')), "{ours}");
    assert_eq!(ours["prompts"]["prompts"][1]["sourceInfo"]["origin"], "package", "{ours}");
    for key in ["skills", "prompts", "themes", "themeDiagnostics", "extensionErrors"] {
        assert_eq!(ours[key], theirs[key], "{key}: pi-rpc, then pi 1.6.0");
    }
    // The package's extension file, with pi's `sourceInfo`, is what pi's loader loads.
    let loaded: Vec<Value> = theirs["extensions"]
        .as_array()
        .expect("pi's extensions")
        .iter()
        .map(|e| json!({"path": e["path"], "sourceInfo": e["sourceInfo"]}))
        .collect();
    assert_eq!(ours["packageExtensions"], json!(loaded), "pi-rpc's package extensions, then pi 1.6.0's loaded ones");
}

const SDK_SETTINGS_PATTERNS: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { DefaultResourceLoader } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const summary = (loader: any) => ({
  extensions: loader.getExtensions().extensions.map((e: any) => e.path),
  extensionErrors: loader.getExtensions().errors,
  themes: loader.getThemes().themes.map((t: any) => t.name),
  themeDiagnostics: loader.getThemes().diagnostics,
});

export default function (pi: ExtensionAPI) {
  pi.registerCommand("sdkload", {
    handler: async (_args, ctx) => {
      const agentDir = path.join(ctx.cwd, "load-agent");
      // Made before the settings name anything: its plain reload() must read them again.
      const early = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir });
      fs.writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({
        extensions: ["more-ext", "!**/auto-*.ts", "+extensions/auto-a.ts", "!**/skip-*.ts", "-builtin:mcp"],
        themes: ["extra-themes", "!**/auto-off.json", "-extra-themes/skip.json"],
      }));
      const loader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir });
      await loader.reload();
      await early.reload();
      ctx.ui.notify(JSON.stringify({ patterns: summary(loader), reloaded: summary(early) }), "info");
    },
  });
}
"#;

/// `<cwd>/load-agent`: extensions and themes in its auto-discovered
/// directories and in two more directories its settings will name.
fn prepare_patterns(sb: &Sandbox, reference_pkg: &Path) {
    let agent = sb.cwd.path().join("load-agent");
    for file in ["extensions/auto-a.ts", "extensions/auto-b.ts", "more-ext/m.ts", "more-ext/skip-m.ts"] {
        write(&agent.join(file), PKG_EXTENSION);
    }
    let theme =
        std::fs::read_to_string(reference_pkg.join("dist/modes/interactive/theme/dark.json")).expect("pi's dark theme");
    let mut theme: Value = serde_json::from_str(&theme).expect("theme json");
    for (file, name) in [
        ("themes/auto-on.json", "auto-on"),
        ("themes/auto-off.json", "auto-off"),
        ("extra-themes/keep.json", "keep"),
        ("extra-themes/skip.json", "skip"),
    ] {
        theme["name"] = json!(name);
        write(&agent.join(file), &theme.to_string());
    }
}

/// pi-rpc's `/sdkload` note, then pi 1.6.0's.
async fn patterns_both() -> Option<(Value, Value)> {
    let run = |reference: bool, command: String| async move {
        let cli = reference_cli()?;
        let package = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
        let module = ("sdk-settings-patterns.ts", SDK_SETTINGS_PATTERNS);
        module_note(reference, module, &[], &|sb| prepare_patterns(sb, &package), &command).await
    };
    side_by_side(run, "sdkload").await
}

#[tokio::test]
async fn a_loader_applies_the_settings_patterns_as_pis() {
    let Some((ours, theirs)) = patterns_both().await else { return };
    let ours = &ours["patterns"];
    // pi's order: the settings' entries, then the auto-discovered directory.
    assert_eq!(ours["themes"], json!(["keep", "auto-on"]), "{ours}");
    assert_eq!(
        ours["extensions"],
        json!(["<cwd>/load-agent/more-ext/m.ts", "<cwd>/load-agent/extensions/auto-a.ts"]),
        "{ours}"
    );
    assert_eq!(*ours, theirs["patterns"], "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_loaders_plain_reload_reads_the_settings_again_as_pis() {
    let Some((ours, theirs)) = patterns_both().await else { return };
    assert_eq!(ours["reloaded"], ours["patterns"], "{ours}");
    assert_eq!(ours["reloaded"], theirs["reloaded"], "pi-rpc, then pi 1.6.0");
}

/// A loader over the project `<cwd>/proj` and the agent directory
/// `<cwd>/order-agent`, with one more theme directory (`<cwd>/extra-themes`),
/// one more extension (`<cwd>/cli-ext/c.ts`) and an inline one: the
/// extensions and themes in order (a theme as `name:file`), each one's
/// `sourceInfo`, the errors and diagnostics.
const SDK_LOAD_ORDER: &str = r#"import * as path from "node:path";
import { DefaultResourceLoader } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("sdkorder", {
    handler: async (_args, ctx) => {
      const loader = new DefaultResourceLoader({
        cwd: path.join(ctx.cwd, "proj"),
        agentDir: path.join(ctx.cwd, "order-agent"),
        additionalThemePaths: [path.join(ctx.cwd, "extra-themes")],
        additionalExtensionPaths: [path.join(ctx.cwd, "cli-ext", "c.ts")],
        extensionFactories: [() => {}],
      });
      await loader.reload();
      ctx.ui.notify(JSON.stringify({
        extensions: loader.getExtensions().extensions.map((e: any) => e.path),
        extensionSources: loader.getExtensions().extensions.map((e: any) => e.sourceInfo ?? null),
        extensionErrors: loader.getExtensions().errors,
        themes: loader.getThemes().themes.map((t: any) => `${t.name}:${path.basename(t.sourcePath)}`),
        themeSources: loader.getThemes().themes.map((t: any) => t.sourceInfo ?? null),
        themeDiagnostics: loader.getThemes().diagnostics,
      }), "info");
    },
  });
}
"#;

/// The project's and the user's settings entries and auto-discovered
/// directories, each with extensions or themes, ignore files (`.gitignore`,
/// `.ignore`, `.fdignore`) naming some of them, a `node_modules` directory,
/// a theme in a subdirectory of a settings entry, and two themes named `dup`
/// (the project's directory's and the user's settings entry's).
fn prepare_load_order(sb: &Sandbox, reference_pkg: &Path) {
    let cwd = sb.cwd.path().to_path_buf();
    let project = cwd.join("proj/.pi");
    let agent = cwd.join("order-agent");
    write(&project.join("settings.json"), &json!({"extensions": ["p-ext"], "themes": ["p-themes"]}).to_string());
    write(&agent.join("settings.json"), &json!({"extensions": ["u-ext"], "themes": ["u-themes"]}).to_string());
    for file in ["p-ext/p1.ts", "extensions/pauto.ts", "extensions/ignored-x.ts", "extensions/node_modules/index.ts"] {
        write(&project.join(file), PKG_EXTENSION);
    }
    write(&project.join("extensions/.gitignore"), "ignored-*.ts\n");
    write(&cwd.join("cli-ext/c.ts"), PKG_EXTENSION);
    for file in ["u-ext/u1.ts", "extensions/uauto.ts", "extensions/off/index.ts"] {
        write(&agent.join(file), PKG_EXTENSION);
    }
    write(&agent.join("extensions/.fdignore"), "off/\n");
    let theme =
        std::fs::read_to_string(reference_pkg.join("dist/modes/interactive/theme/dark.json")).expect("pi's dark theme");
    let mut theme: Value = serde_json::from_str(&theme).expect("theme json");
    for (dir, file, name) in [
        (&project, "p-themes/pt.json", "p-theme"),
        (&project, "p-themes/sub/deep.json", "deep"),
        (&project, "p-themes/sub/skip.json", "skipped"),
        (&project, "themes/pauto.json", "dup"),
        (&project, "themes/hidden.json", "hidden"),
        (&agent, "u-themes/dup.json", "dup"),
        (&agent, "themes/uauto.json", "u-auto"),
        (&cwd, "extra-themes/extra.json", "extra"),
    ] {
        theme["name"] = json!(name);
        write(&dir.join(file), &theme.to_string());
    }
    write(&project.join("p-themes/.gitignore"), "sub/skip.json\n");
    write(&project.join("themes/.ignore"), "hidden.json\n");
}

#[tokio::test]
async fn a_loaders_extension_and_theme_order_and_ignore_files_are_pis() {
    let run = |reference: bool, command: String| async move {
        let cli = reference_cli()?;
        let package = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
        let module = ("sdk-load-order.ts", SDK_LOAD_ORDER);
        module_note(reference, module, &[], &|sb| prepare_load_order(sb, &package), &command).await
    };
    let Some((ours, theirs)) = side_by_side(run, "sdkorder").await else { return };
    let (project, user) = ("<cwd>/proj/.pi", "<cwd>/order-agent");
    let extensions = [
        "<cwd>/cli-ext/c.ts".to_string(),
        format!("{project}/p-ext/p1.ts"),
        format!("{project}/extensions/pauto.ts"),
        format!("{user}/u-ext/u1.ts"),
        format!("{user}/extensions/uauto.ts"),
        "<inline:1>".to_string(),
    ];
    assert_eq!(ours["extensions"], json!(extensions), "{ours}");
    // The project's directory outranks the user's settings entry: its `dup` wins.
    let themes = ["p-theme:pt.json", "deep:deep.json", "dup:pauto.json", "u-auto:uauto.json", "extra:extra.json"];
    assert_eq!(ours["themes"], json!(themes), "{ours}");
    // Each extension and theme with pi's `sourceInfo`: an added path's, a settings entry's, an
    // auto-discovered directory's, an inline one's, the default.
    let local =
        |path: &str, scope: &str| json!({"path": path, "source": "local", "scope": scope, "origin": "top-level"});
    let auto = |path: &str, scope: &str, base: &str| json!({"path": path, "source": "auto", "scope": scope, "origin": "top-level", "baseDir": base});
    let extension_sources = json!([
        {"path": "<cwd>/cli-ext/c.ts", "source": "cli", "scope": "temporary", "origin": "top-level"},
        local(&format!("{project}/p-ext/p1.ts"), "project"),
        auto(&format!("{project}/extensions/pauto.ts"), "project", project),
        local(&format!("{user}/u-ext/u1.ts"), "user"),
        auto(&format!("{user}/extensions/uauto.ts"), "user", user),
        {"path": "<inline:1>", "source": "inline", "scope": "temporary", "origin": "top-level"},
    ]);
    assert_eq!(ours["extensionSources"], extension_sources, "{ours}");
    let sources = json!([
        local(&format!("{project}/p-themes/pt.json"), "project"),
        local(&format!("{project}/p-themes/sub/deep.json"), "project"),
        auto(&format!("{project}/themes/pauto.json"), "project", project),
        auto(&format!("{user}/themes/uauto.json"), "user", user),
        {"path": "<cwd>/extra-themes/extra.json", "source": "local", "scope": "temporary", "origin": "top-level",
            "baseDir": "<cwd>/extra-themes"},
    ]);
    assert_eq!(ours["themeSources"], sources, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A loader whose agent directory's settings name a package npm cannot
/// install (offline): its extensions' result.
const SDK_INSTALL_FAILURE: &str = r#"import * as path from "node:path";
import { DefaultResourceLoader } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("sdkfail", {
    handler: async (_args, ctx) => {
      const loader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: path.join(ctx.cwd, "fail-agent") });
      await loader.reload();
      const result = loader.getExtensions();
      ctx.ui.notify(JSON.stringify({ extensions: result.extensions.map((e: any) => e.path), errors: result.errors, warnings: result.warnings ?? null }), "info");
    },
  });
}
"#;

/// `warning` with npm's own words (which differ with the program that ran it) left out.
fn without_npms_words(warning: &str) -> String {
    match (warning.find("failed to install ("), warning.rfind("). ")) {
        (Some(start), Some(end)) if end > start => {
            format!("{}failed to install (…){}", &warning[..start], &warning[end + 1..])
        }
        _ => warning.to_string(),
    }
}

#[tokio::test]
async fn a_package_that_cannot_be_installed_is_a_loader_warning_as_in_pi() {
    // pi 1.6.0 not in its offline mode (which skips a missing package without a word).
    let run = |reference: bool, command: String| async move {
        let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
        let cli = reference_cli()?;
        let sb = Sandbox::with_server().await;
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "sdk-install-failure.ts", SDK_INSTALL_FAILURE);
        let agent = sb.cwd.path().join("fail-agent");
        write(&agent.join("settings.json"), &json!({"packages": ["npm:@demo/absent@1.0.0"]}).to_string());
        // npm answers at once that the package is not there (no network here either way).
        write(&sb.home.path().join(".npmrc"), "offline=true\n");
        let mut pi =
            if reference { spawn_reference_with(&sb, &node, &cli, false) } else { sb.spawn(&["--no-session"]) };
        Some(notified_json(&mut pi, &sb, &command).await)
    };
    let Some((mut ours, mut theirs)) = side_by_side(run, "sdkfail").await else { return };
    for note in [&mut ours, &mut theirs] {
        for warning in note["warnings"].as_array_mut().into_iter().flatten() {
            let text = warning["warning"].as_str().map(without_npms_words);
            warning["warning"] = json!(text);
        }
    }
    let expected = json!([{
        "path": "npm:@demo/absent@1.0.0",
        "warning": "failed to install (…). Run \"pi remove npm:@demo/absent@1.0.0\" to remove it from settings.json."
    }]);
    assert_eq!(ours["warnings"], expected, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
