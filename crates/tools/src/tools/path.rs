//! Path resolution for tools (relative to the session cwd, `~` expansion),
//! following pi's rules: Unicode spaces become plain spaces, a leading `@` is
//! dropped, `~`/`~/…` expand to the home directory, `file://` URLs become
//! paths, and the result is made absolute and normalized like `path.resolve`.

use std::path::{Component, Path, PathBuf};

/// Characters pi turns into a plain space in paths typed by a model.
fn is_unicode_space(c: char) -> bool {
    matches!(c, '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

/// The user's home directory (`$HOME`, like node's `os.homedir()` on Unix).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

/// Decode `%XX` escapes of a `file://` URL path.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Normalize a path typed by the model (before resolving it against a cwd).
pub fn expand_path(input: &str) -> String {
    let mut s: String = input.chars().map(|c| if is_unicode_space(c) { ' ' } else { c }).collect();
    if let Some(rest) = s.strip_prefix('@') {
        s = rest.to_string();
    }
    if s == "~" {
        return home_dir().to_string_lossy().into_owned();
    }
    if let Some(rest) = s.strip_prefix("~/") {
        return home_dir().join(rest).to_string_lossy().into_owned();
    }
    if let Some(rest) = s.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return percent_decode(rest);
    }
    s
}

/// Lexically normalize an absolute path: drop `.`, apply `..`, no trailing slash.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for comp in path.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

/// Resolve `path` against `cwd` (pi's `resolveToCwd`).
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(path);
    let p = Path::new(&expanded);
    if p.is_absolute() {
        return normalize_lexically(p);
    }
    let base = if cwd.is_absolute() {
        cwd.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")).join(cwd)
    };
    normalize_lexically(&base.join(p))
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

fn nfd(s: &str) -> String {
    icu_normalizer::DecomposingNormalizerBorrowed::new_nfd().normalize(s).into_owned()
}

/// macOS screenshot names put a narrow no-break space before AM/PM.
fn am_pm_variant(s: &str) -> String {
    let re = regex::Regex::new(r"(?i) (AM|PM)\.").ok();
    match re {
        Some(re) => re.replace_all(s, "\u{202F}$1.").into_owned(),
        None => s.to_string(),
    }
}

fn curly_quote_variant(s: &str) -> String {
    s.replace('\'', "\u{2019}")
}

/// Resolve a path to read: like [`resolve_to_cwd`], but when that file does not
/// exist, try the spellings macOS uses in file names (narrow no-break space
/// before AM/PM, NFD, curly apostrophe, NFD + curly apostrophe).
pub fn resolve_read_path(path: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(path, cwd);
    if exists(&resolved) {
        return resolved;
    }
    let text = resolved.to_string_lossy().into_owned();
    let nfd_text = nfd(&text);
    let candidates =
        [am_pm_variant(&text), nfd_text.clone(), curly_quote_variant(&text), curly_quote_variant(&nfd_text)];
    for candidate in candidates {
        if candidate != text && exists(Path::new(&candidate)) {
            return PathBuf::from(candidate);
        }
    }
    resolved
}

/// Render a path as pi shows it in messages (lossy UTF-8).
pub fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The errno name of an I/O error (`ENOENT`), if it has one.
pub fn errno_code(err: &std::io::Error) -> Option<String> {
    err.raw_os_error().map(|raw| format!("{:?}", nix::errno::Errno::from_raw(raw)))
}

/// libuv's description of an errno (what node puts after the code).
fn uv_description(code: &str, err: &std::io::Error) -> String {
    let known = match code {
        "ENOENT" => "no such file or directory",
        "EACCES" => "permission denied",
        "EISDIR" => "illegal operation on a directory",
        "ENOTDIR" => "not a directory",
        "EEXIST" => "file already exists",
        "EPERM" => "operation not permitted",
        "EROFS" => "read-only file system",
        "ENOSPC" => "no space left on device",
        "ELOOP" => "too many symbolic links encountered",
        "ENAMETOOLONG" => "name too long",
        "EMFILE" => "too many open files",
        "ETXTBSY" => "text file is busy",
        "EBUSY" => "resource busy or locked",
        "EINVAL" => "invalid argument",
        "EIO" => "i/o error",
        "EFBIG" => "file too large",
        "ENOTEMPTY" => "directory not empty",
        _ => "",
    };
    if known.is_empty() {
        err.raw_os_error().map(|raw| nix::errno::Errno::from_raw(raw).desc().to_lowercase()).unwrap_or_default()
    } else {
        known.to_string()
    }
}

/// An I/O error worded as node words it: `ENOENT: no such file or directory, open '/x'`
/// (`path` omitted for syscalls node reports without one, such as `read`).
pub fn node_fs_error(err: &std::io::Error, syscall: &str, path: Option<&Path>) -> String {
    let Some(code) = errno_code(err) else { return err.to_string() };
    let desc = uv_description(&code, err);
    match path {
        Some(p) => format!("{code}: {desc}, {syscall} '{}'", display(p)),
        None => format!("{code}: {desc}, {syscall}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_cwd() {
        let cwd = Path::new("/work/project");
        assert_eq!(resolve_to_cwd("src/a.rs", cwd), PathBuf::from("/work/project/src/a.rs"));
        assert_eq!(resolve_to_cwd("./src/../b.rs", cwd), PathBuf::from("/work/project/b.rs"));
        assert_eq!(resolve_to_cwd("../x/", cwd), PathBuf::from("/work/x"));
        assert_eq!(resolve_to_cwd(".", cwd), PathBuf::from("/work/project"));
        assert_eq!(resolve_to_cwd("/etc//hosts", cwd), PathBuf::from("/etc/hosts"));
        assert_eq!(resolve_to_cwd("/../..", cwd), PathBuf::from("/"));
    }

    #[test]
    fn tilde_at_prefix_spaces_and_file_urls_are_expanded() {
        let home = home_dir();
        let cwd = Path::new("/w");
        assert_eq!(resolve_to_cwd("~", cwd), home);
        assert_eq!(resolve_to_cwd("~/notes.txt", cwd), home.join("notes.txt"));
        assert_eq!(resolve_to_cwd("~user/x", cwd), PathBuf::from("/w/~user/x"));
        assert_eq!(resolve_to_cwd("@src/a.rs", cwd), PathBuf::from("/w/src/a.rs"));
        assert_eq!(resolve_to_cwd("my\u{00A0}file.txt", cwd), PathBuf::from("/w/my file.txt"));
        assert_eq!(resolve_to_cwd("file:///tmp/a%20b.txt", cwd), PathBuf::from("/tmp/a b.txt"));
    }

    #[test]
    fn read_path_falls_back_to_macos_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let real = "Screenshot 2024-01-01 at 10.00.00\u{202F}AM.png";
        std::fs::write(dir.path().join(real), b"x").unwrap();
        let got = resolve_read_path("Screenshot 2024-01-01 at 10.00.00 AM.png", dir.path());
        assert_eq!(got, dir.path().join(real));

        let curly = "Capture d\u{2019}e\u{301}cran.png";
        std::fs::write(dir.path().join(curly), b"x").unwrap();
        let got = resolve_read_path("Capture d'\u{e9}cran.png", dir.path());
        assert_eq!(got, dir.path().join(curly));

        let missing = resolve_read_path("nope.txt", dir.path());
        assert_eq!(missing, dir.path().join("nope.txt"));
    }

    #[test]
    fn io_errors_are_worded_like_node() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("x");
        let err = std::fs::read(&missing).unwrap_err();
        assert_eq!(
            node_fs_error(&err, "open", Some(&missing)),
            format!("ENOENT: no such file or directory, open '{}'", missing.display())
        );
        let err = std::fs::read(dir.path()).unwrap_err();
        assert_eq!(node_fs_error(&err, "read", None), "EISDIR: illegal operation on a directory, read");
        assert_eq!(errno_code(&err).as_deref(), Some("EISDIR"));
    }
}
