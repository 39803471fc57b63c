//! Ops on the session tree: new, switch, resume, fork, clone, entries, tree.

use std::path::Path;

use super::Agent;
use crate::agent::parked_switch::ParkedSwitch;
use crate::error::CoreError;
use crate::op::{EntryList, Forked, Reply, Switched};
use crate::session::{Session, SessionError};

fn session_error(e: SessionError) -> CoreError {
    CoreError::from(e)
}

impl Agent {
    /// `new_session`: a new file beside the current one (in memory when the
    /// current one is). `setup`: the extension whose `newSession({setup})`
    /// this is (the other extensions start once its setup is done). The
    /// switch waits for the old instances' `session_shutdown`
    /// ([`Agent::switch_after_shutdown`]), as do the others below.
    pub(super) fn new_session(
        &mut self,
        parent_session: Option<String>,
        setup: Option<usize>,
    ) -> Result<ParkedSwitch, CoreError> {
        let session = if self.session.record().file_path().is_some() {
            Session::create(self.workspace.session_dir(), self.workspace.cwd(), parent_session)
                .map_err(session_error)?
        } else {
            Session::in_memory(self.workspace.cwd())
        };
        let switch = ParkedSwitch::new(session, "new", Reply::Switched(Switched::new(false)));
        Ok(ParkedSwitch { setup, ..switch })
    }

    /// `switch_session`: the session file at `session_path`.
    pub(super) fn switch_session(&mut self, session_path: &str) -> Result<ParkedSwitch, CoreError> {
        let path = self.workspace.absolute(session_path);
        self.open_and_resume(&path)
    }

    /// `resume_session`: a session found by id, id prefix or path.
    pub(super) fn resume_session(&mut self, reference: &str) -> Result<ParkedSwitch, CoreError> {
        let dirs = self.workspace.session_search_dirs();
        let path = crate::session::resolve_session(reference, self.workspace.cwd(), &dirs).map_err(session_error)?;
        self.open_and_resume(&path)
    }

    fn open_and_resume(&mut self, path: &Path) -> Result<ParkedSwitch, CoreError> {
        let (session, warnings) = Session::open(path, self.workspace.cwd()).map_err(session_error)?;
        for w in warnings {
            tracing::warn!("{w}");
        }
        Ok(ParkedSwitch::new(session, "resume", Reply::Switched(Switched::new(false))))
    }

    /// `fork`: a new session up to `entry_id`, and the text of that user message.
    pub(super) fn fork(&mut self, entry_id: &str) -> Result<ParkedSwitch, CoreError> {
        let (session, text) = self.session.record().fork(entry_id).map_err(session_error)?;
        Ok(ParkedSwitch::new(session, "fork", Reply::Fork(Forked { text, cancelled: false })))
    }

    /// `clone`: a new session with the current branch (or, for an
    /// extension's `fork(id, {position: "at"})`, the path up to `at`).
    pub(super) fn clone_session(&mut self, at: Option<&str>) -> Result<ParkedSwitch, CoreError> {
        let record = self.session.record();
        let session = match at {
            Some(entry_id) => record.clone_to(entry_id),
            None => record.clone_branch(),
        }
        .map_err(session_error)?;
        Ok(ParkedSwitch::new(session, "fork", Reply::Switched(Switched::new(false))))
    }

    /// `get_entries`: all of them, or those after `since`.
    pub(super) fn entries(&self, since: Option<&str>) -> Result<EntryList, CoreError> {
        let entries = match since {
            Some(id) => self.session.record().entries_since(id).map_err(session_error)?,
            None => self.session.record().entries().cloned().collect(),
        };
        Ok(EntryList { entries, leaf_id: self.session.record().leaf_id().map(str::to_string) })
    }

    /// `export_html`: the file written.
    pub(super) fn export_html(&self, output_path: Option<&str>) -> Result<String, CoreError> {
        let tools = self
            .active_tool_set()
            .1
            .into_iter()
            .map(|spec| crate::export_html::ExportTool { name: spec.name, description: spec.description })
            .collect();
        let options = crate::export_html::ExportOptions { system_prompt: Some(self.system_prompt()), tools };
        let path = crate::export_html::export_session_html(
            self.session.record(),
            output_path,
            self.workspace.cwd(),
            &options,
        )?;
        Ok(path.display().to_string())
    }

    /// Make `session` current: its conversation, model and thinking level.
    /// Returns the file of the session it replaced (none in memory).
    pub(super) async fn replace_session(&mut self, session: Session) -> Result<Option<String>, CoreError> {
        let previous = self.session.record().file_path().map(|p| p.display().to_string());
        self.workspace.release_temp_files(self.session.record().file_path());
        self.session.replace(session);
        // The old session's cache warming ends with it (pi disposes its warmer).
        self.warmer.cancel();
        // pi 1.6.0 chooses model and thinking level afresh for each session
        // (a new one starts at the defaults, not at the previous level).
        let (model, thinking) = if self.session.messages().is_empty() {
            (None, None)
        } else {
            self.session.record().context_model_and_thinking()
        };
        if let Err(e) = self.select_initial_model(model, thinking) {
            tracing::warn!("keeping the current model: {}", e.message);
        }
        if self.queues.pending() > 0 {
            self.queues.clear();
            self.emit_queue_update().await;
        }
        self.start_session_entries(None)?;
        Ok(previous)
    }
}
