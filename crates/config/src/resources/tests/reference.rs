//! Behaviour observed from pi 1.6.0 (`node dist/cli.js --mode rpc`, a fake
//! OpenAI-compatible server recording the request bodies): the same file
//! trees are rebuilt here and the user texts pi sent to the model, its
//! `get_commands` order/`sourceInfo` and its skills prompt block are compared.
//! Argument splitting and substitution are compared with a table produced by
//! pi's own `parseCommandArgs` / `substituteArgs`.

use std::path::Path;

use serde_json::Value;

use super::Fx;
use crate::resources::{
    ResourceOptions, Resources, Scope, SourceKind, commands, expand_input, parse_command_args, skills_prompt_section,
    substitute_args,
};

#[test]
fn argument_table_from_pi() {
    let table: Value = serde_json::from_str(include_str!("pi_args_reference.json")).unwrap();
    for case in table["args"].as_array().unwrap() {
        let input = case[0].as_str().unwrap();
        let expected: Vec<String> = serde_json::from_value(case[1].clone()).unwrap();
        assert_eq!(parse_command_args(input), expected, "parse {input:?}");
    }
    for case in table["subst"].as_array().unwrap() {
        let template = case[0].as_str().unwrap();
        let args: Vec<String> = serde_json::from_value(case[1].clone()).unwrap();
        assert_eq!(substitute_args(template, &args), case[2].as_str().unwrap(), "substitute {template:?} {args:?}");
    }
}

fn w(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// One entry of `get_commands` as pi 1.6 sends it (without `origin`, always `top-level`).
fn listing(r: &Resources, root: &Path) -> Vec<String> {
    let rel = |p: &Path| p.strip_prefix(root).unwrap().display().to_string();
    let info = |i: &crate::resources::SourceInfo| {
        let base = i.base_dir.as_deref().map_or("-".to_string(), rel);
        format!("{} {} {} {}", rel(&i.path), i.source.as_str(), i.scope.as_str(), base)
    };
    let templates = r.templates.iter().map(|t| format!("{} | {} | {}", t.name, t.description, info(&t.source_info)));
    let skills = r.skills.iter().map(|s| format!("skill:{} | {} | {}", s.name, s.description, info(&s.source_info)));
    templates.chain(skills).collect()
}

/// The first fixture: user, project, `.agents` and command-line resources.
fn main_fixture(fx: &Fx) -> ResourceOptions {
    let (a, p, h) = (&fx.agent, &fx.cwd, &fx.home);
    w(
        a,
        "prompts/review.md",
        "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\n\
         Review the staged changes. Focus on ${1:-correctness, security, and error handling}.\n\
         All: $@ | $ARGUMENTS | second=$2 | rest=${@:2} | one=${@:1:1} | dflt=${@:-none}\n",
    );
    w(
        a,
        "prompts/nofm.md",
        "\n\n   This is a template without front matter whose first line is definitely longer than sixty characters\nBody $1.\n",
    );
    w(a, "prompts/dup.md", "User dup\n");
    w(p, ".pi/prompts/dup.md", "Project dup\n");
    w(
        a,
        "skills/pdf-tools/SKILL.md",
        "---\nname: pdf-tools\ndescription: Extract text and tables from PDF files.\n---\n\n# PDF tools\n\nRead `references/formats.md`.\n",
    );
    w(a, "skills/Bad_Name/SKILL.md", "---\ndescription: Bad name skill\n---\nBad body\n");
    w(a, "skills/nodesc/SKILL.md", "---\nname: nodesc\n---\nNo desc\n");
    w(
        h,
        ".agents/skills/home-skill/SKILL.md",
        "---\nname: home-skill\ndescription: From home agents\n---\nHome body\n",
    );
    w(
        p,
        ".pi/skills/proj-skill/SKILL.md",
        "---\nname: proj-skill\ndescription: Project skill\ndisable-model-invocation: true\n---\nProj body\n",
    );
    w(
        p,
        ".agents/skills/ag-skill/SKILL.md",
        "---\nname: ag-skill\ndescription: \"Project agents skill: quoted\"\n---\nAg body\n",
    );
    w(&fx.root, "cli/extra.md", "---\ndescription: CLI template\n---\nCLI body $1\n");
    let mut o = fx.options();
    o.extra_template_paths = vec![fx.root.join("cli/extra.md").display().to_string()];
    o
}

#[test]
fn main_fixture_listing_matches_pi() {
    let fx = Fx::new();
    let o = main_fixture(&fx);
    let r = fx.discover(&o);
    assert_eq!(
        listing(&r, &fx.root),
        [
            "dup | Project dup | proj/.pi/prompts/dup.md auto project proj/.pi",
            "nofm |    This is a template without front matter whose first line ... | agent/prompts/nofm.md auto user agent",
            "review | Review staged git changes | agent/prompts/review.md auto user agent",
            "extra | CLI template | cli/extra.md local temporary cli",
            "skill:proj-skill | Project skill | proj/.pi/skills/proj-skill/SKILL.md auto project proj/.pi",
            "skill:ag-skill | Project agents skill: quoted | proj/.agents/skills/ag-skill/SKILL.md auto project proj/.agents",
            "skill:Bad_Name | Bad name skill | agent/skills/Bad_Name/SKILL.md auto user agent",
            "skill:pdf-tools | Extract text and tables from PDF files. | agent/skills/pdf-tools/SKILL.md auto user agent",
            "skill:home-skill | From home agents | home/.agents/skills/home-skill/SKILL.md auto user home/.agents",
        ]
    );
    assert_eq!(commands(&r).len(), 9);
    // Not trusted (pi's RPC default for a project with `.pi` resources): project resources drop out.
    let mut untrusted = o.clone();
    untrusted.project_trusted = false;
    untrusted.extra_template_paths.clear();
    let names: Vec<String> = commands(&fx.discover(&untrusted)).into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["dup", "nofm", "review", "skill:Bad_Name", "skill:pdf-tools", "skill:home-skill"]);
}

#[test]
fn main_fixture_texts_sent_to_the_model_match_pi() {
    let fx = Fx::new();
    let r = fx.discover(&main_fixture(&fx));
    let sent = |text: &str| expand_input(text, &r).text;
    assert_eq!(
        sent("/review x"),
        "Review the staged changes. Focus on x.\nAll: x | x | second= | rest= | one=x | dflt=x"
    );
    assert_eq!(
        sent("/review \"API compatibility\" two 'three four' doesn't \"unclosed"),
        "Review the staged changes. Focus on API compatibility.\nAll: API compatibility two three four doesn't \"unclosed | \
         API compatibility two three four doesn't \"unclosed | second=two | rest=two three four doesn't \"unclosed | \
         one=API compatibility | dflt=API compatibility two three four doesn't \"unclosed"
    );
    assert_eq!(
        sent("/review"),
        "Review the staged changes. Focus on correctness, security, and error handling.\nAll:  |  | second= | rest= | one= | dflt=none"
    );
    assert_eq!(
        sent("/review\ta\tb"),
        "Review the staged changes. Focus on a.\nAll: a b | a b | second=b | rest=b | one=a | dflt=a b"
    );
    let skill = format!(
        "<skill name=\"pdf-tools\" location=\"{0}/agent/skills/pdf-tools/SKILL.md\">\n\
         References are relative to {0}/agent/skills/pdf-tools.\n\n# PDF tools\n\nRead `references/formats.md`.\n</skill>",
        fx.root.display()
    );
    assert_eq!(sent("/skill:pdf-tools extract report.pdf"), format!("{skill}\n\nextract report.pdf"));
    assert_eq!(sent("/skill:pdf-tools"), skill);
    assert_eq!(sent("/skill:pdf-tools  a  b "), format!("{skill}\n\na  b"));
    assert_eq!(sent("/skill:pdf-tools\tx"), "/skill:pdf-tools\tx");
    assert_eq!(sent("/dup"), "Project dup\n");
    assert_eq!(
        sent("/nofm a"),
        "\n\n   This is a template without front matter whose first line is definitely longer than sixty characters\nBody a.\n"
    );
    assert_eq!(sent("/unknown thing"), "/unknown thing");
}

#[test]
fn main_fixture_skills_block_matches_pi() {
    let fx = Fx::new();
    let r = fx.discover(&main_fixture(&fx));
    let skill = |name: &str, description: &str, location: &str| {
        format!(
            "  <skill>\n    <name>{name}</name>\n    <description>{description}</description>\n    \
             <location>{}/{location}</location>\n  </skill>\n",
            fx.root.display()
        )
    };
    // pi 1.6 sends this inside `<skills>\n…\n</skills>` in the system prompt.
    let expected = format!(
        "The following skills provide specialized instructions for specific tasks.\n\
         Use the read tool to load a skill's file when the task matches its description.\n\
         Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\n\
         <available_skills>\n{}{}{}{}</available_skills>",
        skill("ag-skill", "Project agents skill: quoted", "proj/.agents/skills/ag-skill/SKILL.md"),
        skill("Bad_Name", "Bad name skill", "agent/skills/Bad_Name/SKILL.md"),
        skill("pdf-tools", "Extract text and tables from PDF files.", "agent/skills/pdf-tools/SKILL.md"),
        skill("home-skill", "From home agents", "home/.agents/skills/home-skill/SKILL.md"),
    );
    assert_eq!(skills_prompt_section(&r.skills).unwrap(), expected);
}

#[test]
fn settings_yaml_and_loose_skill_fixture_matches_pi() {
    let fx = Fx::new();
    let a = &fx.agent;
    w(a, "my-prompts/top.md", "Top $1\n");
    w(a, "my-prompts/nested/inner.md", "Nested\n");
    w(a, "my-prompts/skipme.md", "Skip\n");
    w(a, "prompts/numdesc.md", "---\ndescription: 42\n---\n\nFirst body line\n");
    w(a, "prompts/badyaml.md", "---\ndescription: bad: yaml\n---\nBad yaml body\n");
    w(a, "prompts/flowhint.md", "---\nargument-hint: [focus]\n---\nFlow hint\n");
    w(a, "prompts/folded.md", "---\ndescription: >-\n  Folded\n  text\n---\nFolded body\n");
    w(a, "skills/rootskill.md", "---\ndescription: Root md skill\n---\nRoot md body\n");
    w(a, "skills/plain.md", "no front matter\n");
    w(a, "skills/sub/deep/SKILL.md", "---\nname: deep-one\ndescription: Deep\n---\nDeep body\n");
    w(a, "skills/sub/notroot.md", "---\ndescription: sub md not root\n---\nx\n");
    w(a, "extra-skills/s1/SKILL.md", "---\nname: s1\ndescription: Settings skill\n---\nS1\n");
    let mut o = fx.options();
    o.user_settings.prompts = vec!["my-prompts".into(), "!**/skipme.md".into()];
    o.user_settings.skills = vec!["extra-skills".into(), "~/nonexistent".into()];
    let r = fx.discover(&o);
    assert_eq!(
        listing(&r, &fx.root),
        [
            "inner | Nested | agent/my-prompts/nested/inner.md local user -",
            "top | Top $1 | agent/my-prompts/top.md local user -",
            "flowhint | Flow hint | agent/prompts/flowhint.md auto user agent",
            "folded | Folded text | agent/prompts/folded.md auto user agent",
            "numdesc | First body line | agent/prompts/numdesc.md auto user agent",
            "skill:s1 | Settings skill | agent/extra-skills/s1/SKILL.md local user -",
            "skill:skills | Root md skill | agent/skills/rootskill.md auto user agent",
            "skill:deep-one | Deep | agent/skills/sub/deep/SKILL.md auto user agent",
        ]
    );
    assert_eq!(r.skills[0].source_info.source, SourceKind::Local);
    assert_eq!(r.skills[0].source_info.scope, Scope::User);
}

#[test]
fn patterns_ignore_files_and_command_line_fixture_matches_pi() {
    let fx = Fx::new();
    let (a, root) = (&fx.agent, &fx.root);
    std::fs::create_dir_all(fx.cwd.join(".git")).unwrap();
    w(a, "prompts/aa.md", "AA\n");
    w(a, "prompts/ab.md", "AB\n");
    w(a, "prompts/b.md", "B\n");
    w(a, "prompts/.gitignore", "b.md\n");
    w(a, "prompts/c.md", "C\n");
    for n in ["alpha", "beta", "gamma"] {
        w(a, &format!("skills/{n}/SKILL.md"), &format!("---\ndescription: {n}\n---\n{n}\n"));
    }
    w(a, "skills/grp/.gitignore", "ign/\n");
    w(a, "skills/grp/ign/SKILL.md", "---\ndescription: ign\n---\n");
    w(a, "skills/grp/kept/SKILL.md", "---\ndescription: kept\n---\n");
    w(root, "cli/loose-skill.md", "---\nname: loose-one\ndescription: loose\n---\nLoose body\n");
    w(root, "cli/dir/.dot.md", "dot\n");
    w(root, "cli/dir/c.md", "CLI C collides\n");
    w(root, "cli/dir/sub/x.md", "nested\n");
    w(&fx.home, ".agents/skills/root.md", "---\ndescription: root\n---\n");
    w(&fx.home, ".agents/skills/g/l.md", "---\ndescription: l\n---\n");
    w(&fx.cwd, "sub/.agents/skills/s/SKILL.md", "---\ndescription: s\n---\n");
    let mut o = fx.options();
    o.cwd = fx.cwd.join("sub");
    o.user_settings.prompts = vec!["!prompts/a*.md".into(), "+prompts/ab.md".into()];
    o.user_settings.skills = vec!["!beta".into(), "-skills/gamma".into(), "../cli/loose-skill.md".into()];
    o.extra_template_paths = vec!["../../cli/dir".into(), "nope.md".into()];
    o.extra_skill_paths = vec!["missing-skill".into()];
    let r = fx.discover(&o);
    assert_eq!(
        listing(&r, root),
        [
            "ab | AB | agent/prompts/ab.md auto user agent",
            "c | C | agent/prompts/c.md auto user agent",
            ".dot | dot | cli/dir/.dot.md local temporary cli/dir",
            "skill:s | s | proj/sub/.agents/skills/s/SKILL.md auto project proj/sub/.agents",
            "skill:loose-one | loose | cli/loose-skill.md local user -",
            "skill:alpha | alpha | agent/skills/alpha/SKILL.md auto user agent",
            "skill:kept | kept | agent/skills/grp/kept/SKILL.md auto user agent",
            "skill:g | l | home/.agents/skills/g/l.md auto user home/.agents",
        ]
    );
}

#[test]
fn front_matter_table_from_pi() {
    use crate::resources::frontmatter::{FmValue, parse};
    let table: Value = serde_json::from_str(include_str!("pi_frontmatter_reference.json")).unwrap();
    let shape = |v: Option<&FmValue>| match v {
        None => Value::from("absent"),
        Some(FmValue::Str(s)) => serde_json::json!({ "str": s }),
        Some(FmValue::Bool(b)) => serde_json::json!({ "bool": b }),
        Some(FmValue::Other) => Value::from("other"),
    };
    let mut mismatches = Vec::new();
    for case in table["cases"].as_array().unwrap() {
        let input = case[0].as_str().unwrap();
        let got = match parse(input) {
            Ok(fm) => serde_json::json!({
                "ok": true,
                "description": shape(fm.fields.get("description")),
                "dmi": shape(fm.fields.get("disable-model-invocation")),
                "body": fm.body,
            }),
            Err(_) => serde_json::json!({ "ok": false }),
        };
        if got != case[1] {
            mismatches.push(format!("{input:?}: pi {} / ours {got}", case[1]));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
