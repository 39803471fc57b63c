//! Where templates and skills are found, precedence, flags, settings
//! patterns, project trust and the `get_commands` listing.

use std::fs;

use super::{Fx, names_of_skills, names_of_templates, strings};
use crate::op::{CommandLocation, CommandSource};
use crate::resources::trust::{has_trust_requiring_resources, project_trusted};
use crate::resources::{
    DiagnosticKind, ResourceOptions, ResourceSettings, Resources, Scope, SourceKind, commands, expand_input,
};

#[test]
fn user_and_project_prompt_dirs_load_direct_md_children_only() {
    let fx = Fx::new();
    fx.write(fx.agent.join("prompts/b.md"), "B");
    fx.write(fx.agent.join("prompts/a.md"), "A");
    fx.write(fx.agent.join("prompts/nested/deep.md"), "no");
    fx.write(fx.agent.join("prompts/.hidden.md"), "no");
    fx.write(fx.agent.join("prompts/notes.txt"), "no");
    fx.write(fx.cwd.join(".pi/prompts/p.md"), "P");
    let r = fx.discover(&fx.options());
    assert_eq!(names_of_templates(&r), ["p", "a", "b"]);
    let p = &r.templates[0].source_info;
    assert_eq!((p.source, p.scope, p.base_dir.clone()), (SourceKind::Auto, Scope::Project, Some(fx.cwd.join(".pi"))));
    let a = &r.templates[1].source_info;
    assert_eq!((a.source, a.scope, a.base_dir.clone()), (SourceKind::Auto, Scope::User, Some(fx.agent.clone())));
}

#[test]
fn project_wins_over_user_and_reports_a_collision() {
    let fx = Fx::new();
    fx.write(fx.agent.join("prompts/dup.md"), "User dup\n");
    let project = fx.write(fx.cwd.join(".pi/prompts/dup.md"), "Project dup\n");
    fx.skill(fx.agent.join("skills/s"), "s", "user");
    fx.skill(fx.cwd.join(".pi/skills/s"), "s", "project");
    let (r, warnings) = Resources::discover(&fx.options());
    assert_eq!(r.templates[0].path, project);
    assert_eq!(expand_input("/dup", &r).text, "Project dup\n");
    assert_eq!(r.skills[0].description, "project");
    let collisions: Vec<_> = r.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::Collision).collect();
    assert_eq!(collisions.len(), 2);
    assert_eq!(collisions[0].message, "name \"s\" collision");
    assert_eq!(collisions[0].path, fx.agent.join("skills/s/SKILL.md"));
    assert_eq!(collisions[1].message, "name \"/dup\" collision");
    assert!(warnings[1].starts_with("collision: name \"/dup\" collision ("), "{warnings:?}");
}

#[test]
fn settings_entries_resolve_from_their_base_and_recurse() {
    let fx = Fx::new();
    fx.write(fx.agent.join("my-prompts/top.md"), "Top $1\n");
    fx.write(fx.agent.join("my-prompts/nested/inner.md"), "Nested\n");
    fx.write(fx.agent.join("my-prompts/skipme.md"), "Skip\n");
    fx.write(fx.agent.join("my-prompts/.dot/x.md"), "no\n");
    fx.write(fx.agent.join("my-prompts/node_modules/y.md"), "no\n");
    fx.write(fx.cwd.join(".pi/shared/proj.md"), "Proj\n");
    fx.write(fx.home.join("single.md"), "Single\n");
    fx.skill(fx.agent.join("extra-skills/s1"), "s1", "Settings skill");
    fx.write(fx.agent.join("prompts/auto.md"), "Auto\n");
    let mut o = fx.options();
    o.user_settings = ResourceSettings {
        prompts: strings(&["my-prompts", "!**/skipme.md", " ~/single.md ", "missing-dir"]),
        skills: strings(&["extra-skills"]),
        ..Default::default()
    };
    o.project_settings.prompts = strings(&["shared"]);
    let (r, warnings) = Resources::discover(&o);
    // project settings, user settings (directory walk order, then the file), user auto.
    assert_eq!(names_of_templates(&r), ["proj", "inner", "top", "single", "auto"]);
    assert_eq!(names_of_skills(&r), ["s1"]);
    let s = &r.skills[0].source_info;
    assert_eq!((s.source, s.scope, s.base_dir.clone()), (SourceKind::Local, Scope::User, None));
    assert_eq!(r.templates[0].source_info.scope, Scope::Project);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn override_patterns_apply_to_auto_discovered_files() {
    let fx = Fx::new();
    for n in ["a", "b", "c"] {
        fx.write(fx.agent.join(format!("prompts/{n}.md")), n);
        fx.skill(fx.agent.join(format!("skills/{n}")), n, n);
    }
    let mut o = fx.options();
    o.user_settings.prompts = strings(&["!prompts/*.md", "+prompts/b.md"]);
    // Skill directories match by name; `-` removes exactly.
    o.user_settings.skills = strings(&["!a", "-skills/c"]);
    let r = fx.discover(&o);
    assert_eq!(names_of_templates(&r), ["b"]);
    assert_eq!(names_of_skills(&r), ["b"]);
    // Glob includes narrow the plain entries.
    fx.write(fx.agent.join("more/x1.md"), "x1");
    fx.write(fx.agent.join("more/y1.md"), "y1");
    let mut o = fx.options();
    o.user_settings.prompts = strings(&["more", "more/x*.md"]);
    assert_eq!(names_of_templates(&fx.discover(&o)), ["x1", "a", "b", "c"]);
}

#[test]
fn skills_dirs_recurse_and_honour_ignore_files() {
    let fx = Fx::new();
    fx.skill(fx.agent.join("skills/sub/deep"), "deep-one", "Deep");
    fx.write(fx.agent.join("skills/sub/notroot.md"), "---\ndescription: not at root\n---\n");
    // A directory with SKILL.md is not searched further.
    fx.skill(fx.agent.join("skills/outer"), "outer", "o");
    fx.skill(fx.agent.join("skills/outer/inner"), "inner", "i");
    fx.skill(fx.agent.join("skills/ignored"), "ignored", "i");
    fx.skill(fx.agent.join("skills/.hidden"), "hidden", "h");
    fx.skill(fx.agent.join("skills/node_modules/pkg"), "pkg", "p");
    fx.skill(fx.agent.join("skills/sub/skipped"), "skipped", "s");
    fx.write(fx.agent.join("skills/.gitignore"), "ignored/\n");
    fx.write(fx.agent.join("skills/sub/.ignore"), "/skipped\n");
    assert_eq!(names_of_skills(&fx.discover(&fx.options())), ["outer", "deep-one"]);
}

#[test]
fn agents_skill_dirs() {
    let fx = Fx::new();
    // `.agents/skills`: loose `.md` files count below the root, not in it.
    fx.skill(fx.home.join(".agents/skills/home-skill"), "home-skill", "From home");
    fx.write(fx.home.join(".agents/skills/root.md"), "---\ndescription: root\n---\n");
    fx.write(fx.home.join(".agents/skills/group/loose.md"), "---\nname: loose\ndescription: l\n---\n");
    // Project: cwd and ancestors up to the git root.
    let sub = fx.cwd.join("pkg/sub");
    fs::create_dir_all(fx.cwd.join(".git")).unwrap();
    fx.skill(sub.join(".agents/skills/in-sub"), "in-sub", "s");
    fx.skill(fx.cwd.join(".agents/skills/in-repo"), "in-repo", "r");
    fx.skill(fx.root.join(".agents/skills/above-repo"), "above-repo", "a");
    let mut o = fx.options();
    o.cwd = sub.clone();
    let r = fx.discover(&o);
    // Entries in name order: `group/loose.md` before `home-skill/`.
    assert_eq!(names_of_skills(&r), ["in-sub", "in-repo", "loose", "home-skill"]);
    let i = &r.skills[0].source_info;
    assert_eq!((i.scope, i.base_dir.clone()), (Scope::Project, Some(sub.join(".agents"))));
    let h = &r.skills[3].source_info;
    assert_eq!((h.scope, h.base_dir.clone()), (Scope::User, Some(fx.home.join(".agents"))));
    // Without a git root the walk goes up to `/` and finds the one above.
    fs::remove_dir(fx.cwd.join(".git")).unwrap();
    assert!(names_of_skills(&fx.discover(&o)).contains(&"above-repo"));
}

#[test]
fn command_line_paths_come_last_and_survive_no_flags() {
    let fx = Fx::new();
    fx.write(fx.agent.join("prompts/user.md"), "u");
    fx.skill(fx.agent.join("skills/us"), "us", "u");
    let extra = fx.write(fx.root.join("cli/extra.md"), "---\ndescription: CLI template\n---\nCLI body $1\n");
    fx.write(fx.root.join("cli/dir/.dot.md"), "dot");
    fx.write(fx.root.join("cli/dir/nested/n.md"), "no");
    fx.write(fx.root.join("cli/dir/notes.txt"), "no");
    fx.write(fx.root.join("cli/user.md"), "loses to the user template");
    fx.skill(fx.root.join("cli/skills/cs"), "cs", "c");
    fx.write(fx.root.join("cli/one-skill.md"), "---\nname: one\ndescription: o\n---\n");
    let mut o = fx.options();
    o.cwd = fx.root.clone();
    o.extra_template_paths = strings(&["cli/extra.md", "cli/dir", "cli/user.md"]);
    o.extra_skill_paths = strings(&["cli/skills", "cli/one-skill.md"]);
    let r = fx.discover(&o);
    assert_eq!(names_of_templates(&r), ["user", "extra", ".dot"]);
    assert_eq!(names_of_skills(&r), ["us", "cs", "one"]);
    let e = &r.templates[1].source_info;
    assert_eq!(
        (e.source, e.scope, e.base_dir.clone()),
        (SourceKind::Local, Scope::Temporary, Some(fx.root.join("cli")))
    );
    assert_eq!(r.templates[1].path, extra);
    let cs = &r.skills[1].source_info;
    assert_eq!((cs.scope, cs.base_dir.clone()), (Scope::Temporary, Some(fx.root.join("cli/skills/cs"))));
    o.no_templates = true;
    o.no_skills = true;
    let r = fx.discover(&o);
    assert_eq!(names_of_templates(&r), ["extra", ".dot", "user"]);
    assert_eq!(names_of_skills(&r), ["cs", "one"]);
    o.extra_template_paths.clear();
    o.extra_skill_paths.clear();
    let r = fx.discover(&o);
    assert!(r.templates.is_empty() && r.skills.is_empty());
}

#[test]
fn missing_and_wrong_command_line_paths() {
    let fx = Fx::new();
    fx.write(fx.cwd.join("notes.txt"), "x");
    let mut o = fx.options();
    o.extra_template_paths = strings(&["nope.md", "notes.txt"]);
    o.extra_skill_paths = strings(&["nope-skill", "notes.txt"]);
    let (r, warnings) = Resources::discover(&o);
    assert!(r.templates.is_empty() && r.skills.is_empty());
    let p = |n: &str| fx.cwd.join(n).display().to_string();
    assert_eq!(
        warnings,
        [
            format!("warning: skill path does not exist ({})", p("nope-skill")),
            format!("warning: skill path is not a markdown file ({})", p("notes.txt")),
            format!("error: Prompt template path does not exist ({})", p("nope.md")),
        ]
    );
}

#[test]
fn the_same_file_twice_loads_once() {
    let fx = Fx::new();
    fx.skill(fx.agent.join("skills/s"), "s", "d");
    fx.write(fx.agent.join("prompts/t.md"), "t");
    std::os::unix::fs::symlink(fx.agent.join("skills"), fx.root.join("link")).unwrap();
    let mut o = fx.options();
    o.extra_skill_paths = vec![fx.root.join("link/s").display().to_string()];
    o.extra_template_paths = vec![fx.agent.join("prompts").display().to_string()];
    let (r, warnings) = Resources::discover(&o);
    assert_eq!((r.skills.len(), r.templates.len()), (1, 1));
    assert_eq!(r.skills[0].source_info.source, SourceKind::Auto);
    // The template directory was named again: its file collides with itself by name.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn untrusted_projects_load_no_project_resources() {
    let fx = Fx::new();
    fx.write(fx.cwd.join(".pi/prompts/p.md"), "p");
    fx.skill(fx.cwd.join(".pi/skills/ps"), "ps", "p");
    fx.skill(fx.cwd.join(".agents/skills/as"), "as", "a");
    fx.write(fx.cwd.join(".pi/shared/s.md"), "s");
    fx.skill(fx.home.join(".agents/skills/hs"), "hs", "h");
    let mut o = fx.options();
    o.project_settings.prompts = strings(&["shared"]);
    assert_eq!(names_of_skills(&fx.discover(&o)), ["ps", "as", "hs"]);
    o.project_trusted = false;
    let r = fx.discover(&o);
    assert!(r.templates.is_empty());
    assert_eq!(names_of_skills(&r), ["hs"]);
}

#[test]
fn project_trust_decision() {
    let fx = Fx::new();
    let decide = |o| project_trusted(&fx.agent, &fx.cwd, &fx.home, o).unwrap();
    // Nothing that needs trust: trusted.
    assert!(!has_trust_requiring_resources(&fx.cwd, &fx.home));
    assert!(decide(None));
    // `~/.agents/skills` never needs trust, even when the cwd is the home.
    fx.skill(fx.home.join(".agents/skills/h"), "h", "h");
    assert!(!has_trust_requiring_resources(&fx.home, &fx.home));
    fx.write(fx.cwd.join(".pi/prompts/p.md"), "p");
    assert!(has_trust_requiring_resources(&fx.cwd, &fx.home));
    assert!(!decide(None));
    assert!(decide(Some(true)));
    fx.write(fx.agent.join("settings.json"), r#"{"defaultProjectTrust":"always"}"#);
    assert!(decide(None));
    // The nearest trust.json entry wins over the default.
    fx.write(fx.agent.join("trust.json"), &format!(r#"{{"{}": false}}"#, fx.root.display()));
    assert!(!decide(None));
    fx.write(
        fx.agent.join("trust.json"),
        &format!(r#"{{"{}": false, "{}": true}}"#, fx.root.display(), fx.cwd.display()),
    );
    assert!(decide(None));
    assert!(!decide(Some(false)));
    fx.write(fx.agent.join("trust.json"), r#"{"/x": 1}"#);
    assert!(project_trusted(&fx.agent, &fx.cwd, &fx.home, None).is_err());
    // An `.agents/skills` in an ancestor needs trust too.
    let fx = Fx::new();
    fx.skill(fx.root.join(".agents/skills/a"), "a", "a");
    assert!(has_trust_requiring_resources(&fx.cwd, &fx.home));
}

#[test]
fn options_from_the_settings_files() {
    let fx = Fx::new();
    fx.write(
        fx.agent.join("settings.json"),
        r#"{"prompts":["p", 3],"skills":{"customDirectories":["s"],"enableSkillCommands":false}}"#,
    );
    fx.write(fx.cwd.join(".pi/settings.json"), r#"{"skills":["ps"]}"#);
    let (o, warning) = ResourceOptions::new(&fx.agent, &fx.cwd, None);
    assert_eq!(warning, None);
    assert_eq!(o.user_settings.prompts, ["p"]);
    assert_eq!(o.user_settings.skills, ["s"]);
    assert!(!o.enable_skill_commands);
    // The project has a settings file, so it needs trust it does not have.
    assert!(!o.project_trusted);
    assert_eq!(o.project_settings, ResourceSettings::default());
    let (o, _) = ResourceOptions::new(&fx.agent, &fx.cwd, Some(true));
    assert!(o.project_trusted);
    assert_eq!(o.project_settings.skills, ["ps"]);
    assert_eq!(ResourceSettings::read(&fx.root.join("missing.json")), ResourceSettings::default());
}

#[test]
fn listing_shape_and_order() {
    let fx = Fx::new();
    fx.write(fx.cwd.join(".pi/prompts/fix-tests.md"), "---\ndescription: Fix failing tests\n---\nFix.\n");
    fx.write(fx.agent.join("prompts/review.md"), "Review\n");
    fx.write(fx.agent.join("prompts/empty.md"), "");
    fx.write(fx.root.join("extra.md"), "Extra\n");
    fx.skill(fx.agent.join("skills/brave-search"), "brave-search", "Web search via Brave API");
    let mut o = fx.options();
    o.extra_template_paths = vec![fx.root.join("extra.md").display().to_string()];
    o.enable_skill_commands = false;
    let r = fx.discover(&o);
    let list = commands(&r);
    let view: Vec<_> = list
        .iter()
        .map(|c| (c.name.as_str(), c.description.as_deref(), c.source, c.location, c.path.clone().unwrap()))
        .collect();
    let path = |p: std::path::PathBuf| p.display().to_string();
    assert_eq!(
        view,
        [
            (
                "fix-tests",
                Some("Fix failing tests"),
                CommandSource::Prompt,
                Some(CommandLocation::Project),
                path(fx.cwd.join(".pi/prompts/fix-tests.md"))
            ),
            (
                "empty",
                Some(""),
                CommandSource::Prompt,
                Some(CommandLocation::User),
                path(fx.agent.join("prompts/empty.md"))
            ),
            (
                "review",
                Some("Review"),
                CommandSource::Prompt,
                Some(CommandLocation::User),
                path(fx.agent.join("prompts/review.md"))
            ),
            (
                "extra",
                Some("Extra"),
                CommandSource::Prompt,
                Some(CommandLocation::Path),
                path(fx.root.join("extra.md"))
            ),
            (
                "skill:brave-search",
                Some("Web search via Brave API"),
                CommandSource::Skill,
                Some(CommandLocation::User),
                path(fx.agent.join("skills/brave-search/SKILL.md"))
            ),
        ]
    );
    assert!(!r.enable_skill_commands);
}
