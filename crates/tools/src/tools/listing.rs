//! The head and tail the listing tools (find, ls) share: the cancelled check,
//! the coerced arguments with the directory and limit, the blocking walk, and
//! the answer (truncated, with pi's notices and details).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::path::resolve_to_cwd;
use super::truncate::{DEFAULT_MAX_BYTES, Limits, Truncation, format_size, truncate_head};
use super::validate::coerce;
use super::{ToolContext, ToolOutput};

/// pi's result of a call cancelled before or while it ran.
pub(crate) fn aborted() -> ToolOutput {
    ToolOutput::error("Operation aborted")
}

/// A listing call's arguments, coerced to the tool's schema.
pub(crate) struct ListingArgs {
    pub args: Value,
    /// `path` (`.` when absent or empty) resolved against the cwd.
    pub dir: PathBuf,
    /// `limit` floored, at least 1 (`default_limit` when absent).
    pub limit: usize,
}

/// The arguments of a call; `None` when it is already cancelled ([`aborted`]).
pub(crate) fn listing_args(
    parameters: &Value,
    args: Value,
    ctx: &ToolContext,
    default_limit: f64,
) -> Option<ListingArgs> {
    if ctx.cancel.is_cancelled() {
        return None;
    }
    let args = coerce(parameters, args);
    let path = args.get("path").and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or(".");
    let dir = resolve_to_cwd(path, &ctx.cwd);
    let limit = args.get("limit").and_then(Value::as_f64).unwrap_or(default_limit).floor().max(1.0) as usize;
    Some(ListingArgs { args, dir, limit })
}

/// Run `walk` off the async threads and `finish` what it found; its error
/// text as an error result, and "Operation aborted" when the call was
/// cancelled meanwhile.
pub(crate) async fn walk_blocking<T: Send + 'static>(
    ctx: &ToolContext,
    walk: impl FnOnce() -> Result<T, String> + Send + 'static,
    finish: impl FnOnce(T) -> ToolOutput,
) -> ToolOutput {
    let result = tokio::task::spawn_blocking(walk).await;
    if ctx.cancel.is_cancelled() {
        return aborted();
    }
    match result {
        Ok(Ok(found)) => finish(found),
        Ok(Err(message)) => ToolOutput::error(message),
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// A listing cut at its `limit`: the notice, and the details key that records the limit.
pub(crate) struct LimitHit {
    pub notice: String,
    pub detail: &'static str,
}

/// The answer for a listing's `text`: truncated to pi's byte limit, with the
/// notices of the limit hit and of the truncation, and their details.
pub(crate) fn listing_output(text: &str, limit: usize, limit_hit: Option<LimitHit>) -> ToolOutput {
    let t = truncate_head(text, Limits::bytes_only());
    let mut notices = Notices::default();
    if let Some(hit) = limit_hit {
        notices.add(hit.notice, hit.detail, json!(limit));
    }
    notices.add_truncation(&t);
    notices.finish(t.content)
}

/// The notices pi appends to a search tool's text (`\n\n[first. second]`),
/// each recorded under its key in the result's details.
#[derive(Default)]
pub(crate) struct Notices {
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Notices {
    pub fn add(&mut self, notice: String, key: &str, value: Value) {
        self.notices.push(notice);
        self.details.insert(key.into(), value);
    }

    /// The byte-limit notice, when the text was cut.
    pub fn add_truncation(&mut self, t: &Truncation) {
        if t.truncated {
            self.add(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)), "truncation", t.to_value());
        }
    }

    /// `text` with the notices appended, and the details (none when no notice).
    pub fn finish(self, mut text: String) -> ToolOutput {
        if !self.notices.is_empty() {
            text.push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        let mut out = ToolOutput::text(text);
        if !self.details.is_empty() {
            out.details = Some(Value::Object(self.details));
        }
        out
    }
}
