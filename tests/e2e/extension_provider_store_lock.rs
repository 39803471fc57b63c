//! `models-store.json` is written under pi's lock on it, by pi-rpc as by pi
//! 1.6.0 (run side by side, neither offline): while another process holds
//! the lock (`<real path>.lock`, proper-lockfile's directory), a native
//! `Provider`'s network refresh that publishes `persist` waits; once the lock
//! is released, the file is read again and the provider's entry is added
//! beside what the other holder wrote meanwhile, and the lock is released.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::extension_provider_refresh::native_provider;
use crate::harness::Sandbox;

/// A provider whose network refresh waits for the test's lock, then publishes;
/// it leaves a mark (`<marks>/<name>`) at each step.
fn locked(marks: &Path) -> String {
    let prelude = format!(
        r#"import {{ existsSync, writeFileSync }} from "node:fs";

const MARKS = {marks:?};
const mark = (name: string) => writeFileSync(`${{MARKS}}/${{name}}`, "");
const until = async (name: string) => {{
  for (let n = 0; n < 600 && !existsSync(`${{MARKS}}/${{name}}`); n++) await new Promise((r) => setTimeout(r, 50));
}};"#,
        marks = marks.display().to_string()
    );
    native_provider(
        "locked",
        &prelude,
        r#"{ apiKey: { name: "Locked key", resolve: async () => ({ auth: { apiKey: "locked-key" }, source: "test" }) } }"#,
        r#"mark("ready");
      await until("locked");
      const fetched = [model("static-model"), model("network-model")];
      const published = ctx.publish({ persist: { models: fetched, checkedAt: 2 }, update: () => { models = fetched; } });
      mark("called");
      await published;
      mark("published");"#,
    )
}

/// Wait until `file` exists (at most two minutes).
async fn appears(file: &Path) -> bool {
    for _ in 0..2400 {
        if file.exists() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

fn read_json(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap_or_default()).unwrap_or(Value::Null)
}

#[tokio::test]
async fn models_store_is_written_under_pis_lock_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    for reference in [false, true] {
        let who = if reference { "pi 1.6.0" } else { "pi-rpc" };
        let sb = Sandbox::offline();
        host_settings(&sb, &node, &dir, json!({}));
        let marks = sb.home.path().join("marks");
        std::fs::create_dir_all(&marks).expect("marks dir");
        write_module(&sb, "locked.ts", &locked(&marks));
        let store = sb.agent_dir.path().join("models-store.json");
        let _pi = if reference { spawn_reference_with(&sb, &node, &cli, false) } else { sb.spawn(&["--no-session"]) };

        assert!(appears(&marks.join("ready")).await, "{who}: the network refresh ran");
        // Hold pi's lock on the file, as another pi would.
        if !store.exists() {
            std::fs::write(&store, "{}").expect("store");
        }
        let mut lock = std::fs::canonicalize(&store).expect("store path").into_os_string();
        lock.push(".lock");
        std::fs::create_dir(&lock).expect("take the lock");
        std::fs::write(marks.join("locked"), "").expect("mark");
        assert!(appears(&marks.join("called")).await, "{who}: publish was called");
        assert!(read_json(&store)["locked"].is_null(), "{who}: nothing is written while the lock is held");
        // What the holder writes before it releases the lock stays.
        std::fs::write(&store, json!({"other": {"models": [], "checkedAt": 7}}).to_string()).expect("write store");
        std::fs::remove_dir(&lock).expect("release the lock");

        assert!(appears(&marks.join("published")).await, "{who}: publish resolved once the lock was released");
        let stored = read_json(&store);
        assert_eq!(stored["other"]["checkedAt"], 7, "{who}: the other holder's entry stays: {stored}");
        let ids: Vec<&str> =
            stored["locked"]["models"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str()).collect();
        assert_eq!(ids, ["static-model", "network-model"], "{who}: {stored}");
        assert_eq!(stored["locked"]["checkedAt"], 2, "{who}");
        assert!(!Path::new(&lock).exists(), "{who}: the lock is released after the write");
    }
}
