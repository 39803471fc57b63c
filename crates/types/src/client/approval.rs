//! The approval gate: before a tool call runs, the session's policy says
//! allow, ask or deny; `ask` asks the client and waits. Answers given
//! "always" are remembered for the session; a rejected, denied or
//! cancelled call never runs and the model gets an error result.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{ClientFailure, ClientLink, ClientReply, ClientRequestKind, PermissionAnswer, PermissionRequest};
use crate::tool_name::ToolNameMatcher;

/// What the policy says about one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Allow,
    Ask,
    Deny,
}

impl std::str::FromStr for Rule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "allow" => Ok(Rule::Allow),
            "ask" => Ok(Rule::Ask),
            "deny" => Ok(Rule::Deny),
            other => Err(format!("expected \"allow\", \"ask\" or \"deny\", got \"{other}\"")),
        }
    }
}

/// Tools that change files or run commands: asked about by default.
pub const CHANGING_TOOLS: [&str; 3] = ["write", "edit", "bash"];

/// Which tool calls need approval: rules per tool name (or `*` pattern, the
/// first match wins), else `default`. Disabled, everything is allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPolicy {
    pub enabled: bool,
    pub default: Rule,
    pub tools: Vec<(String, Rule)>,
}

impl Default for ApprovalPolicy {
    /// Off: no call is asked about (pi's behaviour).
    fn default() -> Self {
        ApprovalPolicy { enabled: false, ..ApprovalPolicy::ask_before_changes() }
    }
}

impl ApprovalPolicy {
    /// Ask before `write`, `edit` and `bash`; everything else runs.
    pub fn ask_before_changes() -> Self {
        ApprovalPolicy {
            enabled: true,
            default: Rule::Allow,
            tools: CHANGING_TOOLS.iter().map(|t| (t.to_string(), Rule::Ask)).collect(),
        }
    }

    /// The policy's rule for `tool`.
    pub fn rule_for(&self, tool: &str) -> Rule {
        if !self.enabled {
            return Rule::Allow;
        }
        self.tools
            .iter()
            .find(|(pattern, _)| ToolNameMatcher::new(std::slice::from_ref(pattern)).matches(tool))
            .map_or(self.default, |(_, rule)| *rule)
    }
}

/// The session modes an editor can switch between (ACP `session/set_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ApprovalMode {
    /// The policy as configured.
    #[default]
    Ask,
    /// Every call runs without asking.
    Auto,
    /// Calls the policy would ask about (and `write`, `edit`, `bash`) are denied.
    ReadOnly,
}

impl ApprovalMode {
    pub const ALL: [ApprovalMode; 3] = [ApprovalMode::Ask, ApprovalMode::Auto, ApprovalMode::ReadOnly];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::ReadOnly => "read-only",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// The gate of one session: its policy, mode and remembered answers.
#[derive(Debug, Default)]
pub struct Approvals {
    policy: Mutex<ApprovalPolicy>,
    mode: Mutex<ApprovalMode>,
    /// "Always" answers: tool name → allowed.
    remembered: Mutex<HashMap<String, bool>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Approvals {
    pub fn new(policy: ApprovalPolicy) -> Self {
        Approvals { policy: Mutex::new(policy), ..Default::default() }
    }

    pub fn set_mode(&self, mode: ApprovalMode) {
        *lock(&self.mode) = mode;
    }

    pub fn mode(&self) -> ApprovalMode {
        *lock(&self.mode)
    }

    pub fn set_policy(&self, policy: ApprovalPolicy) {
        *lock(&self.policy) = policy;
    }

    /// What happens to a call of `tool` now (mode, remembered answers, policy).
    pub fn decide(&self, tool: &str) -> Rule {
        let policy = lock(&self.policy).rule_for(tool);
        match self.mode() {
            ApprovalMode::Auto => return Rule::Allow,
            ApprovalMode::ReadOnly if policy != Rule::Allow || CHANGING_TOOLS.contains(&tool) => return Rule::Deny,
            _ => {}
        }
        match lock(&self.remembered).get(tool) {
            Some(true) => Rule::Allow,
            Some(false) => Rule::Deny,
            None => policy,
        }
    }

    /// Let the call run (`Ok`), or the reason it does not.
    pub async fn check(
        &self,
        link: &ClientLink,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let refused = |why: &str| format!("Tool \"{tool_name}\" was not run: {why}.");
        match self.decide(tool_name) {
            Rule::Allow => return Ok(()),
            Rule::Deny => return Err(refused("the approval policy does not allow it")),
            Rule::Ask => {}
        }
        let request = PermissionRequest {
            tool_call_id: tool_call_id.to_string(),
            tool_name: tool_name.to_string(),
            args: args.clone(),
            title: title(tool_name, args),
        };
        let answer = match link.request(ClientRequestKind::Permission(request), cancel, None).await {
            Ok(ClientReply::Permission(answer)) => answer,
            Ok(_) => PermissionAnswer::Cancelled,
            Err(ClientFailure::Cancelled) => return Err(refused("the approval request was cancelled")),
            Err(e) => return Err(refused(&format!("no approval ({e})"))),
        };
        match answer {
            PermissionAnswer::AllowOnce => Ok(()),
            PermissionAnswer::AllowAlways => {
                lock(&self.remembered).insert(tool_name.to_string(), true);
                Ok(())
            }
            PermissionAnswer::RejectOnce => Err(refused("the user rejected it")),
            PermissionAnswer::RejectAlways => {
                lock(&self.remembered).insert(tool_name.to_string(), false);
                Err(refused("the user rejected it"))
            }
            PermissionAnswer::Cancelled => Err(refused("the approval request was cancelled")),
        }
    }
}

/// A one-line description of a call: `bash: ls -la`, `edit: src/main.rs`.
pub fn title(tool_name: &str, args: &Value) -> String {
    let field = |k: &str| args.get(k).and_then(Value::as_str);
    let detail = match tool_name {
        "bash" => field("command"),
        "read" | "write" | "edit" | "ls" => field("path"),
        "grep" | "find" => field("pattern"),
        _ => None,
    };
    match detail {
        Some(d) => {
            let first_line = d.lines().next().unwrap_or_default();
            let short: String = first_line.chars().take(120).collect();
            let cut = short.len() < d.len();
            format!("{tool_name}: {short}{}", if cut { "…" } else { "" })
        }
        None => tool_name.to_string(),
    }
}
