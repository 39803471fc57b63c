//! Checking a run against its scenario's rules: over the (normalised) output
//! lines, the session files, the requests the model server got, files in the
//! sandbox, and the exit code.

use serde_json::{Value, json};

use super::normalize::Normalizer;
use super::pattern::{self, explain, matches};
use super::sandbox::Sandbox;
use super::scenario::{FileRule, Rule, SessionRule};

/// What the rules look at.
pub struct Context<'a> {
    pub lines: &'a [Value],
    pub exit_code: Option<i32>,
    pub sandbox: &'a Sandbox,
    pub requests: &'a [Value],
    /// The session files (sorted by name) with their normalised lines.
    pub sessions: &'a [(std::path::PathBuf, Vec<Value>)],
    /// The agent's stderr, sandbox paths normalised.
    pub stderr: &'a str,
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 160 { format!("{}…", s.chars().take(160).collect::<String>()) } else { s }
}

/// A label for a line in messages (`type`/`method`/`command`).
fn label(v: &Value) -> String {
    let mut parts = Vec::new();
    for k in ["type", "command", "method", "id", "role"] {
        if let Some(x) = v.get(k) {
            parts.push(format!("{k}={}", short(x)));
        }
    }
    if let Some(t) = v.pointer("/assistantMessageEvent/type") {
        parts.push(format!("event={t}"));
    }
    if parts.is_empty() { short(v) } else { parts.join(" ") }
}

/// The line closest to `pattern` (same discriminators), to explain a miss.
fn closest<'a>(pattern: &Value, lines: &'a [Value]) -> Option<&'a Value> {
    let keys = ["type", "method", "command", "role"];
    lines.iter().find(|l| keys.iter().all(|k| pattern.get(*k).is_none_or(|p| l.get(*k).is_some_and(|v| matches(p, v)))))
}

/// Check the line rules (`lines`, `sequence`, `contains`, `none`, `count`) of `rule` over `lines`.
pub fn check_lines(rule: &Rule, lines: &[Value]) -> Result<(), String> {
    let filtered: Vec<Value> = match &rule.filter {
        Some(f) => lines.iter().filter(|l| matches(f, l)).cloned().collect(),
        None => lines.to_vec(),
    };
    if let Some(patterns) = &rule.lines {
        if patterns.len() != filtered.len() {
            let got: Vec<String> = filtered.iter().map(label).collect();
            return Err(format!("expected {} lines, got {}: [{}]", patterns.len(), filtered.len(), got.join(" | ")));
        }
        for (i, (p, l)) in patterns.iter().zip(&filtered).enumerate() {
            if let Some(why) = explain(p, l) {
                return Err(format!("line {} ({}): {why}", i + 1, label(l)));
            }
        }
    }
    if let Some(patterns) = &rule.sequence {
        let mut from = 0;
        for (k, p) in patterns.iter().enumerate() {
            match filtered[from..].iter().position(|l| matches(p, l)) {
                Some(pos) => from += pos + 1,
                None => {
                    let hint = closest(p, &filtered[from..])
                        .and_then(|c| explain(p, c).map(|w| format!("; nearest {}: {w}", label(c))))
                        .unwrap_or_default();
                    return Err(format!("sequence item {} not found after line {from}: {}{hint}", k + 1, short(p)));
                }
            }
        }
    }
    if let Some(p) = &rule.contains
        && !filtered.iter().any(|l| matches(p, l))
    {
        let hint = closest(p, &filtered)
            .and_then(|c| explain(p, c).map(|w| format!("; nearest {}: {w}", label(c))))
            .unwrap_or_default();
        return Err(format!("no line matches {}{hint}", short(p)));
    }
    if let Some(p) = &rule.none
        && let Some(l) = filtered.iter().find(|l| matches(p, l))
    {
        return Err(format!("a line matches {}: {}", short(p), short(l)));
    }
    if let Some(p) = &rule.count {
        let n = filtered.iter().filter(|l| matches(p, l)).count();
        let ok =
            rule.equals.is_none_or(|e| n == e) && rule.min.is_none_or(|m| n >= m) && rule.max.is_none_or(|m| n <= m);
        if !ok {
            return Err(format!(
                "{n} line(s) match {} (wanted equals {:?} min {:?} max {:?})",
                short(p),
                rule.equals,
                rule.min,
                rule.max
            ));
        }
    }
    Ok(())
}

fn session_lines<'a>(ctx: &Context<'a>, rule: &SessionRule) -> Result<&'a [Value], String> {
    let files = ctx.sessions;
    let only = || {
        if files.len() == 1 {
            Ok(files.first())
        } else {
            Err(format!("expected exactly one session file, found {}", files.len()))
        }
    };
    let pick = match &rule.file {
        None => only()?,
        Some(Value::String(s)) if s == "only" => only()?,
        Some(Value::String(s)) if s == "newest" => files.last(),
        Some(Value::String(s)) if s == "oldest" => files.first(),
        Some(v) => v.as_u64().and_then(|i| files.get(i as usize)),
    };
    pick.map(|(_, lines)| lines.as_slice()).ok_or_else(|| format!("no such session file ({} found)", files.len()))
}

fn check_file(ctx: &Context<'_>, f: &FileRule) -> Result<(), String> {
    let path = ctx.sandbox.resolve(&f.path);
    let content = std::fs::read_to_string(&path).ok();
    if let Some(exists) = f.exists
        && exists != content.is_some()
    {
        return Err(format!("{} {}", f.path, if exists { "does not exist" } else { "exists" }));
    }
    if let Some(want) = &f.equals {
        let got = content.as_deref().ok_or_else(|| format!("{} does not exist", f.path))?;
        if got != want {
            return Err(format!("{}: expected {:?}, got {:?}", f.path, want, got));
        }
    }
    if let Some(part) = &f.contains {
        let got = content.as_deref().ok_or_else(|| format!("{} does not exist", f.path))?;
        if !got.contains(part.as_str()) {
            return Err(format!("{} does not contain {:?}", f.path, part));
        }
    }
    Ok(())
}

/// Check one rule.
pub fn check_rule(rule: &Rule, ctx: &Context<'_>) -> Result<(), String> {
    if let Some(code) = rule.exit_code
        && ctx.exit_code != Some(code)
    {
        return Err(format!("exit code {:?}, expected {code}", ctx.exit_code));
    }
    if let Some(n) = rule.session_files {
        let found = ctx.sessions.len();
        if found != n {
            return Err(format!("{found} session file(s), expected {n}"));
        }
    }
    if let Some(s) = &rule.session {
        let lines = session_lines(ctx, s)?;
        for r in &s.rules {
            check_rule(r, &Context { lines, ..*ctx }).map_err(|e| format!("session file: {e}"))?;
        }
    }
    if let Some(rules) = &rule.requests {
        for r in rules {
            check_rule(r, &Context { lines: ctx.requests, ..*ctx }).map_err(|e| format!("model requests: {e}"))?;
        }
    }
    if let Some(f) = &rule.file {
        check_file(ctx, f)?;
    }
    if let Some(part) = &rule.stderr
        && !ctx.stderr.contains(part.as_str())
    {
        return Err(format!("stderr does not contain {part:?}"));
    }
    check_lines(rule, ctx.lines)
}

/// The fake server's requests as values for the rules.
pub fn request_values(requests: &[crate::fake_server::RecordedRequest], norm: &mut Normalizer) -> Vec<Value> {
    requests
        .iter()
        .map(|r| {
            let headers: serde_json::Map<String, Value> =
                r.headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            norm.value(&json!({"method": r.method, "path": r.path, "headers": headers, "body": r.body}))
        })
        .collect()
}

/// Literal values of `key` used in a rule's patterns (for coverage).
pub fn rule_literals(rule: &Rule, key: &str, out: &mut Vec<Value>) {
    for p in [&rule.contains, &rule.none, &rule.count, &rule.filter].into_iter().flatten() {
        pattern::literal_values(p, key, out);
    }
    for list in [&rule.lines, &rule.sequence].into_iter().flatten() {
        list.iter().for_each(|p| pattern::literal_values(p, key, out));
    }
}
