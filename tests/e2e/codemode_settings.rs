//! codemode's `codemode.mode` and `codemode.inlineBudget` settings (and the
//! factory's options over them), run by pi-rpc and by pi 1.6.0 side by side
//! with `--tools +codemode`, the same settings and the same fake model
//! server: the tools each program declares and their descriptions (the
//! `Codemode: tools.<name>(args) resolves to …` note of `mode: "on"`, the
//! `Nested tools:` listing of `mode: "only"` within the budget), the system
//! prompt's `<tools>`, the `hiddenTools` of `before_agent_start`'s
//! `systemPromptOptions`, and what the session file's system messages record.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_builtin_factories::prompt_tools;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::harness::{Pi, Sandbox};
use crate::mcp::{Servers, tool_names, write_mcp};

/// Records the `hiddenTools` each run starts with, and changes the prompt
/// options (a section), so that the prompt is rebuilt from them.
const HIDDEN_WATCHER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  const seen: unknown[] = [];
  pi.on("before_agent_start", (event) => {
    seen.push(event.systemPromptOptions.hiddenTools);
    event.systemPromptOptions.sections.watched = "Rebuilt from the options.";
  });
  pi.registerCommand("hidden", { handler: async (_args, ctx) => ctx.ui.notify(JSON.stringify(seen), "info") });
}
"#;

/// pi's codemode from the factory, with options over the settings.
const FACTORY_BUDGET: &str = r#"import { createCodemodeExtension } from "@earendil-works/pi-coding-agent";
export default createCodemodeExtension({ mode: "only", inlineBudget: 0 });
"#;

/// What one program did with one prompt.
struct Observed {
    /// The first request's tools: (name, description).
    tools: Vec<(String, String)>,
    /// The first request's body.
    request: Value,
    /// The tools the session file's system messages added, in order.
    recorded: Vec<String>,
    /// The `/hidden` note, when the extension is [`HIDDEN_WATCHER`].
    note: Option<Value>,
}

/// Run one prompt with `settings` (merged into the user settings), the
/// `--tools` value `tools` and extension `module` (file name, source).
async fn observe(reference: bool, settings: Value, tools: &str, module: Option<(&str, &str)>) -> Option<Observed> {
    observe_with(reference, settings, tools, module, None).await
}

/// [`observe`] with MCP servers (`mcp.json`'s `mcpServers`).
async fn observe_with(
    reference: bool,
    settings: Value,
    tools: &str,
    module: Option<(&str, &str)>,
    servers: Option<&Value>,
) -> Option<Observed> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, settings);
    if let Some(servers) = servers {
        write_mcp(&sb, servers.clone());
    }
    if let Some((name, source)) = module {
        write_module(&sb, name, source);
    }
    sb.server().set_fallback(Reply::text("done"));
    let mut pi = if reference {
        let mut cmd = reference_command(&sb, &node, &cli);
        cmd.args(["--offline", "--tools", tools]).env("PI_OFFLINE", "1");
        Pi::start_unchecked(cmd)
    } else {
        sb.spawn(&["--tools", tools])
    };
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "reference {reference}: {lines:?}");
    let note = if module.is_some_and(|(_, source)| source == HIDDEN_WATCHER) {
        pi.send(json!({"id": "h", "type": "prompt", "message": "/hidden"})).await;
        let lines = pi.until(|v| v["method"] == "notify").await;
        let text = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default();
        Some(serde_json::from_str(text).expect("the note is JSON"))
    } else {
        None
    };
    let request = sb.server().requests().first().expect("a model request").body.clone();
    let tools = request["tools"]
        .as_array()
        .map(|tools| {
            let pair = |t: &Value| {
                let f = &t["function"];
                (
                    f["name"].as_str().unwrap_or_default().to_string(),
                    f["description"].as_str().unwrap_or_default().to_string(),
                )
            };
            tools.iter().map(pair).collect()
        })
        .unwrap_or_default();
    pi.close_stdin();
    pi.wait().await;
    Some(Observed { tools, request, recorded: recorded_tools(&sb), note })
}

/// The tools the session file's system messages declare, in order.
fn recorded_tools(sb: &Sandbox) -> Vec<String> {
    let files = sb.session_files();
    let file = files.first().expect("a session file");
    std::fs::read_to_string(file)
        .expect("the session file")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "message" && entry["message"]["role"] == "system")
        .flat_map(|entry| entry["message"]["toolsAdded"].as_array().cloned().unwrap_or_default())
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect()
}

impl Observed {
    fn names(&self) -> Vec<String> {
        tool_names(&self.request)
    }

    fn description(&self, name: &str) -> &str {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, d)| d.as_str()).unwrap_or_default()
    }

    /// codemode's `Nested tools:` listing ("" without one).
    fn listing(&self) -> &str {
        let description = self.description("codemode");
        description.find("\n\nNested tools:").map_or("", |at| &description[at..])
    }

    /// The tools the listing shows, by their `### ` headings.
    fn listed(&self) -> Vec<String> {
        self.listing()
            .lines()
            .filter_map(|line| line.strip_prefix("### `")?.split('`').next().map(str::to_string))
            .collect()
    }

    /// The listing without the tools' prompt guidelines (each program words its own).
    fn listing_without_guidelines(&self) -> String {
        let mut out = Vec::new();
        let mut in_code = false;
        for line in self.listing().lines() {
            in_code ^= line.starts_with("```");
            if !in_code && line.starts_with("- ") {
                continue;
            }
            out.push(line);
        }
        out.join("\n").replace("\n\n\n", "\n\n")
    }
}

#[tokio::test]
async fn codemode_on_notes_how_scripts_call_the_declared_tools_as_in_pi() {
    let Some(ours) = observe(false, json!({}), "+codemode", None).await else { return };
    let Some(theirs) = observe(true, json!({}), "+codemode", None).await else { return };
    assert_eq!(ours.names(), ["read", "bash", "edit", "write", "codemode"]);
    assert_eq!(ours.names(), theirs.names(), "pi 1.6.0 declares the same tools");
    for name in ["read", "bash", "edit", "write"] {
        assert!(ours.description(name).contains(&format!("\n\nCodemode: `tools.{name}(args)` resolves to ")));
        assert_eq!(ours.description(name), theirs.description(name), "{name}'s description is pi 1.6.0's");
    }
    assert!(
        ours.description("bash")
            .ends_with("resolves to `{ output, truncated, full_output_path?, exit_code, wall_time_seconds }`.")
    );
    assert_eq!(ours.listing(), "", "the declared tools are not listed again");
    assert_eq!(ours.listing(), theirs.listing());
}

#[tokio::test]
async fn codemode_only_setting_lists_and_hides_the_tools_as_in_pi() {
    let settings = json!({"codemode": {"mode": "only"}});
    let module = Some(("watcher.ts", HIDDEN_WATCHER));
    let Some(ours) = observe(false, settings.clone(), "+codemode", module).await else { return };
    let Some(theirs) = observe(true, settings, "+codemode", module).await else { return };
    assert_eq!(ours.names(), ["codemode"], "the setting hides the tools scripts call");
    assert_eq!(ours.names(), theirs.names());
    assert_eq!(ours.listed(), ["read", "bash", "edit", "write"], "{}", ours.listing());
    assert_eq!(ours.listed(), theirs.listed(), "pi 1.6.0 lists the same tools");
    assert_eq!(ours.listing_without_guidelines(), theirs.listing_without_guidelines(), "the same declarations");
    assert!(!ours.description("codemode").contains("Codemode: `tools."), "no note with mode \"only\"");
    assert_eq!(ours.note, Some(json!([["read", "bash", "edit", "write"]])), "hiddenTools of the options");
    assert_eq!(ours.note, theirs.note);
    assert_eq!(prompt_tools(&ours.request), ["codemode"], "the prompt rebuilt from the options hides them too");
    assert_eq!(prompt_tools(&ours.request), prompt_tools(&theirs.request));
    assert_eq!(ours.recorded, ["read", "bash", "edit", "write", "codemode"], "the session records every tool");
    assert_eq!(ours.recorded, theirs.recorded, "as pi 1.6.0's session file does");
}

#[tokio::test]
async fn codemode_inline_budget_limits_the_listing_as_in_pi() {
    let tools = "+codemode,+tool_search,+grep";
    let mut listed = Vec::new();
    for budget in [300, 0] {
        let settings = json!({"codemode": {"mode": "only", "inlineBudget": budget}});
        let Some(ours) = observe(false, settings.clone(), tools, None).await else { return };
        let Some(theirs) = observe(true, settings, tools, None).await else { return };
        assert_eq!(ours.names(), ["codemode", "tool_search"], "tool_search is not for scripts: it stays declared");
        assert_eq!(ours.names(), theirs.names());
        assert_eq!(ours.listed(), theirs.listed(), "budget {budget}: pi 1.6.0 lists the same tools");
        listed.push(ours.listed());
    }
    assert_eq!(listed, [vec!["read", "write"], vec![]], "the cheapest tools first, none with 0");
    // The factory's option goes over the setting.
    let settings = json!({"codemode": {"mode": "on", "inlineBudget": 3000}});
    let module = Some(("budget.ts", FACTORY_BUDGET));
    let Some(ours) = observe(false, settings.clone(), "+codemode", module).await else { return };
    let Some(theirs) = observe(true, settings, "+codemode", module).await else { return };
    assert_eq!(ours.names(), ["codemode"]);
    assert_eq!(ours.names(), theirs.names());
    assert_eq!(ours.listing(), "\n\nNested tools:", "inlineBudget 0 lists no tool");
    assert_eq!(ours.listing(), theirs.listing());
}

#[tokio::test]
async fn codemode_notes_and_lists_mcp_tools_as_in_pi() {
    let Some(servers) = Servers::find() else { return };
    let script = servers.modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let mcp = json!({"everything": {"command": servers.node, "args": [script, "stdio"], "exposure": "direct",
                                    "description": "The reference test server."}});
    let Some(ours) = observe_with(false, json!({}), "+codemode", None, Some(&mcp)).await else { return };
    let Some(theirs) = observe_with(true, json!({}), "+codemode", None, Some(&mcp)).await else { return };
    assert_eq!(ours.names(), theirs.names(), "the same tools declared");
    let mcp_tools: Vec<String> = ours.names().into_iter().filter(|n| n.starts_with("mcp__")).collect();
    assert!(!mcp_tools.is_empty(), "{:?}", ours.names());
    for name in &mcp_tools {
        assert!(ours.description(name).contains("\n\nCodemode: `tools.mcp__everything__"), "{name}");
        assert_eq!(ours.description(name), theirs.description(name), "{name}'s description is pi 1.6.0's");
    }
    let settings = json!({"codemode": {"mode": "only", "inlineBudget": 1500}});
    let Some(ours) = observe_with(false, settings.clone(), "+codemode", None, Some(&mcp)).await else { return };
    let Some(theirs) = observe_with(true, settings, "+codemode", None, Some(&mcp)).await else { return };
    assert_eq!(ours.names(), ["codemode"], "direct MCP tools are hidden too");
    assert_eq!(ours.names(), theirs.names());
    let heading = |o: &Observed| o.listing().lines().find(|l| l.starts_with("## ")).map(str::to_string);
    assert_eq!(heading(&ours).as_deref(), Some("## mcp__everything (some tools not listed)"), "{}", ours.listing());
    assert_eq!(heading(&ours), heading(&theirs));
    assert!(ours.listing().contains("## mcp__everything (some tools not listed)\nThe reference test server.\n"));
    assert_eq!(ours.listed(), theirs.listed(), "pi 1.6.0 lists the same tools within the budget");
}
