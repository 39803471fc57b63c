//! What a run's tools get: the active tool set, the tool context (cwd,
//! temp dir, the `PI_*` variables, the extension gate, the client link) and
//! the system prompt's sections for those tools.

use super::Agent;
use crate::tools::{ToolContext, ToolRegistry};

impl Agent {
    /// The tools the model gets, in order, with their specs.
    pub(super) fn active_tool_set(&self) -> (ToolRegistry, Vec<crate::provider::ToolSpec>) {
        self.toolbox.active_set()
    }

    pub(super) fn tool_context(&self) -> ToolContext {
        let mut ctx = ToolContext::new(self.workspace.cwd().to_path_buf());
        ctx.temp_dir = self.workspace.temp_dir().to_path_buf();
        // The PI_* variables the prompt's rules point the model to (pi 1.6.0's set).
        ctx.env = vec![
            ("PI_CODING_AGENT".to_string(), "true".to_string()),
            ("PI_SESSION_ID".to_string(), self.session.record().session_id().to_string()),
            ("PI_PROVIDER".to_string(), self.models.model().provider.clone()),
            ("PI_MODEL".to_string(), self.models.model().id.clone()),
            ("PI_REASONING_LEVEL".to_string(), self.models.thinking().as_str().to_string()),
        ];
        if let Some(file) = self.session.record().file_path() {
            ctx.env.push(("PI_SESSION_FILE".to_string(), file.display().to_string()));
        }
        ctx.shell = self.shell_settings();
        // The model's own image limits (pi's `inputLimits.images.resize`), unless `images.autoResize` is off;
        // a virtual selection's run fits the conversation's images into its routed model's (see `run`).
        ctx.image_resize =
            self.prefs.settings().image_auto_resize.then(|| crate::tools::image::Limits::of_model(self.models.model()));
        ctx.result_image_resize = ctx.image_resize;
        ctx.gate = self.ext.handle().gate();
        ctx.client = Some(self.client_link());
        // codemode's `store()` reads and appends the session through the actor.
        let link = crate::agent::session_link::ActorSessionLink::new(self.channels.emitter());
        ctx.session = Some(std::sync::Arc::new(link));
        ctx
    }

    /// The settings' `shellPath` (`~` expanded, as pi reads it) and
    /// `shellCommandPrefix`; empty values are unset.
    fn shell_settings(&self) -> crate::tools::shell::ShellSettings {
        let settings = self.prefs.settings();
        let path = settings.shell_path.as_deref().filter(|p| !p.is_empty());
        crate::tools::shell::ShellSettings {
            path: path.map(|p| crate::config::expand_home(std::path::Path::new(p))),
            command_prefix: settings.shell_command_prefix.clone().filter(|p| !p.is_empty()),
        }
    }

    /// The system prompt's sections for the active tools (pi 1.6.0's
    /// structure); system messages record them.
    pub(super) fn prompt_sections(&self) -> crate::system_prompt::Sections {
        use crate::system_prompt::{PromptTool, builtin_guidelines, builtin_snippet};
        // Built-in tools carry their snippet and rules; extension tools their
        // `promptSnippet` and `promptGuidelines` (pi leaves out tools without a snippet).
        let mut tools: Vec<PromptTool> = Vec::new();
        for (name, tool) in self.toolbox.active() {
            let guidelines = match tool.prompt_guidelines() {
                [] => builtin_guidelines(name).iter().map(|g| g.to_string()).collect(),
                own => own.to_vec(),
            };
            let snippet = tool.prompt_snippet().or(builtin_snippet(name)).map(str::to_string);
            tools.push(PromptTool { name: name.clone(), snippet, guidelines });
        }
        tools.extend(self.reach_tools());
        // codemode's `mode: "only"`: the prompt lists the tools the model is offered.
        let hidden = self.codemode_hidden_tools();
        tools.retain(|tool| !hidden.contains(&tool.name));
        let skills = self.skills_section();
        self.workspace.prompt_sections(&tools, skills.as_deref())
    }

    /// The active tools codemode's `mode: "only"` leaves out of requests
    /// (pi's `hiddenTools` of the prompt options).
    pub(super) fn codemode_hidden_tools(&self) -> Vec<String> {
        let (registry, specs) = self.active_tool_set();
        crate::mcp::turn::hidden_by_codemode(&registry, &specs, Some(&self.mcp), self.reach())
    }

    /// The system prompt text for the active tools.
    pub(super) fn system_prompt(&self) -> String {
        crate::system_prompt::render(&self.prompt_sections())
    }
}
