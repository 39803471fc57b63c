//! Tests of argument coercion and validation (expected results recorded from pi 1.6.0).

use serde_json::{Value, json};

use super::*;
use crate::tools::ToolRegistry;

/// (tool, arguments as JSON, coerced arguments as JSON or pi's error text).
fn recorded() -> Vec<(&'static str, &'static str, Result<&'static str, &'static str>)> {
    vec![
        (
            "bash",
            "{\"cmd\": \"x\"}",
            Err(
                "Validation failed for tool \"bash\":\n  - command: missing\n\nReceived arguments:\n{\n  \"cmd\": \"x\"\n}",
            ),
        ),
        ("bash", "{\"command\": 5}", Ok("{\"command\": \"5\"}")),
        ("bash", "{\"command\": null}", Ok("{\"command\": \"null\"}")),
        ("bash", "{\"command\": \"ls\", \"timeout\": \"30\"}", Ok("{\"command\": \"ls\", \"timeout\": 30}")),
        (
            "bash",
            "{\"command\": \"ls\", \"timeout\": \"abc\"}",
            Err(
                "Validation failed for tool \"bash\":\n  - timeout: expected number, got string\n\nReceived arguments:\n{\n  \"command\": \"ls\",\n  \"timeout\": \"abc\"\n}",
            ),
        ),
        ("bash", "{\"command\": \"ls\", \"timeout\": null}", Ok("{\"command\": \"ls\"}")),
        ("bash", "{\"command\": \"ls\", \"timeout\": \"\"}", Ok("{\"command\": \"ls\", \"timeout\": 0}")),
        ("bash", "{\"command\": \"ls\", \"timeout\": true}", Ok("{\"command\": \"ls\", \"timeout\": 1}")),
        (
            "bash",
            "{\"command\": \"ls\", \"timeout\": [1]}",
            Err(
                "Validation failed for tool \"bash\":\n  - timeout: expected number, got array\n\nReceived arguments:\n{\n  \"command\": \"ls\",\n  \"timeout\": [\n    1\n  ]\n}",
            ),
        ),
        (
            "bash",
            "{\"command\": [\"a\"]}",
            Err(
                "Validation failed for tool \"bash\":\n  - command: expected string, got array\n\nReceived arguments:\n{\n  \"command\": [\n    \"a\"\n  ]\n}",
            ),
        ),
        (
            "bash",
            "{\"command\": {\"a\": 1}}",
            Err(
                "Validation failed for tool \"bash\":\n  - command: expected string, got object\n\nReceived arguments:\n{\n  \"command\": {\n    \"a\": 1\n  }\n}",
            ),
        ),
        ("bash", "{\"command\": 1.5, \"timeout\": 1}", Ok("{\"command\": \"1.5\", \"timeout\": 1}")),
        (
            "edit",
            "{\"path\": \"a\", \"edits\": {\"oldText\": \"a\", \"newText\": \"b\"}}",
            Ok("{\"path\": \"a\", \"edits\": [{\"oldText\": \"a\", \"newText\": \"b\"}]}"),
        ),
        (
            "edit",
            "{\"path\": \"a\", \"edits\": [{\"oldText\": \"a\"}]}",
            Err(
                "Validation failed for tool \"edit\":\n  - edits.0.newText: missing\n\nReceived arguments:\n{\n  \"path\": \"a\",\n  \"edits\": [\n    {\n      \"oldText\": \"a\"\n    }\n  ]\n}",
            ),
        ),
        (
            "edit",
            "{\"path\": \"a\", \"edits\": [{\"oldText\": \"a\", \"newText\": 1, \"extra\": 2}]}",
            Ok("{\"path\": \"a\", \"edits\": [{\"oldText\": \"a\", \"newText\": \"1\", \"extra\": 2}]}"),
        ),
        (
            "edit",
            "{\"path\": \"a\", \"edits\": \"nope\"}",
            Err(
                "Validation failed for tool \"edit\":\n  - edits.0: expected object, got string\n\nReceived arguments:\n{\n  \"path\": \"a\",\n  \"edits\": \"nope\"\n}",
            ),
        ),
        (
            "edit",
            "{\"path\": \"a\"}",
            Err(
                "Validation failed for tool \"edit\":\n  - edits: missing\n\nReceived arguments:\n{\n  \"path\": \"a\"\n}",
            ),
        ),
        (
            "edit",
            "{}",
            Err(
                "Validation failed for tool \"edit\":\n  - path: missing\n  - edits: missing\n\nReceived arguments:\n{}",
            ),
        ),
        (
            "read",
            "{\"path\": \"a\", \"offset\": \"0x10\", \"limit\": \" 12 \"}",
            Ok("{\"path\": \"a\", \"offset\": 16, \"limit\": 12}"),
        ),
        (
            "read",
            "{\"path\": \"a\", \"offset\": \"1e3\", \"limit\": \"Infinity\"}",
            Err(
                "Validation failed for tool \"read\":\n  - limit: expected number, got string\n\nReceived arguments:\n{\n  \"path\": \"a\",\n  \"offset\": \"1e3\",\n  \"limit\": \"Infinity\"\n}",
            ),
        ),
        (
            "read",
            "{\"path\": \"a\", \"offset\": \"12n\", \"limit\": \"12.7\"}",
            Ok("{\"path\": \"a\", \"offset\": 12, \"limit\": 12.7}"),
        ),
        (
            "grep",
            "{\"pattern\": \"x\", \"ignoreCase\": \"yes\", \"literal\": \"TRUE\", \"context\": false}",
            Err(
                "Validation failed for tool \"grep\":\n  - ignoreCase: expected boolean, got string\n\nReceived arguments:\n{\n  \"pattern\": \"x\",\n  \"ignoreCase\": \"yes\",\n  \"literal\": \"TRUE\",\n  \"context\": false\n}",
            ),
        ),
        (
            "grep",
            "{\"pattern\": \"x\", \"ignoreCase\": 1, \"literal\": \"0\"}",
            Ok("{\"pattern\": \"x\", \"ignoreCase\": true, \"literal\": false}"),
        ),
        (
            "ls",
            "[]",
            Err("Validation failed for tool \"ls\":\n  - root: expected object, got array\n\nReceived arguments:\n[]"),
        ),
        (
            "ls",
            "\"str\"",
            Err(
                "Validation failed for tool \"ls\":\n  - root: expected object, got string\n\nReceived arguments:\n\"str\"",
            ),
        ),
        (
            "ls",
            "null",
            Err("Validation failed for tool \"ls\":\n  - root: expected object, got null\n\nReceived arguments:\nnull"),
        ),
        ("write", "{\"path\": \"a/b\", \"content\": 1e+21}", Ok("{\"path\": \"a/b\", \"content\": \"1e+21\"}")),
        ("write", "{\"path\": \"a/b\", \"content\": 0.1}", Ok("{\"path\": \"a/b\", \"content\": \"0.1\"}")),
        (
            "write",
            "{\"path\": \"a\\tb\\u0001\", \"content\": \"x\\\"y\\\\z\"}",
            Ok("{\"path\": \"a\\tb\\u0001\", \"content\": \"x\\\"y\\\\z\"}"),
        ),
        (
            "read",
            "{\"path\": \"a\", \"offset\": 1.5e-07, \"limit\": 0}",
            Ok("{\"path\": \"a\", \"offset\": 1.5e-07, \"limit\": 0}"),
        ),
        ("find", "{\"pattern\": null}", Ok("{\"pattern\": \"null\"}")),
        (
            "grep",
            "{\"pattern\": \"x\", \"context\": \"2\", \"limit\": null}",
            Ok("{\"pattern\": \"x\", \"context\": 2}"),
        ),
        ("ls", "{\"path\": 7, \"limit\": \"5\"}", Ok("{\"path\": \"7\", \"limit\": 5}")),
    ]
}

#[test]
fn recorded_cases_match_pi() {
    let reg = ToolRegistry::builtin();
    for (tool, args, expected) in recorded() {
        let schema = reg.get(tool).unwrap().parameters().clone();
        let args: Value = serde_json::from_str(args).unwrap();
        let got = coerce_and_validate(tool, &schema, &args);
        match expected {
            Ok(value) => {
                let value: Value = serde_json::from_str(value).unwrap();
                assert_eq!(got.as_ref(), Ok(&value), "{tool} {args}");
            }
            Err(text) => assert_eq!(got, Err(text.to_string()), "{tool} {args}"),
        }
    }
}

#[test]
fn registry_reports_validation_failures_as_error_outputs() {
    let reg = ToolRegistry::builtin();
    let err = reg.prepare("bash", &json!({"cmd": "x"})).err().unwrap();
    assert!(err.is_error);
    assert_eq!(err.details, Some(json!({})));
    assert_eq!(
        crate::message::join_text(&err.content),
        "Validation failed for tool \"bash\":\n  - command: missing\n\nReceived arguments:\n{\n  \"cmd\": \"x\"\n}"
    );
    let err = reg.prepare("nonexistent_tool", &json!({})).err().unwrap();
    assert_eq!(crate::message::join_text(&err.content), "Tool nonexistent_tool not found");
    let (_, args) = reg.prepare_call("read", json!({"path": "a", "offset": "3"})).ok().unwrap();
    assert_eq!(args, json!({"path": "a", "offset": 3}));
}

#[test]
fn generic_schema_keywords_are_explained() {
    let schema = json!({
        "type": "object",
        "required": ["mode"],
        "additionalProperties": false,
        "properties": {
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
            "kind": {"anyOf": [{"type": "string"}, {"type": "number"}]}
        }
    });
    let errors = |v: Value| -> Vec<(String, String)> {
        schema_errors(&schema, &v).into_iter().map(|e| (e.path, e.message)).collect()
    };
    assert_eq!(errors(json!({"mode": "fast"})), vec![]);
    assert_eq!(
        errors(json!({"mode": "medium", "n": 9, "tags": ["a", "b", "c"], "name": "X", "extra": 1, "kind": {}})),
        vec![
            ("/mode".to_string(), "expected one of [\"fast\",\"slow\"]".to_string()),
            ("/n".to_string(), "expected <= 5".to_string()),
            ("/tags".to_string(), "expected at most 2 items".to_string()),
            ("/name".to_string(), "expected at least 2 characters".to_string()),
            ("/name".to_string(), "expected to match ^[a-z]+$".to_string()),
            ("/kind".to_string(), "expected string, got object".to_string()),
            ("/extra".to_string(), "unknown field".to_string()),
        ]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "n": 2.5})),
        vec![("/n".to_string(), "expected integer, got number".to_string())]
    );
}

#[test]
fn coercion_is_idempotent() {
    let reg = ToolRegistry::builtin();
    let schema = reg.get("edit").unwrap().parameters().clone();
    let once = coerce(&schema, json!({"path": 1, "edits": {"oldText": 2, "newText": true}}));
    assert_eq!(once, json!({"path": "1", "edits": [{"oldText": "2", "newText": "true"}]}));
    assert_eq!(coerce(&schema, once.clone()), once);
}

#[test]
fn javascript_number_and_json_formatting() {
    let cases = [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (0.1, "0.1"),
        (1.5e-7, "1.5e-7"),
        (1e21, "1e+21"),
        (123456789012345680000.0, "123456789012345680000"),
        (-2.5, "-2.5"),
        (1e-6, "0.000001"),
        (f64::NAN, "NaN"),
    ];
    for (x, s) in cases {
        assert_eq!(js_number_string(x), s);
    }
    assert_eq!(js_stringify_pretty(&json!({})), "{}");
    assert_eq!(
        js_stringify_pretty(&json!({"a": [1, {"b": null}], "c": "q\"\u{1}"})),
        "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": \"q\\\"\\u0001\"\n}"
    );
    assert_eq!(js_string_to_number(" 0x1f "), 31.0);
    assert_eq!(js_string_to_number(""), 0.0);
    assert!(js_string_to_number("12abc").is_nan());
    assert!(js_string_to_number("inf").is_nan());
    assert_eq!(js_string_to_number("-Infinity"), f64::NEG_INFINITY);
}

#[test]
fn builtin_specs_match_pi() {
    // `{name, description, parameters}` of pi 1.6.0's tool definitions, in its order.
    let recorded = [
        r#"{"name":"read","description":"Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.","parameters":{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"Path to the file to read (relative or absolute)"},"offset":{"type":"number","description":"Line number to start reading from (1-indexed)"},"limit":{"type":"number","description":"Maximum number of lines to read"}}}}"#,
        r#"{"name":"bash","description":"Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.","parameters":{"type":"object","required":["command"],"properties":{"command":{"type":"string","description":"Shell command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}}}}"#,
        r#"{"name":"powershell","description":"Execute a PowerShell command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.","parameters":{"type":"object","required":["command"],"properties":{"command":{"type":"string","description":"Shell command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}}}}"#,
        r#"{"name":"edit","description":"Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.","parameters":{"type":"object","required":["path","edits"],"properties":{"path":{"type":"string","description":"Path to the file to edit (relative or absolute)"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{"oldText":{"type":"string","description":"Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},"newText":{"type":"string","description":"Replacement text for this targeted edit."}}},"description":"One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."}}}}"#,
        r#"{"name":"write","description":"Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.","parameters":{"type":"object","required":["path","content"],"properties":{"path":{"type":"string","description":"Path to the file to write (relative or absolute)"},"content":{"type":"string","description":"Content to write to the file"}}}}"#,
        r#"{"name":"grep","description":"Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.","parameters":{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"Search pattern (regex or literal string)"},"path":{"type":"string","description":"Directory or file to search (default: current directory)"},"glob":{"type":"string","description":"Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},"ignoreCase":{"type":"boolean","description":"Case-insensitive search (default: false)"},"literal":{"type":"boolean","description":"Treat pattern as literal string instead of regex (default: false)"},"context":{"type":"number","description":"Number of lines to show before and after each match (default: 0)"},"limit":{"type":"number","description":"Maximum number of matches to return (default: 100)"}}}}"#,
        r#"{"name":"find","description":"Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).","parameters":{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},"path":{"type":"string","description":"Directory to search in (default: current directory)"},"limit":{"type":"number","description":"Maximum number of results (default: 1000)"}}}}"#,
        r#"{"name":"ls","description":"List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first).","parameters":{"type":"object","properties":{"path":{"type":"string","description":"Directory to list (default: current directory)"},"limit":{"type":"number","description":"Maximum number of entries to return (default: 500)"}}}}"#,
    ];
    let reg = ToolRegistry::builtin();
    let mut names: Vec<&str> = reg.names().collect();
    names.sort_by_key(|n| recorded.iter().position(|r| r.contains(&format!("\"name\":\"{n}\""))));
    for (line, name) in recorded.iter().zip(names) {
        let spec = reg.get(name).unwrap().spec();
        let ours = serde_json::to_string(
            &json!({"name": spec.name, "description": spec.description, "parameters": spec.parameters}),
        )
        .unwrap();
        assert_eq!(&ours, line);
    }
}

#[test]
fn compiled_schemas_are_reused_with_the_same_outcome() {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tag": {"$ref": "#/$defs/tag"}},
        "required": ["n"],
        "$defs": {"tag": {"type": "string", "pattern": "^cache-test-[a-z]+$"}}
    });
    let bad = json!({"n": "x", "tag": "cache-test-1"});
    let first = coerce_and_validate("t", &schema, &bad);
    assert!(compiled::is_shared(&schema));
    // A second check of an equal schema (another value, same text) gives the same answers.
    let copy: Value = serde_json::from_str(&schema.to_string()).unwrap();
    assert_eq!(coerce_and_validate("t", &copy, &bad), first);
    assert_eq!(
        coerce_and_validate("t", &copy, &json!({"n": 2, "tag": "cache-test-a"})),
        Ok(json!({"n": 2, "tag": "cache-test-a"}))
    );
    assert!(first.unwrap_err().contains("  - n: expected integer, got string"));
}

/// The cost of a check with and without the process-wide cache; prints figures, asserts nothing timed.
/// `cargo test -p pi-tools --release validate_cost -- --ignored --nocapture`
#[test]
#[ignore]
#[allow(clippy::print_stdout)] // the figures are this measurement's output
fn validate_cost() {
    let reg = ToolRegistry::builtin();
    let schema = reg.get("edit").unwrap().parameters().clone();
    let args = json!({"path": "a.txt", "edits": [{"oldText": "a", "newText": "b"}]});
    let rounds = 200;
    let started = std::time::Instant::now();
    for i in 0..rounds {
        // A schema text not seen before: compiled as every call did without the cache.
        let mut fresh = schema.clone();
        fresh["description"] = json!(format!("validate_cost {i}"));
        assert!(coerce_and_validate("edit", &fresh, &args).is_ok());
    }
    let uncached = started.elapsed() / rounds;
    assert!(coerce_and_validate("edit", &schema, &args).is_ok());
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        assert!(coerce_and_validate("edit", &schema, &args).is_ok());
    }
    let cached = started.elapsed() / rounds;
    println!("edit tool check: compiled every call {uncached:?}, cached {cached:?} (mean of {rounds})");
}
