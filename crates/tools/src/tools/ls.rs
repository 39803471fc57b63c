//! The `ls` tool: a directory's entries (dotfiles included, `/` after
//! directories) sorted case-insensitively in the order JavaScript's
//! `localeCompare` gives, capped at the entry limit and 50KB.
//!
//! Like pi, `ls` lists everything in the directory; ignore files do not apply.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::OnceLock;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::listing::{LimitHit, ListingArgs, aborted, listing_args, listing_output, walk_blocking};
use super::operations::Ops;
use super::path::node_fs_error;
use super::{Tool, ToolContext, ToolOutput};

const DESCRIPTION: &str = "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first).";
const DEFAULT_LIMIT: f64 = 500.0;

/// ASCII in the order of ICU's root collation (what `localeCompare` uses).
const ASCII_ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

/// The primary collation weight of a (lowercased) character.
fn primary_weight(c: char) -> u32 {
    if let Some(i) = ASCII_ORDER.find(c) {
        return i as u32;
    }
    // Accented Latin letters sort with their base letter.
    let decomposed = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd().normalize_iter(std::iter::once(c)).next();
    match decomposed {
        Some(base) if base != c && base.is_ascii() => primary_weight(base),
        _ => 0x1000 + c as u32,
    }
}

/// Case-insensitive comparison approximating `a.toLowerCase().localeCompare(b.toLowerCase())`.
pub fn locale_compare(a: &str, b: &str) -> Ordering {
    let (la, lb) = (a.to_lowercase(), b.to_lowercase());
    let ka = la.chars().map(primary_weight);
    let kb = lb.chars().map(primary_weight);
    ka.cmp(kb).then_with(|| la.cmp(&lb))
}

/// The `ls` tool.
pub struct LsTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
}

impl LsTool {
    pub fn new() -> Self {
        LsTool { parameters: OnceLock::new() }
    }
}

impl Default for LsTool {
    fn default() -> Self {
        Self::new()
    }
}

fn list(dir: &Path, limit: usize) -> Result<ToolOutput, String> {
    let meta = std::fs::metadata(dir).map_err(|_| format!("Path not found: {}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("Not a directory: {}", dir.display()));
    }
    let read = std::fs::read_dir(dir)
        .map_err(|e| format!("Cannot read directory: {}", node_fs_error(&e, "scandir", Some(dir))))?;
    let mut names: Vec<String> =
        read.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort_by(|a, b| locale_compare(a, b));
    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        // Entries that cannot be stat'ed (broken links) are skipped.
        let Ok(m) = std::fs::metadata(dir.join(&name)) else { continue };
        results.push(if m.is_dir() { format!("{name}/") } else { name });
    }
    Ok(listing(&results, limit, limit_reached))
}

/// The tool's answer for the entries listed (with a `/` on directories).
fn listing(results: &[String], limit: usize, limit_reached: bool) -> ToolOutput {
    if results.is_empty() {
        return ToolOutput::text("(empty directory)");
    }
    let limit_hit = limit_reached.then(|| LimitHit {
        notice: format!("{limit} entries limit reached. Use limit={} for more", limit * 2),
        detail: "entryLimitReached",
    });
    listing_output(&results.join("\n"), limit, limit_hit)
}

/// `ls` through an extension's operations (pi's `LsOperations`).
async fn list_through(ops: &Ops<'_>, dir: &Path, limit: usize) -> Result<ToolOutput, String> {
    if !ops.exists(dir).await.map_err(|e| e.message())? {
        return Err(format!("Path not found: {}", dir.display()));
    }
    if !ops.stat_is_directory(dir).await.map_err(|e| e.message())? {
        return Err(format!("Not a directory: {}", dir.display()));
    }
    let mut names = ops.readdir(dir).await.map_err(|e| format!("Cannot read directory: {}", e.message()))?;
    names.sort_by(|a, b| locale_compare(a, b));
    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        match ops.stat_is_directory(&dir.join(&name)).await {
            Ok(true) => results.push(format!("{name}/")),
            Ok(false) => results.push(name),
            Err(super::operations::OperationError::Aborted) => return Err("Operation aborted".to_string()),
            Err(_) => continue,
        }
    }
    Ok(listing(&results, limit, limit_reached))
}

#[async_trait]
impl Tool for LsTool {
    fn name(&self) -> &str {
        "ls"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> &Value {
        self.parameters.get_or_init(schema)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let Some(ListingArgs { dir, limit, .. }) = listing_args(self.parameters(), args, &ctx, DEFAULT_LIMIT) else {
            return aborted();
        };
        if let Some(ops) = ctx.ops() {
            return match list_through(&ops, &dir, limit).await {
                Ok(out) => out,
                Err(message) => ToolOutput::error(message),
            };
        }
        walk_blocking(&ctx, move || list(&dir, limit), |out| out).await
    }
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to list (default: current directory)"},
            "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::join_text;

    async fn ls(dir: &Path, args: Value) -> ToolOutput {
        LsTool::new().execute(args, ToolContext::new(dir.to_path_buf())).await
    }

    #[test]
    fn sorting_follows_locale_compare() {
        // Orders recorded from node's localeCompare.
        let mut names = vec!["a1", "a10", "a2", "a-b", "ab", "a_b", "a.b", "a b"];
        names.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(names, ["a b", "a_b", "a-b", "a.b", "a1", "a10", "a2", "ab"]);
        let mut names = vec!["b", "\u{e4}", "a", "z", "\u{e9}", "e", "f"];
        names.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(names, ["a", "\u{e4}", "b", "e", "\u{e9}", "f", "z"]);
        let mut names = vec!["README.md", ".env", "_config", "src", "Cargo.toml", "cargo.lock"];
        names.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(names, ["_config", ".env", "cargo.lock", "Cargo.toml", "README.md", "src"]);
    }

    #[tokio::test]
    async fn lists_dotfiles_and_marks_directories_ignoring_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::write(p.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(p.join("ignored.txt"), "").unwrap();
        std::fs::write(p.join("Zeta.md"), "").unwrap();
        std::os::unix::fs::symlink(p.join("missing"), p.join("broken")).unwrap();
        let out = ls(p, json!({})).await;
        assert!(!out.is_error);
        assert_eq!(join_text(&out.content), ".git/\n.gitignore\nignored.txt\nsrc/\nZeta.md");
        assert_eq!(out.details, None);
    }

    #[tokio::test]
    async fn limits_empty_directories_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir(p.join("empty")).unwrap();
        for n in ["a", "b", "c"] {
            std::fs::write(p.join(n), "").unwrap();
        }
        let out = ls(p, json!({"limit": 2})).await;
        assert_eq!(join_text(&out.content), "a\nb\n\n[2 entries limit reached. Use limit=4 for more]");
        assert_eq!(out.details, Some(json!({"entryLimitReached": 2})));
        let out = ls(p, json!({"path": "empty"})).await;
        assert_eq!(join_text(&out.content), "(empty directory)");
        let out = ls(p, json!({"path": "nope"})).await;
        assert_eq!(join_text(&out.content), format!("Path not found: {}", p.join("nope").display()));
        let out = ls(p, json!({"path": "a"})).await;
        assert_eq!(join_text(&out.content), format!("Not a directory: {}", p.join("a").display()));
        assert!(out.is_error);
    }

    #[test]
    fn schema_and_description_match_pi() {
        let tool = LsTool::new();
        assert_eq!(
            serde_json::to_string(tool.parameters()).unwrap(),
            r#"{"type":"object","properties":{"path":{"type":"string","description":"Directory to list (default: current directory)"},"limit":{"type":"number","description":"Maximum number of entries to return (default: 500)"}}}"#
        );
        assert_eq!(tool.description(), DESCRIPTION);
    }
}
