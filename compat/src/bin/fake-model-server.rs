//! `fake-model-server [SCRIPT.json]`: start the fake model server on
//! 127.0.0.1, print its OpenAI-style base URL on stdout, serve until killed.
//!
//! The optional script is a `pi_compat::fake_server::Script` in JSON: an object
//! `{"replies": [...], "markers": [{"marker", "scope"?, "reply"}], "fallback": {...}}`
//! or a bare array of replies (see `ReplySpec` for one reply's fields).
//! With `--requests FILE`, every recorded request is appended to FILE as one
//! JSON line (`{"method","path","headers","body"}`) as it arrives.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::time::Duration;

use pi_compat::fake_server::{FakeServer, Script};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut script_path = None;
    let mut requests_path = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--requests" => requests_path = args.next(),
            "-h" | "--help" => {
                println!("usage: fake-model-server [--requests FILE] [SCRIPT.json]");
                return;
            }
            _ => script_path = Some(arg),
        }
    }
    let server = match FakeServer::start().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-model-server: cannot bind 127.0.0.1: {e}");
            std::process::exit(1);
        }
    };
    if let Some(path) = script_path {
        let script = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| Script::from_json(&t).map_err(|e| e.to_string()));
        match script {
            Ok(s) => server.load_script(s),
            Err(e) => {
                eprintln!("fake-model-server: bad script {path}: {e}");
                std::process::exit(2);
            }
        }
    }
    println!("{}", server.base_url());
    let _ = std::io::stdout().flush();
    let mut written = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Some(path) = &requests_path else { continue };
        let requests = server.requests();
        if requests.len() <= written {
            continue;
        }
        let mut out = String::new();
        for r in &requests[written..] {
            let line = serde_json::json!({"method": r.method, "path": r.path, "headers": r.headers, "body": r.body});
            out.push_str(&line.to_string());
            out.push('\n');
        }
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(out.as_bytes()));
        if let Err(e) = appended {
            eprintln!("fake-model-server: cannot write {path}: {e}");
        }
        written = requests.len();
    }
}
