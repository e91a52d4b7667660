//! Compiles the kept-bug entries of `crashes/` into the judge: every `crashes/<id>/kept.json`
//! and the lists `crashes/*.json`, so a binary recognises them wherever it runs.

use std::path::Path;

fn main() {
    let crashes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashes");
    let crashes = crashes.canonicalize().unwrap_or(crashes);
    println!("cargo:rerun-if-changed={}", crashes.display());
    let mut files = Vec::new();
    if let Ok(dir) = std::fs::read_dir(&crashes) {
        for e in dir.flatten() {
            let p = e.path();
            println!("cargo:rerun-if-changed={}", p.display());
            if p.is_dir() {
                let k = p.join("kept.json");
                if k.is_file() {
                    println!("cargo:rerun-if-changed={}", k.display());
                    files.push(k);
                }
            } else if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = String::from("pub const ENTRIES: &[(&str, &str)] = &[\n");
    for f in &files {
        let shown = f.strip_prefix(crashes.parent().unwrap()).unwrap_or(f);
        out.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            shown.display().to_string(),
            f.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("builtin_entries.rs");
    std::fs::write(dest, out).unwrap();
}
