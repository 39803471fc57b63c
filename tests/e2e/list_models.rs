//! `pi --list-models` side by side with pi 1.6.0, `--offline` (pi's shipped
//! catalog): every provider's key variable at once, single providers and a
//! search, and every OAuth login in `auth.json`.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::Sandbox;
use crate::wire_apis::{chatgpt_token, reference_cli};

/// Every provider pi-rpc serves, with a credential of the kind pi looks for.
fn all_credentials() -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> = [
        "ANT_LING_API_KEY",
        "ANTHROPIC_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "BASETEN_API_KEY",
        "CEREBRAS_API_KEY",
        "CLOUDFLARE_API_KEY",
        "COPILOT_GITHUB_TOKEN",
        "DEEPSEEK_API_KEY",
        "FIREWORKS_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_CLOUD_API_KEY",
        "GROQ_API_KEY",
        "HF_TOKEN",
        "KIMI_API_KEY",
        "META_API_KEY",
        "MINIMAX_API_KEY",
        "MINIMAX_CN_API_KEY",
        "MISTRAL_API_KEY",
        "MOONSHOT_API_KEY",
        "NVIDIA_API_KEY",
        "OPENAI_API_KEY",
        "OPENCODE_API_KEY",
        "OPENROUTER_API_KEY",
        "QWEN_TOKEN_PLAN_API_KEY",
        "QWEN_TOKEN_PLAN_CN_API_KEY",
        "RADIUS_API_KEY",
        "TOGETHER_API_KEY",
        "AI_GATEWAY_API_KEY",
        "XAI_API_KEY",
        "XIAOMI_API_KEY",
        "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
        "XIAOMI_TOKEN_PLAN_CN_API_KEY",
        "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
        "ZAI_API_KEY",
        "ZAI_CODING_CN_API_KEY",
    ]
    .into_iter()
    .map(|name| (name, format!("test-{}", name.to_ascii_lowercase())))
    .collect();
    env.push(("AWS_ACCESS_KEY_ID", "AKIDLIST".into()));
    env.push(("AWS_SECRET_ACCESS_KEY", "list-secret".into()));
    env.push(("CLOUDFLARE_ACCOUNT_ID", "acct42".into()));
    env.push(("CLOUDFLARE_GATEWAY_ID", "gw7".into()));
    env
}

/// The ChatGPT (Codex) login the listings run with.
fn codex_login() -> Value {
    json!({"openai-codex": {"type": "oauth", "access": chatgpt_token(), "refresh": "r", "expires": 4_102_444_800_000u64}})
}

/// A login of every OAuth provider, unexpired; GitHub Copilot's lists two
/// models its account may use (and one the catalog lacks).
fn every_login() -> Value {
    let login =
        |access: &str| json!({"type": "oauth", "refresh": "r", "access": access, "expires": 4_102_444_800_000u64});
    let mut all = codex_login();
    for (provider, access) in [
        ("anthropic", "sk-ant-oat01-list"),
        ("openai", "chatgpt-list"),
        ("xai", "xai-list"),
        ("openrouter", "sk-or-list"),
        ("kimi-coding", "kimi-list"),
        ("meta", "meta-list"),
        ("radius", "radius-list"),
    ] {
        all[provider] = login(access);
    }
    let mut copilot = login("tid=1;exp=9999999999;proxy-ep=proxy.individual.githubcopilot.com");
    copilot["availableModelIds"] = json!(["claude-sonnet-4.6", "gpt-6.1-sol", "not-in-the-catalog"]);
    all["github-copilot"] = copilot;
    all
}

async fn list_models(
    reference: Option<&(PathBuf, PathBuf)>,
    env: &[(&'static str, String)],
    search: &[&str],
) -> String {
    list_models_with(reference, env, search, &codex_login()).await
}

async fn list_models_with(
    reference: Option<&(PathBuf, PathBuf)>,
    env: &[(&'static str, String)],
    search: &[&str],
    auth: &Value,
) -> String {
    let sb = Sandbox::offline();
    std::fs::write(sb.agent_dir.path().join("auth.json"), auth.to_string()).expect("auth.json");
    let mut args = vec!["--offline", "--list-models"];
    args.extend_from_slice(search);
    let mut cmd = match reference {
        Some((node, cli)) => {
            let mut cmd = tokio::process::Command::new(node);
            cmd.arg(cli).args(&args).current_dir(sb.cwd.path()).env_clear();
            for keep in ["PATH", "LANG", "TMPDIR"] {
                if let Some(v) = std::env::var_os(keep) {
                    cmd.env(keep, v);
                }
            }
            cmd.env("HOME", sb.home.path()).env("PI_CODING_AGENT_DIR", sb.agent_dir.path());
            cmd
        }
        None => sb.command(&args),
    };
    cmd.stdin(std::process::Stdio::null());
    cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    // Into a file: node leaves a long output to a pipe unflushed when pi exits.
    let listing = sb.cwd.path().join("models.txt");
    cmd.stdout(std::fs::File::create(&listing).expect("listing file"));
    cmd.stderr(std::process::Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn");
    let status =
        tokio::time::timeout(Duration::from_secs(60), child.wait()).await.expect("list-models ended").expect("wait");
    assert!(status.success(), "--list-models failed");
    std::fs::read_to_string(&listing).expect("listing")
}

/// `--list-models` prints pi 1.6.0's table for the same credentials: every
/// provider pi-rpc serves configured (keys, Cloudflare ids, the ChatGPT
/// login, AWS keys, Radius's key: its shipped model list, as pi offline),
/// then single providers and a search.
#[tokio::test]
async fn list_models_equals_pi() {
    let Some(reference) = reference_cli() else { return };
    let env = all_credentials();
    let (pi, rpc) = tokio::join!(list_models(Some(&reference), &env, &[]), list_models(None, &env, &[]));
    assert!(pi.lines().count() > 1600, "{pi}");
    for (a, b) in pi.lines().zip(rpc.lines()) {
        assert_eq!(a, b, "first differing line");
    }
    assert_eq!(pi.lines().count(), rpc.lines().count());
    let only = vec![("GOOGLE_CLOUD_API_KEY", "k".to_string()), ("AZURE_OPENAI_API_KEY", "k".to_string())];
    let (pi, rpc) = tokio::join!(list_models(Some(&reference), &only, &["gpt"]), list_models(None, &only, &["gpt"]));
    assert_eq!(pi, rpc);
    let cf_without_gateway = vec![("CLOUDFLARE_API_KEY", "k".to_string()), ("CLOUDFLARE_ACCOUNT_ID", "a".to_string())];
    let (pi, rpc) = tokio::join!(
        list_models(Some(&reference), &cf_without_gateway, &[]),
        list_models(None, &cf_without_gateway, &[])
    );
    assert_eq!(pi, rpc);
    // Every login in auth.json, no key: Copilot lists only its account's models (pi's `filterModels`).
    let logins = every_login();
    let (pi, rpc) =
        tokio::join!(list_models_with(Some(&reference), &[], &[], &logins), list_models_with(None, &[], &[], &logins));
    let copilot = |table: &str| table.lines().filter(|l| l.starts_with("github-copilot ")).count();
    assert_eq!(copilot(&pi), 2, "{pi}");
    assert_eq!(pi, rpc);
}
