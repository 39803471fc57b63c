//! The TypeScript extension host: how a module written against pi's own
//! API (`export default function (pi) {…}`) is run. The host is pi-rpc's own
//! JavaScript program (`src/extensions/host/`), embedded in the binary and
//! written out to `<host dir>/runtime-<hash>/` when first needed, so that a
//! `cargo install`ed or release binary needs no files beside it. Node.js
//! (≥ 20; `PI_RPC_NODE`, the `extensionHostNode` setting, else `node` on
//! `PATH`) runs it; it loads the module with jiti and speaks the ordinary
//! process protocol, so everything else (isolation, timeouts, the UI
//! sub-protocol) is the same as for any process extension.
//!
//! The host's npm packages, pinned in [`HOST_PACKAGES`], live in
//! `<host dir>/node_modules` (`PI_RPC_EXTENSION_HOST_DIR`, the
//! `extensionHostDir` setting, else `$XDG_DATA_HOME/pi-rpc/extension-host`);
//! the first time a pi module needs them, [`super::host_install`] installs
//! them with npm (without the dependencies listed in [`HOST_PROVIDED`]).
//! Nothing here runs when no pi module is loaded.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The host's npm packages: the TypeScript loader pi itself uses, the schema
/// builder pi's extensions import (`typebox`, `@sinclair/typebox`), pi's own
/// TUI library (`@earendil-works/pi-tui`, what extensions import for their
/// components and key names), pi's agent loop (`@earendil-works/pi-agent-core`,
/// what an extension runs its own small agent with), the two small parsers
/// pi's helpers use (YAML front matter, partial JSON of streaming tool
/// arguments), and the syntax highlighter pi colours code with (`highlightCode`).
pub const HOST_PACKAGES: &[(&str, &str)] = &[
    ("jiti", "2.7.0"),
    ("typebox", "1.3.27"),
    ("@earendil-works/pi-tui", "1.6.0"),
    ("@earendil-works/pi-agent-core", "1.6.0"),
    ("yaml", "2.9.0"),
    ("partial-json", "0.1.7"),
    ("highlight.js", "10.7.3"),
];

/// Dependencies of [`HOST_PACKAGES`] that the host provides itself, so npm
/// does not install them: pi-agent-core depends on pi-ai (with the Anthropic,
/// OpenAI, Google and AWS SDKs, about 110 MB), whose imports the host maps to
/// its own pi-ai (`shims/pi-ai.cjs`, which calls pi-rpc's providers). The
/// installer points each, with an npm `overrides` entry of the host
/// directory's `package.json`, at an empty package of that name and version
/// in `<host dir>/provided/` (nothing loads it).
pub const HOST_PROVIDED: &[(&str, &str)] = &[("@earendil-works/pi-ai", "1.6.0")];

/// The oldest Node.js major version the host supports.
pub const MIN_NODE_MAJOR: u32 = 20;

/// The host program's files, by path relative to the runtime directory.
const FILES: &[(&str, &str)] = &[
    ("host.mjs", include_str!("host/host.mjs")),
    ("io-worker.mjs", include_str!("host/io-worker.mjs")),
    ("channel.mjs", include_str!("host/channel.mjs")),
    ("api.mjs", include_str!("host/api.mjs")),
    ("context.mjs", include_str!("host/context.mjs")),
    ("model-registry.mjs", include_str!("host/model-registry.mjs")),
    ("hooks.mjs", include_str!("host/hooks.mjs")),
    ("boundary.mjs", include_str!("host/boundary.mjs")),
    ("prompt-options.mjs", include_str!("host/prompt-options.mjs")),
    ("ui.mjs", include_str!("host/ui.mjs")),
    ("exec.mjs", include_str!("host/exec.mjs")),
    ("virtual-models.mjs", include_str!("host/virtual-models.mjs")),
    ("providers.mjs", include_str!("host/providers.mjs")),
    ("config-refresh.mjs", include_str!("host/config-refresh.mjs")),
    ("provider-refresh.mjs", include_str!("host/provider-refresh.mjs")),
    ("file-lock.mjs", include_str!("host/file-lock.mjs")),
    ("services.mjs", include_str!("host/services.mjs")),
    ("mcp-transports.mjs", include_str!("host/mcp-transports.mjs")),
    ("streaming-message.mjs", include_str!("host/streaming-message.mjs")),
    ("shims/host-services.cjs", include_str!("host/shims/host-services.cjs")),
    ("shims/theme.cjs", include_str!("host/shims/theme.cjs")),
    ("shims/syntax-highlight.cjs", include_str!("host/shims/syntax-highlight.cjs")),
    ("shims/pi-tui.cjs", include_str!("host/shims/pi-tui.cjs")),
    ("shims/pi-coding-agent.cjs", include_str!("host/shims/pi-coding-agent.cjs")),
    ("shims/coding-agent/text.cjs", include_str!("host/shims/coding-agent/text.cjs")),
    ("shims/coding-agent/tools.cjs", include_str!("host/shims/coding-agent/tools.cjs")),
    ("shims/coding-agent/session.cjs", include_str!("host/shims/coding-agent/session.cjs")),
    ("shims/coding-agent/projection.cjs", include_str!("host/shims/coding-agent/projection.cjs")),
    ("shims/coding-agent/ui.cjs", include_str!("host/shims/coding-agent/ui.cjs")),
    ("shims/coding-agent/inert_components.cjs", include_str!("host/shims/coding-agent/inert_components.cjs")),
    ("shims/coding-agent/runtime.cjs", include_str!("host/shims/coding-agent/runtime.cjs")),
    ("shims/coding-agent/trust-store.cjs", include_str!("host/shims/coding-agent/trust-store.cjs")),
    ("shims/coding-agent/agent-session.cjs", include_str!("host/shims/coding-agent/agent-session.cjs")),
    ("shims/coding-agent/session-memory.cjs", include_str!("host/shims/coding-agent/session-memory.cjs")),
    ("shims/coding-agent/session-file.cjs", include_str!("host/shims/coding-agent/session-file.cjs")),
    ("shims/coding-agent/session-switch.cjs", include_str!("host/shims/coding-agent/session-switch.cjs")),
    ("shims/coding-agent/settings.cjs", include_str!("host/shims/coding-agent/settings.cjs")),
    ("shims/coding-agent/models.cjs", include_str!("host/shims/coding-agent/models.cjs")),
    ("shims/coding-agent/session-models.cjs", include_str!("host/shims/coding-agent/session-models.cjs")),
    ("shims/coding-agent/registered-provider.cjs", include_str!("host/shims/coding-agent/registered-provider.cjs")),
    ("shims/coding-agent/kept-registrations.cjs", include_str!("host/shims/coding-agent/kept-registrations.cjs")),
    ("shims/coding-agent/registration-refresh.cjs", include_str!("host/shims/coding-agent/registration-refresh.cjs")),
    ("shims/coding-agent/builtin-provider.cjs", include_str!("host/shims/coding-agent/builtin-provider.cjs")),
    ("shims/coding-agent/llama-provider.cjs", include_str!("host/shims/coding-agent/llama-provider.cjs")),
    ("shims/coding-agent/builtin-auth.cjs", include_str!("host/shims/coding-agent/builtin-auth.cjs")),
    ("shims/coding-agent/oauth-login.cjs", include_str!("host/shims/coding-agent/oauth-login.cjs")),
    ("shims/coding-agent/session-model-runtime.cjs", include_str!("host/shims/coding-agent/session-model-runtime.cjs")),
    ("shims/coding-agent/session-typed-models.cjs", include_str!("host/shims/coding-agent/session-typed-models.cjs")),
    ("shims/coding-agent/session-members.cjs", include_str!("host/shims/coding-agent/session-members.cjs")),
    ("shims/coding-agent/bug-report.cjs", include_str!("host/shims/coding-agent/bug-report.cjs")),
    ("shims/coding-agent/credential-store.cjs", include_str!("host/shims/coding-agent/credential-store.cjs")),
    ("shims/coding-agent/catalog-store.cjs", include_str!("host/shims/coding-agent/catalog-store.cjs")),
    ("shims/coding-agent/radius-catalog.cjs", include_str!("host/shims/coding-agent/radius-catalog.cjs")),
    ("shims/coding-agent/ui-prompts.cjs", include_str!("host/shims/coding-agent/ui-prompts.cjs")),
    ("shims/coding-agent/session-builtins.cjs", include_str!("host/shims/coding-agent/session-builtins.cjs")),
    ("shims/coding-agent/session-codemode.cjs", include_str!("host/shims/coding-agent/session-codemode.cjs")),
    ("shims/coding-agent/session-mcp-tools.cjs", include_str!("host/shims/coding-agent/session-mcp-tools.cjs")),
    ("shims/coding-agent/session-nested-calls.cjs", include_str!("host/shims/coding-agent/session-nested-calls.cjs")),
    ("shims/coding-agent/session-images.cjs", include_str!("host/shims/coding-agent/session-images.cjs")),
    ("shims/coding-agent/session-tool-options.cjs", include_str!("host/shims/coding-agent/session-tool-options.cjs")),
    ("shims/coding-agent/session-loadout.cjs", include_str!("host/shims/coding-agent/session-loadout.cjs")),
    ("shims/coding-agent/session-reload.cjs", include_str!("host/shims/coding-agent/session-reload.cjs")),
    ("shims/coding-agent/session-export.cjs", include_str!("host/shims/coding-agent/session-export.cjs")),
    ("shims/coding-agent/model-store.cjs", include_str!("host/shims/coding-agent/model-store.cjs")),
    ("shims/coding-agent/api-key-login.cjs", include_str!("host/shims/coding-agent/api-key-login.cjs")),
    ("shims/coding-agent/extension-oauth.cjs", include_str!("host/shims/coding-agent/extension-oauth.cjs")),
    ("shims/coding-agent/deferred.cjs", include_str!("host/shims/coding-agent/deferred.cjs")),
    ("shims/coding-agent/args.cjs", include_str!("host/shims/coding-agent/args.cjs")),
    ("shims/coding-agent/resources.cjs", include_str!("host/shims/coding-agent/resources.cjs")),
    ("shims/coding-agent/settings-resources.cjs", include_str!("host/shims/coding-agent/settings-resources.cjs")),
    ("shims/coding-agent/session-runtime.cjs", include_str!("host/shims/coding-agent/session-runtime.cjs")),
    ("shims/coding-agent/rpc-client.cjs", include_str!("host/shims/coding-agent/rpc-client.cjs")),
    ("shims/coding-agent/model-resolver.cjs", include_str!("host/shims/coding-agent/model-resolver.cjs")),
    ("shims/coding-agent/packages.cjs", include_str!("host/shims/coding-agent/packages.cjs")),
    ("shims/coding-agent/compaction.cjs", include_str!("host/shims/coding-agent/compaction.cjs")),
    ("shims/coding-agent/bash-execution.cjs", include_str!("host/shims/coding-agent/bash-execution.cjs")),
    ("shims/coding-agent/extension-loader.cjs", include_str!("host/shims/coding-agent/extension-loader.cjs")),
    ("shims/coding-agent/extension-runner.cjs", include_str!("host/shims/coding-agent/extension-runner.cjs")),
    ("shims/coding-agent/session-extensions.cjs", include_str!("host/shims/coding-agent/session-extensions.cjs")),
    ("shims/coding-agent/builtin-extensions.cjs", include_str!("host/shims/coding-agent/builtin-extensions.cjs")),
    ("shims/coding-agent/input-expansion.cjs", include_str!("host/shims/coding-agent/input-expansion.cjs")),
    ("shims/coding-agent/tree-navigation.cjs", include_str!("host/shims/coding-agent/tree-navigation.cjs")),
    ("shims/coding-agent/session-boundaries.cjs", include_str!("host/shims/coding-agent/session-boundaries.cjs")),
    ("shims/coding-agent/session-retry.cjs", include_str!("host/shims/coding-agent/session-retry.cjs")),
    ("shims/coding-agent/session-compaction.cjs", include_str!("host/shims/coding-agent/session-compaction.cjs")),
    ("shims/coding-agent/summary-retry.cjs", include_str!("host/shims/coding-agent/summary-retry.cjs")),
    ("shims/coding-agent/session-warming.cjs", include_str!("host/shims/coding-agent/session-warming.cjs")),
    ("shims/pi-ai.cjs", include_str!("host/shims/pi-ai.cjs")),
    ("shims/pi-ai-compat.cjs", include_str!("host/shims/pi-ai-compat.cjs")),
    ("shims/pi-ai-models.cjs", include_str!("host/shims/pi-ai-models.cjs")),
    ("shims/pi-ai-oauth.cjs", include_str!("host/shims/pi-ai-oauth.cjs")),
    ("shims/ai/index.cjs", include_str!("host/shims/ai/index.cjs")),
    ("shims/ai/stream.cjs", include_str!("host/shims/ai/stream.cjs")),
    ("shims/ai/partial.cjs", include_str!("host/shims/ai/partial.cjs")),
    ("shims/ai/transcript.cjs", include_str!("host/shims/ai/transcript.cjs")),
    ("shims/ai/json.cjs", include_str!("host/shims/ai/json.cjs")),
    ("shims/ai/models.cjs", include_str!("host/shims/ai/models.cjs")),
    ("shims/ai/calls.cjs", include_str!("host/shims/ai/calls.cjs")),
    ("shims/ai/misc.cjs", include_str!("host/shims/ai/misc.cjs")),
    ("shims/pi-agent-core.cjs", include_str!("host/shims/pi-agent-core.cjs")),
    ("package.json", include_str!("host/package.json")),
];

/// Where the host runs from and with what.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostConfig {
    /// The Node.js executable (`None`: `node` on `PATH`).
    pub node: Option<PathBuf>,
    /// The directory holding the host's `node_modules`.
    pub dir: Option<PathBuf>,
    /// The npm command and its leading arguments (pi's `npmCommand`
    /// setting; `None`: `npm` on `PATH`), which installs the packages.
    pub npm: Option<Vec<String>>,
}

impl HostConfig {
    /// `PI_RPC_NODE` / `PI_RPC_EXTENSION_HOST_DIR`, else the
    /// `extensionHostNode` / `extensionHostDir` keys of a settings file.
    pub fn from_env_and_settings(settings_file: &Path) -> HostConfig {
        let settings: Value = std::fs::read_to_string(settings_file)
            .ok()
            .and_then(|t| serde_json::from_str(t.trim_start_matches('\u{feff}')).ok())
            .unwrap_or(Value::Null);
        let pick = |env: &str, key: &str| {
            std::env::var_os(env)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| settings.get(key).and_then(Value::as_str).map(|s| crate::config::expand_home(Path::new(s))))
        };
        let npm = settings.get("npmCommand").and_then(Value::as_array).and_then(|list| {
            let argv: Vec<String> = list.iter().filter_map(Value::as_str).map(str::to_string).collect();
            (!argv.is_empty() && argv.len() == list.len()).then_some(argv)
        });
        HostConfig {
            node: pick("PI_RPC_NODE", "extensionHostNode"),
            dir: pick("PI_RPC_EXTENSION_HOST_DIR", "extensionHostDir"),
            npm,
        }
    }

    /// The host directory: configured, else `$XDG_DATA_HOME/pi-rpc/extension-host`
    /// (`~/.local/share/…`).
    pub fn host_dir(&self) -> PathBuf {
        if let Some(dir) = &self.dir {
            return dir.clone();
        }
        let data = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::config::expand_home(Path::new("~/.local/share")));
        data.join("pi-rpc").join("extension-host")
    }

    /// The one command that installs the host's packages.
    pub fn install_command(&self) -> String {
        let packages: Vec<String> = HOST_PACKAGES.iter().map(|(n, v)| format!("{n}@{v}")).collect();
        format!("npm install --prefix {} --save-exact {}", self.host_dir().display(), packages.join(" "))
    }
}

/// A ready-to-run host: the command line for one module.
#[derive(Debug, Clone)]
pub struct Host {
    node: PathBuf,
    script: PathBuf,
    modules: PathBuf,
}

impl Host {
    /// Check what the host needs (Node.js, its packages, installed now when
    /// missing) and write its files out; the error is what the
    /// `extension_error` says.
    pub async fn prepare(config: &HostConfig) -> Result<Host, String> {
        let node = find_node(config.node.as_deref()).ok_or_else(|| {
            let named = config.node.as_ref().map(|n| format!(" ({} does not exist)", n.display())).unwrap_or_default();
            format!(
                "TypeScript extensions need Node.js >= {MIN_NODE_MAJOR}, which was not found{named}: install Node.js, \
                 or name it with PI_RPC_NODE or the extensionHostNode setting"
            )
        })?;
        let modules = config.host_dir();
        super::host_install::ensure_packages(config).await?;
        let script = runtime_dir(&modules)?.join("host.mjs");
        Ok(Host { node, script, modules })
    }

    /// `node host.mjs <module>`, with what the host reads from its environment.
    pub fn command(&self, module: &Path, agent_dir: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.node);
        cmd.arg("--no-warnings")
            .arg(&self.script)
            .arg(module)
            .env("PI_RPC_EXTENSION_HOST_MODULES", &self.modules)
            .env("PI_CODING_AGENT_DIR", agent_dir);
        // pi's `RpcClient` runs this binary by default (shims/coding-agent/rpc-client.cjs).
        if let Ok(exe) = std::env::current_exe() {
            cmd.env("PI_RPC_EXECUTABLE", exe);
        }
        cmd
    }
}

/// The host, prepared (and its packages installed) once for all the pi
/// modules of a process, when the first of them starts.
pub struct SharedHost {
    config: HostConfig,
    host: tokio::sync::OnceCell<Result<Host, String>>,
}

impl SharedHost {
    pub fn new(config: HostConfig) -> SharedHost {
        SharedHost { config, host: tokio::sync::OnceCell::new() }
    }

    pub async fn get(&self) -> Result<Host, String> {
        self.host.get_or_init(|| Host::prepare(&self.config)).await.clone()
    }
}

/// The configured Node.js (a path, or a name on `PATH`), else `node` on `PATH`.
fn find_node(configured: Option<&Path>) -> Option<PathBuf> {
    super::host_install::find_program(&configured.unwrap_or(Path::new("node")).to_string_lossy())
}

/// The runtime directory's name: a hash of the host's files, computed by
/// the build script (`build.rs`), so a start does not read them.
fn files_hash() -> &'static str {
    env!("PI_EXTENSION_HOST_FILES_HASH")
}

/// Write the host's files once per version: into the host directory, or
/// (when it cannot be written) the temp directory.
fn runtime_dir(host_dir: &Path) -> Result<PathBuf, String> {
    let name = format!("runtime-{}", files_hash());
    write_runtime(&host_dir.join(&name)).or_else(|first| {
        write_runtime(&std::env::temp_dir().join(format!("pi-rpc-extension-host-{name}")))
            .map_err(|second| format!("cannot write the extension host's files: {first}; {second}"))
    })
}

fn write_runtime(dir: &Path) -> Result<PathBuf, String> {
    let complete = dir.join(".complete");
    if complete.is_file() {
        return Ok(dir.to_path_buf());
    }
    // Written aside and renamed, so a concurrent pi-rpc never sees half a directory.
    let staging = dir.with_extension(format!("tmp{}", std::process::id()));
    let fail = |e: std::io::Error| format!("{}: {e}", staging.display());
    for (name, text) in FILES {
        let path = staging.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        std::fs::write(&path, text).map_err(fail)?;
    }
    std::fs::write(staging.join(".complete"), "").map_err(fail)?;
    match std::fs::rename(&staging, dir) {
        Ok(()) => Ok(dir.to_path_buf()),
        Err(_) if complete.is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(dir.to_path_buf())
        }
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_files_are_written_once_and_completely() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("runtime-x");
        assert_eq!(write_runtime(&target).unwrap(), target);
        for (name, text) in FILES {
            assert_eq!(std::fs::read_to_string(target.join(name)).unwrap(), *text, "{name}");
        }
        assert_eq!(write_runtime(&target).unwrap(), target, "already there");
    }

    /// The build script's hash covers exactly what is embedded: every file
    /// of `host/` is in FILES with the same text, and the name is FNV-1a over
    /// their paths and texts in path order.
    #[test]
    fn the_runtime_directory_is_named_by_the_embedded_files() {
        let mut files: Vec<(&str, &str)> = FILES.to_vec();
        files.sort();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/extensions/host");
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for (name, text) in &files {
            assert_eq!(std::fs::read_to_string(root.join(name)).unwrap(), *text, "{name}");
            for byte in name.bytes().chain([0]).chain(text.bytes()).chain([0]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        assert_eq!(files_hash(), format!("{hash:016x}"));
        assert_eq!(files_hash().len(), 16);
    }

    #[test]
    fn every_file_of_the_host_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/extensions/host");
        let mut found = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    found.push(path.strip_prefix(&root).unwrap().display().to_string());
                }
            }
        }
        let embedded: Vec<&str> = FILES.iter().map(|(name, _)| *name).collect();
        for file in &found {
            assert!(embedded.contains(&file.as_str()), "{file} is not in FILES");
        }
    }

    #[tokio::test]
    async fn missing_node_is_named_before_any_install() {
        let dir = tempfile::tempdir().unwrap();
        let config = HostConfig {
            node: Some(dir.path().join("no-node")),
            dir: Some(dir.path().to_path_buf()),
            npm: Some(vec![dir.path().join("no-npm").display().to_string()]),
        };
        let error = Host::prepare(&config).await.unwrap_err();
        assert!(error.contains("Node.js >= 20") && error.contains("PI_RPC_NODE"), "{error}");
        assert!(config.install_command().contains("jiti@2.7.0 typebox@1.3.27"));
    }
}
