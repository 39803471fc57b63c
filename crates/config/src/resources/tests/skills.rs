//! Skill loading, validation, expansion and the system-prompt block.

use std::path::PathBuf;

use super::{Fx, names_of_skills};
use crate::resources::skills::name_problems;
use crate::resources::{
    DiagnosticKind, Expansion, Resources, SkillReader, expand_input, skills_prompt_section, skills_prompt_section_with,
};

#[test]
fn skill_fields() {
    let fx = Fx::new();
    fx.write(
        fx.agent.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text.\ndisable-model-invocation: true\nlicense: MIT\nmetadata:\n  a: b\n---\nBody\n",
    );
    let r = fx.discover(&fx.options());
    let s = &r.skills[0];
    assert_eq!(s.name, "pdf-tools");
    assert_eq!(s.description, "Extract text.");
    assert_eq!(s.path, fx.agent.join("skills/pdf-tools/SKILL.md"));
    assert_eq!(s.base_dir, fx.agent.join("skills/pdf-tools"));
    assert!(s.disable_model_invocation);
    assert!(r.diagnostics.is_empty());
}

#[test]
fn name_defaults_to_the_directory() {
    let fx = Fx::new();
    fx.write(fx.agent.join("skills/my-dir/SKILL.md"), "---\ndescription: d\n---\n");
    fx.write(fx.agent.join("skills/other/SKILL.md"), "---\nname: \"\"\ndescription: d\n---\n");
    assert_eq!(names_of_skills(&fx.discover(&fx.options())), ["my-dir", "other"]);
}

#[test]
fn invalid_names_warn_but_load() {
    let fx = Fx::new();
    fx.write(fx.agent.join("skills/Bad_Name/SKILL.md"), "---\ndescription: Bad name skill\n---\n");
    let (r, warnings) = Resources::discover(&fx.options());
    assert_eq!(names_of_skills(&r), ["Bad_Name"]);
    let path = fx.agent.join("skills/Bad_Name/SKILL.md");
    assert_eq!(
        warnings,
        [format!(
            "warning: name contains invalid characters (must be lowercase a-z, 0-9, hyphens only) ({})",
            path.display()
        )]
    );
    assert_eq!(r.diagnostics[0].kind, DiagnosticKind::Warning);
    assert_eq!(r.diagnostics[0].path, path);
}

#[test]
fn name_rules() {
    assert!(name_problems("pdf-tools-2").is_empty());
    assert_eq!(name_problems("-a"), ["name must not start or end with a hyphen"]);
    assert_eq!(name_problems("a--b"), ["name must not contain consecutive hyphens"]);
    assert_eq!(name_problems(&"a".repeat(65)), ["name exceeds 64 characters (65)"]);
    assert!(name_problems(&"a".repeat(64)).is_empty());
    assert_eq!(name_problems("Ab-").len(), 2);
    assert_eq!(name_problems("é").len(), 1);
}

#[test]
fn missing_description_skips_declared_skills_with_a_warning() {
    let fx = Fx::new();
    let nodesc = fx.write(fx.agent.join("skills/nodesc/SKILL.md"), "---\nname: nodesc\n---\nNo desc\n");
    let blank = fx.write(fx.agent.join("skills/blank/SKILL.md"), "---\ndescription: '  '\n---\n");
    let broken = fx.write(fx.agent.join("skills/broken/SKILL.md"), "---\ndescription: a: b\n---\n");
    let long =
        fx.write(fx.agent.join("skills/long/SKILL.md"), &format!("---\ndescription: {}\n---\n", "d".repeat(1025)));
    let (r, warnings) = Resources::discover(&fx.options());
    assert_eq!(names_of_skills(&r), ["long"]);
    let has =
        |path: &PathBuf, text: &str| warnings.iter().any(|w| w.contains(text) && w.contains(&*path.to_string_lossy()));
    assert!(has(&nodesc, "description is required"), "{warnings:?}");
    assert!(has(&blank, "description is required"), "{warnings:?}");
    assert!(has(&broken, "warning: "), "{warnings:?}");
    assert!(has(&long, "description exceeds 1024 characters (1025)"), "{warnings:?}");
    assert_eq!(warnings.len(), 4);
}

#[test]
fn loose_markdown_needs_a_description_and_is_skipped_silently() {
    let fx = Fx::new();
    fx.write(fx.agent.join("skills/rootskill.md"), "---\ndescription: Root md skill\n---\nRoot\n");
    fx.write(fx.agent.join("skills/plain.md"), "no front matter\n");
    fx.write(fx.agent.join("skills/broken.md"), "---\na: b: c\n---\n");
    let (r, warnings) = Resources::discover(&fx.options());
    // Named after the directory holding it, as pi does.
    assert_eq!(names_of_skills(&r), ["skills"]);
    assert_eq!(r.skills[0].path, fx.agent.join("skills/rootskill.md"));
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn skill_expansion_text() {
    let fx = Fx::new();
    let path = fx.write(
        fx.agent.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: d\n---\n\n# PDF tools\n\nRead `references/formats.md`.\n",
    );
    let r = fx.discover(&fx.options());
    let block = format!(
        "<skill name=\"pdf-tools\" location=\"{}\">\nReferences are relative to {}.\n\n# PDF tools\n\nRead `references/formats.md`.\n</skill>",
        path.display(),
        fx.agent.join("skills/pdf-tools").display()
    );
    let e = expand_input("/skill:pdf-tools", &r);
    assert_eq!(e.text, block);
    assert_eq!(e.expansion, Expansion::Skill { name: "pdf-tools".into() });
    // Arguments are trimmed and appended after a blank line, as typed (not split).
    assert_eq!(expand_input("/skill:pdf-tools  a  \"b\" ", &r).text, format!("{block}\n\na  \"b\""));
    assert_eq!(expand_input("/skill:pdf-tools   ", &r).text, block);
    // Only a space ends the name.
    for text in ["/skill:pdf-tools\tx", "/skill:other x", "/skill:", "/skill:pdf-tools\nx"] {
        assert_eq!(expand_input(text, &r).expansion, Expansion::None, "{text:?}");
    }
}

#[test]
fn skill_file_is_read_again_at_expansion() {
    let fx = Fx::new();
    let path = fx.write(fx.agent.join("skills/s/SKILL.md"), "---\ndescription: d\n---\nold\n");
    let r = fx.discover(&fx.options());
    std::fs::write(&path, "new body without front matter\n").unwrap();
    assert!(expand_input("/skill:s", &r).text.contains("\n\nnew body without front matter\n</skill>"));
    // Observed from pi 1.6.0: the text goes out as typed, with an `extension_error`
    // `{extensionPath: <file>, event: "skill_expansion", error: "ENOENT: …, open '<file>'"}`.
    std::fs::remove_file(&path).unwrap();
    let e = expand_input("/skill:s go", &r);
    assert_eq!(e.text, "/skill:s go");
    assert_eq!(e.expansion, Expansion::None);
    let err = e.error.unwrap();
    assert_eq!(err.path, path);
    assert_eq!(err.message, format!("ENOENT: no such file or directory, open '{}'", path.display()));
}

#[test]
fn a_failed_skill_still_reaches_template_expansion() {
    let fx = Fx::new();
    let path = fx.write(fx.agent.join("skills/s/SKILL.md"), "---\ndescription: d\n---\n");
    fx.write(fx.agent.join("prompts/skill:s.md"), "template $1");
    let r = fx.discover(&fx.options());
    // A skill wins over a template of the same command name.
    assert_eq!(expand_input("/skill:s x", &r).expansion, Expansion::Skill { name: "s".into() });
    std::fs::remove_file(&path).unwrap();
    let e = expand_input("/skill:s x", &r);
    assert_eq!((e.text.as_str(), e.expansion), ("template x", Expansion::Template { name: "skill:s".into() }));
    assert!(e.error.is_some());
}

#[test]
fn prompt_section() {
    let fx = Fx::new();
    fx.write(fx.agent.join("skills/a/SKILL.md"), "---\nname: a\ndescription: Use <b> & \"c\" 'd'\n---\n");
    fx.write(fx.agent.join("skills/hidden/SKILL.md"), "---\ndescription: h\ndisable-model-invocation: true\n---\n");
    let r = fx.discover(&fx.options());
    let expected = format!(
        "The following skills provide specialized instructions for specific tasks.\n\
         Use the read tool to load a skill's file when the task matches its description.\n\
         Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\
         \n\
         <available_skills>\n  <skill>\n    <name>a</name>\n    \
         <description>Use &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;</description>\n    \
         <location>{}</location>\n  </skill>\n</available_skills>",
        fx.agent.join("skills/a/SKILL.md").display()
    );
    assert_eq!(skills_prompt_section(&r.skills).unwrap(), expected);
    assert_eq!(r.skills_prompt_section().unwrap(), expected);
    let bash = skills_prompt_section_with(&r.skills, SkillReader::Bash).unwrap();
    assert!(bash.contains("\nUse bash to load a skill's file when the task matches its description.\n"));
    let indirect = skills_prompt_section_with(&r.skills, SkillReader::Indirect).unwrap();
    assert!(indirect.contains("\nLoad a skill's file when the task matches its description.\n"));
    // Only hidden skills, or none: no block.
    assert_eq!(skills_prompt_section(&r.skills[1..]), None);
    assert_eq!(skills_prompt_section(&[]), None);
    // `/skill:hidden` still expands.
    assert!(expand_input("/skill:hidden", &r).is_expanded());
}
