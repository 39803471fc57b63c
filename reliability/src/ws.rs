//! The WebSocket fuzzer: the stdio fuzzer's records sent to `pi serve`, one
//! message per frame (invalid UTF-8 in a raw text frame, sometimes a binary
//! frame), with random disconnects and reconnects by `?session=ID&afterSeq=N`.
//!
//! Held for every connection: every request is answered exactly once
//! (nothing unasked, notifications never), before a planned disconnect all
//! owed answers arrive within [`ANSWER_WAIT`] while the connection is open,
//! answers to reads come in the order of their requests and no error
//! overtakes the answer to an earlier read, event numbers strictly increase, and a
//! reconnect is answered at once with its `lastSeq` and no gap, then events
//! numbered after `afterSeq` only. Each connection keeps a frame log,
//! written to `target/reliability/` when its case fails.
//!
//! ACP (`?protocol=acp`) has no connect-time attach: its cases open two
//! sessions with the stdio fuzzer's opening, and a reconnect `initialize`s
//! again and `session/load`s both (their history replayed as notifications).
//! Like an editor, the fuzzer answers the agent's requests to it (file
//! reads, permissions, terminals), with an error: a prompt waiting on its
//! client would otherwise never be answered.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::acp_inputs::OPENING_IDS;
use crate::agent::{Agent, Sandbox};
use crate::check;
use crate::fuzz::{CaseFailure, CaseStats};
use crate::inputs::{self, Dialect, Expect};
use crate::rng::Rng;

/// How long owed answers may take on a live connection.
const ANSWER_WAIT: Duration = Duration::from_secs(15);

/// Commands that only read the session: the core answers them as they
/// come, while a command that changes it may wait behind a run's abort or a
/// compaction (so only these are held to the order of their requests).
const READS: &[&str] = &[
    "get_state",
    "get_messages",
    "get_session_stats",
    "get_commands",
    "get_last_assistant_text",
    "get_fork_messages",
    "get_tree",
    "get_entries",
    "get_available_thinking_levels",
    "getState",
    "getMessages",
    "getSessionStats",
    "getCommands",
    "getLastAssistantText",
    "getForkMessages",
    "getTree",
    "getEntries",
    "getAvailableThinkingLevels",
];

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One received frame.
enum Received {
    Text(String),
    Binary,
    Closed(Option<(u16, String)>),
}

/// One connection of a case and what it was owed.
struct Conn {
    number: usize,
    sink: futures::stream::SplitSink<Socket, Message>,
    frames: mpsc::UnboundedReceiver<(Instant, Received)>,
    log: Vec<String>,
    expects: Vec<Expect>,
    outputs: Vec<Vec<u8>>,
    /// Requests owed an answer, in the order sent: (raw id, quick command).
    owed: Vec<(String, bool)>,
    answered: HashMap<String, usize>,
    last_seq: Option<u64>,
    closed: Option<Option<(u16, String)>>,
    /// Messages that may be answered without an id (unreadable, anonymous):
    /// how many owed requests were sent before each, and the id it may carry.
    marks: std::collections::VecDeque<(usize, Option<String>)>,
    /// The next text frame is the connect-time attach answer.
    greeting: Option<u64>,
    /// A session switch was sent whose answer cannot be told (a notification,
    /// a mutated message): the numbering seen may be another session's.
    blind: bool,
    /// The connection before this one was blind: its `afterSeq` may not
    /// be this session's (a gap is then no fault).
    after_blind: bool,
    /// Attached with such an `afterSeq` (its gap let pass), and no number
    /// of this session seen since: the next connection's is that one too.
    foreign_after: bool,
    /// ACP: the ids of the agent's requests to this client, not answered yet.
    client_requests: Vec<String>,
    problems: Vec<String>,
}

struct Case {
    dialect: Dialect,
    started: Instant,
    url: String,
    session: Option<String>,
    conns: Vec<Conn>,
    /// ACP: the sandbox's working directory and the opening's two sessions.
    cwd: String,
    acp_sessions: [String; 2],
}

fn elapsed(started: Instant, at: Instant) -> String {
    format!("{:>9.3}", at.duration_since(started).as_secs_f64())
}

fn shorten(text: &str) -> String {
    let mut out: String = text.chars().take(300).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The raw id of an answer (its JSON text as written), and whether the message is an answer at all.
fn answer_id(dialect: Dialect, item: &RawValue) -> Option<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(borrow, default)]
        method: Option<&'a RawValue>,
        #[serde(borrow, default)]
        jsonrpc: Option<&'a RawValue>,
    }
    let head: Head = serde_json::from_str(item.get()).ok()?;
    let is_answer = match dialect {
        Dialect::Native => head.kind.as_deref() == Some("response"),
        _ => head.method.is_none() && head.jsonrpc.is_some(),
    };
    is_answer.then(|| head.id.map(RawValue::get).filter(|id| *id != "null").map(str::to_owned))
}

/// Members of a message read without going deeper than needed.
#[derive(serde::Deserialize)]
struct Numbers<'a> {
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default, rename = "lastSeq")]
    last_seq: Option<u64>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

fn numbers(raw: &RawValue) -> Option<Numbers<'_>> {
    serde_json::from_str(raw.get()).ok()
}

fn seq_of(dialect: Dialect, item: &RawValue) -> Option<u64> {
    let top = numbers(item)?;
    match dialect {
        Dialect::Native => top.seq,
        _ => numbers(top.params?)?.seq,
    }
}

/// The raw id of a request the agent sent its client (ACP), if `item` is one.
fn client_request_id(item: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(default)]
        method: Option<String>,
    }
    let head: Head = serde_json::from_str(item.get()).ok()?;
    head.method?;
    head.id.map(|id| id.get().to_owned())
}

/// The `lastSeq` an answer reports (an attach: new or switched session).
fn reported_last_seq(item: &RawValue) -> Option<u64> {
    let top = numbers(item)?;
    numbers(top.data.or(top.result)?)?.last_seq
}

impl Conn {
    async fn open(case: &Case, query: &str, greeting: Option<u64>) -> Result<Conn, String> {
        let url = format!("{}{query}", case.url);
        let (socket, _) = tokio::time::timeout(Duration::from_secs(10), tokio_tungstenite::connect_async(&url))
            .await
            .map_err(|_| format!("connecting to {url} timed out"))?
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        let (sink, mut stream) = socket.split();
        let (tx, frames) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let item = match stream.next().await {
                    Some(Ok(Message::Text(text))) => Received::Text(text.as_str().to_owned()),
                    Some(Ok(Message::Binary(_))) => Received::Binary,
                    Some(Ok(Message::Close(frame))) => {
                        Received::Closed(frame.map(|f| (u16::from(f.code), f.reason.as_str().to_owned())))
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => Received::Closed(None),
                };
                let last = matches!(item, Received::Closed(_));
                if tx.send((Instant::now(), item)).is_err() || last {
                    return;
                }
            }
        });
        let number = case.conns.len() + 1;
        let mut conn = Conn {
            number,
            sink,
            frames,
            log: vec![format!("connection {number}: {url}")],
            expects: Vec::new(),
            outputs: Vec::new(),
            owed: Vec::new(),
            answered: HashMap::new(),
            last_seq: None,
            closed: None,
            marks: Default::default(),
            greeting,
            blind: false,
            after_blind: false,
            foreign_after: false,
            client_requests: Vec::new(),
            problems: Vec::new(),
        };
        if greeting.is_some() {
            conn.log.push("(expecting the connect-time attach answer)".into());
        }
        Ok(conn)
    }

    async fn send(&mut self, started: Instant, bytes: &[u8], expects: Vec<Expect>, binary: bool) {
        let text = std::str::from_utf8(bytes);
        let message = match (binary, text) {
            (true, _) => Message::Binary(bytes.to_vec().into()),
            (false, Ok(text)) => Message::Text(text.into()),
            (false, Err(_)) => Message::Frame(Frame::message(bytes.to_vec(), OpCode::Data(Data::Text), true)),
        };
        let kind = if binary {
            "binary"
        } else if text.is_ok() {
            "text"
        } else {
            "text (invalid UTF-8)"
        };
        self.log.push(format!(
            "{} > {kind} {}    owed: {expects:?}",
            elapsed(started, Instant::now()),
            shorten(&String::from_utf8_lossy(bytes))
        ));
        // A batch is answered when its slowest member is.
        let quick = serde_json::from_slice::<Value>(bytes).ok().is_some_and(|v| {
            let name = v.get("type").or_else(|| v.get("method")).and_then(Value::as_str).unwrap_or("");
            v.is_object() && READS.contains(&name)
        });
        let text_of = String::from_utf8_lossy(bytes);
        // A switch sent as (or in a batch with) a part whose answer cannot be
        // told: a notification, a mutated message.
        if (text_of.contains("new_session") || text_of.contains("newSession"))
            && (expects.is_empty() || expects.iter().any(|e| !matches!(e, Expect::Reply(_))))
        {
            self.blind = true;
        }
        let maybe = expects.iter().find_map(|e| if let Expect::MaybeReply(id) = e { Some(id.clone()) } else { None });
        for expect in &expects {
            match expect {
                Expect::Reply(id) => self.owed.push((id.clone(), quick)),
                Expect::Broken | Expect::Anonymous => self.marks.push_back((self.owed.len(), maybe.clone())),
                Expect::MaybeReply(_) | Expect::Silent => {}
            }
        }
        self.expects.extend(expects);
        if let Err(e) = self.sink.send(message).await {
            self.log.push(format!("{} ! send failed: {e}", elapsed(started, Instant::now())));
        }
    }

    /// Take in the frames already received.
    fn drain(&mut self, dialect: Dialect, started: Instant) {
        while let Ok((at, item)) = self.frames.try_recv() {
            self.take(dialect, started, at, item);
        }
    }

    fn take(&mut self, dialect: Dialect, started: Instant, at: Instant, item: Received) {
        let text = match item {
            Received::Text(text) => text,
            Received::Binary => {
                self.log.push(format!("{} < binary", elapsed(started, at)));
                self.problems.push("the server sent a binary frame".into());
                return;
            }
            Received::Closed(frame) => {
                self.log.push(format!("{} < close {frame:?}", elapsed(started, at)));
                self.closed = Some(frame);
                return;
            }
        };
        self.log.push(format!("{} < {}", elapsed(started, at), shorten(&text)));
        // Read as raw JSON: a session tree nests deeper than a parsed value may.
        let raw = match serde_json::from_str::<&RawValue>(&text) {
            Ok(raw) => raw,
            Err(e) => {
                self.problems.push(format!("a frame is not JSON ({e}): {}", shorten(&text)));
                return;
            }
        };
        if let Some(after) = self.greeting.take() {
            let value = serde_json::from_str::<Value>(raw.get()).unwrap_or_default();
            self.check_greeting(dialect, &value, after);
            return;
        }
        let items: Vec<&RawValue> = if raw.get().starts_with('[') && dialect != Dialect::Native {
            serde_json::from_str(raw.get()).unwrap_or_default()
        } else {
            vec![raw]
        };
        for item in items {
            if dialect == Dialect::Acp
                && let Some(id) = client_request_id(item)
            {
                self.client_requests.push(id);
            }
            if let Some(seq) = seq_of(dialect, item) {
                if self.last_seq.is_some_and(|last| seq <= last) {
                    self.problems.push(format!("event seq {seq} after {:?}: lost order or a duplicate", self.last_seq));
                }
                self.last_seq = Some(seq);
                self.foreign_after = false;
            }
            if let Some(id) = answer_id(dialect, item) {
                if let Some(last) = reported_last_seq(item) {
                    // A new or switched session: its numbering goes on from here.
                    self.last_seq = Some(last);
                    self.foreign_after = false;
                }
                self.check_order(id.as_deref());
            }
        }
        self.outputs.push(text.into_bytes());
    }

    fn check_greeting(&mut self, dialect: Dialect, value: &Value, after: u64) {
        let (answer, data) = match dialect {
            Dialect::Native => (
                value.get("type").and_then(Value::as_str) == Some("response")
                    && value.get("id").is_none()
                    && value.get("success") == Some(&Value::Bool(true)),
                value.get("data"),
            ),
            _ => (value.get("id") == Some(&Value::Null) && value.get("result").is_some(), value.get("result")),
        };
        let data = data.cloned().unwrap_or_default();
        if !answer || data.get("lastSeq").and_then(Value::as_u64).is_none() {
            self.problems.push(format!("the first frame after a reconnect is not the attach answer: {value}"));
            return;
        }
        if data.get("gap") != Some(&Value::Bool(false)) {
            if self.after_blind {
                self.foreign_after = true;
            } else {
                self.problems.push(format!("reconnect with afterSeq={after} reported a gap: {data}"));
            }
        }
        self.last_seq = Some(after);
    }

    /// An answer came: every quick request sent before it must have been answered already.
    fn check_order(&mut self, id: Option<&str>) {
        let Some(id) = id else {
            // An answer without id (an unreadable or anonymous message): it
            // belongs to the oldest such message not accounted for, or a later one.
            let Some((before, _)) = self.marks.pop_front() else { return };
            if let Some((open, _)) =
                self.owed[..before].iter().find(|(open, quick)| *quick && !self.answered.contains_key(open))
            {
                let open = open.clone();
                self.problems.push(format!("an answer without id overtook the answer to request {open}"));
            }
            return;
        };
        // A mutated message answered with its id will not be answered without
        // one; but an answer first settles a request owed with that id (ids
        // repeat: a batch's member and a later mutated message may share one).
        let owed_with_id = self.owed.iter().filter(|(owed, _)| owed == id).count();
        let answered_before = self.answered.get(id).copied().unwrap_or(0);
        if answered_before >= owed_with_id
            && let Some(at) = self.marks.iter().position(|(_, maybe)| maybe.as_deref() == Some(id))
        {
            self.marks.remove(at);
        }
        *self.answered.entry(id.to_string()).or_default() += 1;
        let position = self.owed.iter().position(|(owed, _)| owed == id);
        if let Some(position) = position
            && let Some((open, _)) =
                self.owed[..position].iter().find(|(open, quick)| *quick && !self.answered.contains_key(open))
            && self.owed[position].1
        {
            let open = open.clone();
            self.problems.push(format!("the answer to {id} overtook the answer to {open}"));
        }
    }

    /// Requests owed an answer and not answered yet.
    fn unanswered(&self) -> Vec<String> {
        self.owed.iter().filter(|(id, _)| !self.answered.contains_key(id)).map(|(id, _)| id.clone()).collect()
    }

    /// Answer the agent's requests to this client (ACP), with an error.
    async fn answer_client(&mut self, started: Instant) {
        for id in std::mem::take(&mut self.client_requests) {
            let text = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"not offered by the fuzzer"}}}}"#
            );
            self.log.push(format!("{} > text {text}    (answering the agent)", elapsed(started, Instant::now())));
            if let Err(e) = self.sink.send(Message::Text(text.into())).await {
                self.log.push(format!("{} ! send failed: {e}", elapsed(started, Instant::now())));
            }
        }
    }

    /// Wait until every owed request is answered (or the connection closed, or the time is up).
    async fn settle(&mut self, dialect: Dialect, started: Instant, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            self.drain(dialect, started);
            self.answer_client(started).await;
            if self.unanswered().is_empty() {
                return true;
            }
            if self.closed.is_some() {
                return false;
            }
            match tokio::time::timeout_at(deadline, self.frames.recv()).await {
                Ok(Some((at, item))) => self.take(dialect, started, at, item),
                Ok(None) => return false,
                Err(_) => return false,
            }
        }
    }

    /// Wait for the server's close (after a frame that ends the connection).
    async fn await_close(&mut self, dialect: Dialect, started: Instant) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.closed.is_none() {
            match tokio::time::timeout_at(deadline, self.frames.recv()).await {
                Ok(Some((at, item))) => self.take(dialect, started, at, item),
                _ => break,
            }
        }
    }

    /// The violations of this connection's output against what it was owed.
    fn verdict(&mut self, dialect: Dialect) {
        match check::answers(dialect, &self.outputs) {
            Ok(answers) => self.problems.extend(check::violations(dialect, &self.expects, &answers)),
            Err(e) => self.problems.push(e),
        }
    }
}

/// The frame body of one generated record (the stdio framing taken off).
fn body(bytes: &[u8]) -> &[u8] {
    bytes.strip_suffix(b"\n").unwrap_or(bytes)
}

/// Run one case: `records` messages over several connections to one `pi serve`.
pub async fn run_case(pi: &Path, dialect: Dialect, seed: u64, records: usize) -> Result<CaseStats, CaseFailure> {
    let mut rng = Rng::new(seed.wrapping_mul(97).wrapping_add(dialect as u64 + 11));
    let fail = |problems: Vec<String>, saved: Option<PathBuf>| CaseFailure {
        dialect,
        seed,
        records,
        problems,
        saved_input: saved,
        command: "ws",
    };
    let sb = Sandbox::new().map_err(|e| fail(vec![format!("sandbox: {e}")], None))?;
    let settings = serde_json::json!({"retry": {"baseDelayMs": 5, "maxRetries": 2}});
    sb.configure(&settings, None).map_err(|e| fail(vec![format!("sandbox: {e}")], None))?;
    let script = sb.path("faux.jsonl");
    std::fs::write(&script, inputs::faux_script(&mut rng)).map_err(|e| fail(vec![format!("sandbox: {e}")], None))?;
    let args = vec![
        "--faux-script".to_string(),
        script.display().to_string(),
        "--session-dir".to_string(),
        sb.path("sessions").display().to_string(),
    ];
    let mut server =
        Agent::spawn_serve(pi, &sb, &args).map_err(|e| fail(vec![format!("cannot start pi serve: {e}")], None))?;
    let url = match server.next(Duration::from_secs(30)).await {
        Some(line) => String::from_utf8_lossy(&line).trim().to_string(),
        None => return Err(fail(vec![format!("pi serve printed no address: {}", server.stderr())], None)),
    };
    let mut case = Case {
        dialect,
        started: Instant::now(),
        url,
        session: None,
        conns: Vec::new(),
        cwd: sb.path("cwd").display().to_string(),
        acp_sessions: [String::new(), String::new()],
    };
    let outcome = drive(&mut case, &mut rng, records).await;
    let mut problems = Vec::new();
    if let Err(e) = outcome {
        problems.push(e);
    }
    for conn in &mut case.conns {
        conn.verdict(dialect);
        problems.extend(conn.problems.iter().map(|p| format!("connection {}: {p}", conn.number)));
    }
    let stderr = server.stderr();
    for marker in ["panicked at", "overflowed its stack", "fatal runtime error"] {
        if let Some(line) = stderr.lines().find(|l| l.contains(marker)) {
            problems.push(format!("stderr: {line}"));
        }
    }
    let _ = server.child.start_kill();
    let _ = server.child.wait().await;
    let output_records = case.conns.iter().map(|c| c.outputs.len()).sum();
    let stats = CaseStats { records, bytes: 0, output_records, peak_rss_kib: 0 };
    if problems.is_empty() { Ok(stats) } else { Err(fail(problems, save_logs(&case, seed, &stderr))) }
}

fn save_logs(case: &Case, seed: u64, stderr: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/reliability");
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("ws-{}-{seed}.log", case.dialect.name()));
    let mut text = String::new();
    for conn in &case.conns {
        text.push_str(&conn.log.join("\n"));
        text.push_str("\n\n");
    }
    text.push_str("server stderr:\n");
    text.push_str(stderr);
    std::fs::write(&path, text).ok()?;
    Some(path)
}

/// The query of a (re)connect for the dialect.
fn query(dialect: Dialect, session: Option<(&str, u64)>) -> String {
    let protocol = match dialect {
        Dialect::Native => "",
        Dialect::Acp => return "?protocol=acp".into(),
        _ => "protocol=jsonrpc",
    };
    match session {
        Some((id, after)) => {
            let sep = if protocol.is_empty() { "" } else { "&" };
            format!("?session={id}&afterSeq={after}{sep}{protocol}")
        }
        None if protocol.is_empty() => String::new(),
        None => format!("?{protocol}"),
    }
}

/// The state request sent before a planned disconnect (its answer names the session).
fn state_request(dialect: Dialect, n: usize) -> (String, String) {
    let id = format!("\"ws-state-{n}\"");
    let text = match dialect {
        Dialect::Native => format!(r#"{{"id":{id},"type":"get_state"}}"#),
        _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getState"}}"#),
    };
    (text, id)
}

fn session_of(dialect: Dialect, conn: &Conn, id: &str) -> Option<String> {
    conn.outputs.iter().rev().find_map(|out| {
        let raw: &RawValue = serde_json::from_slice(out).ok()?;
        (answer_id(dialect, raw)?.as_deref() == Some(id)).then_some(())?;
        let value: Value = serde_json::from_slice(out).ok()?;
        let data = value.get("data").or_else(|| value.get("result"))?;
        data.get("sessionId").and_then(Value::as_str).map(str::to_owned)
    })
}

/// The frames of a record that holds several lines (ACP's opening), each
/// with what it is owed.
fn frames_of(bytes: &[u8], expects: Vec<Expect>) -> Vec<(Vec<u8>, Vec<Expect>)> {
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    if lines.len() != expects.len() {
        return vec![(body(bytes).to_vec(), expects)];
    }
    lines.into_iter().zip(expects).map(|(line, expect)| (line.to_vec(), vec![expect])).collect()
}

/// ACP: open the two sessions the records name (a fresh connection), or
/// load them again (a reconnect).
async fn acp_open(case: &mut Case, index: usize, load: bool) -> Result<(), String> {
    let (dialect, started) = (case.dialect, case.started);
    let opening = crate::acp_inputs::opening();
    let mut frames = frames_of(&opening.bytes, opening.expects);
    if load {
        for (frame, (id, session)) in frames.iter_mut().skip(1).zip(OPENING_IDS.iter().zip(&case.acp_sessions)) {
            let text = serde_json::json!({"jsonrpc": "2.0", "id": serde_json::from_str::<Value>(id).unwrap_or_default(),
                "method": "session/load", "params": {"sessionId": session, "cwd": case.cwd, "mcpServers": []}});
            frame.0 = text.to_string().into_bytes();
        }
    }
    let conn = &mut case.conns[index];
    for (bytes, expects) in frames {
        let bytes = crate::acp_inputs::fill(&bytes, &case.cwd, &case.acp_sessions);
        conn.send(started, &bytes, expects, false).await;
    }
    if !conn.settle(dialect, started, ANSWER_WAIT * 2).await {
        return Err(format!("the ACP opening was not answered: {}", conn.unanswered().join(", ")));
    }
    if !load {
        for (slot, id) in case.acp_sessions.iter_mut().zip(OPENING_IDS) {
            *slot = session_of(dialect, conn, id).ok_or("the opening's session/new made no session")?;
        }
    }
    Ok(())
}

/// Send the records, disconnecting and reconnecting at random.
async fn drive(case: &mut Case, rng: &mut Rng, records: usize) -> Result<(), String> {
    let dialect = case.dialect;
    let started = case.started;
    let first = Conn::open(case, &query(dialect, None), None).await?;
    case.conns.push(first);
    let mut conn_index = 0;
    if dialect == Dialect::Acp {
        acp_open(case, conn_index, false).await?;
    } else {
        let opening = inputs::opening(dialect);
        case.conns[conn_index].send(started, body(&opening.bytes), opening.expects, false).await;
    }
    for n in 0..records {
        let record = inputs::record(rng, dialect, n);
        let mut bytes = body(&record.bytes).to_vec();
        if dialect == Dialect::Acp {
            bytes = crate::acp_inputs::fill(&bytes, &case.cwd, &case.acp_sessions);
        }
        let invalid = std::str::from_utf8(&bytes).is_err();
        let disconnect = rng.chance(2);
        if disconnect || invalid {
            let conn = &mut case.conns[conn_index];
            // Everything owed arrives while the connection is open.
            if !conn.settle(dialect, started, ANSWER_WAIT).await && conn.closed.is_none() {
                let missing = conn.unanswered();
                conn.problems.push(format!(
                    "{} requests unanswered within {} s on a live connection: {}",
                    missing.len(),
                    ANSWER_WAIT.as_secs(),
                    missing.join(", ")
                ));
                return Err("requests unanswered on a live connection".into());
            }
            if dialect != Dialect::Acp {
                let (text, id) = state_request(dialect, n);
                conn.send(started, text.as_bytes(), vec![Expect::Reply(id.clone())], false).await;
                conn.settle(dialect, started, ANSWER_WAIT).await;
                case.session = session_of(dialect, conn, &id).or(case.session.take());
            }
            if disconnect && !invalid {
                conn_index = reconnect(case, conn_index).await?;
            }
        }
        let binary = !invalid && rng.chance(1);
        let expects = if binary { binary_expects(&record.expects) } else { record.expects };
        let conn = &mut case.conns[conn_index];
        conn.send(started, &bytes, expects, binary).await;
        if invalid {
            // An error reply, then close 1007.
            conn.await_close(dialect, started).await;
            match &conn.closed {
                Some(Some((1007, _))) => {}
                other => conn.problems.push(format!("invalid UTF-8: closed with {other:?}, not 1007")),
            }
        }
        conn.drain(dialect, started);
        conn.answer_client(started).await;
        if !invalid && let Some(frame) = &conn.closed {
            let frame = frame.clone();
            conn.problems.push(format!("the server closed the connection: {frame:?}"));
        }
        if conn.closed.is_some() {
            conn_index = reconnect(case, conn_index).await?;
        }
    }
    let closing = inputs::closing(dialect);
    let conn = &mut case.conns[conn_index];
    conn.send(started, body(&closing.bytes), closing.expects, false).await;
    if !conn.settle(dialect, started, ANSWER_WAIT * 2).await && conn.closed.is_none() {
        let missing = conn.unanswered();
        conn.problems.push(format!("{} requests unanswered at the end: {}", missing.len(), missing.join(", ")));
    }
    let _ = conn.sink.close().await;
    conn.await_close(dialect, started).await;
    Ok(())
}

/// Close connection `index` and open the next one, attached by
/// `?session=ID&afterSeq=N` when the session is known.
async fn reconnect(case: &mut Case, index: usize) -> Result<usize, String> {
    let (dialect, started) = (case.dialect, case.started);
    let conn = &mut case.conns[index];
    let after = conn.last_seq;
    let _ = conn.sink.close().await;
    conn.await_close(dialect, started).await;
    if dialect == Dialect::Acp {
        let next = Conn::open(case, &query(dialect, None), None).await?;
        case.conns.push(next);
        let index = case.conns.len() - 1;
        acp_open(case, index, true).await?;
        return Ok(index);
    }
    let blind = conn.blind || conn.foreign_after;
    let target = case.session.clone().zip(after);
    let greeting = target.as_ref().map(|(_, after)| *after);
    let mut next = Conn::open(case, &query(dialect, target.as_ref().map(|(s, a)| (s.as_str(), *a))), greeting).await?;
    next.after_blind = blind;
    case.conns.push(next);
    let index = case.conns.len() - 1;
    if target.is_none() {
        let opening = inputs::opening(dialect);
        case.conns[index].send(started, body(&opening.bytes), opening.expects, false).await;
    }
    Ok(index)
}

/// A binary frame is refused whole: one error without a usable id, whatever it held.
fn binary_expects(expects: &[Expect]) -> Vec<Expect> {
    if expects.is_empty() { Vec::new() } else { vec![Expect::Broken] }
}

/// Run `cases` cases per dialect (or until `seconds`), `jobs` at a time.
pub async fn run(
    pi: &Path,
    dialects: &[Dialect],
    first_seed: u64,
    records: usize,
    cases: Option<usize>,
    seconds: Option<u64>,
    jobs: usize,
) -> crate::fuzz::Totals {
    // WebSocket has no `Content-Length` framing (LSP): one message per frame.
    let dialects: Vec<Dialect> =
        dialects.iter().copied().filter(|d| matches!(d, Dialect::Native | Dialect::JsonRpc | Dialect::Acp)).collect();
    let plan = crate::fuzz::Plan { dialects: &dialects, first_seed, cases, seconds, jobs };
    let pi = pi.to_path_buf();
    crate::fuzz::run_plan(plan, move |dialect, seed| {
        let pi = pi.clone();
        async move { run_case(&pi, dialect, seed, records).await }
    })
    .await
}
