//! The system prompt, in the named sections pi 1.6.0 gives the model
//! (`preamble`, `tools`, `rules`, `docs`, `addendum`, `project_context`,
//! `skills`, `cwd`, then sections such as `mcp_servers`), each but the
//! preamble wrapped in `<name>…</name>` tags, written in pi-rpc's own words.
//!
//! The sections are what the conversation's system messages record
//! ([`pi_types::system_message`]); the prompt text is the sections joined
//! by blank lines. A custom prompt (`--system-prompt`, `SYSTEM.md`) replaces
//! the preamble, tools, rules and docs. Context files (AGENTS.md /
//! CLAUDE.md) are found as pi finds them; `APPEND_SYSTEM.md` and
//! `--append-system-prompt` make the addendum.

use std::path::{Path, PathBuf};

pub mod options;

/// Named sections, in the order the prompt shows them.
pub type Sections = Vec<(String, String)>;

/// A tool as the prompt lists it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromptTool {
    pub name: String,
    /// Its one line in the tool list (a tool without one is not listed).
    pub snippet: Option<String>,
    /// Rules it adds to the rules section.
    pub guidelines: Vec<String>,
}

impl PromptTool {
    /// A built-in tool with its own snippet and rules.
    pub fn builtin(name: &str) -> PromptTool {
        PromptTool {
            name: name.to_string(),
            snippet: builtin_snippet(name).map(str::to_string),
            guidelines: builtin_guidelines(name).iter().map(|g| g.to_string()).collect(),
        }
    }
}

/// Inputs of the system prompt.
pub struct PromptInputs<'a> {
    pub agent_dir: &'a Path,
    pub cwd: &'a Path,
    /// Active tools, in order.
    pub tools: &'a [PromptTool],
    /// `--system-prompt`: replaces the preamble (text, or a file to read).
    pub replace: Option<&'a str>,
    /// `--append-system-prompt` values (text or files), in order.
    pub append: &'a [String],
    /// `--no-context-files`: leave AGENTS.md / CLAUDE.md out.
    pub no_context_files: bool,
    /// The skills list (its text, without the tags).
    pub skills_section: Option<&'a str>,
    /// Further named sections (text without the tags), after `cwd`.
    pub extra_sections: &'a [(String, String)],
    /// Where pi-rpc's documentation is; `None`: no docs section.
    pub docs_root: Option<&'a Path>,
}

const PREAMBLE: &str = "You are a coding assistant working inside pi, a coding agent harness. You help users \
                        look at files, run commands and change code.";

/// The one-line description of a built-in tool in the tool list.
pub fn builtin_snippet(name: &str) -> Option<&'static str> {
    Some(match name {
        "read" => "Show the contents of a file",
        "bash" => "Run shell commands with bash (ls, grep, find, …)",
        "powershell" => "Run PowerShell commands",
        "edit" => "Change a file by replacing exact text; several separate replacements fit in one call",
        "write" => "Create a file or overwrite one",
        "grep" => "Search file contents with a regular expression (respects .gitignore)",
        "find" => "Find files by glob pattern (respects .gitignore)",
        "ls" => "List a directory",
        "codemode" => "Run a JavaScript program that calls other tools",
        "tool_search" => "Find tools that are not loaded yet, and load what matches",
        _ => return None,
    })
}

/// A built-in tool's one-line description, `""` for another tool.
pub fn tool_summary(name: &str) -> &'static str {
    builtin_snippet(name).unwrap_or("")
}

/// The rules a built-in tool adds when it is active.
pub fn builtin_guidelines(name: &str) -> &'static [&'static str] {
    match name {
        "read" => &["Look at files with read rather than cat or sed."],
        "bash" | "powershell" => {
            &["The PI_* environment variables describe the current model and session; inspect them when needed."]
        }
        "edit" => &[
            "Make targeted changes with edit, and group the changes to one file into one call.",
            "Every edits[].oldText must match the original file exactly and only once. Keep each match short and \
             apart from the others; merge changes that are close instead of spanning unchanged regions.",
        ],
        "write" => &["Use write only for new files or complete rewrites."],
        "codemode" => {
            &["Use codemode to run independent tool calls together (Promise.allSettled), to chain calls, or to cut \
             large outputs down, rather than making many separate calls."]
        }
        _ => &[],
    }
}

/// pi-rpc's documentation: `PI_RPC_DOCS_DIR`, else the source tree pi-rpc
/// was built from, when its README is there (looked up once per process).
pub fn docs_root() -> Option<&'static Path> {
    static ROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let root = match std::env::var_os("PI_RPC_DOCS_DIR") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
        };
        let root = std::fs::canonicalize(&root).ok()?;
        root.join("README.md").is_file().then_some(root)
    })
    .as_deref()
}

/// The custom prompt that replaces the default one (`--system-prompt`, else
/// `SYSTEM.md`), if any.
pub fn custom_prompt(inputs: &PromptInputs<'_>) -> Option<String> {
    inputs
        .replace
        .map(|r| read_text_or_file(r, inputs.cwd))
        .or_else(|| system_prompt_file(inputs.agent_dir, Some(inputs.cwd)).map(|(_, text)| text))
        .filter(|text| !text.is_empty())
}

/// What is appended to the prompt (`APPEND_SYSTEM.md`, then each
/// `--append-system-prompt`), joined by blank lines; empty when nothing.
pub fn appended_prompt(inputs: &PromptInputs<'_>) -> String {
    let appended_file = append_system_prompt_file(inputs.agent_dir, Some(inputs.cwd)).map(|(_, text)| text);
    let addendum: Vec<String> = appended_file
        .into_iter()
        .chain(inputs.append.iter().map(|a| read_text_or_file(a, inputs.cwd)))
        .filter(|text| !text.trim().is_empty())
        .collect();
    addendum.join("\n\n")
}

/// The named sections of the prompt.
pub fn build_sections(inputs: &PromptInputs<'_>) -> Sections {
    let mut sections: Sections = Vec::new();
    match custom_prompt(inputs) {
        Some(text) => sections.push(("preamble".into(), text)),
        None => {
            sections.push(("preamble".into(), PREAMBLE.into()));
            sections.push(("tools".into(), tool_list(inputs.tools)));
            sections.push(("rules".into(), rules(inputs.tools)));
            if let Some(root) = inputs.docs_root {
                sections.push(("docs".into(), docs(root)));
            }
        }
    }
    let addendum = appended_prompt(inputs);
    if !addendum.is_empty() {
        sections.push(("addendum".into(), addendum));
    }
    let context = if inputs.no_context_files { Vec::new() } else { context_files(inputs.agent_dir, inputs.cwd) };
    if !context.is_empty() {
        sections.push(("project_context".into(), project_context(&context)));
    }
    if let Some(skills) = inputs.skills_section.map(str::trim).filter(|s| !s.is_empty()) {
        sections.push(("skills".into(), skills.to_string()));
    }
    finish_sections(sections, &inputs.cwd.display().to_string(), inputs.extra_sections)
}

/// The end of every prompt's section list: the working directory last (with
/// `/` separators), each section but the preamble in its tags, then `extra`.
fn finish_sections(mut sections: Vec<(String, String)>, cwd: &str, extra: &[(String, String)]) -> Sections {
    sections.push(("cwd".into(), cwd.replace('\\', "/")));
    let sections = sections
        .into_iter()
        .map(|(name, text)| {
            let text = if name == "preamble" { text } else { tagged(&name, &text) };
            (name, text)
        })
        .collect();
    with_extra_sections(sections, extra)
}

fn tagged(name: &str, text: &str) -> String {
    format!("<{name}>\n{text}\n</{name}>")
}

/// `sections` with further named sections (text without the tags): one of
/// an existing name replaces it in place, a new one goes last (as pi adds
/// an extension's sections); empty ones and `preamble` are left out.
pub fn with_extra_sections(mut sections: Sections, extra: &[(String, String)]) -> Sections {
    for (name, text) in extra {
        if text.is_empty() || name == "preamble" {
            continue;
        }
        let text = tagged(name, text);
        match sections.iter_mut().find(|(n, _)| n == name) {
            Some(existing) => existing.1 = text,
            None => sections.push((name.clone(), text)),
        }
    }
    sections
}

/// The prompt text of `sections`: each in turn, separated by a blank line.
pub fn render(sections: &Sections) -> String {
    let texts: Vec<&str> = sections.iter().map(|(_, t)| t.as_str()).filter(|t| !t.is_empty()).collect();
    texts.join("\n\n")
}

/// Build the system prompt text.
pub fn build(inputs: &PromptInputs<'_>) -> String {
    render(&build_sections(inputs))
}

fn tool_list(tools: &[PromptTool]) -> String {
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|t| Some(format!("- {}: {}", t.name, t.snippet.as_deref().filter(|s| !s.is_empty())?)))
        .collect();
    let list = if listed.is_empty() { "(none)".to_string() } else { listed.join("\n") };
    format!("{list}\n\nOther tools may also be available.")
}

fn rules(tools: &[PromptTool]) -> String {
    rules_with(tools, &[])
}

/// The rules of `tools`, then `extra` ones (an extension's `promptGuidelines`), then the usual two.
fn rules_with(tools: &[PromptTool], extra: &[String]) -> String {
    let mut rules: Vec<String> = Vec::new();
    let mut add = |rule: &str| {
        let rule = rule.trim();
        if !rule.is_empty() && !rules.iter().any(|r| r == rule) {
            rules.push(rule.to_string());
        }
    };
    let active = |name: &str| tools.iter().any(|t| t.name == name);
    if !active("grep") && !active("find") && !active("ls") {
        match (active("bash"), active("powershell")) {
            (true, true) => {
                add("Do file operations such as listing, searching and finding files with bash or PowerShell")
            }
            (false, true) => add("Do file operations such as listing, searching and finding files with PowerShell"),
            (true, false) => add("Do file operations such as ls, rg and find with bash"),
            (false, false) => {}
        }
    }
    for tool in tools {
        for rule in &tool.guidelines {
            add(rule);
        }
    }
    for rule in extra {
        add(rule);
    }
    add("Keep your answers short");
    add("Name file paths clearly when you work with files");
    rules.iter().map(|r| format!("- {r}")).collect::<Vec<_>>().join("\n")
}

fn docs(root: &Path) -> String {
    let root = root.display().to_string().replace('\\', "/");
    format!(
        "pi-rpc's documentation (only read it when the user asks about the harness itself: its protocols, \
         extensions, skills, prompt templates, models or settings):\n\
         - Main documentation: {root}/README.md\n\
         - Extensions: {root}/README-extensions.md\n\
         - Other docs: {root}/docs and {root}/compat\n\
         - Examples: {root}/examples (extensions)\n\
         - Paths such as docs/… or examples/… in these files are relative to {root}, not to the working \
         directory\n\
         - Where to look: protocols and commands (the native pi dialect, JSON-RPC, ACP, pi serve and its cluster), models, logins, skills, prompt templates, MCP servers, codemode, \
         settings and environment variables (README.md); extensions and pi packages (README-extensions.md, \
         examples/extensions/); sessions (docs/sessions.md); the conformance kit (compat/README.md); differences \
         from pi (compat/DEVIATIONS.md)\n\
         - Before changing how the harness is set up, read the relevant docs and examples in full, and follow \
         their links."
    )
}

fn project_context(files: &[(PathBuf, String)]) -> String {
    let mut parts = vec!["Instructions for this project, from its context files:".to_string()];
    for (path, text) in files {
        parts.push(format!("<context_file path=\"{}\">\n{}\n</context_file>", path.display(), text.trim_end()));
    }
    parts.join("\n\n")
}

/// `value` is a file path if such a file exists, else literal text.
fn read_text_or_file(value: &str, cwd: &Path) -> String {
    let candidate = crate::config::expand_home(Path::new(value));
    let candidate = if candidate.is_absolute() { candidate } else { cwd.join(candidate) };
    if value.len() < 4096
        && candidate.is_file()
        && let Ok(text) = std::fs::read_to_string(&candidate)
    {
        return text;
    }
    value.to_string()
}

fn read_first(paths: &[PathBuf]) -> Option<(PathBuf, String)> {
    paths.iter().find_map(|p| std::fs::read_to_string(p).ok().map(|text| (p.clone(), text)))
}

/// The first of `<project>/.pi/<name>` (when a project is given) and `<agent_dir>/<name>` that reads.
fn prompt_file(name: &str, agent_dir: &Path, project: Option<&Path>) -> Option<(PathBuf, String)> {
    let candidates: Vec<PathBuf> =
        project.map(|p| p.join(".pi").join(name)).into_iter().chain([agent_dir.join(name)]).collect();
    read_first(&candidates)
}

/// The file that replaces the preamble when no `--system-prompt` is given:
/// the project's `.pi/SYSTEM.md`, else the agent dir's `SYSTEM.md`.
pub fn system_prompt_file(agent_dir: &Path, project: Option<&Path>) -> Option<(PathBuf, String)> {
    prompt_file("SYSTEM.md", agent_dir, project)
}

/// The file appended to the prompt: the project's `.pi/APPEND_SYSTEM.md`,
/// else the agent dir's `APPEND_SYSTEM.md`.
pub fn append_system_prompt_file(agent_dir: &Path, project: Option<&Path>) -> Option<(PathBuf, String)> {
    prompt_file("APPEND_SYSTEM.md", agent_dir, project)
}

/// Context files: the agent dir's, then every directory from the filesystem
/// root down to `cwd`. In each directory `AGENTS.override.md` wins, then
/// `AGENTS.md`, then `CLAUDE.md` (one file per directory).
pub fn context_files(agent_dir: &Path, cwd: &Path) -> Vec<(PathBuf, String)> {
    let mut dirs: Vec<PathBuf> = vec![agent_dir.to_path_buf()];
    let mut chain: Vec<PathBuf> = cwd.ancestors().map(Path::to_path_buf).collect();
    chain.reverse();
    dirs.extend(chain);
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for dir in dirs {
        for name in ["AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"] {
            let path = dir.join(name);
            if path.is_file() {
                let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                if seen.insert(key)
                    && let Ok(text) = std::fs::read_to_string(&path)
                {
                    out.push((path, text));
                }
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(agent: &'a Path, cwd: &'a Path, tools: &'a [PromptTool]) -> PromptInputs<'a> {
        PromptInputs {
            agent_dir: agent,
            cwd,
            tools,
            replace: None,
            append: &[],
            no_context_files: false,
            skills_section: None,
            extra_sections: &[],
            docs_root: Some(Path::new("/opt/pi-rpc")),
        }
    }

    fn names(sections: &Sections) -> Vec<&str> {
        sections.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn sections_in_pi_order_with_tags_tools_rules_docs_and_cwd() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let tools: Vec<PromptTool> = ["read", "bash", "edit", "write"].into_iter().map(PromptTool::builtin).collect();
        let sections = build_sections(&inputs(agent.path(), cwd.path(), &tools));
        assert_eq!(names(&sections), ["preamble", "tools", "rules", "docs", "cwd"]);
        let text = |name: &str| sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone()).unwrap();
        assert!(text("tools").starts_with("<tools>\n- read: ") && text("tools").ends_with("\n</tools>"));
        assert!(text("rules").contains("PI_* environment variables"), "{}", text("rules"));
        assert!(text("rules").contains("- Do file operations such as ls, rg and find with bash"));
        assert!(text("docs").contains("/opt/pi-rpc/README.md"));
        assert_eq!(text("cwd"), format!("<cwd>\n{}\n</cwd>", cwd.path().display()));
        let prompt = render(&sections);
        assert!(prompt.starts_with(PREAMBLE) && !prompt.contains("Current date"), "{prompt}");
        // With grep, the bash file-operations rule goes.
        let mut with_grep = tools.clone();
        with_grep.push(PromptTool::builtin("grep"));
        let rules = build_sections(&inputs(agent.path(), cwd.path(), &with_grep))[2].1.clone();
        assert!(!rules.contains("such as ls, rg and find"), "{rules}");
    }

    #[test]
    fn powershell_has_its_line_and_shares_the_file_operations_rule_as_in_pi() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let rules_of = |names: &[&str]| {
            let tools: Vec<PromptTool> = names.iter().map(|n| PromptTool::builtin(n)).collect();
            let sections = build_sections(&inputs(agent.path(), cwd.path(), &tools));
            sections.iter().find(|(n, _)| n == "rules").map(|(_, t)| t.clone()).unwrap_or_default()
        };
        assert!(
            rules_of(&["read", "powershell"])
                .contains("- Do file operations such as listing, searching and finding files with PowerShell\n")
        );
        assert!(rules_of(&["bash", "powershell"]).contains("with bash or PowerShell"));
        assert!(!rules_of(&["powershell", "ls"]).contains("file operations"));
        assert!(rules_of(&["powershell"]).contains("PI_* environment variables"));
        assert_eq!(builtin_snippet("powershell"), Some("Run PowerShell commands"));
    }

    /// pi 1.6.0's sections for read, bash, edit and write, measured from
    /// its first system message (characters, tags included); its `docs`
    /// section is a fixed text plus its documentation root three times.
    const PI_SIZES: [(&str, usize); 3] = [("preamble", 126), ("tools", 274), ("rules", 589)];
    const PI_DOCS_FIXED: usize = 1053;

    #[test]
    fn each_section_is_within_15_percent_of_pi_1_6_0() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let tools: Vec<PromptTool> = ["read", "bash", "edit", "write"].into_iter().map(PromptTool::builtin).collect();
        let within = |name: &str, ours: usize, pi: usize| {
            let ratio = ours as f64 / pi as f64;
            assert!((0.85..=1.15).contains(&ratio), "{name}: {ours} characters, pi 1.6.0 {pi} ({ratio:.2})");
        };
        for root in ["/opt/pi-rpc", "/home/someone/src/pi-rpc", "/usr/lib/node_modules/@earendil-works/pi-coding-agent"]
        {
            let mut i = inputs(agent.path(), cwd.path(), &tools);
            i.docs_root = Some(Path::new(root));
            let sections = build_sections(&i);
            let size = |name: &str| sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.chars().count()).unwrap();
            for (name, pi) in PI_SIZES {
                within(name, size(name), pi);
            }
            within("docs", size("docs"), PI_DOCS_FIXED + 3 * root.len());
        }
    }

    #[test]
    fn context_files_in_order_and_left_out_on_request() {
        let agent = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let sub = project.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(project.path().join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub rules").unwrap();
        std::fs::write(agent.path().join("AGENTS.md"), "user rules").unwrap();
        let tools = vec![PromptTool::builtin("read")];
        let p = build(&inputs(agent.path(), &sub, &tools));
        assert!(p.contains("- read: Show the contents of a file"));
        assert!(p.contains(&format!("<cwd>\n{}\n</cwd>", sub.display())));
        let (u, r, s) = (p.find("user rules").unwrap(), p.find("root rules").unwrap(), p.find("sub rules").unwrap());
        assert!(u < r && r < s, "context files in order: {p}");
        assert!(p.contains("<project_context>\n"), "{p}");
        let mut without = inputs(agent.path(), &sub, &tools);
        without.no_context_files = true;
        let p = build(&without);
        assert!(!p.contains("root rules") && !p.contains("<project_context>"), "--no-context-files: {p}");
    }

    #[test]
    fn a_custom_prompt_replaces_preamble_tools_rules_and_docs() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("extra.md"), "from a file").unwrap();
        let append = vec!["extra.md".to_string(), "literal tail".to_string()];
        let mut i = inputs(agent.path(), cwd.path(), &[]);
        i.replace = Some("Custom prompt.");
        i.append = &append;
        let extra = vec![("mcp_servers".to_string(), "- mcp__fs (codemode)".to_string())];
        i.extra_sections = &extra;
        let sections = build_sections(&i);
        assert_eq!(names(&sections), ["preamble", "addendum", "cwd", "mcp_servers"]);
        let p = render(&sections);
        assert!(p.starts_with("Custom prompt.\n\n<addendum>\nfrom a file\n\nliteral tail\n</addendum>"), "{p}");
        assert!(p.ends_with("<mcp_servers>\n- mcp__fs (codemode)\n</mcp_servers>"), "{p}");
        assert!(!p.contains("coding agent harness"));
    }
}
