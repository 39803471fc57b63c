//! The requests pi's `ExtensionAPI` needs beyond the first protocol set
//! (served for any extension, used by the TypeScript extension host): the
//! active tools and every tool, the session tree, entry labels, the
//! thinking level, abort, shutdown, the inter-extension event bus, the
//! model registry. The host calls most of them synchronously, so each is
//! answered at once from the actor's state.

use serde_json::{Value, json};

use super::Agent;
use crate::agent::state::Pending;
use crate::extensions::ExtRequest;
use crate::op::Op;

fn text<'a>(params: &'a Value, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

impl Agent {
    /// Serve one of the requests of [`ExtRequest::from_method`] for extension `id`.
    pub(super) async fn extension_host_request(&mut self, id: usize, request: ExtRequest) -> Result<Value, String> {
        match request {
            ExtRequest::SetActiveTools(p) => {
                let names = p.get("names").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
                self.sync_mcp_activation();
                let known = self.activatable_tools();
                let active = self.toolbox.set_active_known(names, &known).to_vec();
                self.ext.tools_changed();
                Ok(json!({"activeTools": active}))
            }
            ExtRequest::GetAllTools => {
                let tools: Vec<Value> = self
                    .toolbox
                    .all()
                    .map(|tool| {
                        json!({
                            "name": tool.name(),
                            "description": tool.description(),
                            "parameters": tool.parameters(),
                            "promptGuidelines": tool.prompt_guidelines(),
                            "exposure": tool.exposure(),
                            "path": self.extension_tool_owner(tool.name()),
                        })
                    })
                    .collect();
                let tools = tools
                    .into_iter()
                    .chain(self.factory_tool_listing())
                    .chain(self.builtin_tool_listing())
                    .map(|tool| self.with_source_info(tool))
                    .collect::<Vec<_>>();
                Ok(json!({"tools": tools}))
            }
            ExtRequest::GetSession => Ok(json!({
                "header": serde_json::to_value(self.session.record().header()).unwrap_or(Value::Null),
                "entries": self.session.record().entries_json().map_err(|e| e.to_string())?,
                "leafId": self.session.record().leaf_id(),
                "sessionId": self.session.record().session_id(),
                "sessionFile": self.session.record().file_path().map(|p| p.display().to_string()),
                "sessionDir": self.session.record().session_dir().map(|p| p.display().to_string()),
                "sessionName": self.session.record().name(),
                "cwd": self.workspace.cwd().display().to_string(),
            })),
            ExtRequest::SetLabel(p) => {
                let target = text(&p, "entryId").ok_or("\"entryId\" is required")?;
                if self.session.record().get(target).is_none() {
                    return Err(format!("Entry not found: {target}"));
                }
                let label = text(&p, "label").filter(|l| !l.trim().is_empty());
                let entry = self.session.label(target, label).map_err(|e| e.to_string())?;
                Ok(json!({"entryId": entry}))
            }
            ExtRequest::Abort => {
                self.abort(None).await;
                Ok(Value::Null)
            }
            ExtRequest::Shutdown => {
                Box::pin(self.handle_op(Pending::new(None, Op::Shutdown { abort: false }))).await;
                Ok(Value::Null)
            }
            ExtRequest::Emit(p) => {
                let channel = text(&p, "channel").ok_or("\"channel\" is required")?;
                self.ext.handle().broadcast_bus(id, channel, p.get("data").cloned().unwrap_or(Value::Null));
                Ok(Value::Null)
            }
            ExtRequest::GetModels => {
                // pi reads the stored logins at each use: one made since the last command counts.
                let agent_dir = self.workspace.agent_dir().to_path_buf();
                self.models.sync_logins(&agent_dir);
                let models: Vec<Value> = self.models.registry().available().iter().map(model_json).collect();
                Ok(json!({"models": models}))
            }
            ExtRequest::Compact(p) => {
                // pi's `ctx.compact()`: a `compact` of the extension's; it learns the outcome later.
                self.ext.wait_compaction(id, p.get("ticket").cloned().unwrap_or(Value::Null));
                let custom_instructions = text(&p, "customInstructions").map(str::to_string);
                Box::pin(self.handle_op(Pending::new(None, Op::Compact { custom_instructions }))).await;
                Ok(Value::Null)
            }
            other => Err(format!("not a host request: {other:?}")),
        }
    }

    /// A `getAllTools()` entry with its extension's `sourceInfo`, as pi gives
    /// it (an auto-discovered extension's source is `auto`, with its scope
    /// and base directory); built-in ones keep the host's.
    fn with_source_info(&self, mut tool: Value) -> Value {
        let Some(path) = tool.get("path").and_then(Value::as_str).map(str::to_string) else { return tool };
        let info = crate::resources::extension_source_info(&path, self.workspace.agent_dir(), self.workspace.cwd());
        tool["sourceInfo"] = json!({
            "path": info.path,
            "source": info.source,
            "scope": info.scope,
            "origin": info.origin,
            "baseDir": info.base_dir,
        });
        tool
    }

    /// The state an extension's `getState` sees (pi's `ctx.model`,
    /// `ctx.isIdle()`, `ctx.getContextUsage()`, `ctx.getSystemPrompt()`, …).
    pub(super) fn extension_state_json(&self) -> Value {
        json!({
            "sessionId": self.session.record().session_id(),
            "sessionFile": self.session.record().file_path().map(|p| p.display().to_string()),
            "sessionName": self.session.record().name(),
            "cwd": self.workspace.cwd().display().to_string(),
            "isStreaming": self.activity.is_run_active(),
            // pi's `isIdle`: no run, no compaction, no tree navigation under way.
            "isIdle": !self.activity.is_run_active() && !self.is_compacting() && !self.ext.tree_hooks_running(),
            "model": model_json(self.models.model()),
            "thinkingLevel": self.models.thinking().as_str(),
            "messageCount": self.session.messages().len(),
            "pendingMessageCount": self.queues.pending(),
            "activeTools": self.toolbox.active_names(),
            "contextUsage": self.context_usage().map(|u| json!({
                "tokens": u.tokens, "contextWindow": u.context_window, "percent": u.percent,
            })),
            "systemPrompt": self.system_prompt(),
            "scopedModels": self.models.scoped().iter().map(|(model, level)| match level {
                Some(level) => json!({"model": model_json(model), "thinkingLevel": level.as_str()}),
                None => json!({"model": model_json(model)}),
            }).collect::<Vec<_>>(),
        })
    }
}

impl Agent {
    /// pi's `ctx.getSystemPromptOptions()` (its normalized
    /// `BuildSystemPromptOptions`) without `skills`, which the host adds:
    /// the custom prompt, the appended text, the context files, the active
    /// tools, and the snippets and rules of every registered tool that has
    /// them, active or not (built-in ones their own).
    pub(super) fn system_prompt_options_json(&self) -> Value {
        use crate::system_prompt::{builtin_guidelines, builtin_snippet};
        let (custom, appended, context) = self.workspace.prompt_sources();
        let mut snippets = serde_json::Map::new();
        let mut guidelines = serde_json::Map::new();
        for tool in self.toolbox.all() {
            let name = tool.name().to_string();
            let snippet = tool.prompt_snippet().or(builtin_snippet(&name));
            // pi: one line, spaces collapsed.
            let snippet = snippet.map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|s| !s.is_empty());
            if let Some(snippet) = snippet {
                snippets.insert(name.clone(), Value::String(snippet));
            }
            let rules: Vec<String> = match tool.prompt_guidelines() {
                [] => builtin_guidelines(&name).iter().map(|g| g.to_string()).collect(),
                own => own.iter().map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect(),
            };
            if !rules.is_empty() {
                guidelines.insert(name, json!(rules));
            }
        }
        // pi's registry also holds `codemode` and `tool_search` (its built-in
        // extensions', after the others), active or not: their lines and rules too.
        for tool in self.factory_tools().into_iter().map(crate::system_prompt::PromptTool::builtin) {
            if let Some(snippet) = tool.snippet {
                snippets.insert(tool.name.clone(), Value::String(snippet));
            }
            if !tool.guidelines.is_empty() {
                guidelines.insert(tool.name, json!(tool.guidelines));
            }
        }
        let context: Vec<Value> = context
            .into_iter()
            .map(|(path, content)| json!({"path": path.display().to_string(), "content": content}))
            .collect();
        let mut options = json!({
            "selectedTools": self.toolbox.active_names(),
            "hiddenTools": self.codemode_hidden_tools(),
            "toolSnippets": snippets,
            "toolGuidelines": guidelines,
            "promptGuidelines": [],
            "appendSystemPrompt": appended,
            "sections": {},
            "cwd": self.workspace.cwd().display().to_string(),
            "contextFiles": context,
        });
        if let Some(custom) = custom {
            options["customPrompt"] = Value::String(custom);
        }
        options["skills"] = self
            .ext
            .resources()
            .skills
            .iter()
            .map(|skill| {
                json!({
                    "name": skill.name,
                    "description": skill.description,
                    "filePath": skill.path.display().to_string(),
                    "baseDir": skill.base_dir.display().to_string(),
                    "disableModelInvocation": skill.disable_model_invocation,
                })
            })
            .collect();
        options
    }

    /// The options a run starts from (`before_agent_start`'s
    /// `systemPromptOptions`): the session's, with the tools the run's
    /// prompt lists besides the active ones (`codemode`, `tool_search`).
    pub(super) fn run_prompt_options(&self) -> Value {
        let mut options = self.system_prompt_options_json();
        for tool in self.reach_tools() {
            let selected = &mut options["selectedTools"];
            let named = selected.as_array().is_some_and(|names| names.iter().any(|n| n == tool.name.as_str()));
            if let Some(names) = selected.as_array_mut().filter(|_| !named) {
                names.push(Value::String(tool.name.clone()));
            }
        }
        options
    }
}

pub(super) use crate::agent::extension_model_store::model_json;
