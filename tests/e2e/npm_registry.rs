//! A local npm registry on 127.0.0.1 for the tests: packages are made with
//! the real `npm pack` and served as an npm registry serves them (the
//! package document at `/<name>`, the tarball it names), so `npm install`
//! — run by pi-rpc or by the reference pi, pointed here with
//! `npm_config_registry` — installs them with no network.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{Value, json};

/// Published versions by package name, and the requests served.
#[derive(Default)]
struct State {
    /// name → (version → (manifest, tarball path)).
    packages: HashMap<String, Vec<(String, Value, PathBuf)>>,
    requests: Vec<String>,
}

pub struct Registry {
    pub url: String,
    state: Arc<Mutex<State>>,
    /// While true, requests are recorded but not answered.
    held: Arc<(Mutex<bool>, Condvar)>,
    tarballs: tempfile::TempDir,
}

impl Registry {
    pub fn start() -> Registry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the registry");
        let url = format!("http://{}/", listener.local_addr().expect("registry address"));
        let state = Arc::new(Mutex::new(State::default()));
        let held = Arc::new((Mutex::new(false), Condvar::new()));
        let (shared, gate) = (state.clone(), held.clone());
        let base = url.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (shared, gate) = (shared.clone(), gate.clone());
                let base = base.clone();
                std::thread::spawn(move || serve(stream, &shared, &gate, &base));
            }
        });
        Registry { url, state, held, tarballs: tempfile::tempdir().expect("tarball dir") }
    }

    /// Answer no request until [`Registry::release`] (an install that takes its time).
    pub fn hold(&self) {
        *self.held.0.lock().expect("registry gate") = true;
    }

    pub fn release(&self) {
        *self.held.0.lock().expect("registry gate") = false;
        self.held.1.notify_all();
    }

    /// `npm pack` the package in `dir` and serve it.
    pub fn publish(&self, dir: &Path) {
        let out = std::process::Command::new("npm")
            .args(["pack", "--ignore-scripts", "--json", "--pack-destination"])
            .arg(self.tarballs.path())
            .arg(dir)
            .env("npm_config_update_notifier", "false")
            .output()
            .expect("run npm pack");
        assert!(out.status.success(), "npm pack {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
        let packed: Value = serde_json::from_slice(&out.stdout).expect("npm pack --json");
        let filename = packed[0]["filename"].as_str().expect("packed file name");
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).expect("package.json"))
                .expect("package.json is JSON");
        let name = manifest["name"].as_str().expect("name").to_string();
        let version = manifest["version"].as_str().expect("version").to_string();
        let tarball = self.tarballs.path().join(filename);
        let mut state = self.state.lock().expect("registry state");
        state.packages.entry(name).or_default().push((version, manifest, tarball));
    }

    /// The paths requested so far.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().map(|s| s.requests.clone()).unwrap_or_default()
    }
}

fn serve(stream: std::net::TcpStream, state: &Mutex<State>, held: &(Mutex<bool>, Condvar), base: &str) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    // Skip the headers.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").replace("%2f", "/").replace("%2F", "/");
    let body = {
        let Ok(mut state) = state.lock() else { return };
        state.requests.push(path.clone());
        respond(&state, &path, base)
    };
    if let Ok(mut holding) = held.0.lock() {
        while *holding {
            holding = match held.1.wait(holding) {
                Ok(guard) => guard,
                Err(_) => return,
            };
        }
    }
    let mut stream = stream;
    let (status, body) = match body {
        Some(body) => ("200 OK", body),
        None => ("404 Not Found", b"{\"error\":\"not found\"}".to_vec()),
    };
    let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let _ = stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(&body));
}

/// A package document (`/<name>`) or a tarball (`/<name>/-/<file>`).
fn respond(state: &State, path: &str, base: &str) -> Option<Vec<u8>> {
    let path = path.trim_start_matches('/');
    if let Some((name, file)) = path.split_once("/-/") {
        let versions = state.packages.get(name)?;
        let (_, _, tarball) = versions.iter().find(|(_, _, t)| t.file_name().is_some_and(|f| f == file))?;
        return std::fs::read(tarball).ok();
    }
    let versions = state.packages.get(path)?;
    let mut doc = json!({"name": path, "dist-tags": {}, "versions": {}});
    for (version, manifest, tarball) in versions {
        let mut entry = manifest.clone();
        let file = tarball.file_name()?.to_string_lossy().into_owned();
        entry["dist"] = json!({"tarball": format!("{base}{path}/-/{file}")});
        doc["versions"][version] = entry;
        doc["dist-tags"]["latest"] = json!(version);
    }
    Some(doc.to_string().into_bytes())
}
