//! Native dialect: the session tree end to end — fork, clone, switch and new
//! sessions with their files checked entry by entry, `get_entries` cursors
//! across a restart, `get_tree` / `get_fork_messages` on a branched file
//! (answers recorded from pi 1.6.0), v1/v2 migration, a file cut mid-line,
//! and `export_html`.

use std::path::{Path, PathBuf};

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox, read_jsonl};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/session/src/session/testdata").join(name)
}

fn load_json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(testdata(name)).expect("fixture")).expect("fixture JSON")
}

/// Copy a fixture into the sandbox cwd.
fn copy_fixture(sb: &Sandbox, name: &str) -> PathBuf {
    let path = sb.cwd.path().join(name);
    std::fs::copy(testdata(name), &path).expect("copy fixture");
    path
}

/// The provider the pi 1.6 fixtures were recorded with (`fake-openai/fake-model`),
/// so that opening them selects the same model and appends nothing.
fn write_fixture_models(sb: &Sandbox) {
    let models = json!({"providers": {"fake-openai": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k",
        "models": [{"id": "fake-model", "contextWindow": 128000, "maxTokens": 16384}]}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).expect("models.json");
}

async fn prompt(pi: &mut Pi, id: &str, text: &str) {
    let r = pi.call(id, json!({"type": "prompt", "message": text})).await;
    assert_eq!(r["success"], true, "{r}");
    pi.until_type("agent_settled").await;
}

pub(crate) async fn data(pi: &mut Pi, id: &str, command: Value) -> Value {
    let r = pi.call(id, command).await;
    assert_eq!(r["success"], true, "{r}");
    r["data"].clone()
}

pub(crate) async fn session_file(pi: &mut Pi) -> PathBuf {
    let state = data(pi, "state", json!({"type": "get_state"})).await;
    PathBuf::from(state["sessionFile"].as_str().expect("sessionFile"))
}

fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn fork_clone_switch_and_new_session_round_trip() {
    let sb = Sandbox::with_server().await;
    let server = sb.server();
    server.push(Reply::text("answer one"));
    server.push(Reply::text("answer two"));
    server.push(Reply::text("answer three"));
    let mut pi = sb.spawn(&[]);
    prompt(&mut pi, "p1", "first").await;
    prompt(&mut pi, "p2", "second").await;
    let original = session_file(&mut pi).await;
    let original_lines = read_jsonl(&original);
    assert_eq!(original_lines[0]["type"], "session");
    assert_eq!(original_lines[0]["version"], 3);
    let types: Vec<&str> = original_lines[1..].iter().map(|e| e["type"].as_str().unwrap()).collect();
    // The first message is the system message of the first request.
    assert_eq!(types, ["model_change", "thinking_level_change", "message", "message", "message", "message", "message"]);
    assert_eq!(original_lines[3]["message"]["role"], "system");

    let forkable = data(&mut pi, "fm", json!({"type": "get_fork_messages"})).await;
    let forkable = forkable["messages"].as_array().unwrap().clone();
    assert_eq!(forkable.len(), 2);
    assert_eq!(forkable[0]["text"], "first");
    assert_eq!(forkable[1]["text"], "second");
    let second_id = forkable[1]["entryId"].as_str().unwrap().to_string();
    assert_eq!(original_lines[6]["id"], second_id);

    // fork: a new file with the branch before the second prompt, same ids.
    let fork = data(&mut pi, "f", json!({"type": "fork", "entryId": second_id})).await;
    assert_eq!(fork, json!({"text": "second", "cancelled": false}));
    let forked = session_file(&mut pi).await;
    assert_ne!(forked, original);
    let forked_lines = read_jsonl(&forked);
    assert_eq!(forked_lines[0]["parentSession"], original.display().to_string());
    assert_ne!(forked_lines[0]["id"], original_lines[0]["id"]);
    assert_eq!(forked_lines[1..], original_lines[1..6], "entries copied verbatim");
    let messages = data(&mut pi, "m", json!({"type": "get_messages"})).await;
    let texts: Vec<String> =
        messages["messages"].as_array().unwrap().iter().filter(|m| m["role"] != "system").map(text_of).collect();
    assert_eq!(texts, ["first", "answer one"]);

    // clone: the current branch again, in another file.
    let clone = data(&mut pi, "c", json!({"type": "clone"})).await;
    assert_eq!(clone, json!({"cancelled": false}));
    let cloned = session_file(&mut pi).await;
    assert!(cloned != forked && cloned != original);
    let cloned_lines = read_jsonl(&cloned);
    assert_eq!(cloned_lines[0]["parentSession"], forked.display().to_string());
    assert_eq!(cloned_lines[1..], forked_lines[1..]);

    // Unknown fork target.
    let r = pi.call("bad", json!({"type": "fork", "entryId": "nope"})).await;
    assert_eq!(r["success"], false);

    // switch back to the original: its whole conversation.
    let sw = data(&mut pi, "sw", json!({"type": "switch_session", "sessionPath": original})).await;
    assert_eq!(sw, json!({"cancelled": false}));
    assert_eq!(session_file(&mut pi).await, original);
    let messages = data(&mut pi, "m2", json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"].as_array().unwrap().len(), 5);
    assert_eq!(read_jsonl(&original), original_lines, "switching writes nothing");

    // new_session with a parent: empty, written with the first exchange.
    let new = data(&mut pi, "n", json!({"type": "new_session", "parentSession": original})).await;
    assert_eq!(new, json!({"cancelled": false}));
    let fresh = session_file(&mut pi).await;
    assert!(!fresh.exists(), "not written before the first message");
    let messages = data(&mut pi, "m3", json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"], json!([]));
    prompt(&mut pi, "p3", "third").await;
    let fresh_lines = read_jsonl(&fresh);
    assert_eq!(fresh_lines[0]["parentSession"], original.display().to_string());
    let types: Vec<&str> = fresh_lines[1..].iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["model_change", "thinking_level_change", "message", "message", "message"]);
    assert_eq!(fresh_lines[1]["parentId"], Value::Null);
    for pair in fresh_lines[1..].windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "a linear chain");
    }

    // Resume the fork in a new process: same conversation, nothing appended.
    pi.close_stdin();
    pi.wait().await;
    let before = std::fs::read_to_string(&forked).unwrap();
    let mut pi = sb.spawn(&["--session", forked.to_str().unwrap()]);
    let messages = data(&mut pi, "m4", json!({"type": "get_messages"})).await;
    let texts: Vec<String> =
        messages["messages"].as_array().unwrap().iter().filter(|m| m["role"] != "system").map(text_of).collect();
    assert_eq!(texts, ["first", "answer one"]);
    pi.close_stdin();
    pi.wait().await;
    assert_eq!(std::fs::read_to_string(&forked).unwrap(), before);
}

#[tokio::test]
async fn get_entries_cursors_survive_a_restart() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("one"));
    sb.server().push(Reply::text("two"));
    sb.server().push(Reply::text("three"));
    let mut pi = sb.spawn(&[]);
    prompt(&mut pi, "p1", "a").await;
    prompt(&mut pi, "p2", "b").await;
    let all = data(&mut pi, "e", json!({"type": "get_entries"})).await;
    let entries = all["entries"].as_array().unwrap().clone();
    // model, thinking level, the system message, a, one, b, two.
    assert_eq!(entries.len(), 7);
    assert_eq!(all["leafId"], entries[6]["id"]);
    let file = session_file(&mut pi).await;
    assert_eq!(read_jsonl(&file)[1..], entries[..], "get_entries is the file without its header");
    let cursor = entries[4]["id"].as_str().unwrap().to_string();
    let leaf = entries[6]["id"].as_str().unwrap().to_string();
    pi.close_stdin();
    pi.wait().await;

    let mut pi = sb.spawn(&["--continue"]);
    let after = data(&mut pi, "e2", json!({"type": "get_entries", "since": cursor})).await;
    assert_eq!(after["entries"].as_array().unwrap()[..], entries[5..]);
    assert_eq!(after["leafId"], leaf.as_str());
    let none = data(&mut pi, "e3", json!({"type": "get_entries", "since": leaf})).await;
    assert_eq!(none["entries"], json!([]));
    prompt(&mut pi, "p3", "c").await;
    let newer = data(&mut pi, "e4", json!({"type": "get_entries", "since": leaf})).await;
    let newer = newer["entries"].as_array().unwrap();
    let roles: Vec<&str> = newer.iter().map(|e| e["message"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(newer[0]["parentId"], leaf.as_str());
    let r = pi.call("e5", json!({"type": "get_entries", "since": "nope"})).await;
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Entry not found: nope");
}

#[tokio::test]
async fn a_branched_pi_session_answers_like_pi() {
    let sb = Sandbox::offline();
    write_fixture_models(&sb);
    let path = copy_fixture(&sb, "crafted.jsonl");
    let before = std::fs::read_to_string(&path).unwrap();
    let pi_answers = load_json("crafted_pi_outputs.json");
    let mut pi = sb.spawn(&["--session", path.to_str().unwrap()]);
    let entries = data(&mut pi, "e", json!({"type": "get_entries"})).await;
    assert_eq!(entries, pi_answers["get_entries"]);
    let tree = data(&mut pi, "t", json!({"type": "get_tree"})).await;
    assert_eq!(tree, pi_answers["get_tree"]);
    assert!(tree["tree"].as_array().unwrap().len() > 1, "the orphan is an extra root");
    let forks = data(&mut pi, "f", json!({"type": "get_fork_messages"})).await;
    assert_eq!(forks, pi_answers["get_fork_messages"]);
    let messages = data(&mut pi, "m", json!({"type": "get_messages"})).await;
    let pi_messages: Vec<Value> = pi_answers["get_messages"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect();
    assert_eq!(messages["messages"].as_array().unwrap(), &pi_messages, "pi's context minus its system messages");
    let state = data(&mut pi, "s", json!({"type": "get_state"})).await;
    assert_eq!(state["sessionName"], pi_answers["sessionName"]);
    pi.close_stdin();
    pi.wait().await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before, "opening a file does not change it");
}

/// Entries without their random ids: type and content, parent links as positions.
fn shape(entries: &[Value]) -> Vec<Value> {
    let ids: Vec<&str> = entries.iter().map(|e| e["id"].as_str().unwrap_or("")).collect();
    entries
        .iter()
        .map(|e| {
            let mut e = e.clone();
            let obj = e.as_object_mut().unwrap();
            let parent = obj.get("parentId").and_then(Value::as_str).and_then(|p| ids.iter().position(|i| *i == p));
            obj.insert("parentId".into(), json!(parent));
            for key in ["id", "firstKeptEntryId"] {
                if let Some(Value::String(id)) = obj.get(key) {
                    let pos = ids.iter().position(|i| i == id);
                    obj.insert(key.into(), json!(pos));
                }
            }
            e
        })
        .collect()
}

#[tokio::test]
async fn v1_and_v2_files_are_migrated_when_loaded() {
    for (old, migrated) in [("v1_session.jsonl", "v1_pi_migrated.jsonl"), ("v2_session.jsonl", "v2_pi_migrated.jsonl")]
    {
        let sb = Sandbox::offline();
        write_fixture_models(&sb);
        let path = copy_fixture(&sb, old);
        let mut pi = sb.spawn(&["--session", path.to_str().unwrap()]);
        let entries = data(&mut pi, "e", json!({"type": "get_entries"})).await;
        pi.close_stdin();
        pi.wait().await;
        let pi_lines = read_jsonl(&testdata(migrated));
        let ours = read_jsonl(&path);
        assert_eq!(ours[0]["version"], 3, "{old}: rewritten as v3");
        assert_eq!(ours[0]["id"], pi_lines[0]["id"]);
        // The entries of the old file (pi then appended a selection entry of its own).
        let n = read_jsonl(&testdata(old)).len() - 1;
        assert_eq!(shape(&ours[1..=n]), shape(&pi_lines[1..=n]), "{old}: same entries as pi's migration");
        let listed = entries["entries"].as_array().unwrap();
        assert_eq!(listed[..n], ours[1..=n], "{old}: get_entries shows the migrated entries");
        for e in listed {
            assert_eq!(e["id"].as_str().unwrap().len(), 8, "{old}: {e}");
        }
    }
}

#[tokio::test]
async fn a_file_cut_in_its_last_line_still_loads() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("one"));
    sb.server().push(Reply::text("after the crash"));
    let mut pi = sb.spawn(&[]);
    prompt(&mut pi, "p1", "before the crash").await;
    let file = session_file(&mut pi).await;
    pi.close_stdin();
    pi.wait().await;
    // Simulate a crash in the middle of writing one more entry.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(r#"{"type":"message","id":"deadbeef","parentId":"#);
    std::fs::write(&file, &text).unwrap();

    let mut pi = sb.spawn(&["--session", file.to_str().unwrap()]);
    let messages = data(&mut pi, "m", json!({"type": "get_messages"})).await;
    let texts: Vec<String> =
        messages["messages"].as_array().unwrap().iter().filter(|m| m["role"] != "system").map(text_of).collect();
    assert_eq!(texts, ["before the crash", "one"]);
    prompt(&mut pi, "p2", "again").await;
    pi.close_stdin();
    pi.wait().await;
    let lines: Vec<String> = std::fs::read_to_string(&file).unwrap().lines().map(str::to_string).collect();
    let parsed: Vec<Option<Value>> = lines.iter().map(|l| serde_json::from_str(l).ok()).collect();
    assert!(parsed.iter().filter(|p| p.is_none()).count() <= 1, "only the cut line is damaged");
    let last = parsed.last().unwrap().as_ref().expect("new entries are whole lines");
    assert_eq!(last["message"]["content"][0]["text"], "after the crash");
    assert!(pi.stderr().to_lowercase().contains("warn"), "a warning: {}", pi.stderr());
}

#[tokio::test]
async fn export_html_paths_and_errors() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("exported answer"));
    let mut pi = sb.spawn(&[]);
    prompt(&mut pi, "p", "export me").await;
    let file = session_file(&mut pi).await;
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();

    let default = data(&mut pi, "x1", json!({"type": "export_html"})).await;
    assert_eq!(default["path"], format!("pi-session-{stem}.html"), "relative, in the cwd");
    let html = std::fs::read_to_string(sb.cwd.path().join(default["path"].as_str().unwrap())).unwrap();
    assert!(html.contains("export me") && html.contains("exported answer"));
    assert!(!html.contains("src=\"http"), "self-contained");

    let out = sb.cwd.path().join("custom.html");
    let custom = data(&mut pi, "x2", json!({"type": "export_html", "outputPath": out})).await;
    assert_eq!(custom["path"], out.display().to_string());
    assert!(std::fs::read_to_string(&out).unwrap().contains("exported answer"));

    let missing = sb.cwd.path().join("no/such/dir/out.html");
    let r = pi.call("x3", json!({"type": "export_html", "outputPath": missing})).await;
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], format!("ENOENT: no such file or directory, open '{}'", missing.display()));
    pi.close_stdin();
    pi.wait().await;

    let mut pi = sb.spawn(&["--no-session"]);
    let r = pi.call("x4", json!({"type": "export_html"})).await;
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Cannot export in-memory session to HTML");
}
