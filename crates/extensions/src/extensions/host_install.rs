//! Installing the TypeScript extension host's npm packages by itself, the
//! first time a pi module needs them: `npm install` of the pinned
//! [`HOST_PACKAGES`] into the host directory, announced by one line on
//! stderr, under an exclusive lock on `<host dir>/.install.lock` so that two
//! pi-rpc processes starting at once install once (the second waits, then
//! finds the packages there). Nothing runs when the pinned versions are
//! already installed. A failure is one message naming the command that
//! failed, which the caller reports as the module's `extension_error`.
//! Before npm runs, the dependencies the host provides itself
//! ([`HOST_PROVIDED`]) are pointed at empty local packages, so npm does not
//! fetch them.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Map, Value, json};

use super::host::{HOST_PACKAGES, HOST_PROVIDED, HostConfig};

/// Output kept from a failed `npm install`, for its error message.
const OUTPUT_TAIL: usize = 1500;
/// Longest an install may take: the pi modules (and the commands waiting on
/// their start-up) are not held longer by a registry that never answers.
const INSTALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The pinned packages missing (or at another version) in `<dir>/node_modules`.
pub fn missing_packages(dir: &Path) -> Vec<String> {
    HOST_PACKAGES
        .iter()
        .filter(|(name, version)| installed_version(dir, name).as_deref() != Some(*version))
        .map(|(name, version)| format!("{name}@{version}"))
        .collect()
}

fn installed_version(dir: &Path, name: &str) -> Option<String> {
    /// Only the version is read (the rest of the manifest is skipped, not built).
    #[derive(serde::Deserialize)]
    struct Manifest {
        version: Option<String>,
    }
    let text = std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json")).ok()?;
    let manifest: Manifest = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
    manifest.version
}

/// Make sure the pinned packages are in the host directory, installing them
/// with npm when they are not.
pub async fn ensure_packages(config: &HostConfig) -> Result<(), String> {
    let dir = config.host_dir();
    if missing_packages(&dir).is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "cannot create the extension host's directory {}: {e}; run `{}` once",
            dir.display(),
            config.install_command()
        )
    })?;
    let lock_path = dir.join(".install.lock");
    let locked = tokio::task::spawn_blocking(move || lock_exclusive(&lock_path))
        .await
        .map_err(|e| format!("cannot lock the extension host's directory: {e}"))??;
    // Another process may have installed them while this one waited.
    let missing = missing_packages(&dir);
    if missing.is_empty() {
        drop(locked);
        return Ok(());
    }
    if let Err(e) = provide_host_dependencies(&dir) {
        drop(locked);
        return Err(format!("preparing the extension host's directory {}: {e}", dir.display()));
    }
    let result = install(config, &dir, &missing).await;
    drop(locked);
    result
}

/// Where the empty stand-in of a [`HOST_PROVIDED`] package is, relative to the host directory.
fn provided_path(name: &str) -> String {
    format!("provided/{name}")
}

/// Each [`HOST_PROVIDED`] package as an empty local package (its name and
/// version only) and an npm `overrides` entry of `<dir>/package.json`
/// pointing at it; the rest of the manifest (npm's `dependencies`) is kept.
fn provide_host_dependencies(dir: &Path) -> Result<(), String> {
    let manifest_path = dir.join("package.json");
    let mut manifest = match std::fs::read_to_string(&manifest_path) {
        Ok(text) => serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}'))
            .map_err(|e| format!("{} is not JSON: {e}", manifest_path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("cannot read {}: {e}", manifest_path.display())),
    };
    let Some(fields) = manifest.as_object_mut() else {
        return Err(format!("{} is not a JSON object", manifest_path.display()));
    };
    let overrides = fields.entry("overrides").or_insert_with(|| Value::Object(Map::new()));
    let Some(overrides) = overrides.as_object_mut() else {
        return Err(format!("the `overrides` of {} is not a JSON object", manifest_path.display()));
    };
    for (name, version) in HOST_PROVIDED {
        let stand_in = dir.join(provided_path(name));
        std::fs::create_dir_all(&stand_in).map_err(|e| format!("cannot create {}: {e}", stand_in.display()))?;
        let package = json!({
            "name": name,
            "version": version,
            "private": true,
            "description": "pi-rpc's extension host provides this package itself (shims/); npm installs this empty stand-in",
        });
        let package_path = stand_in.join("package.json");
        std::fs::write(&package_path, format!("{package:#}\n"))
            .map_err(|e| format!("cannot write {}: {e}", package_path.display()))?;
        overrides.insert(name.to_string(), Value::String(format!("file:./{}", provided_path(name))));
    }
    std::fs::write(&manifest_path, format!("{manifest:#}\n"))
        .map_err(|e| format!("cannot write {}: {e}", manifest_path.display()))
}

/// An exclusive `flock` on `path`, held until the value is dropped.
fn lock_exclusive(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, String> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("cannot lock {}: {e}", path.display()))
}

async fn install(config: &HostConfig, dir: &Path, missing: &[String]) -> Result<(), String> {
    let npm = config.npm.clone().unwrap_or_else(|| vec!["npm".to_string()]);
    let Some((program, npm_args)) = npm.split_first() else {
        return Err("the npmCommand setting is empty".to_string());
    };
    let specs: Vec<String> = HOST_PACKAGES.iter().map(|(n, v)| format!("{n}@{v}")).collect();
    let mut args: Vec<String> = npm_args.to_vec();
    args.extend(
        [
            "install",
            "--prefix",
            &dir.display().to_string(),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--save-exact",
        ]
        .map(str::to_string),
    );
    args.extend(specs.iter().cloned());
    let shown = std::iter::once(program.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
    let Some(resolved) = find_program(program) else {
        return Err(format!(
            "the TypeScript extension host needs its npm packages ({}) in {}, and npm, which installs them, was \
             not found: install npm (it comes with Node.js) or name it with the npmCommand setting, then start again",
            missing.join(", "),
            dir.join("node_modules").display()
        ));
    };
    tracing::info!(
        "installing the TypeScript extension host's packages ({}) into {} (once): {shown}",
        specs.join(", "),
        dir.display()
    );
    let running = tokio::process::Command::new(&resolved)
        .args(&args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(INSTALL_TIMEOUT, running)
        .await
        .map_err(|_| format!("`{shown}` did not finish within {} s: it was stopped", INSTALL_TIMEOUT.as_secs()))?
        .map_err(|e| format!("`{shown}` could not be started: {e}"))?;
    let left = missing_packages(dir);
    if output.status.success() && left.is_empty() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if text.is_empty() {
        text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    }
    let tail = crate::packages::install::output_tail(&text, OUTPUT_TAIL);
    let what = if output.status.success() {
        format!("left {} missing", left.join(", "))
    } else {
        format!("failed ({})", output.status)
    };
    Err(format!(
        "installing the TypeScript extension host's packages into {}: `{shown}` {what}{}",
        dir.display(),
        if tail.is_empty() { String::new() } else { format!(": {tail}") }
    ))
}

/// A program named by path, or the first of that name on `PATH`.
pub(crate) fn find_program(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_npm(dir: &Path, script: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-npm");
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn config(dir: &Path, npm: &Path) -> HostConfig {
        HostConfig { node: None, dir: Some(dir.join("host")), npm: Some(vec![npm.display().to_string()]) }
    }

    #[tokio::test]
    async fn installs_once_with_the_pinned_versions() {
        let tmp = tempfile::tempdir().unwrap();
        // A stand-in for npm: writes the packages where npm would, counts its runs.
        let mut script = String::from("echo run >> \"$(dirname \"$0\")/runs\"\nprefix=$3\n");
        for (name, version) in HOST_PACKAGES {
            script.push_str(&format!(
                "mkdir -p \"$prefix/node_modules/{name}\" && echo '{{\"version\": \"{version}\"}}' > \"$prefix/node_modules/{name}/package.json\"\n"
            ));
        }
        let npm = fake_npm(tmp.path(), &script);
        let config = config(tmp.path(), &npm);
        assert_eq!(missing_packages(&config.host_dir()).len(), HOST_PACKAGES.len());
        ensure_packages(&config).await.unwrap();
        ensure_packages(&config).await.unwrap();
        assert!(missing_packages(&config.host_dir()).is_empty());
        assert_eq!(std::fs::read_to_string(tmp.path().join("runs")).unwrap(), "run\n", "installed once");
    }

    /// npm is told to take the provided packages from their empty stand-ins;
    /// what npm wrote into the manifest before stays.
    #[test]
    fn provided_dependencies_are_overridden_with_empty_stand_ins() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("package.json"), r#"{"dependencies": {"jiti": "2.7.0"}}"#).unwrap();
        provide_host_dependencies(dir).unwrap();
        provide_host_dependencies(dir).unwrap();
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
        assert_eq!(manifest["dependencies"], json!({"jiti": "2.7.0"}));
        assert_eq!(manifest["overrides"], json!({"@earendil-works/pi-ai": "file:./provided/@earendil-works/pi-ai"}));
        let stand_in: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("provided/@earendil-works/pi-ai/package.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (stand_in["name"].as_str(), stand_in["version"].as_str()),
            (Some("@earendil-works/pi-ai"), Some("1.6.0"))
        );

        std::fs::write(dir.join("package.json"), "[1]").unwrap();
        assert!(provide_host_dependencies(dir).unwrap_err().contains("not a JSON object"));
    }

    #[tokio::test]
    async fn a_failed_install_names_the_command() {
        let tmp = tempfile::tempdir().unwrap();
        let npm = fake_npm(tmp.path(), "echo 'npm error 404 Not Found - GET http://127.0.0.1/jiti' >&2\nexit 1");
        let config = config(tmp.path(), &npm);
        let error = ensure_packages(&config).await.unwrap_err();
        assert!(error.contains(&format!("`{} install --prefix", npm.display())), "{error}");
        assert!(
            error.contains("jiti@") && error.contains("exit status: 1") && error.contains("404 Not Found"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_missing_npm_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let config = config(tmp.path(), &tmp.path().join("no-npm"));
        let error = ensure_packages(&config).await.unwrap_err();
        assert!(error.contains("npm, which installs them, was not found"), "{error}");
    }
}
