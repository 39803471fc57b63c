//! pi's SDK session with a session file, side by side with pi 1.6.0: an
//! extension's `createAgentSession()` without a `sessionManager` writes its
//! session to a file in pi's layout; `SessionManager.open()` resumes it,
//! `list()` / `continueRecent()` find it, `forkFrom()` copies it. The file's entries are compared
//! (ids, clock readings and the prompt's wording normalised), and each
//! program opens the other's file: pi 1.6.0 with `switch_session` on
//! pi-rpc's file, pi-rpc with `switch_session` and `SessionManager.open()`
//! on pi's. A `SessionManager`'s own `newSession`, `setSessionFile` and
//! `createBranchedSession`, in memory and over files, are compared with pi's
//! the same way (`/smgr`).
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::{Path, PathBuf};

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::extension_sdk_session::without_wording;
use crate::harness::{Pi, Sandbox};

/// `/filesub` runs a sub-session with a file, then resumes it; `/open PATH`
/// opens a session file with `SessionManager.open()`; `/smgr` changes a
/// manager's session with its own `newSession`, `setSessionFile` and
/// `createBranchedSession`, in memory and over files.
const FILE_SESSION: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { createAgentSession, getAgentDir, migrateSessionEntries, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/**
 * Entries without what differs from run to run: ids by order of appearance, clock readings, usage;
 * a header's `parentSession` through `name` (a file's role in the scenario).
 */
function stable(entries: any[], cwd: string, name = (file: any) => file): any[] {
  const ids = new Map<string, string>();
  const ref = (id: any) => {
    if (typeof id !== "string") return id;
    if (!ids.has(id)) ids.set(id, `e${ids.size}`);
    return ids.get(id);
  };
  const volatile = ["timestamp", "usage", "durationMs", "responseId"];
  return entries.map((e) => {
    const out = JSON.parse(JSON.stringify(e, (key, v) => (volatile.includes(key) ? undefined : v)));
    if (out.type === "session") {
      const parent = "parentSession" in out ? { parentSession: name(out.parentSession) } : {};
      return { ...out, id: "<id>", cwd: out.cwd === cwd ? "<cwd>" : out.cwd, ...parent };
    }
    for (const key of ["id", "parentId", "firstKeptEntryId", "targetId"]) if (key in out) out[key] = ref(out[key]);
    return out;
  });
}

const lines = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

export default function (pi: ExtensionAPI) {
  pi.registerCommand("filesub", {
    handler: async (_args, ctx) => {
      const { session } = await createAgentSession({ model: ctx.model });
      const fileBefore = session.sessionFile ? fs.existsSync(session.sessionFile) : "none";
      await session.prompt("read notes.txt");
      const file = session.sessionFile!;
      session.dispose();
      const reopened = SessionManager.open(file);
      const { session: again } = await createAgentSession({ sessionManager: reopened, model: ctx.model });
      const resumed = again.messages.length;
      await again.prompt("thanks");
      again.dispose();
      const dir = `--${ctx.cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
      const name = path.basename(file);
      const header = lines(file)[0];
      const listed = (await SessionManager.list(ctx.cwd)).map((s: any) => s.path === file);
      const recent = SessionManager.continueRecent(ctx.cwd).getSessionFile() === file;
      // Forked after `continueRecent`: the fork and its source may carry the same mtime.
      const fork = SessionManager.forkFrom(file, ctx.cwd);
      const forkFile = fork.getSessionFile()!;
      const forked = stable(lines(forkFile), ctx.cwd).map((e: any) => (e.type === "session" ? { ...e, parentSession: e.parentSession === file } : e));
      ctx.ui.notify(JSON.stringify({
        file,
        place: path.relative(getAgentDir(), path.dirname(file)) === path.join("sessions", dir),
        name: /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f-]{36}\.jsonl$/.test(name) && name.endsWith(`_${header.id}.jsonl`),
        fileBefore,
        resumed,
        listed,
        recent,
        entries: stable(lines(file), ctx.cwd),
        fork: { entries: forked, sameDir: path.dirname(forkFile) === path.dirname(file), newFile: forkFile !== file, leaf: fork.getLeafId() === lines(file).at(-1).id },
      }), "info");
    },
  });
  pi.registerCommand("smgr", {
    handler: async (_args, ctx) => {
      const cwd = ctx.cwd;
      const known = new Map<string, string>();
      const name = (file: any) => (typeof file !== "string" ? file : (known.get(file) ?? (file.startsWith(cwd) ? path.relative(cwd, file) : file)));
      const attempt = (f: () => any) => {
        try {
          return f();
        } catch (e: any) {
          return { error: String(e?.message ?? e).replace(cwd, "<cwd>") };
        }
      };
      const onDisk = (file: any) => (typeof file === "string" && fs.existsSync(file) ? stable(lines(file), cwd, name) : "missing");
      const view = (sm: any) => ({
        file: sm.getSessionFile() === undefined ? "none" : name(sm.getSessionFile()),
        written: sm.getSessionFile() ? fs.existsSync(sm.getSessionFile()) : "none",
        leaf: sm.getLeafId() === (sm.getEntries().at(-1)?.id ?? null),
        entries: stable([sm.getHeader(), ...sm.getEntries()], cwd, name),
      });
      const user = (text: string) => ({ role: "user", content: text, timestamp: 1 });
      const reply = (text: string) => ({ role: "assistant", content: [{ type: "text", text }], api: "openai-completions", provider: "p", model: "m", stopReason: "stop", timestamp: 2 });
      // A tree: labels inside the path (one cleared), a compaction keeping an entry, a side branch labelling the path.
      const grow = (sm: any) => {
        sm.appendModelChange("p", "m");
        const u1 = sm.appendMessage(user("hi"));
        const a1 = sm.appendMessage(reply("hello"));
        sm.appendLabelChange(u1, "start");
        sm.appendLabelChange(a1, "gone");
        sm.appendLabelChange(a1, undefined);
        sm.appendMessage(user("more"));
        sm.appendCompaction("summary", a1, 100);
        const a2 = sm.appendMessage(reply("done"));
        sm.appendLabelChange(a2, "end");
        sm.branch(a1);
        sm.appendMessage(user("side"));
        sm.appendLabelChange(u1, "first");
        sm.branch(a2);
        return a2;
      };
      const out: any = {};
      // In memory: nothing written, the session replaced.
      const mem = SessionManager.inMemory(cwd);
      const memLeaf = grow(mem);
      const memId = mem.getSessionId();
      out.memBranch = { returned: attempt(() => mem.createBranchedSession(memLeaf)) ?? "undefined", newId: mem.getSessionId() !== memId, ...view(mem) };
      out.memMissing = attempt(() => mem.createBranchedSession("nothere"));
      out.memNew = { returned: attempt(() => mem.newSession({ parentSession: "/x/parent.jsonl" })) ?? "undefined", ...view(mem) };
      out.memBadId = attempt(() => mem.newSession({ id: "bad id!" }));
      out.memId = { returned: attempt(() => mem.newSession({ id: "my-id.1" })) ?? "undefined", id: mem.getSessionId() };
      out.memEmptyBranch = attempt(() => mem.createBranchedSession());
      // Over files: the branch in a new file naming the old one.
      const dir = path.join(cwd, "smgr");
      const sm: any = SessionManager.create(cwd, dir);
      const leaf = grow(sm);
      const first = sm.getSessionFile();
      known.set(first, "<first>");
      const branched = attempt(() => sm.createBranchedSession(leaf));
      known.set(branched, "<branched>");
      out.fileBranch = {
        inDir: typeof branched === "string" && path.dirname(branched) === dir,
        named: typeof branched === "string" && path.basename(branched).endsWith(`_${sm.getSessionId()}.jsonl`),
        current: branched === sm.getSessionFile(),
        disk: onDisk(branched),
        ...view(sm),
        firstKept: onDisk(first).length,
      };
      // A branch that does not talk yet: no file until it does.
      const quiet: any = SessionManager.create(cwd, dir);
      known.set(quiet.getSessionFile(), "<quiet>");
      const setup = quiet.appendModelChange("p", "m");
      quiet.appendMessage(user("hi"));
      const quietBranch = attempt(() => quiet.createBranchedSession(setup));
      known.set(quietBranch, "<quietBranch>");
      out.quietBranch = { written: typeof quietBranch === "string" && fs.existsSync(quietBranch), ...view(quiet) };
      quiet.appendMessage(user("now"));
      out.quietTalks = onDisk(quietBranch);
      // `newSession`: a new file of the directory, written once the session talks.
      const fresh = attempt(() => sm.newSession({ parentSession: first }));
      known.set(fresh, "<new>");
      out.fileNew = { inDir: typeof fresh === "string" && path.dirname(fresh) === dir, ...view(sm) };
      sm.appendMessage(user("again"));
      out.fileNewTalks = onDisk(fresh);
      // `setSessionFile`: a session file, a missing one, an empty one, one that is not a session.
      out.setExisting = { returned: attempt(() => sm.setSessionFile(first)) ?? "undefined", ...view(sm) };
      const appended = sm.appendMessage(user("appended"));
      out.setExistingAppends = lines(first).at(-1).id === appended;
      const missing = path.join(cwd, "elsewhere", "missing.jsonl");
      fs.mkdirSync(path.dirname(missing), { recursive: true });
      out.setMissing = { returned: attempt(() => sm.setSessionFile(missing)) ?? "undefined", ...view(sm) };
      sm.appendMessage(user("there"));
      out.setMissingTalks = onDisk(missing);
      const empty = path.join(cwd, "empty.jsonl");
      fs.writeFileSync(empty, "");
      out.setEmpty = { returned: attempt(() => sm.setSessionFile(empty)) ?? "undefined", ...view(sm), disk: onDisk(empty) };
      const junk = path.join(cwd, "junk.jsonl");
      fs.writeFileSync(junk, "not json\n");
      out.setJunk = { ...attempt(() => sm.setSessionFile(junk)), file: name(sm.getSessionFile()), entries: sm.getEntries().length };
      // An in-memory manager over a file: its entries, nothing written.
      const memOverFile = SessionManager.inMemory(cwd);
      out.memSet = { returned: attempt(() => memOverFile.setSessionFile(first)) ?? "undefined", ...view(memOverFile) };
      memOverFile.appendMessage(user("not written") as any);
      out.memSetWrites = onDisk(first).length;
      // Older session versions: migrated to version 3 (short ids chained in file order, a compaction's kept
      // index made its entry's id, `hookMessage` made `custom`) and written again, unless in memory.
      const old = (version: number | undefined, name: string) => {
        const file = path.join(cwd, name);
        const header = { type: "session", ...(version ? { version } : {}), id: `old-${name}`, timestamp: "2025-01-01T00:00:00.000Z", cwd };
        const ids = version === 2 ? [{ id: "a1", parentId: null }, { id: "a2", parentId: "a1" }, { id: "a3", parentId: "a2" }, { id: "a4", parentId: "a3" }] : [{}, {}, {}, {}];
        const body = [
          { type: "message", ...ids[0], timestamp: "2025-01-01T00:00:01.000Z", message: user("old hi") },
          { type: "message", ...ids[1], timestamp: "2025-01-01T00:00:02.000Z", message: reply("old hello") },
          { type: "message", ...ids[2], timestamp: "2025-01-01T00:00:03.000Z", message: { role: "hookMessage", customType: "note", content: "hooked", display: true, timestamp: 3 } },
          version === 2
            ? { type: "compaction", ...ids[3], timestamp: "2025-01-01T00:00:04.000Z", summary: "s", firstKeptEntryId: "a2", tokensBefore: 10 }
            : { type: "compaction", timestamp: "2025-01-01T00:00:04.000Z", summary: "s", firstKeptEntryIndex: 2, tokensBefore: 10 },
        ];
        fs.writeFileSync(file, [header, ...body].map((e) => `${JSON.stringify(e)}\n`).join(""));
        return file;
      };
      // The file's text, its short ids by order of appearance (pi's are random).
      const text = (file: string) => {
        const ids = new Map<string, string>();
        return fs.readFileSync(file, "utf8").replace(/"[0-9a-f]{8}"/g, (id) => (ids.has(id) ? ids.get(id)! : (ids.set(id, `"e${ids.size}"`), ids.get(id)!)));
      };
      const shortIds = (sm: any) => sm.getEntries().every((e: any) => /^[0-9a-f]{8}$/.test(e.id) || /^a\d$/.test(e.id));
      for (const [key, version] of [["setV1", undefined], ["setV2", 2]] as const) {
        const file = old(version, `${key}.jsonl`);
        out[key] = { returned: attempt(() => sm.setSessionFile(file)) ?? "undefined", ...view(sm), shortIds: shortIds(sm), text: text(file) };
        const appended = sm.appendMessage(user("after migration"));
        out[`${key}Appends`] = lines(file).at(-1).id === appended;
      }
      const memOld = SessionManager.inMemory(cwd);
      const memFile = old(undefined, "memV1.jsonl");
      const before = fs.readFileSync(memFile, "utf8");
      out.memSetV1 = { returned: attempt(() => memOld.setSessionFile(memFile)) ?? "undefined", ...view(memOld), untouched: fs.readFileSync(memFile, "utf8") === before };
      const opened = SessionManager.open(old(undefined, "openV1.jsonl"));
      out.openV1 = { ...view(opened), text: text(opened.getSessionFile()!) };
      const raw = lines(old(undefined, "rawV1.jsonl"));
      out.migrateSessionEntries = { returned: migrateSessionEntries(raw) ?? "undefined", entries: stable(raw, cwd) };
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });
  pi.registerCommand("open", {
    handler: async (args, ctx) => {
      const sm = SessionManager.open(args.trim());
      ctx.ui.notify(JSON.stringify({
        file: sm.getSessionFile() === path.resolve(args.trim()),
        context: sm.buildSessionContext().messages.map((m: any) => m.role),
        entries: stable([sm.getHeader(), ...sm.getEntries()], sm.getCwd()),
      }), "info");
    },
  });
}
"#;

/// What one program did: the `/filesub` note (its file's text kept aside),
/// and what it saw of the other program's file.
struct Run {
    note: Value,
    file_text: String,
    switched: Option<Value>,
    opened: Option<Value>,
}

/// `value` without the keys that differ from run to run.
fn strip(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["timestamp", "usage", "durationMs", "responseId"] {
                map.remove(key);
            }
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// A sandbox with the `file-session.ts` extension and the model's three answers, and the program in it
/// (pi 1.6.0 when `reference`).
async fn start(reference: bool, node: &Path, dir: &Path, cli: &Path) -> (Sandbox, Pi) {
    let sb = Sandbox::with_server().await;
    host_settings(&sb, node, dir, json!({}));
    write_module(&sb, "file-session.ts", FILE_SESSION);
    std::fs::write(sb.cwd.path().join("notes.txt"), "buy milk\n").expect("notes");
    sb.server().push(Reply::tool_call("c1", "read", r#"{"path": "notes.txt"}"#));
    sb.server().push(Reply::text("It says to buy milk."));
    sb.server().push(Reply::text("You are welcome."));
    let docs = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
    let pi = if reference {
        spawn_reference(&sb, node, cli)
    } else {
        sb.spawn_with_env(&["--no-session"], &[("PI_RPC_DOCS_DIR", &docs)])
    };
    (sb, pi)
}

/// The JSON `command` notified, once it ran without an extension error.
async fn note_of(pi: &mut Pi, id: &str, command: &str) -> Value {
    pi.send(json!({"id": id, "type": "prompt", "message": command})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let text = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{command} notified {text}: {e}"))
}

async fn run(reference: bool, node: &Path, dir: &Path, cli: &Path, foreign: Option<&str>) -> Run {
    let (sb, mut pi) = start(reference, node, dir, cli).await;
    let mut note = note_of(&mut pi, "sub", "/filesub").await;
    let root = sb.cwd.path().display().to_string();
    let file = PathBuf::from(note["file"].as_str().expect("the session file"));
    let file_text = std::fs::read_to_string(&file).expect("the sub-session's file");
    note["file"] = json!("<file>");
    let mut note: Value = serde_json::from_str(&note.to_string().replace(&root, "<cwd>")).expect("json");
    without_wording(&mut note);

    let (mut switched, mut opened) = (None, None);
    if let Some(foreign_text) = foreign {
        // The file moves to this sandbox: its header's cwd is this one (pi refuses a session
        // whose cwd is gone, and the other program's sandbox is).
        let header: Value = foreign_text.lines().next().and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default();
        let moved = foreign_text.replace(header["cwd"].as_str().unwrap_or("<none>"), &root);
        let path = sb.cwd.path().join("foreign.jsonl");
        std::fs::write(&path, moved).expect("the other program's file");
        let path = path.display().to_string();
        pi.send(json!({"id": "sw", "type": "switch_session", "sessionPath": path})).await;
        let lines = pi.until(|v| v["id"] == "sw").await;
        assert_eq!(lines.last().map(|v| v["success"].clone()), Some(json!(true)), "switch_session: {lines:?}");
        pi.send(json!({"id": "gm", "type": "get_messages"})).await;
        let lines = pi.until(|v| v["id"] == "gm").await;
        let mut messages = lines.last().map(|v| v["data"]["messages"].clone()).unwrap_or_default();
        strip(&mut messages);
        without_wording(&mut messages);
        switched = Some(messages);
        if !reference {
            let mut value = note_of(&mut pi, "op", &format!("/open {path}")).await;
            without_wording(&mut value);
            opened = Some(value);
        }
    }
    Run { note, file_text, switched, opened }
}

#[tokio::test]
async fn an_sdk_sessions_file_is_pis() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let ours = run(false, &node, &dir, &cli, None).await;
    let theirs = run(true, &node, &dir, &cli, Some(&ours.file_text)).await;
    let again = run(false, &node, &dir, &cli, Some(&theirs.file_text)).await;

    // The file is where pi puts it, named as pi names it, written once the session talks,
    // resumed by `open`, found by `list` and `continueRecent`.
    for key in ["place", "name", "recent"] {
        assert_eq!(ours.note[key], true, "{key}: {}", ours.note);
    }
    assert_eq!(ours.note["fileBefore"], false, "{}", ours.note);
    assert_eq!(ours.note["listed"], json!([true]), "{}", ours.note);
    let kinds: Vec<String> = ours.note["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            format!(
                "{}{}",
                e["type"].as_str().unwrap_or_default(),
                e["message"]["role"].as_str().map(|r| format!(":{r}")).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message:system",
            "message:user",
            "message:assistant",
            "message:toolResult",
            "message:assistant",
            "message:user",
            "message:assistant"
        ],
        "{}",
        ours.note
    );
    // `forkFrom` copies every entry under a new header naming the source.
    let fork = &ours.note["fork"];
    assert_eq!(
        fork["entries"].as_array().map(|e| e[1..].to_vec()),
        ours.note["entries"].as_array().map(|e| e[1..].to_vec())
    );
    assert_eq!(fork["entries"][0]["parentSession"], true, "{fork}");
    for key in ["sameDir", "newFile", "leaf"] {
        assert_eq!(fork[key], true, "{key}: {fork}");
    }
    // All of it as pi 1.6.0 has it, entry by entry.
    assert_eq!(ours.note, theirs.note, "pi-rpc, then pi 1.6.0");

    // Each program opens the other's file: the same conversation.
    let pis_view = theirs.switched.expect("pi 1.6.0 opened pi-rpc's file");
    let ours_view = again.switched.expect("pi-rpc opened pi 1.6.0's file");
    assert_eq!(ours_view, pis_view, "pi-rpc on pi's file, then pi 1.6.0 on pi-rpc's");
    let roles: Vec<&str> = ours_view.as_array().expect("messages").iter().filter_map(|m| m["role"].as_str()).collect();
    assert!(roles.ends_with(&["user", "assistant", "toolResult", "assistant", "user", "assistant"]), "{ours_view}");
    // And the SDK's `SessionManager.open()` reads pi's file as pi wrote it.
    let opened = again.opened.expect("/open");
    assert_eq!(opened["file"], true, "{opened}");
    assert_eq!(opened["entries"], theirs.note["entries"], "SessionManager.open() on pi's file");
}

#[tokio::test]
async fn a_session_managers_own_session_changes_are_pis() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let mut notes = Vec::new();
    for reference in [false, true] {
        let (sb, mut pi) = start(reference, &node, &dir, &cli).await;
        let note = note_of(&mut pi, "smgr", "/smgr").await;
        let root = sb.cwd.path().display().to_string();
        notes.push(serde_json::from_str::<Value>(&note.to_string().replace(&root, "<cwd>")).expect("json"));
    }
    let (ours, theirs) = (&notes[0], &notes[1]);
    // The branch: its path without label entries, chained again, the compaction keeping its entry,
    // the labels in force made again at its end, a new id; over files a new file naming the old one.
    let kinds = |entries: &Value| -> Vec<String> {
        entries.as_array().into_iter().flatten().map(|e| e["type"].as_str().unwrap_or_default().to_string()).collect()
    };
    let branch =
        ["session", "model_change", "message", "message", "message", "compaction", "message", "label", "label"];
    assert_eq!(kinds(&ours["memBranch"]["entries"]), branch, "{ours}");
    assert_eq!(ours["memBranch"]["newId"], true, "{ours}");
    assert_eq!(ours["fileBranch"]["disk"], ours["fileBranch"]["entries"], "{ours}");
    assert_eq!(ours["fileBranch"]["entries"][0]["parentSession"], "<first>", "{ours}");
    assert_eq!(ours["quietBranch"]["written"], false, "{ours}");
    assert_eq!(ours["setExistingAppends"], true, "{ours}");
    // An older session file: migrated, written again, appended to.
    assert_eq!(ours["setV1"]["entries"][0]["version"], 3, "{ours}");
    assert_eq!(ours["setV1"]["shortIds"], true, "{ours}");
    assert_eq!(ours["setV1Appends"], true, "{ours}");
    assert_eq!(ours["memSetV1"]["untouched"], true, "{ours}");
    // All of it as pi 1.6.0 does it.
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
