//! The warming state's clock and rules, without timers or network.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::provider::faux::{FauxProvider, faux_model};

fn model(prompt_cache: Value) -> Model {
    let mut m = faux_model();
    m.cost = serde_json::from_value(json!({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75})).unwrap();
    m.extra.insert("promptCache".into(), prompt_cache);
    m
}

fn warmable(model: Model) -> Option<Box<WarmableRequest>> {
    let request = ProviderRequest {
        model,
        system_prompt: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
        thinking_level: crate::model::ThinkingLevel::Off,
        api_key: None,
        headers: Default::default(),
        max_tokens: None,
        session_id: Some("s".into()),
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    };
    Some(Box::new(WarmableRequest { provider: Arc::new(FauxProvider::new()), request }))
}

fn mark() -> ConversationMark {
    ConversationMark::new_for_tests(0, 2)
}

const FITS: fn(&Model, &ConversationMark) -> bool = |_, _| true;
const MOVED_ON: fn(&Model, &ConversationMark) -> bool = |_, _| false;

fn decision(action: cache_warming::WarmAction) -> Decision {
    Decision { action, ..cache_warming::evaluate(&model(json!({})), 1_000_000, Phase::Idle) }
}

#[test]
fn the_first_refresh_is_due_at_the_delay_and_sends_the_request_capped_at_one_token() {
    let mut warmer = CacheWarmer::default();
    let t0 = Instant::now();
    let (id, at) = warmer.start(warmable(model(json!({"short": 11}))), mark(), CacheWarmingMode::Idle, t0).unwrap();
    assert_eq!(at, t0 + Duration::from_secs(1));
    let due = warmer.due(id, CacheWarmingMode::Idle, FITS, at).expect("due");
    assert_eq!(due.phase, Phase::Streaming);
    let warm = decision(cache_warming::WarmAction::Warm);
    let refresh = warmer.decided(id, &warm, &json!("warm"), CacheWarmingMode::Idle, FITS, at).expect("a refresh");
    assert_eq!((refresh.request.max_tokens, refresh.note), (Some(1), None));
    assert!(warmer.refreshed(id, CacheWarmingMode::Idle, FITS));
    let later = at + Duration::from_millis(300);
    assert_eq!(warmer.reschedule(id, later), Some((id, later + Duration::from_secs(1))));
}

#[test]
fn nothing_is_warmed_without_a_lifetime_or_with_warming_off() {
    let mut warmer = CacheWarmer::default();
    let now = Instant::now();
    assert!(warmer.start(None, mark(), CacheWarmingMode::Idle, now).is_none());
    assert!(warmer.start(warmable(model(json!({"short": 10}))), mark(), CacheWarmingMode::Idle, now).is_none());
    assert!(warmer.start(warmable(model(json!({"short": 300}))), mark(), CacheWarmingMode::Off, now).is_none());
    assert!(warmer.start(warmable(model(json!({"long": 3600}))), mark(), CacheWarmingMode::Idle, now).is_none());
}

#[test]
fn an_extension_override_is_noted_and_its_stop_ends_the_run() {
    let mut warmer = CacheWarmer::default();
    let t0 = Instant::now();
    let (id, at) = warmer.start(warmable(model(json!({"short": 11}))), mark(), CacheWarmingMode::Idle, t0).unwrap();
    warmer.due(id, CacheWarmingMode::Idle, FITS, at).unwrap();
    let stop = decision(cache_warming::WarmAction::Stop);
    let refresh = warmer.decided(id, &stop, &json!("warm"), CacheWarmingMode::Idle, FITS, at).unwrap();
    assert_eq!(refresh.note, Some("extension override"));
    let (id, at) = warmer.reschedule(id, at).unwrap();
    warmer.due(id, CacheWarmingMode::Idle, FITS, at).unwrap();
    let warm = decision(cache_warming::WarmAction::Warm);
    assert!(warmer.decided(id, &warm, &json!("stop"), CacheWarmingMode::Idle, FITS, at).is_none());
    assert!(refresh.cancel.is_cancelled(), "the run is over");
    assert!(warmer.reschedule(id, at).is_none());
}

#[test]
fn a_late_timer_a_moved_conversation_or_a_new_request_end_the_run() {
    let mut warmer = CacheWarmer::default();
    let t0 = Instant::now();
    let fresh = || warmable(model(json!({"short": 11})));
    // 11 s lifetime, refresh at 1 s: half of the 10 s margin is the slack.
    let (id, at) = warmer.start(fresh(), mark(), CacheWarmingMode::Idle, t0).unwrap();
    assert!(warmer.due(id, CacheWarmingMode::Idle, FITS, at + Duration::from_millis(5001)).is_none());
    let (id, at) = warmer.start(fresh(), mark(), CacheWarmingMode::Idle, t0).unwrap();
    assert!(warmer.due(id, CacheWarmingMode::Idle, MOVED_ON, at).is_none());
    let (first, _) = warmer.start(fresh(), mark(), CacheWarmingMode::Idle, t0).unwrap();
    let (second, at) = warmer.start(fresh(), mark(), CacheWarmingMode::Idle, t0).unwrap();
    assert!(warmer.due(first, CacheWarmingMode::Idle, FITS, at).is_none(), "a stale timer does nothing");
    assert!(warmer.due(second, CacheWarmingMode::Idle, FITS, at).is_some());
}

#[test]
fn settling_goes_idle_or_stops_in_streaming_mode() {
    let mut warmer = CacheWarmer::default();
    let t0 = Instant::now();
    let fresh = || warmable(model(json!({"short": 11})));
    let (id, at) = warmer.start(fresh(), mark(), CacheWarmingMode::Streaming, t0).unwrap();
    warmer.on_agent_settled(CacheWarmingMode::Streaming, t0);
    assert!(warmer.due(id, CacheWarmingMode::Streaming, FITS, at).is_none());
    let (id, at) = warmer.start(fresh(), mark(), CacheWarmingMode::Idle, t0).unwrap();
    warmer.on_agent_settled(CacheWarmingMode::Idle, t0);
    assert_eq!(warmer.due(id, CacheWarmingMode::Idle, FITS, at).map(|d| d.phase), Some(Phase::Idle));
    // Switching to `streaming` while idle stops at the next step.
    let (id, at) = warmer.start(fresh(), mark(), CacheWarmingMode::Idle, t0).unwrap();
    warmer.on_agent_settled(CacheWarmingMode::Idle, t0);
    assert!(warmer.due(id, CacheWarmingMode::Streaming, FITS, at).is_none());
}

#[test]
fn idle_warming_ends_thirty_minutes_after_the_request() {
    let mut warmer = CacheWarmer::default();
    let t0 = Instant::now();
    let (mut id, mut at) =
        warmer.start(warmable(model(json!({"short": 300}))), mark(), CacheWarmingMode::Idle, t0).unwrap();
    warmer.on_agent_settled(CacheWarmingMode::Idle, t0);
    let warm = decision(cache_warming::WarmAction::Warm);
    let mut refreshes = 0;
    while warmer.due(id, CacheWarmingMode::Idle, FITS, at).is_some() {
        warmer.decided(id, &warm, &json!("warm"), CacheWarmingMode::Idle, FITS, at).unwrap();
        refreshes += 1;
        match warmer.reschedule(id, at) {
            Some(next) => (id, at) = next,
            None => break,
        }
    }
    // Refreshes every 270 s: at 270 s … 1620 s; the next (1890 s) is past 30 minutes.
    assert_eq!(refreshes, 6);
}
