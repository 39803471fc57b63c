//! Prompt templates: loading a Markdown file as a template (name, description,
//! argument hint, body) and expanding `/name args…` into its body.

use std::path::{Path, PathBuf};

use super::args::{parse_command_args, substitute_args};
use super::frontmatter::{self, is_js_whitespace};
use super::{Diagnostic, SourceInfo};

/// Longest description taken from the body's first line, in UTF-16 units (as pi counts).
const FIRST_LINE_DESCRIPTION_MAX: usize = 60;

/// A prompt template: `/name` expands to `content`.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The file name without `.md`.
    pub name: String,
    /// Front-matter `description`, else the first non-empty body line (60 UTF-16 units, then `...`).
    pub description: String,
    /// Front-matter `argument-hint` when it is a non-empty string.
    pub argument_hint: Option<String>,
    /// The body, front matter removed.
    pub content: String,
    /// Absolute path of the file.
    pub path: PathBuf,
    pub source_info: SourceInfo,
}

/// Load one template file. Unreadable files and YAML errors give a warning and no template.
pub(crate) fn load_template(path: &Path, source_info: SourceInfo) -> Result<Template, Diagnostic> {
    let raw =
        super::read_text(path).map_err(|e| Diagnostic::warning(super::node_io_message(&e, "open", path), path))?;
    let fm = frontmatter::parse(&raw).map_err(|e| Diagnostic::warning(e, path))?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = file_name.strip_suffix(".md").unwrap_or(&file_name).to_string();
    let description = match fm.str("description") {
        Some(d) if !d.is_empty() => d.to_string(),
        _ => first_line_description(&fm.body),
    };
    let argument_hint = fm.str("argument-hint").filter(|h| !h.is_empty()).map(str::to_string);
    Ok(Template { name, description, argument_hint, content: fm.body, path: path.to_path_buf(), source_info })
}

/// The first line that is not blank, cut to 60 UTF-16 units with `...`
/// appended when longer. Leading spaces are kept, as pi keeps them.
fn first_line_description(body: &str) -> String {
    let Some(line) = body.split('\n').find(|l| !l.chars().all(is_js_whitespace)) else {
        return String::new();
    };
    let mut units = 0;
    let mut out = String::new();
    for c in line.chars() {
        units += c.len_utf16();
        if units > FIRST_LINE_DESCRIPTION_MAX {
            out.push_str("...");
            return out;
        }
        out.push(c);
    }
    out
}

/// Expand `text` when it is `/name` or `/name args…` and `name` is one of
/// `templates`: the first whitespace ends the name, the rest (after the
/// whitespace run) is split into arguments and substituted into the body.
/// Returns the template's name and the expansion, or `None` to leave `text` alone.
pub(crate) fn expand_template<'a>(text: &str, templates: &'a [Template]) -> Option<(&'a Template, String)> {
    let rest = text.strip_prefix('/')?;
    let name_end = rest.find(is_js_whitespace).unwrap_or(rest.len());
    if name_end == 0 {
        return None;
    }
    let (name, after) = rest.split_at(name_end);
    let template = templates.iter().find(|t| t.name == name)?;
    let args_text = after.trim_start_matches(is_js_whitespace);
    let args = parse_command_args(args_text);
    Some((template, substitute_args(&template.content, &args)))
}
