//! Lookup tests: session directories, most recent session, references by id, prefix and path.

use std::path::{Path, PathBuf};

use super::{user, write_fixture};
use crate::session::{Session, SessionError, default_session_dir, find_most_recent, resolve_session, session_dirs};

fn header_only(dir: &Path, name: &str, id: &str, cwd: &str) -> PathBuf {
    let header =
        format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{cwd}"}}"#);
    write_fixture(dir, name, &[&header])
}

#[test]
fn default_dir_encodes_the_cwd() {
    let d = default_session_dir(Path::new("/home/u/.pi/agent"), Path::new("/work/my proj/a:b"));
    assert_eq!(d, PathBuf::from("/home/u/.pi/agent/sessions/--work-my proj-a-b--"));
    let d = default_session_dir(Path::new("/a"), Path::new("/x/./y/../z"));
    assert_eq!(d, PathBuf::from("/a/sessions/--x-z--"));
}

#[test]
fn most_recent_session_by_mtime_with_valid_header() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(find_most_recent(dir.path(), None), None);
    let old = header_only(dir.path(), "old.jsonl", "id-old", "/p");
    let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(t0).unwrap();
    let other = header_only(dir.path(), "other.jsonl", "id-other", "/q");
    std::fs::File::options()
        .write(true)
        .open(&other)
        .unwrap()
        .set_modified(t0 + std::time::Duration::from_secs(50))
        .unwrap();
    // Newest file, but not a session.
    std::fs::write(dir.path().join("junk.jsonl"), "nope\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    assert_eq!(find_most_recent(dir.path(), None), Some(other.clone()));
    assert_eq!(find_most_recent(dir.path(), Some(Path::new("/p"))), Some(old));
    assert_eq!(find_most_recent(dir.path(), Some(Path::new("/none"))), None);
}

#[test]
fn resolve_by_path_id_and_prefix() {
    let root = tempfile::tempdir().unwrap();
    let local = root.path().join("local");
    let global = root.path().join("global");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::create_dir_all(&global).unwrap();
    let a = header_only(&local, "a.jsonl", "0195aaaa-1111", "/p");
    let b = header_only(&local, "b.jsonl", "0195aaab-2222", "/p");
    let g = header_only(&global, "g.jsonl", "0195cccc-3333", "/q");
    let dirs = vec![local.clone(), global.clone()];
    let cwd = Path::new("/p");

    assert_eq!(resolve_session("0195aaaa-1111", cwd, &dirs).unwrap(), a);
    assert_eq!(resolve_session("0195aaab", cwd, &dirs).unwrap(), b);
    assert_eq!(resolve_session("0195c", cwd, &dirs).unwrap(), g);
    match resolve_session("0195aaa", cwd, &dirs) {
        Err(SessionError::AmbiguousSession { reference, candidates }) => {
            assert_eq!(reference, "0195aaa");
            assert_eq!(candidates.len(), 2);
            assert!(candidates.iter().any(|c| c.starts_with("0195aaaa-1111 (")));
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    let err = resolve_session("ffff", cwd, &dirs).unwrap_err();
    assert_eq!(err.to_string(), "No session found matching 'ffff'");
    // Paths are taken as they are (resolved against cwd), existing or not.
    assert_eq!(resolve_session("x/s.jsonl", cwd, &dirs).unwrap(), PathBuf::from("/p/x/s.jsonl"));
    assert_eq!(resolve_session("s.jsonl", cwd, &dirs).unwrap(), PathBuf::from("/p/s.jsonl"));
    assert_eq!(resolve_session("/abs/s.jsonl", cwd, &dirs).unwrap(), PathBuf::from("/abs/s.jsonl"));
}

#[test]
fn session_dirs_lists_project_directories() {
    let agent = tempfile::tempdir().unwrap();
    assert!(session_dirs(agent.path()).is_empty());
    let dir = default_session_dir(agent.path(), Path::new("/work/x"));
    let mut s = Session::create(&dir, "/work/x", None).unwrap();
    s.append_message(user("q")).unwrap();
    assert_eq!(session_dirs(agent.path()), vec![dir.clone()]);
    let id = s.session_id().to_string();
    assert_eq!(
        resolve_session(&id[..13], Path::new("/"), &session_dirs(agent.path())).unwrap(),
        s.file_path().unwrap()
    );
    assert_eq!(crate::session::read_session_header(s.file_path().unwrap()).unwrap().id, id);
}
