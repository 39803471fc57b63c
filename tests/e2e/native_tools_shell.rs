//! The settings' `shellPath` and `shellCommandPrefix`, side by side with pi
//! 1.6.0: the session's `bash` tool and the RPC `bash` command run their
//! commands with the configured shell, the prefix on a line before the
//! command (the recorded execution keeps the command as given), and a
//! `shellPath` that does not exist fails both with pi's error. And
//! `images.autoResize: false`: the `read` tool sends an image as it is.
//!
//! Needs node 22 and the reference pi from `target/tools`; skipped without
//! them unless `PI_RPC_REQUIRE_TOOLS=1`.

use base64::Engine;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::harness::{Pi, Sandbox};

/// A shell that logs its arguments to `<home>/shell.log`, then runs them with `/bin/sh`.
fn logging_shell(sb: &Sandbox) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shell = sb.home.path().join("logging-shell");
    let log = sb.home.path().join("shell.log");
    let script = format!("#!/bin/sh\nprintf 'ran: %s\\n' \"$*\" >> '{}'\nexec /bin/sh \"$@\"\n", log.display());
    std::fs::write(&shell, script).expect("write the shell");
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).expect("make it executable");
    shell
}

/// pi 1.6.0 (`None` without node 22 or the reference) or pi-rpc in `sb`, no session saved.
fn start(reference: bool, sb: &Sandbox) -> Option<Pi> {
    if !reference {
        return Some(sb.spawn(&["--no-session"]));
    }
    let (node, cli) = (node22()?, reference_cli()?);
    let mut cmd = reference_command(sb, &node, &cli);
    cmd.args(["--no-session", "--offline"]).env("PI_OFFLINE", "1");
    Some(Pi::start_unchecked(cmd))
}

/// One program's run: the RPC `bash` command, then a model's `bash` tool call,
/// with the settings' `shellPath` and `shellCommandPrefix`.
async fn run(reference: bool, shell_path: Option<&str>) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    let shell = logging_shell(&sb);
    let shell_path = shell_path.map_or_else(|| shell.display().to_string(), str::to_string);
    sb.write_settings(json!({
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "shellPath": shell_path,
        "shellCommandPrefix": "export GREETING=from-the-prefix",
    }));
    sb.server().push(Reply::tool_call("c1", "bash", r#"{"command":"echo \"tool: $GREETING\""}"#));
    sb.server().push(Reply::text("Done."));
    let mut pi = start(reference, &sb)?;
    let bash = pi.call("b", json!({"type": "bash", "command": "echo \"command: $GREETING\""})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "run it"})).await;
    let lines = pi.until_type("agent_settled").await;
    let tool = lines.iter().find(|v| v["type"] == "tool_execution_end").cloned().unwrap_or(Value::Null);
    let messages = pi.call("m", json!({"type": "get_messages"})).await;
    let executions: Vec<Value> = messages["data"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "bashExecution")
        .map(|m| json!([m["command"], m["output"], m["exitCode"]]))
        .collect();
    let log = std::fs::read_to_string(sb.home.path().join("shell.log")).unwrap_or_default();
    Some(json!({
        "bash": [bash["success"], bash["data"]["output"], bash["data"]["exitCode"], bash["error"]],
        "tool": [tool["result"]["content"], tool["isError"]],
        "executions": executions,
        "log": log,
    }))
}

#[tokio::test]
async fn the_settings_shell_path_and_command_prefix_run_bash_as_in_pi() {
    let Some(ours) = run(false, None).await else { return };
    let Some(theirs) = run(true, None).await else { return };
    assert_eq!(ours["bash"], json!([true, "command: from-the-prefix\n", 0, null]), "{ours}");
    assert_eq!(ours["tool"], json!([[{"type": "text", "text": "tool: from-the-prefix\n"}], false]), "{ours}");
    assert_eq!(ours["executions"], json!([["echo \"command: $GREETING\"", "command: from-the-prefix\n", 0]]));
    assert_eq!(
        ours["log"],
        "ran: -c export GREETING=from-the-prefix\necho \"command: $GREETING\"\n\
         ran: -c export GREETING=from-the-prefix\necho \"tool: $GREETING\"\n",
        "both ran with the configured shell, the prefix a line before the command"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_missing_shell_path_fails_bash_with_pis_error() {
    let missing = "/nonexistent/pi-rpc-shell";
    let Some(ours) = run(false, Some(missing)).await else { return };
    let Some(theirs) = run(true, Some(missing)).await else { return };
    let error = format!("Custom shell path not found: {missing}");
    assert_eq!(ours["bash"], json!([false, null, null, error]), "{ours}");
    assert_eq!(ours["tool"], json!([[{"type": "text", "text": error}], true]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// A grayscale PNG `width` by `height` pixels (stored, uncompressed deflate), vertical stripes.
pub(crate) fn gray_png(width: usize, height: usize) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let body: Vec<u8> = kind.iter().chain(data).copied().collect();
        out.extend(&body);
        out.extend(crc32(&body).to_be_bytes());
    }
    let row: Vec<u8> = std::iter::once(0u8).chain((0..width).map(|x| (x % 251) as u8)).collect();
    let raw: Vec<u8> = row.iter().copied().cycle().take(row.len() * height).collect();
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    let mut idat = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        let len = block.len() as u16;
        idat.push(u8::from(i + 1 == blocks.len()));
        idat.extend(len.to_le_bytes());
        idat.extend((!len).to_le_bytes());
        idat.extend(*block);
    }
    idat.extend(((b << 16) | a).to_be_bytes());
    let mut ihdr = (width as u32).to_be_bytes().to_vec();
    ihdr.extend((height as u32).to_be_bytes());
    ihdr.extend([8, 0, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &idat);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// One program's `read` of a 2100x1 PNG with `images.autoResize: false`: the tool's result.
async fn read_without_resizing(reference: bool, png: &[u8]) -> Option<Value> {
    let sb = Sandbox::with_server().await;
    sb.write_settings(
        json!({"defaultProvider": "fake", "defaultModel": "fake-model", "images": {"autoResize": false}}),
    );
    std::fs::write(sb.cwd.path().join("wide.png"), png).expect("write the image");
    sb.server().push(Reply::tool_call("c1", "read", r#"{"path":"wide.png"}"#));
    sb.server().push(Reply::text("Done."));
    let mut pi = start(reference, &sb)?;
    pi.send(json!({"id": "p", "type": "prompt", "message": "read it"})).await;
    let lines = pi.until_type("agent_settled").await;
    let tool = lines.iter().find(|v| v["type"] == "tool_execution_end").cloned().unwrap_or(Value::Null);
    Some(json!([tool["result"]["content"], tool["isError"]]))
}

#[tokio::test]
async fn images_auto_resize_off_reads_an_image_as_it_is_as_in_pi() {
    let png = gray_png(2100, 1);
    let Some(ours) = read_without_resizing(false, &png).await else { return };
    let Some(theirs) = read_without_resizing(true, &png).await else { return };
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let image = json!({"type": "image", "data": data, "mimeType": "image/png"});
    assert_eq!(ours, json!([[{"type": "text", "text": "Read image file [image/png]"}, image], false]));
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
