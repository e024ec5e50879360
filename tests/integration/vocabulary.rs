//! One typed vocabulary: units, run statuses and run kinds are types
//! (`unit::Unit`, `model::RunStatus`, `model::RunKind`), and no code outside their own
//! modules asks their text what they mean. This test reads the sources and fails on a
//! comparison of one against a string literal, or a question put to a unit's text
//! ("starts with ns" was how four places told a duration, and one drifted).

use std::path::Path;

/// Where a unit, status or kind may be read as text: their own modules.
const OWN_MODULES: [&str; 2] = ["crates/figure/src/unit.rs", "crates/figure/src/model.rs"];

/// What no other file may contain (after whitespace is removed).
const FORBIDDEN: [&str; 16] = [
    "unit.starts_with(",
    "unit.ends_with(",
    "unit.contains(",
    "unit.strip_prefix(",
    "unit==\"",
    "unit!=\"",
    "unit.as_str()==\"",
    "status==\"",
    "status!=\"",
    "status.as_str()==\"",
    "run.kind==\"",
    "kind.as_str()==\"",
    "==\"running\"",
    "==\"complete\"",
    "finish_run(run_id,&report::now_rfc3339(),\"",
    "status:\"",
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_unit_status_or_kind_is_compared_as_text_outside_its_type() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("crates"), &mut files);
    assert!(files.len() > 20, "the sources were found: {}", files.len());
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if OWN_MODULES.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            for pattern in FORBIDDEN {
                if squeezed.contains(pattern) {
                    found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "compared as text outside their types:\n{}", found.join("\n"));
}

/// The test sees what it forbids: a line of the old kind is caught.
#[test]
fn the_patterns_catch_the_old_code() {
    let old = ["if unit.starts_with(\"ns\") {", "if doc.run.status == \"running\" {", "r.unit.ends_with(\"/s\")"];
    for line in old {
        let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(FORBIDDEN.iter().any(|p| squeezed.contains(p)), "{line}");
    }
}
