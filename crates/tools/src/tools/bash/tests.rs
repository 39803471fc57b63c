//! Tests of the `bash` tool and the RPC executor (real `bash`; expected texts
//! recorded from pi 1.6.0).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::*;
use crate::message::join_text;

struct Fixture {
    dir: tempfile::TempDir,
    tmp: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Fixture { dir: tempfile::tempdir().unwrap(), tmp: tempfile::tempdir().unwrap() }
    }

    fn ctx(&self) -> ToolContext {
        let mut ctx = ToolContext::new(self.dir.path().to_path_buf());
        ctx.temp_dir = self.tmp.path().to_path_buf();
        ctx
    }

    fn logs(&self) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(self.tmp.path()).unwrap().map(|e| e.unwrap().path()).collect()
    }
}

async fn bash(ctx: ToolContext, args: Value) -> ToolOutput {
    BashTool::new().execute(args, ctx).await
}

async fn bash_with_updates(ctx: ToolContext, args: Value) -> (ToolOutput, Vec<ToolUpdate>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut ctx = ctx;
    ctx.updates = Some(tx);
    let out = bash(ctx, args).await;
    let mut updates = Vec::new();
    while let Ok(u) = rx.try_recv() {
        updates.push(u);
    }
    (out, updates)
}

fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A killed child may linger as a zombie until it is reaped.
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn stdout_and_stderr_are_merged() {
    let f = Fixture::new();
    let out = bash(f.ctx(), json!({"command": "echo hello; echo err 1>&2"})).await;
    assert!(!out.is_error);
    assert_eq!(join_text(&out.content), "hello\nerr\n");
    assert_eq!(out.details, None);
    let sc = out.structured_content.unwrap();
    assert_eq!(sc["output"], "hello\nerr\n");
    assert_eq!(sc["truncated"], false);
    assert_eq!(sc["exit_code"], 0);
    assert!(sc["wall_time_seconds"].is_number());
    let keys: Vec<&String> = sc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["output", "truncated", "exit_code", "wall_time_seconds"]);
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_pi_text() {
    let f = Fixture::new();
    let out = bash(f.ctx(), json!({"command": "exit 3"})).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "(no output)\n\nCommand exited with code 3");
    assert_eq!(out.details, None);
    assert_eq!(out.structured_content.unwrap()["exit_code"], 3);
    let out = bash(f.ctx(), json!({"command": "echo hi; exit 2"})).await;
    assert_eq!(join_text(&out.content), "hi\n\n\nCommand exited with code 2");
    let out = bash(f.ctx(), json!({"command": "kill -9 $$"})).await;
    assert_eq!(join_text(&out.content), "(no output)\n\nCommand exited with code 137");
    let out = bash(f.ctx(), json!({"command": "true"})).await;
    assert_eq!((out.is_error, join_text(&out.content)), (false, "(no output)".to_string()));
}

#[tokio::test]
async fn partial_results_stream_the_accumulated_output() {
    let f = Fixture::new();
    let (out, updates) = bash_with_updates(f.ctx(), json!({"command": "echo one; sleep 0.3; printf two"})).await;
    assert_eq!(join_text(&out.content), "one\ntwo");
    assert_eq!(updates[0], ToolUpdate { content: vec![], details: None });
    let texts: Vec<String> = updates[1..].iter().map(|u| join_text(&u.content)).collect();
    assert_eq!(texts, ["one\n", "one\ntwo"]);
    assert!(updates[1..].iter().all(|u| u.details == Some(json!({}))));
}

#[tokio::test]
async fn timeout_kills_the_command_with_pi_text() {
    let f = Fixture::new();
    let started = std::time::Instant::now();
    let out = bash(f.ctx(), json!({"command": "echo before; sleep 30", "timeout": 0.5})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "before\n\n\nCommand timed out after 0.5 seconds");
    assert_eq!(out.details, Some(json!({})));
    let out = bash(f.ctx(), json!({"command": "sleep 30", "timeout": "1"})).await;
    assert_eq!(join_text(&out.content), "Command timed out after 1 seconds");
}

#[tokio::test]
async fn timeout_after_the_shell_exited_names_background_writers() {
    let f = Fixture::new();
    // A background writer that outlives the shell: a line every 10 ms, with
    // no process spawned per line (`read -t` on a pipe it holds itself), so a
    // loaded machine does not open a gap longer than the 100 ms grace.
    let cmd = "(exec 3<> <(:); for i in $(seq 1 500); do echo x$i; read -t 0.01 -u 3; done) & exit 0";
    let out = bash(f.ctx(), json!({"command": cmd, "timeout": 1})).await;
    let text = join_text(&out.content);
    assert!(text.starts_with("x1\nx2\n"), "{text}");
    let re = regex::Regex::new(
        r"\n\n\nCommand timed out after 1 seconds\. The shell exited with code 0 after 0(\.\d)? seconds, but background processes it started kept writing output until the timeout\.$",
    )
    .unwrap();
    assert!(re.is_match(&text), "{text}");
}

#[tokio::test]
async fn invalid_timeouts_fail_like_pi() {
    let f = Fixture::new();
    let out = bash(f.ctx(), json!({"command": "echo a", "timeout": 0})).await;
    assert_eq!(join_text(&out.content), "Invalid timeout: must be a finite number of seconds");
    let out = bash(f.ctx(), json!({"command": "echo a", "timeout": 3_000_000})).await;
    assert_eq!(join_text(&out.content), "Invalid timeout: maximum is 2147483.647 seconds");
}

#[tokio::test]
async fn abort_kills_the_whole_process_group() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let cancel = ctx.cancel.clone();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut ctx = ctx;
    ctx.updates = Some(tx);
    let task = tokio::spawn(bash(ctx, json!({"command": "sleep 100 & echo $!; sleep 100"})));
    let mut bg_pid = None;
    while bg_pid.is_none() {
        let u = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
        bg_pid = join_text(&u.content).trim().parse::<i32>().ok();
    }
    let bg_pid = bg_pid.unwrap();
    assert!(!is_gone(bg_pid));
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), format!("{bg_pid}\n\n\nCommand aborted"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !is_gone(bg_pid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(is_gone(bg_pid), "background child {bg_pid} survived the abort");
}

#[tokio::test]
async fn abort_before_start_reports_command_aborted() {
    let f = Fixture::new();
    let ctx = f.ctx();
    ctx.cancel.cancel();
    let out = bash(ctx, json!({"command": "echo never"})).await;
    assert_eq!(join_text(&out.content), "Command aborted");
}

#[tokio::test]
async fn background_processes_do_not_hold_the_result() {
    let f = Fixture::new();
    let started = std::time::Instant::now();
    let out = bash(f.ctx(), json!({"command": "sleep 30 & echo bg"})).await;
    assert_eq!(join_text(&out.content), "bg\n");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_the_full_log() {
    let f = Fixture::new();
    let out = bash(f.ctx(), json!({"command": "seq 1 3000"})).await;
    let logs = f.logs();
    assert_eq!(logs.len(), 1);
    let log = &logs[0];
    let name = log.file_name().unwrap().to_string_lossy().into_owned();
    assert!(regex::Regex::new(r"^pi-bash-[0-9a-f]{16}\.log$").unwrap().is_match(&name));
    let full: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(log).unwrap(), full);
    let text = join_text(&out.content);
    assert!(text.starts_with("1001\n1002\n"));
    assert!(
        text.ends_with(&format!("2999\n3000\n\n[Showing lines 1001-3000 of 3000. Full output: {}]", log.display()))
    );
    let details = out.details.unwrap();
    assert_eq!(details["fullOutputPath"], log.display().to_string());
    let mut t = details["truncation"].clone();
    t.as_object_mut().unwrap().shift_remove("content");
    assert_eq!(
        t,
        json!({"truncated": true, "truncatedBy": "lines", "totalLines": 3000, "totalBytes": 13893,
               "outputLines": 2000, "outputBytes": 9999, "lastLinePartial": false,
               "firstLineExceedsLimit": false, "maxLines": 2000, "maxBytes": 51200})
    );
    let sc = out.structured_content.unwrap();
    assert_eq!(sc["output"].as_str().unwrap().len(), 13893);
    assert_eq!(sc["truncated"], false);
}

#[tokio::test]
async fn truncation_notices_for_bytes_and_a_partial_last_line() {
    let f = Fixture::new();
    let out = bash(f.ctx(), json!({"command": "head -c 60000 /dev/zero | tr '\\0' y"})).await;
    let text = join_text(&out.content);
    let log = f.logs().pop().unwrap();
    assert!(
        text.ends_with(&format!(
            "y\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {}]",
            log.display()
        ))
    );
    assert_eq!(out.details.unwrap()["truncation"]["lastLinePartial"], true);
    let out = bash(f.ctx(), json!({"command": "head -c 60000 /dev/zero | tr '\\0' y; echo; echo done"})).await;
    let text = join_text(&out.content);
    assert!(text.starts_with("done\n\n[Showing lines 2-2 of 2 (50.0KB limit). Full output: "), "{text}");
}

#[tokio::test]
async fn utf8_split_across_reads_is_decoded_whole() {
    let f = Fixture::new();
    let out = bash(f.ctx(), json!({"command": "printf '\\303'; sleep 0.2; printf '\\251\\n'"})).await;
    assert_eq!(join_text(&out.content), "\u{e9}\n");
}

#[tokio::test]
async fn run_command_streams_sanitized_chunks() {
    let f = Fixture::new();
    let mut chunks = Vec::new();
    let result = run_command(
        "printf part; sleep 0.2; printf 'ial\\n'; printf '\\033[31mred\\033[0m\\r\\n' >&2; exit 5",
        f.dir.path(),
        &[],
        f.tmp.path(),
        CancellationToken::new(),
        |c: &str| chunks.push(c.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(result.output, "partial\nred\n");
    assert_eq!(result.exit_code, Some(5));
    assert!(!result.cancelled && !result.truncated);
    assert_eq!(result.full_output_path, None);
    assert_eq!(chunks.concat(), "partial\nred\n");
    assert_eq!(chunks[0], "part");
    assert!(f.logs().is_empty());
}

#[tokio::test]
async fn run_command_truncates_and_keeps_the_full_log() {
    let f = Fixture::new();
    let mut streamed = String::new();
    let result = run_command("seq 1 3000", f.dir.path(), &[], f.tmp.path(), CancellationToken::new(), |c: &str| {
        streamed.push_str(c)
    })
    .await
    .unwrap();
    let full: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(streamed, full);
    assert!(result.truncated);
    assert!(result.output.starts_with("1001\n"));
    assert!(result.output.ends_with("\n3000"));
    let path = result.full_output_path.unwrap();
    assert!(path.starts_with(&f.tmp.path().display().to_string()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), full);

    // Over 50KB: the log is written while streaming and holds everything.
    let result = run_command(
        "head -c 120000 /dev/zero | tr '\\0' 'z'; echo; echo end",
        f.dir.path(),
        &[],
        f.tmp.path(),
        CancellationToken::new(),
        |_: &str| {},
    )
    .await
    .unwrap();
    assert!(result.truncated);
    let log = std::fs::read_to_string(result.full_output_path.unwrap()).unwrap();
    assert_eq!(log.len(), 120000 + 5);
    assert!(log.ends_with("z\nend\n"));
}

#[tokio::test]
async fn run_command_cancel_returns_partial_output_without_exit_code() {
    let f = Fixture::new();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let dir = f.dir.path().to_path_buf();
    let tmp = f.tmp.path().to_path_buf();
    let task = tokio::spawn(async move {
        run_command("echo started; sleep 100", &dir, &[], &tmp, c2, move |c: &str| {
            let _ = tx.send(c.to_string());
        })
        .await
    });
    let first = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
    assert_eq!(first, "started\n");
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
    assert_eq!(
        result,
        BashResult {
            output: "started\n".into(),
            exit_code: None,
            cancelled: true,
            truncated: false,
            full_output_path: None,
        }
    );
}

#[tokio::test]
async fn run_command_reports_a_missing_working_directory() {
    let f = Fixture::new();
    let r = run_command(
        "true",
        std::path::Path::new("/nonexistent"),
        &[],
        f.tmp.path(),
        CancellationToken::new(),
        |_: &str| {},
    )
    .await;
    assert_eq!(r, Err("Working directory does not exist: /nonexistent\nCannot execute bash commands.".into()));
}

#[test]
fn schema_and_description_match_pi() {
    let tool = BashTool::new();
    assert_eq!(
        serde_json::to_string(tool.parameters()).unwrap(),
        r#"{"type":"object","required":["command"],"properties":{"command":{"type":"string","description":"Shell command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}}}"#
    );
    assert_eq!(tool.description(), DESCRIPTION);
}
