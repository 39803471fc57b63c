//! `models.*` in codemode scripts (pi 1.6.0's model globals): the catalog of
//! chat, classifier and image models, and `classify()` / `generateImages()`
//! through pi-ai's non-chat APIs (`crate::provider::typed`). Arguments are
//! checked here with pi's error texts; the model is resolved by provider and
//! id only, so a script never chooses where the credentials go.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::LoginAuth;
use crate::config::ModelRegistry;
use crate::config::typed_models::{self, ModelType};
use crate::provider::http::HttpClient;
use crate::provider::typed::{self, TypedCall};

/// Where pi's documentation of the models API lives (named in its error texts).
const DOCS: &str = "docs/codemode.md";
const CLASSIFIER_SHAPE: &str = "{ state: { ... }, images?: [{ type: \"image\", data: <base64>, mimeType }], questions: { <id>: { type: \"choice\", instructions, criteria: { <label>: <meaning> } } | { type: \"score\", instructions, criteria: [<lowest level>, ..., <highest level>] } | { type: \"bool\", instructions, criteria: { true: <meaning>, false: <meaning> } } } }";

/// The session's model catalog and credentials, for scripts.
pub struct ModelsHost {
    catalog: Catalog,
    /// None when the HTTP client could not be set up (every call then says so).
    http: Result<HttpClient, String>,
    /// Providers whose classifier or image calls are implemented elsewhere.
    delegate: Option<Arc<dyn TypedModelDelegate>>,
}

/// Where a host's models come from.
enum Catalog {
    /// pi-rpc's registry: its models and credentials, the calls made here.
    Registry(Box<Mutex<ModelRegistry>>),
    /// Another session's registry (an SDK session's, in the extension
    /// host), as the models it lists; every call goes to the delegate.
    Listed(ListedModels),
}

/// A registry kept elsewhere, as its models of each type (`chat`,
/// `classifier`, `image`): `{<type>: {models, available}}`, each list as its
/// `getModelsOfType` / `getAvailableOfType` answer.
#[derive(Default, serde::Deserialize)]
pub struct ListedModels(std::collections::HashMap<String, ListedOfType>);

#[derive(Default, serde::Deserialize)]
struct ListedOfType {
    #[serde(default)]
    models: Vec<Value>,
    #[serde(default)]
    available: Vec<Value>,
}

impl ListedModels {
    fn of(&self, kind: ModelType, available: bool, provider: Option<&str>) -> Vec<Value> {
        let Some(listed) = self.0.get(kind.name()) else { return Vec::new() };
        let list = if available { &listed.available } else { &listed.models };
        list.iter().filter(|m| provider.is_none_or(|p| m["provider"] == p)).cloned().collect()
    }
}

/// A session's models asked for when a script first needs them (an SDK
/// session's registry, kept in the extension host), once per script run.
pub struct LaterModels {
    load: Box<dyn Fn() -> futures::future::BoxFuture<'static, Result<ModelsHost, String>> + Send + Sync>,
    host: tokio::sync::OnceCell<Result<Arc<ModelsHost>, String>>,
}

impl LaterModels {
    pub fn new(
        load: impl Fn() -> futures::future::BoxFuture<'static, Result<ModelsHost, String>> + Send + Sync + 'static,
    ) -> LaterModels {
        LaterModels { load: Box::new(load), host: tokio::sync::OnceCell::new() }
    }

    /// The host, loaded on the first call (a failure is the answer of every call).
    pub async fn host(&self) -> Result<Arc<ModelsHost>, String> {
        self.host.get_or_init(|| async { (self.load)().await.map(Arc::new) }).await.clone()
    }
}

/// Classifier and image calls a provider implements itself (an extension's
/// `registerProvider` with `classifiers` / `images`, pi's provider
/// composer): the call goes there with pi-ai's request auth applied.
pub trait TypedModelDelegate: Send + Sync {
    /// Whether `op` (`classify`, `generateImages`) of `provider`'s models of `api` goes to it.
    fn serves(&self, provider: &str, api: &str, op: &str) -> bool;
    /// Make the call (`model` has its base URL, `options` the key and
    /// headers): pi's result object, or the text of the failure.
    fn call(
        &self,
        op: &'static str,
        model: Value,
        context: Value,
        options: Value,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, Result<Value, String>>;
}

/// A classify or generateImages call ready to run: its call record's
/// arguments (`provider/id`) and the request.
pub struct ModelCall {
    pub name: &'static str,
    pub label: String,
    call: TypedCall,
    context: Value,
    /// The provider's OAuth login, when that is its credential (GitHub
    /// Copilot's: the Copilot token and its account's base URL).
    login: Option<LoginAuth>,
    /// Where the call goes when the provider implements it itself.
    delegate: Option<Arc<dyn TypedModelDelegate>>,
}

impl ModelCall {
    /// Run it; pi's result object (failures inside it). A login's current
    /// credential is asked for first (refreshed when it expires soon), as
    /// pi's model runtime does before each call.
    pub async fn run(mut self) -> Value {
        if let Some(login) = self.login.take() {
            let current = tokio::select! {
                biased;
                _ = self.call.cancel.cancelled() => return self.failed(typed::ABORTED.to_string()),
                current = login.current() => current,
            };
            match current {
                Ok(Some(auth)) => self.call.use_login(auth.api_key, auth.headers, auth.base_url),
                Ok(None) => {}
                Err(e) => return self.failed(e.to_string()),
            }
        }
        if let Some(delegate) = self.delegate.take() {
            return self.delegated(delegate).await;
        }
        if self.name == "models.classify" {
            typed::classify(&self.call, &self.context).await
        } else {
            typed::generate_images(&self.call, &self.context).await
        }
    }

    /// The provider's own implementation: the model with its base URL, the
    /// key and headers as options (pi-ai's `applyAuth`); a failure is pi's
    /// error result.
    async fn delegated(&self, delegate: Arc<dyn TypedModelDelegate>) -> Value {
        let op = if self.name == "models.classify" { "classify" } else { "generateImages" };
        let mut options = serde_json::Map::new();
        if let Some(key) = &self.call.api_key {
            options.insert("apiKey".into(), json!(key));
        }
        if !self.call.headers.is_empty() {
            let headers: serde_json::Map<String, Value> =
                self.call.headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            options.insert("headers".into(), Value::Object(headers));
        }
        let model = info(self.call.model.clone());
        let cancel = self.call.cancel.clone();
        let answer = delegate.call(op, model, self.context.clone(), Value::Object(options), cancel).await;
        match answer {
            Ok(result) if result.is_object() => result,
            Ok(other) => self.failed(format!("The {op} implementation returned {}", describe(&other))),
            Err(message) => self.failed(message),
        }
    }

    /// The result of a call that could not be made (pi's `classifierErrorResult`).
    fn failed(&self, message: String) -> Value {
        let field = if self.name == "models.classify" { "answers" } else { "output" };
        let empty = if field == "answers" { json!({}) } else { json!([]) };
        let mut out = self.call.result_head(field, empty);
        self.call.fail(&mut out, message);
        Value::Object(out)
    }
}

/// What a `models.*` call needs next.
pub enum ModelStep {
    /// Answered at once: `Ok(Some(value))`, `Ok(None)` (undefined), or the error text.
    Done(Result<Option<Value>, String>),
    /// A model call to run as a nested call (or its result when it failed before the request).
    Call(Box<ModelCall>, Option<Value>),
}

fn with_article(word: &str) -> String {
    let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {word}")
}

/// A script value in an error text, as pi describes it.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Array(a) if a.is_empty() => "an empty array".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(o) if o.is_empty() => "{}".into(),
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().take(6).map(String::as_str).collect();
            format!("{{ {}{} }}", keys.join(", "), if o.len() > 6 { ", ..." } else { "" })
        }
        Value::String(_) => "a string".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(_) => "a number".into(),
    }
}

/// [`describe`] of an object's field; a missing one is `undefined`.
fn describe_field(value: Option<&Value>) -> String {
    value.map_or_else(|| "undefined".to_string(), describe)
}

fn model_type(value: &Value) -> Result<ModelType, String> {
    value.as_str().and_then(ModelType::parse).ok_or_else(|| {
        format!(
            "Unknown model type {}. Use \"chat\", \"image\", or \"classifier\".",
            crate::provider::shared::js_json(value)
        )
    })
}

fn provider_arg(value: Option<&Value>) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err("provider must be a string".into()),
    }
}

/// A catalog entry for scripts: without `headers`, which may carry credentials.
fn info(mut model: Value) -> Value {
    if let Value::Object(map) = &mut model {
        map.remove("headers");
    }
    model
}

/// `string_state`: a string `state` is taken too (pi's `modelRegistry.classify()`
/// hands it to the System One APIs as given; codemode's `models.classify()` wants an object).
fn check_classifier_context(context: &Value, string_state: bool) -> Result<(), String> {
    let fail = |problem: String| {
        format!("models.classify() {problem}. Expected context: {CLASSIFIER_SHAPE}. See \"Classify\" in {DOCS}.")
    };
    let Some(ctx) = context.as_object() else {
        return Err(fail(format!("expects a context object as its second argument, got {}", describe(context))));
    };
    if !ctx.get("state").is_some_and(|s| s.is_object() || (string_state && s.is_string())) {
        return Err(fail(format!("context.state must be an object, got {}", describe_field(ctx.get("state")))));
    }
    if let Some(images) = ctx.get("images").filter(|v| !v.is_null()) {
        let Some(list) = images.as_array() else {
            return Err(fail(format!("context.images must be an array, got {}", describe(images))));
        };
        for (i, image) in list.iter().enumerate() {
            if image["type"] != "image" || !image["data"].is_string() || !image["mimeType"].is_string() {
                return Err(fail(format!("context.images[{i}] must be an image block, got {}", describe(image))));
            }
        }
    }
    let Some(questions) = ctx.get("questions").and_then(Value::as_object).filter(|q| !q.is_empty()) else {
        let got = describe_field(ctx.get("questions"));
        return Err(fail(format!("context.questions must map question IDs to questions, got {got}")));
    };
    let strings = |v: &[&Value]| !v.is_empty() && v.iter().all(|s| s.is_string());
    for (id, question) in questions {
        let at = format!("context.questions.{id}");
        if !question.is_object() {
            return Err(fail(format!("{at} must be a question object, got {}", describe(question))));
        }
        if !question["instructions"].is_string() {
            return Err(fail(format!("{at}.instructions must be a string")));
        }
        let criteria = &question["criteria"];
        match question["type"].as_str() {
            Some("choice") => {
                let ok = criteria.as_object().is_some_and(|c| strings(&c.values().collect::<Vec<_>>()));
                if !ok {
                    return Err(fail(format!(
                        "{at} is a \"choice\" question, so criteria must map each label to its meaning"
                    )));
                }
            }
            Some("score") => {
                if !criteria.as_array().is_some_and(|c| strings(&c.iter().collect::<Vec<_>>())) {
                    return Err(fail(format!(
                        "{at} is a \"score\" question, so criteria must list the levels as strings, lowest first"
                    )));
                }
            }
            Some("bool") => {
                if !criteria["true"].is_string() || !criteria["false"].is_string() {
                    return Err(fail(format!(
                        "{at} is a \"bool\" question, so criteria must be {{ true: string, false: string }}"
                    )));
                }
            }
            _ => {
                let kind = question.get("type").map_or("undefined".to_string(), crate::provider::shared::js_json);
                return Err(fail(format!("{at}.type must be \"choice\", \"score\", or \"bool\", got {kind}")));
            }
        }
    }
    Ok(())
}

fn check_images_context(context: &Value) -> Result<(), String> {
    let fail = |problem: String| {
        format!(
            "models.generateImages() {problem}. Expected context: {{ input: [{{ type: \"text\", text: <prompt> }}, ...optional {{ type: \"image\", data: <base64>, mimeType }} references] }}. See \"Generate images\" in {DOCS}."
        )
    };
    if !context.is_object() {
        return Err(fail(format!("expects a context object as its second argument, got {}", describe(context))));
    }
    let Some(list) = context.get("input").and_then(Value::as_array).filter(|l| !l.is_empty()) else {
        let got = describe_field(context.get("input"));
        return Err(fail(format!("context.input must be a non-empty array of blocks, got {got}")));
    };
    for (i, block) in list.iter().enumerate() {
        let text = block["type"] == "text" && block["text"].is_string();
        let image = block["type"] == "image" && block["data"].is_string() && block["mimeType"].is_string();
        if !text && !image {
            return Err(fail(format!("context.input[{i}] must be a text or image block, got {}", describe(block))));
        }
    }
    Ok(())
}

impl ModelsHost {
    pub fn new(registry: ModelRegistry) -> ModelsHost {
        let http = HttpClient::new().map_err(|e| e.message);
        ModelsHost { catalog: Catalog::Registry(Box::new(Mutex::new(registry))), http, delegate: None }
    }

    /// A host over another session's registry: `listed` answers the
    /// catalog questions and `delegate` makes every classify / generateImages call.
    pub fn listed(listed: ListedModels, delegate: Arc<dyn TypedModelDelegate>) -> ModelsHost {
        let http = HttpClient::new().map_err(|e| e.message);
        ModelsHost { catalog: Catalog::Listed(listed), http, delegate: Some(delegate) }
    }

    /// Calls of the providers `delegate` serves go to it.
    pub fn with_delegate(mut self, delegate: Option<Arc<dyn TypedModelDelegate>>) -> ModelsHost {
        self.delegate = delegate;
        self
    }

    /// pi-rpc's registry (None: the models are listed from elsewhere).
    fn registry(&self) -> Option<std::sync::MutexGuard<'_, ModelRegistry>> {
        match &self.catalog {
            Catalog::Registry(registry) => Some(registry.lock().unwrap_or_else(|p| p.into_inner())),
            Catalog::Listed(_) => None,
        }
    }

    /// The models of `kind` (`available`: those with credentials), of `provider` or all.
    fn models_of_type(&self, kind: ModelType, available: bool, provider: Option<&str>) -> Vec<Value> {
        match (&self.catalog, self.registry()) {
            (Catalog::Listed(listed), _) => listed.of(kind, available, provider),
            (_, Some(mut registry)) if available => typed_models::available_of_type(&mut registry, kind, provider),
            (_, Some(mut registry)) => typed_models::models_of_type(&mut registry, kind, provider),
            (_, None) => Vec::new(),
        }
    }

    fn model_of_type(&self, kind: ModelType, provider: &str, id: &str) -> Option<Value> {
        self.models_of_type(kind, false, Some(provider)).into_iter().find(|m| m["id"] == id)
    }

    /// One `models.<op>(...args)` call of a script.
    pub fn step(&self, op: &str, args: &[Value], cancel: &CancellationToken) -> ModelStep {
        let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
        let done = |r: Result<Option<Value>, String>| ModelStep::Done(r);
        match op {
            "getModelsOfType" | "getAvailableOfType" => {
                let listed = model_type(arg(0)).and_then(|kind| {
                    let provider = provider_arg(args.get(1))?;
                    let list = self.models_of_type(kind, op == "getAvailableOfType", provider.as_deref());
                    Ok(Some(Value::Array(list.into_iter().map(info).collect())))
                });
                done(listed)
            }
            "getModelOfType" => {
                let (Some(provider), Some(id)) = (arg(1).as_str(), arg(2).as_str()) else {
                    let given: Vec<String> = args.iter().map(describe).collect();
                    return done(Err(format!(
                        "models.getModelOfType(type, provider, id) expects three strings, got ({}). The provider and the id are separate arguments, for example models.getModelOfType(\"classifier\", \"typesafe\", \"jev-latest\").",
                        given.join(", ")
                    )));
                };
                done(model_type(arg(0)).map(|kind| self.model_of_type(kind, provider, id).map(info)))
            }
            "classify" => self.prepare("models.classify", ModelType::Classifier, arg(0), arg(1), cancel, false),
            "generateImages" => self.prepare("models.generateImages", ModelType::Image, arg(0), arg(1), cancel, false),
            _ => done(Err(format!("models.{op} is not a function"))),
        }
    }

    /// [`ModelsHost::step`] for pi's `ctx.modelRegistry`: `classify` /
    /// `generateImages` call the model's API with the model as given (its
    /// `baseUrl`, `api`, `headers`; the catalog's entry only when the object
    /// has no `api` / `baseUrl`), as pi hands it to the provider's
    /// implementation (codemode's `models.*` resolve it in the catalog, and
    /// refuse a model it does not list).
    pub fn registry_step(&self, op: &str, args: &[Value], cancel: &CancellationToken) -> ModelStep {
        let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
        match op {
            "classify" => self.prepare("models.classify", ModelType::Classifier, arg(0), arg(1), cancel, true),
            "generateImages" => self.prepare("models.generateImages", ModelType::Image, arg(0), arg(1), cancel, true),
            _ => self.step(op, args, cancel),
        }
    }

    /// Resolve the model (`as_given`: the object given is called as it
    /// is), check the context, and build the call.
    fn prepare(
        &self,
        name: &'static str,
        kind: ModelType,
        model: &Value,
        context: &Value,
        cancel: &CancellationToken,
        as_given: bool,
    ) -> ModelStep {
        let type_name = kind.name();
        let hint = format!("List the {type_name} models you can use with models.getAvailableOfType(\"{type_name}\").");
        let (Some(provider), Some(id)) = (model["provider"].as_str(), model["id"].as_str()) else {
            let undefined = if model.is_null() {
                " models.getModelOfType() returns undefined for an unknown provider or id."
            } else {
                ""
            };
            return ModelStep::Done(Err(format!(
                "{name}() expects {} model as its first argument, got {}.{undefined} {hint}",
                with_article(type_name),
                describe(model)
            )));
        };
        let given = (as_given && model["api"].is_string() && model["baseUrl"].is_string()).then(|| model.clone());
        // pi hands the provider the object it was given (its baseUrl, api, headers), listed or not.
        let resolved = if given.is_some() { given } else { self.model_of_type(kind, provider, id) };
        let Some(resolved) = resolved else {
            let other = [ModelType::Chat, ModelType::Image, ModelType::Classifier]
                .into_iter()
                .find(|t| *t != kind && self.model_of_type(*t, provider, id).is_some());
            return ModelStep::Done(Err(match other {
                Some(t) => format!(
                    "\"{provider}/{id}\" is {} model, not {} model. {hint}",
                    with_article(t.name()),
                    with_article(type_name)
                ),
                None => format!("Unknown {type_name} model \"{provider}/{id}\". {hint}"),
            }));
        };
        let checked = if kind == ModelType::Classifier {
            check_classifier_context(context, as_given)
        } else {
            check_images_context(context)
        };
        if let Err(e) = checked {
            return ModelStep::Done(Err(e));
        }
        let (call, refusal) = match self.typed_call(&resolved, cancel) {
            Ok(made) => made,
            Err(e) => return ModelStep::Done(Err(e)),
        };
        let login = self.registry().and_then(|registry| crate::auth::login_of(&registry, provider));
        let op = if kind == ModelType::Classifier { "classify" } else { "generateImages" };
        let api = resolved["api"].as_str().unwrap_or_default();
        let delegate = self.delegate.clone().filter(|d| d.serves(provider, api, op));
        let label = format!("{provider}/{id}");
        let model_call = ModelCall { name, label, call, context: context.clone(), login, delegate };
        let early = refusal.map(|message| model_call.failed(message)).or_else(|| {
            let images = context["images"].as_array().is_some_and(|i| !i.is_empty());
            (kind == ModelType::Classifier && images && !model_call.call.accepts("image"))
                .then(|| model_call.failed(format!("Model {provider}/{id} does not accept image input")))
        });
        ModelStep::Call(Box::new(model_call), early)
    }

    /// The request of a resolved model: key, headers, base URL with
    /// Cloudflare's account id; and pi's refusal when the provider has no credentials.
    fn typed_call(&self, model: &Value, cancel: &CancellationToken) -> Result<(TypedCall, Option<String>), String> {
        let provider = model["provider"].as_str().unwrap_or_default().to_string();
        let Some(registry) = self.registry() else {
            // Another session's registry applies its own credentials when its delegate calls.
            let http = self.http.clone()?;
            let call =
                TypedCall { model: model.clone(), api_key: None, headers: Vec::new(), cancel: cancel.clone(), http };
            return Ok((call, None));
        };
        let api_key = registry.api_key(&provider);
        let as_chat = crate::model::Model {
            id: model["id"].as_str().unwrap_or_default().to_string(),
            name: String::new(),
            api: model["api"].as_str().unwrap_or_default().to_string(),
            provider: provider.clone(),
            base_url: model["baseUrl"].as_str().unwrap_or_default().to_string(),
            reasoning: false,
            input: Vec::new(),
            context_window: 0,
            max_tokens: 0,
            cost: Default::default(),
            headers: model.get("headers").and_then(Value::as_object).cloned(),
            thinking_level_map: None,
            sampling_params: None,
            sampling_params_by_thinking_level: None,
            compat: None,
            extra: Default::default(),
        };
        let mut headers: Vec<(String, String)> = registry.headers(&as_chat).into_iter().collect();
        headers.sort();
        let refusal = (!registry.provider_usable(&provider)).then(|| format!("Provider is not configured: {provider}"));
        let env = registry.provider_env(&provider);
        drop(registry);
        let http = self.http.clone()?;
        let mut model = model.clone();
        let base = crate::provider::cloudflare::fill_placeholders(&as_chat.base_url, &env);
        model["baseUrl"] = json!(base);
        let call = TypedCall { model, api_key, headers, cancel: cancel.clone(), http };
        Ok((call, refusal))
    }
}
