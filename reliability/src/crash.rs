//! Crash safety: `kill -9` at random moments of tool-calling runs on the
//! faux model, one session file throughout. After each kill the file may be
//! damaged only in its last line; every message whose `message_end` was seen
//! (but the last) is in it; the session reopens and `get_messages` answers.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::agent::{Agent, Framing, Sandbox};
use crate::rng::Rng;

/// A faux script of tool-calling turns (bash and write), with small delays.
fn script(rng: &mut Rng) -> String {
    let mut out = String::new();
    for i in 0..2000 {
        let delay = 2 + rng.below(10);
        let line = match i % 3 {
            0 => {
                json!({"toolCalls": [{"name": "bash", "arguments": {"command": format!("echo step {i}; seq 1 {}", rng.below(3000))}}], "delayMs": delay})
            }
            1 => {
                json!({"thinking": "next", "toolCalls": [{"name": "write", "arguments": {"path": format!("f{}.txt", i % 7), "content": "x".repeat(rng.below(5000))}}], "delayMs": delay})
            }
            _ => json!({"text": format!("turn {i} done"), "delayMs": delay}),
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// (role, timestamp) of a message, how both stdout and the file identify it.
fn key(message: &Value) -> Option<(String, i64)> {
    Some((message.get("role")?.as_str()?.to_string(), message.get("timestamp")?.as_i64()?))
}

/// Lines of the session file: the messages of its readable lines, and the
/// numbers of its unreadable ones (1-based).
fn read_file(path: &Path) -> (Vec<(String, i64)>, Vec<usize>, usize) {
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut messages = Vec::new();
    let mut damaged = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let count = lines.iter().filter(|l| !l.is_empty()).count();
    for (i, line) in lines.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => messages.extend(v.get("message").and_then(key)),
            Err(_) => damaged.push(i + 1),
        }
    }
    (messages, damaged, count)
}

/// Run `kills` kill cycles (or as many as fit in `seconds`). True when every
/// check held.
pub async fn run(pi: &Path, seed: u64, kills: Option<usize>, seconds: Option<u64>) -> bool {
    let started = Instant::now();
    let mut rng = Rng::new(seed ^ 0x0C4A_5B00);
    let Ok(sb) = Sandbox::new() else {
        crate::say("FAIL crash: cannot make a sandbox");
        return false;
    };
    let script_path = sb.path("faux.jsonl");
    let settings = json!({});
    if sb.configure(&settings, None).and_then(|_| std::fs::write(&script_path, script(&mut rng))).is_err() {
        crate::say("FAIL crash: cannot write the sandbox");
        return false;
    }
    let file = sb.path("sessions").join("crash.jsonl");
    let mut known_damage: HashSet<usize> = HashSet::new();
    let (mut done, mut problems, mut lost_max, mut messages_seen) = (0usize, Vec::new(), 0usize, 0usize);
    loop {
        let more = match (kills, seconds) {
            (Some(k), _) => done < k,
            (None, Some(s)) => started.elapsed().as_secs() < s,
            (None, None) => false,
        };
        if !more || problems.len() >= 5 {
            break;
        }
        done += 1;
        let args = vec![
            "--session".to_string(),
            file.display().to_string(),
            "--faux-script".to_string(),
            script_path.display().to_string(),
        ];
        let Ok(mut agent) = Agent::spawn(pi, &sb, &args, Framing::Lines) else {
            problems.push(format!("kill {done}: cannot start pi"));
            break;
        };
        let prompt = json!({"id": "p", "type": "prompt", "message": format!("work {done}")});
        let follow = json!({"type": "prompt", "message": "more", "streamingBehavior": "followUp"});
        agent.write(format!("{prompt}\n{follow}\n{follow}\n").as_bytes()).await;
        let at = Duration::from_millis(60 + rng.below(1500) as u64);
        let (mut out, _) = agent.until(at, |_| false).await;
        agent.kill9();
        let (rest, _) = agent.until(Duration::from_secs(5), |_| false).await;
        out.extend(rest);
        agent.wait(Duration::from_secs(5)).await;
        let seen: Vec<(String, i64)> = out
            .iter()
            .filter_map(|r| serde_json::from_slice::<Value>(r).ok())
            .filter(|v| v["type"] == "message_end")
            .filter_map(|v| key(&v["message"]))
            .collect();
        messages_seen += seen.len();
        let (persisted, damaged, lines) = read_file(&file);
        for line in damaged.iter().filter(|l| !known_damage.contains(l)) {
            if *line != lines {
                problems.push(format!("kill {done} (after {} ms): line {line} of {lines} is damaged", at.as_millis()));
            }
        }
        known_damage.extend(damaged);
        let persisted: HashSet<&(String, i64)> = persisted.iter().collect();
        let lost: Vec<&(String, i64)> = seen.iter().filter(|m| !persisted.contains(m)).collect();
        lost_max = lost_max.max(lost.len());
        if lost.len() > 1 || lost.first().is_some_and(|m| seen.last() != Some(*m)) {
            problems.push(format!("kill {done} (after {} ms): messages seen but not saved: {lost:?}", at.as_millis()));
        }
        // Reopen: the session loads and answers.
        let Ok(mut again) = Agent::spawn(pi, &sb, &args, Framing::Lines) else {
            problems.push(format!("kill {done}: cannot restart pi"));
            break;
        };
        again.write(b"{\"id\":\"m\",\"type\":\"get_messages\"}\n").await;
        let (replies, answered) =
            again.until(Duration::from_secs(30), |r| r.starts_with(br#"{"id":"m","type":"response""#)).await;
        let ok = replies.last().is_some_and(|r| r.windows(14).any(|w| w == br#""success":true"#));
        if !answered || !ok {
            problems
                .push(format!("kill {done}: get_messages after reopening did not answer; stderr: {}", again.stderr()));
        }
        again.close_stdin();
        if again.wait(Duration::from_secs(20)).await.is_none_or(|s| !s.success()) {
            problems.push(format!("kill {done}: the reopened pi did not exit cleanly"));
        }
    }
    for p in &problems {
        crate::say(&format!("FAIL crash: {p}"));
    }
    let (_, _, lines) = read_file(&file);
    crate::say(&format!(
        "crash: {done} kill -9s in {:.0} s, {messages_seen} messages seen, session file of {lines} lines, \
         at most {lost_max} message lost per kill, {} problems (seed {seed})",
        started.elapsed().as_secs_f64(),
        problems.len()
    ));
    problems.is_empty()
}
