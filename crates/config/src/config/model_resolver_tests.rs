//! The resolver against pi 1.6.0's recorded answers (same catalog, same keys),
//! and a few rules spelled out.

use super::*;
use serde_json::Value;

fn model(provider: &str, id: &str) -> Model {
    let mut m = crate::provider::faux::faux_model();
    m.provider = provider.into();
    m.id = id.into();
    m.name = id.into();
    m
}

#[test]
fn collation_orders_like_javascript_locale_compare() {
    // Punctuation before digits before letters; case only breaks ties.
    assert_eq!(collate("claude-sonnet-4-6", "claude-sonnet-4-5"), Ordering::Greater);
    assert_eq!(collate("gpt-4o", "gpt-4.1"), Ordering::Greater);
    assert_eq!(collate("a_b", "a-b"), Ordering::Less);
    assert_eq!(collate("Model", "model"), Ordering::Greater);
    assert_eq!(collate("z", "Ab"), Ordering::Greater);
}

#[test]
fn dated_ids_lose_to_aliases() {
    let models = [model("a", "m-1-20250101"), model("a", "m-1"), model("a", "m-0")];
    let r =
        resolve(Request { text: "m-", provider: None, suffix: SuffixRule::Strict, fuzzy: true }, &models, &|_| true);
    assert_eq!(r.outcome, Outcome::Found(Box::new(models[1].clone())));
}

#[test]
fn same_best_id_on_two_providers_is_ambiguous_unless_one_is_usable() {
    let models = [model("a", "shared-x"), model("b", "shared-x")];
    let request = Request { text: "shared", provider: None, suffix: SuffixRule::Strict, fuzzy: true };
    assert!(matches!(resolve(request, &models, &|_| false).outcome, Outcome::Ambiguous { usable_count: 0, .. }));
    assert_eq!(resolve(request, &models, &|p| p == "b").outcome, Outcome::Found(Box::new(models[1].clone())));
}

/// One scenario of the recording: keys set, then patterns and pi's answers.
fn recorded() -> Value {
    let text = include_str!("testdata/model_resolution.json");
    serde_json::from_str(text).expect("recording parses")
}

fn answer_of(result: &Result<Selected, String>) -> Value {
    match result {
        Ok(s) => serde_json::json!({
            "model": format!("{}/{}", s.model.provider, s.model.id),
            "thinking": s.thinking.map(|t| t.as_str()),
            "warning": s.warning,
            "reasoning": s.model.reasoning,
        }),
        Err(e) => serde_json::json!({ "error": e }),
    }
}

#[test]
fn cli_patterns_resolve_as_pi_1_6_0_recorded() {
    let recording = recorded();
    let mut catalog: Vec<Model> = super::super::catalog::catalog().to_vec();
    catalog.push(crate::provider::faux::faux_model());
    let mut checked = 0;
    let mut wrong = Vec::new();
    for scenario in recording["cli"].as_array().expect("cli scenarios") {
        let keys: Vec<&str> = scenario["keys"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let usable = |p: &str| p == "faux" || keys.contains(&p);
        for case in scenario["cases"].as_array().unwrap() {
            let pattern = case["model"].as_str().unwrap();
            let provider = case["provider"].as_str();
            let thinking = case["thinking"].as_str().map(|t| t.parse::<ThinkingLevel>().unwrap());
            let inline = case["apiKey"].as_bool().unwrap_or(false);
            let got = answer_of(&resolve_cli(&catalog, provider, pattern, thinking, inline, &usable));
            if got != case["pi"] {
                wrong.push(format!("keys {keys:?} {case}: pi-rpc {got}"));
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} recorded patterns");
    assert!(wrong.is_empty(), "{} of {checked} differ from pi 1.6.0:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn scope_patterns_resolve_as_pi_1_6_0_recorded() {
    let recording = recorded();
    let catalog = super::super::catalog::catalog();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for scenario in recording["scope"].as_array().expect("scope scenarios") {
        let keys: Vec<&str> = scenario["keys"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let available: Vec<Model> = catalog.iter().filter(|m| keys.contains(&m.provider.as_str())).cloned().collect();
        for case in scenario["cases"].as_array().unwrap() {
            let patterns: Vec<String> =
                case["patterns"].as_array().unwrap().iter().filter_map(Value::as_str).map(String::from).collect();
            let scope = resolve_scope(&patterns, &available);
            let got = serde_json::json!({
                "models": scope.models.iter().map(|(m, t)| serde_json::json!([format!("{}/{}", m.provider, m.id), t.map(|t| t.as_str())])).collect::<Vec<_>>(),
                "warnings": scope.warnings,
            });
            if got != case["pi"] {
                wrong.push(format!("keys {keys:?} {}: pi-rpc {got}", case["patterns"]));
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} recorded scope patterns");
    assert!(wrong.is_empty(), "{} of {checked} differ from pi 1.6.0:\n{}", wrong.len(), wrong.join("\n"));
}
