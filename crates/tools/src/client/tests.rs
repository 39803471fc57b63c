//! The broker, the approval gate, and the delegated tools against a
//! scripted client (an event sink that answers each request).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::event::{AgentEvent, EventSink};
use crate::message::join_text;
use crate::op::UiResponse;
use crate::tools::{Tool, ToolContext};

type Answer = Box<dyn Fn(&ClientRequestKind, &mut Editor) -> Option<Result<ClientReply, ClientFailure>> + Send + Sync>;

/// What the scripted editor holds: its buffers and what it was asked.
#[derive(Default)]
struct Editor {
    buffers: HashMap<String, String>,
    asked: Vec<ClientRequestKind>,
    ended: Vec<String>,
}

/// A client that answers requests as `answer` says (None: never answers).
struct ScriptedClient {
    broker: Arc<ClientBroker>,
    editor: Mutex<Editor>,
    answer: Answer,
}

#[async_trait::async_trait]
impl EventSink for ScriptedClient {
    async fn emit(&self, event: AgentEvent) {
        let mut editor = self.editor.lock().unwrap();
        match event {
            AgentEvent::ClientRequest(r) => {
                editor.asked.push(r.kind.clone());
                if let Some(answer) = (self.answer)(&r.kind, &mut editor) {
                    assert!(self.broker.resolve(&r.id, answer));
                }
            }
            AgentEvent::ClientRequestEnded { id } => editor.ended.push(id),
            _ => {}
        }
    }
}

fn client(
    capabilities: ClientCapabilities,
    policy: ApprovalPolicy,
    answer: Answer,
) -> (ClientLink, Arc<ScriptedClient>) {
    let broker = Arc::new(ClientBroker::default());
    let scripted = Arc::new(ScriptedClient { broker: broker.clone(), editor: Mutex::default(), answer });
    let link =
        ClientLink { broker, events: scripted.clone(), capabilities, approvals: Arc::new(Approvals::new(policy)) };
    (link, scripted)
}

/// An editor that serves and stores its buffers, and answers approvals with `permission`.
fn editor_answers(permission: PermissionAnswer) -> Answer {
    Box::new(move |kind, editor| {
        Some(Ok(match kind {
            ClientRequestKind::Permission(_) => ClientReply::Permission(permission),
            ClientRequestKind::ReadTextFile { path } => match editor.buffers.get(&path.display().to_string()) {
                Some(text) => ClientReply::Text(text.clone()),
                None => return Some(Err(ClientFailure::Error("Resource not found".into()))),
            },
            ClientRequestKind::WriteTextFile { path, content } => {
                editor.buffers.insert(path.display().to_string(), content.clone());
                ClientReply::Done
            }
            _ => return None,
        }))
    })
}

const ALL_FILES: ClientCapabilities =
    ClientCapabilities { read_text_file: true, write_text_file: true, terminal: false };

fn ctx_with(dir: &std::path::Path, link: &ClientLink) -> ToolContext {
    let mut ctx = ToolContext::new(dir.to_path_buf());
    ctx.client = Some(link.clone());
    ctx.tool_call_id = "call-1".into();
    ctx
}

#[tokio::test]
async fn answers_reach_the_waiting_request_and_cancellation_ends_it() {
    let (link, scripted) = client(ClientCapabilities::default(), ApprovalPolicy::default(), Box::new(|_, _| None));
    let cancel = CancellationToken::new();
    let waiting = link.request(ClientRequestKind::KillTerminal { terminal_id: "t".into() }, &cancel, None);
    let answer = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(waiting, answer);
    assert_eq!(result, Err(ClientFailure::Cancelled));
    assert_eq!(scripted.editor.lock().unwrap().ended.len(), 1, "the front end hears the request ended");
    assert!(link.broker.is_empty());

    let never = CancellationToken::new();
    let timed = link.request(
        ClientRequestKind::KillTerminal { terminal_id: "t".into() },
        &never,
        Some(Duration::from_millis(10)),
    );
    assert_eq!(timed.await, Err(ClientFailure::TimedOut(10)));
    assert!(!link.broker.resolve("unknown", Ok(ClientReply::Done)), "an unknown id is not an answer");
}

#[tokio::test]
async fn a_gone_client_ends_every_wait() {
    let (link, _) = client(ClientCapabilities::default(), ApprovalPolicy::default(), Box::new(|_, _| None));
    let cancel = CancellationToken::new();
    let broker = link.broker.clone();
    let waiting = link.request(ClientRequestKind::ReleaseTerminal { terminal_id: "t".into() }, &cancel, None);
    let close = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        broker.close();
    };
    let (result, ()) = tokio::join!(waiting, close);
    assert_eq!(result, Err(ClientFailure::Gone));
    let later = link.request(ClientRequestKind::ReleaseTerminal { terminal_id: "t".into() }, &cancel, None).await;
    assert_eq!(later, Err(ClientFailure::Gone), "requests after the client left fail at once");
}

#[tokio::test]
async fn approval_policy_modes_and_always_answers() {
    let answers = Arc::new(Mutex::new(vec![PermissionAnswer::AllowAlways, PermissionAnswer::RejectOnce]));
    let queue = answers.clone();
    let (link, scripted) = client(
        ClientCapabilities::default(),
        ApprovalPolicy::ask_before_changes(),
        Box::new(move |kind, _| match kind {
            ClientRequestKind::Permission(_) => Some(Ok(ClientReply::Permission(queue.lock().unwrap().remove(0)))),
            _ => None,
        }),
    );
    let gate = link.approvals.clone();
    let cancel = CancellationToken::new();
    let args = json!({"command": "ls -la\nmore"});
    assert_eq!(gate.check(&link, "c0", "read", &json!({"path": "a"}), &cancel).await, Ok(()), "read-only runs");
    assert_eq!(gate.check(&link, "c1", "bash", &args, &cancel).await, Ok(()), "allowed always");
    assert_eq!(gate.check(&link, "c2", "bash", &args, &cancel).await, Ok(()), "remembered: not asked again");
    let rejected = gate.check(&link, "c3", "write", &json!({"path": "x"}), &cancel).await;
    assert_eq!(rejected, Err("Tool \"write\" was not run: the user rejected it.".into()));
    let asked = &scripted.editor.lock().unwrap().asked;
    assert_eq!(asked.len(), 2);
    match &asked[0] {
        ClientRequestKind::Permission(p) => {
            assert_eq!((p.tool_call_id.as_str(), p.title.as_str()), ("c1", "bash: ls -la…"));
        }
        other => panic!("{other:?}"),
    }
    gate.set_mode(ApprovalMode::ReadOnly);
    assert_eq!(gate.decide("bash"), Rule::Deny, "read-only denies even what was allowed always");
    assert_eq!(gate.decide("read"), Rule::Allow);
    gate.set_mode(ApprovalMode::Auto);
    assert_eq!(gate.decide("write"), Rule::Allow);
    assert_eq!(ApprovalPolicy::default().rule_for("bash"), Rule::Allow, "off by default");
}

#[test]
fn seed_dialog_answers_read_as_approvals() {
    let broker = ClientBroker::default();
    assert!(!broker.resolve_dialog("x", &UiResponse::Cancelled), "not an approval");
    assert_eq!(approval_choices(), ["Allow", "Block", "Always allow", "Always block"]);
}

#[tokio::test]
async fn a_pending_approval_is_cancelled_by_abort() {
    let (link, scripted) =
        client(ClientCapabilities::default(), ApprovalPolicy::ask_before_changes(), Box::new(|_, _| None));
    let cancel = CancellationToken::new();
    let gate = link.approvals.clone();
    let args = json!({"path": "f"});
    let check = gate.check(&link, "c", "edit", &args, &cancel);
    let abort = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(check, abort);
    assert_eq!(result, Err("Tool \"edit\" was not run: the approval request was cancelled.".into()));
    assert_eq!(scripted.editor.lock().unwrap().ended.len(), 1);
}

#[tokio::test]
async fn files_go_through_the_editor_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "on disk\n").unwrap();
    let (link, scripted) = client(ALL_FILES, ApprovalPolicy::default(), editor_answers(PermissionAnswer::AllowOnce));
    let key = path.display().to_string();
    scripted.editor.lock().unwrap().buffers.insert(key.clone(), "line one\nunsaved two\n".into());
    let ctx = ctx_with(dir.path(), &link);

    let read = crate::tools::read::ReadTool::new().execute(json!({"path": "f.txt", "offset": 2}), ctx.clone()).await;
    assert!(!read.is_error, "{read:?}");
    assert_eq!(join_text(&read.content), "unsaved two\n");

    let edit = crate::tools::edit::EditTool::new();
    let out = edit
        .execute(json!({"path": "f.txt", "edits": [{"oldText": "unsaved", "newText": "saved"}]}), ctx.clone())
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(scripted.editor.lock().unwrap().buffers[&key], "line one\nsaved two\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "on disk\n", "the disk is left to the editor");

    let write = crate::tools::write::WriteTool::new();
    let out = write.execute(json!({"path": "new.txt", "content": "hi"}), ctx.clone()).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(scripted.editor.lock().unwrap().buffers[&dir.path().join("new.txt").display().to_string()], "hi");
    assert!(!dir.path().join("new.txt").exists());

    let missing = crate::tools::read::ReadTool::new().execute(json!({"path": "nope.txt"}), ctx).await;
    assert!(missing.is_error);
    assert!(join_text(&missing.content).contains("Resource not found"), "{missing:?}");
}

#[tokio::test]
async fn bash_runs_in_a_client_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let caps = ClientCapabilities { terminal: true, ..Default::default() };
    let (link, scripted) = client(
        caps,
        ApprovalPolicy::default(),
        Box::new(|kind, _| {
            Some(Ok(match kind {
                ClientRequestKind::CreateTerminal(_) => ClientReply::TerminalCreated { terminal_id: "term-1".into() },
                ClientRequestKind::WaitForTerminalExit { .. } => {
                    ClientReply::TerminalExited(ExitStatus { exit_code: Some(3), signal: None })
                }
                ClientRequestKind::TerminalOutput { .. } => {
                    ClientReply::TerminalOutput { output: "hello\n".into(), truncated: false, exit: None }
                }
                _ => ClientReply::Done,
            }))
        }),
    );
    let ctx = ctx_with(dir.path(), &link);
    let out = crate::tools::bash::BashTool::new().execute(json!({"command": "echo hello; exit 3"}), ctx).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "hello\n\n\nCommand exited with code 3");
    let asked = &scripted.editor.lock().unwrap().asked;
    let names: Vec<&str> = asked
        .iter()
        .map(|k| match k {
            ClientRequestKind::CreateTerminal(t) => {
                assert_eq!(t.args, ["-c", "echo hello; exit 3"]);
                assert_eq!(t.tool_call_id, "call-1");
                "create"
            }
            ClientRequestKind::WaitForTerminalExit { .. } => "wait",
            ClientRequestKind::TerminalOutput { .. } => "output",
            ClientRequestKind::ReleaseTerminal { .. } => "release",
            _ => "other",
        })
        .collect();
    assert_eq!(names, ["create", "wait", "output", "release"]);
}

#[tokio::test]
async fn an_aborted_terminal_command_is_killed_and_released() {
    let dir = tempfile::tempdir().unwrap();
    let caps = ClientCapabilities { terminal: true, ..Default::default() };
    let (link, scripted) = client(
        caps,
        ApprovalPolicy::default(),
        Box::new(|kind, _| match kind {
            ClientRequestKind::CreateTerminal(_) => Some(Ok(ClientReply::TerminalCreated { terminal_id: "t".into() })),
            ClientRequestKind::WaitForTerminalExit { .. } => None,
            ClientRequestKind::TerminalOutput { .. } => {
                Some(Ok(ClientReply::TerminalOutput { output: "partial".into(), truncated: false, exit: None }))
            }
            _ => Some(Ok(ClientReply::Done)),
        }),
    );
    let ctx = ctx_with(dir.path(), &link);
    let cancel = ctx.cancel.clone();
    let bash = crate::tools::bash::BashTool::new();
    let run = bash.execute(json!({"command": "sleep 100"}), ctx);
    let abort = async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(run, abort);
    assert_eq!(join_text(&out.content), "partial\n\nCommand aborted");
    let asked = scripted.editor.lock().unwrap().asked.len();
    assert_eq!(asked, 5, "create, wait, kill, output, release");
}

#[tokio::test]
async fn a_client_tool_gets_its_result_or_times_out() {
    let spec = ClientToolSpec { name: "pick".into(), description: "Pick a colour".into(), parameters: Value::Null };
    let (link, _) = client(
        ClientCapabilities::default(),
        ApprovalPolicy::default(),
        Box::new(|kind, _| match kind {
            ClientRequestKind::ToolCall { args, .. } if args["answer"] == true => Some(Ok(ClientReply::ToolResult {
                content: vec![crate::message::ContentBlock::text("blue")],
                details: None,
                is_error: false,
            })),
            _ => None,
        }),
    );
    let tool = client_tool::ClientTool::new(spec, Duration::from_millis(30));
    assert_eq!(tool.parameters()["type"], "object");
    let ctx = ctx_with(std::path::Path::new("/"), &link);
    let out = tool.execute(json!({"answer": true}), ctx.clone()).await;
    assert_eq!((join_text(&out.content).as_str(), out.is_error), ("blue", false));
    let late = tool.execute(json!({"answer": false}), ctx).await;
    assert!(late.is_error);
    assert_eq!(join_text(&late.content), "Tool \"pick\" got no result from the client within 0.03 seconds");
}
