//! Turning flags and configuration files into the core's `AgentConfig`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use pi_core::agent::{AgentConfig, SessionStart, SystemPromptOptions};
use pi_core::config::settings::apply_tool_edits;
use pi_core::config::{ModelRegistry, Settings, default_agent_dir, expand_home};
use pi_core::extensions::{DiscoverOptions, ExtensionOptions, HostConfig, Timeouts, discover as discover_extensions};
use pi_core::mcp::{ConfigSources, McpConfig, McpOptions, StartGate, ToolFilter};
use pi_core::model::ThinkingLevel;
use pi_core::provider::ProviderRegistry;
use pi_core::provider::faux::FauxProvider;
use pi_core::provider::http::{HttpClient, HttpOptions};
use pi_core::resources::{ResourceOptions, Resources};
use pi_core::tools::{DEFAULT_ACTIVE_TOOLS, ToolRegistry};

use crate::args::Args;

pub fn build_agent_config(args: &Args) -> anyhow::Result<AgentConfig> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    build_agent_config_in(args, cwd)
}

/// The configuration of an agent working in `cwd` (ACP: each session has its own).
pub fn build_agent_config_in(args: &Args, cwd: PathBuf) -> anyhow::Result<AgentConfig> {
    let agent_dir = default_agent_dir();
    let settings = Settings::load(&agent_dir, &cwd)?;
    let models = ModelRegistry::load(&agent_dir)?;
    if let Some(error) = models.config_error() {
        // pi starts without the file's providers and reports it through `getError()`.
        tracing::warn!("{error}");
    }

    let thinking = match args.thinking.as_deref() {
        Some(t) => Some(t.parse::<ThinkingLevel>().map_err(|e| anyhow::anyhow!("--thinking: {e}"))?),
        None => None,
    };

    let (session_dir, session_dir_explicit) = session_dir(args, &settings, &agent_dir, &cwd);
    let session = if args.no_session {
        SessionStart::InMemory
    } else if let Some(reference) = &args.fork {
        let source =
            find_session(reference, &session_dir, &agent_dir, &cwd).map_err(|e| anyhow::anyhow!("--fork: {e}"))?;
        if !source.exists() {
            bail!("--fork: No session found matching '{reference}'");
        }
        SessionStart::Fork { source, id: args.session_id.clone() }
    } else if let Some(reference) = &args.session {
        let found =
            find_session(reference, &session_dir, &agent_dir, &cwd).map_err(|e| anyhow::anyhow!("--session: {e}"))?;
        SessionStart::Open(found)
    } else if args.continue_session {
        SessionStart::Continue
    } else if let Some(id) = &args.session_id {
        SessionStart::WithId(id.clone())
    } else {
        SessionStart::New
    };

    let mut tools = ToolRegistry::builtin();
    let builtin_names: Vec<String> = tools.names().map(str::to_string).collect();
    let mut active_tools = if args.no_tools || args.no_builtin_tools {
        // pi: an explicit --tools list still applies; `+name` edits start from nothing.
        match &args.tools {
            Some(list) => apply_tool_edits(Some(Vec::new()), expand_tool_patterns(list, &builtin_names)),
            None => Vec::new(),
        }
    } else if let Some(list) = &args.tools {
        apply_tool_edits(settings.default_tools.clone(), expand_tool_patterns(list, &builtin_names))
    } else {
        settings.default_tools.clone().unwrap_or_else(|| DEFAULT_ACTIVE_TOOLS.iter().map(|s| s.to_string()).collect())
    };
    // MCP patterns filter MCP tools; `codemode` and `tool_search` come with MCP.
    active_tools.retain(|t| !t.starts_with("mcp__") && !MCP_RESOURCE_TOOLS.contains(&t.as_str()));
    // A name no tool has yet may be an extension's tool: it is activated
    // when one registers it (pi resolves `--tools` once the extensions
    // loaded); a name no tool ever has is ignored, as in pi.
    let mut requested_tools = active_tools.clone();
    let tool_allowlist = tool_allowlist(args, &active_tools);
    // pi registers only the tools an allowlist matches: a built-in it does
    // not name is unknown (`getAllTools` does not list it, `setActiveTools`
    // ignores it), with `--no-tools` alone every one.
    if let Some(list) = &tool_allowlist {
        let matcher = pi_core::tools::ToolNameMatcher::new(list);
        for name in builtin_names.iter().filter(|n| !matcher.matches(n)) {
            tools.unregister(name);
        }
    }
    active_tools.retain(|t| tools.contains(t) || INDIRECT_TOOLS.contains(&t.as_str()));
    if let Some(excluded) = &args.exclude_tools {
        let matcher = pi_core::tools::ToolNameMatcher::new(excluded);
        requested_tools.retain(|t| !matcher.matches(t));
    }
    let active_tools = match &args.exclude_tools {
        Some(excluded) => {
            tools.exclude(excluded);
            let matcher = pi_core::tools::ToolNameMatcher::new(excluded);
            let kept = |t: &String| {
                if INDIRECT_TOOLS.contains(&t.as_str()) { !matcher.matches(t) } else { tools.contains(t) }
            };
            active_tools.into_iter().filter(kept).collect()
        }
        None => active_tools,
    };

    let faux = match &args.faux_script {
        Some(path) => FauxProvider::from_script_file(path)
            .map_err(|e| anyhow::anyhow!("--faux-script {}: {e}", path.display()))?,
        None => FauxProvider::default(),
    };
    let mut http_options = HttpOptions::default();
    if settings.http_idle_timeout_ms == 0 {
        http_options.idle_timeout = None;
    } else {
        let idle = std::time::Duration::from_millis(settings.http_idle_timeout_ms);
        http_options.idle_timeout = Some(idle);
        http_options.headers_timeout = idle;
    }
    let http = HttpClient::with_options(http_options)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .with_settings_proxy(settings.http_proxy.as_deref());
    // pi's attribution headers follow install telemetry: `PI_TELEMETRY`, else the setting.
    let attribution = match std::env::var("PI_TELEMETRY") {
        Ok(v) => ["1", "true", "yes"].contains(&v.to_ascii_lowercase().as_str()),
        Err(_) => settings.enable_install_telemetry,
    };
    pi_core::provider::shared::set_attribution(attribution);
    pi_core::provider::openai::codex_transport::set_transport(settings.transport.as_deref());
    let providers = ProviderRegistry::builtin(http, faux);
    let (resources, mut extensions, project_trusted) = resources_and_extensions(args, &agent_dir, &cwd)?;
    extensions.tool_allowlist = tool_allowlist;
    extensions.requested_tools = requested_tools;
    // pi's `usesDefaultTools`: a reload activates what `defaultTools` newly adds.
    extensions.default_tool_edits = match &args.tools {
        _ if args.no_tools || args.no_builtin_tools => None,
        None => Some(Vec::new()),
        Some(list) if list.iter().any(|t| t.trim().starts_with(['+', '-'])) => {
            Some(expand_tool_patterns(list, &builtin_names))
        }
        Some(_) => None,
    };
    // pi: an option no extension registers as a flag is refused.
    if extensions.paths.is_empty() && !args.extension_flags.is_empty() {
        let names: Vec<String> = args.extension_flags.iter().map(|(name, _)| format!("--{name}")).collect();
        anyhow::bail!("Unknown option{}: {}", if names.len() == 1 { "" } else { "s" }, names.join(", "));
    }
    extensions.flags = args.extension_flags.clone();
    let mcp = mcp_options(args, &settings, &agent_dir, &cwd, project_trusted);

    // Seed dialects: approvals only with `--tool-approval` or `toolApproval.enabled`.
    let mut settings_approval = settings.tool_approval.policy(false);
    settings_approval.enabled |= args.tool_approval;
    // pi: `--models`, else settings' `enabledModels`.
    let model_scope = args.models.clone().or_else(|| settings.enabled_models.clone()).unwrap_or_default();
    Ok(AgentConfig {
        agent_dir,
        cwd,
        settings,
        models,
        providers,
        tools,
        active_tools,
        session,
        session_dir,
        session_dir_explicit,
        provider: args.provider.clone(),
        model: args.model.clone(),
        model_scope,
        thinking,
        api_key: args.api_key.clone(),
        system_prompt: SystemPromptOptions {
            replace: args.system_prompt.clone(),
            append: args.append_system_prompt.clone(),
            no_context_files: args.no_context_files,
        },
        session_name: args.name.clone(),
        persist_settings: true,
        temp_dir: std::env::temp_dir(),
        resources,
        extensions,
        mcp,
        client: pi_core::client::ClientSetup { approval: settings_approval, ..Default::default() },
        session_fence: None,
        catalog_refreshes: None,
    })
}

/// `--tools` as pi's allowlist of every tool (extension ones included): a
/// list of names and patterns, or, with `--no-tools`, the tools its
/// `+name`/`-name` edits select; `--no-tools` alone allows none. `None`
/// when `--tools` only edits the default tools, or neither is given.
fn tool_allowlist(args: &Args, selected: &[String]) -> Option<Vec<String>> {
    let Some(list) = args.tools.as_ref() else {
        return args.no_tools.then(Vec::new);
    };
    let entries: Vec<String> = list.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect();
    let edits = entries.iter().any(|t| t.starts_with(['+', '-']));
    match (edits, args.no_tools) {
        (false, _) => Some(entries),
        (true, true) => Some(selected.to_vec()),
        (true, false) => None,
    }
}

/// Tools MCP adds (named in `--tools` to turn them on without MCP servers).
const INDIRECT_TOOLS: [&str; 2] = ["codemode", "tool_search"];
/// The resource tools count as MCP tools for `--tools`.
const MCP_RESOURCE_TOOLS: [&str; 3] = ["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"];

/// `mcp.json` (the project's only when trusted), unless `--no-tools`. With
/// `--no-mcp`, or, as pi's built-in `mcp` extension, `--no-extensions` or a
/// `-builtin:mcp` entry in the settings' `extensions`, MCP is off on standby:
/// an extension's `createMcpExtension` turns it on, as in pi.
fn mcp_options(
    args: &Args,
    settings: &Settings,
    agent_dir: &std::path::Path,
    cwd: &std::path::Path,
    project_trusted: bool,
) -> McpOptions {
    // Only pi's built-in MCP extension is off: an extension's `createMcpExtension` may turn MCP on.
    // `--no-tools` leaves pi's MCP extension loaded but registers none of its tools; pi-rpc turns
    // MCP off then, unless an extension's `createMcpExtension` turns it on (its tools stay off).
    let builtin_off = args.no_mcp || args.no_extensions || !settings.builtin_extension_enabled("mcp");
    let standby = builtin_off || args.no_tools;
    let loaded_builtins = ["codemode", "tool-search", "mcp"]
        .into_iter()
        .filter(|name| !args.no_extensions && settings.builtin_extension_enabled(name))
        .filter(|name| *name != "mcp" || !args.no_mcp)
        .map(str::to_string)
        .collect();
    let sources = ConfigSources { agent_dir, cwd, project_trusted, env: None };
    let config = McpConfig::load(&sources);
    if !standby {
        for error in &config.errors {
            tracing::warn!("MCP configuration: {error}");
        }
    }
    let tools: Option<Vec<String>> = args.tools.as_ref().map(|l| l.iter().map(|t| t.trim().to_string()).collect());
    let exclude = args.exclude_tools.clone().unwrap_or_default();
    // Servers start once the answer that let them start is written out (with
    // no stdio writer, as in `pi serve`, that is at once).
    let start_gate = StartGate::new(|| Box::pin(pi_transport::writer::flushed()));
    McpOptions {
        config,
        filter: ToolFilter::from_cli(tools.as_deref(), &exclude),
        disabled: standby,
        standby,
        root: None,
        start_gate: Some(start_gate),
        log_path: Some(agent_dir.join("mcp.log")),
        loaded_builtins,
        tools_off: args.no_tools,
        // The session holds the servers while its extensions load.
        hold: None,
        credentials_dir: Some(agent_dir.to_path_buf()),
    }
}

/// Prompt templates and skills (discovered now, problems logged), and the
/// extensions to start, with project-local ones only in a trusted project.
fn resources_and_extensions(
    args: &Args,
    agent_dir: &std::path::Path,
    cwd: &std::path::Path,
) -> anyhow::Result<(Resources, ExtensionOptions, bool)> {
    let (mut options, trust_warning) = ResourceOptions::new(agent_dir, cwd, args.trust_override());
    if let Some(warning) = trust_warning {
        bail!("{warning}");
    }
    options.extra_template_paths = args.prompt_templates.clone();
    options.extra_skill_paths = args.skills.clone();
    options.no_templates = args.no_prompt_templates;
    options.no_skills = args.no_skills;
    let packages = crate::packages::resolve(&args.extensions, agent_dir, cwd, options.project_trusted);
    options.packages = packages.resources.clone();
    let (resources, warnings) = Resources::discover(&options);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let discovery = DiscoverOptions {
        agent_dir: agent_dir.to_path_buf(),
        cwd: cwd.to_path_buf(),
        project_trusted: options.project_trusted,
        cli_paths: packages.cli_extensions,
        no_extensions: args.no_extensions,
        package_paths: packages.extensions,
    };
    let found = discover_extensions(&discovery);
    let extensions = ExtensionOptions {
        paths: found.paths,
        load_errors: found.errors,
        timeouts: Timeouts::from_settings(&agent_dir.join("settings.json")),
        no_tools: args.no_tools,
        host: HostConfig::from_env_and_settings(&agent_dir.join("settings.json")),
        agent_dir: agent_dir.to_path_buf(),
        project_trusted: options.project_trusted,
        offline: crate::offline(args),
        provider_refreshes: crate::model_catalogs::extension_provider_refreshes(args),
        tool_allowlist: None,
        requested_tools: Vec::new(),
        flags: Vec::new(),
        discovery: Some(discovery),
        default_tool_edits: None,
        preloaded: Default::default(),
    };
    Ok((resources, extensions, options.project_trusted))
}

/// A `--session`/`--fork` reference: a path (it need not exist for
/// `--session`), else a full or partial session id, searched in the session
/// directory first, then in every project's.
fn find_session(
    reference: &str,
    session_dir: &std::path::Path,
    agent_dir: &std::path::Path,
    cwd: &std::path::Path,
) -> anyhow::Result<PathBuf> {
    let path = expand_home(std::path::Path::new(reference));
    let path = if path.is_absolute() { path } else { cwd.join(path) };
    if path.exists() || reference.contains('/') || reference.ends_with(".jsonl") {
        return Ok(path);
    }
    let mut dirs = vec![session_dir.to_path_buf()];
    if let Ok(read) = std::fs::read_dir(agent_dir.join("sessions")) {
        dirs.extend(read.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    pi_core::session::resolve_session(reference, cwd, &dirs).map_err(|e| anyhow::anyhow!("{e}"))
}

/// `--tools` entries with `*` stand for the built-in tools they match (pi's
/// allowlist patterns); `+`/`-` edits keep their sign.
fn expand_tool_patterns(list: &[String], builtin: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for entry in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let (sign, name) = match entry.strip_prefix(['+', '-']) {
            Some(rest) => (&entry[..1], rest),
            None => ("", entry),
        };
        if name.contains('*') {
            let matcher = pi_core::tools::ToolNameMatcher::new(&[name.to_string()]);
            out.extend(builtin.iter().filter(|b| matcher.matches(b)).map(|b| format!("{sign}{b}")));
        } else {
            out.push(entry.to_string());
        }
    }
    out
}

/// The session directory of an agent in `cwd`, and whether it was chosen
/// (flag, variable, setting) rather than pi's per-project default.
pub fn session_dir_in(args: &Args, cwd: &std::path::Path) -> (PathBuf, bool) {
    let agent_dir = default_agent_dir();
    let settings = Settings::load(&agent_dir, cwd).unwrap_or_default();
    session_dir(args, &settings, &agent_dir, cwd)
}

/// `--session-dir`, then `PI_CODING_AGENT_SESSION_DIR`, then settings, then pi's default.
fn session_dir(
    args: &Args,
    settings: &Settings,
    agent_dir: &std::path::Path,
    cwd: &std::path::Path,
) -> (PathBuf, bool) {
    let explicit = args
        .session_dir
        .clone()
        .or_else(|| std::env::var_os("PI_CODING_AGENT_SESSION_DIR").filter(|v| !v.is_empty()).map(PathBuf::from))
        .or_else(|| settings.session_dir.as_ref().map(PathBuf::from));
    match explicit {
        Some(dir) => {
            let dir = expand_home(&dir);
            (if dir.is_absolute() { dir } else { cwd.join(dir) }, true)
        }
        None => (pi_core::session::default_session_dir(agent_dir, cwd), false),
    }
}
