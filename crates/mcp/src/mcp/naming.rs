//! Names of MCP tools and server namespaces as the model and codemode scripts
//! see them (pi 1.6.0's scheme): `mcp__<server>__<tool>` with every character
//! but `[A-Za-z0-9_]` replaced by `_`, shortened to 64 characters, and given
//! an 8-digit SHA-256 suffix when too long or when two tools collide.

/// Provider tool names are limited to 64 characters.
const MAX_TOOL_NAME_LENGTH: usize = 64;

fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The model-facing name of `tool` of `server`; `taken` reports names another
/// MCP tool already has.
pub fn tool_name(server: &str, tool: &str, taken: impl Fn(&str) -> bool) -> String {
    let name = sanitize(&format!("mcp__{server}__{tool}"));
    if name.len() <= MAX_TOOL_NAME_LENGTH && !taken(&name) {
        return name;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.as_ref().iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}_{hash}", &name[..name.len().min(MAX_TOOL_NAME_LENGTH - hash.len() - 1)])
}

/// Names for all of one server's tools, in order: tools whose sanitized names
/// collide all get the hash suffix.
pub fn tool_names(server: &str, tools: &[&str], taken: impl Fn(&str) -> bool) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|t| sanitize(&format!("mcp__{server}__{t}"))).collect();
    tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let collides = plain.iter().enumerate().any(|(j, p)| j != i && *p == plain[i]);
            tool_name(server, t, |n| collides || taken(n))
        })
        .collect()
}

/// A server's namespace (`mcp__<server>` with `-` as `_`).
pub fn namespace(server: &str) -> String {
    format!("mcp__{}", server.replace('-', "_"))
}

/// Accepts `mcp__dev-radius`, `mcp__dev_radius`, `dev-radius` or `dev_radius`.
pub fn namespace_matches(query: &str, server: &str) -> bool {
    let q = query.strip_prefix("mcp__").unwrap_or(query).replace('-', "_");
    q == server.replace('-', "_")
}

/// A JavaScript identifier for a tool name (codemode's `tools.<name>`).
pub fn identifier(name: &str) -> String {
    let mut id: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    if id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}

/// One line for the system prompt: the first line of the description, else of
/// the server's instructions.
pub fn summary(description: Option<&str>, instructions: Option<&str>) -> String {
    let text = description.map(str::trim).filter(|d| !d.is_empty()).or(instructions.map(str::trim)).unwrap_or("");
    text.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_pi() {
        assert_eq!(tool_name("everything", "get-sum", |_| false), "mcp__everything__get_sum");
        assert_eq!(tool_name("dev-radius", "search", |_| false), "mcp__dev_radius__search");
        let long = "x".repeat(80);
        let name = tool_name("s", &long, |_| false);
        assert_eq!(name.len(), 64);
        assert!(name.starts_with("mcp__s__xxx"));
        // Collisions after sanitizing: both get a (different) hash suffix.
        let names = tool_names("s", &["a-b", "a_b", "c"], |_| false);
        assert_eq!(names[2], "mcp__s__c");
        assert!(names[0].starts_with("mcp__s__a_b_") && names[1].starts_with("mcp__s__a_b_"));
        assert_ne!(names[0], names[1]);
        assert_eq!(names[0].len(), "mcp__s__a_b_".len() + 8);
    }

    #[test]
    fn namespaces_and_summaries() {
        assert_eq!(namespace("dev-radius"), "mcp__dev_radius");
        for q in ["mcp__dev-radius", "mcp__dev_radius", "dev-radius", "dev_radius"] {
            assert!(namespace_matches(q, "dev-radius"), "{q}");
        }
        assert!(!namespace_matches("dev", "dev-radius"));
        assert_eq!(summary(None, Some("# Title\nmore")), "# Title");
        assert_eq!(summary(Some("  Docs  \nx"), Some("ignored")), "Docs");
        assert_eq!(identifier("mcp__a-b__c.d"), "mcp__a_b__c_d");
    }
}
