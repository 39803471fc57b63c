//! A `models.json` provider whose `apiKey` is a `!command`, side by side with
//! pi 1.6.0: `get_available_models` lists its models without running the
//! command (pi counts a configured command as a key, a failing one too),
//! and the session's request to one of them runs it for its key; the
//! refresh of the built-in providers' catalogs at start (RPC mode, not
//! offline) counts a built-in provider's configured command as its key and
//! does not run it either.
//!
//! Needs node 22 and the reference pi from `target/tools`; skipped without
//! them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_builtin_providers::authorizations;
use crate::extension_provider_events::{reference_cli, reference_command, spawn_reference};
use crate::harness::{Pi, Sandbox};
use crate::server_extension_catalogs::environment;

/// What one program (pi-rpc, or pi 1.6.0 when `reference`) showed: the
/// available models (`provider/id`), whether the command had run after that
/// listing and after a prompt to its model, and that request's
/// `authorization` header; `None` without the tools.
async fn run(reference: bool) -> Option<Value> {
    let node = node22()?;
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.agent_dir.path().join("models.json")).ok()?).ok()?;
    let marker = sb.cwd.path().join("command-ran");
    let provider = |key: String, id: &str| json!({"baseUrl": sb.server().base_url(), "api": "openai-completions", "apiKey": key, "models": [{"id": id}]});
    models["providers"]["cmd"] = provider(format!("!touch {} && echo cmd-key", marker.display()), "cmd-model");
    models["providers"]["failing"] = provider("!exit 3".into(), "failing-model");
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).ok()?;
    let mut pi: Pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
    let listed = pi.call("m", json!({"type": "get_available_models"})).await;
    let available: Vec<String> = listed["data"]["models"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| format!("{}/{}", m["provider"].as_str().unwrap_or_default(), m["id"].as_str().unwrap_or_default()))
        .collect();
    let ran_on_listing = marker.exists();
    let chosen = pi.call("s", json!({"type": "set_model", "provider": "cmd", "modelId": "cmd-model"})).await;
    sb.server().push(pi_compat::fake_server::Reply::text("Answered."));
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    pi.until_type("agent_settled").await;
    let ran_on_request = marker.exists();
    pi.close_stdin();
    pi.wait().await;
    let auth = authorizations(&sb);
    Some(json!({
        "available": available,
        "ranOnListing": ran_on_listing,
        "chosen": chosen["success"],
        "ranOnRequest": ran_on_request,
        "auth": auth,
    }))
}

#[tokio::test]
async fn available_models_do_not_run_a_command_key_as_pis() {
    let Some(ours) = run(false).await else { return };
    let Some(theirs) = run(true).await else { return };
    assert_eq!(theirs["ranOnListing"], false, "pi 1.6.0: {theirs}");
    let available = ours["available"].as_array().cloned().unwrap_or_default();
    assert!(available.contains(&json!("failing/failing-model")), "{ours}");
    assert_eq!(ours["auth"], json!(["Bearer cmd-key"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// Whether one program (pi-rpc, or pi 1.6.0 when `reference`), started in
/// RPC mode online with `openai`'s key a `!command` in `models.json`, asked
/// pi.dev (the fake server) for openai's catalog, and whether the command
/// had run by then (and a moment after); `None` without the tools.
async fn refresh_at_start(reference: bool) -> Option<Value> {
    let node = node22()?;
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    let marker = sb.cwd.path().join("command-ran");
    let models = json!({"providers": {"openai": {"apiKey": format!("!touch {} && echo cmd-key", marker.display())}}});
    std::fs::write(sb.agent_dir.path().join("models.json"), models.to_string()).ok()?;
    // pi.dev routed to the fake server, in both.
    let mut pi = if reference {
        let mut cmd = reference_command(&sb, &node, &cli);
        cmd.arg("--no-session").envs(environment(&sb));
        Pi::start_unchecked(cmd)
    } else {
        let mut cmd = sb.command(&["--mode", "rpc", "--no-session"]);
        cmd.envs(environment(&sb));
        Pi::start(cmd)
    };
    let asked = || sb.server().requests().iter().any(|r| r.path.starts_with("/api/models/providers/openai"));
    for _ in 0..40 {
        if asked() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let state = pi.call("g", json!({"type": "get_state"})).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let ran = marker.exists();
    pi.close_stdin();
    pi.wait().await;
    Some(json!({"askedForOpenaisCatalog": asked(), "commandRan": ran, "answered": state["success"]}))
}

#[tokio::test]
async fn the_catalog_refresh_at_start_does_not_run_a_command_key_as_pis() {
    let Some(ours) = refresh_at_start(false).await else { return };
    let Some(theirs) = refresh_at_start(true).await else { return };
    assert_eq!(ours, json!({"askedForOpenaisCatalog": true, "commandRan": false, "answered": true}), "pi-rpc");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
