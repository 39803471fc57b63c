//! Skills: loading and validating a `SKILL.md` (or standalone Markdown)
//! skill, expanding `/skill:name args`, and the system-prompt block that
//! advertises the skills to the model.

use std::path::{Path, PathBuf};

use super::frontmatter::{self, js_trim};
use super::{Diagnostic, SourceInfo};

/// Longest skill name, in UTF-16 units (Agent Skills specification).
const MAX_NAME_LENGTH: usize = 64;
/// Longest description, in UTF-16 units (Agent Skills specification).
const MAX_DESCRIPTION_LENGTH: usize = 1024;

/// A skill: instructions in a Markdown file the model loads on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Front-matter `name`, else the name of the directory holding the file.
    pub name: String,
    pub description: String,
    /// Absolute path of the skill file (usually `…/SKILL.md`).
    pub path: PathBuf,
    /// The directory holding the file: relative references resolve against it.
    pub base_dir: PathBuf,
    /// `disable-model-invocation: true`: only `/skill:name` loads it; it is
    /// left out of the system prompt.
    pub disable_model_invocation: bool,
    pub source_info: SourceInfo,
}

/// Load one skill file.
///
/// A `SKILL.md` declares a skill: a read or YAML error, or a missing/blank
/// `description`, gives a warning and no skill. Another `.md` file is a
/// skill only when its front matter has a description; otherwise it is
/// skipped silently. Name problems (format, length) and an over-long
/// description only warn: the skill still loads.
pub(crate) fn load_skill(
    path: &Path,
    source_info: impl FnOnce(&Path) -> SourceInfo,
) -> (Option<Skill>, Vec<Diagnostic>) {
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let mut diagnostics = Vec::new();
    let raw = match super::read_text(path) {
        Ok(raw) => raw,
        Err(e) => return (None, vec![Diagnostic::warning(super::node_io_message(&e, "open", path), path)]),
    };
    let fm = match frontmatter::parse(&raw) {
        Ok(fm) => fm,
        Err(e) if declared => return (None, vec![Diagnostic::warning(e, path)]),
        Err(_) => return (None, diagnostics),
    };
    let description = fm.str("description").filter(|d| !js_trim(d).is_empty());
    if !declared && description.is_none() {
        return (None, diagnostics);
    }
    match description {
        None => diagnostics.push(Diagnostic::warning("description is required", path)),
        Some(d) if utf16_len(d) > MAX_DESCRIPTION_LENGTH => diagnostics.push(Diagnostic::warning(
            format!("description exceeds {MAX_DESCRIPTION_LENGTH} characters ({})", utf16_len(d)),
            path,
        )),
        Some(_) => {}
    }
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir_name = base_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = fm.str("name").filter(|n| !n.is_empty()).map_or(dir_name, str::to_string);
    for message in name_problems(&name) {
        diagnostics.push(Diagnostic::warning(message, path));
    }
    let Some(description) = description else {
        return (None, diagnostics);
    };
    let skill = Skill {
        name,
        description: description.to_string(),
        path: path.to_path_buf(),
        source_info: source_info(&base_dir),
        base_dir,
        disable_model_invocation: fm.is_true("disable-model-invocation"),
    };
    (Some(skill), diagnostics)
}

/// What is wrong with a skill name: at most 64 characters of `a-z`, `0-9`
/// and `-`, no leading, trailing or doubled hyphen.
pub(crate) fn name_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let len = utf16_len(name);
    if len > MAX_NAME_LENGTH {
        problems.push(format!("name exceeds {MAX_NAME_LENGTH} characters ({len})"));
    }
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        problems.push("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)".to_string());
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("name must not start or end with a hyphen".to_string());
    }
    if name.contains("--") {
        problems.push("name must not contain consecutive hyphens".to_string());
    }
    problems
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Why a `/skill:name` command could not be expanded (pi reports it as an
/// `extension_error` with event `skill_expansion` and sends the text as typed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillExpansionError {
    /// The skill file.
    pub path: PathBuf,
    pub message: String,
}

/// Expand `/skill:name` or `/skill:name args`: the name ends at the first
/// space (only a space), the arguments are trimmed. The skill file is read
/// again, its front matter removed and the body trimmed, and wrapped as
///
/// ```text
/// <skill name="NAME" location="FILE">
/// References are relative to BASE_DIR.
///
/// BODY
/// </skill>
///
/// ARGS
/// ```
///
/// (the blank line and `ARGS` only when there are arguments). `None` when
/// `text` is not a skill command or names no known skill.
pub(crate) fn expand_skill<'a>(
    text: &str,
    skills: &'a [Skill],
) -> Option<(&'a Skill, Result<String, SkillExpansionError>)> {
    let rest = text.strip_prefix("/skill:")?;
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], js_trim(&rest[i + 1..])),
        None => (rest, ""),
    };
    let skill = skills.iter().find(|s| s.name == name)?;
    let error = |message: String| SkillExpansionError { path: skill.path.clone(), message };
    let body = super::read_text(&skill.path)
        .map_err(|e| error(super::node_io_message(&e, "open", &skill.path)))
        .and_then(|raw| frontmatter::strip(&raw).map_err(error));
    let expanded = body.map(|body| {
        let block = format!(
            "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
            skill.name,
            skill.path.display(),
            skill.base_dir.display(),
            js_trim(&body)
        );
        if args.is_empty() { block } else { format!("{block}\n\n{args}") }
    });
    Some((skill, expanded))
}

/// The tool the model is told to load skill files with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SkillReader {
    /// The `read` tool is active.
    #[default]
    Read,
    /// No `read`, but `bash` is active.
    Bash,
    /// Neither is declared to the model (a reader is reachable only through another tool).
    Indirect,
}

/// The system-prompt block advertising `skills` (read tool named), or
/// `None` when no skill is visible to the model. See [`skills_prompt_section_with`].
pub fn skills_prompt_section(skills: &[Skill]) -> Option<String> {
    skills_prompt_section_with(skills, SkillReader::Read)
}

/// The system-prompt block advertising `skills`: a short instruction naming
/// `reader`, then `<available_skills>` with one `<skill>` (`<name>`,
/// `<description>`, `<location>` = the skill file, XML-escaped) per skill.
/// Skills with `disable-model-invocation` are left out; `None` when none remains.
/// The text carries no leading or trailing blank line (pi 1.6 puts it in a
/// `<skills>` section of the system prompt).
pub fn skills_prompt_section_with(skills: &[Skill], reader: SkillReader) -> Option<String> {
    let visible: Vec<(&str, &str, String)> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .map(|s| (s.name.as_str(), s.description.as_str(), s.path.to_string_lossy().into_owned()))
        .collect();
    skills_block(&visible, reader)
}

/// The skills block of `(name, description, location)` entries (the ones
/// the model may load), `None` when there are none.
pub fn skills_block(visible: &[(&str, &str, String)], reader: SkillReader) -> Option<String> {
    if visible.is_empty() {
        return None;
    }
    let how = match reader {
        SkillReader::Read => "Use the read tool to load a skill's file when the task matches its description.",
        SkillReader::Bash => "Use bash to load a skill's file when the task matches its description.",
        SkillReader::Indirect => "Load a skill's file when the task matches its description.",
    };
    let mut lines = vec![
        "The following skills provide specialized instructions for specific tasks.".to_string(),
        how.to_string(),
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls."
            .to_string(),
        String::new(),
        "<available_skills>".to_string(),
    ];
    for (name, description, location) in visible {
        lines.push("  <skill>".to_string());
        lines.push(format!("    <name>{}</name>", escape_xml(name)));
        lines.push(format!("    <description>{}</description>", escape_xml(description)));
        lines.push(format!("    <location>{}</location>", escape_xml(location)));
        lines.push("  </skill>".to_string());
    }
    lines.push("</available_skills>".to_string());
    Some(lines.join("\n"))
}

/// pi's XML escaping of the skills block: `& < > " '` as `&amp; &lt; &gt;
/// &quot; &apos;` (quick-xml's full escape).
fn escape_xml(s: &str) -> std::borrow::Cow<'_, str> {
    quick_xml::escape::escape(s)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_skills_block_escapes_as_pi_does() {
        assert_eq!(super::escape_xml(r#"<a & 'b' "c">"#), "&lt;a &amp; &apos;b&apos; &quot;c&quot;&gt;");
        assert_eq!(super::escape_xml("plain é"), "plain é");
    }
}
