//! The built-in tools run through supplied operations: an in-memory file
//! system and a scripted `exec`, standing in for an extension's remote host.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{OperationError, ToolOperations};
use crate::message::join_text;
use crate::tools::shell::ExecSink;
use crate::tools::{Tool, ToolContext, ToolOutput, bash, edit, find, grep, ls, read, write};

/// Files by absolute path; directories are the prefixes of their paths.
#[derive(Default)]
struct Remote {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    calls: Mutex<Vec<String>>,
    detects_images: bool,
}

impl Remote {
    fn with(files: &[(&str, &str)]) -> Arc<Remote> {
        let remote = Remote::default();
        for (path, text) in files {
            remote.files.lock().unwrap().insert(path.to_string(), text.as_bytes().to_vec());
        }
        Arc::new(remote)
    }

    fn is_dir(&self, path: &str) -> bool {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        self.files.lock().unwrap().keys().any(|k| k.starts_with(&prefix))
    }

    fn text(&self, path: &str) -> Option<String> {
        self.files.lock().unwrap().get(path).map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

fn arg(args: &Value, key: &str) -> String {
    args.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

#[async_trait]
impl ToolOperations for Remote {
    fn supplies(&self, name: &str) -> bool {
        name != "detectImageMimeType" || self.detects_images
    }

    async fn call(&self, name: &str, args: Value, _cancel: &CancellationToken) -> Result<Value, OperationError> {
        let path = arg(&args, "path");
        self.calls.lock().unwrap().push(format!("{name} {path}"));
        let missing = || OperationError::Failed(format!("remote: no such file {path}"));
        match name {
            "readFile" => {
                let bytes = self.files.lock().unwrap().get(&path).cloned().ok_or_else(missing)?;
                Ok(json!({"base64": base64::engine::general_purpose::STANDARD.encode(bytes)}))
            }
            "access" => self.files.lock().unwrap().contains_key(&path).then_some(Value::Null).ok_or_else(missing),
            "detectImageMimeType" => Ok(if path.ends_with(".png") { json!("image/png") } else { Value::Null }),
            "writeFile" => {
                self.files.lock().unwrap().insert(path, arg(&args, "content").into_bytes());
                Ok(Value::Null)
            }
            "mkdir" => Ok(Value::Null),
            "isDirectory" if self.is_dir(&path) => Ok(json!(true)),
            "isDirectory" => self.files.lock().unwrap().contains_key(&path).then_some(json!(false)).ok_or_else(missing),
            "exists" => Ok(json!(self.is_dir(&path) || self.files.lock().unwrap().contains_key(&path))),
            "stat" => Ok(json!({"isDirectory": self.is_dir(&path)})),
            "readdir" => {
                let prefix = format!("{}/", path.trim_end_matches('/'));
                let mut names: Vec<String> = self
                    .files
                    .lock()
                    .unwrap()
                    .keys()
                    .filter_map(|k| k.strip_prefix(&prefix))
                    .map(|rest| rest.split('/').next().unwrap_or_default().to_string())
                    .collect();
                names.dedup();
                Ok(json!(names))
            }
            "glob" => {
                let cwd = format!("{}/", arg(&args, "cwd").trim_end_matches('/'));
                let suffix = arg(&args, "pattern").trim_start_matches('*').to_string();
                let found: Vec<String> = self
                    .files
                    .lock()
                    .unwrap()
                    .keys()
                    .filter(|k| k.starts_with(&cwd) && k.ends_with(&suffix))
                    .cloned()
                    .collect();
                Ok(json!(found))
            }
            other => Err(OperationError::Failed(format!("unexpected operation {other}"))),
        }
    }

    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        _timeout: Option<f64>,
        sink: &mut (dyn ExecSink + '_),
        _cancel: &CancellationToken,
    ) -> Result<Option<i64>, OperationError> {
        self.calls.lock().unwrap().push(format!("exec {command} in {}", cwd.display()));
        match command {
            "hang up" => Err(OperationError::Failed("timeout:3".into())),
            "no code" => Ok(None),
            _ => {
                let who = env.iter().find(|(k, _)| k == "WHO").map(|(_, v)| v.as_str()).unwrap_or("nobody");
                sink.data(format!("remote says {command} to {who}\n").as_bytes());
                Ok(Some(if command.contains("fail") { 3 } else { 0 }))
            }
        }
    }
}

fn ctx(remote: &Arc<Remote>) -> ToolContext {
    let mut ctx = ToolContext::new("/srv/app".into());
    ctx.temp_dir = std::env::temp_dir();
    ctx.operations = Some(remote.clone());
    ctx
}

async fn run(tool: &dyn Tool, remote: &Arc<Remote>, args: Value) -> ToolOutput {
    tool.execute(args, ctx(remote)).await
}

#[tokio::test]
async fn read_shows_remote_text_with_the_usual_selection() {
    let remote = Remote::with(&[("/srv/app/a.txt", "one\ntwo\nthree\n")]);
    let out = run(&read::ReadTool::new(), &remote, json!({"path": "a.txt", "offset": 2, "limit": 1})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(join_text(&out.content), "two\n\n[2 more lines in file. Use offset=3 to continue.]");
    assert_eq!(*remote.calls.lock().unwrap(), ["access /srv/app/a.txt", "readFile /srv/app/a.txt"]);

    let out = run(&read::ReadTool::new(), &remote, json!({"path": "missing.txt"})).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "remote: no such file /srv/app/missing.txt");
}

#[tokio::test]
async fn write_edit_and_ls_work_on_the_remote_files() {
    let remote = Remote::with(&[("/srv/app/src/lib.rs", "fn a() {}\n")]);
    let out = run(&write::WriteTool::new(), &remote, json!({"path": "src/new.rs", "content": "x"})).await;
    assert_eq!(join_text(&out.content), "Successfully wrote to src/new.rs");
    assert_eq!(remote.text("/srv/app/src/new.rs").as_deref(), Some("x"));

    let args = json!({"path": "src/lib.rs", "edits": [{"oldText": "fn a", "newText": "fn b"}]});
    let out = run(&edit::EditTool::new(), &remote, args).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(remote.text("/srv/app/src/lib.rs").as_deref(), Some("fn b() {}\n"));
    assert!(out.details.unwrap()["diff"].as_str().unwrap().contains("fn b"));

    let out = run(&ls::LsTool::new(), &remote, json!({"path": "."})).await;
    assert_eq!(join_text(&out.content), "src/");
    let out = run(&ls::LsTool::new(), &remote, json!({"path": "src"})).await;
    assert_eq!(join_text(&out.content), "lib.rs\nnew.rs");
    let out = run(&ls::LsTool::new(), &remote, json!({"path": "nowhere"})).await;
    assert_eq!(join_text(&out.content), "Path not found: /srv/app/nowhere");
}

#[tokio::test]
async fn find_uses_the_remote_glob_and_grep_its_directory_check() {
    let remote = Remote::with(&[("/srv/app/src/a.rs", ""), ("/srv/app/src/b.rs", ""), ("/srv/app/c.md", "")]);
    let out = run(&find::FindTool::new(), &remote, json!({"pattern": "*.rs"})).await;
    assert_eq!(join_text(&out.content), "src/a.rs\nsrc/b.rs");
    let out = run(&find::FindTool::new(), &remote, json!({"pattern": "*.rs", "limit": 1})).await;
    assert_eq!(join_text(&out.content), "src/a.rs\n\n[1 results limit reached]");

    let out = run(&grep::GrepTool::new(), &remote, json!({"pattern": "x", "path": "gone"})).await;
    assert_eq!(join_text(&out.content), "Path not found: /srv/app/gone");
    assert!(remote.calls.lock().unwrap().contains(&"isDirectory /srv/app/gone".to_string()));
}

#[tokio::test]
async fn bash_runs_through_exec_with_the_usual_output_handling() {
    let remote = Remote::with(&[]);
    let mut c = ctx(&remote);
    c.env = vec![("WHO".into(), "ada".into())];
    let out = bash::BashTool::new().execute(json!({"command": "hello"}), c.clone()).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(join_text(&out.content), "remote says hello to ada\n");
    assert_eq!(out.structured_content.as_ref().unwrap()["exit_code"], 0);

    let out = bash::BashTool::new().execute(json!({"command": "fail now"}), c.clone()).await;
    assert!(out.is_error);
    assert_eq!(join_text(&out.content), "remote says fail now to ada\n\n\nCommand exited with code 3");

    let out = bash::BashTool::new().execute(json!({"command": "hang up", "timeout": 3}), c.clone()).await;
    assert_eq!(join_text(&out.content), "Command timed out after 3 seconds");
    let out = bash::BashTool::new().execute(json!({"command": "no code"}), c).await;
    assert_eq!(join_text(&out.content), "(no output)\n\nCommand terminated without an exit code");
    assert_eq!(remote.calls.lock().unwrap()[0], "exec hello in /srv/app");
}
