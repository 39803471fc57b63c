//! Which configured packages have a newer version than the installed one,
//! without changing anything (pi's `checkForAvailableUpdates`): local and
//! pinned sources never do, nor packages not installed; an npm package when
//! the registry's version is newer, a git checkout when the remote's head of
//! its upstream branch (else the remote's `HEAD`) is another commit. A failed
//! query counts as no update.

use std::path::Path;

use super::newer;
use super::{PackageManager, Scope, Source};

/// Longest wait for one registry or remote query.
const QUERY_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A package with an update available, as pi reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvailableUpdate {
    pub source: String,
    /// The npm name, or `host/path` of a git source.
    pub display_name: String,
    /// `npm` or `git`.
    pub kind: &'static str,
    pub scope: Scope,
}

impl PackageManager {
    /// The configured packages (each once, project entries first) that have an
    /// update available; none when offline.
    pub fn available_updates(&self) -> Vec<AvailableUpdate> {
        if self.offline {
            return Vec::new();
        }
        let mut found = Vec::new();
        for entry in self.configured_once() {
            let parsed = Source::parse(&entry.source);
            if parsed.pinned() {
                continue;
            }
            let (display_name, kind, newer_there) = match &parsed {
                Source::Npm(npm) => {
                    let path = self.npm_path(npm, entry.scope);
                    let update = path.exists()
                        && Self::installed_version(&path)
                            .is_some_and(|have| self.latest_npm_version(npm).is_ok_and(|latest| newer(&latest, &have)));
                    (npm.name.clone(), "npm", update)
                }
                Source::Git(git) => {
                    let path = self.git_path(git, entry.scope);
                    (format!("{}/{}", git.host, git.path), "git", path.exists() && self.git_remote_moved(&path))
                }
                Source::Local(_) => continue,
            };
            if newer_there {
                found.push(AvailableUpdate { source: entry.source, display_name, kind, scope: entry.scope });
            }
        }
        found
    }

    /// Whether the remote's head differs from the checkout's `HEAD`.
    fn git_remote_moved(&self, checkout: &Path) -> bool {
        let git = |args: &[&str]| {
            let mut argv = vec!["-C".to_string(), checkout.display().to_string()];
            argv.extend(args.iter().map(|a| a.to_string()));
            self.capture_within("git", &argv, QUERY_LIMIT).ok()
        };
        let Some(local) = git(&["rev-parse", "HEAD"]) else { return false };
        let upstream = git(&["rev-parse", "--abbrev-ref", "@{upstream}"]).and_then(|u| {
            u.trim().strip_prefix("origin/").filter(|b| !b.is_empty()).map(|b| format!("refs/heads/{b}"))
        });
        let first_hash = |listing: &str, only_head: bool| {
            listing.lines().find_map(|line| {
                let (hash, name) = line.split_once(char::is_whitespace)?;
                let is_hash = hash.len() == 40 && hash.chars().all(|c| c.is_ascii_hexdigit());
                (is_hash && (!only_head || name.trim() == "HEAD")).then(|| hash.to_string())
            })
        };
        let remote = upstream
            .and_then(|r| git(&["ls-remote", "origin", &r]).and_then(|out| first_hash(&out, false)))
            .or_else(|| git(&["ls-remote", "origin", "HEAD"]).and_then(|out| first_hash(&out, true)));
        remote.is_some_and(|remote| remote != local.trim())
    }
}
