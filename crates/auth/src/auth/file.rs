//! `auth.json` as pi 1.6.0 keeps it: one JSON object keyed by provider id,
//! written whole (2-space indentation, no final newline) in place, created
//! with mode 0600 in a 0700 directory, every write a read-modify-write under
//! pi's lock ([`super::lock`]) so that neither program loses the other's
//! change. Reads are cached by the file's revision (inode, size, mtime), as
//! pi caches them.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::lock::{FileLock, LockError, LockOptions};

/// A failure reading or writing `auth.json`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("invalid {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("{0}")]
    Lock(String),
}

impl From<LockError> for FileError {
    fn from(e: LockError) -> Self {
        FileError::Lock(e.to_string())
    }
}

/// What identifies one version of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Revision {
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

fn revision(path: &Path) -> Option<Revision> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Some(Revision { ino: meta.ino(), size: meta.size(), mtime_ns })
}

/// One `auth.json` file.
#[derive(Debug)]
pub struct AuthFile {
    path: PathBuf,
    lock: LockOptions,
    cache: Mutex<Option<(Revision, Map<String, Value>)>>,
}

impl AuthFile {
    /// The file at `path` (it need not exist yet).
    pub fn new(path: PathBuf) -> AuthFile {
        AuthFile { path, lock: LockOptions::default(), cache: Mutex::new(None) }
    }

    /// `<agent_dir>/auth.json`.
    pub fn in_agent_dir(agent_dir: &Path) -> AuthFile {
        AuthFile::new(agent_dir.join("auth.json"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// With other lock timings (tests).
    pub fn with_lock_options(mut self, lock: LockOptions) -> AuthFile {
        self.lock = lock;
        self
    }

    /// Every stored credential, as of the file's current revision. A file
    /// read while another process writes it may be cut: such a read is
    /// repeated under the lock.
    pub async fn read(&self) -> Result<Map<String, Value>, FileError> {
        let Some(rev) = revision(&self.path) else { return Ok(Map::new()) };
        if let Some((cached, data)) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
            && *cached == rev
        {
            return Ok(data.clone());
        }
        let text = self.read_text()?;
        let data = match parse(&self.path, &text) {
            Ok(data) => data,
            Err(_) => {
                let _lock = self.acquire().await?;
                parse(&self.path, &self.read_text()?)?
            }
        };
        self.remember(data.clone());
        Ok(data)
    }

    /// One provider's stored credential.
    pub async fn get(&self, provider: &str) -> Result<Option<Value>, FileError> {
        Ok(self.read().await?.remove(provider))
    }

    /// pi's `modify`: under the lock, read the current credential of
    /// `provider`, let `change` decide (it may do a network call), and write
    /// the file back with the new credential, if any. Returns the credential
    /// stored afterwards.
    pub async fn modify<F, Fut, E>(&self, provider: &str, change: F) -> Result<Result<Option<Value>, E>, FileError>
    where
        F: FnOnce(Option<Value>) -> Fut,
        Fut: std::future::Future<Output = Result<Option<Value>, E>>,
    {
        self.ensure_exists()?;
        let lock = self.acquire().await?;
        let mut data = parse(&self.path, &self.read_text()?)?;
        let current = data.get(provider).cloned();
        let next = match change(current.clone()).await {
            Ok(next) => next,
            Err(e) => {
                self.remember(data);
                return Ok(Err(e));
            }
        };
        let Some(next) = next else {
            self.remember(data);
            return Ok(Ok(current));
        };
        lock.check()?;
        data.insert(provider.to_string(), next.clone());
        self.write(&data)?;
        lock.check()?;
        self.remember(data);
        Ok(Ok(Some(next)))
    }

    /// Remove a provider's credential (logout). Returns whether there was one.
    pub async fn delete(&self, provider: &str) -> Result<bool, FileError> {
        if !self.path.exists() {
            return Ok(false);
        }
        let lock = self.acquire().await?;
        let mut data = parse(&self.path, &self.read_text()?)?;
        let had = data.shift_remove(provider).is_some();
        lock.check()?;
        self.write(&data)?;
        self.remember(data);
        Ok(had)
    }

    async fn acquire(&self) -> Result<FileLock, FileError> {
        Ok(FileLock::acquire(&self.path, self.lock).await?)
    }

    fn remember(&self, data: Map<String, Value>) {
        let rev = revision(&self.path);
        *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = rev.map(|r| (r, data));
    }

    fn read_text(&self) -> Result<String, FileError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(e) => Err(FileError::Read { path: self.path.clone(), message: e.to_string() }),
        }
    }

    /// pi's `ensureParentDir` and `ensureFileExists`: the directory (0700)
    /// and an empty object (0600), so that the lock has a file to name.
    fn ensure_exists(&self) -> Result<(), FileError> {
        let err = |e: std::io::Error| FileError::Write { path: self.path.clone(), message: e.to_string() };
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
            && !dir.exists()
        {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(err)?;
        }
        if !self.path.exists() {
            self.write_bytes(b"{}")?;
        }
        Ok(())
    }

    /// Write the whole file in place, as pi does (through a symlink too; the
    /// mode applies only when the file is created).
    fn write(&self, data: &Map<String, Value>) -> Result<(), FileError> {
        self.write_bytes(to_pi_json(data).as_bytes())
    }

    /// Replace the file's bytes in place (mode 0600 when it is created).
    fn write_bytes(&self, bytes: &[u8]) -> Result<(), FileError> {
        let err = |e: std::io::Error| FileError::Write { path: self.path.clone(), message: e.to_string() };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&self.path)
            .map_err(err)?;
        f.write_all(bytes).map_err(err)
    }
}

/// `JSON.stringify(data, null, 2)`.
pub fn to_pi_json(data: &Map<String, Value>) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    // A map of JSON values always serialises.
    let _ = serde::Serialize::serialize(data, &mut ser);
    String::from_utf8(out).unwrap_or_default()
}

fn parse(path: &Path, text: &str) -> Result<Map<String, Value>, FileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(FileError::Invalid { path: path.to_path_buf(), message: "expected an object".into() }),
        Err(e) => Err(FileError::Invalid { path: path.to_path_buf(), message: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn modify_writes_pi_s_format_and_keeps_the_other_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let file = AuthFile::in_agent_dir(&tmp.path().join("agent"));
        assert!(file.read().await.unwrap().is_empty());
        let stored = file
            .modify("openai", |cur| async move {
                assert!(cur.is_none());
                Ok::<_, ()>(Some(json!({"type": "api_key", "key": "sk-1"})))
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored, Some(json!({"type": "api_key", "key": "sk-1"})));
        let cred = json!({"type": "oauth", "refresh": "r", "access": "a", "expires": 1_700_000_000_000u64});
        file.modify("anthropic", |_| async { Ok::<_, ()>(Some(cred.clone())) }).await.unwrap().unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert_eq!(
            text,
            "{\n  \"openai\": {\n    \"type\": \"api_key\",\n    \"key\": \"sk-1\"\n  },\n  \"anthropic\": {\n    \"type\": \"oauth\",\n    \"refresh\": \"r\",\n    \"access\": \"a\",\n    \"expires\": 1700000000000\n  }\n}"
        );
        let meta = std::fs::metadata(file.path()).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(file.path().parent().unwrap()).unwrap().mode() & 0o777, 0o700);
        // Leaving an entry unchanged writes nothing and returns it.
        let kept = file.modify("openai", |_| async { Ok::<_, ()>(None) }).await.unwrap().unwrap();
        assert_eq!(kept.unwrap()["key"], "sk-1");
        assert!(!lock_dir_exists(&file), "the lock is released");
    }

    fn lock_dir_exists(file: &AuthFile) -> bool {
        super::super::lock::lock_dir(file.path()).is_ok_and(|d| d.exists())
    }

    #[tokio::test]
    async fn delete_keeps_the_order_of_the_rest_and_errors_pass_through() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("auth.json");
        std::fs::write(
            &path,
            r#"{"a":{"type":"api_key","key":"1"},"b":{"type":"api_key","key":"2"},"c":{"type":"api_key","key":"3"}}"#,
        )
        .unwrap();
        let file = AuthFile::new(path.clone());
        assert!(file.delete("a").await.unwrap());
        assert!(!file.delete("zz").await.unwrap());
        let keys: Vec<String> = file.read().await.unwrap().keys().cloned().collect();
        assert_eq!(keys, ["b", "c"]);
        let failed = file.modify("b", |_| async { Err::<Option<Value>, _>("nope") }).await.unwrap();
        assert_eq!(failed, Err("nope"));
        assert_eq!(file.get("b").await.unwrap().unwrap()["key"], "2");
    }

    #[tokio::test]
    async fn reads_follow_changes_made_by_others() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("auth.json");
        std::fs::write(&path, r#"{"x":{"type":"api_key","key":"1"}}"#).unwrap();
        let file = AuthFile::new(path.clone());
        assert_eq!(file.get("x").await.unwrap().unwrap()["key"], "1");
        std::fs::write(&path, r#"{"x":{"type":"api_key","key":"22"}}"#).unwrap();
        assert_eq!(file.get("x").await.unwrap().unwrap()["key"], "22");
        std::fs::write(&path, "[]").unwrap();
        assert!(file.read().await.unwrap_err().to_string().contains("auth.json"));
    }
}
