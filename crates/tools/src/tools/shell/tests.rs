//! Tests of the shell helpers (expected ANSI/sanitize results recorded from pi 1.6.0).

use super::*;

#[test]
fn utf8_split_across_chunks_is_completed_by_the_next_chunk() {
    let mut d = Utf8Stream::default();
    assert_eq!(d.decode(b"caf\xc3"), "caf");
    assert_eq!(d.decode(b"\xa9!"), "\u{e9}!");
    assert_eq!(d.decode(b"\xf0\x9f"), "");
    assert_eq!(d.decode(b"\x98"), "");
    assert_eq!(d.decode(b"\x80"), "\u{1f600}");
    assert_eq!(d.finish(), "");
}

#[test]
fn invalid_and_unfinished_utf8_become_replacement_characters() {
    let mut d = Utf8Stream::default();
    assert_eq!(d.decode(b"a\xffb"), "a\u{fffd}b");
    assert_eq!(d.decode(b"\xe2\x82"), "");
    assert_eq!(d.finish(), "\u{fffd}");
}

#[test]
fn ansi_sequences_are_stripped_like_pi() {
    let cases = [
        ("\u{1b}[31mred\u{1b}[0m", "red"),
        ("a\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7}b", "alinkb"),
        ("x\u{1b}[1;2", "x"),
        ("x\u{1b}]0;title", "xitle"),
        ("x\u{1b}]0;t\u{1b}\\y", "xy"),
        ("\u{1b}=5", "5"),
        ("a\u{9b}32mb", "ab"),
        ("\u{1b}[<35;59;1Mz", "z"),
        ("e\u{1b}", "e\u{1b}"),
        ("plain", "plain"),
    ];
    for (input, expected) in cases {
        assert_eq!(strip_ansi(input), expected, "{input:?}");
    }
}

#[test]
fn unfinished_escape_sequences_are_held_back() {
    let split = |s: &str| split_incomplete_ansi_suffix(s);
    assert_eq!(split("x\u{1b}[1;2"), ("x".into(), "\u{1b}[1;2".into()));
    assert_eq!(split("x\u{1b}]0;title"), ("x".into(), "\u{1b}]0;title".into()));
    assert_eq!(split("e\u{1b}"), ("e".into(), "\u{1b}".into()));
    assert_eq!(split("x\u{1b}]0;t\u{1b}\\y"), ("x\u{1b}]0;t\u{1b}\\y".into(), String::new()));
    assert_eq!(split("\u{1b}[31mred"), ("\u{1b}[31mred".into(), String::new()));
    assert_eq!(split("no escapes"), ("no escapes".into(), String::new()));
}

#[test]
fn control_characters_are_sanitized_like_pi() {
    assert_eq!(sanitize_binary_output("a\u{0}b\u{7}c\td\ne\rf\u{1f}g\u{fffa}h"), "abc\td\ne\rfgh");
}

#[test]
fn timeouts_are_checked_like_pi() {
    assert_eq!(resolve_timeout(None), Ok(None));
    assert_eq!(resolve_timeout(Some(1.5)), Ok(Some(Duration::from_millis(1500))));
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(resolve_timeout(Some(bad)), Err("Invalid timeout: must be a finite number of seconds".into()));
    }
    assert_eq!(resolve_timeout(Some(3_000_000.0)), Err("Invalid timeout: maximum is 2147483.647 seconds".into()));
}

#[test]
fn output_files_are_named_like_pi_and_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (path, _file) = create_output_file(dir.path(), "pi-bash").unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let re = regex::Regex::new(r"^pi-bash-[0-9a-f]{16}\.log$").unwrap();
    assert!(re.is_match(&name), "{name}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

struct Collect(Vec<u8>);

impl ExecSink for Collect {
    fn data(&mut self, chunk: &[u8]) {
        self.0.extend_from_slice(chunk);
    }
}

#[tokio::test]
async fn exec_merges_streams_and_reports_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let mut sink = Collect(Vec::new());
    let env = [("PI_TEST_VAR".to_string(), "value".to_string())];
    let code = exec(
        "echo out; sleep 0.05; echo err >&2; sleep 0.05; echo $PI_TEST_VAR; pwd; exit 4",
        dir.path(),
        &env,
        &cancel,
        None,
        &mut sink,
    )
    .await;
    assert_eq!(code, Ok(4));
    let text = String::from_utf8(sink.0).unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(text, format!("out\nerr\nvalue\n{}\n", cwd.display()));
}

#[tokio::test]
async fn exec_reports_a_missing_working_directory() {
    let cancel = CancellationToken::new();
    let mut sink = Collect(Vec::new());
    let r = exec("true", Path::new("/nonexistent/dir"), &[], &cancel, None, &mut sink).await;
    assert_eq!(
        r,
        Err(ExecError::Failed(
            "Working directory does not exist: /nonexistent/dir\nCannot execute bash commands.".into()
        ))
    );
}

#[tokio::test]
async fn dropping_a_run_kills_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let cmd = format!("sleep 100 & echo $! > {}; sleep 100", pid_file.display());
    let cancel = CancellationToken::new();
    let mut sink = Collect(Vec::new());
    let run = exec(&cmd, dir.path(), &[], &cancel, None, &mut sink);
    // Give the shell time to start its children, then drop the run.
    let _ = tokio::time::timeout(Duration::from_millis(500), run).await;
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let gone = |pid: i32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    while !gone(pid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(pid), "child {pid} survived");
}

#[test]
fn shell_settings_prefix_the_command_on_its_own_line_and_name_a_missing_shell() {
    let unset = ShellSettings::default();
    assert_eq!(unset.prefixed("ls"), "ls");
    assert_eq!(unset.program(), Ok(shell_program()));
    let empty_prefix = ShellSettings { command_prefix: Some(String::new()), ..ShellSettings::default() };
    assert_eq!(empty_prefix.prefixed("ls"), "ls");
    let set = ShellSettings {
        path: Some(PathBuf::from("/nonexistent/shell")),
        command_prefix: Some("shopt -s expand_aliases".into()),
    };
    assert_eq!(set.prefixed("ll"), "shopt -s expand_aliases\nll");
    assert_eq!(set.program(), Err("Custom shell path not found: /nonexistent/shell".into()));
    let sh = ShellSettings { path: Some(PathBuf::from("/bin/sh")), command_prefix: None };
    assert_eq!(sh.program(), Ok(PathBuf::from("/bin/sh")));
}
