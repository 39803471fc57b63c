//! A new extension runtime in pi 1.6.0's phases, side by side with pi: at
//! start-up (every factory, then every `session_start`), and when a
//! session is replaced (`new_session`, `switch_session`, `fork`, `clone`, a
//! command's `newSession({setup})`, `switchSession`, `fork`) or reloaded
//! (`ctx.reload()`), every old instance gets `session_shutdown` (in load
//! order, the old session still current: what its handlers read of the
//! session is the one they leave), then every factory runs in turn, then
//! (after the setup) every `session_start` handler. Until
//! the last factory ran the session's actions throw pi's "Extension runtime
//! not initialized…", also in an earlier extension's `pi.events` listener a
//! later factory triggers; a reload loads a new extension in its place
//! among the others' turns.
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_host::write_module;
use crate::harness::{Pi, Sandbox};

/// Extension `NAME` (`a`, `b`, `c`, loaded in that order; `b2` added
/// before a reload): it logs its factory, `session_shutdown`, `session_start`
/// (and `a` its `newSession` setup) to the log at `LOG_PATH`, and `a` what
/// its `session_shutdown` handler reads of the session to `SEEN_PATH`. `a` listens
/// on `pi.events` and calls `getAllTools()` from its listener, logging the
/// outcome to the log at `BUS_PATH`; the others emit from their factories,
/// `c` from its `session_start` too.
const PHASED_EXTENSION: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync } from "node:fs";

const LOG: string = LOG_PATH;
const BUS: string = BUS_PATH;
const SEEN: string = SEEN_PATH;
const log = (line: string) => appendFileSync(LOG, `${line}\n`);

export default function (pi: ExtensionAPI) {
  log("NAME:factory");
  if ("NAME" === "a") {
    pi.events.on("ping", (from) => {
      let outcome = "answered";
      try {
        pi.getAllTools();
      } catch (error) {
        outcome = (error as Error).message;
      }
      appendFileSync(BUS, `a<${from}: ${outcome}\n`);
    });
  } else {
    pi.events.emit("ping", "NAME");
  }
  // What `a` read of the session at its own `session_start`, to tell the old session from the new one.
  let own: { file?: string; id?: string } = {};
  pi.on("session_shutdown", (event, ctx) => {
    log(`NAME:shutdown(${event.reason})`);
    if ("NAME" !== "a") return;
    const sm = ctx.sessionManager;
    const file = sm.getSessionFile();
    const which = file === own.file ? "own" : file === event.targetSessionFile ? "target" : "other";
    const header = sm.getHeader()?.id === own.id ? "own" : "other";
    const messages = sm.getEntries().filter((e) => e.type === "message").length;
    const leaf = sm.getLeafId();
    const leafType = leaf === null ? "none" : (sm.getEntry(leaf)?.type ?? "missing");
    const branch = sm.getBranch().filter((e) => e.type === "message").length;
    const model = ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : "none";
    const target = event.targetSessionFile === undefined ? "none" : event.targetSessionFile === file ? "own" : "other";
    appendFileSync(
      SEEN,
      `${event.reason}: file=${which} header=${header} messages=${messages} leaf=${leafType} branch=${branch} ` +
        `target=${target} model=${model} thinking=${pi.getThinkingLevel()} tools=${pi.getActiveTools().join(",")}\n`,
    );
  });
  pi.on("session_start", (event, ctx) => {
    own = { file: ctx.sessionManager.getSessionFile(), id: ctx.sessionManager.getHeader()?.id };
    log(`NAME:start(${event.reason})`);
    if ("NAME" === "c") pi.events.emit("ping", `c-start(${event.reason})`);
  });
  pi.registerCommand("reload-NAME", {
    handler: async (_args, ctx) => {
      await ctx.reload();
    },
  });
  // `/veto-NAME`: its next `session_before_switch` cancels the replacement.
  let veto = false;
  pi.on("session_before_switch", () => {
    if (!veto) return;
    veto = false;
    return { cancel: true };
  });
  pi.registerCommand("veto-NAME", {
    handler: async () => {
      veto = true;
    },
  });
  pi.registerCommand("narrow-NAME", {
    handler: async () => {
      pi.setActiveTools(["read"]);
    },
  });
  pi.registerCommand("switch-NAME", {
    handler: async (args, ctx) => {
      await ctx.switchSession(args.trim());
    },
  });
  pi.registerCommand("fork-NAME", {
    handler: async (args, ctx) => {
      await ctx.fork(args.trim());
    },
  });
  pi.registerCommand("setup-NAME", {
    handler: async (_args, ctx) => {
      await ctx.newSession({ setup: async () => log("NAME:setup") });
    },
  });
}
"#;

/// The logs, and how far each was read.
struct Logs {
    order: PathBuf,
    bus: PathBuf,
    seen: PathBuf,
    read: (usize, usize, usize),
}

impl Logs {
    /// What the logs gained since the last step, once `c`'s `session_start`
    /// with `reason` was heard by `a` (the last thing a step does).
    async fn step(&mut self, reason: &str) -> Value {
        let done = format!("a<c-start({reason})");
        let read = |path: &Path, from: usize| std::fs::read_to_string(path).unwrap_or_default()[from..].to_string();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !read(&self.bus, self.read.1).contains(&done) {
            assert!(tokio::time::Instant::now() < deadline, "no {done}: {}", read(&self.order, self.read.0));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // What a host still writes after it (nothing, when the step is over).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (order, bus, seen) =
            (read(&self.order, self.read.0), read(&self.bus, self.read.1), read(&self.seen, self.read.2));
        self.read = (self.read.0 + order.len(), self.read.1 + bus.len(), self.read.2 + seen.len());
        let lines = |text: &str| text.lines().map(str::to_string).collect::<Vec<_>>();
        json!({"order": lines(&order), "bus": lines(&bus), "seen": lines(&seen)})
    }

    /// What the logs gained since the last step, a moment after a step that
    /// should log nothing.
    async fn quiet(&mut self) -> Value {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let read = |path: &Path, from: usize| std::fs::read_to_string(path).unwrap_or_default()[from..].to_string();
        let gained = [read(&self.order, self.read.0), read(&self.bus, self.read.1), read(&self.seen, self.read.2)];
        self.read = (self.read.0 + gained[0].len(), self.read.1 + gained[1].len(), self.read.2 + gained[2].len());
        json!(gained.concat().lines().collect::<Vec<_>>())
    }
}

/// pi-rpc or pi 1.6.0 with `a`, `b`, `c` (sessions saved): what each
/// replacement and reload logged.
async fn phases(reference: bool) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let order = sb.cwd.path().join("order.log");
    let bus = sb.cwd.path().join("bus.log");
    let seen = sb.cwd.path().join("seen.log");
    let module = |name: &str| {
        let quoted = |path: &Path| Value::from(path.display().to_string()).to_string();
        PHASED_EXTENSION
            .replace("NAME", name)
            .replace("LOG_PATH", &quoted(&order))
            .replace("BUS_PATH", &quoted(&bus))
            .replace("SEEN_PATH", &quoted(&seen))
    };
    for name in ["a", "b", "c"] {
        write_module(&sb, &format!("{name}.ts"), &module(name));
    }
    let mut pi = crate::extension_builtin_factories::start_saved(&sb, reference, &[])?;
    let mut logs = Logs { order: order.clone(), bus: bus.clone(), seen: seen.clone(), read: (0, 0, 0) };
    let mut steps = serde_json::Map::new();
    steps.insert("startup".into(), logs.step("startup").await);
    sb.server().push(Reply::text("hello there"));
    ok(&mut pi, "p", json!({"type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let first = crate::native_sessions::session_file(&mut pi).await;
    // The old session's tools differ from those a new runtime starts with.
    ok(&mut pi, "t", json!({"type": "prompt", "message": "/narrow-a"})).await;

    ok(&mut pi, "n", json!({"type": "new_session"})).await;
    steps.insert("new_session".into(), logs.step("new").await);
    ok(&mut pi, "s", json!({"type": "switch_session", "sessionPath": first})).await;
    steps.insert("switch_session".into(), logs.step("resume").await);
    let forkable = crate::native_sessions::data(&mut pi, "fm", json!({"type": "get_fork_messages"})).await;
    let entry = forkable["messages"][0]["entryId"].clone();
    ok(&mut pi, "f", json!({"type": "fork", "entryId": entry})).await;
    steps.insert("fork".into(), logs.step("fork").await);
    pi.send(json!({"id": "r", "type": "prompt", "message": "/reload-c"})).await;
    steps.insert("reload".into(), logs.step("reload").await);
    pi.send(json!({"id": "u", "type": "prompt", "message": "/setup-a"})).await;
    steps.insert("setup".into(), logs.step("new").await);
    // A session with messages, cloned, then left by a command's `switchSession` and `fork`.
    sb.server().push(Reply::text("hello again"));
    ok(&mut pi, "p2", json!({"type": "prompt", "message": "again"})).await;
    pi.until_type("agent_settled").await;
    ok(&mut pi, "c", json!({"type": "clone"})).await;
    steps.insert("clone".into(), logs.step("fork").await);
    let switch = format!("/switch-a {}", first.display());
    pi.send(json!({"id": "cs", "type": "prompt", "message": switch})).await;
    steps.insert("commandSwitch".into(), logs.step("resume").await);
    let forkable = crate::native_sessions::data(&mut pi, "fm2", json!({"type": "get_fork_messages"})).await;
    let entry = forkable["messages"][0]["entryId"].as_str().unwrap_or_default().to_string();
    pi.send(json!({"id": "cf", "type": "prompt", "message": format!("/fork-a {entry}")})).await;
    steps.insert("commandFork".into(), logs.step("fork").await);
    // A `session_before_switch` handler cancels a `new_session`: no shutdown, the session stays.
    ok(&mut pi, "v", json!({"type": "prompt", "message": "/veto-a"})).await;
    let before = crate::native_sessions::session_file(&mut pi).await;
    let vetoed = crate::native_sessions::data(&mut pi, "nv", json!({"type": "new_session"})).await;
    let after = crate::native_sessions::session_file(&mut pi).await;
    let logged = logs.quiet().await;
    steps.insert("vetoed".into(), json!({"answer": vetoed, "logged": logged, "sameSession": before == after}));
    // A reload loads `b2`, found between `b` and `c`: its factory and handlers take their turns there.
    write_module(&sb, "b2.ts", &module("b2"));
    pi.send(json!({"id": "r2", "type": "prompt", "message": "/reload-a"})).await;
    steps.insert("reloadAdding".into(), logs.step("reload").await);
    pi.close_stdin();
    Some(Value::Object(steps))
}

async fn ok(pi: &mut Pi, id: &str, command: Value) {
    let r = pi.call(id, command).await;
    assert_eq!(r["success"], true, "{r}");
}

/// The phases of one step with `names` loaded, for `reason`.
fn phased(names: &[&str], reason: &str, setup: bool) -> Value {
    let mut order: Vec<String> = Vec::new();
    order.extend(names.iter().filter(|n| **n != "b2").map(|n| format!("{n}:shutdown({reason})")));
    order.extend(names.iter().map(|n| format!("{n}:factory")));
    if setup {
        order.push("a:setup".into());
    }
    order.extend(names.iter().map(|n| format!("{n}:start({reason})")));
    json!(order)
}

#[tokio::test]
async fn a_new_runtime_runs_all_shutdowns_then_all_factories_then_all_starts_as_in_pi() {
    let Some(ours) = phases(false).await else { return };
    let Some(theirs) = phases(true).await else { return };
    let unbound = "Extension runtime not initialized. Action methods cannot be called during extension loading.";
    // Start-up: every factory, then (bound) every `session_start`; no `session_shutdown`.
    let start_up = ["a:factory", "b:factory", "c:factory", "a:start(startup)", "b:start(startup)", "c:start(startup)"];
    assert_eq!(ours["startup"]["order"], json!(start_up), "{ours}");
    for (step, reason) in [
        ("startup", "startup"),
        ("new_session", "new"),
        ("switch_session", "resume"),
        ("fork", "fork"),
        ("reload", "reload"),
        ("clone", "fork"),
        ("commandSwitch", "resume"),
        ("commandFork", "fork"),
    ] {
        if step != "startup" {
            assert_eq!(ours[step]["order"], phased(&["a", "b", "c"], reason, false), "{step}: {ours}");
        }
        // `a`'s listener: unbound while `b`'s and `c`'s factories run, bound at `c`'s `session_start`.
        let heard = [format!("a<b: {unbound}"), format!("a<c: {unbound}"), format!("a<c-start({reason}): answered")];
        assert_eq!(ours[step]["bus"], json!(heard), "{step}: {ours}");
    }
    // `a`'s `session_shutdown` reads the session it is leaving (its own file and header, the
    // target another file), as pi tears the old runtime down before the new session is current.
    for (step, reason) in [
        ("new_session", "new"),
        ("switch_session", "resume"),
        ("fork", "fork"),
        ("setup", "new"),
        ("clone", "fork"),
        ("commandSwitch", "resume"),
        ("commandFork", "fork"),
    ] {
        let seen = ours[step]["seen"][0].as_str().unwrap_or_default();
        assert!(seen.starts_with(&format!("{reason}: file=own header=own ")), "{step}: {seen}");
        assert!(seen.contains(" target=other "), "{step}: {seen}");
    }
    // The old session's messages and tools: `/narrow-a` left only `read` active before `new_session`.
    let left = ours["new_session"]["seen"][0].as_str().unwrap_or_default();
    assert!(left.contains(" messages=3 ") && left.ends_with(" tools=read"), "{left}");
    let left = ours["switch_session"]["seen"][0].as_str().unwrap_or_default();
    assert!(left.contains(" messages=0 ") && left.ends_with(" tools=read,bash,edit,write"), "{left}");
    assert_eq!(ours["vetoed"], json!({"answer": {"cancelled": true}, "logged": [], "sameSession": true}), "{ours}");
    for step in ["reload", "reloadAdding"] {
        assert!(
            ours[step]["seen"][0].as_str().unwrap_or_default().starts_with("reload: file=own header=own "),
            "{ours}"
        );
    }
    assert_eq!(ours["setup"]["order"], phased(&["a", "b", "c"], "new", true), "{ours}");
    // The old runtime had no `b2`: no `session_shutdown` for it.
    assert_eq!(ours["reloadAdding"]["order"], phased(&["a", "b", "b2", "c"], "reload", false), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc (left) and pi 1.6.0 (right) differ");
}
