//! pi packages in the `pi` binary: `pi install`, `pi remove` (`uninstall`),
//! `pi list` and `pi update` with pi 1.6.0's arguments and messages, and
//! the start-up step that installs and resolves the packages of the
//! settings and of `-e npm:…` / `-e git:…` into extension, skill and
//! template paths (a package that cannot be installed is warned about and
//! skipped).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pi_core::packages::{Kind, PackageManager, Scope, source};
use pi_core::resources::PackageResources;

use crate::user_lines::{err, out};

/// What the packages add to a session.
#[derive(Debug, Default)]
pub struct StartupPackages {
    /// Skills and templates (settings packages and `-e` ones).
    pub resources: PackageResources,
    /// Extensions of the settings' packages.
    pub extensions: Vec<PathBuf>,
    /// The `-e` values, each package replaced by its extension files.
    pub cli_extensions: Vec<String>,
}

/// Install what is missing and resolve the settings' packages and the `-e`
/// packages; install failures are warnings.
pub fn resolve(cli: &[String], agent_dir: &Path, cwd: &Path, project_trusted: bool) -> StartupPackages {
    let pm = PackageManager::new(cwd, agent_dir, project_trusted);
    let settings = pm.resolve_settings();
    let mut out = StartupPackages {
        resources: PackageResources {
            skills: settings.enabled(Kind::Skills),
            prompts: settings.enabled(Kind::Prompts),
            ..PackageResources::default()
        },
        extensions: settings.enabled(Kind::Extensions),
        cli_extensions: Vec::new(),
    };
    let mut failures = settings.failures;
    for value in cli {
        if !is_package(value, cwd) {
            out.cli_extensions.push(value.clone());
            continue;
        }
        let resolved = pm.resolve_cli(std::slice::from_ref(value));
        out.cli_extensions.extend(resolved.enabled(Kind::Extensions).iter().map(|p| p.display().to_string()));
        out.resources.cli_skills.extend(resolved.enabled(Kind::Skills));
        out.resources.cli_prompts.extend(resolved.enabled(Kind::Prompts));
        failures.extend(resolved.failures);
    }
    for failure in failures {
        tracing::warn!("{}", failure.warning());
    }
    out
}

/// An `-e` value that is a package: npm, git, or a local directory laid
/// out as one (a `pi` manifest or conventional resource directories).
fn is_package(value: &str, cwd: &Path) -> bool {
    if value.starts_with("builtin:") {
        return false;
    }
    if !source::is_local(value) {
        return true;
    }
    let path = source::resolve_local(value, cwd, &pi_core::config::home_dir());
    pi_core::packages::is_package_dir(&path)
}

/// The package commands, when `argv[1]` names one; their exit code.
pub fn command(argv: &[std::ffi::OsString]) -> Option<ExitCode> {
    let args: Vec<String> = argv.iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let name = match args.first()?.as_str() {
        "uninstall" => "remove",
        c @ ("install" | "remove" | "update" | "list") => c,
        _ => return None,
    };
    Some(match run(name, &args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(lines) => {
            for line in lines {
                err(&line);
            }
            ExitCode::from(1)
        }
    })
}

fn usage(command: &str) -> &'static str {
    match command {
        "install" => "pi install <source> [-l] [--approve|--no-approve]",
        "remove" => "pi remove <source> [-l] [--approve|--no-approve]",
        "update" => {
            "pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]"
        }
        _ => "pi list [--approve|--no-approve]",
    }
}

/// What `pi update` is asked to update.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    SelfOnly { note: bool },
    Extensions(Option<String>),
    All,
    Models,
}

#[derive(Default)]
struct Parsed {
    source: Option<String>,
    local: bool,
    trust: Option<bool>,
    help: bool,
    flags: Vec<&'static str>,
    extension: Option<String>,
}

fn parse(command: &str, args: &[String]) -> Result<Parsed, Vec<String>> {
    let mut p = Parsed::default();
    let mut rest = args.iter();
    let unknown = |arg: &str| {
        vec![
            format!("Unknown option {arg} for \"{command}\"."),
            format!("Use \"pi --help\" or \"{}\".", usage(command)),
        ]
    };
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-h" | "--help" => p.help = true,
            "-l" | "--local" if matches!(command, "install" | "remove") => p.local = true,
            "-a" | "--approve" => p.trust = Some(true),
            "-na" | "--no-approve" => p.trust = Some(false),
            flag @ ("--self" | "--extensions" | "--models" | "--all" | "--force") if command == "update" => {
                p.flags.push(match flag {
                    "--self" => "self",
                    "--extensions" => "extensions",
                    "--models" => "models",
                    "--all" => "all",
                    _ => "force",
                })
            }
            "--extension" if command == "update" => match rest.next() {
                Some(v) if !v.starts_with('-') => {
                    if p.extension.replace(v.clone()).is_some() {
                        return Err(vec!["--extension can only be provided once".to_string()]);
                    }
                }
                _ => {
                    return Err(vec![
                        "Missing value for --extension.".to_string(),
                        format!("Usage: {}", usage(command)),
                    ]);
                }
            },
            a if a.starts_with('-') => return Err(unknown(a)),
            a if p.source.is_none() => p.source = Some(a.to_string()),
            a => return Err(vec![format!("Unexpected argument {a}."), format!("Usage: {}", usage(command))]),
        }
    }
    Ok(p)
}

fn update_target(p: &Parsed) -> Result<Target, String> {
    let has = |f: &str| p.flags.contains(&f);
    if has("all") && (has("self") || has("extensions") || has("models") || p.extension.is_some() || p.source.is_some())
    {
        return Err("--all cannot be combined with --self, --extensions, --models, --extension or a source".to_string());
    }
    if has("models") {
        if has("self") || has("extensions") || p.extension.is_some() || p.source.is_some() {
            return Err(
                "--models cannot be combined with --self, --extensions, --all, --extension or a source".to_string()
            );
        }
        return Ok(Target::Models);
    }
    if let Some(source) = &p.extension {
        if has("self") || has("extensions") || p.source.is_some() {
            return Err("--extension cannot be combined with --self, --extensions, --all or a source".to_string());
        }
        return Ok(Target::Extensions(Some(source.clone())));
    }
    Ok(match p.source.as_deref() {
        Some("self" | "pi") if has("extensions") => Target::All,
        Some("self" | "pi") => Target::SelfOnly { note: false },
        Some(source) => {
            if has("self") || has("extensions") {
                return Err(
                    "positional update targets cannot be combined with --self, --extensions, or --all".to_string()
                );
            }
            Target::Extensions(Some(source.to_string()))
        }
        None if has("all") || (has("self") && has("extensions")) => Target::All,
        None if has("extensions") => Target::Extensions(None),
        None => Target::SelfOnly { note: !has("self") },
    })
}

fn run(command: &str, args: &[String]) -> Result<(), Vec<String>> {
    let p = parse(command, args)?;
    if p.help {
        out(&format!("Usage:\n  {}", usage(command)));
        return Ok(());
    }
    let target = if command == "update" {
        Some(update_target(&p).map_err(|e| vec![e, format!("Usage: {}", usage(command))])?)
    } else {
        None
    };
    if matches!(command, "install" | "remove") && p.source.is_none() {
        return Err(vec![format!("Missing {command} source."), format!("Usage: {}", usage(command))]);
    }
    if target == Some(Target::Models) {
        return crate::model_catalogs::update_models();
    }
    let cwd = std::env::current_dir().map_err(|e| vec![format!("Error: {e}")])?;
    let agent_dir = pi_core::config::default_agent_dir();
    let home = pi_core::config::home_dir();
    let trusted = pi_core::resources::trust::project_trusted(&agent_dir, &cwd, &home, p.trust)
        .map_err(|e| vec![format!("Error: {e}")])?;
    if p.local && !trusted {
        return Err(vec!["Project is not trusted. Use --approve to modify local package config.".to_string()]);
    }
    let mut pm = PackageManager::new(&cwd, &agent_dir, trusted);
    pm.capture_output = false;
    let scope = if p.local { Scope::Project } else { Scope::User };
    let fail = |e: String| vec![format!("Error: {e}")];
    match command {
        "install" => {
            let source = p.source.unwrap_or_default();
            out(&format!("Installing {source}..."));
            pm.install(&source, scope).map_err(fail)?;
            out(&format!("Installed {source}"));
        }
        "remove" => {
            let source = p.source.unwrap_or_default();
            out(&format!("Removing {source}..."));
            if !pm.remove(&source, scope).map_err(fail)? {
                return Err(vec![format!("No matching package found for {source}")]);
            }
            out(&format!("Removed {source}"));
        }
        "list" => list(&pm),
        _ => return update(&pm, target.unwrap_or(Target::SelfOnly { note: false })),
    }
    Ok(())
}

fn list(pm: &PackageManager) {
    let listed = pm.list();
    if listed.is_empty() {
        out("No packages installed.");
        return;
    }
    for (scope, title) in [(Scope::User, "User packages:"), (Scope::Project, "Project packages:")] {
        let of_scope: Vec<_> = listed.iter().filter(|l| l.scope == scope).collect();
        if of_scope.is_empty() {
            continue;
        }
        if scope == Scope::Project && listed.iter().any(|l| l.scope == Scope::User) {
            out("");
        }
        out(title);
        for pkg in of_scope {
            out(&format!("  {}{}", pkg.source, if pkg.filtered { " (filtered)" } else { "" }));
            if let Some(path) = &pkg.installed_path {
                out(&format!("    {}", path.display()));
            }
        }
    }
}

fn update(pm: &PackageManager, target: Target) -> Result<(), Vec<String>> {
    let source = match &target {
        Target::SelfOnly { note } => {
            if *note {
                out("Extensions are skipped. Run pi update --extensions to update extensions.");
            }
            return Err(vec![SELF_UPDATE.to_string()]);
        }
        Target::Extensions(source) => source.clone(),
        _ => None,
    };
    let changed = pm.update(source.as_deref()).map_err(|e| vec![format!("Error: {e}")])?;
    if pm.offline {
        out("Skipped package updates (offline mode)");
    } else if changed.is_empty() {
        out(&match &source {
            Some(s) => format!("{s} is already up to date"),
            None => "Packages are already up to date".to_string(),
        });
    } else {
        out(&format!("Updated {} package{}:", changed.len(), if changed.len() == 1 { "" } else { "s" }));
        for line in changed {
            out(&format!("  {line}"));
        }
    }
    if target == Target::All {
        return Err(vec![SELF_UPDATE.to_string()]);
    }
    Ok(())
}

const SELF_UPDATE: &str = "error: pi-rpc does not update itself: install the new release the way this one was installed \
                           (for example `cargo install`)";

#[cfg(test)]
mod tests {
    use super::*;

    fn target(args: &[&str]) -> Result<Target, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        update_target(&parse("update", &args).map_err(|e| e.join(" "))?)
    }

    #[test]
    fn update_targets_as_pi_reads_them() {
        assert_eq!(target(&[]), Ok(Target::SelfOnly { note: true }));
        assert_eq!(target(&["--self"]), Ok(Target::SelfOnly { note: false }));
        assert_eq!(target(&["--extensions"]), Ok(Target::Extensions(None)));
        assert_eq!(target(&["npm:a"]), Ok(Target::Extensions(Some("npm:a".into()))));
        assert_eq!(target(&["--extension", "npm:a"]), Ok(Target::Extensions(Some("npm:a".into()))));
        assert_eq!(target(&["--self", "--extensions"]), Ok(Target::All));
        assert_eq!(target(&["pi", "--extensions"]), Ok(Target::All));
        assert_eq!(target(&["--models"]), Ok(Target::Models));
        assert!(target(&["--all", "npm:a"]).is_err());
        assert!(target(&["--bogus"]).unwrap_err().contains("Unknown option --bogus for \"update\""));
        assert!(parse("list", &["-l".to_string()]).is_err());
    }
}
