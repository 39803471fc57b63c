//! More of pi's SDK inside an extension, side by side with pi 1.6.0:
//! `RpcClient` (a `--mode rpc` agent as a child process: pi-rpc's own binary
//! by default, pi's `cli.js` in pi), the model resolvers `resolveCliModel`
//! and `resolveModelScopeWithDiagnostics`, `DefaultPackageManager` (a
//! local package installed, listed, resolved and removed), and the image
//! helpers `convertToPng` and `resizeImage` (sizes and types compared; the
//! encoded bytes are each program's encoder's). Each part is an
//! extension command that notifies a JSON summary; pi-rpc's is compared with
//! pi 1.6.0's, paths of the sandbox normalised.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::extension_sdk_services::{notified_where, side_by_side};
use crate::harness::Sandbox;

const SDK_CLIENTS: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import {
  convertToPng, DefaultPackageManager, formatDimensionNote, getAgentDir, resizeImage, getPackageDir, ModelRuntime, resolveCliModel, resolveModelScopeWithDiagnostics, RpcClient, SettingsManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const failure = async (f: () => Promise<unknown>) => {
  try {
    await f();
    return null;
  } catch (e: any) {
    return e.message.split(".")[0];
  }
};
const brief = (m: any) => (m ? { ref: `${m.provider}/${m.id}`, name: m.name, reasoning: m.reasoning, api: m.api, contextWindow: m.contextWindow } : null);

/** A 24-bit BMP of `w`x`h` with a colour pattern. */
const bmp = (w: number, h: number) => {
  const row = Math.ceil((w * 3) / 4) * 4;
  const buf = Buffer.alloc(54 + row * h);
  buf.write("BM", 0);
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(54, 10);
  buf.writeUInt32LE(40, 14);
  buf.writeInt32LE(w, 18);
  buf.writeInt32LE(h, 22);
  buf.writeUInt16LE(1, 26);
  buf.writeUInt16LE(24, 28);
  buf.writeUInt32LE(row * h, 34);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) buf.set([(x * 40) % 256, (y * 60) % 256, ((x + y) * 25) % 256], 54 + y * row + x * 3);
  return buf;
};
/** A PNG's size from its header. */
const pngSize = (base64: string) => {
  const b = Buffer.from(base64, "base64");
  return b.subarray(1, 4).toString() === "PNG" ? [b.readUInt32BE(16), b.readUInt32BE(20)] : null;
};
const shape = (r: any) => (r ? { mimeType: r.mimeType, original: [r.originalWidth, r.originalHeight], size: [r.width, r.height], wasResized: r.wasResized, note: formatDimensionNote(r) ?? null } : null);

export default function (pi: ExtensionAPI) {
  pi.registerCommand("images", {
    handler: async (_args, ctx) => {
      const converted = await convertToPng(bmp(40, 20).toString("base64"), "image/bmp");
      const png = converted!.data;
      const same = await convertToPng(png, "image/png");
      const fits = await resizeImage(Buffer.from(png, "base64"), "image/png");
      const smaller = await resizeImage(Buffer.from(png, "base64"), "image/png", { maxWidth: 10, maxHeight: 10 });
      const tall = await resizeImage(bmp(3, 30), "image/bmp", { maxHeight: 12 });
      ctx.ui.notify(JSON.stringify({
        converted: { mimeType: converted!.mimeType, size: pngSize(png) },
        same: same!.data === png && same!.mimeType === "image/png",
        garbage: await convertToPng(Buffer.from("not an image").toString("base64"), "image/jpeg"),
        fits: { ...shape(fits), unchanged: fits!.data === png },
        smaller: { ...shape(smaller), pngSize: smaller!.mimeType === "image/png" ? pngSize(smaller!.data) : "jpeg" },
        tall: shape(tall),
        badResize: await resizeImage(Buffer.from("nope"), "image/png"),
      }), "info");
    },
  });

  pi.registerCommand("packages", {
    handler: async (_args, ctx) => {
      const pkg = path.join(ctx.cwd, "my-pkg");
      fs.mkdirSync(path.join(pkg, "skills", "pkg-skill"), { recursive: true });
      fs.mkdirSync(path.join(pkg, "prompts"), { recursive: true });
      fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "my-pkg", version: "1.0.0" }));
      fs.writeFileSync(path.join(pkg, "skills", "pkg-skill", "SKILL.md"), "---\nname: pkg-skill\ndescription: From a package.\n---\nUse it.\n");
      fs.writeFileSync(path.join(pkg, "prompts", "pkg-prompt.md"), "Say hi.\n");
      const settingsFile = path.join(getAgentDir(), "settings.json");
      const sm = SettingsManager.create(ctx.cwd, getAgentDir());
      const pm = new DefaultPackageManager({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager: sm });
      const events: any[] = [];
      pm.setProgressCallback((e: any) => events.push(e));
      await pm.installAndPersist("./my-pkg");
      const listed = pm.listConfiguredPackages();
      const inSettings = [sm.getPackages(), JSON.parse(fs.readFileSync(settingsFile, "utf8")).packages];
      const resolved = await pm.resolve();
      const ofPackages = (list: any[]) => list.filter((r) => r.metadata.origin === "package")
        .map((r) => ({ path: r.path, enabled: r.enabled, source: r.metadata.source, scope: r.metadata.scope }));
      const resources = { skills: ofPackages(resolved.skills), prompts: ofPackages(resolved.prompts), extensions: ofPackages(resolved.extensions), failures: resolved.installFailures ?? null };
      const installedPath = pm.getInstalledPath(listed[0]?.source, "user") ?? null;
      let missing = null;
      try { await pm.installAndPersist("./nope"); } catch (e: any) { missing = e.message; }
      const removed = await pm.removeAndPersist("./my-pkg");
      const removedAgain = await pm.removeAndPersist("./my-pkg");
      ctx.ui.notify(JSON.stringify({
        listed, inSettings, resources, installedPath, missing, removed, removedAgain,
        after: [pm.listConfiguredPackages(), sm.getPackages(), JSON.parse(fs.readFileSync(settingsFile, "utf8")).packages],
        events,
      }), "info");
    },
  });

  pi.registerCommand("package-settings", {
    handler: async (_args, ctx) => {
      const { execFileSync } = await import("node:child_process");
      const git = (cwd: string, ...args: string[]) =>
        execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", ...args], { cwd, stdio: "pipe" }).toString();
      const readPackages = (file: string) => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")).packages ?? null : null);
      const userFile = path.join(getAgentDir(), "settings.json");
      const projectFile = path.join(ctx.cwd, ".pi", "settings.json");
      const pkg = path.join(ctx.cwd, "my-pkg");
      fs.mkdirSync(pkg, { recursive: true });
      fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "my-pkg", version: "1.0.0" }));
      const sm = SettingsManager.create(ctx.cwd, getAgentDir());
      const pm = new DefaultPackageManager({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager: sm });
      const events: any[] = [];
      pm.setProgressCallback((e: any) => events.push(e));

      // install/remove without the settings
      await pm.install("./my-pkg");
      let missing = null;
      try { await pm.install("./nope"); } catch (e: any) { missing = e.message; }
      await pm.remove("./my-pkg");
      await sm.flush();
      const untouched = [sm.getPackages(), readPackages(userFile)];

      // the settings edited on their own
      const added = [pm.addSourceToSettings("./my-pkg"), pm.addSourceToSettings("./my-pkg"), pm.addSourceToSettings(pkg), pm.addSourceToSettings("./my-pkg", { local: true })];
      const inMemory = [sm.getGlobalSettings().packages, sm.getProjectSettings().packages];
      await sm.flush();
      const written = [readPackages(userFile), readPackages(projectFile)];

      // update checks: local, pinned, not installed, and two git checkouts (one behind its origin)
      const origin = (name: string) => {
        const dir = path.join(ctx.cwd, "origins", name);
        fs.mkdirSync(dir, { recursive: true });
        git(dir, "init", "-q");
        fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0" }));
        git(dir, "add", ".");
        git(dir, "commit", "-q", "-m", "first");
        const checkout = path.join(getAgentDir(), "git", "github.com", "acme", name);
        fs.mkdirSync(path.dirname(checkout), { recursive: true });
        git(path.dirname(checkout), "clone", "-q", dir, checkout);
        return dir;
      };
      const behind = origin("behind");
      origin("current");
      fs.writeFileSync(path.join(behind, "CHANGES.md"), "newer\n");
      git(behind, "add", ".");
      git(behind, "commit", "-q", "-m", "second");
      for (const source of ["npm:left-pad@1.3.0", "npm:not-installed-here", "git:github.com/acme/pinned@v1", "git:github.com/acme/behind", "git:github.com/acme/current"]) {
        pm.addSourceToSettings(source);
      }
      pm.addSourceToSettings("git:github.com/acme/current", { local: true }); // replaces the user's entry; not installed in the project
      const updates = await pm.checkForAvailableUpdates();

      const removed = [pm.removeSourceFromSettings("./my-pkg"), pm.removeSourceFromSettings("./my-pkg"), pm.removeSourceFromSettings(pkg, { local: true })];
      await sm.flush();
      ctx.ui.notify(JSON.stringify({
        missing, untouched, added, inMemory, written, updates, removed,
        after: [sm.getGlobalSettings().packages, sm.getProjectSettings().packages, readPackages(userFile), readPackages(projectFile)],
        events,
      }), "info");
    },
  });

  pi.registerCommand("rpc", {
    handler: async (_args, ctx) => {
      // pi runs its own cli.js when told where it is; pi-rpc's default is pi-rpc itself.
      const cli = path.join(getPackageDir(), "dist", "cli.js");
      const client = new RpcClient({ cwd: ctx.cwd, args: ["--no-session", "--no-extensions"], ...(fs.existsSync(cli) ? { cliPath: cli } : {}) });
      const notStarted = await failure(() => client.getState());
      await client.start();
      const state = await client.getState();
      const models = (await client.getAvailableModels()).map((m: any) => `${m.provider}/${m.id}`);
      const levels = await client.getAvailableThinkingLevels();
      const seen: string[] = [];
      const off = client.onEvent((e: any) => seen.push(e.type));
      const events = await client.promptAndWait("hi");
      off();
      const text = await client.getLastAssistantText();
      const roles = (await client.getMessages()).map((m: any) => m.role);
      const bash = await client.bash("echo from-bash");
      const badModel = await failure(() => client.setModel("fake", "nope"));
      await client.setSessionName("named");
      const after = await client.getState();
      await client.stop();
      const stopped = await failure(() => client.getState());
      ctx.ui.notify(JSON.stringify({
        notStarted,
        state: { model: `${state.model.provider}/${state.model.id}`, thinkingLevel: state.thinkingLevel, isStreaming: state.isStreaming, messageCount: state.messageCount },
        models: models.filter((m: string) => m.startsWith("fake/")),
        levels,
        first: events[0]?.type, last: events.at(-1)?.type,
        kinds: [...new Set(events.map((e: any) => e.type))].sort(),
        sameAsListener: JSON.stringify(seen) === JSON.stringify(events.map((e: any) => e.type)),
        text, roles,
        bash: { output: bash.output, exitCode: bash.exitCode, cancelled: bash.cancelled },
        badModel,
        after: { name: after.sessionName, messageCount: after.messageCount },
        stopped,
      }), "info");
    },
  });

  pi.registerCommand("resolve", {
    handler: async (_args, ctx) => {
      const modelRuntime = await ModelRuntime.create();
      // Each step reports that it is done, so the test's wait is per step, not for the whole command.
      let step = 0;
      const progress = <T,>(value: T): T => {
        ctx.ui.notify(JSON.stringify({ progress: ++step }), "info");
        return value;
      };
      const cli = (options: any) => {
        const r = resolveCliModel({ ...options, modelRuntime });
        return progress({ model: brief(r.model), thinkingLevel: r.thinkingLevel ?? null, warning: r.warning ?? null, error: r.error ?? null });
      };
      const cases = [
        {}, { cliModel: "fake-model" }, { cliModel: "fake/fake-other:high" }, { cliModel: "FAKE-OTH" },
        { cliProvider: "fake", cliModel: "custom-x:low" }, { cliProvider: "fake", cliModel: "custom-y:low", cliThinking: "high" },
        { cliProvider: "nobody", cliModel: "x" }, { cliModel: "zzzz-nothing-like-it" }, { cliModel: "fake/fake-model:bogus" },
        { cliModel: "fake-model", cliThinking: "high" }, { cliModel: "fake/brand-new:medium", inlineApiKey: "k" },
        { cliModel: "claude-sonnet-4-5" },
      ];
      const scope = async (patterns: string[]) => {
        const r = await resolveModelScopeWithDiagnostics(patterns, modelRuntime);
        return progress({ scoped: r.scopedModels.map((s: any) => [`${s.model.provider}/${s.model.id}`, s.thinkingLevel ?? null]), diagnostics: r.diagnostics });
      };
      const fake = modelRuntime.getModel("fake", "fake-model");
      ctx.ui.notify(JSON.stringify({
        cli: cases.map(cli),
        same: JSON.stringify(resolveCliModel({ cliModel: "fake-model", modelRuntime }).model) === JSON.stringify(fake),
        scopes: [
          await scope(["fake-*"]),
          await scope(["fake/fake-model:high", "fake-model", "*other*:low"]),
          await scope(["nothing-at-all", "fake-model:wrong", "fake/*:minimal"]),
          await scope([]),
        ],
        scopedSame: JSON.stringify((await resolveModelScopeWithDiagnostics(["fake-model"], modelRuntime)).scopedModels[0]?.model) === JSON.stringify(fake),
      }), "info");
    },
  });
}
"#;

/// What `/<command>` notified in one program, sandbox paths replaced by `<cwd>`, `<agent>`, `<home>`.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "sdk-clients.ts", SDK_CLIENTS);
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    // Offline, pi checks no package for updates; the update check here asks local git remotes only.
    let offline = command != "package-settings";
    let mut pi = if reference { spawn_reference_with(&sb, &node, &cli, offline) } else { sb.spawn(&["--no-session"]) };
    // A long command notifies `{"progress": n}` after each step; its note is the last notification.
    let mut text =
        notified_where(&mut pi, &sb, command, |m| !m.starts_with("{\"progress\"")).await.pop().unwrap_or_default();
    // A local package is written relative to the agent directory: `../<cwd's name>/…`.
    if let Some(cwd_name) = sb.cwd.path().file_name().and_then(|n| n.to_str()) {
        text = text.replace(&format!("../{cwd_name}/"), "../<cwd name>/");
    }
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}")))
}

/// pi-rpc's note of `/<command>`, then pi 1.6.0's.
async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn an_rpc_client_drives_a_child_agent_as_pis_does() {
    let Some((ours, theirs)) = both("rpc").await else { return };
    assert_eq!(ours["notStarted"], "Client not started", "{ours}");
    assert_eq!(ours["text"], "Hello there.", "{ours}");
    assert_eq!(ours["bash"]["output"], "from-bash\n", "{ours}");
    assert_eq!(ours["last"], "agent_settled", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_package_manager_installs_lists_and_removes_as_pis() {
    let Some((ours, theirs)) = both("packages").await else { return };
    assert_eq!(ours["listed"][0]["scope"], "user", "{ours}");
    assert_eq!(ours["resources"]["skills"][0]["path"], "<cwd>/my-pkg/skills/pkg-skill/SKILL.md", "{ours}");
    assert_eq!(ours["removed"], true, "{ours}");
    assert_eq!(ours["removedAgain"], false, "{ours}");
    for key in
        ["listed", "inSettings", "resources", "installedPath", "missing", "removed", "removedAgain", "after", "events"]
    {
        assert_eq!(ours[key], theirs[key], "{key}: pi-rpc, then pi 1.6.0");
    }
}

#[tokio::test]
async fn a_package_manager_edits_settings_and_checks_updates_as_pis() {
    let Some((ours, theirs)) = both("package-settings").await else { return };
    assert_eq!(ours["untouched"], json!([[], null]), "{ours}");
    assert_eq!(ours["added"], json!([true, false, false, true]), "{ours}");
    assert_eq!(ours["updates"][0]["displayName"], "github.com/acme/behind", "{ours}");
    assert_eq!(ours["removed"], json!([true, false, true]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn image_helpers_convert_and_resize_as_pis() {
    let Some((ours, theirs)) = both("images").await else { return };
    assert_eq!(ours["converted"], json!({"mimeType": "image/png", "size": [40, 20]}), "{ours}");
    assert_eq!(ours["smaller"]["size"], json!([10, 5]), "{ours}");
    assert_eq!(ours["fits"]["wasResized"], false, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn model_resolvers_answer_as_pis() {
    let Some((ours, theirs)) = both("resolve").await else { return };
    assert_eq!(ours["cli"][1]["model"]["ref"], "fake/fake-model", "{ours}");
    assert_eq!(ours["same"], true, "{ours}");
    assert_eq!(ours["scopedSame"], true, "{ours}");
    for (i, case) in ours["cli"].as_array().expect("cases").iter().enumerate() {
        assert_eq!(case, &theirs["cli"][i], "case {i}: pi-rpc, then pi 1.6.0");
    }
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
