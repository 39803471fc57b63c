//! `gen-schemas [DIR]`: regenerate the JSON Schemas of the wire (default DIR:
//! the `schemas/` directory of the workspace), or with `--check` only report
//! files that differ from what the Rust types generate (exit 1).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

fn main() {
    let mut check = false;
    let mut dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas"));
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!("usage: gen-schemas [--check] [DIR]");
                return;
            }
            other => dir = PathBuf::from(other),
        }
    }
    let mut stale = 0;
    for file in pi_compat::schemas::generate() {
        let path = dir.join(file.path);
        let text = file.text();
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            eprintln!("stale: {}", path.display());
            stale += 1;
            continue;
        }
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            eprintln!("gen-schemas: cannot create {}: {e}", parent.display());
            std::process::exit(2);
        }
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("gen-schemas: cannot write {}: {e}", path.display());
            std::process::exit(2);
        }
        println!("wrote {}", path.display());
    }
    if stale > 0 {
        eprintln!("{stale} schema file(s) are stale: run `cargo run -p pi-compat --bin gen-schemas`");
        std::process::exit(1);
    }
}
