//! A script's `models.*` calls on the async side: catalog questions answer at
//! once; `classify()` and `generateImages()` run as nested calls with rows in
//! `details.calls` (the model only, never prompts or image data), at most
//! four at a time, their usage summed into the tool result's.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::engine::Completion;
use super::models::ModelStep;
use super::{ERROR_PREVIEW_CHARS, Session, preview};
use crate::message::Usage;

/// Model calls one script may have in flight; more wait in call order.
const MAX_CONCURRENT_MODEL_CALLS: usize = 4;

/// The model calls of one script run.
pub(super) struct ModelCalls {
    limit: Semaphore,
    count: AtomicUsize,
    usage: Mutex<Option<Usage>>,
    images: AtomicUsize,
}

impl Default for ModelCalls {
    fn default() -> Self {
        ModelCalls {
            limit: Semaphore::new(MAX_CONCURRENT_MODEL_CALLS),
            count: AtomicUsize::new(0),
            usage: Mutex::new(None),
            images: AtomicUsize::new(0),
        }
    }
}

/// What the script gets: `{v}` (no `v`: undefined).
fn answer(id: u32, value: Option<Value>) -> Completion {
    let value = match value {
        Some(v) => json!({"v": v}),
        None => json!({}),
    };
    Completion { id, ok: true, value }
}

impl Session<'_> {
    /// One `models.<op>(...args)` call of the script.
    pub(super) async fn model(&self, id: u32, op: String, args: Vec<Value>, cancel: CancellationToken) -> Completion {
        let host = match self.tool.models_host().await {
            Ok(host) => host,
            Err(message) => return Completion { id, ok: false, value: json!(message) },
        };
        let (call, early) = match host.step(&op, &args, &cancel) {
            ModelStep::Done(Ok(value)) => return answer(id, value),
            ModelStep::Done(Err(message)) => return Completion { id, ok: false, value: json!(message) },
            ModelStep::Call(call, early) => (call, early),
        };
        let n = self.models.count.fetch_add(1, Ordering::SeqCst) + 1;
        let row = self.begin_call(
            format!("{}/{}/{n}", self.ctx.tool_call_id, call.name),
            call.name.to_string(),
            call.label.clone(),
        );
        let images = call.name == "models.generateImages";
        let result = {
            let _slot = self.models.limit.acquire().await;
            match early {
                Some(result) => result,
                None => call.run().await,
            }
        };
        if images {
            let shown = result["output"].as_array().map_or(0, |o| o.iter().filter(|b| b["type"] == "image").count());
            self.models.images.fetch_add(shown, Ordering::SeqCst);
        }
        let usage: Option<Usage> = result.get("usage").and_then(|u| serde_json::from_value(u.clone()).ok());
        let status = match result["stopReason"].as_str() {
            Some("stop") => "ok",
            Some("aborted") => "cancelled",
            _ => "error",
        };
        let error = result["errorMessage"].as_str().map(|e| preview(e, ERROR_PREVIEW_CHARS));
        self.end_call(row, status, error, result.pointer("/usage/cost/total").and_then(Value::as_f64));
        if let Some(usage) = usage
            && let Ok(mut total) = self.models.usage.lock()
        {
            total.get_or_insert_with(Usage::default).add(&usage);
        }
        self.publish();
        answer(id, Some(result))
    }

    /// The script's model usage, for the tool result.
    pub(super) fn model_usage(&self) -> Option<Usage> {
        self.models.usage.lock().ok().and_then(|u| u.clone())
    }

    /// pi's note when generated images were not shown with `image()`.
    pub(super) fn unshown_images_note(&self, shown: bool) -> Option<String> {
        let n = self.models.images.load(Ordering::SeqCst);
        (n > 0 && !shown).then(|| {
            format!(
                "Note: models.generateImages() returned {n} image{} that the script did not show. Show each image block of result.output with image(block).",
                if n == 1 { "" } else { "s" }
            )
        })
    }
}
