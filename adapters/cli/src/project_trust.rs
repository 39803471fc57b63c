//! pi's `project_trust` at start-up: a project with resources that need
//! trust, and no `--approve` / `--no-approve`, is first offered to the
//! user-level and `-e` extensions (pi loads them before it decides). Their
//! decision becomes the trust override the rest of the set-up reads; with
//! none, trust is decided as before (`trust.json`, `defaultProjectTrust`).
//! The extensions asked stay running for the session, as pi keeps them;
//! what they ask of pi's library meanwhile is answered, as pi answers it.

use std::path::Path;

use pi_core::config::default_agent_dir;
use pi_core::extensions::{
    DiscoverOptions, ExtensionOptions, Extensions, HostConfig, PreloadedExtensions, Timeouts, discover,
};
use pi_core::resources::trust;

use crate::args::Args;

/// The extensions' trust decision for `cwd`, when they made one (a
/// `remember: true` answer is stored in `trust.json`, as pi stores it),
/// and the extensions asked, for the session to adopt.
pub async fn decide(args: &Args, cwd: &Path) -> (Option<bool>, PreloadedExtensions) {
    if args.trust_override().is_some() || !trust::has_trust_requiring_resources(cwd, &pi_core::config::home_dir()) {
        return (None, PreloadedExtensions::default());
    }
    let agent_dir = default_agent_dir();
    let packages = crate::packages::resolve(&args.extensions, &agent_dir, cwd, false);
    let options = DiscoverOptions {
        agent_dir: agent_dir.clone(),
        cwd: cwd.to_path_buf(),
        project_trusted: false,
        cli_paths: packages.cli_extensions,
        no_extensions: args.no_extensions,
        package_paths: packages.extensions,
    };
    let found = discover(&options);
    if found.paths.is_empty() {
        return (None, PreloadedExtensions::default());
    }
    // Discovery's order is pi's: the command-line extensions are loaded and asked first.
    let paths = found.paths;
    let settings_file = agent_dir.join("settings.json");
    let options = ExtensionOptions {
        paths,
        timeouts: Timeouts::from_settings(&settings_file),
        host: HostConfig::from_env_and_settings(&settings_file),
        agent_dir: agent_dir.clone(),
        project_trusted: false,
        offline: crate::offline(args),
        provider_refreshes: crate::model_catalogs::extension_provider_refreshes(args),
        flags: args.extension_flags.clone(),
        ..ExtensionOptions::default()
    };
    let sessionless = Some(pi_core::agent::sessionless_requests());
    let (answer, preloaded) = Extensions::ask_project_trust(&options, cwd, &std::env::temp_dir(), sessionless).await;
    // pi prints what a handler notifies as it is, on stderr.
    for note in &answer.notes {
        crate::user_lines::err(note);
    }
    for error in &answer.errors {
        tracing::warn!("{error}");
    }
    let Some((trusted, remember)) = answer.decision else { return (None, preloaded) };
    if remember && let Err(e) = trust::remember(&agent_dir, cwd, trusted) {
        tracing::warn!("{e}");
    }
    (Some(trusted), preloaded)
}
