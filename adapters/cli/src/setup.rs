//! Turning flags and configuration files into the core's `AgentConfig`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use pi_core::agent::{AgentConfig, SessionStart, SystemPromptOptions};
use pi_core::config::settings::apply_tool_edits;
use pi_core::config::{ModelRegistry, Settings, default_agent_dir, expand_home};
use pi_core::extensions::{DiscoverOptions, ExtensionOptions, HostConfig, Timeouts, discover as discover_extensions};
use pi_core::model::ThinkingLevel;
use pi_core::provider::ProviderRegistry;
use pi_core::provider::faux::FauxProvider;
use pi_core::provider::http::{HttpClient, HttpOptions};
use pi_core::resources::{ResourceOptions, Resources};
use pi_core::tools::{DEFAULT_ACTIVE_TOOLS, ToolRegistry};

use crate::args::Args;

pub fn build_agent_config(args: &Args) -> anyhow::Result<AgentConfig> {
    let agent_dir = default_agent_dir();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let settings = Settings::load(&agent_dir, &cwd)?;
    let models = ModelRegistry::load(&agent_dir)?;

    let thinking = match args.thinking.as_deref() {
        Some(t) => Some(t.parse::<ThinkingLevel>().map_err(|e| anyhow::anyhow!("--thinking: {e}"))?),
        None => None,
    };

    let (session_dir, session_dir_explicit) = session_dir(args, &settings, &agent_dir, &cwd);
    let session = if args.no_session {
        SessionStart::InMemory
    } else if let Some(reference) = &args.session {
        let path = expand_home(std::path::Path::new(reference));
        let path = if path.is_absolute() { path } else { cwd.join(path) };
        if path.exists() || reference.contains('/') || reference.ends_with(".jsonl") {
            SessionStart::Open(path)
        } else {
            let mut dirs = vec![session_dir.clone()];
            if let Ok(read) = std::fs::read_dir(agent_dir.join("sessions")) {
                dirs.extend(read.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
            }
            let found = pi_core::session::resolve_session(reference, &cwd, &dirs)
                .map_err(|e| anyhow::anyhow!("--session: {e}"))?;
            SessionStart::Open(found)
        }
    } else if args.continue_session {
        SessionStart::Continue
    } else {
        SessionStart::New
    };

    let tools = ToolRegistry::builtin();
    let active_tools = if args.no_tools {
        Vec::new()
    } else if let Some(list) = &args.tools {
        let list: Vec<String> = list.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        apply_tool_edits(settings.default_tools.clone(), list)
    } else {
        settings.default_tools.clone().unwrap_or_else(|| DEFAULT_ACTIVE_TOOLS.iter().map(|s| s.to_string()).collect())
    };
    if let Some(unknown) = active_tools.iter().find(|t| !tools.contains(t)) {
        let known: Vec<&str> = tools.names().collect();
        bail!("unknown tool \"{unknown}\" (known tools: {})", known.join(", "));
    }

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
    let http = HttpClient::with_options(http_options).map_err(|e| anyhow::anyhow!("{e}"))?;
    let providers = ProviderRegistry::builtin(http, faux);
    let (resources, extensions) = resources_and_extensions(args, &agent_dir, &cwd)?;

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
        thinking,
        api_key: args.api_key.clone(),
        system_prompt: SystemPromptOptions {
            replace: args.system_prompt.clone(),
            append: args.append_system_prompt.clone(),
        },
        session_name: args.name.clone(),
        persist_settings: true,
        temp_dir: std::env::temp_dir(),
        resources,
        extensions,
    })
}

/// Prompt templates and skills (discovered now, problems logged), and the
/// extensions to start, with project-local ones only in a trusted project.
fn resources_and_extensions(
    args: &Args,
    agent_dir: &std::path::Path,
    cwd: &std::path::Path,
) -> anyhow::Result<(Resources, ExtensionOptions)> {
    let (mut options, trust_warning) = ResourceOptions::new(agent_dir, cwd, args.trust_override());
    if let Some(warning) = trust_warning {
        bail!("{warning}");
    }
    options.extra_template_paths = args.prompt_templates.clone();
    options.extra_skill_paths = args.skills.clone();
    options.no_templates = args.no_prompt_templates;
    options.no_skills = args.no_skills;
    let (resources, warnings) = Resources::discover(&options);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let found = discover_extensions(&DiscoverOptions {
        agent_dir: agent_dir.to_path_buf(),
        cwd: cwd.to_path_buf(),
        project_trusted: options.project_trusted,
        cli_paths: args.extensions.clone(),
        no_extensions: args.no_extensions,
    });
    let extensions = ExtensionOptions {
        paths: found.paths,
        load_errors: found.errors,
        timeouts: Timeouts::from_settings(&agent_dir.join("settings.json")),
        no_tools: args.no_tools,
        host: HostConfig::from_env_and_settings(&agent_dir.join("settings.json")),
        agent_dir: agent_dir.to_path_buf(),
        project_trusted: options.project_trusted,
    };
    Ok((resources, extensions))
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
