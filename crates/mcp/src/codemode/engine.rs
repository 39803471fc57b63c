//! Running one codemode script in QuickJS (`rquickjs`) on its own thread: no
//! Node APIs, file system, network or timers; 256 MB of memory; a hard
//! deadline and cancellation through QuickJS's interrupt handler. Tool calls
//! and catalog questions go to the async side as [`ScriptRequest`]s.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use rquickjs::{CatchResultExt, Context, Function, Runtime, Value as JsValue};
use serde_json::Value;
use tokio::sync::mpsc;

const PRELUDE: &str = include_str!("prelude.js");
const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// What a script asks of the async side.
pub enum ScriptRequest {
    /// Start a tool call; its completion comes back on the completion channel.
    Call { id: u32, name: String, args: Value },
    /// Start a `models.<op>(...args)` call, answered like a tool call.
    Model { id: u32, op: String, args: Vec<Value> },
    /// Answer at once (catalog, the stored values).
    Sync { op: String, arg: Value, reply: std_mpsc::Sender<Option<Value>> },
}

/// A finished tool call, for the script.
pub struct Completion {
    pub id: u32,
    /// Resolve (true) with the value, or reject with the value as the message.
    pub ok: bool,
    pub value: Value,
}

/// The script's output and how it ended.
#[derive(Debug, Default)]
pub struct ScriptOutcome {
    pub error: Option<String>,
    /// `{type: "text", text}` and `{type: "image", data, mimeType}` items, in order.
    pub items: Vec<Value>,
    pub console: Vec<String>,
    /// `store()` writes in order, one per key: `[key, json]`, or `[key]` deleted.
    pub writes: Vec<Value>,
}

/// Limits and channels of one run.
pub struct ScriptRun {
    pub code: String,
    pub deadline: Option<Instant>,
    /// The `timeout_ms` option, for the timeout message.
    pub timeout_ms: Option<u64>,
    /// Whether the script has the `models` global.
    pub models: bool,
    /// Set when the call is aborted.
    pub stop: Arc<AtomicBool>,
    pub requests: mpsc::UnboundedSender<ScriptRequest>,
    pub completions: std_mpsc::Receiver<Completion>,
}

/// Run the script to its end (blocking; call on a dedicated thread).
pub fn run_script(run: ScriptRun) -> ScriptOutcome {
    match run_inner(run) {
        Ok(outcome) => outcome,
        Err(e) => ScriptOutcome { error: Some(e), ..Default::default() },
    }
}

fn timed_out(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

fn run_inner(run: ScriptRun) -> Result<ScriptOutcome, String> {
    let rt = Runtime::new().map_err(|e| format!("cannot start QuickJS: {e}"))?;
    rt.set_memory_limit(MEMORY_LIMIT);
    rt.set_max_stack_size(1024 * 1024);
    let interrupted = Rc::new(Cell::new(false));
    {
        let (stop, deadline, interrupted) = (run.stop.clone(), run.deadline, interrupted.clone());
        rt.set_interrupt_handler(Some(Box::new(move || {
            let hit = stop.load(Ordering::SeqCst) || timed_out(deadline);
            if hit {
                interrupted.set(true);
            }
            hit
        })));
    }
    let ctx = Context::full(&rt).map_err(|e| format!("cannot start QuickJS: {e}"))?;
    let in_flight = Rc::new(Cell::new(0usize));
    let requests = run.requests.clone();
    let started: Result<(), String> = ctx.with(|ctx| {
        let globals = ctx.globals();
        let (req, flight) = (requests.clone(), in_flight.clone());
        let call = Function::new(ctx.clone(), move |id: u32, name: String, args: String| {
            let args = serde_json::from_str(&args).unwrap_or(Value::Null);
            if req.send(ScriptRequest::Call { id, name, args }).is_ok() {
                flight.set(flight.get() + 1);
            }
        })
        .map_err(|e| e.to_string())?;
        let (req, flight) = (requests.clone(), in_flight.clone());
        let model = Function::new(ctx.clone(), move |id: u32, op: String, args: String| {
            let args = match serde_json::from_str(&args) {
                Ok(Value::Array(args)) => args,
                _ => Vec::new(),
            };
            if req.send(ScriptRequest::Model { id, op, args }).is_ok() {
                flight.set(flight.get() + 1);
            }
        })
        .map_err(|e| e.to_string())?;
        let req = requests.clone();
        let sync = Function::new(ctx.clone(), move |op: String, arg: String| -> String {
            let arg = serde_json::from_str(&arg).unwrap_or(Value::Null);
            let (tx, rx) = std_mpsc::channel();
            if req.send(ScriptRequest::Sync { op, arg, reply: tx }).is_err() {
                return String::new();
            }
            match rx.recv() {
                Ok(Some(v)) => v.to_string(),
                _ => String::new(),
            }
        })
        .map_err(|e| e.to_string())?;
        globals.set("__pi_call", call).map_err(|e| e.to_string())?;
        globals.set("__pi_sync", sync).map_err(|e| e.to_string())?;
        globals.set("__pi_model", model).map_err(|e| e.to_string())?;
        ctx.eval::<(), _>(PRELUDE).catch(&ctx).map_err(|e| format!("prelude: {e}"))?;
        if !run.models {
            ctx.eval::<(), _>("delete globalThis.models;").catch(&ctx).map_err(|e| format!("prelude: {e}"))?;
        }
        let source = format!("(async () => {{{}\n}})().then((v) => __pi_finish(v), (e) => __pi_fail(e));", run.code);
        let mut options = rquickjs::context::EvalOptions::default();
        options.filename = Some("codemode.js".to_string());
        options.strict = false;
        match ctx.eval_with_options::<(), _>(source, options).catch(&ctx) {
            Ok(()) => Ok(()),
            Err(e) => Err(exception_text(e)),
        }
    });
    if let Err(error) = started {
        let error = if interrupted.get() { stop_reason(&run) } else { error };
        return Ok(ScriptOutcome { error: Some(error), ..Default::default() });
    }
    let error = loop {
        // Run every ready job (promise reactions).
        loop {
            match rt.execute_pending_job() {
                Ok(true) => continue,
                Ok(false) => break,
                Err(_) => break,
            }
        }
        if interrupted.get() || run.stop.load(Ordering::SeqCst) || timed_out(run.deadline) {
            break Some(stop_reason(&run));
        }
        let done: Option<Value> = ctx.with(|ctx| {
            let v: JsValue = ctx.globals().get("__pi_done").ok()?;
            if v.is_undefined() {
                return None;
            }
            let json = ctx.json_stringify(v).ok()??;
            serde_json::from_str(&json.to_string().ok()?).ok()
        });
        if let Some(done) = done {
            break done.get("error").and_then(Value::as_str).map(str::to_string);
        }
        if in_flight.get() == 0 {
            break Some("Error: The script is waiting on a promise that can never settle: no tool call is pending, and timers do not exist here.".to_string());
        }
        let wait = match run.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(Duration::from_millis(50)),
            None => Duration::from_millis(50),
        };
        match run.completions.recv_timeout(wait) {
            Ok(c) => {
                in_flight.set(in_flight.get().saturating_sub(1));
                settle(&ctx, c);
                while let Ok(c) = run.completions.try_recv() {
                    in_flight.set(in_flight.get().saturating_sub(1));
                    settle(&ctx, c);
                }
            }
            Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => break Some("Error: the host went away".to_string()),
        }
    };
    // The interrupt flag must not break reading the output.
    run.stop.store(false, Ordering::SeqCst);
    rt.set_interrupt_handler(None);
    let result: Option<Value> = ctx.with(|ctx| {
        let f: Function = ctx.globals().get("__pi_result").ok()?;
        let s: String = f.call(()).ok()?;
        serde_json::from_str(&s).ok()
    });
    let result = result.unwrap_or_default();
    Ok(ScriptOutcome {
        error,
        items: result.get("out").and_then(Value::as_array).cloned().unwrap_or_default(),
        console: result
            .get("console")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        writes: result.get("writes").and_then(Value::as_array).cloned().unwrap_or_default(),
    })
}

fn stop_reason(run: &ScriptRun) -> String {
    match (timed_out(run.deadline), run.timeout_ms) {
        (true, Some(ms)) => format!("Script timed out: Execution timed out after {ms} ms"),
        (true, None) => "Script timed out".to_string(),
        _ => "Operation aborted".to_string(),
    }
}

fn settle(ctx: &Context, c: Completion) {
    ctx.with(|ctx| {
        if let Ok(f) = ctx.globals().get::<_, Function>("__pi_settle") {
            let _ = f.call::<_, ()>((c.id, c.ok, c.value.to_string()));
        }
    });
}

/// An uncaught exception as `Name: message` and its stack.
fn exception_text(error: rquickjs::CaughtError<'_>) -> String {
    match error {
        rquickjs::CaughtError::Exception(e) => {
            let name: String = e.get("name").unwrap_or_else(|_| "Error".to_string());
            let message = e.message().unwrap_or_default();
            let stack = e.stack().unwrap_or_default();
            let head = if message.is_empty() { name } else { format!("{name}: {message}") };
            let stack = stack.trim_end();
            if stack.is_empty() { head } else { format!("{head}\n{stack}") }
        }
        other => other.to_string().trim_end().to_string(),
    }
}
