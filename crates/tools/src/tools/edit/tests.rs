//! Tests of the `edit` tool (expected texts, diffs and patches recorded from pi 1.6.0).

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::message::join_text;

async fn edit(dir: &Path, file: &str, args: Value) -> (ToolOutput, String) {
    std::fs::write(dir.join("f.txt"), file).unwrap();
    let out = EditTool::new().execute(args, ToolContext::new(dir.to_path_buf())).await;
    let after = std::fs::read_to_string(dir.join("f.txt")).unwrap();
    (out, after)
}

/// (name, file before, arguments, expected result text or error, details, file after).
type Case = (&'static str, String, Value, Result<&'static str, &'static str>, Value, Option<String>);

fn recorded() -> Vec<Case> {
    vec![
        (
            "simple",
            "alpha\nbeta\ngamma\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "beta", "newText": "delta"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": " 1 alpha\n-2 beta\n+2 delta\n 3 gamma", "patch": "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+delta\n gamma\n", "firstChangedLine": 2}),
            Some("alpha\ndelta\ngamma\n".to_string()),
        ),
        (
            "multi_far",
            "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20\nline 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\nline 30\nline 31\nline 32\nline 33\nline 34\nline 35\nline 36\nline 37\nline 38\nline 39\nline 40\nline 41\nline 42\nline 43\nline 44\nline 45\nline 46\nline 47\nline 48\nline 49\nline 50\nline 51\nline 52\nline 53\nline 54\nline 55\nline 56\nline 57\nline 58\nline 59\nline 60\nline 61\nline 62\nline 63\nline 64\nline 65\nline 66\nline 67\nline 68\nline 69\nline 70\nline 71\nline 72\nline 73\nline 74\nline 75\nline 76\nline 77\nline 78\nline 79\nline 80\nline 81\nline 82\nline 83\nline 84\nline 85\nline 86\nline 87\nline 88\nline 89\nline 90\nline 91\nline 92\nline 93\nline 94\nline 95\nline 96\nline 97\nline 98\nline 99\nline 100\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "line 10\n", "newText": "line ten\n"}, {"oldText": "line 90\n", "newText": "line ninety\nextra\n"}]}),
            Ok("Successfully replaced 2 block(s) in f.txt."),
            json!({"diff": "     ...\n   6 line 6\n   7 line 7\n   8 line 8\n   9 line 9\n- 10 line 10\n+ 10 line ten\n  11 line 11\n  12 line 12\n  13 line 13\n  14 line 14\n     ...\n  86 line 86\n  87 line 87\n  88 line 88\n  89 line 89\n- 90 line 90\n+ 90 line ninety\n+ 91 extra\n  91 line 91\n  92 line 92\n  93 line 93\n  94 line 94\n     ...", "patch": "--- f.txt\n+++ f.txt\n@@ -6,9 +6,9 @@\n line 6\n line 7\n line 8\n line 9\n-line 10\n+line ten\n line 11\n line 12\n line 13\n line 14\n@@ -86,9 +86,10 @@\n line 86\n line 87\n line 88\n line 89\n-line 90\n+line ninety\n+extra\n line 91\n line 92\n line 93\n line 94\n", "firstChangedLine": 10}),
            Some("line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline ten\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20\nline 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\nline 30\nline 31\nline 32\nline 33\nline 34\nline 35\nline 36\nline 37\nline 38\nline 39\nline 40\nline 41\nline 42\nline 43\nline 44\nline 45\nline 46\nline 47\nline 48\nline 49\nline 50\nline 51\nline 52\nline 53\nline 54\nline 55\nline 56\nline 57\nline 58\nline 59\nline 60\nline 61\nline 62\nline 63\nline 64\nline 65\nline 66\nline 67\nline 68\nline 69\nline 70\nline 71\nline 72\nline 73\nline 74\nline 75\nline 76\nline 77\nline 78\nline 79\nline 80\nline 81\nline 82\nline 83\nline 84\nline 85\nline 86\nline 87\nline 88\nline 89\nline ninety\nextra\nline 91\nline 92\nline 93\nline 94\nline 95\nline 96\nline 97\nline 98\nline 99\nline 100\n".to_string()),
        ),
        (
            "multi_near",
            "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20\nline 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\nline 30\nline 31\nline 32\nline 33\nline 34\nline 35\nline 36\nline 37\nline 38\nline 39\nline 40\nline 41\nline 42\nline 43\nline 44\nline 45\nline 46\nline 47\nline 48\nline 49\nline 50\nline 51\nline 52\nline 53\nline 54\nline 55\nline 56\nline 57\nline 58\nline 59\nline 60\nline 61\nline 62\nline 63\nline 64\nline 65\nline 66\nline 67\nline 68\nline 69\nline 70\nline 71\nline 72\nline 73\nline 74\nline 75\nline 76\nline 77\nline 78\nline 79\nline 80\nline 81\nline 82\nline 83\nline 84\nline 85\nline 86\nline 87\nline 88\nline 89\nline 90\nline 91\nline 92\nline 93\nline 94\nline 95\nline 96\nline 97\nline 98\nline 99\nline 100\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "line 10\n", "newText": "line ten\n"}, {"oldText": "line 15\n", "newText": ""}]}),
            Ok("Successfully replaced 2 block(s) in f.txt."),
            json!({"diff": "     ...\n   6 line 6\n   7 line 7\n   8 line 8\n   9 line 9\n- 10 line 10\n+ 10 line ten\n  11 line 11\n  12 line 12\n  13 line 13\n  14 line 14\n- 15 line 15\n  16 line 16\n  17 line 17\n  18 line 18\n  19 line 19\n     ...", "patch": "--- f.txt\n+++ f.txt\n@@ -6,14 +6,13 @@\n line 6\n line 7\n line 8\n line 9\n-line 10\n+line ten\n line 11\n line 12\n line 13\n line 14\n-line 15\n line 16\n line 17\n line 18\n line 19\n", "firstChangedLine": 10}),
            Some("line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline ten\nline 11\nline 12\nline 13\nline 14\nline 16\nline 17\nline 18\nline 19\nline 20\nline 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\nline 30\nline 31\nline 32\nline 33\nline 34\nline 35\nline 36\nline 37\nline 38\nline 39\nline 40\nline 41\nline 42\nline 43\nline 44\nline 45\nline 46\nline 47\nline 48\nline 49\nline 50\nline 51\nline 52\nline 53\nline 54\nline 55\nline 56\nline 57\nline 58\nline 59\nline 60\nline 61\nline 62\nline 63\nline 64\nline 65\nline 66\nline 67\nline 68\nline 69\nline 70\nline 71\nline 72\nline 73\nline 74\nline 75\nline 76\nline 77\nline 78\nline 79\nline 80\nline 81\nline 82\nline 83\nline 84\nline 85\nline 86\nline 87\nline 88\nline 89\nline 90\nline 91\nline 92\nline 93\nline 94\nline 95\nline 96\nline 97\nline 98\nline 99\nline 100\n".to_string()),
        ),
        (
            "crlf",
            "one\r\ntwo\r\nthree\r\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "two\nthree", "newText": "2\n3\n3b"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": " 1 one\n-2 two\n-3 three\n+2 2\n+3 3\n+4 3b", "patch": "--- f.txt\n+++ f.txt\n@@ -1,3 +1,4 @@\n one\n-two\n-three\n+2\n+3\n+3b\n", "firstChangedLine": 2}),
            Some("one\r\n2\r\n3\r\n3b\r\n".to_string()),
        ),
        (
            "bom",
            "﻿hello\nworld\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "hello", "newText": "bye"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": "-1 hello\n+1 bye\n 2 world", "patch": "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n-hello\n+bye\n world\n", "firstChangedLine": 1}),
            Some("﻿bye\nworld\n".to_string()),
        ),
        (
            "fuzzy",
            "say “hi”  \nnext line\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "say \"hi\"\nnext", "newText": "say 'yo'\nnext"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": "-1 say “hi”  \n+1 say 'yo'\n 2 next line", "patch": "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n-say “hi”  \n+say 'yo'\n next line\n", "firstChangedLine": 1}),
            Some("say 'yo'\nnext line\n".to_string()),
        ),
        (
            "nonl_end",
            "a\nb".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "c\nd"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": " 1 a\n-2 b\n+2 c\n+3 d", "patch": "--- f.txt\n+++ f.txt\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+c\n+d\n\\ No newline at end of file\n", "firstChangedLine": 2}),
            Some("a\nc\nd".to_string()),
        ),
        (
            "notfound1",
            "a\nb\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "zzz", "newText": "c"}]}),
            Err("Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."),
            Value::Null,
            None,
        ),
        (
            "notfound2",
            "a\nb\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "a", "newText": "c"}, {"oldText": "zzz", "newText": "c"}]}),
            Err("Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."),
            Value::Null,
            None,
        ),
        (
            "dup1",
            "x\nx\nx\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "x", "newText": "y"}]}),
            Err("Found 3 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."),
            Value::Null,
            None,
        ),
        (
            "dup2",
            "x\nx\ny\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "y", "newText": "z"}, {"oldText": "x", "newText": "y"}]}),
            Err("Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."),
            Value::Null,
            None,
        ),
        (
            "empty1",
            "a\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "", "newText": "y"}]}),
            Err("oldText must not be empty in f.txt."),
            Value::Null,
            None,
        ),
        (
            "empty2",
            "a\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "a", "newText": "y"}, {"oldText": "", "newText": "y"}]}),
            Err("edits[1].oldText must not be empty in f.txt."),
            Value::Null,
            None,
        ),
        (
            "overlap",
            "abcdef\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "cde", "newText": "1"}, {"oldText": "abcd", "newText": "2"}]}),
            Err("edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint regions."),
            Value::Null,
            None,
        ),
        (
            "nochange1",
            "abc\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "b"}]}),
            Err("No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."),
            Value::Null,
            None,
        ),
        (
            "nochange2",
            "abc\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "b"}, {"oldText": "c", "newText": "c"}]}),
            Err("No changes made to f.txt. The replacements produced identical content."),
            Value::Null,
            None,
        ),
        (
            "legacy",
            "abc\n".to_string(),
            json!({"path": "f.txt", "oldText": "b", "newText": "X"}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": "-1 abc\n+1 aXc", "patch": "--- f.txt\n+++ f.txt\n@@ -1,1 +1,1 @@\n-abc\n+aXc\n", "firstChangedLine": 1}),
            Some("aXc\n".to_string()),
        ),
        (
            "jsonstring",
            "abc\n".to_string(),
            json!({"path": "f.txt", "edits": "[{\"oldText\":\"c\",\"newText\":\"Z\"}]"}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": "-1 abc\n+1 abZ", "patch": "--- f.txt\n+++ f.txt\n@@ -1,1 +1,1 @@\n-abc\n+abZ\n", "firstChangedLine": 1}),
            Some("abZ\n".to_string()),
        ),
        (
            "emptyedits",
            "abc\n".to_string(),
            json!({"path": "f.txt", "edits": []}),
            Err("Edit tool input is invalid. edits must contain at least one replacement."),
            Value::Null,
            None,
        ),
        (
            "wide",
            "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "l1\n", "newText": "first\n"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": "- 1 l1\n+ 1 first\n  2 l2\n  3 l3\n  4 l4\n  5 l5\n    ...", "patch": "--- f.txt\n+++ f.txt\n@@ -1,5 +1,5 @@\n-l1\n+first\n l2\n l3\n l4\n l5\n", "firstChangedLine": 1}),
            Some("first\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\n".to_string()),
        ),
        (
            "cr_only",
            "a\rb\rc".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "b\nc", "newText": "B\nC\nD"}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": " 1 a\n-2 b\n-3 c\n+2 B\n+3 C\n+4 D", "patch": "--- f.txt\n+++ f.txt\n@@ -1,3 +1,4 @@\n a\n-b\n-c\n\\ No newline at end of file\n+B\n+C\n+D\n\\ No newline at end of file\n", "firstChangedLine": 2}),
            Some("a\rB\rC\rD".to_string()),
        ),
        (
            "delete_all",
            "a\nb\n".to_string(),
            json!({"path": "f.txt", "edits": [{"oldText": "a\nb\n", "newText": ""}]}),
            Ok("Successfully replaced 1 block(s) in f.txt."),
            json!({"diff": "-1 a\n-2 b", "patch": "--- f.txt\n+++ f.txt\n@@ -1,2 +0,0 @@\n-a\n-b\n", "firstChangedLine": 1}),
            Some("".to_string()),
        ),
    ]
}

#[tokio::test]
async fn recorded_cases_match_pi() {
    for (name, before, args, expected, details, after) in recorded() {
        let dir = tempfile::tempdir().unwrap();
        let (out, file) = edit(dir.path(), &before, args).await;
        match expected {
            Ok(text) => {
                assert!(!out.is_error, "{name}: {:?}", out.content);
                assert_eq!(join_text(&out.content), text, "{name}");
                assert_eq!(out.details.as_ref(), Some(&details), "{name}");
                assert_eq!(Some(file), after, "{name}");
            }
            Err(text) => {
                assert!(out.is_error, "{name}");
                assert_eq!(join_text(&out.content), text, "{name}");
                assert_eq!(out.details, Some(json!({})), "{name}");
                assert_eq!(file, before, "{name}: file must be untouched");
            }
        }
    }
}

#[tokio::test]
async fn missing_files_and_directories_fail_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    let args = json!({"path": "missing.txt", "edits": [{"oldText": "a", "newText": "b"}]});
    let out = EditTool::new().execute(args, ctx.clone()).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "Could not edit file: missing.txt. Error code: ENOENT.");
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let args = json!({"path": "d", "edits": [{"oldText": "a", "newText": "b"}]});
    let out = EditTool::new().execute(args, ctx).await;
    assert_eq!(join_text(&out.content), "EISDIR: illegal operation on a directory, read");
}

#[tokio::test]
async fn details_keep_pi_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) =
        edit(dir.path(), "alpha\nbeta\n", json!({"path": "f.txt", "edits": [{"oldText": "beta", "newText": "b"}]}))
            .await;
    let keys: Vec<&String> =
        out.details.as_ref().and_then(Value::as_object).map(|m| m.keys().collect()).unwrap_or_default();
    assert_eq!(keys, ["diff", "patch", "firstChangedLine"]);
}

#[test]
fn arguments_are_repaired_like_pi() {
    let legacy = prepare_edit_arguments(json!({"path": "a", "oldText": "x", "newText": "y"}));
    assert_eq!(serde_json::to_string(&legacy).unwrap(), r#"{"path":"a","edits":[{"oldText":"x","newText":"y"}]}"#);
    let both = prepare_edit_arguments(
        json!({"edits": [{"oldText": "1", "newText": "2"}], "path": "a", "oldText": "x", "newText": "y"}),
    );
    assert_eq!(
        serde_json::to_string(&both).unwrap(),
        r#"{"edits":[{"oldText":"1","newText":"2"},{"oldText":"x","newText":"y"}],"path":"a"}"#
    );
    let single = prepare_edit_arguments(json!({"path": "a", "edits": {"oldText": "x", "newText": "y"}}));
    assert_eq!(single["edits"], json!([{"oldText": "x", "newText": "y"}]));
    let string = prepare_edit_arguments(json!({"path": "a", "edits": "{\"oldText\":\"x\",\"newText\":\"y\"}"}));
    assert_eq!(string["edits"], json!([{"oldText": "x", "newText": "y"}]));
    let junk = json!({"path": "a", "edits": "nope"});
    assert_eq!(prepare_edit_arguments(junk.clone()), junk);
    // Idempotent.
    assert_eq!(prepare_edit_arguments(legacy.clone()), legacy);
}

#[tokio::test]
async fn registry_validates_prepared_arguments() {
    let reg = crate::tools::ToolRegistry::builtin();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "abc\n").unwrap();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    let out = reg.run("edit", json!({"path": "f.txt", "oldText": "b", "newText": "X"}), ctx.clone()).await;
    assert!(!out.is_error, "{:?}", out.content);
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "aXc\n");
    let out = reg.run("edit", json!({"path": "f.txt", "edits": "nope"}), ctx).await;
    assert_eq!(
        join_text(&out.content),
        "Validation failed for tool \"edit\":\n  - edits.0: expected object, got string\n\nReceived arguments:\n{\n  \"path\": \"f.txt\",\n  \"edits\": \"nope\"\n}"
    );
}

#[test]
fn line_endings_of_the_original_are_kept() {
    use crate::tools::edit_diff::Replacement;
    let original = "a\r\nb\r\nc\r\n";
    let rep = Replacement { match_index: 2, match_len: 2, new_text: "x\ny\n".into() };
    assert_eq!(apply_to_original(original, &[rep]), "a\r\nx\r\ny\r\nc\r\n");
}
