//! The run's system messages (pi 1.6.0): before each model request the
//! prompt sections and tools the model should have are compared with what
//! the conversation's system messages declared so far, and one system
//! message declares the difference. A new session's first request declares
//! everything; a resumed or forked one declares nothing new unless the
//! prompt or the tools changed; a session written before system messages
//! existed gets the whole declaration at its next request.

use serde_json::{Map, Value, json};

use super::run::RunSetup;
use crate::message::{AgentMessage, SystemMessage, ToolDeclaration};
use crate::provider::ToolSpec;
use crate::provider::strict_schema::prefers_strict;
use crate::system_message::replay;
use crate::system_prompt::{Sections, render, with_extra_sections};

/// A tool as the model is told of it (pi's built-in read, bash, edit and
/// write ask for constrained sampling).
pub(crate) fn declaration(spec: &ToolSpec) -> ToolDeclaration {
    ToolDeclaration {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec.parameters.clone(),
        constrained_sampling: prefers_strict(spec).then(|| json!({"type": "json_schema", "strict": "prefer"})),
        extra: Map::new(),
    }
}

/// The sections the model should have now.
pub(super) fn desired(s: &RunSetup) -> Sections {
    with_extra_sections(s.sections.clone(), &s.extra_sections)
}

/// The `systemPromptOptions` `before_agent_start` handlers left, when they
/// changed the run's (`base`): the run's sections are rebuilt from them, as
/// pi rebuilds its prompt from the options, and a `forceSystemPrompt` is the
/// prompt sent. Options whose sections pi would refuse leave the prompt as it was.
pub(super) fn apply_prompt_options(s: &mut RunSetup, options: Value, base: &Value) {
    if &options == base {
        return;
    }
    if let Ok(sections) = crate::system_prompt::options::sections(&options, crate::system_prompt::docs_root()) {
        s.sections = sections;
        s.extra_sections.clear();
        s.prompt_options = Some(options.clone());
    }
    s.system_prompt = match options.get("forceSystemPrompt").and_then(Value::as_str) {
        Some(forced) => forced.to_string(),
        None => render(&desired(s)),
    };
}

/// The tools changed during a run whose options extensions changed: the
/// sections are rebuilt from those options with the new tools selected.
pub(super) fn retool_prompt_options(s: &mut RunSetup) {
    let Some(options) = &mut s.prompt_options else { return };
    options["selectedTools"] = Value::Array(s.tool_specs.iter().map(|t| Value::String(t.name.clone())).collect());
    options["hiddenTools"] =
        json!(crate::mcp::turn::hidden_by_codemode(&s.tools, &s.tool_specs, s.mcp.as_ref(), s.reach));
    if let Ok(sections) = crate::system_prompt::options::sections(options, crate::system_prompt::docs_root()) {
        s.sections = sections;
    }
}

/// After the `before_agent_start` hooks: a prompt they replaced is sent as
/// it is, while the system messages go on recording the sections.
pub(super) fn note_forced_prompt(s: &mut RunSetup) {
    if s.system_prompt != render(&desired(s)) {
        s.forced_prompt = Some(s.system_prompt.clone());
    }
}

/// The system message the next request needs, given the conversation so
/// far and the request's tools; `None` when the model has them already.
pub(super) fn update(s: &RunSetup, context: &[AgentMessage], specs: &[ToolSpec]) -> Option<SystemMessage> {
    let tools: Vec<ToolDeclaration> = specs.iter().map(declaration).collect();
    replay(context).update(&desired(s), &tools)
}

/// The system message the first request of a low-level run that was not
/// prepared needs (pi's `agent.continue()`, whose first turn does not
/// prepare the prompt): the tools' changes only, the sections kept as the
/// conversation declared them (all of [`update`] when it declared none).
pub(super) fn tools_update(s: &RunSetup, context: &[AgentMessage], specs: &[ToolSpec]) -> Option<SystemMessage> {
    let declared = replay(context);
    let kept: Vec<(String, String)> =
        declared.sections.iter().filter_map(|(name, text)| Some((name.clone(), text.as_str()?.to_string()))).collect();
    if kept.is_empty() {
        return update(s, context, specs);
    }
    let tools: Vec<ToolDeclaration> = specs.iter().map(declaration).collect();
    declared.update(&kept, &tools)
}

/// The system prompt of a request made with `messages`: a forced prompt,
/// else what their system messages declare (the run's sections when an
/// extension's `context` hook left none).
pub(super) fn prompt(s: &RunSetup, messages: &[AgentMessage]) -> String {
    if let Some(forced) = &s.forced_prompt {
        return forced.clone();
    }
    let declared = replay(messages);
    if declared.is_empty() { render(&desired(s)) } else { declared.prompt() }
}
