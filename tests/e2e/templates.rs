//! Prompt templates and skills end to end: `/template args` and
//! `/skill:name args` expansion in `prompt`, `steer` and `follow_up` (checked
//! in what the fake model receives), the skills block of the system prompt,
//! `get_commands` (extension commands, then templates, then skills) and the
//! command-line flags.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extensions::{demo_path, user_texts};
use crate::harness::Sandbox;

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A user template `fix`, a user skill `review`.
fn with_resources(sb: &Sandbox) {
    write(
        &sb.agent_dir.path().join("prompts/fix.md"),
        "---\ndescription: Fix something\n---\nFix $1 carefully. Context: $@",
    );
    write(
        &sb.agent_dir.path().join("skills/review/SKILL.md"),
        "---\nname: review\ndescription: Review code changes\n---\n# Review\nRead the diff first.\n",
    );
}

fn system_prompt(sb: &Sandbox, n: usize) -> String {
    let req = &sb.server().requests()[n];
    req.body["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn prompt_expands_templates_and_skills() {
    let sb = Sandbox::with_server().await;
    with_resources(&sb);
    let mut pi = sb.spawn(&["--no-session"]);
    pi.call("t", json!({"type": "prompt", "message": "/fix tests now"})).await;
    pi.until_type("agent_settled").await;
    assert_eq!(user_texts(&sb, 0), ["Fix tests carefully. Context: tests now"]);

    pi.call("s", json!({"type": "prompt", "message": "/skill:review look at main.rs"})).await;
    pi.until_type("agent_settled").await;
    let skill_file = sb.agent_dir.path().join("skills/review/SKILL.md");
    let expected = format!(
        "<skill name=\"review\" location=\"{}\">\nReferences are relative to {}.\n\n# Review\nRead the diff first.\n</skill>\n\nlook at main.rs",
        skill_file.display(),
        skill_file.parent().unwrap().display()
    );
    assert_eq!(user_texts(&sb, 1).last().unwrap(), &expected);

    // Unknown names are sent as typed.
    pi.call("u", json!({"type": "prompt", "message": "/nope a b"})).await;
    pi.until_type("agent_settled").await;
    assert_eq!(user_texts(&sb, 2).last().unwrap(), "/nope a b");
}

#[tokio::test]
async fn steer_and_follow_up_expand_too() {
    let sb = Sandbox::with_server().await;
    with_resources(&sb);
    sb.server().push(Reply::text_chunks(["a", "b", "c"]).delay_ms(200));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "start"})).await;
    pi.until(|v| v["type"] == "message_update").await;
    let steer = pi.call("s", json!({"type": "steer", "message": "/fix steering"})).await;
    assert_eq!(steer["data"]["disposition"], "queued");
    let queued = pi.transcript.iter().rev().find(|l| l.contains("queue_update")).cloned().unwrap();
    let queued: Value = serde_json::from_str(&queued).unwrap();
    assert_eq!(queued["steering"], json!(["Fix steering carefully. Context: steering"]));
    let follow = pi.call("f", json!({"type": "follow_up", "message": "/skill:review later"})).await;
    assert_eq!(follow["success"], true);
    pi.until_type("agent_settled").await;
    assert_eq!(sb.server().request_count(), 3);
    assert_eq!(user_texts(&sb, 1).last().unwrap(), "Fix steering carefully. Context: steering");
    assert!(user_texts(&sb, 2).last().unwrap().starts_with("<skill name=\"review\""));
}

#[tokio::test]
async fn skills_are_listed_in_the_system_prompt_when_a_reader_is_active() {
    let sb = Sandbox::with_server().await;
    with_resources(&sb);
    let skill_file = sb.agent_dir.path().join("skills/review/SKILL.md");
    for (tools, expected) in [
        ("read,bash", Some("Use the read tool to load a skill's file")),
        ("bash", Some("Use bash to load a skill's file")),
        ("edit,write", None),
    ] {
        let before = sb.server().request_count();
        let mut pi = sb.spawn(&["--no-session", "--tools", tools]);
        pi.call("p", json!({"type": "prompt", "message": "hi"})).await;
        pi.until_type("agent_settled").await;
        let prompt = system_prompt(&sb, before);
        match expected {
            Some(hint) => {
                assert!(prompt.contains(hint), "{tools}: {prompt}");
                assert!(prompt.contains("<name>review</name>"), "{prompt}");
                assert!(prompt.contains(&format!("<location>{}</location>", skill_file.display())));
            }
            None => assert!(!prompt.contains("available_skills"), "{tools}: no reader, no skills block"),
        }
    }
    // --no-skills drops discovered skills.
    let before = sb.server().request_count();
    let mut pi = sb.spawn(&["--no-session", "--no-skills"]);
    pi.call("p", json!({"type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    assert!(!system_prompt(&sb, before).contains("available_skills"));
}

#[tokio::test]
async fn get_commands_lists_extensions_then_templates_then_skills() {
    let sb = Sandbox::with_server().await;
    with_resources(&sb);
    write(&sb.cwd.path().join(".pi/prompts/local.md"), "A project template");
    let extra = sb.home.path().join("extra/hint.md");
    write(&extra, "---\ndescription: From the command line\n---\nHint: $ARGUMENTS");
    let demo = demo_path();
    let extra_arg = extra.display().to_string();
    let mut pi = sb.spawn(&["--no-session", "-e", &demo, "--prompt-template", &extra_arg, "--approve"]);
    let commands = pi.call("c", json!({"type": "get_commands"})).await["data"]["commands"].clone();
    let list = commands.as_array().unwrap();
    let sources: Vec<&str> = list.iter().map(|c| c["source"].as_str().unwrap()).collect();
    let first_prompt = sources.iter().position(|s| *s == "prompt").unwrap();
    let first_skill = sources.iter().position(|s| *s == "skill").unwrap();
    assert!(sources[..first_prompt].iter().all(|s| *s == "extension") && first_prompt > 0, "{sources:?}");
    assert!(sources[first_prompt..first_skill].iter().all(|s| *s == "prompt"), "{sources:?}");
    let find = |name: &str| list.iter().find(|c| c["name"] == name).cloned().unwrap_or(Value::Null);
    assert_eq!(
        find("demo-ask"),
        json!({"name": "demo-ask", "description": "Ask three questions and report the answers", "source": "extension", "path": demo,
               "sourceInfo": {"path": demo, "source": "cli", "scope": "temporary", "origin": "top-level"}})
    );
    let fix = sb.agent_dir.path().join("prompts/fix.md").display().to_string();
    let agent = sb.agent_dir.path().display().to_string();
    assert_eq!(
        find("fix"),
        json!({"name": "fix", "description": "Fix something", "source": "prompt", "location": "user", "path": fix,
               "sourceInfo": {"path": fix, "source": "auto", "scope": "user", "origin": "top-level", "baseDir": agent}})
    );
    assert_eq!(find("local")["location"], "project", "trusted with --approve");
    let project = sb.cwd.path().join(".pi").display().to_string();
    assert_eq!(
        find("local")["sourceInfo"],
        json!({"path": sb.cwd.path().join(".pi/prompts/local.md").display().to_string(), "source": "auto",
               "scope": "project", "origin": "top-level", "baseDir": project})
    );
    assert_eq!(find("hint")["location"], "path");
    let hint_dir = extra.parent().unwrap().display().to_string();
    assert_eq!(
        find("hint")["sourceInfo"],
        json!({"path": extra_arg, "source": "local", "scope": "temporary", "origin": "top-level", "baseDir": hint_dir})
    );
    let skill = find("skill:review");
    assert_eq!((skill["source"].clone(), skill["location"].clone()), (json!("skill"), json!("user")));
    assert_eq!(skill["description"], "Review code changes");

    // The CLI template expands like the others; without --approve the project one is not loaded.
    pi.call("h", json!({"type": "prompt", "message": "/hint a b"})).await;
    pi.until_type("agent_settled").await;
    assert_eq!(user_texts(&sb, 0), ["Hint: a b"]);
    let mut pi = sb.spawn(&["--no-session", "--no-prompt-templates"]);
    let commands = pi.call("c", json!({"type": "get_commands"})).await["data"]["commands"].clone();
    let names: Vec<&str> = commands.as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["mcp", "skill:review"], "no templates; untrusted project resources stay out");
}
