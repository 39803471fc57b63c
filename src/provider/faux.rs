//! The offline `faux` provider: deterministic, scriptable replies.

use tokio_util::sync::CancellationToken;

use super::{Provider, ProviderRequest, ProviderStream};
use crate::model::{Model, ModelCost};

/// Provider name of the offline model.
pub const FAUX_PROVIDER: &str = "faux";

/// The offline model.
pub fn faux_model() -> Model {
    Model {
        id: "faux-1".into(),
        name: "Faux (offline)".into(),
        api: "faux".into(),
        provider: FAUX_PROVIDER.into(),
        base_url: String::new(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        cost: ModelCost::default(),
        headers: None,
        thinking_level_map: None,
        compat: None,
    }
}

/// The offline provider.
#[derive(Clone, Default)]
pub struct FauxProvider {}

impl Provider for FauxProvider {
    fn api(&self) -> &'static str {
        "faux"
    }

    fn stream(&self, _request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
        Box::pin(futures::stream::empty())
    }
}
