//! codemode's `models.classify()` / `models.generateImages()` side by side
//! with pi 1.6.0: the same script (classifiers on TypeSafe, OpenAI
//! Decisions, Cloudflare Workers AI and OpenRouter, an image from
//! OpenRouter, a refused request) through both programs against the same
//! recording fake server, configured alike (`models.json` base URLs, key
//! variables; Cloudflare's account id stored with its key in `auth.json`).
//! The classifier and image requests must agree on method, path,
//! credential, provider headers and the whole body; the script's output (its
//! results less their timestamps) must be the same.
//!
//! `llama-cpp-classify` is not here: pi reaches it only through its llama.cpp
//! provider, whose models come from a running llama-server (`llama_cpp.rs`).

use pi_compat::fake_oauth::FakeOAuth;
use pi_compat::fake_server::{RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::clients::repo_root;
use crate::wire_apis::{Case, credentials, provider_headers, reference_cli, run_with};

const SCRIPT: &str = r#"
const strip = (r) => { const { timestamp, ...rest } = r; return rest; };
const questions = {
  tone: { type: "choice", instructions: "Tone?", criteria: { calm: "no anger", angry: "shouting" } },
  urgency: { type: "score", instructions: "How urgent?", criteria: ["low", "mid", "high"] },
  spam: { type: "bool", instructions: "Spam?", criteria: { true: "an ad", false: "not an ad" } },
};
const png = { type: "image", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", mimeType: "image/png" };
const out = {};
for (const [provider, id] of [["typesafe", "jev-latest"], ["openai", "gpt-6-luna"], ["cloudflare-workers-ai", "@cf/cloudflare/clef"], ["openrouter", "~liquid/d1-latest"]]) {
  const model = await models.getModelOfType("classifier", provider, id);
  out[provider] = strip(await models.classify(model, { state: { text: "BUY NOW" }, images: [png], questions }));
}
const flux = await models.getModelOfType("image", "openrouter", "black-forest-labs/flux-3-image");
const generated = await models.generateImages(flux, { input: [{ type: "text", text: "a red fox" }, png] });
out.images = strip(generated);
image(generated.output.find((b) => b.type === "image"));
const jev = await models.getModelOfType("classifier", "typesafe", "jev-latest");
out.refused = strip(await models.classify(jev, { state: { text: "FAKE_STATUS_400" }, questions }));
out.available = (await models.getAvailableOfType("classifier", "typesafe")).map((m) => m.id);
out.listed = (await models.getModelsOfType("image")).length;
try { await models.classify(flux, { state: {}, questions }); } catch (e) { out.wrongType = e.message; }
return out;"#;

fn case() -> Case {
    Case {
        name: "codemode models",
        aws_auth: false,
        model: "openrouter/moonshotai/kimi-k2.7-code",
        env: vec![
            ("OPENROUTER_API_KEY", "or-key-123".into()),
            ("TYPESAFE_API_KEY", "ts-key-123".into()),
            ("OPENAI_API_KEY", "sk-openai-123".into()),
            // Cloudflare's key is stored with its account id (its `env`), which wins over the process's.
            ("CLOUDFLARE_ACCOUNT_ID", "acct-env".into()),
        ],
        models: json!({"providers": {
            "openrouter": {"baseUrl": "BASE/api/v1"},
            "typesafe": {"baseUrl": "BASE/typesafe/v1"},
            "openai": {"baseUrl": "BASE/openai/v1"},
            "cloudflare-workers-ai": {"baseUrl": "BASE/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai"},
        }}),
        auth: Some(json!({"cloudflare-workers-ai": {"type": "api_key", "key": "cf-key-123",
            "env": {"CLOUDFLARE_ACCOUNT_ID": "acct-123"}}})),
    }
}

/// The requests for the non-chat APIs (the chat calls are the other tests' subject).
fn typed(requests: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    requests.iter().filter(|r| !(r.path.ends_with("/chat/completions") && r.body["stream"] == true)).collect()
}

/// The codemode result the model got back (the second chat request's tool
/// message), less what differs per run: the wall time and temp file paths.
pub(crate) fn script_output(requests: &[RecordedRequest]) -> String {
    let chat: Vec<&RecordedRequest> =
        requests.iter().filter(|r| r.path.ends_with("/chat/completions") && r.body["stream"] == true).collect();
    let Some(second) = chat.get(1) else { return String::new() };
    let messages = second.body["messages"].as_array().cloned().unwrap_or_default();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").cloned().unwrap_or(Value::Null);
    let text = match &tool["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    text.lines()
        .filter(|l| !l.starts_with("Wall time ") && !l.starts_with("[Image saved to "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn classifiers_and_image_generation_match_pi() {
    let Some(reference) = reference_cli() else { return };
    let case = case();
    let replies = || {
        vec![
            Reply::tool_call("call_models_1", "codemode", &json!({"code": SCRIPT}).to_string()),
            Reply::text("All done."),
        ]
    };
    let extra = ["--tools", "read,bash,codemode"];
    let (pi, rpc) = tokio::join!(
        run_with(&case, Some(&reference), false, replies(), &extra, None),
        run_with(&case, None, false, replies(), &extra, None)
    );
    let (pi_typed, rpc_typed) = (typed(&pi.requests), typed(&rpc.requests));
    let paths = |rs: &[&RecordedRequest]| rs.iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>();
    assert_eq!(paths(&pi_typed), paths(&rpc_typed), "requests\npi: {}\npi-rpc: {}", pi.stderr, rpc.stderr);
    assert_eq!(pi_typed.len(), 6, "{:?}", paths(&pi_typed));
    assert!(paths(&rpc_typed).iter().any(|p| p.contains("/accounts/acct-123/")), "{:?}", paths(&rpc_typed));
    for (a, b) in pi_typed.iter().zip(&rpc_typed) {
        let at = format!("{} {}", a.method, a.path);
        assert_eq!(credentials(a), credentials(b), "{at}: auth scheme and credential");
        assert_eq!(provider_headers(a), provider_headers(b), "{at}: provider headers");
        assert_eq!(a.body, b.body, "{at}: body");
    }
    let (pi_out, rpc_out) = (script_output(&pi.requests), script_output(&rpc.requests));
    for part in [
        "\"typesafe\":{\"api\":\"typesafe-system-one\"",
        "\"images\":{\"api\":\"openrouter-images\"",
        "\"errorMessage\":\"System One API error (400): ",
        "is an image model, not a classifier model.",
    ] {
        assert!(pi_out.contains(part), "pi's script output lacks {part}: {pi_out}\n{}", pi.stderr);
    }
    let parsed = |out: &str| -> Value {
        let start = out.find("{\"typesafe\"").unwrap_or(0);
        let end = out.rfind('}').map_or(out.len(), |e| e + 1);
        serde_json::from_str(&out[start..end]).unwrap_or(Value::String(out.to_string()))
    };
    assert_eq!(parsed(&rpc_out), parsed(&pi_out), "the script's results\npi-rpc: {rpc_out}");
    assert_eq!(rpc_out, pi_out, "the codemode result text");
    assert_eq!(rpc.stdout.trim(), pi.stdout.trim());
}

/// The origin of GitHub Copilot's API for individual accounts: the base URL
/// the `proxy-ep` of the fake OAuth server's Copilot tokens names.
const COPILOT_API: &str = "https://api.individual.githubcopilot.com";

const COPILOT_SCRIPT: &str = r#"
const model = await models.getModelOfType("classifier", "github-copilot", "microsoft-decision-1");
const questions = { spam: { type: "bool", instructions: "Spam?", criteria: { true: "an ad", false: "not an ad" } } };
const { timestamp, ...rest } = await models.classify(model, { state: { text: "BUY NOW" }, questions });
return rest;"#;

/// GitHub Copilot's classifier through its login, side by side with pi
/// 1.6.0: the stored Copilot token has expired, so each program first
/// refreshes it (the token exchange at the fake OAuth server, then the
/// account's model list) and classifies with the new token at the base URL
/// its `proxy-ep` names (sent to the recording fake server), not at the
/// models.json base URL and not with the stale token. pi 1.6.0's hard-coded
/// origins go where `PI_RPC_ORIGIN_OVERRIDES` says through
/// `tests/oauth/route_fetch.mjs` (`NODE_OPTIONS=--import`).
#[tokio::test]
async fn a_copilot_login_classifies_with_its_refreshed_token_at_its_proxy_endpoint() {
    let Some(reference) = reference_cli() else { return };
    let preload = format!("--import=file://{}", repo_root().join("tests/oauth/route_fetch.mjs").display());
    let (pi_oauth, rpc_oauth) = (FakeOAuth::start().await.unwrap(), FakeOAuth::start().await.unwrap());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let case = |oauth: &FakeOAuth| {
        let expired = oauth.credential("github-copilot", now - 60_000);
        let mut overrides: Vec<String> =
            oauth.overrides().split(',').filter(|o| !o.starts_with(COPILOT_API)).map(str::to_string).collect();
        overrides.push(format!("{COPILOT_API}=BASE/copilot-api"));
        Case {
            name: "copilot classifier through its login",
            aws_auth: false,
            model: "openrouter/moonshotai/kimi-k2.7-code",
            env: vec![
                ("OPENROUTER_API_KEY", "or-key-123".into()),
                ("PI_RPC_ORIGIN_OVERRIDES", crate::harness::origin_overrides(&overrides.join(","))),
                ("NODE_OPTIONS", preload.clone()),
            ],
            models: json!({"providers": {
                "openrouter": {"baseUrl": "BASE/api/v1"},
                "github-copilot": {"baseUrl": "BASE/copilot-configured"},
            }}),
            auth: Some(json!({"github-copilot": expired})),
        }
    };
    let replies = || {
        vec![
            Reply::tool_call("call_models_1", "codemode", &json!({"code": COPILOT_SCRIPT}).to_string()),
            Reply::text("All done."),
        ]
    };
    let extra = ["--tools", "read,bash,codemode"];
    let (pi_case, rpc_case) = (case(&pi_oauth), case(&rpc_oauth));
    let (pi, rpc) = tokio::join!(
        run_with(&pi_case, Some(&reference), false, replies(), &extra, None),
        run_with(&rpc_case, None, false, replies(), &extra, None)
    );
    let (pi_typed, rpc_typed) = (typed(&pi.requests), typed(&rpc.requests));
    let paths = |rs: &[&RecordedRequest]| rs.iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>();
    assert_eq!(paths(&pi_typed), paths(&rpc_typed), "requests\npi: {}\npi-rpc: {}", pi.stderr, rpc.stderr);
    assert!(paths(&pi_typed).contains(&"POST /copilot-api/v1/systemone".to_string()), "{:?}", paths(&pi_typed));
    assert_eq!(
        (pi_oauth.refreshes("github-copilot"), rpc_oauth.refreshes("github-copilot")),
        (1, 1),
        "one refresh each"
    );
    for (a, b) in pi_typed.iter().zip(&rpc_typed) {
        let at = format!("{} {}", a.method, a.path);
        assert_eq!(credentials(a), credentials(b), "{at}: auth scheme and credential");
        assert_eq!(provider_headers(a), provider_headers(b), "{at}: provider headers");
        assert_eq!(a.body, b.body, "{at}: body");
    }
    let classify = rpc_typed.iter().find(|r| r.path.ends_with("/systemone")).unwrap();
    let bearer = classify.header("authorization").unwrap_or_default();
    assert!(bearer.contains("proxy-ep=") && bearer.ends_with(";n=2"), "the refreshed Copilot token: {bearer}");
    let (pi_out, rpc_out) = (script_output(&pi.requests), script_output(&rpc.requests));
    assert!(pi_out.contains("\"api\":\"typesafe-system-one\""), "pi's script output: {pi_out}\n{}", pi.stderr);
    assert_eq!(rpc_out, pi_out, "the codemode result text");
}
