//! Rules of the source tree that the compiler does not enforce, read from `src/` as text:
//! - errors below the CLI are typed: a `Result<_, String>` (or a `FromStr`/`TryFrom`
//!   whose error is a `String`) appears only where the allowlist below names the file and
//!   says why, and no more often than it says;
//! - a `match` over simulated policies or units names every variant it handles: no `_ =>` arm
//!   (nor a binding that catches the rest), so a new variant is a compiler error at each
//!   place that must decide what to do with it, not a silent default;
//! - a condition is its own file and its line in `condition::KINDS`: no other file names
//!   a kind's module (so no match over kinds exists for a new kind to join or to fall
//!   through), and every kind is registered;
//! - an exporter is its own file and its line in `report::export::EXPORTERS`: every
//!   file there is registered, and no closed enum of formats comes back;
//! - a figure's identity is typed: no struct or enum variant outside the key's module
//!   holds a benchmark id, a method or a variant's parameters as plain text (a field named as one with a
//!   `String`, `&str`, `Cow<str>` or string-keyed map type), so a rename or a wrong
//!   parameter is a compiler error, not an empty chart;
//! - a parameter is read through the `Param` its producer declares: `Params::raw`, the
//!   read by a stored name, is called outside the key's module and test code only where
//!   the allowlist below names the file and says why, and no more often than it says;
//! - inside a crate, a module names only the modules of its own crate that come before
//!   it in [`LAYERS`] (between crates the compiler holds the order: a crate cannot name
//!   one that does not depend on it);
//! - the simulator is a pure function of its inputs: nothing under `crates/sim/src/`
//!   opens a database, a file, a clock or a thread, or calls into `sys`; the machine
//!   figures a `live` profile takes come through the `ProfileSource` it is handed.
//!
//! Pure file reading: nothing here measures.

use std::fs;
use std::path::{Path, PathBuf};

/// Files that may still hold `String` errors: (path under the crate, how many, why).
const STRING_ERRORS_ALLOWED: &[(&str, usize, &str)] = &[];

/// The enums whose variants every `match` must name: simulated scheduler policies and
/// the units figures are stored in.
/// (Conditions and exporters are open sets read from a registry, checked by
/// [`a_condition_is_its_file_and_its_line_in_the_registry`] and
/// [`an_exporter_is_its_file_and_its_line_in_the_registry`].)
const CLOSED_ENUMS: &[&str] = &["PolicyKind", "Unit"];

/// The modules of `src/condition/` that are not kinds of condition: the kinds share them
/// (the journal of what a run changed, the table of system settings it may change).
const CONDITION_SUPPORT: &[&str] = &["mod", "journal", "settings"];

/// Where the conditions live.
const CONDITIONS: &str = "crates/measure/src/condition";

/// Files other than a kind's own that may name its module: (path, kind, why).
const KIND_NAMED_ELSEWHERE: &[(&str, &str, &str)] = &[(
    "src/cli/mod.rs",
    "neighbour",
    "the neighbour is oscost re-executed with a hidden command, dispatched before the arguments are parsed",
)];

/// The module that owns a figure's identity, where its parts are stored as text.
const KEY_MODULE: &str = "crates/figure/src/key.rs";

/// Files that may still read a parameter by its stored name (`Params::raw`) outside
/// their test code: (path, how many, why).
const RAW_READS_ALLOWED: &[(&str, usize, &str)] = &[];

/// Field names that hold a part of a figure's identity.
const IDENTITY_FIELDS: &[&str] =
    &["benchmark", "benchmark_id", "bench", "bench_id", "method", "variant", "params", "param"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The source folders: this package's and each crate's.
fn source_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("src")];
    let crates = fs::read_dir(root().join("crates")).expect("crates/ lists");
    dirs.extend(crates.map(|e| e.expect("a readable folder entry").path().join("src")));
    dirs.sort();
    assert!(dirs.len() >= 6, "the crates were found: {dirs:?}");
    dirs
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display())) {
            let path = entry.expect("a readable folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Each source file of the workspace (this package's `src/` and every crate's under
/// `crates/`) with its path relative to the workspace, and its code with
/// comments, string and character literals blanked (so that neither a doc comment nor a
/// message can look like code, and line numbers stay where they were).
fn sources() -> Vec<(String, String)> {
    source_dirs()
        .iter()
        .flat_map(|dir| rust_files(dir))
        .map(|path| {
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let rel = path.strip_prefix(root()).expect("under the crate").to_string_lossy().replace('\\', "/");
            (rel, code_only(&text))
        })
        .collect()
}

/// `text` with comments and the contents of string and character literals replaced by
/// spaces (newlines kept). Lifetimes (`'a`) are left as they are.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_char(chars.get(i.wrapping_sub(1))) {
            // A raw string: r"…" or r#"…"#, with as many #s at the end as at the start.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('"');
            for _ in i + 1..=j {
                out.push(' ');
            }
            i = j + 1;
            while i < chars.len() {
                if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n(' ', hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            out.push('\'');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether the quote at `i` opens a character literal (`'x'`, `'\n'`, `'\u{1F600}'`)
/// rather than a lifetime or a label (`'a`, `'static`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!((chars.get(i + 1), chars.get(i + 2)), (Some('\\'), _) | (Some(_), Some('\'')))
}

/// The line (from 1) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Splits `inner` (the text between a generic's `<` and `>`) at its top-level commas.
fn generic_args(inner: &str) -> Vec<&str> {
    let mut args = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args.push(&inner[start..]);
    args
}

/// The lines of `code` whose error type is a plain `String`: `Result<T, String>`,
/// `type Err = String` and `type Error = String`.
fn string_errors(code: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("Result<") {
        let at = from + found;
        from = at + "Result<".len();
        if ident_char(code[..at].chars().last().as_ref()) {
            continue; // another type whose name ends in Result
        }
        let mut depth = 1;
        let mut end = None;
        for (i, c) in code[from..].char_indices() {
            match c {
                '<' => depth += 1,
                '>' if code[from..][..i].ends_with('-') => {} // an arrow inside a closure type
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(from + i);
                        break;
                    }
                }
                ';' | '{' => break,
                _ => {}
            }
        }
        let Some(end) = end else { continue };
        let args = generic_args(&code[from..end]);
        if args.len() == 2 && args[1].trim() == "String" {
            lines.push(line_of(code, at));
        }
    }
    for alias in ["type Err = String;", "type Error = String;"] {
        lines.extend(code.match_indices(alias).map(|(at, _)| line_of(code, at)));
    }
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// The offset just past the bracket that closes the one opened at `open`.
fn closing(code: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, &b) in code.iter().enumerate().skip(open) {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The patterns of the arms of the `match` whose body opens at `open` (a `{`).
fn arm_patterns(code: &str, open: usize) -> Vec<String> {
    let bytes = code.as_bytes();
    let Some(end) = closing(bytes, open) else { return Vec::new() };
    let mut patterns = Vec::new();
    let mut i = open + 1;
    let body_end = end - 1;
    while i < body_end {
        // The pattern: up to `=>` outside any bracket.
        let start = i;
        let mut depth = 0i32;
        while i < body_end && !(depth == 0 && code[i..].starts_with("=>")) {
            match bytes[i] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        if i >= body_end {
            break;
        }
        patterns.push(code[start..i].trim().to_string());
        i += 2;
        // The arm's expression: a block (with an optional comma after it), or up to the
        // next comma outside any bracket.
        while i < body_end && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < body_end && bytes[i] == b'{' {
            i = closing(bytes, i).unwrap_or(body_end);
            let after = code[i..body_end].trim_start();
            if after.starts_with('.') || after.starts_with('?') {
                // The block was the start of a longer expression: go on to its comma.
                i = expression_end(bytes, i, body_end);
            } else if after.starts_with(',') {
                i = body_end - after.len() + 1;
            }
        } else {
            i = expression_end(bytes, i, body_end);
        }
    }
    patterns
}

/// The offset just past the comma that ends an arm's expression starting at `i`, or
/// `end` for the last arm.
fn expression_end(bytes: &[u8], mut i: usize, end: usize) -> usize {
    let mut depth = 0i32;
    while i < end {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    end
}

/// Whether an arm's pattern matches whatever is left: `_` or a plain binding, guarded
/// or not.
fn is_catch_all(pattern: &str) -> bool {
    let unguarded = pattern.split(" if ").next().unwrap_or(pattern).trim();
    let name = unguarded.strip_prefix("ref ").or(unguarded.strip_prefix("mut ")).unwrap_or(unguarded).trim();
    name == "_"
        || (!name.is_empty()
            && name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
}

/// Whether a pattern names a variant of one of `enums`.
fn names_variant_of(pattern: &str, enums: &[&str]) -> bool {
    enums.iter().any(|e| {
        pattern.match_indices(&format!("{e}::")).any(|(at, _)| !ident_char(pattern[..at].chars().last().as_ref()))
    })
}

/// The lines of the `match` expressions of `code` that name a variant of one of `enums`
/// in a pattern and also have an arm that catches the rest.
fn wildcard_matches(code: &str, enums: &[&str]) -> Vec<usize> {
    let bytes = code.as_bytes();
    let mut lines = Vec::new();
    for (at, _) in code.match_indices("match") {
        let word_before = ident_char(code[..at].chars().last().as_ref());
        let word_after = ident_char(code[at + 5..].chars().next().as_ref());
        if word_before || word_after {
            continue;
        }
        // The body opens at the first `{` outside the scrutinee's brackets.
        let mut depth = 0i32;
        let mut open = None;
        for (i, &b) in bytes.iter().enumerate().skip(at + 5) {
            match b {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b'{' if depth == 0 => {
                    open = Some(i);
                    break;
                }
                b';' | b'}' if depth == 0 => break,
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let patterns = arm_patterns(code, open);
        if patterns.iter().any(|p| names_variant_of(p, enums)) && patterns.iter().any(|p| is_catch_all(p)) {
            lines.push(line_of(code, at));
        }
    }
    lines
}

/// Whether a field's type is text: `String`, `&str` (any lifetime), `Box<str>`,
/// `Cow<str>`, a string-keyed map, or an `Option` or `Vec` of one of these.
fn is_plain_text(ty: &str) -> bool {
    let ty = ty.trim();
    if let Some(referenced) = ty.strip_prefix('&') {
        // A lifetime (`&'a str`, `&'static str`) and `mut` before the type.
        let t = referenced.trim_start();
        let t =
            t.strip_prefix('\'').map_or(t, |named| named.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'));
        let t = t.trim_start();
        return t.strip_prefix("mut ").unwrap_or(t).trim() == "str";
    }
    let ty: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let ty = ty.trim_start_matches("std::").trim_start_matches("borrow::").trim_start_matches("collections::");
    for wrapper in ["Option<", "Vec<", "Box<"] {
        if let Some(inner) = ty.strip_prefix(wrapper).and_then(|t| t.strip_suffix('>')) {
            return inner == "str" || is_plain_text(inner);
        }
    }
    if let Some(map) = ["BTreeMap<", "HashMap<"].iter().find_map(|m| ty.strip_prefix(m)) {
        return generic_args(map.strip_suffix('>').unwrap_or(map)).first().is_some_and(|k| is_plain_text(k));
    }
    ty == "String" || (ty.starts_with("Cow<") && ty.ends_with(",str>"))
}

/// The fields of the structs (with named fields) and of the enum variants (with named
/// fields) of `code` named as a part of a figure's identity and typed as text:
/// (line, field, type).
fn identity_text_fields(code: &str) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    for (open, end) in item_bodies(code, "struct") {
        found.extend(text_fields_in(code, open, end));
    }
    for (open, end) in item_bodies(code, "enum") {
        for (variant_open, variant_end) in variant_bodies(code, open, end) {
            found.extend(text_fields_in(code, variant_open, variant_end));
        }
    }
    found.sort();
    found
}

/// The braced bodies of the items `keyword` (`struct`, `enum`) opens: (the `{`, just
/// past its `}`). A unit or tuple struct has none.
fn item_bodies(code: &str, keyword: &str) -> Vec<(usize, usize)> {
    let bytes = code.as_bytes();
    let mut bodies = Vec::new();
    for (at, _) in code.match_indices(keyword) {
        let word_before = ident_char(code[..at].chars().last().as_ref());
        let word_after = ident_char(code[at + keyword.len()..].chars().next().as_ref());
        if word_before || word_after {
            continue;
        }
        // The body opens at the first `{` before any `;` or `(` (a unit or tuple struct).
        let Some(open) = code[at..].find(['{', ';', '(']).map(|i| at + i).filter(|&i| bytes[i] == b'{') else {
            continue;
        };
        if let Some(end) = closing(bytes, open) {
            bodies.push((open, end));
        }
    }
    bodies
}

/// The braced bodies of the variants of the enum whose body is `open..end`: each `{`
/// at the enum's own depth (a tuple variant's brackets and an attribute's are passed).
fn variant_bodies(code: &str, open: usize, end: usize) -> Vec<(usize, usize)> {
    let bytes = code.as_bytes();
    let mut bodies = Vec::new();
    let mut i = open + 1;
    while i < end - 1 {
        match bytes[i] {
            b'(' | b'[' => i = closing(bytes, i).unwrap_or(end),
            b'{' => {
                let close = closing(bytes, i).unwrap_or(end);
                bodies.push((i, close));
                i = close;
            }
            _ => i += 1,
        }
    }
    bodies
}

/// The fields of the braced body `open..end` (a struct's or a variant's) named as a
/// part of a figure's identity and typed as text: (line, field, type).
fn text_fields_in(code: &str, open: usize, end: usize) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    let body = &code[open + 1..end - 1];
    let mut start = 0;
    let mut depth = 0i32;
    let mut fields = Vec::new();
    for (i, c) in body.char_indices() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' if !body[..i].ends_with('-') => depth -= 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                fields.push((start, &body[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push((start, &body[start..]));
    for (offset, field) in fields {
        // Attributes and visibility before the name.
        let mut f = field.trim_start();
        while f.starts_with("#[") {
            let close = closing(f.as_bytes(), 1).unwrap_or(f.len());
            f = f[close..].trim_start();
        }
        for vis in ["pub(crate)", "pub(super)", "pub"] {
            if let Some(rest) = f.strip_prefix(vis) {
                f = rest.trim_start();
                break;
            }
        }
        let Some((name, ty)) = f.split_once(':') else { continue };
        let name = name.trim();
        if IDENTITY_FIELDS.contains(&name) && is_plain_text(ty) {
            let line = line_of(code, open + 1 + offset + field.find(name).unwrap_or(0));
            found.push((line, name.to_string(), ty.trim().to_string()));
        }
    }
    found
}

#[test]
fn no_figure_identity_held_as_plain_text_outside_the_key() {
    let problems: Vec<String> = sources()
        .into_iter()
        .filter(|(path, _)| path != KEY_MODULE)
        .flat_map(|(path, code)| {
            identity_text_fields(&code).into_iter().map(move |(line, name, ty)| {
                format!("{path}:{line}: field `{name}: {ty}` holds a figure's identity as text")
            })
        })
        .collect();
    assert!(
        problems.is_empty(),
        "use the key's types ({KEY_MODULE}: BenchId, Method, Params, FigureKey):\n{}",
        problems.join("\n")
    );
}

/// `code` with the bodies of its inline test modules (`#[cfg(test)] mod … { … }`)
/// blanked, newlines kept.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        if !after.starts_with("mod ") {
            continue;
        }
        let start = code.len() - after.len();
        let Some(open) = code[start..].find(['{', ';']).map(|i| start + i).filter(|&i| code.as_bytes()[i] == b'{')
        else {
            continue;
        };
        let end = closing(code.as_bytes(), open).unwrap_or(code.len());
        let blanked: String = code[open..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
        out.replace_range(open..end, &blanked);
    }
    out
}

/// The lines of `code` that read a parameter by its stored name: `params.raw(` or
/// `params().raw(` (a row's or a key's parameters).
fn raw_reads(code: &str) -> Vec<usize> {
    let mut lines: Vec<usize> = ["params.raw(", "params().raw("]
        .iter()
        .flat_map(|p| code.match_indices(p).map(|(at, _)| line_of(code, at)))
        .collect();
    lines.sort_unstable();
    lines
}

#[test]
fn parameters_are_read_by_name_only_where_the_allowlist_says_why() {
    let mut problems = Vec::new();
    for (path, code) in sources() {
        // The key's module owns the names; a file of tests is test code throughout.
        if path == KEY_MODULE || path.ends_with("/tests.rs") {
            continue;
        }
        let lines = raw_reads(&without_test_modules(&code));
        let allowed = RAW_READS_ALLOWED.iter().find(|(p, _, _)| *p == path).map_or(0, |a| a.1);
        if lines.len() > allowed {
            problems.push(format!(
                "{path}: {} read(s) of a parameter by its name on lines {lines:?} (allowed {allowed}); read it through the Param its producer declares",
                lines.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each crate's modules, lowest first: a module names only those before it (its own
/// crate's; a crate's dependencies are the compiler's to hold). (source folder,
/// modules).
const LAYERS: &[(&str, &[&str])] = &[
    ("crates/platform/src", &["procfs", "sys", "files", "placement", "preflight", "clock", "leftovers", "machine"]),
    ("crates/figure/src", &["histo", "key", "unit", "stats", "model", "sweep", "exchange", "published"]),
    (
        "crates/measure/src",
        &[
            "helper",
            "kcounts",
            "observe",
            "trace",
            "shared_core",
            "runner",
            "tasks",
            "tracepass",
            "rounds",
            "bench",
            "condition",
            "worker",
        ],
    ),
    ("src", &["judge", "catalogue", "profiles", "report", "views", "session", "runs", "crosscheck", "cli"]),
];

/// The modules of its own crate that `code` names (`crate::x`, `crate::{x, y}`).
fn crate_modules_named(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if ident_char(code[..at].chars().last().as_ref()) || code[..at].ends_with('$') {
            continue; // another path ending in `crate`, or a macro's `$crate`
        }
        let rest = &code[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group
                .split('}')
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|part| part.trim().split("::").next())
                .collect(),
            None => vec![rest.split(|c: char| !ident_char(Some(&c))).next().unwrap_or("")],
        };
        found.extend(names.into_iter().filter(|n| !n.is_empty()).map(|n| (line_of(code, at), n.to_string())));
    }
    found
}

#[test]
fn a_module_names_only_the_layers_below_it() {
    let sources = sources();
    let mut problems = Vec::new();
    for (dir, order) in LAYERS {
        let listed: Vec<String> = fs::read_dir(root().join(dir))
            .unwrap_or_else(|e| panic!("{dir} lists: {e}"))
            .map(|e| e.expect("a readable folder entry").path())
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .filter(|m| m != "lib" && m != "main")
            .collect();
        for m in &listed {
            if !order.contains(&m.as_str()) {
                problems.push(format!("{dir}/{m}: a module LAYERS does not place"));
            }
        }
        for (rank, module) in order.iter().enumerate() {
            let own = [format!("{dir}/{module}.rs"), format!("{dir}/{module}/")];
            for (path, code) in sources.iter().filter(|(p, _)| own.iter().any(|o| p.starts_with(o.as_str()))) {
                for (line, named) in crate_modules_named(code) {
                    let higher = order.iter().position(|m| *m == named).is_some_and(|r| r > rank);
                    if higher {
                        problems.push(format!("{path}:{line}: `{module}` names `{named}`, a layer above it"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "an upward arrow (move what both need below both):\n{}", problems.join("\n"));
}

/// The layer reader finds a module named alone, in a group or in a longer path, and
/// nothing in `$crate` or another crate's path.
#[test]
fn the_layer_reader_finds_what_it_looks_for() {
    let code = code_only(
        r##"
use crate::report::table;
use crate::{judge::noise, views};
fn f() { oscost_figure::model::X; $crate::sys::x(); crate::cli::run(); }
// crate::session
"##,
    );
    let named: Vec<(usize, String)> = crate_modules_named(&code);
    let expected = [(2, "report"), (3, "judge"), (3, "views"), (4, "cli")];
    assert_eq!(named, expected.map(|(l, n)| (l, n.to_string())));
}

/// What the simulator may not reach for: the store, the machine's system calls, files,
/// clocks and threads.
const SIM_MAY_NOT_NAME: &[&str] = &[
    "oscost_store",
    "oscost_platform::sys",
    "std::fs",
    "std::time::Instant",
    "Instant::now",
    "std::thread",
    "SystemTime",
];

#[test]
fn the_simulator_measures_nothing_and_opens_nothing() {
    let mut found = Vec::new();
    for (path, code) in sources().iter().filter(|(p, _)| p.starts_with("crates/sim/src/")) {
        for name in SIM_MAY_NOT_NAME {
            for (at, _) in code.match_indices(name) {
                found.push(format!("{path}:{}: {name}", line_of(code, at)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the simulator reaches the machine (hand it a ProfileSource instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn string_errors_only_where_the_allowlist_says_why() {
    let mut problems = Vec::new();
    let mut total = 0;
    for (path, code) in sources() {
        let lines = string_errors(&code);
        total += lines.len();
        let allowed = STRING_ERRORS_ALLOWED.iter().find(|(p, _, _)| *p == path).map_or(0, |a| a.1);
        if lines.len() > allowed {
            problems.push(format!(
                "{path}: {} String error(s) on lines {lines:?} (allowed {allowed}); use a thiserror enum that carries the context",
                lines.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let allowed: usize = STRING_ERRORS_ALLOWED.iter().map(|a| a.1).sum();
    eprintln!("{total} String error(s) in src, {allowed} allowed");
}

/// The lines of `code` that name module `kind` in a path (`kind::`, not `other_kind::`).
fn kind_mentions(code: &str, kind: &str) -> Vec<usize> {
    let mut lines: Vec<usize> = code
        .match_indices(&format!("{kind}::"))
        .filter(|(at, _)| !ident_char(code[..*at].chars().last().as_ref()))
        .map(|(at, _)| line_of(code, at))
        .collect();
    lines.dedup();
    lines
}

/// The lines of the registry `name` (`KINDS`, `EXPORTERS`) in `code`, from its
/// declaration to its closing bracket.
fn registry_lines(code: &str, name: &str) -> std::ops::RangeInclusive<usize> {
    let start = code.find(&format!("const {name}")).unwrap_or_else(|| panic!("{name} is declared"));
    let end = start + code[start..].find("];").unwrap_or_else(|| panic!("{name} ends"));
    line_of(code, start)..=line_of(code, end)
}

/// The modules of the folder `dir` of the crate but `support`: the kinds of condition,
/// the exporters.
fn modules_in(dir: &str, support: &[&str]) -> Vec<String> {
    fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir} lists: {e}"))
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|stem| !support.contains(&stem.as_str()))
        .collect()
}

#[test]
fn a_condition_is_its_file_and_its_line_in_the_registry() {
    let sources = sources();
    let registry_path = format!("{CONDITIONS}/mod.rs");
    let registry = &sources.iter().find(|(p, _)| *p == registry_path).expect("condition/mod.rs").1;
    let registered = registry_lines(registry, "KINDS");
    let kinds = modules_in(CONDITIONS, CONDITION_SUPPORT);
    assert!(kinds.len() >= 8, "the kinds of condition are read from {CONDITIONS}: {kinds:?}");
    let mut problems = Vec::new();
    for kind in &kinds {
        let own = format!("{CONDITIONS}/{kind}.rs");
        for (path, code) in &sources {
            let allowed = KIND_NAMED_ELSEWHERE.iter().any(|(p, k, _)| p == path && k == kind);
            if *path == own || allowed {
                continue;
            }
            // Inside the conditions' folder a kind is `kind::`; elsewhere
            // `condition::kind::` (`sys` has a `sched` of its own).
            let lines = if path.starts_with(&format!("{CONDITIONS}/")) {
                kind_mentions(code, kind)
            } else {
                kind_mentions(code, &format!("condition::{kind}"))
            };
            let stray: Vec<_> = if *path == registry_path {
                lines.iter().filter(|l| !registered.contains(l)).collect()
            } else {
                lines.iter().collect()
            };
            if !stray.is_empty() {
                problems.push(format!(
                    "{path}: names the condition kind `{kind}` on lines {stray:?}; a kind is reached through condition::Act, only its KINDS line names it"
                ));
            }
        }
        if !kind_mentions(registry, kind).iter().any(|l| registered.contains(l)) {
            problems.push(format!("{own}: no line of condition::KINDS registers it"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_exporter_is_its_file_and_its_line_in_the_registry() {
    let sources = sources();
    let registry = &sources.iter().find(|(p, _)| p == "src/report/export/mod.rs").expect("report/export/mod.rs").1;
    let registered = registry_lines(registry, "EXPORTERS");
    let exporters = modules_in("src/report/export", &["mod"]);
    assert!(exporters.len() >= 4, "the exporters are read from src/report/export: {exporters:?}");
    let mut problems = Vec::new();
    for name in &exporters {
        let lines = kind_mentions(registry, name);
        if !lines.iter().any(|l| registered.contains(l)) {
            problems.push(format!("src/report/export/{name}.rs: no line of EXPORTERS registers it"));
        }
        let stray: Vec<_> = lines.iter().filter(|l| !registered.contains(l)).collect();
        if !stray.is_empty() {
            problems.push(format!(
                "src/report/export/mod.rs: names the exporter `{name}` on lines {stray:?}; formats are reached through EXPORTERS"
            ));
        }
    }
    for (path, code) in &sources {
        if code.contains("enum ExportFormat") {
            problems.push(format!("{path}: a closed enum of export formats; an exporter is a line of EXPORTERS"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_wildcard_arm_over_conditions_policies_or_exporters() {
    let problems: Vec<String> = sources()
        .into_iter()
        .flat_map(|(path, code)| {
            wildcard_matches(&code, CLOSED_ENUMS).into_iter().map(move |line| {
                format!("{path}:{line}: a match over {CLOSED_ENUMS:?} with a `_ =>` (or catch-all) arm")
            })
        })
        .collect();
    assert!(problems.is_empty(), "name every variant instead:\n{}", problems.join("\n"));
}

/// The readers above find what they are for, and nothing in comments or strings.
#[test]
fn the_readers_find_what_they_look_for() {
    let code = code_only(
        r##"
// fn a() -> Result<(), String> {}
fn b() -> Result<(i32, String), String> {}
fn c() -> Result<String, Error> {}
fn d(f: impl FnOnce() -> Result<u64, String>) {}
let s = "Result<(), String>";
let r = r#"match x { Condition::A => 1, _ => 2 }"#;
fn e() -> io::Result<String> {}
impl FromStr for X { type Err = String; }
fn f(c: &Condition) -> u8 {
    match c {
        Condition::Seccomp(_) => 1,
        _ => 2,
    }
}
fn g(c: &Condition) -> u8 {
    match c {
        Condition::Seccomp(_) => { 1 }
        Condition::Thp(m) if m.on() => 3,
        other => 2,
    }
}
fn h(c: &Condition, s: &str) -> u8 {
    match (c, s) {
        (Condition::Seccomp(_), _) => 1,
        (Condition::Thp(_), "x") | (Condition::Thp(_), _) => 3,
        (Condition::Sched(_) | Condition::Spec(_), _) => 2,
    }
}
fn i(s: &str) -> u8 {
    match s {
        "perf" => Condition::Observer(o),
        _ => 2,
    }
}
fn j(f: ExportFormat) -> u8 {
    match f {
        ExportFormat::Json => { 1 }.max(0),
        ExportFormat::Csv => match 'x' { '{' => 1, _ => 0 },
        _ if true => 5,
    }
}
"##,
    );
    assert_eq!(string_errors(&code), vec![3, 5, 9]);
    let fields = code_only(
        r##"
struct A { pub benchmark: String, n: usize }
pub(crate) struct B<'a> {
    #[serde(flatten)]
    pub bench: &'a str,
    variant: Cow<'a, str>,
    params: BTreeMap<String, serde_json::Value>,
    method: Option<String>,
    benchmark_count: String,
    pub key: FigureKey,
    f: fn(&str) -> String,
}
struct C(String);
struct D { method: Method, params: Params, bench: BenchId }
// struct E { benchmark: String }
pub enum ExportError {
    #[error("row {benchmark}")]
    Row { benchmark: String, line: usize },
    Tuple(String, [u8; 2]),
    Keyed { key: FigureKey, params: Params },
    Unit,
    Nested { inner: Vec<String>, method: &'static str },
}
enum F { A(String), B { variant: Option<String> } }
"##,
    );
    let names: Vec<(usize, String)> = identity_text_fields(&fields).into_iter().map(|(l, n, _)| (l, n)).collect();
    let expected = [
        (2, "benchmark"),
        (5, "bench"),
        (6, "variant"),
        (7, "params"),
        (8, "method"),
        (18, "benchmark"),
        (22, "method"),
        (24, "variant"),
    ];
    assert_eq!(names, expected.map(|(l, n)| (l, n.to_string())));
    assert_eq!(wildcard_matches(&code, &["Condition", "PolicyKind", "ExportFormat"]), vec![11, 17, 37]);
}

/// The by-name reader counts reads in code, not in an inline test module.
#[test]
fn the_raw_read_reader_skips_test_modules() {
    let code = code_only(
        r##"
fn a(r: &Row) -> bool { r.params.raw("x").is_some() }
// r.params.raw("comment")
fn b(k: &Key) -> bool { k.params().raw("y").is_some() && s.raw().is_some() }
#[cfg(test)]
mod tests {
    fn c(r: &Row) { r.params.raw("z"); }
}
#[cfg(test)]
mod more;
fn d(r: &Row) { r.params.raw("w"); }
"##,
    );
    assert_eq!(raw_reads(&code), vec![2, 4, 7, 11]);
    assert_eq!(raw_reads(&without_test_modules(&code)), vec![2, 4, 11]);
}

/// The registry reader finds a kind named in code, not one whose name ends another's,
/// and tells the registry's lines from the rest.
#[test]
fn the_kind_readers_find_what_they_look_for() {
    let code = code_only(
        r##"
mod thp;
pub const KINDS: &[Kind] = &[
    thp::KIND,
    sched::NICE,
];
fn f() { let x = thp::Mode::Always; let y = nothp::X; let z = "thp::X"; }
"##,
    );
    assert_eq!(kind_mentions(&code, "thp"), vec![4, 7]);
    assert_eq!(registry_lines(&code, "KINDS"), 3..=6);
}
