//! Model patterns resolved as pi 1.6.0 resolves them: `provider/id` (the
//! provider part only a hint), exact ids, then fuzzy id/name matches that
//! prefer providers with credentials, alias ids over dated ones, then the
//! newest id; a `:<thinking>` suffix; `--models` scopes with globs. The
//! answers are checked against recordings of pi itself
//! (`src/config/testdata/model_resolution.json`).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::sync::OnceLock;

use globset::GlobBuilder;
use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};

use crate::model::{Model, ThinkingLevel};

/// How a `:<suffix>` at the end of a pattern is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuffixRule {
    /// The whole text is the id (exact lookups).
    Ignore,
    /// A valid level is split off; an invalid one is dropped with a warning.
    Lenient,
    /// A valid level is split off; an invalid one stays part of the id.
    Strict,
}

/// The outcome of resolving one pattern, with the pattern's thinking level
/// and a warning (an invalid `:<level>` dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub outcome: Outcome,
    pub thinking: Option<ThinkingLevel>,
    pub warning: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Found(Box<Model>),
    /// Several providers offer the best match and credentials do not decide.
    Ambiguous {
        candidates: Vec<Model>,
        usable_count: usize,
    },
    /// Nothing matched; `target` is set when the pattern names a known provider
    /// (a custom id on it can then be used).
    NotFound {
        target: Option<CustomTarget>,
    },
}

impl Outcome {
    fn resolution(self) -> Resolution {
        Resolution { outcome: self, thinking: None, warning: None }
    }
}

fn not_found() -> Resolution {
    Outcome::NotFound { target: None }.resolution()
}

/// A provider named by a pattern whose model id it does not list.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomTarget {
    pub provider: String,
    /// The provider's models, its first one first.
    pub provider_models: Vec<Model>,
    /// The model part of the pattern, suffix included.
    pub model_text: String,
    /// The model part without a valid `:<thinking>` suffix.
    pub model_id: String,
    pub thinking: Option<ThinkingLevel>,
}

/// One pattern to resolve.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub text: &'a str,
    /// `--provider`: only this provider's models are considered.
    pub provider: Option<&'a str>,
    pub suffix: SuffixRule,
    pub fuzzy: bool,
}

/// Resolve `request` among `models`; `usable` (has credentials) only breaks
/// ties between providers.
pub fn resolve<M: Borrow<Model>>(request: Request<'_>, models: &[M], usable: &dyn Fn(&str) -> bool) -> Resolution {
    let text = request.text.trim();
    if text.is_empty() {
        return not_found();
    }
    let constraint = request.provider.map(str::to_lowercase);
    let models = models.iter().map(<M as Borrow<Model>>::borrow);
    let pool: Vec<&Model> = match &constraint {
        Some(c) => models.filter(|m| m.provider.to_lowercase() == *c).collect(),
        None => models.collect(),
    };
    let result = resolve_text(text, request, &pool, usable);
    if !matches!(result.outcome, Outcome::NotFound { .. }) {
        return result;
    }
    let split = split_provider_prefix(text, &pool);
    let anchor = match (&constraint, &split) {
        (Some(_), _) => pool.first().copied(),
        (None, Some((provider, _))) => pool.iter().copied().find(|m| m.provider == *provider),
        (None, None) => None,
    };
    let Some(anchor) = anchor else { return result };
    let model_text = split.map_or(text, |(_, rest)| rest).to_string();
    let suffix = if request.suffix == SuffixRule::Ignore { None } else { split_thinking_suffix(&model_text) };
    let mut provider_models = vec![anchor.clone()];
    provider_models.extend(
        pool.iter().filter(|m| m.provider == anchor.provider && !std::ptr::eq(**m, anchor)).map(|m| (*m).clone()),
    );
    Outcome::NotFound {
        target: Some(CustomTarget {
            provider: anchor.provider.clone(),
            provider_models,
            model_id: suffix.map_or_else(|| model_text.clone(), |(base, _)| base.to_string()),
            thinking: suffix.map(|(_, level)| level),
            model_text,
        }),
    }
    .resolution()
}

/// `text:<level>` split when `<level>` is a thinking level.
pub fn split_thinking_suffix(text: &str) -> Option<(&str, ThinkingLevel)> {
    let (base, suffix) = text.rsplit_once(':')?;
    suffix.parse::<ThinkingLevel>().ok().map(|level| (base, level))
}

/// The longest known provider id that prefixes `text` before a `/`, and the rest.
fn split_provider_prefix<'t>(text: &'t str, models: &[&Model]) -> Option<(String, &'t str)> {
    let lower = text.to_lowercase();
    let mut best: Option<(String, &'t str)> = None;
    for model in models {
        let prefix = model.provider.trim().to_lowercase();
        if prefix.is_empty() || best.as_ref().is_some_and(|(p, _)| p.len() >= model.provider.len()) {
            continue;
        }
        // Lower-casing can change byte lengths; fall back to no split then.
        if lower.len() != text.len() {
            continue;
        }
        let Some(slash) = lower.get(prefix.len()..).and_then(|rest| rest.find('/')).map(|i| i + prefix.len()) else {
            continue;
        };
        if lower[..slash].trim() != prefix {
            continue;
        }
        let rest = text[slash + 1..].trim();
        if !rest.is_empty() {
            best = Some((model.provider.clone(), rest));
        }
    }
    best
}

fn resolve_text(text: &str, request: Request<'_>, pool: &[&Model], usable: &dyn Fn(&str) -> bool) -> Resolution {
    if let Some(found) = select_reference(text, pool, request.fuzzy, usable) {
        return found.resolution();
    }
    if request.fuzzy
        && let Some(found) = select_fuzzy(&fuzzy_matches(text, pool), usable)
    {
        return found.resolution();
    }
    if request.suffix == SuffixRule::Ignore {
        return not_found();
    }
    if let Some((base, level)) = split_thinking_suffix(text) {
        let inner = resolve_text(base, request, pool, usable);
        if matches!(inner.outcome, Outcome::NotFound { .. }) {
            return inner;
        }
        let thinking = if inner.warning.is_some() { None } else { Some(level) };
        return Resolution { thinking, ..inner };
    }
    // An invalid suffix stays part of the id (and fails) rather than pick another model.
    if request.suffix == SuffixRule::Strict {
        return not_found();
    }
    let Some((base, suffix)) = text.rsplit_once(':') else {
        return not_found();
    };
    let inner = resolve_text(base, request, pool, usable);
    if matches!(inner.outcome, Outcome::NotFound { .. }) {
        return inner;
    }
    Resolution {
        thinking: None,
        warning: Some(format!("Invalid thinking level \"{suffix}\" in pattern \"{text}\". Using default instead.")),
        ..inner
    }
}

/// Exact ids, with `provider/` read as a hint: the named provider wins when
/// usable, else a sole usable provider of the whole text as an id.
fn select_reference(text: &str, pool: &[&Model], fuzzy: bool, usable: &dyn Fn(&str) -> bool) -> Option<Outcome> {
    let lower = text.to_lowercase();
    let raw: Vec<&Model> = pool.iter().copied().filter(|m| m.id.to_lowercase() == lower).collect();
    let named: Option<&Model> = split_provider_prefix(text, pool).and_then(|(provider, rest)| {
        let own: Vec<&Model> = pool.iter().copied().filter(|m| m.provider == provider).collect();
        let rest_lower = rest.to_lowercase();
        own.iter()
            .copied()
            .find(|m| m.id.to_lowercase() == rest_lower)
            .or_else(|| raw.iter().copied().find(|m| m.provider == provider))
            .or_else(|| if fuzzy { best_fuzzy_match(&fuzzy_matches(rest, &own)) } else { None })
    });
    let others: Vec<&Model> = raw.iter().copied().filter(|m| named.is_none_or(|n| !std::ptr::eq(*m, n))).collect();
    let candidates: Vec<&Model> = named.into_iter().chain(others.iter().copied()).collect();
    let first = candidates.first()?;
    if candidates.iter().all(|m| m.provider == first.provider) {
        return Some(found(first));
    }
    if let Some(n) = named
        && usable(&n.provider)
    {
        return Some(found(n));
    }
    let usable_others: Vec<&Model> = others.iter().copied().filter(|m| usable(&m.provider)).collect();
    if usable_others.len() == 1 {
        return Some(found(usable_others[0]));
    }
    if let (true, Some(n)) = (usable_others.is_empty(), named) {
        return Some(found(n));
    }
    Some(Outcome::Ambiguous {
        candidates: candidates.into_iter().cloned().collect(),
        usable_count: usable_others.len(),
    })
}

fn found(model: &Model) -> Outcome {
    Outcome::Found(Box::new(model.clone()))
}

/// Models whose id or name contains `text` (case-insensitive).
fn fuzzy_matches<'m>(text: &str, models: &[&'m Model]) -> Vec<&'m Model> {
    let lower = text.to_lowercase();
    models
        .iter()
        .copied()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect()
}

fn select_fuzzy(matches: &[&Model], usable: &dyn Fn(&str) -> bool) -> Option<Outcome> {
    let first = matches.first()?;
    let several_providers = matches.iter().any(|m| m.provider != first.provider);
    let usable_matches: Vec<&Model> =
        if several_providers { matches.iter().copied().filter(|m| usable(&m.provider)).collect() } else { Vec::new() };
    let pool: &[&Model] = if usable_matches.is_empty() { matches } else { &usable_matches };
    let best = best_fuzzy_match(pool)?;
    // The same id on several providers would otherwise be decided by catalog order.
    let tied: Vec<&Model> = pool.iter().copied().filter(|m| m.id == best.id).collect();
    if tied.iter().all(|m| m.provider == best.provider) {
        return Some(found(best));
    }
    let usable_count = if usable_matches.is_empty() { 0 } else { tied.len() };
    Some(Outcome::Ambiguous { candidates: tied.into_iter().cloned().collect(), usable_count })
}

/// Aliases (`claude-sonnet-4-5`) over dated ids (`claude-sonnet-4-5-20250929`),
/// then the id that collates last (the newest).
fn best_fuzzy_match<'m>(matches: &[&'m Model]) -> Option<&'m Model> {
    let aliases: Vec<&Model> = matches.iter().copied().filter(|m| is_alias(&m.id)).collect();
    let pool = if aliases.is_empty() { matches } else { &aliases[..] };
    // The first of the greatest, as a stable descending sort would give.
    let mut best: Option<&Model> = None;
    for m in pool.iter().copied() {
        if best.is_none_or(|b| collate(&m.id, &b.id) == Ordering::Greater) {
            best = Some(m);
        }
    }
    best
}

fn is_alias(id: &str) -> bool {
    if id.ends_with("-latest") {
        return true;
    }
    let bytes = id.as_bytes();
    let dated =
        bytes.len() >= 9 && bytes[bytes.len() - 9] == b'-' && bytes[bytes.len() - 8..].iter().all(u8::is_ascii_digit);
    !dated
}

/// Unicode root collation, as JavaScript's `localeCompare` orders ids.
pub fn collate(a: &str, b: &str) -> Ordering {
    static COLLATOR: OnceLock<Option<CollatorBorrowed<'static>>> = OnceLock::new();
    match COLLATOR.get_or_init(|| Collator::try_new(Default::default(), CollatorOptions::default()).ok()) {
        Some(c) => c.compare(a, b),
        None => a.cmp(b),
    }
}

/// A pattern of `--models` resolved: the models it adds, and warnings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    pub models: Vec<(Model, Option<ThinkingLevel>)>,
    pub warnings: Vec<String>,
}

/// Resolve `--models` patterns among the available models (pi's
/// `resolveModelScope`): globs match `provider/id` or `id`; other patterns
/// resolve like `--model`, and a pattern matching several providers adds all
/// of them (with a warning).
pub fn resolve_scope(patterns: &[String], models: &[Model]) -> Scope {
    let mut scope = Scope::default();
    let add = |scope: &mut Scope, model: &Model, level: Option<ThinkingLevel>| {
        if !scope.models.iter().any(|(m, _)| m.provider == model.provider && m.id == model.id) {
            scope.models.push((model.clone(), level));
        }
    };
    let ambiguous = |scope: &mut Scope, pattern: &str, candidates: &[Model]| {
        let mut providers: Vec<&str> = candidates.iter().map(|m| m.provider.as_str()).collect();
        providers.sort_by(|a, b| collate(a, b));
        providers.dedup();
        scope.warnings.push(format!(
            "Pattern \"{pattern}\" matches several providers: {}. Use provider/id to choose one.",
            providers.join(", ")
        ));
    };
    let all_usable = |_: &str| true;
    for pattern in patterns {
        if pattern.contains(['*', '?', '[']) {
            let (glob, level) = match split_thinking_suffix(pattern) {
                Some((base, level)) => (base, Some(level)),
                None => (pattern.as_str(), None),
            };
            let exact = resolve(
                Request { text: glob, provider: None, suffix: SuffixRule::Ignore, fuzzy: false },
                models,
                &all_usable,
            );
            let matches: Vec<Model> = match exact.outcome {
                Outcome::Found(model) => vec![*model],
                Outcome::Ambiguous { candidates, .. } => {
                    ambiguous(&mut scope, pattern, &candidates);
                    candidates
                }
                Outcome::NotFound { .. } => glob_matches(glob, models),
            };
            if matches.is_empty() {
                scope.warnings.push(format!("No models match pattern \"{pattern}\""));
            }
            for model in &matches {
                add(&mut scope, model, level);
            }
            continue;
        }
        let request = Request { text: pattern, provider: None, suffix: SuffixRule::Lenient, fuzzy: true };
        let result = resolve(request, models, &all_usable);
        if matches!(result.outcome, Outcome::NotFound { .. }) {
            scope.warnings.push(format!("No models match pattern \"{pattern}\""));
            continue;
        }
        scope.warnings.extend(result.warning);
        match result.outcome {
            Outcome::Found(model) => add(&mut scope, &model, result.thinking),
            Outcome::Ambiguous { candidates, .. } => {
                ambiguous(&mut scope, pattern, &candidates);
                for model in &candidates {
                    add(&mut scope, model, result.thinking);
                }
            }
            Outcome::NotFound { .. } => {}
        }
    }
    scope
}

/// Models whose `provider/id` or `id` matches a shell glob (case-insensitive,
/// `*` not crossing `/`).
fn glob_matches(glob: &str, models: &[Model]) -> Vec<Model> {
    let Ok(glob) = GlobBuilder::new(glob).case_insensitive(true).literal_separator(true).build() else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    models
        .iter()
        .filter(|m| matcher.is_match(format!("{}/{}", m.provider, m.id)) || matcher.is_match(&m.id))
        .cloned()
        .collect()
}

/// A model chosen from the command line (or `initialize`/`setModel`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    pub model: Model,
    /// The pattern's `:<thinking>` suffix (unless `--thinking` was given).
    pub thinking: Option<ThinkingLevel>,
    pub warning: Option<String>,
}

/// `--provider`/`--model` as pi's `resolveCliModel` reads them, among all
/// models (credentials or not, so `--api-key` can set a provider up). With an
/// inline key, stored credentials do not choose between providers. A known
/// provider with an unknown id yields a custom model on that provider.
pub fn resolve_cli<M: Borrow<Model>>(
    models: &[M],
    provider: Option<&str>,
    pattern: &str,
    explicit_thinking: Option<ThinkingLevel>,
    inline_key: bool,
    usable: &dyn Fn(&str) -> bool,
) -> Result<Selected, String> {
    if models.is_empty() {
        return Err("No models available. Check your installation or add models to models.json.".into());
    }
    let provider = match provider {
        Some(wanted) => Some(
            models
                .iter()
                .map(<M as Borrow<Model>>::borrow)
                .find(|m| m.provider.eq_ignore_ascii_case(wanted))
                .map(|m| m.provider.as_str())
                .ok_or_else(|| {
                    format!("Unknown provider \"{wanted}\". Use --list-models to see available providers/models.")
                })?,
        ),
        None => None,
    };
    let nobody = |_: &str| false;
    let usable: &dyn Fn(&str) -> bool = if inline_key { &nobody } else { usable };
    let request = Request { text: pattern, provider, suffix: SuffixRule::Strict, fuzzy: true };
    let result = resolve(request, models, usable);
    match result.outcome {
        Outcome::Found(model) => Ok(Selected { model: *model, thinking: result.thinking, warning: result.warning }),
        Outcome::Ambiguous { candidates, usable_count } => {
            let mut names: Vec<String> = candidates.iter().map(|m| format!("{}/{}", m.provider, m.id)).collect();
            names.sort_by(|a, b| collate(a, b));
            let hint = if inline_key {
                "--api-key does not choose a provider."
            } else if usable_count == 0 {
                "No matching provider is authenticated."
            } else {
                "More than one matching provider is authenticated."
            };
            Err(format!(
                "Model \"{pattern}\" is ambiguous across providers: {}. {hint} Use --provider or provider/model.",
                names.join(", ")
            ))
        }
        Outcome::NotFound { target: None } => {
            Err(format!("Model \"{pattern}\" not found. Use --list-models to see available models."))
        }
        Outcome::NotFound { target: Some(target) } => {
            // With --thinking the suffix stays part of the custom id.
            let (id, thinking) = match explicit_thinking {
                Some(_) => (target.model_text.clone(), None),
                None => (target.model_id.clone(), target.thinking),
            };
            let default_id = super::catalog::default_model_of(&target.provider);
            let Some(base) = default_id
                .and_then(|d| target.provider_models.iter().find(|m| m.id == d))
                .or(target.provider_models.first())
            else {
                return Err(format!("Model \"{pattern}\" not found. Use --list-models to see available models."));
            };
            let mut model = Model { id: id.clone(), name: id.clone(), ..base.clone() };
            if explicit_thinking.or(thinking).is_some_and(|t| t != ThinkingLevel::Off) {
                model.reasoning = true;
            }
            let warning =
                format!("Model \"{id}\" not found for provider \"{}\". Using custom model id.", target.provider);
            Ok(Selected { model, thinking, warning: Some(warning) })
        }
    }
}

#[cfg(test)]
#[path = "model_resolver_tests.rs"]
mod tests;
