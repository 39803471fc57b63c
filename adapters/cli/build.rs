//! Build script of the `pi` binary: link options that make each start touch
//! less of the binary.
//!
//! - Not position independent (`-no-pie`, Linux with the GNU C library): a
//!   position-independent `pi` is loaded at a random address, so the
//!   dynamic loader rewrites every pointer in its read-only data at each
//!   start (about 100,000 of them in `.data.rel.ro`: vtables, panic
//!   locations, static tables of strings). That cost a third of a start's
//!   instructions (650,000 of 1.97 million to the first `get_state`, the
//!   relocation loop of `ld.so`) and made all of that section's 850 KB
//!   private memory before `main`. Linked at a fixed address the section is
//!   ordinary file-backed data, paged in only where read. What is given up
//!   is the random placement of the binary's own code (ASLR of the
//!   executable; its libraries, heap and stacks are still placed at random):
//!   see the README (the build scripts, under its dependencies).
//! - Packed relative relocations (`-z pack-relative-relocs`; with `-no-pie`
//!   there are none, so this holds for a build that drops that line): a
//!   position-independent binary has the dynamic loader patch every pointer
//!   in its read-only data at each start. Stored the usual way those relocations take
//!   about 700 KB, all read before `main`; packed they take a few KB. Only the
//!   GNU C library 2.36 and later load them, so the flag is given only when
//!   building on such a system for itself.
//! - Start-up functions first (lld only): the ~1,400 functions a start runs
//!   are spread over the whole 30 MB of code, and the kernel maps code in
//!   64 KB windows, so a start kept about 7 MB of code resident for 1 MB of
//!   code run. Placed together they fill a few windows. The list
//!   (`startup-order.txt`, made by `bench/startup_order.py`) holds mangled
//!   names, whose crate hashes change with each crate's features and
//!   dependencies: a workspace-wide build (other features unified) or any
//!   dependency update gave most names other hashes, and an exact-name
//!   `--symbol-ordering-file` then matched almost nothing. So the list is
//!   turned into a linker script whose section patterns leave the hashes
//!   out (`Cs*_` for a crate, `17h*E` for a legacy symbol hash, `B*_` for a
//!   back-reference, no `.N` suffix): any release build of `pi` gets the
//!   order, and a name that no longer exists costs nothing but its gain.
//!   Names marked `=` (generic functions with many instances, which a
//!   hash-free pattern would all pull in) are matched exactly. A `#[cold]`
//!   function is emitted in `.text.unlikely.<name>` (allocation growth,
//!   hash-table rehash, `Once` and thread-local slow paths: all run at each
//!   start), so each pattern is given with that prefix too. The listed
//!   functions' own read-only data (`.rodata.<name>`, `.rodata..Lswitch.table.<name>`:
//!   constants and jump tables of that function alone) is placed the same
//!   way before `.rodata` (0.2 MB less at start; the constants shared by
//!   name-less sections, `.Lanon.*`, cannot be named in a lasting way).
//! - Segments aligned to 2 MB in the file as in memory (`-z max-page-size`,
//!   lld only: it keeps `offset == address` modulo that size without padding
//!   the file). The page cache holds a file in folios aligned in the file (up
//!   to 2 MB, by how it was written: a `cp` or `cargo install` gives 64 KB
//!   ones), and the kernel maps every folio a 64 KB fault-around window
//!   touches, the window being aligned in memory. With the 4 KB alignment
//!   lld uses by default, `.text` sat 4 KB off its file offset, so each code
//!   fault mapped two folios: a copied `pi` started with 12.7 MB resident
//!   instead of 10.5 MB (the same file read back from disk, in 4 KB folios,
//!   is not affected).
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
    if native && linux_gnu {
        println!("cargo::rustc-link-arg-bin=pi=-no-pie");
    }
    if native && links_with_rust_lld() {
        println!("cargo::rustc-link-arg-bin=pi=-Wl,-z,max-page-size=0x200000");
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("startup-order.txt");
        let script = std::path::Path::new(&var("OUT_DIR")).join("startup-order.ld");
        if let Ok(list) = std::fs::read_to_string(&order)
            && std::fs::write(&script, linker_script(&list)).is_ok()
        {
            println!("cargo::rustc-link-arg-bin=pi=-Wl,-T,{}", script.display());
        }
    }
}

/// A linker script placing the listed functions' sections, in the list's
/// order, in an output section of their own just before `.text` (`INSERT`:
/// the rest of the default layout is kept); and their own read-only data
/// (`.rodata.<name>`: constants and jump tables only that function uses) in
/// one just before `.rodata`.
fn linker_script(list: &str) -> String {
    let mut patterns = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut generic = Vec::new();
    let mut place = |pattern: String| {
        if !pattern.contains(['?', '[', ']', '\\', '(', ')', ' ']) && seen.insert(pattern.clone()) {
            patterns.push(pattern);
        }
    };
    for line in list.lines().map(str::trim).filter(|n| !n.is_empty()) {
        // `=name`: a generic function whose hash-free pattern would also take
        // its many other instances; this build's exact name is placed here.
        match line.strip_prefix('=') {
            Some(exact) => {
                generic.push(hash_free(exact));
                // Without its `.N` suffix (numbered by LTO: any code change renumbers them);
                // the script's `.text.<name>.*` matches each numbered copy.
                place(strip_numeric_suffixes(exact).to_string());
            }
            None => place(hash_free(line)),
        }
    }
    // Then every instance of those generics, for a build whose hashes differ
    // from the list's (other features, other dependencies): the instances a
    // start runs stay near the start-up code, behind it.
    for pattern in generic {
        place(pattern);
    }
    let mut script = String::from("SECTIONS {\n  .text.pi_start : {\n");
    for p in &patterns {
        script.push_str(&format!("    *(.text.{p} .text.{p}.* .text.unlikely.{p} .text.unlikely.{p}.*)\n"));
    }
    script.push_str("  }\n} INSERT BEFORE .text;\nSECTIONS {\n  .rodata.pi_start : {\n");
    for p in &patterns {
        script.push_str(&format!(
            "    *(.rodata.{p} .rodata.{p}.* .rodata..Lswitch.table.{p} .rodata..Lswitch.table.{p}.*)\n"
        ));
    }
    script.push_str("  }\n} INSERT BEFORE .rodata;\n");
    script
}

/// A mangled name as a section pattern that holds for any build: crate
/// hashes, legacy symbol hashes and back-references become `*`, and a
/// `.N`/`.llvm.N` suffix (added by LTO) is dropped.
fn hash_free(name: &str) -> String {
    let name = strip_numeric_suffixes(name);
    let bytes = name.as_bytes();
    let base62 = |b: u8| b.is_ascii_alphanumeric();
    let mut out = String::with_capacity(name.len());
    let mut i = 0;
    while i < bytes.len() {
        // `17h` + 16 hex digits + `E`: a legacy symbol's hash.
        if name[i..].starts_with("17h")
            && bytes.len() >= i + 20
            && bytes[i + 3..i + 19].iter().all(u8::is_ascii_hexdigit)
            && bytes[i + 19] == b'E'
        {
            out.push_str("17h*E");
            i += 20;
            continue;
        }
        // v0: `Cs<base62>_` (a crate's disambiguator) and `B<base62>_` (a back-reference).
        let prefix = if name[i..].starts_with("Cs") {
            Some(2)
        } else if bytes[i] == b'B' && name.starts_with("_R") {
            Some(1)
        } else {
            None
        };
        if let Some(prefix) = prefix {
            let digits = bytes[i + prefix..].iter().take_while(|b| base62(**b)).count();
            if bytes.get(i + prefix + digits) == Some(&b'_') {
                out.push_str(&name[i..i + prefix]);
                out.push_str("*_");
                i += prefix + digits + 1;
                continue;
            }
        }
        out.push(char::from(bytes[i]));
        i += 1;
    }
    out
}

/// `name` without trailing `.N` and `.llvm.N` suffixes.
fn strip_numeric_suffixes(mut name: &str) -> &str {
    loop {
        let Some((head, tail)) = name.rsplit_once('.') else { return name };
        if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
            return name;
        }
        name = head.strip_suffix(".llvm").unwrap_or(head);
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
