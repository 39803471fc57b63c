//! OAuth for remote MCP servers, pi-rpc and pi 1.6.0 side by side: a real
//! MCP server (server-everything over streamable HTTP) behind the fake OAuth
//! server's guard (`FakeOAuth::guard_mcp`), which accepts only the access
//! tokens it issued and publishes RFC 9728 / RFC 8414 metadata on 127.0.0.1.
//! Covered: credentials pi keeps in `mcp-auth.json` are used, and after a
//! 401 the stored refresh token is, the new tokens written back; a server
//! without credentials is reported as needing sign-in (start-up warning,
//! `/mcp`, a tool call) as pi reports it, its `mcp-auth.json` created empty
//! (`{}`) as pi's store creates it when it first reads a server's state.
//!
//! Needs node, the MCP servers and (for the side-by-side half) the reference
//! from `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference_with};
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, result, result_text, results, start_http_everything, write_mcp};

/// The server's name in `mcp.json`, and its key in `mcp-auth.json`.
const SERVER: &str = "remote";

/// A sandbox whose `mcp.json` names the guarded server, with pi's stored
/// credentials for it when `state` is given.
pub(crate) fn guarded_sandbox(sb: &Sandbox, oauth: &FakeOAuth, state: Option<Value>) {
    write_mcp(sb, json!({SERVER: {"url": oauth.mcp_url(), "exposure": "direct"}}));
    if let Some(state) = state {
        let key = format!("mcp__{SERVER}|{}", oauth.mcp_url());
        std::fs::write(auth_path(sb), json!({key: state}).to_string()).unwrap();
    }
}

fn auth_path(sb: &Sandbox) -> std::path::PathBuf {
    sb.agent_dir.path().join("mcp-auth.json")
}

fn stored(sb: &Sandbox) -> Value {
    let key = format!("mcp__{SERVER}|");
    let all: Value =
        serde_json::from_str(&std::fs::read_to_string(auth_path(sb)).unwrap_or_default()).unwrap_or_default();
    all.as_object()
        .and_then(|m| m.iter().find(|(k, _)| k.starts_with(&key)).map(|(_, v)| v.clone()))
        .unwrap_or_default()
}

/// pi-rpc, or pi 1.6.0 (None when it is not installed).
pub(crate) fn start(sb: &Sandbox, reference: bool) -> Option<Pi> {
    if !reference {
        return Some(sb.spawn(&["--no-session"]));
    }
    Some(spawn_reference_with(sb, &node22()?, &reference_cli()?, false))
}

/// One program's run with stored credentials whose access token the server
/// no longer accepts: what the echo tool returned and what became of the
/// stored state.
async fn refreshed_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    let before = oauth.mcp_state(chrono_ms() + 3_600_000);
    guarded_sandbox(&sb, &oauth, Some(before.clone()));
    oauth.reject_access_tokens();
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"signed in"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let rs = results(&lines);
    let after = stored(&sb);
    let expires_later = after["tokensExpireAt"].as_i64().unwrap_or(0) > chrono_ms();
    Some(json!({
        "echo": result_text(result(&rs, "c1")),
        "refreshes": oauth.refreshes("mcp"),
        "access token replaced": after["tokens"]["access_token"] != before["tokens"]["access_token"],
        "refresh token rotated": after["tokens"]["refresh_token"] != before["tokens"]["refresh_token"],
        "client kept": after["clientInformation"] == before["clientInformation"],
        "scope": after["tokens"]["scope"],
        "expiry from expires_in": expires_later,
        "server url": after["serverUrl"] == json!(oauth.mcp_url()),
    }))
}

fn chrono_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

#[tokio::test]
async fn stored_credentials_are_used_and_refreshed_after_a_401_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = refreshed_run(&srv, false).await.unwrap();
    assert_eq!(
        ours,
        json!({"echo": "Echo: signed in", "refreshes": 1, "access token replaced": true, "refresh token rotated": true,
               "client kept": true, "scope": "mcp", "expiry from expires_in": true, "server url": true}),
        "pi-rpc"
    );
    if let Some(theirs) = refreshed_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// One program's view of a server it has no credentials for: the start-up
/// warning, `/mcp`'s status, and the error of a call to its tool.
async fn unsigned_run(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    guarded_sandbox(&sb, &oauth, None);
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
    let warning = lines.last().map(|v| v["message"].clone()).unwrap_or_default();
    pi.send(json!({"id": "m", "type": "prompt", "message": "/mcp"})).await;
    let lines = pi.until(|v| v["method"] == "notify" && v["notifyType"] == "info").await;
    let status = lines.last().map(|v| v["message"].clone()).unwrap_or_default();
    // pi's store reads the server's state under the file's lock, creating the file first (`{}`).
    let file = std::fs::read_to_string(auth_path(&sb)).ok();
    Some(json!({"warning": warning, "status": status, "stored": stored(&sb) != Value::Null, "file": file}))
}

#[tokio::test]
async fn a_server_without_credentials_needs_sign_in_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = unsigned_run(&srv, false).await.unwrap();
    assert_eq!(
        ours,
        json!({
            "warning": "MCP servers need attention:\n  remote: needs sign-in\nRun /mcp to fix.",
            "status": "remote: needs sign-in, run /mcp login remote (direct)",
            "stored": false,
            "file": "{}",
        }),
        "pi-rpc"
    );
    if let Some(theirs) = unsigned_run(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// `url` with its variable parts (port, state, PKCE challenge, client id) named.
fn shape_of_authorization_url(url: &str) -> Value {
    let parsed = url::Url::parse(url).unwrap();
    let mut query: serde_json::Map<String, Value> = serde_json::Map::new();
    for (k, v) in parsed.query_pairs() {
        let v = match k.as_ref() {
            "state" | "code_challenge" => format!("<{} chars>", v.len()),
            "client_id" => v.trim_end_matches(char::is_numeric).to_string(),
            "redirect_uri" => {
                let r = url::Url::parse(&v).unwrap();
                format!("{}://{}:<port>{}", r.scheme(), r.host_str().unwrap_or(""), r.path())
            }
            "resource" => v.replace(&format!(":{}", parsed.port().unwrap_or(0)), ":<port>"),
            _ => v.into_owned(),
        };
        query.insert(k.into_owned(), json!(v));
    }
    json!({"path": parsed.path(), "query": query})
}

/// What became of the stored state after a sign-in, its minted values named.
fn shape_of_signed_in_state(state: &Value) -> Value {
    let client = &state["clientInformation"];
    let mut keys: Vec<&String> = state.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    keys.sort();
    json!({
        "keys": keys,
        "client name": client["client_name"],
        "client redirect": client["redirect_uris"].as_array().map(|a| a.len()),
        "token fields": state["tokens"].as_object().map(|m| { let mut k: Vec<&String> = m.keys().collect(); k.sort(); k }),
        "scope": state["tokens"]["scope"],
        "discovered issuer": state["discovery"]["authorizationServerMetadata"]["issuer"].as_str().is_some(),
    })
}

/// `pi mcp login remote` of one program in its own process, the fake OAuth
/// server acting as the browser: what it printed and stored.
pub(crate) async fn cli_sign_in(sb: &Sandbox, oauth: &FakeOAuth, reference: bool) -> Option<Value> {
    let mut cmd = if reference {
        let (node, cli) = (node22()?, reference_cli()?);
        let mut cmd = tokio::process::Command::new(&node);
        cmd.arg(&cli).args(["mcp", "login", SERVER]).current_dir(sb.cwd.path()).env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
        cmd
    } else {
        sb.command(&["mcp", "login", SERVER])
    };
    cmd.env("BROWSER", "none").stdin(std::process::Stdio::null());
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let url = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Ok(Some(line)) = stdout.next_line().await {
            printed.push(line.clone());
            if line.starts_with("http") {
                return Some(line);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the authorization URL is printed");
    let page = oauth.browse(&url).await.unwrap();
    while let Ok(Some(line)) = stdout.next_line().await {
        printed.push(line);
    }
    let status = child.wait().await.unwrap();
    printed.retain(|l| !l.starts_with("http"));
    Some(json!({
        "exit": status.code(),
        "printed": printed,
        "callback page": page,
        "authorization url": shape_of_authorization_url(&url),
        "stored": shape_of_signed_in_state(&stored(sb)),
    }))
}

/// `pi mcp login remote` of one program, then a session of the same
/// program uses the sign-in.
async fn cli_login(srv: &Servers, reference: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    guarded_sandbox(&sb, &oauth, None);
    let summary = cli_sign_in(&sb, &oauth, reference).await?;
    // The next session connects with what was stored.
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"after login"}"#));
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    Some(json!({"login": summary, "echo": result_text(result(&results(&lines), "c1"))}))
}

#[tokio::test]
async fn pi_mcp_login_signs_in_through_the_browser_as_pi_does() {
    let Some(srv) = Servers::find() else { return };
    let ours = cli_login(&srv, false).await.unwrap();
    assert_eq!(ours["login"]["exit"], 0, "{ours}");
    assert_eq!(ours["echo"], "Echo: after login", "{ours}");
    if let Some(theirs) = cli_login(&srv, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

/// The text of the last `notify` in `lines`.
fn last_notify(lines: &[Value]) -> Value {
    lines
        .iter()
        .rev()
        .find(|v| v["method"] == "notify")
        .map(|v| json!([v["notifyType"], v["message"]]))
        .unwrap_or_default()
}

/// An extension that is pi's MCP extension with its own credentials store
/// (pi's `McpOAuthCredentialStore` shape, in memory) and `openUrl`; `/auth`
/// tells what they saw.
const OWN_STORE: &str = r#"import { createMcpExtension } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const states = new Map<string, any>();
const opened: string[] = [];
const credentials = {
  forServer(name: string, url: string) {
    const key = `${name}|${url}`;
    return {
      load: () => states.get(key),
      save: (state: any) => { states.set(key, state); },
      withRefreshLock: async <T>(fn: () => Promise<T>) => fn(),
    };
  },
  tokens: (name: string, url: string) => states.get(`${name}|${url}`)?.tokens,
  remove: (name: string, url: string) => states.delete(`${name}|${url}`),
};

export default function (pi: ExtensionAPI) {
  createMcpExtension({ credentials: credentials as any, openUrl: (url) => opened.push(new URL(url).pathname) })(pi);
  pi.registerCommand("auth", {
    handler: async (_args, ctx) => ctx.ui.notify(JSON.stringify({
      opened,
      stored: [...states.keys()].map((k) => k.replace(/:\d+\//, ":<port>/")),
      signedIn: [...states.values()].map((s) => typeof s.tokens?.access_token === "string"),
    }), "info"),
  });
}
"#;

/// `/mcp login remote` and `/mcp logout remote` in one program's RPC
/// session: the notifications and the dialog, the fake OAuth server acting
/// as the browser; the server's tool in between. With `own_store`, the
/// session's extension is [`OWN_STORE`] and what its store saw is added.
async fn rpc_login(srv: &Servers, reference: bool, own_store: bool) -> Option<Value> {
    let (_everything, port) = start_http_everything(srv).await;
    let oauth = FakeOAuth::start().await.unwrap();
    oauth.guard_mcp(&format!("http://127.0.0.1:{port}/mcp"));
    let sb = Sandbox::with_server().await;
    guarded_sandbox(&sb, &oauth, None);
    if own_store {
        let (node, dir) = (node22()?, host_dir()?);
        host_settings(&sb, &node, &dir, json!({}));
        write_module(&sb, "own-store.ts", OWN_STORE);
    }
    let mut pi = start(&sb, reference)?;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    pi.until(|v| v["method"] == "notify" && v["notifyType"] == "warning").await;
    pi.send(json!({"id": "l", "type": "prompt", "message": "/mcp login remote"})).await;
    let lines = pi.until(|v| v["type"] == "extension_ui_request" && v["method"] == "input").await;
    let shown = lines.iter().rev().find(|v| v["method"] == "notify").cloned().unwrap_or_default();
    let message = shown["message"].as_str().unwrap_or_default();
    let url = message.lines().last().unwrap_or_default().to_string();
    let input = lines.last().cloned().unwrap_or_default();
    let page = oauth.browse(&url).await.unwrap();
    let lines = pi.until(|v| v["method"] == "notify").await;
    let signed_in = last_notify(&lines);
    sb.server().push(Reply::tool_call("c1", "mcp__remote__echo", r#"{"message":"after /mcp login"}"#));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "echo"})).await;
    let lines = pi.until_type("agent_settled").await;
    let echo = result_text(result(&results(&lines), "c1"));
    let store = if own_store {
        pi.send(json!({"id": "a", "type": "prompt", "message": "/auth"})).await;
        let note = last_notify(&pi.until(|v| v["method"] == "notify").await);
        json!({"note": note[1], "mcp-auth.json written": auth_path(&sb).exists()})
    } else {
        Value::Null
    };
    pi.send(json!({"id": "o", "type": "prompt", "message": "/mcp logout remote"})).await;
    let signed_out = last_notify(&pi.until(|v| v["method"] == "notify").await);
    pi.send(json!({"id": "m", "type": "prompt", "message": "/mcp"})).await;
    let status = last_notify(&pi.until(|v| v["method"] == "notify").await);
    Some(json!({
        "shown": [shown["notifyType"], message.replace(&url, "<url>")],
        "authorization url": shape_of_authorization_url(&url),
        "input": [input["title"], input["placeholder"]],
        "callback page": page,
        "signed in": signed_in,
        "echo": echo,
        "signed out": signed_out,
        "status": status,
        "stored after logout": stored(&sb) != Value::Null,
        "extension's store": store,
    }))
}

#[tokio::test]
async fn mcp_login_and_logout_in_rpc_mode_work_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let ours = rpc_login(&srv, false, false).await.unwrap();
    assert_eq!(ours["echo"], "Echo: after /mcp login", "{ours}");
    assert_eq!(ours["signed out"], json!(["info", "Signed out of MCP server \"remote\"."]), "{ours}");
    if let Some(theirs) = rpc_login(&srv, true, false).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}

#[tokio::test]
async fn an_extensions_credentials_store_and_open_url_are_used_as_in_pi() {
    let Some(srv) = Servers::find() else { return };
    let Some(ours) = rpc_login(&srv, false, true).await else { return };
    assert_eq!(ours["echo"], "Echo: after /mcp login", "{ours}");
    assert_eq!(
        ours["extension's store"],
        json!({"note": r#"{"opened":["/mcp-as/authorize"],"stored":["remote|http://127.0.0.1:<port>/mcp"],"signedIn":[true]}"#,
               "mcp-auth.json written": false}),
        "{ours}"
    );
    if let Some(theirs) = rpc_login(&srv, true, true).await {
        eprintln!("pi 1.6.0: {theirs}");
        assert_eq!(theirs, ours, "pi 1.6.0 and pi-rpc");
    }
}
