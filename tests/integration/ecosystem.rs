//! The habits of the ecosystem: a Prometheus textfile a scraper parses, completion
//! scripts and the man page generated from the argument definitions.

use crate::common;

use std::collections::HashMap;

use common::*;

#[test]
fn the_prometheus_textfile_parses_and_holds_the_stored_medians_in_seconds() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "syscall.getpid", "--quick", "--rounds", "2"], &db.path);
    let file = db.dir.path().join("oscost.prom");
    run_ok(&["export", "--format", "prometheus", "-o", file.to_str().unwrap()], &db.path);
    let text = std::fs::read_to_string(&file).unwrap();
    // Written by rename: no temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(db.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let scrape = prom_text_format_parser::Scrape::parse(&text).expect("a scraper parses the textfile");
    assert!(scrape.metrics.iter().all(|m| m.name.starts_with("oscost_")), "no name of node_exporter's");
    let doc = json_of(&run_ok(&["show", "--format", "json"], &db.path));
    let medians: HashMap<(String, String, String), f64> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let variant = r["params"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| *k != "batch_size")
                .map(|(k, v)| format!("{k}={}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                .collect::<Vec<_>>()
                .join(" ");
            let key =
                (r["benchmark"].as_str().unwrap().to_string(), variant, r["method"].as_str().unwrap().to_string());
            (key, r["median"].as_f64().unwrap())
        })
        .collect();
    let metric = |name: &str| scrape.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name}"));
    let seconds = metric("oscost_benchmark_seconds");
    assert_eq!(seconds.kind, prom_text_format_parser::Type::Gauge);
    let get = |s: &prom_text_format_parser::Sample, k: &str| {
        s.labels.iter().find(|l| l.key == k).map(|l| l.value.clone()).unwrap_or_default()
    };
    let of_stat = |stat: &'static str| seconds.samples.iter().filter(move |s| get(s, "stat") == stat);
    assert_eq!(of_stat("median").count(), medians.len(), "one median per stored figure: {text}");
    for s in of_stat("median") {
        let key = (get(s, "benchmark"), get(s, "variant"), get(s, "method"));
        let stored = medians.get(&key).unwrap_or_else(|| panic!("{key:?} is a stored figure"));
        let v = s.value.value.as_f64();
        assert!((v - stored * 1e-9).abs() <= 1e-12 * v.abs(), "{key:?}: {v} s against {stored} ns");
        assert_eq!(get(s, "kind"), "measure");
    }
    // Each per-call row's p99 (from its 100 samples and more), and the intervals.
    let per_call = doc["results"].as_array().unwrap().iter().filter(|r| r["method"] == "per_call").count();
    assert_eq!(of_stat("p99").count(), per_call, "{text}");
    assert!(of_stat("ci_low").count() >= 1 && of_stat("ci_low").count() == of_stat("ci_high").count());
    assert!(seconds.samples.iter().all(|s| get(s, "quantile").is_empty()), "no quantile label outside a summary");
    promtool_accepts(&file);
    assert_eq!(metric("oscost_info").samples[0].value.value.as_f64(), 1.0);
    assert!(metric("oscost_run_timestamp_seconds").samples[0].value.value.as_f64() > 1.7e9);
    // More than one run is refused with a reason.
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &db.path);
    let out = oscost().args(["export", "1", "2", "--format", "prometheus", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one run"));
}

/// `promtool check metrics` (Prometheus's own linter, in Debian's prometheus package,
/// which CI installs) passes the textfile; skipped with a message without promtool.
fn promtool_accepts(file: &std::path::Path) {
    let Some(promtool) =
        ["/usr/bin/promtool", "/usr/local/bin/promtool"].iter().find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("skipping promtool check metrics: no promtool on this machine (CI installs Debian's prometheus)");
        return;
    };
    let out = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .expect("run promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A sim run and a trace run export with their kind, and no PID reaches a label.
#[test]
fn sim_and_trace_exports_say_their_kind_and_carry_no_pid() {
    let db = temp_db();
    run_ok(&["sim", "--policy", "linux-2.4", "--workload", "chat", "--profile", "smp2002"], &db.path);
    let file = db.dir.path().join("sim.prom");
    run_ok(&["export", "latest", "--format", "prometheus", "-o", file.to_str().unwrap()], &db.path);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("kind=\"sim\""), "{text}");
    assert!(!text.contains("kind=\"measure\""), "{text}");
    promtool_accepts(&file);
    let out = oscost().args(["trace", "--for", "300ms", "--db"]).arg(&db.path).output().unwrap();
    if !out.status.success() {
        eprintln!(
            "skipping the trace export: tracing unavailable here ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let file = db.dir.path().join("trace.prom");
    run_ok(&["export", "latest", "--format", "prometheus", "-o", file.to_str().unwrap()], &db.path);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("kind=\"trace\""), "{text}");
    assert!(!text.contains("trace.task"), "rows that name a process by PID are left out: {text}");
    promtool_accepts(&file);
}

/// Dynamic completion (`COMPLETE=bash oscost`): the shell is offered benchmark ids
/// where `run` takes them and the stored runs where `show` takes one.
#[test]
fn dynamic_completion_offers_ids_and_stored_runs() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1", "--save", "base"], &db.path);
    let complete = |words: &[&str]| -> Vec<String> {
        let out = oscost()
            .env("COMPLETE", "bash")
            .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
            .env("_CLAP_IFS", "\n")
            .env("OSCOST_DB", &db.path)
            .arg("--")
            .args(words)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
    };
    let ids = complete(&["oscost", "run", "ctx.p"]);
    assert_eq!(ids, vec!["ctx.pipe".to_string()]);
    let runs = complete(&["oscost", "show", ""]);
    for want in ["latest", "1", "base"] {
        assert!(runs.iter().any(|r| r == want), "{want} in {runs:?}");
    }
    let suites = complete(&["oscost", "run", "--suite", "tr"]);
    assert_eq!(suites, vec!["travis98".to_string()]);
    // The registration script a user sources.
    let out = oscost().env("COMPLETE", "bash").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete -o nospace"), "a bash registration script");
}

#[test]
fn completions_and_the_man_page_come_from_the_definitions() {
    let db = temp_db();
    for (shell, needle) in [("bash", "_oscost()"), ("zsh", "#compdef oscost"), ("fish", "complete -c oscost")] {
        let text = String::from_utf8(run_ok(&["completions", shell], &db.path).stdout).unwrap();
        assert!(text.contains(needle), "{shell}: {needle}");
        assert!(text.contains("rounds"), "{shell}: every flag is there");
    }
    let man = String::from_utf8(run_ok(&["man"], &db.path).stdout).unwrap();
    assert!(man.starts_with(".ie") || man.contains(".TH oscost"), "{}", &man[..200.min(man.len())]);
    assert!(man.contains("compare"));
    for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "OSCOST_DB"] {
        assert!(man.contains(section), "oscost(1) lacks {section}");
    }
    // Every page oscost(1) names exists.
    for name in ["run", "compare", "import", "sim", "trace"] {
        assert!(man.contains(&format!("oscost\\-{name}(1)")), "{name}");
        let page = String::from_utf8(run_ok(&["man", name], &db.path).stdout).unwrap();
        assert!(page.contains(&format!(".TH oscost-{name} ")), "{name}: {}", &page[..200.min(page.len())]);
        assert!(page.contains("EXIT STATUS"), "{name}");
    }
    assert!(String::from_utf8(run_ok(&["man", "compare"], &db.path).stdout).unwrap().contains("fail\\-on"));
    let out = oscost().args(["man", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = oscost().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn three_machines_from_three_databases_print_as_a_matrix() {
    let a = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2"], &a.path);
    let (b, c) = (temp_db(), temp_db());
    as_host(&a.path, "host-b", true, &b.path);
    as_host(&a.path, "host-c", true, &c.path);
    let side = |db: &TempDb| format!("latest@{}", db.path.display());
    // --wide: each header on one line (the fitted table wraps them).
    let out = run_ok(&["compare", "latest", &side(&b), &side(&c), "--wide"], &a.path);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("host-b") && text.contains("host-c"), "the hosts head the columns: {text}");
    assert!(text.contains("kernel"), "the fingerprint fields that differ are shown: {text}");
    assert!(text.contains("(baseline)") && text.matches("ratio [95% CI] verdict").count() == 2, "{text}");
    assert!(text.contains("syscall.getppid"));
    // The same runs in one database, grouped by host; and the HTML report's bars.
    as_host(&a.path, "host-b", true, &a.path);
    as_host(&a.path, "host-c", true, &a.path);
    let m = json_of(&run_ok(&["compare", "--by", "host", "--json"], &a.path));
    let names: Vec<&str> = m["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.contains(&"host-b") && names.contains(&"host-c"));
    assert_eq!(m["rows"][0]["cells"].as_array().unwrap().len(), 2);
    let html = a.dir.path().join("fleet.html");
    run_ok(&["report", "1", "2", "3", "-o", html.to_str().unwrap()], &a.path);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Machines side by side") && page.contains("ratios to the baseline"), "grouped bars");
}

/// `--version` names the commit the binary was built from (as the fingerprint does),
/// so a figure can be traced to the code that measured it.
#[test]
fn version_names_the_commit() {
    let out = oscost().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let commit = text.split("(commit ").nth(1).and_then(|t| t.strip_suffix(")\n")).unwrap_or_default();
    assert!(text.starts_with(&format!("oscost {}", env!("CARGO_PKG_VERSION"))), "{text}");
    assert!(commit == "unknown" || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())), "{text}");
}

/// Every command's `--help` is wrapped to the terminal: at most 80 columns where the
/// terminal says 80 (`COLUMNS`), at most 100 written to a pipe.
#[test]
fn help_is_wrapped_to_the_terminal() {
    let commands = [
        "run",
        "show",
        "runs",
        "compare",
        "export",
        "import",
        "report",
        "observe",
        "trace",
        "sim",
        "info",
        "list",
        "noise",
        "plan",
        "history",
        "push",
        "crosscheck",
        "completions",
        "man",
    ];
    for (columns, width) in [(Some("80"), 80), (None, 100)] {
        for args in std::iter::once(vec!["--help"]).chain(commands.iter().map(|c| vec![*c, "--help"])) {
            let mut cmd = oscost();
            cmd.args(&args).env_remove("COLUMNS");
            if let Some(c) = columns {
                cmd.env("COLUMNS", c);
            }
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).unwrap();
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= width, "{args:?} at {columns:?}: a line of {widest} columns\n{text}");
        }
    }
}
