//! The README stays a first page and the manual in `docs/` stays whole: README.md is at
//! most 250 lines, it links every page of `docs/`, every relative link of README.md and of
//! the pages leads to a file that exists (and, with an `#anchor`, to a heading of it), the
//! marks `scripts/readme-sample` fills are each there once, and prose lines stay within 100
//! columns. Pure file reading: nothing here measures.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 250;
const PROSE_MAX_COLUMNS: usize = 100;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every Markdown page of `docs/`, sorted.
fn doc_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages
}

/// The lines of a page outside fenced code blocks, with their line numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The targets of the inline links `[text](target)` outside code blocks and code spans.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (number, line) in prose_lines(text) {
        let outside_code: String =
            line.split('`').enumerate().filter(|(i, _)| i % 2 == 0).map(|(_, part)| part).collect::<Vec<_>>().join(" ");
        let mut rest = outside_code.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push((number, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    targets
}

/// The anchor GitHub gives a heading: lower case, letters, digits, `-` and `_` kept,
/// spaces made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors of a page's headings, a repeated one numbered `-1`, `-2` as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let base = slug(heading.trim_start_matches('#').trim());
        let mut anchor = base.clone();
        let mut n = 0;
        while found.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        found.insert(anchor);
    }
    found
}

/// Every relative link of `page` that leads nowhere: a missing file, or a missing heading.
fn broken_links(page: &Path) -> Vec<String> {
    let text = read(page);
    let dir = page.parent().expect("a page is in a folder");
    let mut broken = Vec::new();
    for (line, target) in link_targets(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (target.as_str(), None),
        };
        let linked = if file.is_empty() { page.to_path_buf() } else { dir.join(file) };
        let shown = format!("{}:{line}: {target}", page.strip_prefix(root()).unwrap_or(page).display());
        if !linked.exists() {
            broken.push(format!("{shown} (no such file)"));
            continue;
        }
        if let Some(anchor) = anchor
            && linked.extension().is_some_and(|ext| ext == "md")
            && !anchors(&read(&linked)).contains(anchor)
        {
            broken.push(format!("{shown} (no such heading)"));
        }
    }
    broken
}

#[test]
fn readme_is_a_first_page_of_at_most_250_lines() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move detail to docs/"
    );
}

#[test]
fn readme_links_every_docs_page() {
    let readme = read(&root().join("README.md"));
    let linked: BTreeSet<String> = link_targets(&readme)
        .into_iter()
        .map(|(_, target)| target.split('#').next().unwrap_or_default().to_string())
        .collect();
    let pages = doc_pages();
    assert!(pages.len() > 1, "docs/ holds the manual's pages");
    let unlinked: Vec<String> = pages
        .iter()
        .map(|page| format!("docs/{}", page.file_name().expect("a page has a name").to_string_lossy()))
        .filter(|page| !linked.contains(page))
        .collect();
    assert!(unlinked.is_empty(), "README.md links no {unlinked:?}");
}

#[test]
fn every_link_of_the_readme_and_docs_resolves() {
    let mut pages = vec![root().join("README.md")];
    pages.extend(doc_pages());
    let broken: Vec<String> = pages.iter().flat_map(|page| broken_links(page)).collect();
    assert!(broken.is_empty(), "links that lead nowhere:\n{}", broken.join("\n"));
}

#[test]
fn the_marks_the_sample_script_fills_are_there_once() {
    let marks = [
        ("README.md", "<!-- sample:begin -->"),
        ("README.md", "<!-- sample:end -->"),
        ("README.md", "<!-- size -->"),
        ("README.md", "<!-- /size -->"),
        ("docs/sample.md", "<!-- sample:begin -->"),
        ("docs/sample.md", "<!-- sample:end -->"),
        ("docs/benchmarks.md", "<!-- trace-sample:begin -->"),
        ("docs/benchmarks.md", "<!-- trace-sample:end -->"),
    ];
    for (file, mark) in marks {
        let count = read(&root().join(file)).matches(mark).count();
        assert_eq!(count, 1, "{file} holds {mark} {count} times; scripts/readme-sample needs it once");
    }
}

#[test]
fn prose_lines_fit_in_100_columns() {
    let mut pages = vec![root().join("README.md")];
    pages.extend(doc_pages());
    let mut long = Vec::new();
    for page in &pages {
        let text = read(page);
        for (number, line) in prose_lines(&text) {
            let is_table_row = line.trim_start().starts_with('|');
            let columns = line.chars().count();
            if !is_table_row && columns > PROSE_MAX_COLUMNS {
                long.push(format!("{}:{number} ({columns} columns)", page.display()));
            }
        }
    }
    assert!(long.is_empty(), "prose lines wider than {PROSE_MAX_COLUMNS} columns:\n{}", long.join("\n"));
}

#[test]
fn slugs_follow_githubs_rule() {
    assert_eq!(slug("Trace pass: the kernel's own events"), "trace-pass-the-kernels-own-events");
    assert_eq!(slug("Reprints (`run --suite`, `show RUN --suite`)"), "reprints-run---suite-show-run---suite");
    let repeated = anchors("# Notes\n\n## Notes\n```\n# not a heading\n```\n");
    assert_eq!(repeated, BTreeSet::from(["notes".to_string(), "notes-1".to_string()]));
}
