//! Tests of the model registry: models.json, extension providers, lookup, shared catalog.

use super::*;

fn registry_with(json: &str) -> ModelRegistry {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("models.json"), json).unwrap();
    ModelRegistry::load(dir.path()).unwrap()
}

#[test]
fn custom_providers_get_pi_defaults() {
    let mut reg = registry_with(
        r#"{"providers":{"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k","models":[{"id":"m1"},{"id":"m2","reasoning":true,"contextWindow":1000}]}}}"#,
    );
    let m1 = reg.find("local", "m1").unwrap();
    assert_eq!(m1.name, "m1");
    assert_eq!(m1.context_window, 128_000);
    assert_eq!(m1.max_tokens, 16_384);
    assert_eq!(m1.input, vec!["text"]);
    assert_eq!(reg.api_key("local").as_deref(), Some("k"));
    assert!(reg.available().iter().any(|m| m.id == "m2"));
}

#[test]
fn an_extension_provider_replaces_or_redirects_and_unregistering_restores() {
    let mut reg = registry_with(r#"{"providers":{"anthropic":{"apiKey":"k"}}}"#);
    let builtin = reg.all().into_iter().filter(|m| m.provider == "anthropic").count();
    assert!(builtin > 1);
    // Only a baseUrl: the built-in models stay, redirected.
    reg.register_provider("anthropic", &serde_json::json!({"baseUrl": "http://127.0.0.1:9/a"})).unwrap();
    let redirected: Vec<Model> = reg.all().into_iter().filter(|m| m.provider == "anthropic").collect();
    assert_eq!(redirected.len(), builtin);
    assert!(redirected.iter().all(|m| m.base_url == "http://127.0.0.1:9/a"));
    // Models replace the provider's; the key is the config's.
    let config = serde_json::json!({"baseUrl": "http://127.0.0.1:9/v1", "api": "my-api", "apiKey": "lit",
        "models": [{"id": "one", "name": "One", "reasoning": true, "contextWindow": 1000, "maxTokens": 10}]});
    reg.register_provider("anthropic", &config).unwrap();
    let now: Vec<Model> = reg.all().into_iter().filter(|m| m.provider == "anthropic").collect();
    assert_eq!(now.iter().map(|m| (m.id.as_str(), m.api.as_str())).collect::<Vec<_>>(), [("one", "my-api")]);
    assert_eq!(reg.api_key("anthropic").as_deref(), Some("lit"));
    reg.unregister_provider("anthropic");
    let back: Vec<Model> = reg.all().into_iter().filter(|m| m.provider == "anthropic").collect();
    assert_eq!(back.len(), builtin);
    assert!(back.iter().all(|m| m.base_url != "http://127.0.0.1:9/a" && m.api != "my-api"));
    assert_eq!(reg.api_key("anthropic").as_deref(), Some("k"));
    // A new provider goes entirely; a bad config is refused and leaves nothing.
    reg.register_provider("acme", &config).unwrap();
    assert!(reg.find("acme", "one").is_some());
    reg.unregister_provider("acme");
    assert!(reg.find("acme", "one").is_none());
    let bad = serde_json::json!({"models": [{"id": "x"}]});
    assert!(reg.register_provider("nobase", &bad).unwrap_err().contains("registerProvider(\"nobase\")"));
    assert!(reg.find("nobase", "x").is_none());
}

#[test]
fn registering_a_provider_again_merges_over_the_config_registered_before() {
    let mut reg = registry_with(r#"{"providers":{}}"#);
    let first = serde_json::json!({"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "lit",
        "headers": {"X-First": "one"}, "models": [{"id": "one", "contextWindow": 1000, "maxTokens": 10}]});
    reg.register_provider("acme", &first).unwrap();
    // Another registration with only headers (another extension's, say): the models, key and endpoint stay.
    reg.register_provider("acme", &serde_json::json!({"headers": {"X-Second": "two"}})).unwrap();
    let model = reg.find("acme", "one").expect("the first registration's model stays");
    assert_eq!(model.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(reg.api_key("acme").as_deref(), Some("lit"));
    let headers = reg.headers(&model);
    assert_eq!(headers.keys().collect::<Vec<_>>(), ["X-Second"], "headers are replaced as a whole");
    // A config that cannot apply is refused and leaves the provider as it was.
    let bad = serde_json::json!({"models": [{"id": "two"}], "baseUrl": 7});
    assert!(reg.register_provider("acme", &bad).is_err());
    assert!(reg.find("acme", "one").is_some() && reg.find("acme", "two").is_none());
    // A native provider replaces the config: nothing of the earlier registrations is kept.
    let native = serde_json::json!({"baseUrl": "http://127.0.0.1:9/n", "api": "openai-completions",
        "models": [{"id": "native", "contextWindow": 1000, "maxTokens": 10}]});
    reg.register_native_provider("acme", &native).unwrap();
    assert!(reg.find("acme", "one").is_none());
    let model = reg.find("acme", "native").expect("the native provider's model");
    assert!(reg.headers(&model).is_empty(), "{:?}", reg.headers(&model));
    reg.unregister_provider("acme");
    reg.register_provider("acme", &serde_json::json!({"headers": {"X-Third": "3"}})).unwrap();
    assert!(reg.find("acme", "native").is_none(), "unregistering forgets the config");
}

#[test]
fn resolution_by_full_id_exact_and_fuzzy() {
    let mut reg = registry_with(
        r#"{"providers":{"p":{"baseUrl":"http://x","api":"openai-completions","apiKey":"k","models":[{"id":"alpha-large"},{"id":"alpha-small"},{"id":"beta"}]}}}"#,
    );
    assert_eq!(reg.resolve(None, "p/beta").unwrap().id, "beta");
    assert_eq!(reg.resolve(Some("p"), "beta").unwrap().id, "beta");
    assert_eq!(reg.resolve(None, "small").unwrap().id, "alpha-small");
    // pi 1.6.0: the id that collates last wins among one provider's matches.
    assert_eq!(reg.resolve(None, "alpha").unwrap().id, "alpha-small");
    assert_eq!(
        reg.resolve(None, "nope-nope").unwrap_err(),
        "Model \"nope-nope\" not found. Use --list-models to see available models."
    );
    let custom = reg.resolve_pattern(Some("p"), "nope", None, false).unwrap();
    assert_eq!((custom.model.provider.as_str(), custom.model.id.as_str()), ("p", "nope"));
    assert!(custom.warning.unwrap().contains("Using custom model id"));
    assert_eq!(reg.resolve(None, "faux/faux-1").unwrap().provider, "faux");
}

#[test]
fn a_broken_models_json_at_load_is_reported_and_its_providers_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("models.json");
    std::fs::write(&file, r#"{"providers":{"p":{"models":3}}}"#).unwrap();
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    let error = reg.config_error().unwrap().to_string();
    assert!(
        error.starts_with("Invalid models.json schema:\n  - providers.p")
            && error.ends_with(&format!("\n\nFile: {}", file.display())),
        "{error}"
    );
    assert!(reg.find("anthropic", "claude-sonnet-4-5").is_some(), "the built-in models stay");
    // Valid JSON of the right shape, one provider that cannot be set up: it alone is left out.
    std::fs::write(
        &file,
        r#"{"providers":{"p":{"models":[{"id":"m"}]},"q":{"baseUrl":"http://127.0.0.1:1","api":"openai-completions","models":[{"id":"m2"}]},"r":{"api":"openai-completions","models":[{"id":"m3"}]}}}"#,
    )
    .unwrap();
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    assert_eq!(
        reg.config_error(),
        Some(
            "Provider \"p\": Provider p, model m: no \"api\" specified. Set at provider or model level.\n\n\
             Provider \"r\": Provider r: \"baseUrl\" is required when defining custom models."
        )
    );
    assert!(reg.find("p", "m").is_none() && reg.find("r", "m3").is_none());
    assert!(reg.find("q", "m2").is_some(), "the other providers stay");
    let mut refreshed = reg.clone();
    refreshed.refresh_models_json(dir.path());
    assert_eq!(refreshed.config_error(), reg.config_error());
    std::fs::write(&file, "{").unwrap();
    let reg = ModelRegistry::load(dir.path()).unwrap();
    assert!(reg.config_error().unwrap().starts_with("Failed to parse models.json: "));
    std::fs::write(&file, r#"{"providers":{}}"#).unwrap();
    assert_eq!(ModelRegistry::load(dir.path()).unwrap().config_error(), None);
}

#[test]
fn auth_header_sends_the_key_as_a_bearer_token() {
    let mut reg = registry_with(
        r#"{"providers":{"proxy":{"baseUrl":"http://127.0.0.1:1","api":"anthropic-messages","apiKey":"k-1","authHeader":true,"headers":{"x-a":"b"},"models":[{"id":"m"}]}}}"#,
    );
    let m = reg.find("proxy", "m").unwrap();
    let h = reg.headers(&m);
    assert_eq!(h.get("Authorization").map(String::as_str), Some("Bearer k-1"));
    assert_eq!(h.get("x-a").map(String::as_str), Some("b"));
}

#[test]
fn catalog_models_are_available_with_a_runtime_key() {
    let mut reg = ModelRegistry::load(tempfile::tempdir().unwrap().path()).unwrap();
    assert!(reg.all().iter().any(|m| m.provider == "groq"));
    reg.set_runtime_key("groq", "gsk-test".into());
    let available = reg.available();
    assert!(available.iter().any(|m| m.provider == "groq"));
    assert!(available.iter().all(|m| reg.has_credentials(m)));
    assert_eq!(reg.resolve(Some("anthropic"), "claude-sonnet-4-5").unwrap().api, "anthropic-messages");
}

#[test]
fn provider_settings_reach_built_in_models() {
    let mut reg = registry_with(
        r#"{"providers":{"openrouter":{"baseUrl":"http://127.0.0.1:9/api/v1","compat":{"supportsStrictMode":false,"openRouterRouting":{"only":["x"]}},
            "models":[{"id":"my/model"}]}}}"#,
    );
    let built_in = reg.find("openrouter", "anthropic/claude-fable-5:batch").unwrap();
    assert_eq!(built_in.base_url, "http://127.0.0.1:9/api/v1");
    let compat = built_in.compat.unwrap();
    assert_eq!(compat.get("supportsStrictMode"), Some(&Value::Bool(false)));
    assert_eq!(compat.get("cacheControlFormat").and_then(Value::as_str), Some("anthropic"));
    let custom = reg.find("openrouter", "my/model").unwrap();
    assert_eq!(custom.api, "openai-completions");
    assert_eq!((custom.context_window, custom.max_tokens), (128_000, 16_384));
}

#[test]
fn a_command_key_makes_its_provider_usable_without_being_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let models =
        serde_json::json!({"providers": {"openai": {"apiKey": format!("!touch {} && echo cmd-key", ran.display())}}});
    std::fs::write(dir.path().join("models.json"), models.to_string()).unwrap();
    let reg = ModelRegistry::load(dir.path()).unwrap();
    assert!(reg.provider_usable("openai"));
    assert!(!ran.exists(), "asking whether the provider is usable ran its key's command");
    assert_eq!(reg.api_key("openai").as_deref(), Some("cmd-key"));
    assert!(ran.exists(), "a request's key runs it");
}

#[test]
fn a_login_written_after_loading_is_seen_at_the_next_sync() {
    let dir = tempfile::tempdir().unwrap();
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    assert!(!reg.provider_usable("anthropic"));
    reg.sync_auth(dir.path());
    let login = r#"{"anthropic":{"type":"oauth","refresh":"r","access":"sk-ant-oat01-x","expires":1}}"#;
    std::fs::write(dir.path().join("auth.json"), login).unwrap();
    reg.sync_auth(dir.path());
    assert!(reg.provider_usable("anthropic"));
    assert!(reg.oauth_login("anthropic").is_some());
    assert!(reg.available().iter().any(|m| m.provider == "anthropic"), "its models came in");
    std::fs::write(dir.path().join("auth.json"), "{}").unwrap();
    reg.sync_auth(dir.path());
    assert!(!reg.provider_usable("anthropic"), "logged out");
}

fn shared_slot<'r>(reg: &'r ModelRegistry, provider: &str, id: &str) -> &'r Slot {
    reg.models.iter().find(|m| m.provider == provider && m.id == id).unwrap()
}

#[test]
fn sessions_share_one_parsed_catalog_and_keep_their_changes_to_themselves() {
    // Two sessions of one process: one with a models.json that re-routes a
    // built-in provider, overrides a model and adds one, and a plain one.
    let changed = registry_with(
        r#"{"providers":{"openrouter":{"baseUrl":"http://127.0.0.1:9/v1","modelOverrides":{"openai/gpt-4o":{"name":"Mine"}},
            "models":[{"id":"my/model"}]},"groq":{"modelOverrides":{"openai/gpt-oss-120b":{"maxTokens":7}}}}}"#,
    );
    let mut changed = changed;
    let mut plain = ModelRegistry::load(tempfile::tempdir().unwrap().path()).unwrap();
    let _ = (changed.resolve(None, "openai/gpt-4o"), plain.resolve(None, "openai/gpt-4o"));
    assert!(changed.all_loaded && plain.all_loaded);
    // Unchanged built-in models are the process's one parsed copy in both.
    let shared = catalog::shared_provider_models("anthropic");
    let sonnet = shared.iter().find(|m| m.id == "claude-sonnet-4-5").unwrap();
    for reg in [&changed, &plain] {
        assert!(
            matches!(shared_slot(reg, "anthropic", "claude-sonnet-4-5"), Slot::Shared(m) if std::ptr::eq(*m, sonnet))
        );
    }
    let owned = |reg: &ModelRegistry| reg.models.iter().filter(|m| matches!(m, Slot::Own(_))).count();
    assert_eq!(owned(&plain), 0, "a plain session copies no model");
    let openrouter = catalog::shared_provider_models("openrouter").len();
    assert_eq!(owned(&changed), openrouter + 2, "re-routed provider, one groq override, one custom model");
    // The changes are the changed session's only; the shared catalog is untouched.
    let mine = changed.find("openrouter", "openai/gpt-4o").unwrap();
    assert_eq!((mine.name.as_str(), mine.base_url.as_str()), ("Mine", "http://127.0.0.1:9/v1"));
    assert_eq!(changed.find("groq", "openai/gpt-oss-120b").unwrap().max_tokens, 7);
    assert!(changed.find("openrouter", "my/model").is_some());
    let theirs = plain.find("openrouter", "openai/gpt-4o").unwrap();
    assert_eq!(theirs.base_url, "https://openrouter.ai/api/v1");
    assert_ne!(theirs.name, "Mine");
    assert_ne!(plain.find("groq", "openai/gpt-oss-120b").unwrap().max_tokens, 7);
    assert!(plain.find("openrouter", "my/model").is_none());
    assert_eq!(
        &theirs,
        catalog::shared_provider_models("openrouter").iter().find(|m| m.id == "openai/gpt-4o").unwrap()
    );
    // A key set at run time in one session does not reach the other.
    changed.set_runtime_key("groq", "gsk-1".into());
    assert!(changed.provider_usable("groq") && !plain.provider_usable("groq"));
    // So does an extension's virtual model.
    let virtual_model = Model { api: VIRTUAL_MODEL_API.into(), ..theirs.clone() };
    assert!(changed.add_virtual(virtual_model.clone()).is_err(), "a physical model has its id");
    let virtual_model = Model { provider: "router".into(), id: "auto".into(), ..virtual_model };
    changed.add_virtual(virtual_model).unwrap();
    assert!(changed.find("router", "auto").is_some() && plain.find("router", "auto").is_none());
    // A clone (initialize's checked registry) shares the catalog too.
    let copy = plain.clone();
    assert!(
        matches!(shared_slot(&copy, "anthropic", "claude-sonnet-4-5"), Slot::Shared(m) if std::ptr::eq(*m, sonnet))
    );
}

#[test]
fn no_credentials_means_faux_only() {
    let reg = ModelRegistry::from_models(vec![]);
    let avail = reg.available();
    assert_eq!(avail.len(), 1);
    assert_eq!(avail[0].provider, "faux");
}

#[test]
fn catalog_providers_load_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("auth.json"), r#"{"anthropic":{"type":"api_key","key":"sk-test"}}"#).unwrap();
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    let available = reg.available();
    assert!(!available.is_empty() && available.iter().all(|m| m.provider == "anthropic"), "{available:?}");
    assert!(reg.loaded.contains("anthropic") && !reg.all_loaded, "only the provider with a key was parsed");
    // A lookup by id reaches every provider's models.
    let m = reg.resolve(None, "openai/gpt-4o").unwrap();
    assert_eq!(m.provider, "openai");
    assert!(reg.all_loaded);
    assert_eq!(reg.all().len(), catalog::catalog().len());
}

#[test]
fn a_copilot_login_lists_only_the_models_its_account_may_use() {
    let dir = tempfile::tempdir().unwrap();
    let copilot = |reg: &ModelRegistry| {
        let mut ids: Vec<String> =
            reg.available().into_iter().filter(|m| m.provider == "github-copilot").map(|m| m.id).collect();
        ids.sort();
        ids
    };
    let login = r#"{"github-copilot":{"type":"oauth","refresh":"ghu","access":"tid=1","expires":1,"availableModelIds":["claude-sonnet-4.6","gpt-6.1-sol","gone"]}}"#;
    std::fs::write(dir.path().join("auth.json"), login).unwrap();
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    assert_eq!(copilot(&reg), ["claude-sonnet-4.6", "gpt-6.1-sol"]);
    reg.set_runtime_key("github-copilot", "ghu-key".into());
    assert!(copilot(&reg).len() > 2, "a key set at run time is no login");
    // A list that is not all strings filters nothing (as pi).
    let odd = r#"{"github-copilot":{"type":"oauth","refresh":"ghu","access":"tid=1","expires":1,"availableModelIds":["gpt-6.1-sol",1]}}"#;
    std::fs::write(dir.path().join("auth.json"), odd).unwrap();
    let reg = ModelRegistry::load(dir.path()).unwrap();
    assert!(copilot(&reg).len() > 2);
}

#[test]
fn refresh_reads_models_json_again_keeping_extensions_and_reports_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("models.json");
    let provider = |models: &str| {
        format!(
            r#"{{"providers":{{"p":{{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k","models":[{models}]}}}}}}"#
        )
    };
    std::fs::write(&file, provider(r#"{"id":"m1"}"#)).unwrap();
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    let ext = serde_json::json!({"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "e",
        "models": [{"id": "x1"}]});
    reg.register_provider("ext", &ext).unwrap();
    let mut virtual_model = reg.find("p", "m1").unwrap();
    (virtual_model.provider, virtual_model.id, virtual_model.api) =
        ("router".into(), "auto".into(), VIRTUAL_MODEL_API.into());
    reg.add_virtual(virtual_model).unwrap();
    // A model added to the file is there after the refresh; the extension's stay.
    std::fs::write(&file, provider(r#"{"id":"m1"},{"id":"m2"}"#)).unwrap();
    assert!(reg.find("p", "m2").is_none());
    reg.refresh_models_json(dir.path());
    assert!(reg.find("p", "m2").is_some() && reg.config_error().is_none());
    assert!(reg.find("ext", "x1").is_some() && reg.find("router", "auto").is_some());
    // A broken file: its providers are gone and the error is pi's, the rest stays.
    std::fs::write(&file, "{ broken").unwrap();
    reg.refresh_models_json(dir.path());
    let error = reg.config_error().unwrap().to_string();
    assert!(
        error.starts_with("Failed to parse models.json: ") && error.ends_with(&format!("\n\nFile: {}", file.display())),
        "{error}"
    );
    assert!(reg.find("p", "m1").is_none() && reg.api_key("p").is_none());
    assert!(reg.find("ext", "x1").is_some() && reg.api_key("ext").as_deref() == Some("e"));
    // Mended: back, and no error.
    std::fs::write(&file, provider(r#"{"id":"m1"}"#)).unwrap();
    reg.refresh_models_json(dir.path());
    assert!(reg.config_error().is_none() && reg.find("p", "m1").is_some() && reg.find("p", "m2").is_none());
}

#[test]
fn sampling_params_are_read_and_model_overrides_merge_them_per_level_and_key() {
    let mut reg = registry_with(
        r#"{"providers":{"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k",
            "models":[{"id":"m","reasoning":true,"samplingParams":{"top_p":0.9},
                "samplingParamsByThinkingLevel":{"high":{"top_k":20,"min_p":0.1}}}],
            "modelOverrides":{"m":{"samplingParams":{"temperature":0.6},
                "samplingParamsByThinkingLevel":{"high":{"top_k":40},"off":{"temperature":0.2}}}}}}}"#,
    );
    let m = reg.find("local", "m").unwrap();
    assert_eq!(m.sampling_params.map(Value::Object), Some(serde_json::json!({"top_p": 0.9, "temperature": 0.6})));
    assert_eq!(
        m.sampling_params_by_thinking_level.map(Value::Object),
        Some(serde_json::json!({"high": {"top_k": 40, "min_p": 0.1}, "off": {"temperature": 0.2}}))
    );
}

#[test]
fn input_limits_are_kept_and_model_overrides_merge_their_resize_per_field() {
    let mut reg = registry_with(
        r#"{"providers":{"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k",
            "models":[{"id":"m","inputLimits":{"maxRequestBytes":9,"images":{"resize":{"maxWidth":800,"maxHeight":600},"maxPerMessage":2}}}],
            "modelOverrides":{"m":{"inputLimits":{"images":{"resize":{"maxHeight":500}}}}}}}}"#,
    );
    let m = reg.find("local", "m").unwrap();
    let expected = serde_json::json!({"maxRequestBytes": 9,
        "images": {"resize": {"maxWidth": 800, "maxHeight": 500}, "maxPerMessage": 2}});
    assert_eq!(m.extra.get("inputLimits"), Some(&expected));
}

#[test]
fn a_newer_stored_catalog_joins_the_providers_models_under_models_json_and_after_a_change() {
    use super::super::stored_catalogs::{BUILTIN_DATA_GENERATED_AT_MS, STORE_FILE};
    let dir = tempfile::tempdir().unwrap();
    let model = |id: &str, window: u64| {
        serde_json::json!({"id": id, "name": id, "api": "anthropic-messages", "provider": "anthropic",
            "baseUrl": "https://api.anthropic.com", "reasoning": false, "input": ["text"],
            "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": window, "maxTokens": 9})
    };
    let store = |models: Vec<Value>, last_modified: i64| {
        let file = serde_json::json!({"anthropic": {"models": models, "lastModified": last_modified, "checkedAt": 1}});
        std::fs::write(dir.path().join(STORE_FILE), file.to_string()).unwrap();
    };
    let overrides = r#"{"providers":{"anthropic":{"modelOverrides":{"net-1":{"name":"Renamed"}}}}}"#;
    std::fs::write(dir.path().join("models.json"), overrides).unwrap();
    store(vec![model("net-1", 11), model("claude-sonnet-4-5", 4242)], BUILTIN_DATA_GENERATED_AT_MS + 1);
    let mut reg = ModelRegistry::load(dir.path()).unwrap();
    reg.set_runtime_key("anthropic", "k".into());
    assert_eq!(reg.find("anthropic", "net-1").map(|m| m.name), Some("Renamed".into()), "models.json goes over it");
    assert_eq!(reg.find("anthropic", "claude-sonnet-4-5").map(|m| m.context_window), Some(4242));
    assert!(reg.find("anthropic", "claude-haiku-4-5").is_some(), "the other built-in models stay");
    // pi-rpc's (or pi's) refresh stored a newer catalog: the next sync takes it in.
    store(vec![model("net-2", 22)], BUILTIN_DATA_GENERATED_AT_MS + 2);
    reg.sync_auth(dir.path());
    assert_eq!(reg.find("anthropic", "net-2").map(|m| m.context_window), Some(22));
    assert!(reg.find("anthropic", "net-1").is_none());
    assert_ne!(reg.find("anthropic", "claude-sonnet-4-5").map(|m| m.context_window), Some(4242));
    assert!(reg.available().iter().any(|m| m.id == "net-2"), "the run-time key stays");
    // A catalog no newer than pi's data is not used.
    store(vec![model("net-3", 33)], BUILTIN_DATA_GENERATED_AT_MS);
    reg.sync_auth(dir.path());
    assert!(reg.find("anthropic", "net-3").is_none() && reg.find("anthropic", "net-2").is_none());
}
