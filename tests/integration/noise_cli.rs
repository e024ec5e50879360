//! `oscost noise`: A/A runs stored as kind `noise`, each figure's spread between runs
//! from them, and `compare` holding that spread in the interval of a one-run side.

use crate::common;

use common::{as_host, json_of, run_ok, temp_db};

/// The text's words one space apart: prose is wrapped to the terminal's width, and a
/// sentence asserted on may break at any space.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn noise_runs_give_spreads_that_compare_holds_for_one_run_sides() {
    let db = temp_db();
    let out = run_ok(&["noise", "syscall.getppid", "--runs", "3", "--quick", "--rounds", "2", "--json"], &db.path);
    let v = json_of(&out);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    let figures = v["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 2, "batch and per-call: {figures:?}");
    for f in figures {
        assert_eq!(f["benchmark"], "syscall.getppid");
        assert_eq!(f["pairs"], 2);
        let (sigma, within, between) =
            (f["sigma"].as_f64().unwrap(), f["within"].as_f64().unwrap(), f["between"].as_f64().unwrap());
        assert!(sigma >= 0.0 && within >= 0.0 && between >= 0.0, "{f}");
        // The between-run part is what the runs' intervals do not explain.
        let expected = oscost::judge::noise::between_of(&[sigma], &[within * within]);
        assert!((between - expected).abs() < 1e-9, "{f}");
        let widening = f["widening"].as_f64().unwrap();
        assert!(
            (widening - ((oscost::judge::noise::side_widening(between, 2) * 2f64.sqrt()).exp() - 1.0)).abs() < 1e-12,
            "{f}"
        );
    }
    // Stored as noise runs, which a history of measured runs leaves out.
    let runs = json_of(&run_ok(&["runs", "--json"], &db.path));
    assert!(runs.as_array().unwrap().iter().all(|r| r["kind"] == "noise"), "{runs}");
    // Two measured runs: compare widens each one-run side by its figure's spread, and
    // says so, with or without a threshold given.
    for _ in 0..2 {
        run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &db.path);
    }
    for extra in [&[][..], &["--threshold", "3"]] {
        let args = [&["compare", "4", "5"][..], extra].concat();
        let text = String::from_utf8_lossy(&run_ok(&args, &db.path).stdout).into_owned();
        assert!(
            words(&text).contains(
                "between runs: 2 of 2 intervals hold their figure's spread between runs, from this machine's 3 noise runs"
            ),
            "{text}"
        );
        // Every row, with its spread, in -v (at a glance, uncertain rows fold).
        let every = String::from_utf8_lossy(&run_ok(&[&args[..], &["-v"]].concat(), &db.path).stdout).into_owned();
        assert!(every.contains("┆ between runs"), "a between-runs column: {every}");
    }
    let json = json_of(&run_ok(&["compare", "4", "5", "--json"], &db.path));
    let spreads: Vec<f64> = figures.iter().map(|f| f["between"].as_f64().unwrap()).collect();
    for c in json["results"].as_array().unwrap() {
        assert_eq!(c["threshold"].as_f64(), Some(0.03), "{c}");
        let b = c["between_runs"].as_f64().unwrap();
        // Two one-run sides of this machine: its spread for each, in quadrature.
        assert!(spreads.iter().any(|s| (s * 2f64.sqrt() - b).abs() < 1e-12), "{c}");
    }
    // Sets of runs show the spread themselves and are not widened.
    let sets = json_of(&run_ok(&["compare", "1,2", "4,5", "--json"], &db.path));
    assert!(sets["results"].as_array().unwrap().iter().all(|c| c["between_runs"].is_null()), "{sets}");
    // Three sides (the matrix) and the HTML report hold it the same way.
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &db.path);
    let text = String::from_utf8_lossy(&run_ok(&["compare", "4", "5", "6"], &db.path).stdout).into_owned();
    assert!(
        words(&text).contains(
            "* between runs: 4 of 4 intervals hold their figure's spread between runs, from this machine's 3 noise runs"
        ),
        "{text}"
    );
    let matrix = json_of(&run_ok(&["compare", "4", "5", "6", "--json"], &db.path));
    for row in matrix["rows"].as_array().unwrap() {
        for c in row["cells"].as_array().unwrap() {
            let b = c["between_runs"].as_f64().unwrap();
            assert!(spreads.iter().any(|s| (s * 2f64.sqrt() - b).abs() < 1e-12), "{c}");
        }
    }
    assert!(matrix["columns"].as_array().unwrap().iter().all(|c| c["noise_runs"]["runs"] == 3), "{matrix}");
    let dir = tempfile::tempdir().unwrap();
    for (runs, header) in [(&["4", "5"][..], "<th>between runs</th>"), (&["4", "5", "6"], "]* ")] {
        let html = dir.path().join("report.html");
        let args = [&["report"][..], runs, &["-o", html.to_str().unwrap()]].concat();
        run_ok(&args, &db.path);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains(header), "{runs:?}: {page}");
        assert!(page.contains("spread between runs, from this machine&#39;s 3 noise runs"), "{runs:?}");
    }
    let history = String::from_utf8_lossy(&run_ok(&["history", "syscall.getppid"], &db.path).stdout).into_owned();
    assert!(history.contains("3 runs"), "history reads the measured runs only: {history}");
}

#[test]
fn noise_refuses_what_it_cannot_use() {
    let db = temp_db();
    for args in [&["noise", "--runs", "2"][..], &["noise", "--suite", "lmbench"], &["noise", "--save", "x"]] {
        let out = common::oscost().args(args).arg("--db").arg(&db.path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// `run --precision` judges the figures the noise runs measured with their spread
/// between runs beside their interval or their blocks, and says so; in a
/// database without noise runs, none is judged with it. (How many rounds a figure
/// takes depends on the machine, so only the split of the two figures is asserted.)
#[test]
fn an_adaptive_run_says_how_it_judged_each_figure() {
    let db = temp_db();
    let adaptive = ["run", "syscall.getppid", "--quick", "--precision", "50", "--max-time", "30s"];
    // (from blocks, with the machine's spread, on their own interval) in the summary.
    let split = |text: &str| -> (usize, usize, usize) {
        // The summary is fitted to the terminal: its continuation lines join it again.
        let text = text.replace("\n  ", " ");
        let line = text.lines().find(|l| l.starts_with("precision ±50.0%: ")).unwrap_or_else(|| panic!("{text}"));
        let count = |after: &str| -> usize {
            let rest = &line[line.find(after).unwrap_or_else(|| panic!("{line}")) + after.len()..];
            rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
        };
        let blocks = count("(the drift the run saw) for ");
        let spread = count("(oscost noise) for ");
        let reached = count("precision ±50.0%: ");
        assert!(reached <= 2, "{line}");
        (blocks, spread, 2 - blocks - spread)
    };
    let out = run_ok(&adaptive, &db.path);
    let (_, spread, _) = split(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(spread, 0, "no noise runs: nothing is judged with them");
    let noise = ["noise", "syscall.getppid", "--runs", "3", "--quick", "--rounds", "2", "--json"];
    let noise = json_of(&run_ok(&noise, &db.path));
    // A figure whose noise runs sit a factor of two apart (a machine loaded by other
    // work can do that) has its spread refused: it is judged without one.
    let refused = |method: &serde_json::Value| {
        let f = noise["figures"].as_array().unwrap().iter().find(|f| &f["method"] == method);
        f.is_none_or(|f| f["between"].as_f64().is_none_or(|b| b > std::f64::consts::LN_2))
    };
    let taken = noise["figures"].as_array().unwrap().iter().filter(|f| !refused(&f["method"])).count();
    let out = run_ok(&adaptive, &db.path);
    let (text, said) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let (blocks, spread, own) = split(&text);
    assert!(blocks + spread >= taken && own <= 2 - taken, "every figure with a spread has it: {text}");
    if taken == 2 {
        assert!(words(&text).contains(&format!("for {blocks}, {blocks} of them with this machine's spread")), "{text}");
    }
    let announced = format!(
        "stands beside its interval (and its blocks of rounds), for the {taken} figures this machine's 3 noise runs measured"
    );
    assert_eq!(said.contains(&announced), taken > 0, "{said}");
    // The JSON of an adaptive run carries the same judgement, row by row.
    let v = json_of(&run_ok(&[&adaptive[..], &["--json"]].concat(), &db.path));
    let p = &v["precision"];
    assert_eq!(p["target"].as_f64(), Some(0.5), "{p}");
    let figures = p["figures"].as_array().unwrap();
    assert_eq!(figures.len(), v["results"].as_array().unwrap().len());
    let reached = figures.iter().filter(|f| f["standing"] == "reached").count();
    assert_eq!(p["reached"].as_u64(), Some(reached as u64));
    for (f, r) in figures.iter().zip(v["results"].as_array().unwrap()) {
        let rounds = r["rounds"].as_array().unwrap().len();
        assert_eq!(f["rounds"].as_u64(), Some(rounds as u64), "{f}");
        // The machine's spread, where the noise runs measured one for the figure,
        // always; beside blocks exactly when it has three of them.
        let basis = match (refused(&f["method"]), rounds >= 30) {
            (false, true) => "blocks_and_between_runs",
            (false, false) => "between_runs",
            (true, true) => "blocks",
            (true, false) => "own_interval",
        };
        assert_eq!(f["basis"], basis, "{f}");
        // Its cap: the rounds its benchmark's pace fitted in the time, within the
        // ceiling, never fewer than it ran.
        let cap = f["cap"].as_u64().unwrap() as usize;
        assert!((rounds..=oscost::session::ADAPTIVE_MAX_ROUNDS).contains(&cap), "{f}");
        assert_eq!((f["benchmark"].clone(), f["method"].clone()), (r["benchmark"].clone(), r["method"].clone()));
    }
    assert!(json_of(&run_ok(&["run", "syscall.getppid", "--quick", "--json"], &db.path)).get("precision").is_none());
}

/// Each side takes the spread of its own machine's noise runs, read from its own
/// database: here only B's database has noise runs, so only B's side is widened.
#[test]
fn each_side_takes_its_own_databases_noise_runs() {
    let (a, b) = (temp_db(), temp_db());
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &a.path);
    let out = run_ok(&["noise", "syscall.getppid", "--runs", "3", "--quick", "--rounds", "2", "--json"], &b.path);
    let spreads: Vec<f64> =
        json_of(&out)["figures"].as_array().unwrap().iter().map(|f| f["between"].as_f64().unwrap()).collect();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &b.path);
    let b_path = b.path.to_str().unwrap();
    let text = String::from_utf8_lossy(&run_ok(&["compare", "1", "4", "--db-b", b_path], &a.path).stdout).into_owned();
    assert!(words(&text).contains("from B's machine's 3 noise runs"), "{text}");
    let json = json_of(&run_ok(&["compare", "1", "4", "--db-b", b_path, "--json"], &a.path));
    for c in json["results"].as_array().unwrap() {
        let between = c["between_runs"].as_f64().unwrap();
        assert!(spreads.iter().any(|s| (s - between).abs() < 1e-12), "one side's spread alone: {c}");
    }
}

/// `compare --by host` takes each host's spread from the database its runs came from:
/// another host of the same comparability key (an identical machine) whose database
/// has no noise runs gets none, though this host's database has them.
#[test]
fn a_host_takes_the_noise_runs_of_its_own_database() {
    let (a, b, c) = (temp_db(), temp_db(), temp_db());
    let out = run_ok(&["noise", "syscall.getppid", "--runs", "3", "--quick", "--rounds", "2", "--json"], &a.path);
    let spreads: Vec<f64> =
        json_of(&out)["figures"].as_array().unwrap().iter().map(|f| f["between"].as_f64().unwrap()).collect();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &a.path);
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &c.path);
    as_host(&c.path, "host-b", false, &b.path);
    let b_path = b.path.to_str().unwrap();
    let m = json_of(&run_ok(&["compare", "--by", "host", "4", "latest", "--db-b", b_path, "--json"], &a.path));
    let columns = m["columns"].as_array().unwrap();
    assert_eq!(columns[1]["name"], "host-b", "{m}");
    assert_eq!(columns[0]["noise_runs"]["runs"], 3, "{m}");
    assert!(columns[1]["noise_runs"].is_null(), "host-b's database has no noise runs: {m}");
    for row in m["rows"].as_array().unwrap() {
        let between = row["cells"][0]["between_runs"].as_f64().unwrap();
        assert!(spreads.iter().any(|s| (s - between).abs() < 1e-12), "this host's spread alone: {row} {spreads:?}");
    }
}
