//! pi's `cache_warming_decision` for extensions: before each prompt-cache
//! refresh, every handler sees pi's own decision (`warmCost`, `missCost`,
//! `continuationProbability`, `action`), in extension load order; the last
//! handler that returns an `action` decides. A failing handler is reported
//! (`extension_error`) and changes nothing.

use serde_json::{Value, json};

use super::Extensions;

impl Extensions {
    /// The action the handlers leave: pi's `action` unless one returned another.
    pub async fn cache_warming_decision(
        &self,
        warm_cost: f64,
        miss_cost: f64,
        continuation_probability: f64,
        action: &str,
    ) -> Value {
        let event = json!({
            "warmCost": warm_cost,
            "missCost": miss_cost,
            "continuationProbability": continuation_probability,
            "action": action,
        });
        let mut decided = Value::String(action.to_string());
        for ext in self.subscribers("cache_warming_decision") {
            let Some(answer) = self.ask(&ext, "cache_warming_decision", event.clone(), None).await else {
                continue;
            };
            if let Some(returned) = answer.get("action") {
                decided = returned.clone();
            }
        }
        decided
    }
}
