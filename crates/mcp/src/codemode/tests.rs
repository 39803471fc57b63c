//! Codemode against real built-in tools: scripts, output format, limits.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::message::ContentBlock;

fn tool() -> CodemodeTool {
    let reg = crate::tools::ToolRegistry::builtin();
    let entries = ["read", "bash", "write"].iter().filter_map(|n| reg.get(n)).map(CatalogEntry::builtin).collect();
    let mcp = McpManager::start(crate::mcp::McpOptions::default());
    CodemodeTool::new(entries, Some(mcp))
}

fn texts(out: &ToolOutput) -> Vec<String> {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.to_string()),
            _ => None,
        })
        .collect()
}

async fn run(tool: &CodemodeTool, code: &str) -> ToolOutput {
    run_in(tool, code, None).await
}

async fn run_in(tool: &CodemodeTool, code: &str, session: Option<Arc<Entries>>) -> ToolOutput {
    let dir = std::env::temp_dir();
    let mut ctx = ToolContext::new(dir.clone());
    ctx.tool_call_id = "c1".into();
    ctx.session = session.map(|s| s as Arc<dyn crate::tools::SessionLink>);
    tool.execute(json!({"code": code}), ctx).await
}

/// One branch's custom entries in memory, as the agent's session keeps them.
#[derive(Default)]
struct Entries(std::sync::Mutex<Vec<(String, Value)>>);

impl Entries {
    fn data(&self) -> Vec<Value> {
        self.0.lock().unwrap().iter().map(|(_, d)| d.clone()).collect()
    }
}

#[async_trait]
impl crate::tools::SessionLink for Entries {
    async fn branch_custom_data(&self, custom_type: &str) -> Vec<Value> {
        self.0.lock().unwrap().iter().filter(|(t, _)| t == custom_type).map(|(_, d)| d.clone()).collect()
    }

    async fn append_custom(&self, custom_type: &str, data: Value) -> Result<String, String> {
        let mut entries = self.0.lock().unwrap();
        entries.push((custom_type.to_string(), data));
        Ok(entries.len().to_string())
    }
}

#[tokio::test]
async fn return_text_console_and_numbered_items() {
    let t = tool();
    let out = run(&t, "return 42").await;
    assert!(!out.is_error);
    let ts = texts(&out);
    assert!(ts[0].starts_with("Script completed\nWall time "), "{ts:?}");
    assert!(ts[0].ends_with(" seconds\nOutput:\n"));
    assert_eq!(ts[1], "42");
    let out = run(&t, "text('a'); console.log('x', {y: 1}); return [1, {a: 'b'}, undefined]").await;
    assert_eq!(
        texts(&out)[1],
        "==> text 1/2 <==\na\n==> text 2/2 <==\n[1,{\"a\":\"b\"},null]\n<console_output>\nx {\"y\":1}\n</console_output>"
    );
}

#[tokio::test]
async fn tools_are_called_concurrently_and_errors_reject() {
    let t = tool();
    let code = "const [a, b] = await Promise.all([tools.bash({command: 'echo one'}), tools.bash({command: 'echo two'})]);\n\
                try { await tools.read({path: 'no-such-file.txt'}); } catch (e) { text('caught ' + (e instanceof Error)); }\n\
                return a.output + b.output";
    let out = run(&t, code).await;
    assert!(!out.is_error, "{:?}", texts(&out));
    assert_eq!(texts(&out)[1], "==> text 1/2 <==\ncaught true\n==> text 2/2 <==\none\ntwo\n");
    let calls = out.details.unwrap()["calls"].as_array().unwrap().clone();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["id"], "c1/1");
    assert_eq!(calls[2]["status"], "error");
}

#[tokio::test]
async fn failures_keep_partial_output_and_name_the_calls() {
    let t = tool();
    let out = run(&t, "text('before');\nthrow new Error('boom')").await;
    assert!(out.is_error);
    let ts = texts(&out);
    assert!(ts[0].starts_with("Script failed\n"));
    assert!(ts[1].starts_with("before\nScript error:\nError: boom\n"), "{}", ts[1]);
    assert!(ts[1].ends_with("No tool calls were made."));
    let out = run(&t, "return await tools.nosuch({})").await;
    assert!(
        texts(&out)[1].contains(
            "TypeError: tools.nosuch does not exist. Available: read, bash, write. ALL_TOOLS lists every tool; \
             searchTools(query) finds tools by topic. Check for a member with \"nosuch\" in tools."
        ),
        "{:?}",
        texts(&out)
    );
    // As pi: close names are offered instead, the miss throws on reading, `then` stays undefined.
    let out = run(&t, "const f = tools.READ_; text('not reached')").await;
    assert!(
        texts(&out)[1].contains("TypeError: tools.READ_ does not exist. Did you mean tools.read?"),
        "{:?}",
        texts(&out)
    );
    let out = run(&t, "text(typeof tools.then); text(typeof models.then)").await;
    assert_eq!(texts(&out)[1], "==> text 1/2 <==\nundefined\n==> text 2/2 <==\nundefined", "{:?}", texts(&out));
    let out = run(&t, "return models.list()").await;
    assert!(
        texts(&out)[1].contains(
            "TypeError: models.list does not exist. Available: getModelsOfType, getAvailableOfType, getModelOfType, \
             classify, generateImages. Check for a member with \"list\" in models."
        ),
        "{:?}",
        texts(&out)
    );
    let out = run(&t, "await new Promise(() => {});").await;
    assert!(texts(&out)[1].contains("can never settle"));
    let out = run(&t, "x = ;").await;
    assert!(texts(&out)[1].starts_with("Script error:\nSyntaxError"), "{:?}", texts(&out));
    let out = run(&t, "text('one'); exit(); text('two')").await;
    assert!(!out.is_error);
    assert_eq!(texts(&out)[1], "one");
    let out = run(&t, "").await;
    assert!(out.is_error && texts(&out)[0].starts_with("Expected JavaScript source text"));
}

#[tokio::test]
async fn limits_timeout_and_options_line() {
    let t = tool();
    let out = run(&t, "// @options: {\"timeout_ms\": 200}\nwhile (true) {}").await;
    assert!(out.is_error);
    assert!(texts(&out)[1].contains("Script timed out"), "{:?}", texts(&out));
    let out = run(&t, "return 1\n// @options: {}").await;
    assert!(out.is_error && texts(&out)[1].contains("first line"), "{:?}", texts(&out));
    let out = run(&t, "// @options: {\"max_output_tokens\": 10}\nreturn 'x'.repeat(1000)").await;
    let ts = texts(&out);
    assert!(ts[1].contains("chars truncated") && ts[1].contains("full output: "), "{ts:?}");
    let out = run(&t, "for (let i = 0; i < 100001; i++) console.log(i)").await;
    assert!(out.is_error && texts(&out).iter().any(|s| s.contains("Output limit reached")));
}

#[tokio::test]
async fn store_survives_successful_scripts_only_and_images_are_kept() {
    let t = tool();
    let session = Arc::new(Entries::default());
    let out = run_in(
        &t,
        "store('k', {a: 1}); store('gone', 1); store('gone', undefined); return load('k')",
        Some(session.clone()),
    )
    .await;
    assert!(!out.is_error, "{:?}", texts(&out));
    assert_eq!(session.data(), [json!({"set": {"k": {"a": 1}}, "delete": ["gone"]})]);
    run_in(&t, "store('k', 2); throw new Error('no')", Some(session.clone())).await;
    let out = run_in(&t, "return load('k')", Some(session.clone())).await;
    assert_eq!(texts(&out)[1], "{\"a\":1}");
    assert_eq!(session.data().len(), 1, "a failed script and one that only loads append nothing");
    let out = run_in(&t, "store('big', 'x'.repeat(262144))", Some(session.clone())).await;
    assert!(
        texts(&out)[1].contains("RangeError: store(\"big\") value has 262146 characters of JSON"),
        "{:?}",
        texts(&out)
    );
    let fill = "for (let i = 0; i < 5; i++) store('v' + i, 'x'.repeat(250000))";
    let out = run_in(&t, fill, Some(session.clone())).await;
    assert!(
        texts(&out)[1].contains("RangeError: store is full: stored values would exceed 1048576"),
        "{:?}",
        texts(&out)
    );
    assert_eq!(session.data().len(), 1);
    // Without a session the store starts empty and writes are dropped.
    run(&t, "store('k', 3)").await;
    assert_eq!(texts(&run(&t, "return String(load('k'))").await)[1], "undefined");
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let out =
        run(&t, &format!("text('pic'); image({{type: 'image', data: '{png}', mimeType: 'image/png'}}); text('after')"))
            .await;
    assert!(matches!(out.content[2], ContentBlock::Image(_)), "{:?}", texts(&out));
    let ts = texts(&out);
    assert!(ts[1].starts_with("==> text 1/2 <==\npic\n[Image saved to "), "{ts:?}");
    assert!(ts[1].ends_with("(image/png, 70B)]"), "{ts:?}");
    assert_eq!(ts[2], "==> text 2/2 <==\nafter");
    let _ = Arc::new(());
}

/// A tool returning `structured_content`, with or without an output schema (an extension's tool).
struct Structured {
    name: &'static str,
    schema: Option<Value>,
    is_error: bool,
}

#[async_trait::async_trait]
impl Tool for Structured {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "structured"
    }
    fn parameters(&self) -> &Value {
        static EMPTY: OnceLock<Value> = OnceLock::new();
        EMPTY.get_or_init(|| json!({"type": "object", "properties": {}}))
    }
    fn output_schema(&self) -> Option<&Value> {
        self.schema.as_ref()
    }
    async fn execute(&self, _args: Value, _ctx: ToolContext) -> ToolOutput {
        let out = if self.is_error { ToolOutput::error("refused") } else { ToolOutput::text("as text") };
        out.with_structured_content(json!({"n": 7}))
    }
}

#[tokio::test]
async fn an_output_schema_makes_calls_resolve_to_structured_content() {
    let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}});
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Structured { name: "typed", schema: Some(schema.clone()), is_error: false }),
        Arc::new(Structured { name: "typed_error", schema: Some(schema), is_error: true }),
        Arc::new(Structured { name: "untyped", schema: None, is_error: false }),
    ];
    let entries: Vec<CatalogEntry> = tools.into_iter().map(CatalogEntry::builtin).collect();
    assert!(
        declare::declaration(&entries[0]).ends_with("Promise<{ n: number; }>; };"),
        "{}",
        declare::declaration(&entries[0])
    );
    assert!(declare::declaration(&entries[2]).ends_with("Promise<string>; };"));
    let t = CodemodeTool::new(entries, None);
    let out = run(&t, "return [await tools.typed({}), await tools.typed_error({}), await tools.untyped({})]").await;
    assert!(!out.is_error, "{:?}", texts(&out));
    assert_eq!(texts(&out)[1], "[{\"n\":7},{\"n\":7},\"as text\"]");
}

#[test]
fn schemas_render_as_pis_typescript() {
    let schema = json!({"type": "object", "required": ["path"], "properties": {
        "path": {"type": "string", "description": "Where"},
        "limit": {"type": "integer", "minimum": 1, "default": 20},
        "mode": {"enum": ["a", "b"]},
        "item": {"$ref": "#/$defs/Item"}
    }, "$defs": {"Item": {"type": "object", "properties": {"n": {"type": ["number", "null"]}}, "required": ["n"]}}});
    assert_eq!(
        declare::schema_to_type(&schema, None),
        "{\n  item?: { n: number | null; };\n  // @integer @minimum 1 @default 20\n  limit?: number;\n  mode?: \"a\" | \"b\";\n  // Where\n  path: string;\n}"
    );
    assert_eq!(declare::schema_to_type(&json!({"type": "object"}), None), "{ [key: string]: unknown; }");
    assert_eq!(declare::schema_to_type(&json!({"anyOf": [{"type": "string"}, {}]}), None), "unknown");
    assert_eq!(declare::schema_to_type(&json!({"type": "array"}), None), "unknown[]");
}

#[test]
fn script_calls_are_described_in_one_line() {
    let reg = crate::tools::ToolRegistry::builtin();
    let entry = |name: &str| CatalogEntry::builtin(reg.get(name).unwrap());
    let note = |name: &str| listing::with_script_call(&entry(name), "Desc. ");
    assert_eq!(note("write"), "Desc.\n\nCodemode: `tools.write(args)` resolves to a string.");
    assert_eq!(
        note("bash"),
        "Desc.\n\nCodemode: `tools.bash(args)` resolves to `{ output, truncated, full_output_path?, exit_code, wall_time_seconds }`."
    );
    assert_eq!(
        note("read"),
        "Desc.\n\nCodemode: `tools.read(args)` resolves to `string | { data: string; mimeType: string; note: string; type: \"image\"; }`."
    );
}

#[test]
fn the_listing_keeps_to_its_budget_cheapest_first() {
    let reg = crate::tools::ToolRegistry::builtin();
    let entries: Vec<CatalogEntry> =
        ["read", "bash", "write"].iter().filter_map(|n| reg.get(n)).map(CatalogEntry::builtin).collect();
    let listing = |budget: f64, deferred: &[&str]| {
        let listing = listing::Listing {
            entries: entries.clone(),
            deferred: deferred.iter().map(|d| d.to_string()).collect(),
            namespace_descriptions: Default::default(),
            budget,
        };
        let text = listing.render();
        text.lines().filter_map(|l| l.strip_prefix("### ")).map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(listing(3000.0, &[]), ["`read`", "`bash`", "`write`"], "in their order");
    assert_eq!(listing(150.0, &[]), ["`write`"], "the cheapest that fits");
    assert!(listing(0.0, &[]).is_empty());
    assert_eq!(listing(3000.0, &["bash"]), ["`read`", "`write`"], "deferred tools are never listed");
    let none = listing::Listing {
        entries: Vec::new(),
        deferred: Default::default(),
        namespace_descriptions: Default::default(),
        budget: 10.0,
    };
    assert_eq!(none.render(), "", "no tool, no listing");
}
