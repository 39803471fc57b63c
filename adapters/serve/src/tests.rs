//! The registry and hubs driven directly (no socket): one connection
//! addressing several sessions by id at once, each with its own queue —
//! the shape an ACP connection (`sessionId` on every call) needs — and
//! the registry's create / look up / list / close by id.

use std::sync::Arc;
use std::time::Duration;

use pi_core::agent::{AgentConfig, Output, SessionStart, SystemPromptOptions};
use pi_core::config::{ModelRegistry, Settings};
use pi_core::error::ErrorKind;
use pi_core::event::AgentEvent;
use pi_core::op::{Op, Reply};
use pi_core::provider::ProviderRegistry;
use pi_core::provider::faux::FauxProvider;
use pi_core::tools::ToolRegistry;
use tokio::sync::mpsc;

use crate::hub::{ConnHandle, HubOptions, Kick, Queued, actor_tag};
use crate::registry::{Registry, RegistryOptions};

fn registry(dir: &std::path::Path) -> Arc<Registry> {
    registry_with(dir, FauxProvider::default())
}

fn registry_with(dir: &std::path::Path, faux: FauxProvider) -> Arc<Registry> {
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(faux));
    let template = AgentConfig {
        agent_dir: dir.join("agent"),
        cwd: dir.to_path_buf(),
        settings: Settings::default(),
        models: ModelRegistry::default(),
        providers,
        tools: ToolRegistry::builtin(),
        active_tools: Vec::new(),
        session: SessionStart::InMemory,
        session_dir: dir.join("sessions"),
        session_dir_explicit: true,
        provider: None,
        model: None,
        thinking: None,
        api_key: None,
        system_prompt: SystemPromptOptions::default(),
        session_name: None,
        persist_settings: false,
        temp_dir: dir.to_path_buf(),
        resources: Default::default(),
        extensions: Default::default(),
        model_scope: Vec::new(),
        mcp: Default::default(),
        client: Default::default(),
        session_fence: None,
        catalog_refreshes: None,
    };
    let options = RegistryOptions {
        session_dir: dir.join("sessions"),
        owner: "test".into(),
        max_sessions: 8,
        hub: HubOptions { replay_events: 64, idle_unload: Duration::from_secs(3600) },
        cluster: None,
    };
    Registry::new(template, options)
}

fn prompt(text: &str) -> Op {
    Op::Prompt { message: text.into(), images: Vec::new(), streaming_behavior: None }
}

/// Everything queued until the run ends; the reply to `tag` among it.
async fn run_to_end(rx: &mut mpsc::Receiver<Queued>, tag: u64) -> (Vec<AgentEvent>, bool) {
    let (mut events, mut replied) = (Vec::new(), false);
    loop {
        let item = tokio::time::timeout(Duration::from_secs(20), rx.recv()).await.expect("in time").expect("open");
        match item.delivered() {
            Ok(d) => match d.output {
                Output::Reply { tag: t, result } => {
                    assert_eq!(t, tag, "a reply of another request: {result:?}");
                    assert!(result.is_ok(), "{result:?}");
                    replied = true;
                }
                Output::Event(AgentEvent::AgentEnd { .. }) => return (events, replied),
                Output::Event(e) => {
                    assert!(d.seq.is_some(), "an event without a number: {e:?}");
                    events.push(e);
                }
            },
            Err(reason) => panic!("closed: {reason}"),
        }
    }
}

fn said(events: &[AgentEvent]) -> String {
    events.iter().map(|e| format!("{e:?}")).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn one_connection_addresses_several_sessions_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path());
    let a = registry.create(Some("session-a".into()), None).await.unwrap();
    let b = registry.create(Some("session-b".into()), None).await.unwrap();
    assert_eq!(registry.create(Some("session-a".into()), None).await.unwrap_err().kind, ErrorKind::InvalidParams);
    assert!(Arc::ptr_eq(&registry.get("session-a").unwrap(), &a));
    assert!(Arc::ptr_eq(&registry.open("session-b").await.unwrap(), &b));
    assert_eq!(registry.open("session-c").await.unwrap_err().kind, ErrorKind::NotFound);
    let mut ids: Vec<String> = registry.list().iter().map(|h| h.id()).collect();
    ids.sort();
    assert_eq!(ids, ["session-a", "session-b"]);

    // One connection, one queue per session, attached to both at once.
    let conn = registry.next_conn_id();
    let kick = Kick::default();
    let (qa, mut rxa) = mpsc::channel(512);
    let (qb, mut rxb) = mpsc::channel(512);
    a.attach(ConnHandle { id: conn, queue: qa, kick: kick.clone() }, None, None).await.unwrap();
    b.attach(ConnHandle { id: conn, queue: qb, kick: kick.clone() }, None, None).await.unwrap();
    a.agent().submit(Some(actor_tag(conn, 7)), prompt("to session a")).await.unwrap();
    b.agent().submit(Some(actor_tag(conn, 7)), prompt("to session b")).await.unwrap();
    let ((ea, ra), (eb, rb)) = tokio::join!(run_to_end(&mut rxa, 7), run_to_end(&mut rxb, 7));
    assert!(ra && rb, "each reply comes back on its session's queue, with the connection's own tag");
    assert!(said(&ea).contains("to session a") && !said(&ea).contains("to session b"), "{}", said(&ea));
    assert!(said(&eb).contains("to session b") && !said(&eb).contains("to session a"), "{}", said(&eb));

    // Close one by id; the other goes on.
    assert!(registry.close("session-a").await);
    assert!(!registry.close("session-a").await, "closed twice");
    assert!(registry.get("session-a").is_none());
    b.agent().submit(Some(actor_tag(conn, 8)), Op::GetState).await.unwrap();
    loop {
        if let Some(Ok(d)) = rxb.recv().await.map(Queued::delivered)
            && let Output::Reply { tag: 8, result } = d.output
        {
            assert!(matches!(result, Ok(Reply::State(s)) if s.session_id == "session-b"));
            break;
        }
    }
    // The closed session can be opened again from its file.
    let again = registry.open("session-a").await.unwrap();
    assert!(!Arc::ptr_eq(&again, &a));
    assert!(!kick_fired(&kick));
}

fn kick_fired(kick: &Kick) -> bool {
    futures::FutureExt::now_or_never(kick.kicked()).is_some()
}

/// The next event of the queue that `pick` accepts (others skipped).
async fn next_event<T>(rx: &mut mpsc::Receiver<Queued>, mut pick: impl FnMut(&AgentEvent) -> Option<T>) -> T {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(20), rx.recv()).await.expect("in time").expect("open");
        if let Ok(d) = item.delivered()
            && let Output::Event(e) = &d.output
            && let Some(found) = pick(e)
        {
            return found;
        }
    }
}

#[tokio::test]
async fn an_open_approval_is_resent_on_attach_and_answered_from_the_new_connection() {
    use pi_core::client::{ApprovalPolicy, ClientReply, ClientRequestKind, PermissionAnswer};
    use pi_core::provider::faux::{FauxReply, FauxToolCall};
    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::default();
    let target = dir.path().join("approved.txt");
    let arguments = serde_json::json!({"path": target.display().to_string(), "content": "approved\n"});
    faux.push(FauxReply {
        tool_calls: vec![FauxToolCall { name: "write".into(), arguments, id: None }],
        ..FauxReply::default()
    });
    let registry = registry_with(dir.path(), faux);
    let hub = registry
        .create_with(Some("approvals".into()), None, |c| {
            c.active_tools = vec!["write".into()];
            c.client.approval = ApprovalPolicy::ask_before_changes();
        })
        .await
        .unwrap();
    let kick = Kick::default();
    let first = registry.next_conn_id();
    let (qa, mut rxa) = mpsc::channel(512);
    hub.attach(ConnHandle { id: first, queue: qa, kick: kick.clone() }, None, None).await.unwrap();
    hub.agent().submit(Some(actor_tag(first, 1)), prompt("write the file")).await.unwrap();
    let asked = |e: &AgentEvent| match e {
        AgentEvent::ClientRequest(r) if matches!(r.kind, ClientRequestKind::Permission(_)) => Some(r.id.clone()),
        _ => None,
    };
    let id = next_event(&mut rxa, asked).await;

    // The first client goes away without answering; a second one attaches and is asked again.
    hub.detach(first).await;
    let second = registry.next_conn_id();
    let (qb, mut rxb) = mpsc::channel(512);
    hub.attach(ConnHandle { id: second, queue: qb, kick: kick.clone() }, None, None).await.unwrap();
    assert_eq!(next_event(&mut rxb, asked).await, id, "the open approval is re-sent on attach");
    let answer = Op::ClientResponse { id, result: Ok(ClientReply::Permission(PermissionAnswer::AllowOnce)) };
    hub.agent().submit(None, answer).await.unwrap();
    next_event(&mut rxb, |e| matches!(e, AgentEvent::AgentEnd { .. }).then_some(())).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "approved\n");

    // Answered: a third connection is not asked.
    let third = registry.next_conn_id();
    let (qc, mut rxc) = mpsc::channel(512);
    hub.attach(ConnHandle { id: third, queue: qc, kick: kick.clone() }, None, None).await.unwrap();
    hub.agent().submit(Some(actor_tag(third, 2)), Op::GetState).await.unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), rxc.recv())
            .await
            .expect("in time")
            .expect("open")
            .delivered()
        {
            Ok(d) => match d.output {
                Output::Event(e) => assert!(asked(&e).is_none(), "an answered approval was re-sent: {e:?}"),
                Output::Reply { .. } => break,
            },
            Err(reason) => panic!("closed: {reason}"),
        }
    }
    assert!(!kick_fired(&kick));
}

#[tokio::test]
async fn a_chosen_id_with_a_session_file_is_refused_and_generated_ids_are_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path());
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // A session of an earlier run, on disk only.
    std::fs::write(sessions.join("2026-01-01T00-00-00-000Z_taken.jsonl"), "").unwrap();
    let refused = registry.create(Some("taken".into()), None).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::InvalidParams);
    assert!(refused.message.contains("Session already exists with id 'taken'"), "{}", refused.message);
    let first = registry.create(None, None).await.unwrap();
    let second = registry.create(None, None).await.unwrap();
    assert_ne!(first.id(), second.id());
    assert_eq!(registry.len(), 2);
    registry.shut_down().await;
}
