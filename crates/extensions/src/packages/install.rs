//! Where packages are installed, pi 1.6.0's layout, and the npm and git
//! commands that install, update and remove them:
//!
//! | scope | npm | git |
//! |---|---|---|
//! | user | `<agentDir>/npm/node_modules/<name>` | `<agentDir>/git/<host>/<path>` |
//! | project | `<cwd>/.pi/npm/node_modules/<name>` | `<cwd>/.pi/git/<host>/<path>` |
//! | temporary (`-e`) | `<agentDir>/tmp/extensions/npm/<hash>/node_modules/<name>` | `<agentDir>/tmp/extensions/git-<host>/<hash>/<path>` |
//!
//! so that a package installed by pi is found by pi-rpc and the other way round.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::source::{GitSource, NpmSource};
use super::{PackageManager, Scope};

/// Output kept from a failed command, for its error message.
const OUTPUT_TAIL: usize = 2000;
/// Longest wait for a registry query (`npm view`), as pi waits.
const NETWORK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl PackageManager {
    /// The npm project a scope installs into.
    pub fn npm_root(&self, scope: Scope) -> PathBuf {
        match scope {
            Scope::User => self.agent_dir.join("npm"),
            Scope::Project => self.cwd.join(".pi").join("npm"),
            Scope::Temporary => self.temporary_dir("npm", "", None),
        }
    }

    pub fn npm_path(&self, npm: &NpmSource, scope: Scope) -> PathBuf {
        self.npm_root(scope).join("node_modules").join(&npm.name)
    }

    fn git_root(&self, scope: Scope) -> Option<PathBuf> {
        match scope {
            Scope::User => Some(self.agent_dir.join("git")),
            Scope::Project => Some(self.cwd.join(".pi").join("git")),
            Scope::Temporary => None,
        }
    }

    pub fn git_path(&self, git: &GitSource, scope: Scope) -> PathBuf {
        match self.git_root(scope) {
            Some(root) => root.join(&git.host).join(&git.path),
            None => self.temporary_dir(&format!("git-{}", git.host), &git.path, git.git_ref.as_deref()),
        }
    }

    /// pi's `<agentDir>/tmp/extensions/<prefix>/<sha256(prefix-suffix[@ref])[..8]>/<suffix>`.
    fn temporary_dir(&self, prefix: &str, suffix: &str, git_ref: Option<&str>) -> PathBuf {
        let key = format!("{prefix}-{suffix}{}", git_ref.map(|r| format!("@{r}")).unwrap_or_default());
        let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
        let hash: String = digest.as_ref().iter().take(4).map(|b| format!("{b:02x}")).collect();
        let dir = self.agent_dir.join("tmp").join("extensions").join(prefix).join(hash);
        if suffix.is_empty() { dir } else { dir.join(suffix) }
    }

    /// The version in an installed package's `package.json`.
    pub fn installed_version(path: &Path) -> Option<String> {
        let text = std::fs::read_to_string(path.join("package.json")).ok()?;
        let manifest: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        manifest.get("version")?.as_str().map(str::to_string)
    }

    /// `npm install <spec> --prefix <root>` into a scope's npm project.
    pub fn install_npm(&self, npm: &NpmSource, spec: &str, scope: Scope) -> Result<(), String> {
        let root = self.npm_root(scope);
        ensure_npm_project(&root)?;
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let mut args = vec!["install".to_string(), spec.to_string(), "--prefix".to_string()];
        args.push(root.display().to_string());
        args.extend(["--legacy-peer-deps", "--no-audit", "--no-fund"].map(str::to_string));
        self.run_npm(&args, None)?;
        if self.npm_path(npm, scope).is_dir() {
            Ok(())
        } else {
            Err(format!("npm installed no {} in {}", npm.name, root.join("node_modules").display()))
        }
    }

    pub fn uninstall_npm(&self, npm: &NpmSource, scope: Scope) -> Result<(), String> {
        let root = self.npm_root(scope);
        if !root.exists() {
            return Ok(());
        }
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let args: Vec<String> = ["uninstall", &npm.name, "--prefix", &root.display().to_string()]
            .iter()
            .chain(&["--legacy-peer-deps", "--no-audit", "--no-fund"])
            .map(|s| s.to_string())
            .collect();
        self.run_npm(&args, None)
    }

    /// The newest published version npm reports for `spec` (for updates).
    pub fn latest_npm_version(&self, npm: &NpmSource) -> Result<String, String> {
        let spec = if npm.version.is_some() { npm.spec.clone() } else { npm.name.clone() };
        let args: Vec<String> = ["view", &spec, "version", "--json"].iter().map(|s| s.to_string()).collect();
        let out = self.capture_within(&self.npm[0], &[&self.npm[1..], &args[..]].concat(), NETWORK_TIMEOUT)?;
        match serde_json::from_str::<serde_json::Value>(out.trim()) {
            Ok(serde_json::Value::String(v)) => Ok(v),
            Ok(serde_json::Value::Array(list)) => {
                let mut versions: Vec<node_semver::Version> = list
                    .iter()
                    .filter_map(|v| v.as_str())
                    .filter_map(|v| node_semver::Version::parse(v).ok())
                    .collect();
                versions.sort();
                versions.pop().map(|v| v.to_string()).ok_or_else(|| "npm view gave no version".to_string())
            }
            _ => Err(format!("unexpected output of npm view: {}", out.trim())),
        }
    }

    /// `git clone`, check out the ref, install the dependencies.
    pub fn install_git(&self, git: &GitSource, scope: Scope) -> Result<(), String> {
        let target = self.git_path(git, scope);
        if target.exists() {
            return self.update_git(git, scope);
        }
        if let Some(root) = self.git_root(scope) {
            ensure_gitignore(&root)?;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let result = (|| {
            self.run("git", &["clone".into(), git.repo.clone(), target.display().to_string()], None)?;
            if let Some(git_ref) = &git.git_ref {
                self.run("git", &["checkout".into(), git_ref.clone()], Some(&target))?;
            }
            self.install_git_dependencies(&target)
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&target);
            self.prune_empty_parents(&target, scope);
        }
        result
    }

    /// Fetch the configured ref (or the upstream branch) and reset to it;
    /// dependencies are installed again when the commit changed.
    pub fn update_git(&self, git: &GitSource, scope: Scope) -> Result<(), String> {
        let target = self.git_path(git, scope);
        if !target.exists() {
            return self.install_git(git, scope);
        }
        let reset_to = match &git.git_ref {
            Some(git_ref) => {
                self.run("git", &["fetch".into(), "origin".into(), git_ref.clone()], Some(&target))?;
                "FETCH_HEAD".to_string()
            }
            None => {
                self.run(
                    "git",
                    &["fetch".into(), "--prune".into(), "--no-tags".into(), "origin".into()],
                    Some(&target),
                )?;
                let upstream = self.capture(
                    "git",
                    &["rev-parse".into(), "--abbrev-ref".into(), "@{upstream}".into()],
                    Some(&target),
                );
                if upstream.is_ok() { "@{upstream}".to_string() } else { "origin/HEAD".to_string() }
            }
        };
        let commit = format!("{reset_to}^{{commit}}");
        let head = self.capture("git", &["rev-parse".into(), "HEAD".into()], Some(&target))?;
        let wanted = self.capture("git", &["rev-parse".into(), commit.clone()], Some(&target))?;
        if head.trim() == wanted.trim() {
            return Ok(());
        }
        self.run("git", &["reset".into(), "--hard".into(), commit], Some(&target))?;
        self.run("git", &["clean".into(), "-fdx".into()], Some(&target))?;
        self.install_git_dependencies(&target)
    }

    pub fn git_head(&self, path: &Path) -> Option<String> {
        self.capture("git", &["rev-parse".into(), "HEAD".into()], Some(path)).ok().map(|h| h.trim().to_string())
    }

    pub fn remove_git(&self, git: &GitSource, scope: Scope) -> Result<(), String> {
        let target = self.git_path(git, scope);
        std::fs::remove_dir_all(&target)
            .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
            .map_err(|e| format!("{}: {e}", target.display()))?;
        self.prune_empty_parents(&target, scope);
        Ok(())
    }

    fn install_git_dependencies(&self, dir: &Path) -> Result<(), String> {
        if !dir.join("package.json").is_file() {
            return Ok(());
        }
        let args: Vec<String> =
            ["install", "--omit=dev", "--legacy-peer-deps", "--no-audit", "--no-fund"].map(str::to_string).to_vec();
        self.run_npm(&args, Some(dir))
    }

    fn prune_empty_parents(&self, target: &Path, scope: Scope) {
        let Some(root) = self.git_root(scope) else { return };
        let mut dir = target.parent();
        while let Some(d) = dir {
            if d == root || !d.starts_with(&root) || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    fn run_npm(&self, args: &[String], cwd: Option<&Path>) -> Result<(), String> {
        let argv = [&self.npm[1..], args].concat();
        self.run(&self.npm[0], &argv, cwd)
    }

    /// Run a command, its output going to pi-rpc's stderr (never its stdout,
    /// the protocol's), or captured for the error message.
    fn run(&self, program: &str, args: &[String], cwd: Option<&Path>) -> Result<(), String> {
        let shown = show(program, args);
        let mut cmd = self.command(program, args, cwd);
        if self.capture_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            let out = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
            if out.status.success() {
                return Ok(());
            }
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            return Err(format!("{shown} failed ({}){}", out.status, tail(&text)));
        }
        cmd.stdout(std::io::stderr()).stderr(std::io::stderr());
        let status = cmd.status().map_err(|e| format!("{shown}: {e}"))?;
        if status.success() { Ok(()) } else { Err(format!("{shown} failed ({status})")) }
    }

    fn capture(&self, program: &str, args: &[String], cwd: Option<&Path>) -> Result<String, String> {
        let shown = show(program, args);
        let out = self
            .command(program, args, cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("{shown}: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!("{shown} failed ({}){}", out.status, tail(&String::from_utf8_lossy(&out.stderr))))
        }
    }

    /// [`Self::capture`] for a query that must not hold start-up: killed past `limit`.
    pub(super) fn capture_within(
        &self,
        program: &str,
        args: &[String],
        limit: std::time::Duration,
    ) -> Result<String, String> {
        use std::io::Read;
        let shown = show(program, args);
        let mut child = self
            .command(program, args, None)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{shown}: {e}"))?;
        let mut stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(out) = stdout.as_mut() {
                let _ = out.read_to_string(&mut text);
            }
            text
        });
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{shown} timed out after {} ms", limit.as_millis()));
                }
                Err(e) => return Err(format!("{shown}: {e}")),
            }
        };
        let text = reader.join().unwrap_or_default();
        if status.success() { Ok(text) } else { Err(format!("{shown} failed ({status})")) }
    }

    fn command(&self, program: &str, args: &[String], cwd: Option<&Path>) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null());
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        } else if self.cwd.is_dir() {
            cmd.current_dir(&self.cwd);
        }
        // git and ssh fail instead of prompting on a terminal nobody reads.
        cmd.env("GIT_TERMINAL_PROMPT", "0");
        if std::env::var_os("GIT_SSH_COMMAND").is_none() {
            cmd.env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes");
        }
        cmd
    }
}

/// An npm project to install packages into (pi's: `{"name": "pi-extensions", "private": true}`).
fn ensure_npm_project(root: &Path) -> Result<(), String> {
    ensure_gitignore(root)?;
    let manifest = root.join("package.json");
    if !manifest.exists() {
        std::fs::write(&manifest, "{\n  \"name\": \"pi-extensions\",\n  \"private\": true\n}")
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
    }
    Ok(())
}

/// A `.gitignore` that keeps installed packages out of a repository.
fn ensure_gitignore(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, "*\n!.gitignore\n").map_err(|e| format!("{}: {e}", ignore.display()))?;
    }
    Ok(())
}

fn show(program: &str, args: &[String]) -> String {
    std::iter::once(program).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// `: <the end of a command's output, on one line>` (empty when there is none).
fn tail(text: &str) -> String {
    let tail = output_tail(text, OUTPUT_TAIL);
    if tail.is_empty() { tail } else { format!(": {tail}") }
}

/// The last `max` characters of a command's output, its lines joined by ` | `.
pub(crate) fn output_tail(text: &str, max: usize) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" | ");
    match joined.char_indices().rev().nth(max) {
        Some((i, _)) => format!("…{}", &joined[i..]),
        None => joined,
    }
}
