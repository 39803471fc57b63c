//! The sandbox of one scenario run: its own agent config dir (with
//! `models.json` and `settings.json` pointing at the fake model server), home,
//! working directory, session dir and temp dir, all under one temp directory.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::scenario::{SessionMode, Setup};

/// The API key the fake provider is configured with.
pub const API_KEY: &str = "test-key-123";

/// Directories of one run.
pub struct Sandbox {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub agent: PathBuf,
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub sessions: PathBuf,
    pub tmp: PathBuf,
}

fn write(path: &Path, content: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, content).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The default models of the `fake` provider.
pub fn default_models(overrides: &Map<String, Value>) -> Vec<Value> {
    let mut main = json!({
        "id": "fake-model",
        "name": "Fake Model",
        "contextWindow": 128000,
        "maxTokens": 16384,
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
    });
    if let Value::Object(m) = &mut main {
        m.extend(overrides.clone());
    }
    vec![
        main,
        json!({"id": "fake-reasoner", "name": "Fake Reasoner", "reasoning": true, "contextWindow": 200000, "maxTokens": 32000}),
        json!({"id": "fake-other", "contextWindow": 64000}),
    ]
}

/// `${url}` in a setup file's text: the fake model server (`http://127.0.0.1:PORT`).
fn with_server_url(content: &Value, server_url: &str) -> Value {
    match content {
        Value::String(s) => Value::String(s.replace("${url}", server_url)),
        Value::Array(items) => Value::Array(items.iter().map(|v| with_server_url(v, server_url)).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), with_server_url(v, server_url))).collect()),
        other => other.clone(),
    }
}

fn merge(base: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (k, v) in extra {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(e)) => merge(b, e),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Sandbox {
    /// Create the directories and configuration for `setup`, against the
    /// fake server at `server_url` (`http://127.0.0.1:PORT`).
    /// `examples` is pi's `examples/` directory, for `{"example": …}` files.
    pub fn create(setup: &Setup, server_url: &str, examples: Option<&Path>) -> Result<Sandbox, String> {
        let root_dir = tempfile::Builder::new().prefix("pi-compat-").tempdir().map_err(|e| e.to_string())?;
        // Resolve symlinks (macOS /var → /private/var) so that paths normalise.
        let root = std::fs::canonicalize(root_dir.path()).map_err(|e| e.to_string())?;
        let sb = Sandbox {
            agent: root.join("agent"),
            home: root.join("home"),
            cwd: root.join("work"),
            sessions: root.join("sessions"),
            tmp: root.join("tmp"),
            root,
            _root: root_dir,
        };
        for dir in [&sb.agent, &sb.home, &sb.cwd, &sb.sessions, &sb.tmp] {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        if !setup.no_models {
            let api = setup.api.clone().unwrap_or_else(|| "openai-completions".into());
            let base_url =
                if api == "anthropic-messages" { server_url.to_string() } else { format!("{server_url}/v1") };
            let models = setup.models.clone().unwrap_or_else(|| default_models(&setup.model));
            let mut provider = json!({ "baseUrl": base_url, "api": api, "apiKey": API_KEY, "models": models });
            if setup.no_api_key
                && let Some(p) = provider.as_object_mut()
            {
                p.remove("apiKey");
            }
            let config = json!({ "providers": { "fake": provider } });
            write(&sb.agent.join("models.json"), config.to_string().as_bytes())?;
        }
        let mut settings = Map::new();
        if !setup.no_models {
            settings.insert("defaultProvider".into(), json!("fake"));
            settings.insert("defaultModel".into(), json!("fake-model"));
        }
        settings.insert("retry".into(), json!({"baseDelayMs": 20}));
        merge(&mut settings, &setup.settings);
        write(&sb.agent.join("settings.json"), Value::Object(settings).to_string().as_bytes())?;
        for (path, content) in &setup.files {
            match content.get("example").and_then(Value::as_str) {
                Some(example) => sb.copy_example(path, example, examples)?,
                None => sb.write_file(path, &with_server_url(content, server_url))?,
            }
        }
        for path in &setup.executable {
            sb.make_executable(path)?;
        }
        Ok(sb)
    }

    /// Resolve a scenario path (`@agent/…`, `@home/…`, `@sessions/…`, `@sandbox/…`, else relative to the cwd).
    pub fn resolve(&self, path: &str) -> PathBuf {
        for (prefix, dir) in [
            ("@agent/", &self.agent),
            ("@home/", &self.home),
            ("@sessions/", &self.sessions),
            ("@sandbox/", &self.root),
            ("@tmp/", &self.tmp),
        ] {
            if let Some(rest) = path.strip_prefix(prefix) {
                return dir.join(rest);
            }
        }
        if Path::new(path).is_absolute() { PathBuf::from(path) } else { self.cwd.join(path) }
    }

    /// Write a scenario file: strings as they are, arrays as JSONL for `.jsonl`, other values as JSON.
    pub fn write_file(&self, path: &str, content: &Value) -> Result<(), String> {
        let target = self.resolve(path);
        let text = match content {
            Value::String(s) => s.clone(),
            Value::Array(items) if path.ends_with(".jsonl") => {
                items.iter().map(|v| format!("{}\n", self.interpolate_paths(&v.to_string()))).collect()
            }
            other => other.to_string(),
        };
        write(&target, self.interpolate_paths(&text).as_bytes())
    }

    /// Copy one of pi's examples (`extensions/x.ts`, relative to its
    /// `examples/` directory) to a scenario path.
    fn copy_example(&self, path: &str, example: &str, examples: Option<&Path>) -> Result<(), String> {
        let dir = examples.ok_or_else(|| {
            format!("the scenario needs pi's example {example}: pass --examples DIR (pi's examples/ directory)")
        })?;
        let source = dir.join(example);
        let text = std::fs::read(&source).map_err(|e| format!("cannot read pi's example {}: {e}", source.display()))?;
        write(&self.resolve(path), &text)
    }

    fn make_executable(&self, path: &str) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let target = self.resolve(path);
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot chmod {}: {e}", target.display()))
    }

    /// Replace `${cwd}`, `${agent}`, `${home}`, `${sessions}`, `${tmp}`, `${sandbox}`.
    pub fn interpolate_paths(&self, text: &str) -> String {
        if !text.contains("${") {
            return text.to_string();
        }
        let mut out = text.to_string();
        for (name, dir) in self.placeholders() {
            out = out.replace(&format!("${{{name}}}"), &dir.to_string_lossy());
        }
        out
    }

    fn placeholders(&self) -> [(&'static str, &PathBuf); 6] {
        [
            ("cwd", &self.cwd),
            ("agent", &self.agent),
            ("home", &self.home),
            ("sessions", &self.sessions),
            ("tmp", &self.tmp),
            ("sandbox", &self.root),
        ]
    }

    /// Path → placeholder pairs for normalisation.
    pub fn normalizations(&self) -> Vec<(String, String)> {
        self.placeholders()
            .iter()
            .map(|(name, dir)| (dir.to_string_lossy().into_owned(), format!("<{name}>")))
            .collect()
    }

    /// The extra arguments of the agent command line for this setup.
    pub fn args(&self, setup: &Setup) -> Vec<String> {
        let mut args = Vec::new();
        match setup.session {
            SessionMode::Dir => {
                args.push("--session-dir".to_string());
                args.push(self.sessions.to_string_lossy().into_owned());
            }
            SessionMode::None => args.push("--no-session".to_string()),
            SessionMode::Default => {}
        }
        args.extend(setup.args.iter().map(|a| self.interpolate_paths(a)));
        args
    }

    /// Every `*.jsonl` file under the sessions dir (and the agent dir's
    /// default `sessions/`), sorted by path.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.sessions.clone(), self.agent.join("sessions")];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else { continue };
            for entry in read.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "jsonl") {
                    out.push(p);
                }
            }
        }
        out.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
        out
    }
}
