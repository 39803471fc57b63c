//! The options that print something and exit instead of serving:
//! `--export <file> [output]` and `--list-models [search]`.

use std::path::Path;

use anyhow::Context;
use pi_core::config::ModelRegistry;
use pi_core::model::Model;

/// `--export`: render a session file to HTML, as pi does (default name
/// `pi-session-<basename>.html` in the current directory). Returns the line to print.
pub fn export(file: &Path, output: Option<&str>, cwd: &Path) -> anyhow::Result<String> {
    let path = pi_core::config::expand_home(file);
    let path = if path.is_absolute() { path } else { cwd.join(path) };
    if !path.exists() {
        anyhow::bail!("File not found: {}", path.display());
    }
    let (session, warnings) = pi_core::session::Session::open(&path, cwd).map_err(|e| anyhow::anyhow!("{e}"))?;
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let written = pi_core::export_html::export_session_html(&session, output, cwd, &Default::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(format!("Exported to: {}", written.display()))
}

/// `--list-models [search]`: the available models as pi's table, sorted by
/// provider then id, filtered by pi's fuzzy search over `provider id`.
pub fn list_models(agent_dir: &Path, search: &str) -> anyhow::Result<String> {
    let registry = ModelRegistry::load(agent_dir).context("cannot load the model registry")?;
    if let Some(error) = registry.config_error() {
        tracing::warn!("errors loading models.json:\n{error}");
    }
    let mut models: Vec<Model> = registry.available();
    if models.is_empty() {
        return Ok("No models available.".into());
    }
    let tokens: Vec<&str> = search.split(|c: char| c.is_whitespace() || c == '/').filter(|t| !t.is_empty()).collect();
    models.retain(|m| {
        let text = format!("{} {}", m.provider, m.id).to_lowercase();
        tokens.iter().all(|t| fuzzy_matches(&t.to_lowercase(), &text))
    });
    if models.is_empty() {
        return Ok(format!("No models matching \"{search}\""));
    }
    let collate = pi_core::config::model_resolver::collate;
    models.sort_by(|a, b| collate(&a.provider, &b.provider).then_with(|| collate(&a.id, &b.id)));
    let header = ["provider", "model", "context", "max-out", "thinking", "images"].map(String::from);
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                token_count(m.context_window),
                token_count(m.max_tokens),
                yes_no(m.reasoning),
                yes_no(m.input.iter().any(|i| i == "image")),
            ]
        })
        .collect();
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 6]| {
        let cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        cells.join("  ")
    };
    let mut out = vec![line(&header)];
    out.extend(rows.iter().map(line));
    Ok(out.join("\n"))
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// pi's `200K`, `1M`, `1.5M`.
fn token_count(n: u64) -> String {
    let scaled = |value: f64, unit: &str| {
        if value.fract() == 0.0 { format!("{value}{unit}") } else { format!("{value:.1}{unit}") }
    };
    if n >= 1_000_000 {
        scaled(n as f64 / 1_000_000.0, "M")
    } else if n >= 1_000 {
        scaled(n as f64 / 1_000.0, "K")
    } else {
        n.to_string()
    }
}

/// pi-tui's fuzzy match: the query's characters in order; `abc12` may also
/// match as `12abc` (and the other way round).
fn fuzzy_matches(query: &str, text: &str) -> bool {
    let in_order = |q: &str| {
        let mut chars = text.chars();
        q.chars().all(|c| chars.any(|t| t == c))
    };
    if in_order(query) {
        return true;
    }
    let split =
        query.find(|c: char| c.is_ascii_digit()).filter(|_| query.starts_with(|c: char| c.is_ascii_lowercase()));
    let swapped = match split {
        Some(i)
            if query[i..].chars().all(|c| c.is_ascii_digit()) && query[..i].chars().all(|c| c.is_ascii_lowercase()) =>
        {
            format!("{}{}", &query[i..], &query[..i])
        }
        _ => match query.find(|c: char| c.is_ascii_lowercase()) {
            Some(i)
                if i > 0
                    && query[..i].chars().all(|c| c.is_ascii_digit())
                    && query[i..].chars().all(|c| c.is_ascii_lowercase()) =>
            {
                format!("{}{}", &query[i..], &query[..i])
            }
            _ => return false,
        },
    };
    in_order(&swapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_and_fuzzy_search_read_like_pi() {
        assert_eq!(token_count(200_000), "200K");
        assert_eq!(token_count(1_000_000), "1M");
        assert_eq!(token_count(1_048_576), "1.0M");
        assert_eq!(token_count(131_072), "131.1K");
        assert_eq!(token_count(512), "512");
        assert!(fuzzy_matches("snt", "anthropic claude-sonnet-4-5"));
        assert!(fuzzy_matches("gpt4", "openai gpt-4o"));
        assert!(fuzzy_matches("4o", "openai gpt-4o"));
        assert!(fuzzy_matches("4gpt", "openai gpt-4o"), "digits and letters swapped");
        assert!(!fuzzy_matches("zzz", "openai gpt-4o"));
    }
}
