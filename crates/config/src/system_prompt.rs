//! The system prompt: a coding-assistant preamble naming the active tools and
//! the working directory, context files (AGENTS.md / CLAUDE.md) found as pi
//! finds them, `SYSTEM.md` / `APPEND_SYSTEM.md`, and the command-line overrides.

use std::path::{Path, PathBuf};

/// Inputs of the system prompt.
pub struct PromptInputs<'a> {
    pub agent_dir: &'a Path,
    pub cwd: &'a Path,
    /// Active tools as (name, one-line summary).
    pub tools: &'a [(String, String)],
    /// Extra rule bullets (extension tools' `promptGuidelines`).
    pub guidelines: &'a [String],
    /// `--system-prompt`: replaces the preamble (text, or a file to read).
    pub replace: Option<&'a str>,
    /// `--append-system-prompt` values (text or files), in order.
    pub append: &'a [String],
    /// `--no-context-files`: leave AGENTS.md / CLAUDE.md out.
    pub no_context_files: bool,
    /// Extra section appended before the date line (the skills list).
    pub skills_section: Option<&'a str>,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
}

/// One-line summaries of the built-in tools, for the prompt's tool list.
pub fn tool_summary(name: &str) -> &'static str {
    match name {
        "read" => "Read a file (text with offset/limit, or an image)",
        "bash" => "Run a bash command in the working directory",
        "edit" => "Replace exact text in a file; several disjoint edits per call",
        "write" => "Create or overwrite a file",
        "grep" => "Search file contents with a regular expression (respects .gitignore)",
        "find" => "Find files by glob pattern (respects .gitignore)",
        "ls" => "List a directory",
        "codemode" => "Run JavaScript that calls other tools (MCP tools included); only its output reaches you",
        "tool_search" => "Search for tools that are not loaded yet and load the matches",
        _ => "",
    }
}

/// Build the system prompt.
pub fn build(inputs: &PromptInputs<'_>) -> String {
    let replaced = inputs
        .replace
        .map(|r| read_text_or_file(r, inputs.cwd))
        .or_else(|| read_first(&[inputs.cwd.join(".pi/SYSTEM.md"), inputs.agent_dir.join("SYSTEM.md")]));
    let mut prompt = match replaced {
        Some(text) => text,
        None => default_preamble(inputs.tools, inputs.guidelines),
    };
    let appended_file =
        read_first(&[inputs.cwd.join(".pi/APPEND_SYSTEM.md"), inputs.agent_dir.join("APPEND_SYSTEM.md")]);
    for extra in appended_file.into_iter().chain(inputs.append.iter().map(|a| read_text_or_file(a, inputs.cwd))) {
        if !extra.trim().is_empty() {
            prompt.push_str("\n\n");
            prompt.push_str(extra.trim_end());
        }
    }
    let context = if inputs.no_context_files { Vec::new() } else { context_files(inputs.agent_dir, inputs.cwd) };
    if !context.is_empty() {
        prompt.push_str(
            "\n\n# Project context\n\nInstructions from context files. Follow them unless the user says otherwise.",
        );
        for (path, text) in context {
            prompt.push_str(&format!("\n\n## {}\n\n{}", path.display(), text.trim_end()));
        }
    }
    if let Some(skills) = inputs.skills_section {
        prompt.push_str("\n\n");
        prompt.push_str(skills);
    }
    prompt.push_str(&format!("\nCurrent date: {}\nCurrent working directory: {}", inputs.date, inputs.cwd.display()));
    prompt
}

fn default_preamble(tools: &[(String, String)], guidelines: &[String]) -> String {
    let mut p = String::from(
        "You are a coding assistant running inside pi, a coding agent harness. You help the user by reading files, \
         running commands, editing code and writing new files.\n\nTools you can call:",
    );
    if tools.is_empty() {
        p.push_str("\n(none)");
    }
    for (name, summary) in tools {
        if summary.is_empty() {
            p.push_str(&format!("\n- {name}"));
        } else {
            p.push_str(&format!("\n- {name}: {summary}"));
        }
    }
    p.push_str(
        "\n\nOther tools may be available depending on the project.\n\nWorking rules:\n\
         - Look before you change: read the relevant files first.\n\
         - Prefer the read tool over cat or sed for looking at files.\n\
         - Make precise edits: each oldText must match the file exactly and be unique; merge nearby changes.\n\
         - Use write only for new files or complete rewrites.\n\
         - Keep answers short and name file paths clearly.",
    );
    for rule in guidelines {
        p.push_str(&format!("\n- {}", rule.trim()));
    }
    p
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

fn read_first(paths: &[PathBuf]) -> Option<String> {
    paths.iter().find_map(|p| std::fs::read_to_string(p).ok())
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

    fn inputs<'a>(agent: &'a Path, cwd: &'a Path, tools: &'a [(String, String)]) -> PromptInputs<'a> {
        PromptInputs {
            agent_dir: agent,
            cwd,
            tools,
            guidelines: &[],
            replace: None,
            append: &[],
            no_context_files: false,
            skills_section: None,
            date: "2026-01-02",
        }
    }

    #[test]
    fn names_tools_cwd_and_context_files() {
        let agent = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let sub = project.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(project.path().join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub rules").unwrap();
        std::fs::write(agent.path().join("AGENTS.md"), "user rules").unwrap();
        let tools = vec![("read".to_string(), tool_summary("read").to_string())];
        let p = build(&inputs(agent.path(), &sub, &tools));
        assert!(p.contains("- read: Read a file"));
        assert!(p.contains(&format!("Current working directory: {}", sub.display())));
        let (u, r, s) = (p.find("user rules").unwrap(), p.find("root rules").unwrap(), p.find("sub rules").unwrap());
        assert!(u < r && r < s, "context files in order: {p}");
        let mut without = inputs(agent.path(), &sub, &tools);
        without.no_context_files = true;
        let p = build(&without);
        assert!(!p.contains("root rules") && !p.contains("# Project context"), "--no-context-files: {p}");
    }

    #[test]
    fn replace_and_append() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("extra.md"), "from a file").unwrap();
        let append = vec!["extra.md".to_string(), "literal tail".to_string()];
        let mut i = inputs(agent.path(), cwd.path(), &[]);
        i.replace = Some("Custom prompt.");
        i.append = &append;
        let p = build(&i);
        assert!(p.starts_with("Custom prompt.\n\nfrom a file\n\nliteral tail"), "{p}");
        assert!(!p.contains("coding agent harness"));
    }
}
