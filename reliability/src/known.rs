//! Framing cases fixed with issue 12 (the transport crate): stray bytes
//! between `Content-Length` frames, a header line without end, duplicate
//! `id` members, `1e400` ids, and native error replies overtaking the
//! replies to earlier commands. Each is played against the binary and fails
//! the run like any other check, unless it is listed in
//! [`KNOWN_UNTIL_ISSUE_12`] (empty since issue 12 landed).

use std::path::Path;
use std::time::Duration;

use crate::agent::{Agent, Framing, Sandbox};
use crate::inputs::{Dialect, frame};

/// Cases expected to fail (reported, not failed). Issue 12 fixed all seven.
pub const KNOWN_UNTIL_ISSUE_12: &[&str] = &[];

struct Probe {
    name: &'static str,
    dialect: Dialect,
    input: Vec<u8>,
    /// Judge the output records: `Err` says what is wrong.
    judge: fn(&[String]) -> Result<(), String>,
}

fn rpc(id: &str, method: &str) -> Vec<u8> {
    frame(Dialect::Lsp, format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#).as_bytes())
}

fn answered(out: &[String], id: &str) -> usize {
    out.iter().filter(|r| r.contains(&format!(r#""id":{id},"#)) && !r.contains(r#""method""#)).count()
}

fn probes() -> Vec<Probe> {
    let mut stray = rpc("1", "getState");
    stray.extend_from_slice(b"garbage between frames\r\n");
    stray.extend(rpc("2", "getState"));
    stray.extend_from_slice(b"\x00\xffno line end");
    stray.extend(rpc("3", "getState"));
    stray.extend(rpc("\"final\"", "getState"));

    let mut endless = rpc("1", "getState");
    endless.extend_from_slice(b"X-Junk: ");
    endless.extend(std::iter::repeat_n(b'a', 8 << 20));
    endless.extend_from_slice(b"\r\n");
    endless.extend(rpc("\"final\"", "getState"));

    let mut order = Vec::new();
    for i in 0..50 {
        order.extend_from_slice(format!("{{\"id\":\"o{i}\",\"type\":\"get_state\"}}\nnot json {i}\n").as_bytes());
    }
    order.extend_from_slice(b"{\"id\":\"final\",\"type\":\"get_state\"}\n");

    let first = b"{\"jsonrpc\":\"2.0\",\"id\":\"open\",\"method\":\"getState\"}\n";
    let dup = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"id\":8,\"method\":\"getState\"}\n{\"jsonrpc\":\"2.0\",\"id\":\"final\",\"method\":\"getState\"}\n";
    let big = b"{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"getState\"}\n{\"jsonrpc\":\"2.0\",\"id\":\"final\",\"method\":\"getState\"}\n";
    vec![
        Probe {
            name: "lsp_stray_bytes_between_frames",
            dialect: Dialect::Lsp,
            input: stray,
            judge: |out| match (answered(out, "2"), answered(out, "3"), answered(out, "\"final\"")) {
                (1, 1, 1) => Ok(()),
                (a, b, c) => Err(format!(
                    "after stray bytes: requests 2, 3 and final answered {a}×, {b}×, {c}× (the reader must resynchronise)"
                )),
            },
        },
        Probe {
            name: "lsp_endless_header_line",
            dialect: Dialect::Lsp,
            input: endless,
            judge: |out| {
                let error = out.iter().any(|r| r.contains(r#""id":null"#) && r.contains("-32700"));
                match (error, answered(out, "\"final\"")) {
                    (true, 1) => Ok(()),
                    (e, f) => Err(format!(
                        "an 8 MiB header line: parse error {e}, final answered {f}× (headers need a size limit)"
                    )),
                }
            },
        },
        Probe {
            name: "native_errors_keep_reply_order",
            dialect: Dialect::Native,
            input: order,
            judge: |out| {
                let replies: Vec<&String> = out.iter().filter(|r| r.contains(r#""type":"response""#)).collect();
                for (i, pair) in replies.chunks(2).take(50).enumerate() {
                    let first = pair.first().map(|r| r.contains(&format!(r#""id":"o{i}""#))).unwrap_or(false);
                    if !first {
                        return Err(format!(
                            "reply {} is not the answer to o{i}: an error reply overtook it",
                            2 * i + 1
                        ));
                    }
                }
                Ok(())
            },
        },
        Probe {
            name: "duplicate_id_members",
            dialect: Dialect::JsonRpc,
            input: [&first[..], &dup[..]].concat(),
            judge: |out| {
                let echoed = answered(out, "7") + answered(out, "8");
                match (echoed, answered(out, "\"final\"")) {
                    (1, 1) => Ok(()),
                    (n, _) => Err(format!("a request with two id members: {n} answers carry one of its ids")),
                }
            },
        },
        Probe {
            name: "native_duplicate_id_members",
            dialect: Dialect::Native,
            input: b"{\"id\":\"a\",\"id\":\"b\",\"type\":\"get_state\"}\n".to_vec(),
            judge: |out| match answered(out, "\"a\"") + answered(out, "\"b\"") {
                1 => Ok(()),
                n => Err(format!("a command with two id members: {n} answers carry one of its ids")),
            },
        },
        Probe {
            name: "id_1e400",
            dialect: Dialect::JsonRpc,
            input: [&first[..], &big[..]].concat(),
            judge: |out| {
                let parse_error = out.iter().any(|r| r.contains("-32700"));
                let n = answered(out, "1e400") + out.iter().filter(|r| r.contains(r#""id":null"#)).count();
                if n == 1 && !parse_error && answered(out, "\"final\"") == 1 {
                    Ok(())
                } else {
                    Err(format!("{n} answers to a 1e400 id, parse error: {parse_error} (1e400 is valid JSON)"))
                }
            },
        },
        Probe {
            name: "native_id_1e400",
            dialect: Dialect::Native,
            input: b"{\"id\":\"open\",\"type\":\"get_state\"}\n{\"id\":1e400,\"type\":\"get_state\"}\n".to_vec(),
            judge: |out| match (answered(out, "1e400"), out.iter().any(|r| r.contains("Failed to parse"))) {
                (1, false) => Ok(()),
                (n, p) => Err(format!("{n} answers echo the 1e400 id, parse error: {p} (1e400 is valid JSON)")),
            },
        },
    ]
}

/// Play every probe; print `PASS`, `KNOWN` (failing, listed) or `FAIL`.
/// Returns false when a probe that is not listed fails.
pub async fn run(pi: &Path) -> bool {
    let mut ok = true;
    for probe in probes() {
        let outcome = play(pi, &probe).await.and_then(|out| (probe.judge)(&out));
        let known = KNOWN_UNTIL_ISSUE_12.contains(&probe.name);
        let line = match (&outcome, known) {
            (Ok(()), false) => format!("PASS framing {}", probe.name),
            (Ok(()), true) => {
                format!("PASS framing {} (listed as known until issue 12: remove it from the list)", probe.name)
            }
            (Err(e), true) => format!("KNOWN framing {} (until issue 12): {e}", probe.name),
            (Err(e), false) => {
                ok = false;
                format!("FAIL framing {}: {e}", probe.name)
            }
        };
        crate::say(&line);
    }
    ok
}

async fn play(pi: &Path, probe: &Probe) -> Result<Vec<String>, String> {
    let sb = Sandbox::new().map_err(|e| e.to_string())?;
    let framing = if probe.dialect == Dialect::Lsp { Framing::Headers } else { Framing::Lines };
    let mut agent = Agent::spawn(pi, &sb, &["--no-session".to_string()], framing).map_err(|e| e.to_string())?;
    let mut stdin = agent.take_stdin().ok_or("no stdin")?;
    let input = probe.input.clone();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(&input).await;
    });
    let (records, _) = agent.until(Duration::from_secs(20), |_| false).await;
    let _ = writer.await;
    agent.wait(Duration::from_secs(5)).await;
    Ok(records.into_iter().map(|r| String::from_utf8_lossy(&r).into_owned()).collect())
}
