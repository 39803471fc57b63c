//! Tests of the `grep` tool (expected texts recorded from pi 1.6.0 with ripgrep).

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::message::join_text;

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    for d in [".git", "src/sub", "ignored", ".hidden"] {
        std::fs::create_dir_all(p.join(d)).unwrap();
    }
    std::fs::write(p.join("src/main.rs"), "fn main() {\n    say!(\"hello\");\n}\n").unwrap();
    std::fs::write(p.join("src/sub/notes.txt"), "hello world\nHELLO again\nbye\n").unwrap();
    std::fs::write(p.join("ignored/x.txt"), "hello ignored\n").unwrap();
    std::fs::write(p.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    std::fs::write(p.join("a.log"), "hello log\n").unwrap();
    std::fs::write(p.join(".hidden/h.txt"), "hello hidden\n").unwrap();
    std::fs::write(p.join("bin.dat"), b"hello\0binary\n").unwrap();
    std::fs::write(p.join("ctx.txt"), "ctx1\nctx2\nmatch1\nctx3\nmatch2\nctx4\nctx5\nctx6\nmatch3\nend\n").unwrap();
    dir
}

async fn grep(dir: &Path, args: Value) -> ToolOutput {
    GrepTool::new().execute(args, ToolContext::new(dir.to_path_buf())).await
}

fn sorted_lines(out: &ToolOutput) -> Vec<String> {
    let mut lines: Vec<String> = join_text(&out.content).lines().map(String::from).collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn respects_gitignore_and_includes_hidden_files() {
    let dir = fixture();
    let out = grep(dir.path(), json!({"pattern": "hello"})).await;
    assert!(!out.is_error);
    assert_eq!(
        sorted_lines(&out),
        [".hidden/h.txt:1: hello hidden", "src/main.rs:2:     say!(\"hello\");", "src/sub/notes.txt:1: hello world"]
    );
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn ignore_case_literal_and_file_paths() {
    let dir = fixture();
    let out = grep(dir.path(), json!({"pattern": "hello", "ignoreCase": true, "path": "src"})).await;
    assert_eq!(
        sorted_lines(&out),
        ["main.rs:2:     say!(\"hello\");", "sub/notes.txt:1: hello world", "sub/notes.txt:2: HELLO again"]
    );
    let out = grep(dir.path(), json!({"pattern": "hello", "path": "src/sub/notes.txt"})).await;
    assert_eq!(join_text(&out.content), "notes.txt:1: hello world");
    let out = grep(dir.path(), json!({"pattern": "say!(", "literal": true})).await;
    assert_eq!(join_text(&out.content), "src/main.rs:2:     say!(\"hello\");");
}

#[tokio::test]
async fn context_lines_use_dashes() {
    let dir = fixture();
    let out = grep(dir.path(), json!({"pattern": "match", "context": 1, "path": "ctx.txt"})).await;
    assert_eq!(
        join_text(&out.content),
        "ctx.txt-2- ctx2\nctx.txt:3: match1\nctx.txt-4- ctx3\nctx.txt:5: match2\nctx.txt-6- ctx4\nctx.txt-8- ctx6\nctx.txt:9: match3\nctx.txt-10- end"
    );
}

#[tokio::test]
async fn match_limit_keeps_trailing_context_and_reports_the_limit() {
    let dir = fixture();
    let out = grep(dir.path(), json!({"pattern": "match", "limit": 1, "context": 1, "path": "ctx.txt"})).await;
    assert_eq!(
        join_text(&out.content),
        "ctx.txt-2- ctx2\nctx.txt:3: match1\nctx.txt-4- ctx3\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    );
    assert_eq!(out.details, Some(json!({"matchLimitReached": 1})));
    // Exactly `limit` matches: no notice.
    let out = grep(dir.path(), json!({"pattern": "match", "limit": 3, "path": "ctx.txt"})).await;
    assert_eq!(join_text(&out.content), "ctx.txt:3: match1\nctx.txt:5: match2\nctx.txt:9: match3");
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn globs_filter_files_relative_to_the_search_path() {
    let dir = fixture();
    for glob in ["*.rs", "src/*.rs", "./src/*.rs"] {
        let out = grep(dir.path(), json!({"pattern": "hello", "glob": glob})).await;
        assert_eq!(join_text(&out.content), "src/main.rs:2:     say!(\"hello\");", "{glob}");
    }
    let out = grep(dir.path(), json!({"pattern": "hello", "glob": "./src/**"})).await;
    assert_eq!(sorted_lines(&out), ["src/main.rs:2:     say!(\"hello\");", "src/sub/notes.txt:1: hello world"]);
    let out = grep(dir.path(), json!({"pattern": "hello", "glob": "!src/**"})).await;
    assert_eq!(sorted_lines(&out), [".hidden/h.txt:1: hello hidden"]);
}

#[tokio::test]
async fn errors_and_empty_results_use_pi_texts() {
    let dir = fixture();
    let out = grep(dir.path(), json!({"pattern": "nomatch"})).await;
    assert_eq!((out.is_error, join_text(&out.content)), (false, "No matches found".to_string()));
    let out = grep(dir.path(), json!({"pattern": "("})).await;
    assert!(out.is_error);
    // ripgrep 14+ (what pi downloads) shows the pattern as its regex crate saw it.
    assert_eq!(join_text(&out.content), "regex parse error:\n    (?:()\n    ^\nerror: unclosed group");
    let out = grep(dir.path(), json!({"pattern": "hello", "path": "nope"})).await;
    assert_eq!(join_text(&out.content), format!("Path not found: {}", dir.path().join("nope").display()));
    let out = grep(dir.path(), json!({"pattern": "a\nb"})).await;
    assert!(join_text(&out.content).ends_with(
        "is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."
    ));
}

#[tokio::test]
async fn long_lines_are_cut_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long.txt"), format!("needle {}\n", "z".repeat(600))).unwrap();
    let out = grep(dir.path(), json!({"pattern": "needle"})).await;
    let expected = format!(
        "long.txt:1: needle {}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
        "z".repeat(493)
    );
    assert_eq!(join_text(&out.content), expected);
    assert_eq!(out.details, Some(json!({"linesTruncated": true})));
}

#[tokio::test]
async fn output_over_50kb_is_cut_with_truncation_details() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..1000).map(|i| format!("hit {i:04} {}\n", "w".repeat(90))).collect();
    std::fs::write(dir.path().join("many.txt"), body).unwrap();
    let out = grep(dir.path(), json!({"pattern": "hit", "limit": 1000})).await;
    let text = join_text(&out.content);
    assert!(text.ends_with("\n\n[50.0KB limit reached]"), "{}", &text[text.len() - 80..]);
    let details = out.details.unwrap();
    assert_eq!(details["truncation"]["truncatedBy"], "bytes");
    assert_eq!(details["truncation"]["totalLines"], 1000);
    assert_eq!(details["truncation"]["maxLines"], 9_007_199_254_740_991u64);
}

#[test]
fn schema_and_description_match_pi() {
    let tool = GrepTool::new();
    assert_eq!(
        serde_json::to_string(tool.parameters()).unwrap(),
        r#"{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"Search pattern (regex or literal string)"},"path":{"type":"string","description":"Directory or file to search (default: current directory)"},"glob":{"type":"string","description":"Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},"ignoreCase":{"type":"boolean","description":"Case-insensitive search (default: false)"},"literal":{"type":"boolean","description":"Treat pattern as literal string instead of regex (default: false)"},"context":{"type":"number","description":"Number of lines to show before and after each match (default: 0)"},"limit":{"type":"number","description":"Maximum number of matches to return (default: 100)"}}}"#
    );
    assert_eq!(tool.description(), DESCRIPTION);
}
