//! Ops on the session tree: new, switch, resume, fork, clone, entries, tree.

use std::path::{Path, PathBuf};

use super::actor::Agent;
use crate::error::CoreError;
use crate::op::{EntryList, Forked, Op, Reply, Switched, TreeWithLeaf};
use crate::session::{Session, SessionError};

fn session_error(e: SessionError) -> CoreError {
    CoreError::from(e)
}

impl Agent {
    pub(super) async fn handle_session_op(&mut self, op: Op) -> Result<Reply, CoreError> {
        match op {
            Op::NewSession { parent_session } => {
                let session = if self.session.file_path().is_some() {
                    Session::create(&self.session_dir, &self.cwd, parent_session).map_err(session_error)?
                } else {
                    Session::in_memory(&self.cwd)
                };
                self.replace_session(session).await?;
                self.extensions_session_started("new");
                Ok(Reply::Switched(Switched::new(false)))
            }
            Op::SwitchSession { session_path, .. } => {
                let path = self.absolute(&session_path);
                let (session, warnings) = Session::open(&path, &self.cwd).map_err(session_error)?;
                for w in warnings {
                    tracing::warn!("{w}");
                }
                self.replace_session(session).await?;
                self.extensions_session_started("resume");
                Ok(Reply::Switched(Switched::new(false)))
            }
            Op::ResumeSession { reference, .. } => {
                let dirs = self.session_search_dirs();
                let path = crate::session::resolve_session(&reference, &self.cwd, &dirs).map_err(session_error)?;
                let (session, warnings) = Session::open(&path, &self.cwd).map_err(session_error)?;
                for w in warnings {
                    tracing::warn!("{w}");
                }
                self.replace_session(session).await?;
                self.extensions_session_started("resume");
                Ok(Reply::Switched(Switched::new(false)))
            }
            Op::Fork { entry_id } => {
                let (session, text) = self.session.fork(&entry_id).map_err(session_error)?;
                self.replace_session(session).await?;
                self.extensions_session_started("fork");
                Ok(Reply::Fork(Forked { text, cancelled: false }))
            }
            Op::Clone => {
                let session = self.session.clone_branch().map_err(session_error)?;
                self.replace_session(session).await?;
                self.extensions_session_started("fork");
                Ok(Reply::Switched(Switched::new(false)))
            }
            Op::GetForkMessages => Ok(Reply::ForkMessages(self.session.fork_messages())),
            Op::GetEntries { since } => {
                let entries = match since.as_deref() {
                    Some(id) => self.session.entries_since(id).map_err(session_error)?,
                    None => self.session.entries().cloned().collect(),
                };
                Ok(Reply::Entries(EntryList { entries, leaf_id: self.session.leaf_id().map(str::to_string) }))
            }
            Op::GetTree => Ok(Reply::Tree(TreeWithLeaf {
                tree: self.session.tree(),
                leaf_id: self.session.leaf_id().map(str::to_string),
            })),
            Op::ExportHtml { output_path } => {
                let tools = self
                    .active_tool_set()
                    .1
                    .into_iter()
                    .map(|spec| crate::export_html::ExportTool { name: spec.name, description: spec.description })
                    .collect();
                let options = crate::export_html::ExportOptions { system_prompt: Some(self.system_prompt()), tools };
                let path = crate::export_html::export_session_html(
                    &self.session,
                    output_path.as_deref(),
                    &self.cwd,
                    &options,
                )?;
                Ok(Reply::ExportHtml(path.display().to_string()))
            }
            other => Err(CoreError::internal(format!("op not handled: {other:?}"))),
        }
    }

    /// Make `session` current: its conversation, model and thinking level.
    async fn replace_session(&mut self, session: Session) -> Result<(), CoreError> {
        self.temp_outputs.release(self.session.file_path());
        self.session = session;
        let restored = self.session.context();
        self.messages = std::sync::Arc::new(restored.messages);
        self.usage_unknown = false;
        // pi 1.6.0 chooses model and thinking level afresh for each session
        // (a new one starts at the defaults, not at the previous level).
        let (model, thinking) =
            if self.messages.is_empty() { (None, None) } else { (restored.model, restored.thinking_level) };
        if let Err(e) = self.select_initial_model(model, thinking) {
            tracing::warn!("keeping the current model: {}", e.message);
        }
        if self.steering.len() + self.follow_up.len() > 0 {
            self.steering.clear();
            self.follow_up.clear();
            self.emit_queue_update().await;
        }
        self.start_session_entries(None)
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let p = crate::config::expand_home(Path::new(path));
        if p.is_absolute() { p } else { self.cwd.join(p) }
    }

    fn session_search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.session_dir.clone()];
        let all = self.agent_dir.join("sessions");
        if let Ok(read) = std::fs::read_dir(&all) {
            for entry in read.flatten() {
                if entry.path().is_dir() && entry.path() != self.session_dir {
                    dirs.push(entry.path());
                }
            }
        }
        dirs
    }
}
