//! Template loading (front matter, description fallback) and expansion.

use super::Fx;
use crate::resources::{Expansion, expand_input, frontmatter};

fn one_template(fx: &Fx, file: &str, content: &str) -> crate::resources::Template {
    fx.write(fx.agent.join("prompts").join(file), content);
    let r = fx.discover(&fx.options());
    assert_eq!(r.templates.len(), 1, "{:?}", r.diagnostics);
    r.templates.into_iter().next().unwrap()
}

#[test]
fn front_matter_fields_and_body() {
    let fx = Fx::new();
    let t = one_template(
        &fx,
        "review.md",
        "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\n\nReview. Focus on ${1:-x}.\n\n",
    );
    assert_eq!(t.name, "review");
    assert_eq!(t.description, "Review staged git changes");
    assert_eq!(t.argument_hint.as_deref(), Some("[focus]"));
    assert_eq!(t.content, "Review. Focus on ${1:-x}.");
    assert_eq!(t.path, fx.agent.join("prompts/review.md"));
}

#[test]
fn description_falls_back_to_first_non_empty_line() {
    let fx = Fx::new();
    // No front matter: the body is kept as written (not trimmed) and leading spaces stay in the description.
    let t = one_template(&fx, "a.md", "\n \n   First line\nSecond\n");
    assert_eq!(t.description, "   First line");
    assert_eq!(t.content, "\n \n   First line\nSecond\n");
    assert_eq!(t.argument_hint, None);
}

#[test]
fn long_first_line_is_cut_at_sixty_units() {
    let fx = Fx::new();
    let line = "This is a template without front matter whose first line is definitely longer than sixty characters";
    let t = one_template(&fx, "a.md", &format!("{line}\n"));
    assert_eq!(t.description, format!("{}...", &line[..60]));
    let fx = Fx::new();
    let exact = "x".repeat(60);
    assert_eq!(one_template(&fx, "a.md", &exact).description, exact);
    // Counted in UTF-16 units, as JavaScript does: 30 emoji are 60 units.
    let fx = Fx::new();
    let emoji = "😀".repeat(31);
    assert_eq!(one_template(&fx, "a.md", &emoji).description, format!("{}...", "😀".repeat(30)));
}

#[test]
fn non_string_or_empty_description_falls_back() {
    let fx = Fx::new();
    assert_eq!(
        one_template(&fx, "a.md", "---\ndescription: 42\n---\n\nFirst body line\n").description,
        "First body line"
    );
    let fx = Fx::new();
    assert_eq!(one_template(&fx, "a.md", "---\ndescription: \"\"\n---\nBody\n").description, "Body");
    let fx = Fx::new();
    assert_eq!(one_template(&fx, "a.md", "---\ndescription:\n---\n").description, "");
    // A flow sequence is not a string: no argument hint.
    let fx = Fx::new();
    assert_eq!(one_template(&fx, "a.md", "---\nargument-hint: [focus]\n---\nx\n").argument_hint, None);
}

#[test]
fn folded_and_quoted_yaml_and_crlf() {
    let fx = Fx::new();
    let t =
        one_template(&fx, "a.md", "\u{feff}---\r\ndescription: >-\r\n  Folded\r\n  text\r\n---\r\nLine1\r\nLine2\r\n");
    assert_eq!(t.description, "Folded text");
    assert_eq!(t.content, "Line1\nLine2");
}

#[test]
fn yaml_errors_skip_the_template_with_a_warning() {
    let fx = Fx::new();
    fx.write(fx.agent.join("prompts/bad.md"), "---\ndescription: bad: yaml\n---\nBody\n");
    fx.write(fx.agent.join("prompts/dup.md"), "---\na: 1\na: 2\n---\nBody\n");
    let (r, warnings) = crate::resources::Resources::discover(&fx.options());
    assert!(r.templates.is_empty());
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("warning: ") && warnings[0].ends_with("bad.md)"), "{warnings:?}");
}

#[test]
fn front_matter_edge_cases() {
    let fm = frontmatter::parse("no front matter\n").unwrap();
    assert!(fm.fields.is_empty());
    assert_eq!(fm.body, "no front matter\n");
    // Unterminated: the whole text is the body.
    assert_eq!(frontmatter::parse("---\ndescription: x\nbody").unwrap().body, "---\ndescription: x\nbody");
    // Empty block, and a closing line with more dashes.
    assert_eq!(frontmatter::parse("---\n---\n body \n").unwrap().body, "body");
    assert_eq!(frontmatter::parse("---\na: b\n----x\nrest").unwrap().body, "-x\nrest");
    // A scalar document is not a map: no fields, no error.
    assert!(frontmatter::parse("---\njust text\n---\nb").unwrap().fields.is_empty());
    let fm = frontmatter::parse("---\ndisable-model-invocation: true\nname: 'n'\n---\n").unwrap();
    assert!(fm.is_true("disable-model-invocation"));
    assert_eq!(fm.str("name"), Some("n"));
}

#[test]
fn expansion_of_templates() {
    let fx = Fx::new();
    fx.write(fx.agent.join("prompts/review.md"), "---\ndescription: d\n---\nFocus on ${1:-everything}; all: $@.\n");
    let r = fx.discover(&fx.options());
    let e = expand_input("/review", &r);
    assert_eq!(e.text, "Focus on everything; all: .");
    assert_eq!(e.expansion, Expansion::Template { name: "review".into() });
    assert!(e.is_expanded() && e.error.is_none());
    assert_eq!(expand_input("/review  \"API compat\"  b ", &r).text, "Focus on API compat; all: API compat b.");
    // Any whitespace ends the name; newlines in arguments separate them.
    assert_eq!(expand_input("/review\ta\nb", &r).text, "Focus on a; all: a b.");
    // Not templates: unknown names, a space after the slash, text before the slash, a longer name.
    for text in ["/unknown thing", "/ review", "please /review", "/reviewer", "/", "review"] {
        let e = expand_input(text, &r);
        assert_eq!((e.text.as_str(), e.expansion), (text, Expansion::None));
    }
}
