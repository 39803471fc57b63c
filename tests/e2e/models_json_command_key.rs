//! A `models.json` provider whose `apiKey` is a `!command`, side by side with
//! pi 1.6.0: `get_available_models` lists its models without running the
//! command (pi counts a configured command as a key, a failing one too),
//! and the session's request to one of them runs it for its key.
//!
//! Needs node 22 and the reference pi from `target/tools`; skipped without
//! them unless `PI_RPC_REQUIRE_TOOLS=1`.

use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_builtin_providers::authorizations;
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::harness::{Pi, Sandbox};

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
