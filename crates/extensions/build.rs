//! Build script of pi-extensions: the extension host's files are hashed here,
//! once, rather than at every start.
//!
//! The host's files (`src/extensions/host/`, embedded with `include_str!`)
//! are written out to `runtime-<hash>/` the first time a TypeScript extension
//! runs (`src/extensions/host.rs`). Hashing their ~190 KB at each start with
//! an extension cost about a million instructions and brought that much of
//! the binary's read-only data into memory before the host could start. The
//! hash is FNV-1a over each file's path (relative, `/`-separated) and
//! contents, in path order, each followed by a zero byte; the unit test
//! `the_runtime_directory_is_named_by_the_embedded_files` recomputes it.
#![allow(clippy::print_stdout)] // cargo reads its instructions from a build script's stdout

use std::path::Path;

fn main() {
    let root = Path::new("src/extensions/host");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(root, "", &mut files);
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for name in &files {
        let text = std::fs::read(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for byte in name.bytes().chain([0]).chain(text).chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo::rustc-env=PI_EXTENSION_HOST_FILES_HASH={hash:016x}");
}

/// Every file under `dir`, by its path relative to the host's root.
fn collect(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.path().is_dir() {
            collect(&entry.path(), &format!("{name}/"), out);
        } else {
            out.push(name);
        }
    }
}
