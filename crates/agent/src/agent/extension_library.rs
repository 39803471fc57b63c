//! pi's helper functions that the extension host's stand-ins for pi's
//! packages compute with pi-rpc's own code (the `lib` request, served by the
//! agent, which owns every layer they need), so that an extension gets what
//! pi-rpc's core computes and each rule lives in one place: `convertToLlm`, `serializeConversation`, `estimateTokens`,
//! `calculateContextTokens`, `shouldCompact`, `retryDecision`, `currentSystemMessage`, `calculateCost`,
//! `generateDiffString`, `generateUnifiedPatch`, `formatSkillsForPrompt`, `buildSystemPrompt`,
//! `buildSystemPromptSections`, `discoverResources` (extension_resources.rs), `expandInput` (extension_expand.rs), `resolveCliModel` and
//! `resolveModelScope` (extension_model_resolver.rs), `packages` (extension_packages.rs),
//! `convertToPng` and `resizeImage` (extension_images.rs), `cleanShellOutput` (bash output as pi keeps it), `exportSessionHtml`, `parseArgs` (pi-config's
//! cli_args_pi.rs), and the compaction functions of extension_compaction.rs; `modelStore`
//! (extension_model_store.rs) is awaited by the actor; `cacheWarmer` (extension_cache_warming.rs); `toolSearch`;
//! `apiKeyLoginPrompt` (pi-config's auth.rs).
//!
//! `{"fn": name, "args": [...]}` answers the function's result as pi's JSON.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::message::{AgentMessage, Usage, UserMessage};
use crate::model::Model;
use crate::provider::convert::{LlmMessage, to_llm};
use crate::resources::{Scope, Skill, SkillReader, SourceInfo, SourceKind, skills_prompt_section_with};
use crate::tools::edit_diff::{Replacement, generate_edit_diff};

fn arg<T: DeserializeOwned>(args: &[Value], index: usize, what: &str) -> Result<T, String> {
    let value = args.get(index).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| format!("{what}: {e}"))
}

fn messages(args: &[Value]) -> Result<Vec<AgentMessage>, String> {
    arg(args, 0, "messages")
}

/// An LLM message as pi writes it (`role` first).
fn llm_json(message: LlmMessage) -> Value {
    let agent = match message {
        LlmMessage::User { content, timestamp } => {
            AgentMessage::User(UserMessage { content, timestamp, extra: Default::default() })
        }
        LlmMessage::Assistant(a) => AgentMessage::Assistant(a),
        LlmMessage::ToolResult(t) => AgentMessage::ToolResult(t),
    };
    serde_json::to_value(agent).unwrap_or(Value::Null)
}

/// A skill from pi's `Skill` object (`name, description, filePath, baseDir, disableModelInvocation`).
fn skill_of(v: &Value) -> Skill {
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let path = std::path::PathBuf::from(text("filePath"));
    Skill {
        name: text("name"),
        description: text("description"),
        base_dir: std::path::PathBuf::from(text("baseDir")),
        disable_model_invocation: v.get("disableModelInvocation").and_then(Value::as_bool).unwrap_or(false),
        source_info: SourceInfo {
            path: path.clone(),
            source: SourceKind::Local,
            scope: Scope::Temporary,
            base_dir: None,
            extension: None,
        },
        path,
    }
}

/// Streamed command output as pi's bash execution keeps it: an unfinished
/// escape sequence at the end held back (`pending`, unless this is the
/// `last` text), the rest with ANSI sequences, control characters and
/// carriage returns removed (`text`). pi-rpc's own `bash` command does the same.
fn clean_shell_output(text: &str, last: bool) -> Value {
    use crate::tools::shell::{sanitize_binary_output, split_incomplete_ansi_suffix, strip_ansi};
    let (complete, pending) = if last { (text.to_string(), String::new()) } else { split_incomplete_ansi_suffix(text) };
    let clean = sanitize_binary_output(&strip_ansi(&complete)).replace('\r', "");
    json!({"text": clean, "pending": pending})
}

/// pi's `exportSessionToHtml` of an SDK session (`AgentSession.exportToHtml`):
/// `{header, entries, leafId, sessionFile, systemPrompt, tools, outputPath, cwd}`
/// rendered and written by pi-rpc's own HTML export (the RPC `export_html`
/// command's); answers the path as pi reports it.
fn export_session_html(input: &Value) -> Result<Value, String> {
    use crate::export_html::{ExportOptions, ExportTool, export_session_html};
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    let cwd = text("cwd").unwrap_or_default();
    let entries = input.get("entries").and_then(Value::as_array).cloned().unwrap_or_default();
    let session = crate::session::Session::of_header_and_entries(
        input.get("header").cloned().unwrap_or(Value::Null),
        entries,
        text("sessionFile").map(std::path::PathBuf::from),
        text("leafId"),
        cwd,
    );
    let tools = input.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let tools = tools
        .iter()
        .map(|t| ExportTool {
            name: t.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
            description: t.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
        })
        .collect();
    let options = ExportOptions { system_prompt: text("systemPrompt").map(str::to_string), tools };
    let path = export_session_html(&session, text("outputPath"), std::path::Path::new(cwd), &options)
        .map_err(|e| e.to_string())?;
    Ok(Value::String(path.display().to_string()))
}

/// Answer a `lib` request (`{fn, args}`): `modelStore` awaited (it reads
/// and writes files under pi's lock), the others computed at once.
pub(crate) async fn request(params: &Value) -> Result<Value, String> {
    let name = params.get("fn").and_then(Value::as_str).unwrap_or_default();
    let args = params.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
    match name {
        "modelStore" => crate::agent::extension_model_store::call(&args).await,
        _ => call(name, &args),
    }
}

/// What answers the requests of extensions started before a session (to
/// answer `project_trust`) that need none: pi's library functions, which
/// pi answers while its extensions load.
pub fn sessionless_requests() -> crate::extensions::SessionlessRequests {
    std::sync::Arc::new(|request| match request {
        crate::extensions::ExtRequest::Library(params) => Some(Box::pin(async move { self::request(&params).await })),
        _ => None,
    })
}

/// Compute `name(args…)`.
pub(crate) fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    if let Some(result) = crate::agent::extension_compaction::call(name, args) {
        return result;
    }
    if name == "cacheWarmer" {
        return crate::agent::extension_cache_warming::call(args.first().unwrap_or(&Value::Null));
    }
    match name {
        "convertToLlm" => Ok(Value::Array(to_llm(&messages(args)?).into_iter().map(llm_json).collect())),
        // The system message a compaction keeps: the prompt and tools declared so far.
        "currentSystemMessage" => {
            let declared = pi_types::system_message::replay(&messages(args)?);
            let current = declared.checkpoint(crate::message::now_ms()).map(AgentMessage::System);
            Ok(current.and_then(|m| serde_json::to_value(m).ok()).unwrap_or(Value::Null))
        }
        "serializeConversation" => {
            Ok(Value::String(crate::compaction::prompt::serialize_conversation(&messages(args)?)))
        }
        "estimateTokens" => {
            let message: AgentMessage = arg(args, 0, "message")?;
            Ok(json!(crate::compaction::estimate::estimate_tokens(&message)))
        }
        "calculateContextTokens" => {
            let usage: Usage = arg(args, 0, "usage")?;
            Ok(json!(crate::compaction::estimate::context_tokens(&usage)))
        }
        "shouldCompact" => {
            let tokens: u64 = arg(args, 0, "contextTokens")?;
            let window: u64 = arg(args, 1, "contextWindow")?;
            let settings = args.get(2).cloned().unwrap_or(Value::Null);
            if settings.get("enabled").and_then(Value::as_bool) == Some(false) {
                return Ok(json!(false));
            }
            let reserve = settings.get("reserveTokens").and_then(Value::as_u64).unwrap_or(16384);
            Ok(json!(crate::compaction::estimate::should_compact(tokens, window, reserve)))
        }
        // pi's auto-retry decision for a run's failed answer (`message`, the
        // retry settings, retry `attempt` from 1): `{retryable, delayMs}` by
        // pi-rpc's own error classification and backoff (an overflow is left
        // to compaction).
        "retryDecision" => {
            let message = args.first().cloned().unwrap_or(Value::Null);
            let settings = args.get(1).cloned().unwrap_or(Value::Null);
            let attempt: u32 = arg(args, 2, "attempt")?;
            let text = message.get("errorMessage").and_then(Value::as_str).unwrap_or_default();
            let failed = message.get("stopReason").and_then(Value::as_str) == Some("error") && !text.is_empty();
            use crate::provider::classify::{is_context_overflow, is_retryable_message};
            let retryable = failed && !is_context_overflow(text) && is_retryable_message(text);
            let defaults = crate::config::settings::RetrySettings::default();
            let number = |key: &str| settings.get(key).and_then(Value::as_u64);
            let policy = crate::config::settings::RetrySettings {
                base_delay_ms: number("baseDelayMs").unwrap_or(defaults.base_delay_ms),
                max_delay_ms: number("maxAgentDelayMs").unwrap_or(defaults.max_delay_ms),
                ..defaults
            };
            Ok(json!({ "retryable": retryable, "delayMs": policy.delay(attempt, None).as_millis() as u64 }))
        }
        "calculateCost" => {
            let model: Model = arg(args, 0, "model")?;
            let usage: Usage = arg(args, 1, "usage")?;
            Ok(serde_json::to_value(model.cost_of(&usage)).unwrap_or(Value::Null))
        }
        "generateDiffString" | "generateUnifiedPatch" => {
            let (path, old, new) = if name == "generateUnifiedPatch" {
                (
                    arg::<String>(args, 0, "path")?,
                    arg::<String>(args, 1, "oldContent")?,
                    arg::<String>(args, 2, "newContent")?,
                )
            } else {
                (String::new(), arg::<String>(args, 0, "oldContent")?, arg::<String>(args, 1, "newContent")?)
            };
            let whole = Replacement { match_index: 0, match_len: old.len(), new_text: new.clone() };
            let diff = generate_edit_diff(&path, &old, &new, &[whole]);
            Ok(if name == "generateUnifiedPatch" {
                Value::String(diff.patch)
            } else {
                json!({"diff": diff.diff, "firstChangedLine": diff.first_changed_line})
            })
        }
        "formatSkillsForPrompt" => {
            let skills: Vec<Value> = arg(args, 0, "skills")?;
            let reader = match args.get(1).and_then(Value::as_str).unwrap_or("read") {
                "read" => SkillReader::Read,
                "bash" => SkillReader::Bash,
                _ => SkillReader::Indirect,
            };
            let skills: Vec<Skill> = skills.iter().map(skill_of).collect();
            Ok(Value::String(
                skills_prompt_section_with(&skills, reader).map(|s| format!("\n\n{s}")).unwrap_or_default(),
            ))
        }
        // The prompt of pi's `BuildSystemPromptOptions` (`before_agent_start`'s
        // `event.systemPrompt` and `ctx.getSystemPrompt()`), in pi-rpc's words.
        "buildSystemPrompt" => {
            let options = args.first().cloned().unwrap_or(Value::Null);
            if let Some(forced) = options.get("forceSystemPrompt").and_then(Value::as_str) {
                return Ok(Value::String(forced.to_string()));
            }
            let sections = crate::system_prompt::options::sections(&options, crate::system_prompt::docs_root())?;
            Ok(Value::String(crate::system_prompt::render(&sections)))
        }
        // The same options as named sections (pi's `buildSystemPromptSections`),
        // in the prompt's order: an SDK session's leading system message.
        "buildSystemPromptSections" => {
            let options = args.first().cloned().unwrap_or(Value::Null);
            let sections = crate::system_prompt::options::sections(&options, crate::system_prompt::docs_root())?;
            Ok(Value::Object(sections.into_iter().map(|(name, text)| (name, Value::String(text))).collect()))
        }
        "validateToolArguments" | "validateToolCall" => {
            let call = args.get(1).cloned().unwrap_or(Value::Null);
            let tool_name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let tool = if name == "validateToolCall" {
                let tools = args.first().and_then(Value::as_array);
                tools.and_then(|tools| tools.iter().find(|t| t["name"] == tool_name)).cloned()
            } else {
                args.first().cloned()
            };
            let Some(tool) = tool else { return Err(format!("Tool \"{tool_name}\" not found")) };
            let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
            let schema = tool.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}));
            crate::tools::validate::coerce_and_validate(tool_name, &schema, &arguments)
        }
        // pi's `DefaultResourceLoader` discovery for a cwd and agent dir.
        "discoverResources" => crate::agent::extension_resources::discover(args.first().unwrap_or(&Value::Null)),
        // pi's settings-array patterns over files the SDK loader found (extension_resources.rs).
        "settingsEnabled" => crate::agent::extension_resources::settings_enabled(args.first().unwrap_or(&Value::Null)),
        "resourceDir" => crate::agent::extension_resources::resource_dir(args.first().unwrap_or(&Value::Null)),
        "expandInput" => crate::agent::extension_expand::expand(args.first().unwrap_or(&Value::Null)),
        "resolveCliModel" => crate::agent::extension_model_resolver::resolve_cli_model(args),
        "resolveModelScope" => crate::agent::extension_model_resolver::resolve_model_scope(args),
        "packages" => crate::agent::extension_packages::call(args),
        "convertToPng" => crate::agent::extension_images::convert(args),
        "resizeImage" => crate::agent::extension_images::resize_image(args),
        "prepareUserImages" => crate::agent::extension_images::prepare(args, false),
        "prepareToolResultImages" => crate::agent::extension_images::prepare(args, true),
        "exportSessionHtml" => export_session_html(args.first().unwrap_or(&Value::Null)),
        // pi's `parseArgs(args)`, from pi-rpc's own command-line table.
        "parseArgs" => Ok(pi_config::cli_args_pi::pi_args(&arg::<Vec<String>>(args, 0, "args")?)),
        // pi's config value (`$VAR` / `${VAR}` templates, `!command`), as models.json's are resolved; null when unset.
        "resolveConfigValue" => Ok(json!(crate::config::auth::resolve_config_value(&arg::<String>(args, 0, "value")?))),
        // The question of a provider's API-key login ("Enter Groq API key"; "Enter API key" for a provider of its own).
        "apiKeyLoginPrompt" => {
            Ok(json!(crate::config::auth::api_key_login_prompt(&arg::<String>(args, 0, "provider")?)))
        }
        // The definition of a built-in factory's tool (`codemode`, `tool_search`) as `getAllTools()` lists it.
        "builtinToolDefinition" => builtin_tool_definition(&arg::<String>(args, 0, "name")?),
        // The running session's `/mcp` description, which an SDK session's `/mcp` shows too.
        "mcpCommandDescription" => Ok(json!(crate::mcp::command::DESCRIPTION)),
        "checkMcpRegistration" => {
            Ok(crate::mcp::registration::check_registration_request(args.first().unwrap_or(&Value::Null)))
        }
        // An SDK session's `codemode` `prepareLoadout`: its description's listing, the declared tools' notes.
        "codemodeLoadout" => crate::agent::extension_codemode_loadout::loadout(args.first().unwrap_or(&Value::Null)),
        // pi-rpc's `tool_search` over an SDK session's searchable tools
        // (`[{name, description}]`, not active): `{text, loaded}`, or
        // `{error}` for a call pi's tool throws on (a blank query).
        "toolSearch" => {
            let docs: Vec<crate::mcp::search::SearchDoc> = arg::<Vec<Value>>(args, 0, "tools")?
                .iter()
                .map(|t| crate::mcp::search::SearchDoc {
                    name: t.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                    description: t.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
                    extra: String::new(),
                    namespace: None,
                })
                .collect();
            let output = crate::mcp::search::search_output(&docs, args.get(1).unwrap_or(&Value::Null));
            let text: String = output
                .content
                .iter()
                .filter_map(|b| match b {
                    crate::message::ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            if output.is_error {
                return Ok(json!({ "error": text }));
            }
            Ok(json!({ "text": text, "loaded": output.details.as_ref().and_then(|d| d.get("loaded")).cloned() }))
        }
        "cleanShellOutput" => {
            let text: String = arg(args, 0, "text")?;
            let last: bool = arg::<Option<bool>>(args, 1, "last")?.unwrap_or(false);
            Ok(clean_shell_output(&text, last))
        }
        // pi's built-in providers (pi-rpc's catalog is pi 1.6.0's model data), for the catalog refresh.
        "builtinProviders" => Ok(json!(crate::config::catalog::catalog_providers().collect::<Vec<_>>())),
        // The ids of a built-in provider's chat models in pi's model data (builtin-provider.cjs orders a configured one's models by them).
        "builtinModelIds" => {
            let provider: String = arg(args, 0, "provider")?;
            let models = crate::config::catalog::shared_provider_models(&provider);
            Ok(json!(models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>()))
        }
        // The built-in provider table (builtin-provider.cjs makes pi-ai's provider objects of it).
        "builtinProviderTable" => Ok(crate::config::builtin_providers::builtin_provider_table_json()),
        other => Err(format!("pi-rpc has no library function {other}")),
    }
}

/// `{name, description, parameters, promptSnippet, promptGuidelines}` of pi-rpc's
/// `codemode` or `tool_search` tool, for a factory applied inside an SDK session.
fn builtin_tool_definition(name: &str) -> Result<Value, String> {
    let tool: std::sync::Arc<dyn crate::tools::Tool> = match name {
        "codemode" => std::sync::Arc::new(pi_mcp::codemode::CodemodeTool::new(Vec::new(), None)),
        "tool_search" => std::sync::Arc::new(crate::mcp::search::ToolSearch::new(Vec::new(), None)),
        other => return Err(format!("pi-rpc has no built-in tool {other}")),
    };
    // The tool list's line and rules pi-rpc's own session gives the built-in (tool_setup.rs).
    let guidelines: Vec<String> = match tool.prompt_guidelines() {
        [] => crate::system_prompt::builtin_guidelines(name).iter().map(|g| g.to_string()).collect(),
        own => own.to_vec(),
    };
    Ok(json!({
        "name": tool.name(),
        "promptSnippet": tool.prompt_snippet().or(crate::system_prompt::builtin_snippet(name)),
        "description": tool.description(),
        "parameters": tool.parameters(),
        "promptGuidelines": guidelines,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_answer_as_pi() {
        let custom =
            json!([{"role": "custom", "customType": "note", "content": "hi", "display": true, "timestamp": 5}]);
        let llm = call("convertToLlm", &[custom]).unwrap();
        assert_eq!(llm, json!([{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 5}]));
        let text = call("serializeConversation", &[llm]).unwrap();
        assert!(text.as_str().unwrap().contains("hi"), "{text}");
        let usage = json!({"input": 1_000_000, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1_000_000});
        let model = json!({"id": "m", "name": "m", "api": "faux", "provider": "p", "baseUrl": "", "reasoning": false,
            "input": ["text"], "contextWindow": 1000, "maxTokens": 10,
            "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0}});
        assert_eq!(call("calculateCost", &[model, usage]).unwrap()["input"], 3.0);
        assert_eq!(call("shouldCompact", &[json!(990), json!(1000), json!({"reserveTokens": 20})]).unwrap(), true);
        let diff = call("generateDiffString", &[json!("a\nb\n"), json!("a\nc\n")]).unwrap();
        // As pi 1.6.0 computes them.
        assert_eq!(diff["diff"], " 1 a\n-2 b\n+2 c");
        assert_eq!(diff["firstChangedLine"], 2);
        let patch = call("generateUnifiedPatch", &[json!("f.txt"), json!("a\nb\n"), json!("a\nc\n")]).unwrap();
        assert_eq!(patch, "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
        let cleaned = call("cleanShellOutput", &[json!("\u{1b}[31mred\u{1b}[0m\r\nok\u{1b}[3")]).unwrap();
        assert_eq!(cleaned, json!({"text": "red\nok", "pending": "\u{1b}[3"}));
        assert_eq!(call("cleanShellOutput", &[json!("a\u{1}b"), json!(true)]).unwrap()["text"], "ab");
        assert!(call("nope", &[]).is_err());
    }
}
