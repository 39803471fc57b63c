//! Build script of the `pi` binary: link options that make each start touch
//! less of the binary.
//!
//! - Packed relative relocations (`-z pack-relative-relocs`): the binary is
//!   position independent, so the dynamic loader patches every pointer in its
//!   read-only data at each start. Stored the usual way those relocations take
//!   about 700 KB, all read before `main`; packed they take a few KB. Only the
//!   GNU C library 2.36 and later load them, so the flag is given only when
//!   building on such a system for itself.
//! - Start-up functions first (`--symbol-ordering-file=startup-order.txt`,
//!   lld only): the ~700 functions a start runs are spread over the whole
//!   15 MB of code, and the kernel maps code in 64 KB windows, so a start kept
//!   about 7 MB of code resident for 1 MB of code run. Placed together they
//!   fill a few windows. The list is made by `bench/startup_order.py`; names
//!   that no longer exist are skipped, so a stale list costs nothing but the gain.
#![allow(clippy::print_stdout)] // cargo reads its instructions from a build script's stdout

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=startup-order.txt");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && linux_gnu && glibc_at_least(2, 36) {
        println!("cargo::rustc-link-arg-bin=pi=-Wl,-z,pack-relative-relocs");
    }
    if native && links_with_rust_lld() {
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("startup-order.txt");
        if order.exists() {
            println!("cargo::rustc-link-arg-bin=pi=-Wl,--symbol-ordering-file={}", order.display());
            println!("cargo::rustc-link-arg-bin=pi=-Wl,--no-warn-symbol-ordering");
        }
    }
}

/// Whether this system's GNU C library (`getconf GNU_LIBC_VERSION`: `glibc 2.36`) is at least `major.minor`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().strip_prefix("glibc ").is_some_and(|version| version_at_least(version, major, minor))
}

/// Whether the final link uses rustc's own lld: the default for
/// `x86_64-unknown-linux-gnu` since Rust 1.90, unless a linker is configured.
fn links_with_rust_lld() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu" || !var("RUSTC_LINKER").is_empty() {
        return false;
    }
    if var("CARGO_ENCODED_RUSTFLAGS").split('\x1f').any(|flag| flag.contains("link")) {
        return false; // -C linker=…, -C linker-flavor=…, -C link-self-contained=…, -C link-arg…
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else { return false };
    // `rustc 1.95.0 (…)`
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1).is_some_and(|version| version_at_least(version, 1, 90))
}

/// Whether a dotted version (`2.36`, `1.95.0-nightly`) is at least `major.minor`.
fn version_at_least(version: &str, major: u32, minor: u32) -> bool {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}
