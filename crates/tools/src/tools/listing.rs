//! The head and tail the listing tools (find, ls) share: the cancelled check,
//! the coerced arguments with the directory and limit, and the blocking walk.

use std::path::PathBuf;

use serde_json::Value;

use super::path::resolve_to_cwd;
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
