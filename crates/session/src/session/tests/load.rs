//! A session file read in parts on several threads against the same file read from the top.

use std::io::Write;

use serde_json::Value;

use super::fixture;
use crate::session::load::{Entries, FileContents, Parts, cut_points, read_session_file_in};

/// Everything a reading gives, in a comparable form.
#[derive(Debug, PartialEq)]
enum Read {
    Empty,
    NotASession,
    Session {
        header: Value,
        /// Current files: each record's entry (debug form) and kept text.
        records: Vec<(String, Option<String>)>,
        legacy: Vec<Value>,
        warnings: Vec<String>,
        missing_final_newline: bool,
    },
}

fn read(path: &std::path::Path, parts: Parts) -> Read {
    match read_session_file_in(path, parts) {
        Ok(FileContents::Empty) => Read::Empty,
        Ok(FileContents::Session { header, entries, warnings, missing_final_newline, source }) => {
            let (records, legacy) = match entries {
                Entries::Current(slots) => (
                    slots
                        .iter()
                        .map(|s| s.record(source.as_ref()))
                        .map(|r| (format!("{:?}", r.entry), r.raw.as_deref().map(str::to_string)))
                        .collect(),
                    Vec::new(),
                ),
                Entries::Legacy(values) => (Vec::new(), values),
            };
            Read::Session { header, records, legacy, warnings, missing_final_newline }
        }
        Err(crate::session::SessionError::NotASession(_)) => Read::NotASession,
        Err(e) => panic!("{e}"),
    }
}

/// The body lines of a fixture (header first), as bytes.
fn fixture_lines(name: &str) -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.as_bytes().to_vec()).collect()
}

/// A file of `lines` joined by `\n`, with damage of every kind the loader
/// reports mixed in, ending with a newline or not.
fn damaged_file(lines: &[Vec<u8>], final_newline: bool) -> Vec<u8> {
    let mut out = Vec::new();
    // Before the header: blank and damaged lines (warned about), then the header.
    out.extend_from_slice(b"\n  \n{\"type\":\"sess\n");
    out.extend_from_slice(&lines[0]);
    out.push(b'\n');
    for (n, line) in lines[1..].iter().enumerate() {
        out.extend_from_slice(line);
        out.push(b'\n');
        match n % 7 {
            0 => out.extend_from_slice(b"\n"),
            1 => out.extend_from_slice(b"{\"type\":\"message\",\"id\":\"x\n"),
            2 => out.extend_from_slice(b"[1,2]\n"),
            3 => out.extend_from_slice(b"{\"type\":\"session\",\"version\":3,\"id\":\"again\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n"),
            4 => out.extend_from_slice(b"{\"type\":\"label\",\"id\":\"l\xff\",\"parentId\":null,\"timestamp\":\"t\",\"targetId\":\"x\",\"label\":\"\xe9\"}\n"),
            5 => out.extend_from_slice(b"{\"type\":\"custom\",\"id\":\"c1\",\"parentId\":null,\"timestamp\":\"t\",\"customType\":\"x\",\"data\":{\"k\":[1,2.5]}}\r\n"),
            _ => {}
        }
    }
    // A long line, then the last one: truncated, or whole.
    let long = format!(
        "{{\"type\":\"custom\",\"id\":\"big\",\"parentId\":null,\"timestamp\":\"t\",\"customType\":\"x\",\"data\":\"{}\"}}\n",
        "y\\n".repeat(2_000)
    );
    out.extend_from_slice(long.as_bytes());
    if final_newline {
        out.extend_from_slice(&lines[lines.len() - 1]);
        out.push(b'\n');
    } else {
        out.extend_from_slice(&lines[lines.len() - 1][..20]);
    }
    out
}

#[test]
fn a_file_read_in_parts_gives_what_reading_it_from_the_top_gives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let sequential = Parts { most: 1, min_bytes: 1, buffer: 1 << 20 };
    let mut checked = 0;
    for name in ["pi16_session.jsonl", "crafted.jsonl", "pi16_fork.jsonl", "v2_session.jsonl", "v1_session.jsonl"] {
        let lines = fixture_lines(name);
        for final_newline in [true, false] {
            let bytes = damaged_file(&lines, final_newline);
            std::fs::File::create(&path).unwrap().write_all(&bytes).unwrap();
            let whole = read(&path, sequential);
            let Read::Session { warnings, missing_final_newline, .. } = &whole else { panic!("{name}: {whole:?}") };
            assert_eq!(*missing_final_newline, !final_newline, "{name}");
            assert!(warnings.len() > 3, "{name}: {warnings:?}");
            for most in 2..=6 {
                for (min_bytes, buffer) in [(1, 1 << 20), (100, 7), (5_000, 4096)] {
                    let parts = Parts { most, min_bytes, buffer };
                    let len = bytes.len() as u64;
                    let cuts = cut_points(&std::fs::File::open(&path).unwrap(), 0, len, parts).unwrap();
                    // Cuts are line starts, in order.
                    assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
                    assert!(cuts[1..cuts.len() - 1].iter().all(|&c| bytes[c as usize - 1] == b'\n'), "{cuts:?}");
                    if min_bytes == 1 {
                        assert!(cuts.len() >= 3, "{name}: {cuts:?}");
                    }
                    assert_eq!(read(&path, parts), whole, "{name}, {most} parts of at least {min_bytes} bytes");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 5 * 2 * 5 * 3);
    // Read from the top with small buffers: lines across reads are copied whole.
    let lines = fixture_lines("crafted.jsonl");
    let bytes = damaged_file(&lines, false);
    std::fs::File::create(&path).unwrap().write_all(&bytes).unwrap();
    let whole = read(&path, sequential);
    for buffer in [1, 2, 7, 64, 4096] {
        assert_eq!(read(&path, Parts { most: 1, min_bytes: 1, buffer }), whole, "{buffer}-byte reads");
    }
}

#[test]
fn files_without_entries_read_in_parts_as_from_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let header = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}".to_vec();
    let cases: [&[u8]; 7] = [
        b"",
        b"\n\n",
        b"{\"type\":\"label\"}\n",
        b"not json\n[1]\n",
        &header,
        b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n\n\n[",
    ];
    for bytes in cases {
        std::fs::write(&path, bytes).unwrap();
        let whole = read(&path, Parts { most: 1, min_bytes: 1, buffer: 1 << 20 });
        for most in 2..=4 {
            assert_eq!(
                read(&path, Parts { most, min_bytes: 1, buffer: 3 }),
                whole,
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    std::fs::write(&path, b"").unwrap();
    assert_eq!(read(&path, Parts { most: 3, min_bytes: 1, buffer: 1 << 20 }), Read::Empty);
    std::fs::write(&path, b"\n").unwrap();
    assert_eq!(read(&path, Parts { most: 3, min_bytes: 1, buffer: 1 << 20 }), Read::NotASession);
}

/// A session given as a pipe (not a regular file, so no positioned reads)
/// is read in order from where its header ended, as a file is.
#[test]
fn a_pipe_is_read_in_order_as_a_file_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let bytes = damaged_file(&fixture_lines("crafted.jsonl"), false);
    std::fs::write(&file, &bytes).unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let parts = Parts { most: 4, min_bytes: 1, buffer: 4096 };
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, &bytes).unwrap())
    };
    let mut from_pipe = read(&fifo, parts);
    writer.join().unwrap();
    if let Read::Session { warnings, .. } = &mut from_pipe {
        for warning in warnings.iter_mut() {
            *warning = warning.replace(&fifo.display().to_string(), &file.display().to_string());
        }
    }
    assert_eq!(from_pipe, read(&file, parts));
}
