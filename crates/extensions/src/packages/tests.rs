//! Package sources resolved to resources, filters, settings edits and pi's install layout.

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn names(list: &[Resource]) -> Vec<String> {
    list.iter()
        .map(|r| format!("{}{}", if r.enabled { "" } else { "-" }, r.path.file_name().unwrap().to_string_lossy()))
        .collect()
}

struct Dirs {
    agent: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

fn manager(trusted: bool) -> (Dirs, PackageManager) {
    let dirs = Dirs { agent: tempfile::tempdir().unwrap(), cwd: tempfile::tempdir().unwrap() };
    let mut pm = PackageManager::new(dirs.cwd.path(), dirs.agent.path(), trusted);
    pm.offline = true;
    (dirs, pm)
}

#[test]
fn conventional_directories_and_manifests() {
    let (dirs, pm) = manager(false);
    let plain = dirs.cwd.path().join("plain");
    write(&plain.join("extensions/a.ts"), "");
    write(&plain.join("extensions/sub/index.ts"), "");
    write(&plain.join("skills/review/SKILL.md"), "---\ndescription: d\n---\n");
    write(&plain.join("prompts/fix.md"), "Fix");
    write(&plain.join("themes/dark.json"), "{}");
    let out = pm.resolve_cli(&["./plain".to_string()]);
    assert_eq!(names(&out.extensions), ["a.ts", "index.ts"]);
    assert_eq!(names(&out.skills), ["SKILL.md"]);
    assert_eq!(names(&out.prompts), ["fix.md"]);
    assert_eq!(names(&out.themes), ["dark.json"]);
    assert!(out.extensions.iter().all(|r| r.package == "./plain" && r.scope == Scope::Temporary));

    let manifest = dirs.cwd.path().join("manifest");
    write(
        &manifest.join("package.json"),
        r#"{"name":"m","pi":{"extensions":["./src/main.ts"],"prompts":["./res/*.md","!res/skip.md"]}}"#,
    );
    write(&manifest.join("src/main.ts"), "");
    write(&manifest.join("res/one.md"), "");
    write(&manifest.join("res/skip.md"), "");
    write(&manifest.join("extensions/ignored.ts"), "");
    let out = pm.resolve_cli(&[manifest.display().to_string()]);
    assert_eq!(names(&out.extensions), ["main.ts"]);
    assert_eq!(names(&out.prompts), ["one.md"]);

    // A directory with no package layout is one extension; a file is one.
    write(&dirs.cwd.path().join("lone/index.ts"), "");
    write(&dirs.cwd.path().join("single.ts"), "");
    let out = pm.resolve_cli(&["./lone".to_string(), "./single.ts".to_string()]);
    assert_eq!(names(&out.extensions), ["index.ts", "single.ts"]);
}

#[test]
fn settings_entries_filters_and_project_precedence() {
    let (dirs, pm) = manager(true);
    let pkg = dirs.agent.path().join("pkgs/tools");
    write(&pkg.join("extensions/keep.ts"), "");
    write(&pkg.join("extensions/legacy.ts"), "");
    write(&pkg.join("prompts/a.md"), "");
    write(&pkg.join("prompts/b.md"), "");
    write(
        &dirs.agent.path().join("settings.json"),
        r#"{"packages":[{"source":"./pkgs/tools","extensions":["extensions/*.ts","!extensions/legacy.ts"],"prompts":[]}]}"#,
    );
    let out = pm.resolve_settings();
    assert_eq!(names(&out.extensions), ["keep.ts", "-legacy.ts"]);
    assert_eq!(names(&out.prompts), ["-a.md", "-b.md"]);
    assert_eq!(out.extensions[0].scope, Scope::User);

    // A project `autoload: false` entry for the same package changes only what it names.
    write(
        &dirs.cwd.path().join(".pi/settings.json"),
        &format!(r#"{{"packages":[{{"source":"{}","autoload":false,"prompts":["+prompts/b.md"]}}]}}"#, pkg.display()),
    );
    let out = pm.resolve_settings();
    assert_eq!(names(&out.prompts), ["b.md", "-a.md"]);
    assert_eq!(out.prompts[0].scope, Scope::Project);
    assert!(!out.prompts[1].enabled);

    // An untrusted project's packages are not read.
    let untrusted = PackageManager { project_trusted: false, ..pm.clone() };
    assert!(untrusted.declared(Scope::Project).is_empty());
}

#[test]
fn install_list_and_remove_a_local_package_edit_the_settings() {
    let (dirs, pm) = manager(true);
    write(&dirs.cwd.path().join("mine/extensions/x.ts"), "");
    write(&dirs.agent.path().join("settings.json"), r#"{"defaultModel":"m","packages":["npm:other@1.0.0"]}"#);
    pm.install("./mine", Scope::User).unwrap();
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(dirs.agent.path().join("settings.json")).unwrap()).unwrap();
    let expected = relative_path(dirs.agent.path(), &walk_normalize(&dirs.cwd.path().join("mine")));
    assert_eq!(settings["packages"], serde_json::json!(["npm:other@1.0.0", expected]));
    assert_eq!(settings["defaultModel"], "m");
    pm.install("./mine", Scope::User).unwrap();
    assert_eq!(pm.declared(Scope::User).len(), 2, "installed once");
    let listed = pm.list();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].installed_path.as_deref(), Some(walk_normalize(&dirs.cwd.path().join("mine")).as_path()));
    assert!(pm.remove("./mine", Scope::User).unwrap());
    assert!(!pm.remove("./mine", Scope::User).unwrap());
    assert_eq!(pm.declared(Scope::User).len(), 1);
    assert!(pm.install("./missing", Scope::User).unwrap_err().contains("Path does not exist"));
    let untrusted = PackageManager { project_trusted: false, ..pm.clone() };
    assert!(untrusted.install("./mine", Scope::Project).unwrap_err().contains("not trusted"));

    // `-l`: the project's settings, the path relative to `<cwd>/.pi`, loaded as a project package.
    pm.install("./mine", Scope::Project).unwrap();
    let project: Value =
        serde_json::from_str(&std::fs::read_to_string(dirs.cwd.path().join(".pi/settings.json")).unwrap()).unwrap();
    assert_eq!(project["packages"], serde_json::json!(["../mine"]));
    let out = pm.resolve_settings();
    assert_eq!(names(&out.extensions), ["x.ts"]);
    assert_eq!((out.extensions[0].scope, out.extensions[0].package.as_str()), (Scope::Project, "../mine"));
    assert!(untrusted.resolve_settings().extensions.is_empty());
}

fn walk_normalize(p: &Path) -> PathBuf {
    crate::resources::walk::normalize(p)
}

#[test]
fn pis_install_layout() {
    let (dirs, pm) = manager(true);
    let Source::Npm(npm) = Source::parse("npm:@scope/pkg@1.2.3") else { panic!() };
    assert_eq!(pm.npm_path(&npm, Scope::User), dirs.agent.path().join("npm/node_modules/@scope/pkg"));
    assert_eq!(pm.npm_path(&npm, Scope::Project), dirs.cwd.path().join(".pi/npm/node_modules/@scope/pkg"));
    // sha256("npm-")[..8], as pi computes it.
    assert_eq!(pm.npm_root(Scope::Temporary), dirs.agent.path().join("tmp/extensions/npm/f35b2129"));
    let Source::Git(git) = Source::parse("git:example.test/team/tools@v1") else { panic!() };
    assert_eq!(pm.git_path(&git, Scope::User), dirs.agent.path().join("git/example.test/team/tools"));
    let temp = pm.git_path(&git, Scope::Temporary);
    assert!(
        temp.starts_with(dirs.agent.path().join("tmp/extensions/git-example.test")) && temp.ends_with("team/tools")
    );
}

#[test]
fn an_uninstallable_package_is_a_failure_not_an_error() {
    let (_dirs, mut pm) = manager(false);
    pm.offline = false;
    pm.npm = vec!["/no/such/npm".to_string()];
    let out = pm.resolve_cli(&["npm:ghost@1.0.0".to_string()]);
    assert!(out.extensions.is_empty());
    assert_eq!(out.failures.len(), 1);
    let warning = out.failures[0].warning();
    assert!(warning.starts_with("Extension package \"npm:ghost@1.0.0\": failed to install ("), "{warning}");
    assert!(warning.ends_with("Check the source and try again."), "{warning}");
}
