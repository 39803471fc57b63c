//! The session's config options (`model`, `thought_level`, `mode`) and the
//! legacy session modes, both built from what the session task knows.

use agent_client_protocol_schema::v1 as acp;
use pi_core::client::ApprovalMode;
use pi_core::model::{Model, ThinkingLevel};

/// Config option ids.
pub const MODEL: &str = "model";
pub const THOUGHT_LEVEL: &str = "thought_level";
pub const MODE: &str = "mode";

/// What the options show.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    pub models: Vec<Model>,
    pub model: Option<Model>,
    pub thinking: Option<ThinkingLevel>,
    pub mode: ApprovalMode,
}

fn mode_text(mode: ApprovalMode) -> (&'static str, &'static str) {
    match mode {
        ApprovalMode::Ask => ("Ask", "Ask before changing files or running commands"),
        ApprovalMode::Auto => ("Auto", "Run every tool without asking"),
        ApprovalMode::ReadOnly => ("Read only", "Never change files or run commands"),
    }
}

/// `provider/id`: the value of a model option.
pub fn model_value(model: &Model) -> String {
    format!("{}/{}", model.provider, model.id)
}

impl Choices {
    /// Every config option, in the order editors should show them.
    pub fn options(&self) -> Vec<acp::SessionConfigOption> {
        let mut options = Vec::new();
        let modes: Vec<acp::SessionConfigSelectOption> = ApprovalMode::ALL
            .iter()
            .map(|m| {
                let (name, description) = mode_text(*m);
                acp::SessionConfigSelectOption::new(m.as_str(), name).description(description.to_string())
            })
            .collect();
        options.push(
            acp::SessionConfigOption::select(MODE, "Mode", self.mode.as_str(), modes)
                .description("When tools ask for approval".to_string())
                .category(acp::SessionConfigOptionCategory::Mode),
        );
        if let Some(current) = &self.model {
            let mut models: Vec<acp::SessionConfigSelectOption> = self
                .models
                .iter()
                .map(|m| acp::SessionConfigSelectOption::new(model_value(m), m.name.clone()))
                .collect();
            if !self.models.iter().any(|m| model_value(m) == model_value(current)) {
                models.insert(0, acp::SessionConfigSelectOption::new(model_value(current), current.name.clone()));
            }
            options.push(
                acp::SessionConfigOption::select(MODEL, "Model", model_value(current), models)
                    .category(acp::SessionConfigOptionCategory::Model),
            );
            let levels: Vec<acp::SessionConfigSelectOption> = current
                .thinking_levels()
                .into_iter()
                .map(|l| acp::SessionConfigSelectOption::new(l.as_str(), l.as_str()))
                .collect();
            let level = self.thinking.unwrap_or(ThinkingLevel::Off);
            options.push(
                acp::SessionConfigOption::select(THOUGHT_LEVEL, "Thinking", level.as_str(), levels)
                    .category(acp::SessionConfigOptionCategory::ThoughtLevel),
            );
        }
        options
    }

    /// The legacy session modes (the same as the `mode` option).
    pub fn modes(&self) -> acp::SessionModeState {
        let available = ApprovalMode::ALL
            .iter()
            .map(|m| {
                let (name, description) = mode_text(*m);
                acp::SessionMode::new(m.as_str(), name).description(description.to_string())
            })
            .collect();
        acp::SessionModeState::new(self.mode.as_str(), available)
    }
}
