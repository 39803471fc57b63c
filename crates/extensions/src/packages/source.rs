//! A package source as pi 1.6.0 writes it: `npm:<name>[@<version or range>]`,
//! `git:<host>/<path>[@<ref>]` (also `git:git@host:path`, and bare
//! `https://`, `http://`, `ssh://`, `git://` URLs), or a local path. Also
//! the identity by which two declarations name the same package (npm: the
//! name; git: host and path, without the ref; local: the resolved path).

use std::path::{Path, PathBuf};

/// A parsed source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Npm(NpmSource),
    Git(GitSource),
    Local(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmSource {
    /// What follows `npm:` (`name@version`), as npm takes it.
    pub spec: String,
    pub name: String,
    pub version: Option<String>,
}

impl NpmSource {
    /// An exact version: never updated.
    pub fn pinned(&self) -> bool {
        self.version.as_deref().is_some_and(|v| node_semver::Version::parse(v).is_ok())
    }

    /// Whether an installed version satisfies the configured version or range
    /// (anything does when none is configured, or it is a tag npm resolves).
    pub fn accepts(&self, installed: &str) -> bool {
        let Some(wanted) = self.version.as_deref() else { return true };
        let Ok(range) = node_semver::Range::parse(wanted) else { return true };
        node_semver::Version::parse(installed).is_ok_and(|v| range.satisfies(&v))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// What `git clone` is given.
    pub repo: String,
    pub host: String,
    /// `owner/name`, without `.git`.
    pub path: String,
    pub git_ref: Option<String>,
}

impl Source {
    pub fn parse(source: &str) -> Source {
        if let Some(spec) = source.strip_prefix("npm:") {
            let spec = spec.trim().to_string();
            let (name, version) = split_npm_spec(&spec);
            return Source::Npm(NpmSource { spec, name, version });
        }
        if is_local(source) {
            return Source::Local(source.to_string());
        }
        match parse_git(source) {
            Some(git) => Source::Git(git),
            None => Source::Local(source.to_string()),
        }
    }

    /// Whether updates never move it (an exact npm version, a git ref).
    pub fn pinned(&self) -> bool {
        match self {
            Source::Npm(npm) => npm.pinned(),
            Source::Git(git) => git.git_ref.is_some(),
            Source::Local(_) => true,
        }
    }

    /// The package's identity; local paths resolve against `base`.
    pub fn identity(&self, base: &Path, home: &Path) -> String {
        match self {
            Source::Npm(npm) => format!("npm:{}", npm.name),
            Source::Git(git) => format!("git:{}/{}", git.host, git.path),
            Source::Local(path) => format!("local:{}", resolve_local(path, base, home).display()),
        }
    }
}

/// A local path, `~` expanded, relative to `base`, normalised.
pub fn resolve_local(path: &str, base: &Path, home: &Path) -> PathBuf {
    crate::resources::walk::resolve_path(path.trim(), base, home)
}

/// pi's local-path test: anything but the known remote prefixes.
pub fn is_local(source: &str) -> bool {
    let s = source.trim();
    !["npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:"].iter().any(|p| s.starts_with(p))
}

/// `name`, `name@version`, `@scope/name`, `@scope/name@version`.
fn split_npm_spec(spec: &str) -> (String, Option<String>) {
    let search_from = usize::from(spec.starts_with('@'));
    match spec[search_from..].find('@') {
        Some(i) if i + search_from + 1 < spec.len() => {
            let at = i + search_from;
            (spec[..at].to_string(), Some(spec[at + 1..].to_string()))
        }
        Some(i) => (spec[..i + search_from].to_string(), None),
        None => (spec.to_string(), None),
    }
}

/// A git source: with the `git:` prefix any of pi's shorthand forms, without
/// it only protocol URLs.
fn parse_git(source: &str) -> Option<GitSource> {
    let trimmed = source.trim();
    let (prefixed, url) = match trimmed.strip_prefix("git:") {
        Some(rest) => (true, rest.trim()),
        None => (false, trimmed),
    };
    let lower = url.to_ascii_lowercase();
    let protocol = ["https://", "http://", "ssh://", "git://"].iter().any(|p| lower.starts_with(p));
    if !prefixed && !protocol {
        return None;
    }
    let (repo, git_ref) = split_ref(url);
    let (repo, host, path) = if let Some(rest) = repo.strip_prefix("git@") {
        let (host, path) = rest.split_once(':')?;
        (repo.clone(), host.to_string(), path.to_string())
    } else if protocol {
        let after = &repo[repo.find("://")? + 3..];
        let (authority, path) = after.split_once('/').unwrap_or((after, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = host.split(':').next().unwrap_or(host);
        (repo.clone(), host.to_ascii_lowercase(), path.to_string())
    } else {
        let (host, path) = repo.split_once('/')?;
        if !host.contains('.') && host != "localhost" {
            return None;
        }
        (format!("https://{repo}"), host.to_string(), path.to_string())
    };
    let path = path.trim_start_matches('/').trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).to_string();
    let unsafe_part = |s: &str| s.contains('\0') || s.contains('\\') || s.split('/').any(|p| p == ".." || p.is_empty());
    if host.is_empty() || host.contains('/') || unsafe_part(&host) || path.split('/').count() < 2 || unsafe_part(&path)
    {
        return None;
    }
    Some(GitSource { repo, host, path, git_ref })
}

/// `repo@ref`: the ref is what follows the first `@` of the path part.
fn split_ref(url: &str) -> (String, Option<String>) {
    let path_start = if url.starts_with("git@") {
        url.find(':').map(|i| i + 1)
    } else if let Some(i) = url.find("://") {
        url[i + 3..].find('/').map(|j| i + 3 + j + 1)
    } else {
        url.find('/').map(|i| i + 1)
    };
    let Some(start) = path_start else { return (url.to_string(), None) };
    match url[start..].find('@') {
        Some(i) if i > 0 && start + i + 1 < url.len() => {
            (url[..start + i].to_string(), Some(url[start + i + 1..].to_string()))
        }
        _ => (url.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(source: &str) -> GitSource {
        match Source::parse(source) {
            Source::Git(g) => g,
            other => panic!("{source}: {other:?}"),
        }
    }

    #[test]
    fn npm_specs() {
        let Source::Npm(npm) = Source::parse("npm:@scope/pkg@1.2.3") else { panic!() };
        assert_eq!((npm.name.as_str(), npm.version.as_deref()), ("@scope/pkg", Some("1.2.3")));
        assert!(npm.pinned() && npm.accepts("1.2.3") && !npm.accepts("1.2.4"));
        let Source::Npm(npm) = Source::parse("npm:tools@^1.2.0") else { panic!() };
        assert!(!npm.pinned() && npm.accepts("1.9.0") && !npm.accepts("2.0.0"));
        let Source::Npm(npm) = Source::parse("npm:@scope/pkg") else { panic!() };
        assert_eq!((npm.name.as_str(), npm.version.as_deref()), ("@scope/pkg", None));
        assert!(!npm.pinned() && npm.accepts("0.0.1"));
        assert_eq!(Source::parse("npm:a@1").identity(Path::new("/"), Path::new("/")), "npm:a");
    }

    #[test]
    fn git_forms() {
        let g = git("git:github.com/user/repo@v1");
        assert_eq!(
            (g.repo.as_str(), g.host.as_str(), g.path.as_str()),
            ("https://github.com/user/repo", "github.com", "user/repo")
        );
        assert_eq!(g.git_ref.as_deref(), Some("v1"));
        let g = git("https://example.test/owner/tools.git");
        assert_eq!(
            (g.repo.as_str(), g.path.as_str(), g.git_ref),
            ("https://example.test/owner/tools.git", "owner/tools", None)
        );
        let g = git("git:git@github.com:user/repo@abc123");
        assert_eq!(
            (g.repo.as_str(), g.host.as_str(), g.git_ref.as_deref()),
            ("git@github.com:user/repo", "github.com", Some("abc123"))
        );
        let g = git("ssh://git@example.test:2222/team/pkg");
        assert_eq!((g.host.as_str(), g.path.as_str()), ("example.test", "team/pkg"));
        assert_eq!(
            Source::parse("git:github.com/user/repo@v2").identity(Path::new("/"), Path::new("/")),
            "git:github.com/user/repo"
        );
        // Not git: a bare shorthand without the prefix, a host without a dot.
        assert!(matches!(Source::parse("github.com/user/repo"), Source::Local(_)));
        assert!(matches!(Source::parse("git:nohost/user/repo"), Source::Local(_)));
        assert!(matches!(Source::parse("git:example.test/../x"), Source::Local(_)));
    }

    #[test]
    fn local_paths() {
        assert_eq!(Source::parse("./pkg"), Source::Local("./pkg".into()));
        assert_eq!(Source::parse("../pkg").identity(Path::new("/a/b"), Path::new("/h")), "local:/a/pkg");
    }
}
