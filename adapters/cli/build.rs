//! Build script of the `pi` binary: packs its relative relocations.
//!
//! The binary is position independent, so the dynamic loader patches every
//! pointer in its read-only data at each start. Stored the usual way those
//! relocations take about 700 KB, all read (and resident) before `main`;
//! packed (`DT_RELR`, `-z pack-relative-relocs`) they take a few KB. Only the
//! GNU C library 2.36 and later load packed relocations, so the flag is given
//! only when building on such a system for itself.
#![allow(clippy::print_stdout)] // cargo reads its instructions from a build script's stdout

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    if native && var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" && glibc_at_least(2, 36)
    {
        println!("cargo::rustc-link-arg-bin=pi=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this system's GNU C library (`getconf GNU_LIBC_VERSION`: `glibc 2.36`) is at least `major.minor`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else { return false };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found >= (major, minor)
}
