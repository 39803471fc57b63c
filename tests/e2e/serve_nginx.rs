//! Scale-out behind a real load balancer: Debian's nginx (unpacked into
//! `target/tools/nginx` by `scripts/install-serve-tools.sh`) runs the
//! reference configuration `deploy/nginx.conf` (only its worker and listen
//! lines replaced) in front of two `pi serve` workers sharing one session
//! directory. A session is created and used through nginx, its owner is
//! killed, and it continues on the other worker with its history; while
//! the owner lives, the other worker refuses it ("owned elsewhere").

use std::path::Path;
use std::time::Duration;

use crate::clients::{installed_tool, repo_root};
use crate::harness::Sandbox;
use crate::serve::{node_scenario, python_scenario, serve};

/// `deploy/<template>` with its workers and listen address replaced.
fn render_config(template: &str, workers: &[u16], listen: u16) -> String {
    let template = std::fs::read_to_string(repo_root().join("deploy").join(template)).expect("deploy/ template");
    let mut out = Vec::new();
    let mut skipping = false;
    for line in template.lines() {
        let trimmed = line.trim();
        if trimmed == "# END WORKERS" || trimmed == "# END LISTEN" {
            skipping = false;
        } else if skipping {
            continue;
        }
        out.push(line.to_string());
        if trimmed == "# BEGIN WORKERS" {
            skipping = true;
            out.extend(workers.iter().map(|p| format!("        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;")));
        } else if trimmed == "# BEGIN LISTEN" {
            skipping = true;
            out.push(format!("        listen 127.0.0.1:{listen};"));
        }
    }
    // One process (no worker children), so that killing it when the test
    // ends cannot leave orphaned workers behind.
    out.push("master_process off;".to_string());
    out.join("\n") + "\n"
}

pub fn port_of(url: &str) -> u16 {
    let rest = url.trim_start_matches("ws://127.0.0.1:");
    rest.split('/').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no port in {url}"))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The worker named in the session's lock file.
fn owner_of(dir: &Path, session: &str) -> String {
    std::fs::read_to_string(dir.join(".owners").join(format!("{session}.lock"))).unwrap_or_default().trim().to_string()
}

/// Debian's nginx running `deploy/<template>` in front of `ports` (killed
/// when dropped), and its `/rpc` URL.
pub async fn start_nginx(nginx: &Path, sb: &Sandbox, template: &str, ports: &[u16]) -> (tokio::process::Child, String) {
    let listen = free_port();
    let prefix = sb.home.path().join(format!("nginx-{listen}"));
    std::fs::create_dir_all(&prefix).expect("nginx prefix");
    let conf = prefix.join("nginx.conf");
    std::fs::write(&conf, render_config(template, ports, listen)).expect("nginx.conf");
    let mut balancer = tokio::process::Command::new(nginx)
        .arg("-p")
        .arg(&prefix)
        .arg("-c")
        .arg(&conf)
        .args(["-e", "stderr"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start nginx");
    let mut up = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", listen)).await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "nginx did not start: {:?}", balancer.try_wait());
    (balancer, format!("ws://127.0.0.1:{listen}/rpc"))
}

#[tokio::test]
async fn sessions_move_between_workers_behind_nginx() {
    let Some(nginx) = installed_tool("nginx/usr/sbin/nginx") else { return };
    let sb = Sandbox::offline();
    let shared = sb.home.path().join("shared-sessions");
    std::fs::create_dir_all(&shared).expect("shared dir");
    let dir = shared.display().to_string();
    let mut workers = vec![
        serve(&sb, &["--session-dir", &dir, "--worker-name", "w1"]).await,
        serve(&sb, &["--session-dir", &dir, "--worker-name", "w2"]).await,
    ];
    let ports: Vec<u16> = workers.iter().map(|w| port_of(&w.url)).collect();

    let (mut balancer, front) = start_nginx(&nginx, &sb, "nginx.conf", &ports).await;

    let session = "lighthouse-session-1";
    if python_scenario(&workers[0], "scale_write", &[&front, session]).await.is_none() {
        return;
    }
    let owner = owner_of(&shared, session);
    let (owning, other) = match owner.as_str() {
        "w1" => (0, 1),
        "w2" => (1, 0),
        _ => panic!("no owner recorded for {session}: {owner:?}"),
    };
    // The other worker refuses the session while its owner holds it.
    let direct = workers[other].url.clone();
    python_scenario(&workers[other], "owned", &[&direct, session]).await;

    // The owner dies; through nginx, the session continues on the other worker.
    let mut dead = workers.remove(owning);
    dead.pi.child.start_kill().expect("kill the owning worker");
    let _ = dead.pi.child.wait().await;
    let survivor = &workers[0];
    python_scenario(survivor, "scale_continue", &[&front, session]).await;
    assert_eq!(owner_of(&shared, session), if owning == 0 { "w2" } else { "w1" });
    // A JSON-RPC client through nginx sees the same session.
    let routed = format!("{front}?session={session}");
    if let Some(history) = node_scenario(survivor, "history", &[&routed, session]).await {
        assert!(history.contains("remember the lighthouse") && history.contains("and now?"), "{history}");
    }
    let _ = balancer.start_kill();
    let _ = balancer.wait().await;
}

#[test]
fn the_rendered_configuration_keeps_the_reference_and_replaces_the_workers() {
    let text = render_config("nginx.conf", &[9001, 9002, 9003], 9000);
    assert!(text.contains("hash $pi_session consistent;"));
    assert!(text.contains("server 127.0.0.1:9003 max_fails=1"));
    assert!(!text.contains("8101") && !text.contains("8100"));
    assert!(text.contains("listen 127.0.0.1:9000;"));
    assert!(text.ends_with("master_process off;\n"));
}

#[test]
fn the_cluster_configuration_is_round_robin() {
    let text = render_config("nginx-cluster.conf", &[9001, 9002, 9003], 9000);
    assert!(!text.contains("hash "), "the cluster front needs no routing key");
    assert!(text.contains("proxy_next_upstream error timeout http_503;"));
    assert!(text.contains("server 127.0.0.1:9002 max_fails=1") && text.contains("listen 127.0.0.1:9000;"));
}
