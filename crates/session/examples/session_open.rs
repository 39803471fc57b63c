//! Micro-benchmark of opening a session file: `Session::open`, the
//! conversation's length (what `get_state` needs of it), the last assistant
//! message (its usage), and the whole conversation written out as
//! `get_messages` writes it. Prints each time and the peak RSS.
//!
//! `cargo run --release -p pi-session --example session_open -- FILE [RUNS]`
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::time::Instant;

use pi_session::session::Session;
use pi_types::message::AgentMessage;

/// Bytes written, nothing kept.
struct Count(usize);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: session_open FILE [RUNS]")?;
    let runs: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(5);
    for run in 0..runs {
        let t0 = Instant::now();
        let (session, warnings) = Session::open(&path, "/tmp")?;
        let opened = t0.elapsed();
        let messages = session.context_messages();
        let count = messages.len();
        let last = messages.tail_from_last(|m| matches!(m, AgentMessage::Assistant(_)));
        let state = t0.elapsed();
        let t1 = Instant::now();
        let mut out = Count(0);
        serde_json::to_writer(&mut out, &messages)?;
        let written = t1.elapsed();
        println!(
            "run {run}: {} entries, {} warnings; open {:.1} ms, +context {:.1} ms ({count} messages, tail {}); \
             get_messages written {:.1} ms ({:.1} MiB); peak RSS {:.1} MiB",
            session.entry_count(),
            warnings.len(),
            opened.as_secs_f64() * 1e3,
            state.as_secs_f64() * 1e3,
            last.len(),
            written.as_secs_f64() * 1e3,
            out.0 as f64 / 1048576.0,
            peak_rss_kib() as f64 / 1024.0,
        );
    }
    Ok(())
}
