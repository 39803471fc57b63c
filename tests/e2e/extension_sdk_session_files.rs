//! pi's SDK session with a session file, side by side with pi 1.6.0: an
//! extension's `createAgentSession()` without a `sessionManager` writes its
//! session to a file in pi's layout; `SessionManager.open()` resumes it,
//! `list()` / `continueRecent()` find it, `forkFrom()` copies it. The file's entries are compared
//! (ids, clock readings and the prompt's wording normalised), and each
//! program opens the other's file: pi 1.6.0 with `switch_session` on
//! pi-rpc's file, pi-rpc with `switch_session` and `SessionManager.open()`
//! on pi's.
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
use crate::harness::Sandbox;

/// `/filesub` runs a sub-session with a file, then resumes it; `/open PATH`
/// opens a session file with `SessionManager.open()`.
const FILE_SESSION: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { createAgentSession, getAgentDir, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** Entries without what differs from run to run: ids by order of appearance, clock readings, usage. */
function stable(entries: any[], cwd: string): any[] {
  const ids = new Map<string, string>();
  const ref = (id: any) => {
    if (typeof id !== "string") return id;
    if (!ids.has(id)) ids.set(id, `e${ids.size}`);
    return ids.get(id);
  };
  const volatile = ["timestamp", "usage", "durationMs", "responseId"];
  return entries.map((e) => {
    const out = JSON.parse(JSON.stringify(e, (key, v) => (volatile.includes(key) ? undefined : v)));
    if (out.type === "session") return { ...out, id: "<id>", cwd: out.cwd === cwd ? "<cwd>" : out.cwd };
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

async fn run(reference: bool, node: &Path, dir: &Path, cli: &Path, foreign: Option<&str>) -> Run {
    let sb = Sandbox::with_server().await;
    host_settings(&sb, node, dir, json!({}));
    write_module(&sb, "file-session.ts", FILE_SESSION);
    std::fs::write(sb.cwd.path().join("notes.txt"), "buy milk\n").expect("notes");
    sb.server().push(Reply::tool_call("c1", "read", r#"{"path": "notes.txt"}"#));
    sb.server().push(Reply::text("It says to buy milk."));
    sb.server().push(Reply::text("You are welcome."));
    let docs = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
    let mut pi = if reference {
        spawn_reference(&sb, node, cli)
    } else {
        sb.spawn_with_env(&["--no-session"], &[("PI_RPC_DOCS_DIR", &docs)])
    };
    pi.send(json!({"id": "sub", "type": "prompt", "message": "/filesub"})).await;
    let lines = pi.until(|v| v["method"] == "notify").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let root = sb.cwd.path().display().to_string();
    let text = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
    let mut note: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/filesub notified {text}: {e}"));
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
            pi.send(json!({"id": "op", "type": "prompt", "message": format!("/open {path}")})).await;
            let lines = pi.until(|v| v["method"] == "notify").await;
            assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
            let text = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default().to_string();
            let mut value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/open notified {text}: {e}"));
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
