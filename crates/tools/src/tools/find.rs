//! The `find` tool: files and directories matching a glob, found the way pi's
//! `fd` invocation finds them (hidden entries included, .gitignore/.ignore/
//! .fdignore honoured, `.git` skipped, smart case, a pattern with `/` matched
//! against the path relative to the search directory), listed relative to it
//! with `/` after directories, capped at the result limit and 50KB.

use std::path::Path;
use std::sync::OnceLock;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::listing::{LimitHit, ListingArgs, aborted, listing_args, listing_output, walk_blocking};
use super::operations::Ops;
use super::{Tool, ToolContext, ToolOutput};

const DESCRIPTION: &str = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).";
const DEFAULT_LIMIT: f64 = 1000.0;

/// The `find` tool.
pub struct FindTool {
    /// The arguments' JSON Schema, built when first asked for (not at start).
    parameters: OnceLock<Value>,
}

impl FindTool {
    pub fn new() -> Self {
        FindTool { parameters: OnceLock::new() }
    }
}

impl Default for FindTool {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `path` lies inside a git work tree (`.git` in it or an ancestor).
fn inside_git_repo(path: &Path) -> bool {
    path.ancestors().any(|p| p.join(".git").exists())
}

/// How the glob is matched.
enum Target {
    /// File name only (no `/` in the pattern).
    Name,
    /// Path relative to the search directory.
    Relative,
    /// Absolute path (absolute pattern).
    Absolute,
}

/// Results within the limit (relative paths) and whether more existed.
struct Found {
    results: Vec<String>,
    limit_reached: bool,
}

fn find(root: &Path, pattern: &str, limit: usize, cancel: &CancellationToken) -> Result<Found, String> {
    if !root.is_dir() {
        return Err(format!(
            "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
            root.display()
        ));
    }
    let mut pattern = pattern;
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    let target = if !pattern.contains('/') {
        Target::Name
    } else if Path::new(pattern).is_absolute() {
        Target::Absolute
    } else {
        Target::Relative
    };
    // fd's smart case: an all-lowercase pattern matches case-insensitively.
    let ignore_case = pattern == pattern.to_lowercase();
    let matcher: GlobMatcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|e| format!("[fd error]: {e}"))?
        .compile_matcher();

    let mut overrides = OverrideBuilder::new(root);
    overrides.add("!.git").map_err(|e| e.to_string())?;
    let mut walk = WalkBuilder::new(root);
    walk.hidden(false)
        .require_git(inside_git_repo(root))
        .add_custom_ignore_filename(".fdignore")
        .overrides(overrides.build().map_err(|e| e.to_string())?)
        .sort_by_file_name(|a, b| a.cmp(b));

    let mut results = Vec::new();
    let mut limit_reached = false;
    for entry in walk.build() {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(path);
        let matched = match target {
            Target::Name => entry.file_name().to_str().is_some_and(|n| matcher.is_match(n)),
            Target::Relative => matcher.is_match(rel),
            Target::Absolute => matcher.is_match(path),
        };
        if !matched {
            continue;
        }
        if results.len() == limit {
            limit_reached = true;
            break;
        }
        let mut shown = rel.to_string_lossy().replace('\\', "/");
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            shown.push('/');
        }
        results.push(shown);
    }
    Ok(Found { results, limit_reached })
}

fn format_found(found: Found, limit: usize) -> ToolOutput {
    if found.results.is_empty() {
        return ToolOutput::text("No files found matching pattern");
    }
    let limit_hit = found.limit_reached.then(|| LimitHit {
        notice: format!("{limit} results limit reached. Use limit={} for more, or refine pattern", limit * 2),
        detail: "resultLimitReached",
    });
    listing_output(&found.results.join("\n"), limit, limit_hit)
}

/// `find` through an extension's `glob` operation (pi's `FindOperations`):
/// one result past the limit tells "exactly N" from "more than N".
async fn find_through(ops: &Ops<'_>, root: &Path, pattern: &str, limit: usize) -> ToolOutput {
    match ops.exists(root).await {
        Ok(true) => {}
        Ok(false) => return ToolOutput::error(format!("Path not found: {}", root.display())),
        Err(e) => return ToolOutput::error(e.message()),
    }
    let ignore = ["**/node_modules/**", "**/.git/**"];
    let results = match ops.glob(pattern, root, &ignore, limit + 1).await {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e.message()),
    };
    if ops.cancel.is_cancelled() {
        return aborted();
    }
    if results.is_empty() {
        return ToolOutput::text("No files found matching pattern");
    }
    let limit_reached = results.len() > limit;
    let shown: Vec<String> = results.iter().take(limit).map(|p| relative_to(p, root)).collect();
    let limit_hit = limit_reached
        .then(|| LimitHit { notice: format!("{limit} results limit reached"), detail: "resultLimitReached" });
    listing_output(&shown.join("\n"), limit, limit_hit)
}

/// A found path as shown: relative to the search root when absolute, `/`-separated, keeping a trailing `/`.
fn relative_to(found: &str, root: &Path) -> String {
    let trailing = found.ends_with('/');
    let path = Path::new(found);
    let shown = if path.is_absolute() { pathdiff(path, root) } else { found.to_string() };
    if trailing && !shown.ends_with('/') { format!("{shown}/") } else { shown }
}

/// `path` relative to `base` (both absolute), as node's `path.relative` gives it.
fn pathdiff(path: &Path, base: &Path) -> String {
    let p: Vec<_> = path.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), b.len() - common).collect();
    parts.extend(p[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

#[async_trait]
impl Tool for FindTool {
    fn name(&self) -> &str {
        "find"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> &Value {
        self.parameters.get_or_init(schema)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let Some(ListingArgs { args, dir: root, limit }) = listing_args(self.parameters(), args, &ctx, DEFAULT_LIMIT)
        else {
            return aborted();
        };
        let pattern = args.get("pattern").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(ops) = ctx.ops().filter(|o| o.ops.supplies("glob")) {
            return find_through(&ops, &root, &pattern, limit).await;
        }
        let cancel = ctx.cancel.clone();
        walk_blocking(&ctx, move || find(&root, &pattern, limit, &cancel), |found| format_found(found, limit)).await
    }
}

/// The arguments' JSON Schema (pi's).
fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},
            "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
            "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::join_text;

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for d in [".git/info", "src/sub", "ignored", ".hidden", "Docs"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        for (f, body) in [
            ("src/main.rs", "fn main() {}\n"),
            ("src/sub/notes.txt", "notes\n"),
            ("ignored/x.txt", "x\n"),
            (".gitignore", "ignored/\n*.log\n"),
            ("a.log", "log\n"),
            (".hidden/h.txt", "h\n"),
            (".git/info/exclude.txt", "git internals\n"),
            ("ctx.txt", "c\n"),
            ("Docs/Readme.MD", "r\n"),
        ] {
            std::fs::write(p.join(f), body).unwrap();
        }
        dir
    }

    async fn find_tool(dir: &Path, args: Value) -> ToolOutput {
        FindTool::new().execute(args, ToolContext::new(dir.to_path_buf())).await
    }

    #[tokio::test]
    async fn names_match_at_any_depth_respecting_gitignore_and_skipping_git() {
        let dir = fixture();
        let out = find_tool(dir.path(), json!({"pattern": "*.txt"})).await;
        assert!(!out.is_error);
        assert_eq!(join_text(&out.content), ".hidden/h.txt\nctx.txt\nsrc/sub/notes.txt");
        assert_eq!(out.details, None);
    }

    #[tokio::test]
    async fn directories_get_a_trailing_slash_and_path_patterns_are_anchored() {
        let dir = fixture();
        let out = find_tool(dir.path(), json!({"pattern": "src"})).await;
        assert_eq!(join_text(&out.content), "src/");
        let out = find_tool(dir.path(), json!({"pattern": "src/**"})).await;
        assert_eq!(join_text(&out.content), "src/main.rs\nsrc/sub/\nsrc/sub/notes.txt");
        let out = find_tool(dir.path(), json!({"pattern": "./src/*.rs"})).await;
        assert_eq!(join_text(&out.content), "src/main.rs");
        let out = find_tool(dir.path(), json!({"pattern": "sub/*.txt"})).await;
        assert_eq!(join_text(&out.content), "No files found matching pattern");
        let out = find_tool(dir.path(), json!({"pattern": "**/sub/*.txt"})).await;
        assert_eq!(join_text(&out.content), "src/sub/notes.txt");
        let out = find_tool(dir.path(), json!({"pattern": "*.rs", "path": "src"})).await;
        assert_eq!(join_text(&out.content), "main.rs");
    }

    #[tokio::test]
    async fn smart_case_like_fd() {
        let dir = fixture();
        let out = find_tool(dir.path(), json!({"pattern": "*.md"})).await;
        assert_eq!(join_text(&out.content), "Docs/Readme.MD");
        let out = find_tool(dir.path(), json!({"pattern": "*.Md"})).await;
        assert_eq!(join_text(&out.content), "No files found matching pattern");
    }

    #[tokio::test]
    async fn limit_reached_notice_and_details() {
        let dir = fixture();
        let out = find_tool(dir.path(), json!({"pattern": "*", "limit": 2})).await;
        assert_eq!(
            join_text(&out.content),
            ".gitignore\n.hidden/\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
        );
        assert_eq!(out.details, Some(json!({"resultLimitReached": 2})));
        let out = find_tool(dir.path(), json!({"pattern": "*.txt", "limit": 3})).await;
        assert_eq!(out.details, None);
    }

    #[tokio::test]
    async fn missing_search_path_fails_like_fd() {
        let dir = fixture();
        let out = find_tool(dir.path(), json!({"pattern": "*.txt", "path": "nope"})).await;
        assert!(out.is_error);
        assert_eq!(
            join_text(&out.content),
            format!(
                "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
                dir.path().join("nope").display()
            )
        );
    }

    #[tokio::test]
    async fn gitignore_applies_only_inside_a_repository_or_outside_with_no_require_git() {
        // Outside a repository pi passes --no-require-git: .gitignore still applies.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "skip.txt\n").unwrap();
        std::fs::write(dir.path().join("skip.txt"), "").unwrap();
        std::fs::write(dir.path().join("keep.txt"), "").unwrap();
        let out = find_tool(dir.path(), json!({"pattern": "*.txt"})).await;
        assert_eq!(join_text(&out.content), "keep.txt");
    }

    #[test]
    fn schema_and_description_match_pi() {
        let tool = FindTool::new();
        assert_eq!(
            serde_json::to_string(tool.parameters()).unwrap(),
            r#"{"type":"object","required":["pattern"],"properties":{"pattern":{"type":"string","description":"Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},"path":{"type":"string","description":"Directory to search in (default: current directory)"},"limit":{"type":"number","description":"Maximum number of results (default: 1000)"}}}"#
        );
        assert_eq!(tool.description(), DESCRIPTION);
    }
}
