//! Build script of pi-core: indexes the compiled-in model catalog.
//!
//! `src/config/catalog.json` holds every built-in provider's models (about
//! 580 KB). Finding one provider's section at run time meant scanning the
//! whole text at every start (every page of it resident); instead the byte
//! range of each provider's section is computed here, once, and compiled in
//! as `$OUT_DIR/catalog_index.rs`. A catalog that does not parse fails the build.

#![allow(clippy::print_stdout)] // cargo reads its instructions from a build script's stdout

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct CatalogFile<'a> {
    #[serde(borrow)]
    providers: Sections<'a>,
}

/// The `providers` object in file order (a map would sort it).
struct Sections<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Sections<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Sections<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of provider sections")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<&'de str, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Sections(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

fn main() {
    let catalog = "src/config/catalog.json";
    println!("cargo::rerun-if-changed={catalog}");
    let text = std::fs::read_to_string(catalog).unwrap_or_else(|e| panic!("{catalog}: {e}"));
    let file: CatalogFile = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{catalog} does not parse: {e}"));
    let mut seen = BTreeMap::new();
    let mut out = String::from(
        "/// `(provider, start, end)`: byte range of each provider's model array in `catalog.json`, in file order.\n",
    );
    out.push_str("const PROVIDER_SECTIONS: &[(&str, usize, usize)] = &[\n");
    for (name, raw) in &file.providers.0 {
        assert!(seen.insert(*name, ()).is_none(), "{catalog}: provider {name} appears twice");
        let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        let end = start + raw.get().len();
        writeln!(out, "    ({name:?}, {start}, {end}),").unwrap_or_default();
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR").unwrap_or_else(|e| panic!("OUT_DIR: {e}"));
    std::fs::write(Path::new(&dir).join("catalog_index.rs"), out).unwrap_or_else(|e| panic!("catalog_index.rs: {e}"));
}
