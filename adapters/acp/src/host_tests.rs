//! The connection against a [`SessionHost`] of the test's own, in process:
//! sessions are opened through the host, routed by id, and handed back to it
//! when closed or when the connection ends — the contract a session registry
//! (`pi serve`) implements.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pi_core::agent::{AgentConfig, SessionStart as CoreStart, SystemPromptOptions, spawn};
use pi_core::config::{ModelRegistry, Settings};
use pi_core::provider::ProviderRegistry;
use pi_core::provider::faux::FauxProvider;
use pi_core::tools::ToolRegistry;
use pi_transport::MessageSink;
use pi_transport::framing::{Record, RecordSource};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::host::{OpenError, Opened, SessionHost, SessionSpec, SessionStart, StoredSession};

#[derive(Default, Clone)]
struct Log {
    opened: Arc<Mutex<Vec<String>>>,
    closed: Arc<Mutex<Vec<String>>>,
}

struct TestHost {
    dir: PathBuf,
    log: Log,
}

impl SessionHost for TestHost {
    fn open(&mut self, spec: SessionSpec) -> impl std::future::Future<Output = Result<Opened, OpenError>> + Send {
        let dir = self.dir.clone();
        let log = self.log.clone();
        async move {
            let id = match spec.start {
                SessionStart::New { session_id } => session_id,
                SessionStart::Load { session_id } | SessionStart::Fork { session_id, .. } => {
                    return Err(OpenError::NotFound(session_id));
                }
            };
            log.opened.lock().unwrap().push(id);
            let mut providers = ProviderRegistry::default();
            providers.register(Arc::new(FauxProvider::default()));
            let config = AgentConfig {
                agent_dir: dir.join("agent"),
                cwd: spec.cwd,
                settings: Settings::default(),
                models: ModelRegistry::default(),
                providers,
                tools: ToolRegistry::builtin(),
                active_tools: Vec::new(),
                session: CoreStart::InMemory,
                session_dir: dir.join("sessions"),
                session_dir_explicit: true,
                provider: None,
                model: None,
                thinking: None,
                api_key: None,
                system_prompt: SystemPromptOptions::default(),
                session_name: None,
                persist_settings: false,
                temp_dir: dir.clone(),
                resources: Default::default(),
                extensions: Default::default(),
                model_scope: Vec::new(),
                mcp: Default::default(),
                client: spec.client,
                session_fence: None,
                catalog_refreshes: None,
            };
            let (handle, outputs) = spawn(config).map_err(|e| OpenError::Failed(e.to_string()))?;
            Ok(Opened { handle, outputs })
        }
    }

    fn stored(&self, _cwd: Option<&std::path::Path>) -> Vec<StoredSession> {
        Vec::new()
    }

    fn closed(&mut self, session_id: &str) {
        self.log.closed.lock().unwrap().push(session_id.to_string());
    }
}

struct Input(mpsc::UnboundedReceiver<String>);

impl RecordSource for Input {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        Ok(self.0.recv().await.map(Ok))
    }
}

struct Output(mpsc::UnboundedSender<Value>);

impl MessageSink for Output {
    async fn send(&self, body: Vec<u8>) -> bool {
        self.0.send(serde_json::from_slice(&body).unwrap()).is_ok()
    }
}

async fn reply(out: &mut mpsc::UnboundedReceiver<Value>, id: u64) -> Value {
    loop {
        let message = out.recv().await.expect("output ended");
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
    }
}

#[tokio::test]
async fn sessions_come_from_the_host_and_go_back_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let host = TestHost { dir: dir.path().to_path_buf(), log: log.clone() };
    let (input, rx) = mpsc::unbounded_channel();
    let (tx, mut out) = mpsc::unbounded_channel();
    let served = tokio::spawn(crate::serve_acp(host, Input(rx), Output(tx), std::future::pending()));
    let send = |v: Value| input.send(v.to_string()).unwrap();
    let cwd = dir.path().display().to_string();

    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    assert_eq!(reply(&mut out, 0).await["result"]["protocolVersion"], 1);
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let first = reply(&mut out, 1).await["result"]["sessionId"].as_str().unwrap().to_string();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": first, "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    assert_eq!(reply(&mut out, 2).await["result"]["stopReason"], "end_turn");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/close", "params": {"sessionId": first}}));
    assert_eq!(reply(&mut out, 3).await["result"], json!({}));
    assert_eq!(*log.closed.lock().unwrap(), std::slice::from_ref(&first));
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/load", "params": {"sessionId": "gone", "cwd": cwd, "mcpServers": []}}),
    );
    assert_eq!(reply(&mut out, 4).await["error"]["code"], -32002);
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let second = reply(&mut out, 5).await["result"]["sessionId"].as_str().unwrap().to_string();

    drop(input);
    assert!(served.await.unwrap(), "every message was written");
    assert_eq!(*log.opened.lock().unwrap(), [first.clone(), second.clone()]);
    assert_eq!(*log.closed.lock().unwrap(), [first, second], "the connection's end hands its sessions back");
}

/// A slow client: every message takes a millisecond to write.
struct Slow(mpsc::UnboundedSender<Value>);

impl MessageSink for Slow {
    async fn send(&self, body: Vec<u8>) -> bool {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        self.0.send(serde_json::from_slice(&body).unwrap()).is_ok()
    }
}

/// A session streams far more than the way out holds to a slow client while
/// bad lines keep coming: the connection's own error replies wait for room
/// like everything else, and the writer, not the reader, makes that room.
#[tokio::test]
async fn a_slow_client_holds_the_connection_back_but_never_locks_it() {
    let dir = tempfile::tempdir().unwrap();
    let host = TestHost { dir: dir.path().to_path_buf(), log: Log::default() };
    let (input, rx) = mpsc::unbounded_channel();
    let (tx, mut out) = mpsc::unbounded_channel();
    let served = tokio::spawn(crate::serve_acp(host, Input(rx), Slow(tx), std::future::pending()));
    let send = |v: Value| input.send(v.to_string()).unwrap();
    let cwd = dir.path().display().to_string();
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let session = reply(&mut out, 1).await["result"]["sessionId"].as_str().unwrap().to_string();
    // The faux model echoes the prompt three words per delta: 1,500 updates.
    let long = "w ".repeat(4500);
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": long}]}}),
    );
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    const BAD: usize = 300;
    for _ in 0..BAD {
        input.send("{bad json".to_string()).unwrap();
    }
    drop(input);
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), served).await;
    assert!(ended.expect("the connection must not lock up").unwrap());
    let mut errors = 0;
    let mut stop = Value::Null;
    while let Ok(message) = out.try_recv() {
        if message["error"]["code"] == -32700 {
            errors += 1;
        }
        if message["id"] == 2 {
            stop = message["result"]["stopReason"].clone();
        }
    }
    assert_eq!((errors, stop), (BAD, json!("end_turn")));
}
