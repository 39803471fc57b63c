//! The `mcp_servers` system-prompt section as pi 1.6.0's MCP extension
//! renders it: the servers whose tools are not declared to the model,
//! sorted by name, each with how its tools are reached and a one-line
//! summary shortened to fit (at most 250 characters a server, 4096 for the
//! whole section; when the server lines alone do not fit, the last servers
//! are left out and counted in a closing line). Lengths are counted as
//! JavaScript counts them (UTF-16 code units).

/// Characters of one server's summary in the section (pi's, as Codex allows
/// for deferred namespaces).
pub const MAX_SERVER_DESCRIPTION_CHARS: usize = 250;

/// Characters of the whole section.
pub const MAX_SERVERS_SECTION_CHARS: usize = 4096;

/// One server of the section: its name, how its tools are reached
/// (`codemode` or `tool_search`) and its summary (the configured
/// description's first line, else its instructions').
#[derive(Debug, Clone)]
pub struct ListedServer {
    pub name: String,
    pub how: &'static str,
    pub summary: String,
}

/// JavaScript's `length` of `text`.
fn js_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The first `max` UTF-16 units of `text`, a character that would be split
/// left out (pi's `sliceHead`).
fn slice_head(text: &str, max: usize) -> &str {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &text[..at];
        }
    }
    text
}

/// `text` cut to `max` UTF-16 units with an ellipsis (pi's `truncate`).
fn truncate(text: &str, max: usize) -> String {
    if js_len(text) <= max {
        return text.to_string();
    }
    if max <= 1 {
        return String::new();
    }
    format!("{}…", slice_head(text, max - 1).trim_end())
}

/// Names in the order pi's `localeCompare` gives them: ICU's root
/// collation (punctuation before digits before letters, case a tertiary
/// difference, a lowercase name before the same name capitalized).
fn by_name(a: &ListedServer, b: &ListedServer) -> std::cmp::Ordering {
    crate::config::model_resolver::collate(&a.name, &b.name)
}

/// The section's text (without its tags), None without servers.
pub fn render(mut servers: Vec<ListedServer>) -> Option<String> {
    if servers.is_empty() {
        return None;
    }
    servers.sort_by(by_name);
    let mut intro = "MCP servers whose tools are not declared to you.".to_string();
    if servers.iter().any(|s| s.how == "codemode") {
        intro.push_str(" Call the tools of `codemode` servers from codemode scripts.");
    }
    if servers.iter().any(|s| s.how == "tool_search") {
        intro.push_str(" Load the tools of `tool_search` servers with `tool_search`.");
    }
    let heads: Vec<String> =
        servers.iter().map(|s| format!("- {} ({})", super::naming::namespace(&s.name), s.how)).collect();
    let omitted = |count: usize| -> Vec<String> {
        if count == 0 {
            return Vec::new();
        }
        let plural = if count == 1 { "" } else { "s" };
        vec![format!("- … {count} more server{plural}; find their tools with searchTools()")]
    };
    // The intro, the first `kept` heads without summaries, and the closing line.
    let size = |kept: usize| -> usize {
        let mut lines = vec![intro.clone()];
        lines.extend(heads[..kept].iter().cloned());
        lines.extend(omitted(servers.len() - kept));
        js_len(&lines.join("\n"))
    };
    let mut kept = servers.len();
    while kept > 0 && size(kept) > MAX_SERVERS_SECTION_CHARS {
        kept -= 1;
    }
    // Each summary also takes a ": " separator; none when no server is kept.
    let per_server = MAX_SERVERS_SECTION_CHARS
        .saturating_sub(size(kept))
        .checked_div(kept)
        .map_or(0, |room| room.saturating_sub(2).min(MAX_SERVER_DESCRIPTION_CHARS));
    let mut lines = vec![intro.clone()];
    for (server, head) in servers.iter().zip(&heads).take(kept) {
        let summary = if per_server > 0 { truncate(&server.summary, per_server) } else { String::new() };
        lines.push(if summary.is_empty() { head.clone() } else { format!("{head}: {summary}") });
    }
    lines.extend(omitted(servers.len() - kept));
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, how: &'static str, summary: &str) -> ListedServer {
        ListedServer { name: name.into(), how, summary: summary.into() }
    }

    #[test]
    fn servers_are_sorted_and_long_summaries_shortened_as_pis() {
        let long = "word ".repeat(80);
        let text = render(vec![
            server("zeta", "codemode", "Last."),
            server("Alpha", "tool_search", &long),
            server("beta-docs", "codemode", ""),
        ])
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "MCP servers whose tools are not declared to you. Call the tools of `codemode` servers from codemode \
             scripts. Load the tools of `tool_search` servers with `tool_search`."
        );
        // 250 units: 249 of the text (its trailing space trimmed), then the ellipsis.
        let cut = format!("- mcp__Alpha (tool_search): {}…", long[..249].trim_end());
        assert_eq!(lines[1], cut);
        assert_eq!(lines[2], "- mcp__beta_docs (codemode)");
        assert_eq!(lines[3], "- mcp__zeta (codemode): Last.");
        assert_eq!(lines.len(), 4);
        assert_eq!(render(Vec::new()), None);
    }

    #[test]
    fn a_crowded_section_shares_its_room_and_counts_the_servers_left_out() {
        let many: Vec<ListedServer> =
            (0..200).map(|i| server(&format!("server{i:03}"), "codemode", "A server of many.")).collect();
        let text = render(many).unwrap();
        assert!(js_len(&text) <= MAX_SERVERS_SECTION_CHARS, "{}", js_len(&text));
        assert!(text.ends_with("more servers; find their tools with searchTools()"), "{text}");
        // No room is left for summaries once the heads alone fill the section.
        assert!(!text.contains("A server of many."), "{text}");
        let few: Vec<ListedServer> =
            (0..40).map(|i| server(&format!("s{i:02}"), "codemode", &"x".repeat(300))).collect();
        let text = render(few).unwrap();
        assert!(js_len(&text) <= MAX_SERVERS_SECTION_CHARS, "{}", js_len(&text));
        let first = text.lines().nth(1).unwrap();
        assert!(first.ends_with('…') && js_len(first) < 250, "{first}");
    }

    #[test]
    fn names_are_sorted_as_javascripts_locale_compare_sorts_them() {
        // Node 20's `[...names].sort((a, b) => a.localeCompare(b))` (ICU, en-US).
        let expected = [
            "_x",
            "-x",
            ".x",
            "a_b_c",
            "a-b-c",
            "a01",
            "a1",
            "alpha",
            "Alpha",
            "b_a",
            "b-a",
            "B-a",
            "b.a",
            "ba",
            "bA",
            "Beta",
            "beta_docs",
            "beta-docs",
            "beta.docs",
            "beta10",
            "beta2",
            "docs",
            "Docs",
            "DOCS",
            "my_server",
            "my-server",
            "my.server",
            "myserver",
            "MyServer",
            "X",
            "x_1",
            "x-1",
            "x.1",
            "x1",
            "zeta",
        ];
        let mut shuffled: Vec<ListedServer> = expected.iter().rev().map(|n| server(n, "codemode", "")).collect();
        shuffled.rotate_left(11);
        shuffled.sort_by(by_name);
        let names: Vec<&str> = shuffled.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, expected);
    }
}
