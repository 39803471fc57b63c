//! Golden pages: each session in `testdata/golden/<case>.jsonl`, rendered
//! with a fixed nonce, export time and version, must give exactly the bytes
//! of `testdata/golden/<case>.html`. The inputs come from the builders in
//! `tests.rs` (`capture_golden_inputs`); the pages were written by the
//! renderer as it stood when they were captured, so any change of output
//! shows here byte for byte. Every page shares its stylesheet and script, so
//! that shell is kept once (`shell.html`, the title and the body cut out) and
//! each `<case>.html` keeps its title and body: both parts must match.
//! `UPDATE_GOLDEN=1` rewrites them: only for a change of output that is meant,
//! and read the diff.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::ExportOptions;
use super::render::{PageStamp, render_page};
use crate::session::Session;

/// The export options a case is rendered with.
type Options = fn() -> ExportOptions;

/// Each golden case: its file stem and the export options it is rendered with.
const CASES: [(&str, Options); 10] = [
    ("rich", super::tests::fixture_options),
    // What `pi --export <file>` writes: no system prompt, no tool list.
    ("rich-no-options", ExportOptions::default),
    ("hostile", ExportOptions::default),
    ("links", ExportOptions::default),
    ("odd-entries", ExportOptions::default),
    ("skill", ExportOptions::default),
    ("saved", ExportOptions::default),
    ("every-field", super::tests::every_field_options),
    ("empty", ExportOptions::default),
    ("every-field-no-options", ExportOptions::default),
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/export_html/testdata/golden")
}

/// The input of a case: `rich-no-options` reads `rich.jsonl`.
fn input_name(case: &str) -> &str {
    case.strip_suffix("-no-options").unwrap_or(case)
}

fn fixed_stamp() -> PageStamp {
    let exported_at: DateTime<Utc> = "2026-01-02T03:04:05.678Z".parse().expect("a valid time");
    PageStamp { nonce: "0123456789abcdef0123456789abcdef".to_string(), exported_at, version: "0.0.0-golden" }
}

/// The page of a case, its input opened from a copy (opening may touch the file).
fn render_case(case: &str, options: &ExportOptions) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("session.jsonl");
    std::fs::copy(golden_dir().join(format!("{}.jsonl", input_name(case))), &copy).unwrap();
    let (session, warnings) = Session::open(&copy, "/").unwrap();
    assert!(warnings.is_empty(), "{case}: {warnings:?}");
    render_page(&session, options, &fixed_stamp())
}

/// Where two texts first differ, with a little of each around it.
fn first_difference(want: &str, got: &str) -> String {
    let at = want.bytes().zip(got.bytes()).take_while(|(a, b)| a == b).count();
    let around = |s: &str| {
        let mut start = at.saturating_sub(80).min(s.len());
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 80).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        s[start..end].to_string()
    };
    format!("byte {at}:\n  golden: {:?}\n  now:    {:?}", around(want), around(got))
}

/// A page cut into the shell every page shares and the case's own part (its
/// title and its body up to the closing script). Equal parts mean equal pages.
fn split_page(page: &str) -> (String, String) {
    let title_start = page.find("<title>").expect("a title") + "<title>".len();
    let title_end = page.find("</title>").expect("a title's end");
    let body_start = page.find("\n<body").expect("a body") + 1;
    let body_end = page.rfind("\n<script").expect("the page script") + 1;
    let shell = format!("{}{}\n{}", &page[..title_start], &page[title_end..body_start], &page[body_end..]);
    let own = format!("{}\n{}", &page[title_start..title_end], &page[body_start..body_end]);
    (shell, own)
}

/// Compares one golden file, or rewrites it under `UPDATE_GOLDEN`.
fn check_golden(name: &str, got: &str, update: bool, failures: &mut Vec<String>) {
    let golden = golden_dir().join(name);
    if update {
        std::fs::write(&golden, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    if want != got {
        failures.push(format!("{name}: {}", first_difference(&want, got)));
    }
}

#[test]
fn pages_equal_the_golden_files_byte_for_byte() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for (case, options) in CASES {
        let (shell, own) = split_page(&render_case(case, &options()));
        check_golden("shell.html", &shell, update, &mut failures);
        check_golden(&format!("{case}.html"), &own, update, &mut failures);
    }
    assert!(failures.is_empty(), "pages differ from their golden files:\n{}", failures.join("\n"));
}

#[test]
fn every_golden_input_has_a_case() {
    let mut inputs: Vec<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_string))
        .collect();
    inputs.sort();
    let mut used: Vec<String> = CASES.iter().map(|(case, _)| input_name(case).to_string()).collect();
    used.sort();
    used.dedup();
    assert_eq!(inputs, used);
}

#[test]
fn the_fixed_stamp_is_the_only_difference_between_two_exports() {
    // The golden pages hold the fixed stamp; a real export differs from them
    // only there, so the golden bytes are the bytes users get.
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("session.jsonl");
    std::fs::copy(golden_dir().join("rich.jsonl"), &copy).unwrap();
    let (session, _) = Session::open(&copy, "/").unwrap();
    let options = super::tests::fixture_options();
    let real = super::render_session_html(&session, &options);
    let fixed = render_page(&session, &options, &fixed_stamp());
    let differing: Vec<(&str, &str)> = fixed.lines().zip(real.lines()).filter(|(a, b)| a != b).collect();
    assert_eq!(fixed.lines().count(), real.lines().count());
    // The CSP line, the generator, the style tag, the footer and the script tag.
    assert_eq!(differing.len(), 5, "{differing:#?}");
    for (golden_line, _) in differing {
        assert!(
            golden_line.contains("0123456789abcdef0123456789abcdef")
                || golden_line.contains("0.0.0-golden")
                || golden_line.contains("2026-01-02"),
            "{golden_line}"
        );
    }
}
