//! HTML escaping and safe markdown rendering for the export page.
//!
//! Markdown comes from the model (assistant text, summaries) and from
//! extensions (custom messages), so it is treated as untrusted: raw HTML in
//! it is shown as text, links keep only harmless schemes, and markdown
//! images become plain links so the page never fetches anything.

use maud::Render;
use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Text from the session, escaped for HTML element content and
/// double-quoted attribute values when put in a template: `& < > "` by
/// `html-escape`, and the apostrophe as `&#39;`, the page's spelling since its
/// first version (html-escape writes `&#x27;`; the golden pages keep the bytes).
pub(super) struct Esc<'t>(pub &'t str);

impl Render for Esc<'_> {
    fn render_to(&self, out: &mut String) {
        let mut pieces = self.0.split('\'');
        if let Some(first) = pieces.next() {
            html_escape::encode_double_quoted_attribute_to_string(first, out);
        }
        for piece in pieces {
            out.push_str("&#39;");
            html_escape::encode_double_quoted_attribute_to_string(piece, out);
        }
    }
}

/// True when a link target is safe to keep: no scheme (relative, fragment)
/// or one of http, https, mailto.
fn safe_link(url: &str) -> bool {
    let cleaned: String = url.trim().chars().filter(|c| !c.is_control()).collect();
    match cleaned.find(':') {
        None => true,
        Some(colon) => {
            let scheme = &cleaned[..colon];
            // A ':' after a '/', '?' or '#' is not a scheme separator.
            if scheme.contains(['/', '?', '#']) {
                return true;
            }
            matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https" | "mailto")
        }
    }
}

/// How a link or image start was rewritten, to rewrite its end the same way.
enum Wrapper {
    Link,
    ImageAsLink,
    Dropped,
}

/// Render markdown to HTML with raw HTML escaped, unsafe links unwrapped and
/// images turned into links labelled `[image: alt]`.
pub(super) fn render_markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut stack: Vec<Wrapper> = Vec::new();
    let mut events: Vec<Event<'_>> = Vec::new();
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                if safe_link(&dest_url) {
                    stack.push(Wrapper::Link);
                    events.push(Event::Start(Tag::Link { link_type, dest_url, title, id }));
                } else {
                    stack.push(Wrapper::Dropped);
                }
            }
            Event::Start(Tag::Image { dest_url, title, id, .. }) => {
                if safe_link(&dest_url) {
                    stack.push(Wrapper::ImageAsLink);
                    events.push(Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url, title, id }));
                } else {
                    stack.push(Wrapper::Dropped);
                }
                events.push(Event::Text(CowStr::Borrowed("[image: ")));
            }
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                let image = matches!(event, Event::End(TagEnd::Image));
                if image {
                    events.push(Event::Text(CowStr::Borrowed("]")));
                }
                match stack.pop() {
                    Some(Wrapper::Link) | Some(Wrapper::ImageAsLink) => events.push(Event::End(TagEnd::Link)),
                    Some(Wrapper::Dropped) | None => {}
                }
            }
            other => events.push(other),
        }
    }
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(Esc(r#"<a href="x">&'"#).render().into_string(), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(Esc("'a''b'").render().into_string(), "&#39;a&#39;&#39;b&#39;");
        assert_eq!(Esc("plain é").render().into_string(), "plain é");
        assert_eq!(Esc("").render().into_string(), "");
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = render_markdown("hello <script>alert(1)</script> & <b>bold</b>\n\n<div onclick=x>block</div>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("&amp;"), "{html}");
    }

    #[test]
    fn markdown_structure_is_rendered() {
        let html =
            render_markdown("# Title\n\n* one\n* two\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |");
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(html.contains("<pre><code class=\"language-rust\">fn main() {}"), "{html}");
        assert!(html.contains("<table>"), "{html}");
    }

    #[test]
    fn unsafe_links_are_unwrapped_and_images_never_load() {
        let html = render_markdown(
            "[x](javascript:alert(1)) [ok](https://example.org/a) ![pic](http://example.org/p.png) ![d](data:image/png;base64,AAA)",
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("data:image"), "{html}");
        assert!(html.contains(r#"<a href="https://example.org/a">ok</a>"#), "{html}");
        assert!(html.contains(r#"<a href="http://example.org/p.png">[image: pic]</a>"#), "{html}");
        assert!(html.contains("[image: d]"), "{html}");
    }

    #[test]
    fn link_safety_rules() {
        assert!(safe_link("#frag"));
        assert!(safe_link("docs/a.md"));
        assert!(safe_link("./a:b"));
        assert!(safe_link("MAILTO:a@b.c"));
        assert!(!safe_link(" JavaScript:x"));
        assert!(!safe_link("java\u{0}script:x"));
        assert!(!safe_link("vbscript:x"));
        assert!(!safe_link("file:///etc/passwd"));
    }
}
