//! Request-side helpers shared by the wire APIs: header lists and lookups,
//! prompt-cache retention, pi's thinking-budget arithmetic
//! (`simple-options.js`), compat-flag reading, and pi's tolerant JSON parse
//! (`parseJsonWithRepair`).

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use super::ProviderRequest;
use crate::model::{Model, ThinkingBudgets, ThinkingLevel};

/// Prompt-cache retention (pi's `cacheRetention`): a call's own option, else
/// `PI_CACHE_RETENTION=long` asks for the long variant, anything else is
/// short; `None` (a call's `"none"`) asks for no prompt caching at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRetention {
    None,
    Short,
    Long,
}

impl CacheRetention {
    pub fn from_env() -> CacheRetention {
        match std::env::var("PI_CACHE_RETENTION") {
            Ok(v) if v == "long" => CacheRetention::Long,
            _ => CacheRetention::Short,
        }
    }

    /// A call's `cacheRetention` value.
    pub fn named(name: &str) -> Option<CacheRetention> {
        match name {
            "none" => Some(CacheRetention::None),
            "short" => Some(CacheRetention::Short),
            "long" => Some(CacheRetention::Long),
            _ => None,
        }
    }

    /// The retention of a request: its caller's, else the environment's.
    pub fn of(request: &ProviderRequest) -> CacheRetention {
        request.api_options.cache_retention.unwrap_or_else(CacheRetention::from_env)
    }
}

/// True when `headers` holds `name` (case-insensitively) with a non-blank value.
pub fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(k, v)| k.eq_ignore_ascii_case(name) && !v.trim().is_empty())
}

/// Set a header, replacing an earlier value of the same name (case-insensitively).
pub fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: impl Into<String>) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_string(), value.into()));
}

/// The user's home directory (`$HOME`, else `/`), for credential files
/// (`~/.config/gcloud/…`, `~/.aws/…`).
pub fn home_dir() -> std::path::PathBuf {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from).unwrap_or_else(|| "/".into())
}

static ATTRIBUTION: AtomicBool = AtomicBool::new(true);

/// Turn pi's provider attribution headers on or off for the process (pi:
/// on while install telemetry is, i.e. `PI_TELEMETRY`, else the settings'
/// `enableInstallTelemetry`, default on).
pub fn set_attribution(enabled: bool) {
    ATTRIBUTION.store(enabled, Ordering::Relaxed);
}

/// Whether attribution headers are sent.
pub fn attribution_enabled() -> bool {
    ATTRIBUTION.load(Ordering::Relaxed)
}

fn base_url_host(base_url: &str) -> Option<&str> {
    let rest = base_url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h))
}

/// pi's attribution headers for a model's target (its `getAttributionHeaders`
/// with pi's identity: name `pi`, URL `https://pi.dev`, category `cli-agent`):
/// OpenRouter's referer, title and categories, NVIDIA NIM's billing origin,
/// OpenCode's client name. Empty when attribution is off.
pub fn attribution_headers(model: &Model) -> Vec<(&'static str, &'static str)> {
    if !attribution_enabled() {
        return Vec::new();
    }
    let host = base_url_host(&model.base_url).map(str::to_ascii_lowercase);
    let provider = model.provider.as_str();
    if provider == "openrouter" || model.base_url.contains("openrouter.ai") {
        vec![("HTTP-Referer", "https://pi.dev"), ("X-OpenRouter-Title", "pi"), ("X-OpenRouter-Categories", "cli-agent")]
    } else if provider == "nvidia" || host.as_deref() == Some("integrate.api.nvidia.com") {
        vec![("X-BILLING-INVOKE-ORIGIN", "Pi")]
    } else if matches!(provider, "opencode" | "opencode-go") || host.as_deref() == Some("opencode.ai") {
        vec![("x-opencode-client", "pi")]
    } else {
        Vec::new()
    }
}

/// The request's own headers, sorted (requests are reproducible), plus
/// OpenCode's per-conversation routing header (`x-opencode-session`) that pi
/// adds for the `opencode` and `opencode-go` providers unless configured, and
/// pi's attribution headers ([`attribution_headers`]) where neither the model
/// nor the request sets them (configured headers win, as in pi).
pub fn request_headers(request: &ProviderRequest) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = request.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    out.sort();
    let opencode = matches!(request.model.provider.as_str(), "opencode" | "opencode-go");
    if let Some(id) = request.session_id.as_deref().filter(|_| opencode)
        && !out.iter().any(|(k, _)| k.eq_ignore_ascii_case("x-opencode-session"))
    {
        out.push(("x-opencode-session".to_string(), id.to_string()));
    }
    let in_model =
        |name: &str| request.model.headers.as_ref().is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case(name)));
    for (name, value) in attribution_headers(&request.model) {
        if !in_model(name) && !out.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// The model's string headers, then the request's ([`request_headers`]);
/// later entries replace earlier ones of the same name.
pub fn configured_headers(request: &ProviderRequest) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(h) = &request.model.headers {
        for (k, v) in h {
            if let Some(s) = v.as_str() {
                set_header(&mut out, k, s);
            }
        }
    }
    for (k, v) in request_headers(request) {
        set_header(&mut out, &k, v);
    }
    out
}

/// A boolean compat flag of the model, if set.
pub fn compat_bool(model: &Model, key: &str) -> Option<bool> {
    model.compat.as_ref().and_then(|c| c.get(key)).and_then(Value::as_bool)
}

/// A compat value of the model, if set and not null.
pub fn compat_value<'a>(model: &'a Model, key: &str) -> Option<&'a Value> {
    model.compat.as_ref().and_then(|c: &Map<String, Value>| c.get(key)).filter(|v| !v.is_null())
}

/// The model's `thinkingLevelMap` entry: `None` when absent, `Some(Null)` when mapped to null.
pub fn level_entry(model: &Model, level: ThinkingLevel) -> Option<&Value> {
    model.thinking_level_map.as_ref().and_then(|m| m.get(level.as_str()))
}

/// The model's string value for a level, if it maps the level to a string.
pub fn level_string(model: &Model, level: ThinkingLevel) -> Option<&str> {
    level_entry(model, level).and_then(Value::as_str)
}

/// True unless the model maps `off` to null (thinking cannot be turned off).
pub fn off_allowed(model: &Model) -> bool {
    !matches!(level_entry(model, ThinkingLevel::Off), Some(Value::Null))
}

/// Tokens always left for the answer when a thinking budget shares the output cap.
pub const MIN_ANSWER_TOKENS: u64 = 1024;

/// The thinking budget of `level`: the caller's `thinkingBudgets`, else pi's
/// defaults (`xhigh` and `max` use `high`'s).
pub fn thinking_budget(level: ThinkingLevel, custom: &ThinkingBudgets) -> u64 {
    if let Some(budget) = custom.for_level(level) {
        return budget;
    }
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 16384,
    }
}

/// Cap a thinking budget so at least [`MIN_ANSWER_TOKENS`] remain under `ceiling`.
pub fn budget_within(budget: u64, ceiling: u64) -> u64 {
    budget.min(ceiling.saturating_sub(MIN_ANSWER_TOKENS))
}

/// pi's `adjustMaxTokensForThinking` with an explicit base cap: the output cap
/// grows by the budget up to the model's cap, and the budget shrinks when it
/// would not leave room for an answer. Returns `(max_tokens, budget)`.
pub fn adjust_for_thinking(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ThinkingLevel,
    custom: &ThinkingBudgets,
) -> (u64, u64) {
    let budget = thinking_budget(level, custom);
    let max_tokens = (base_max_tokens + budget).min(model_max_tokens);
    let budget = if max_tokens <= budget { budget_within(budget, max_tokens) } else { budget };
    (max_tokens, budget)
}

/// pi's `repairJson`: escape raw control characters inside strings and double
/// backslashes that start no valid escape.
pub fn repair_json(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() + 8);
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            in_string = c == '"';
            i += 1;
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.get(i + 1) {
                None => out.push_str("\\\\"),
                Some('u') if chars.len() >= i + 6 && chars[i + 2..i + 6].iter().all(char::is_ascii_hexdigit) => {
                    out.extend(&chars[i..i + 6]);
                    i += 5;
                }
                Some(&n) if matches!(n, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push('\\');
                    out.push(n);
                    i += 1;
                }
                Some(_) => out.push_str("\\\\"),
            },
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// pi's `parseJsonWithRepair`: parse, else parse the repaired text; the error
/// is the first parse's.
pub fn parse_json_with_repair(json: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(json) {
        Ok(v) => Ok(v),
        Err(first) => {
            let repaired = repair_json(json);
            if repaired != json { serde_json::from_str(&repaired) } else { Err(first) }
        }
    }
}

/// A JSON value serialized the way JavaScript's `JSON.stringify` writes it
/// (compact; integral floats without a fraction).
pub fn js_json(value: &Value) -> String {
    fn normalize(v: &Value) -> Value {
        match v {
            Value::Number(n) if n.is_f64() => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
                _ => v.clone(),
            },
            Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()),
            other => other.clone(),
        }
    }
    normalize(value).to_string()
}

/// A JavaScript-truthy option value (pi-ai tests `if (options.toolChoice)`).
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_repaired_like_pi() {
        assert_eq!(repair_json("{\"a\":\"x\ny\"}"), "{\"a\":\"x\\ny\"}");
        assert_eq!(repair_json(r#"{"p":"C:\dir"}"#), r#"{"p":"C:\\dir"}"#);
        assert_eq!(repair_json(r#"{"u":"\u00e9 \uzz"}"#), r#"{"u":"\u00e9 \\uzz"}"#);
        assert_eq!(parse_json_with_repair("{\"a\":\"x\ty\"}").unwrap(), json!({"a": "x\ty"}));
        assert!(parse_json_with_repair("{\"a\":").is_err());
    }

    #[test]
    fn thinking_budgets_follow_simple_options() {
        let pi = ThinkingBudgets::default();
        assert_eq!(adjust_for_thinking(64_000, 64_000, ThinkingLevel::Medium, &pi), (64_000, 8192));
        assert_eq!(adjust_for_thinking(1000, 64_000, ThinkingLevel::Low, &pi), (3048, 2048));
        assert_eq!(adjust_for_thinking(8192, 8192, ThinkingLevel::High, &pi), (8192, 7168));
        assert_eq!(adjust_for_thinking(500, 1000, ThinkingLevel::Minimal, &pi), (1000, 0));
        // The caller's budget for the level, `xhigh` taking `high`'s.
        let custom = ThinkingBudgets { high: Some(3000), ..Default::default() };
        assert_eq!(adjust_for_thinking(1000, 64_000, ThinkingLevel::Xhigh, &custom), (4000, 3000));
        assert_eq!(adjust_for_thinking(1000, 64_000, ThinkingLevel::Low, &custom), (3048, 2048));
        assert_eq!(thinking_budget(ThinkingLevel::Max, &pi), 16384);
    }

    #[test]
    fn js_json_writes_integral_floats_as_integers() {
        assert_eq!(js_json(&json!({"a": 1.0, "b": [2.5, 3.0], "c": "x"})), r#"{"a":1,"b":[2.5,3],"c":"x"}"#);
    }
}
