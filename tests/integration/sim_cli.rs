//! `oscost sim` end to end: a newcomer's first simulation on a fresh database, profiles
//! stored with every row and reused to the nanosecond, the reprints, and bad input.

use crate::common;

use common::*;

/// The medians of a sim run's JSON, in row order.
fn medians(doc: &serde_json::Value) -> Vec<f64> {
    doc["results"].as_array().unwrap().iter().map(|r| r["median"].as_f64().unwrap()).collect()
}

/// Two policies forking 20 tasks on 2 CPUs: the simulation both tests below repeat.
const FORK_SIM: &[&str] = &["sim", "--policy", "linux-2.4,o1", "--workload", "fork", "--tasks", "20", "--cpus", "2"];

#[test]
fn a_first_simulation_on_a_fresh_database_measures_what_live_needs() {
    let db = temp_db();
    let out = oscost().args(FORK_SIM).args(["--json", "--db"]).arg(&db.path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("measuring them now"), "the first run says it measures: {err}");
    let doc = json_of(&out);
    assert_eq!(doc["run"]["kind"], "sim");
    let rows = rows(&doc, "sim.fork");
    assert_eq!(rows.len(), 2 * 2, "two policies, two figures");
    for r in &rows {
        assert_eq!(r["params"]["simulated"], "profile live", "{r}");
        assert_eq!(r["n"], 1, "a simulated figure is one deterministic value: {r}");
        assert_eq!(r["ci_low"], r["median"]);
        // As a suite's cells: the figure under ±50% of every assumed term.
        let assumed = r["params"]["sensitivity"]["assumed"].as_array().expect("a sensitivity");
        // (`wake` is assumed on every machine; `ipi` is measured where two CPUs are.)
        assert!(assumed.iter().any(|s| s["term"] == "wake"), "{r}");
        // Every term of the stored profile says where it comes from.
        let profile = &r["params"]["cost_profile"];
        for term in ["syscall", "switch", "address_space", "scan_per_task", "remote_line", "lock_transfer", "fork"] {
            let basis = profile[term]["basis"].as_str().unwrap_or_default();
            assert!(["measured", "fitted", "assumed"].contains(&basis), "{term}: {profile}");
            assert!(!profile[term]["why"].as_str().unwrap_or_default().is_empty(), "{term} says why");
        }
    }
    // The measurement it made is an ordinary stored run.
    let runs = run_ok(&["runs", "--json"], &db.path);
    let listed = json_of(&runs);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");

    // The same profile, read back from the stored run, gives the same figures exactly.
    let id = doc["run"]["id"].as_i64().unwrap().to_string();
    let profile = format!("live@{id}");
    let again = run_ok(&[FORK_SIM, &["--profile", &profile, "--json"]].concat(), &db.path);
    assert_eq!(medians(&json_of(&again)), medians(&doc));
}

#[test]
fn a_fitted_profile_gives_the_same_output_every_time_and_prints_as_a_table() {
    let db = temp_db();
    let args = TRAVIS_SIM;
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let a = json_of(&run_ok(&json_args, &db.path));
    let b = json_of(&run_ok(&json_args, &db.path));
    assert_eq!(medians(&a), medians(&b));
    assert_eq!(rows(&a, "sim.travis").len(), 2 * 6 * 2, "two policies, six sizes, two figures");
    let text = String::from_utf8_lossy(&run_ok(args, &db.path).stdout).into_owned();
    // Policy rows by size, no interval, the profile term by term with its fit.
    assert!(text.contains("simulated, not measured"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("tasks") && l.contains(" 40")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("linux-2.0-yieldfix")), "{text}");
    assert!(!text.contains('['), "no interval is printed: {text}");
    assert!(text.contains("scan_per_task") && text.contains("fitted") && text.contains("residuals"), "{text}");
    assert!(!text.contains("kernel 6."), "no host fingerprint heads a simulation: {text}");
}

#[test]
fn profiles_and_sizes_are_checked() {
    let db = temp_db();
    for bad in [
        vec!["--cpus", "0"],
        vec!["--tasks", "0"],
        vec!["--tasks", "100000"],
        vec!["--profile", "k6"],
        vec!["--profile", "live@x"],
        vec!["--seed", "3", "--seeds", "20"],
    ] {
        let out = oscost()
            .args(["sim", "--policy", "cfs", "--workload", "server"])
            .args(&bad)
            .arg("--db")
            .arg(&db.path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = oscost().args(["sim", "--policy", "bfs", "--workload", "server", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A measured run carries no profile to simulate with.
    run_ok(&["run", "syscall.getppid", "--rounds", "1"], &db.path);
    let out = oscost()
        .args(["sim", "--policy", "o1", "--workload", "fork", "--profile", "live@1", "--db"])
        .arg(&db.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a simulation"));
}

#[test]
fn the_travis98_reprint_sets_published_simulated_and_measured_side_by_side() {
    let db = temp_db();
    let out = run_ok(&["run", "--suite", "travis98", "--quick", "--rounds", "1"], &db.path);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .skip_while(|l| !l.starts_with("Table 2, Linux before change process switch"))
        .find(|l| l.starts_with("2 contexts"))
        .unwrap_or_else(|| panic!("{text}"));
    // The row pentium200 is fitted to says so beside its label.
    assert!(line.starts_with("2 contexts (fitted)"), "{line}");
    let unmarked = line.replace(" (fitted)", "");
    let cols: Vec<&str> = unmarked.split_whitespace().collect();
    assert_eq!(cols[2], "19", "published: {line}");
    // The live profile takes this run's switch rows unless a flag (intruded, bimodal,
    // modes: a busy machine) makes them no switch cost; then it says so and its column
    // is empty.
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let refused = said.contains("note: the live profile refuses") && said.contains("note: no live simulation");
    for (i, what) in [(3, "pentium200"), (4, "live"), (5, "here")] {
        if what == "live" && refused {
            assert_eq!(cols[i], "-", "{what} refused yet printed: {line}");
            continue;
        }
        // A "here" cell measured on a busy machine carries its `*`; a live cell whose
        // profile's probes never had a CPU to themselves carries `†`, named under the
        // table.
        if cols[i].ends_with('†') {
            assert_eq!(what, "live", "only a live cell is marked †: {line}");
            assert!(text.contains("† the live profile's probes of "), "{text}");
        }
        let v: f64 =
            cols[i].trim_end_matches(['*', '†']).parse().unwrap_or_else(|_| panic!("{what} missing: {line}\n{said}"));
        assert!(v > 0.0, "{what}: {line}");
    }
    assert!(text.contains("Where the model and the text part by more than 30%"), "{text}");
    // The stored run reprints the same.
    let shown = run_ok(&["show", "latest", "--suite", "travis98"], &db.path);
    let again = String::from_utf8_lossy(&shown.stdout);
    assert!(again.contains(line), "{again}");
    let out = oscost().args(["show", "latest", "--suite", "travis99", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn ground_sets_the_measured_chat_regime_beside_the_model_at_its_own_size() {
    let db = temp_db();
    let ground = ["sim", "--workload", "load_chat", "--policy", "eevdf", "--ground", "--profile", "pentium200"];
    run_ok(SMALL_SIM, &db.path);
    refused(&db.path, &ground, "no load.chat row with its regime is stored");
    refused(&db.path, &["sim", "--workload", "chat", "--policy", "eevdf", "--ground"], "give --workload load_chat");
    refused(&db.path, &[&ground[..], &["--cpus", "2"]].concat(), "cannot be used with");
    let chat = ["run", "load.chat", "--quick", "--rooms", "1", "--messages", "5", "--rounds", "1", "--no-trace", "-q"];
    run_ok(&chat, &db.path);
    let text = String::from_utf8_lossy(&run_ok(&ground, &db.path).stdout).to_string();
    assert!(text.contains("grounding: load.chat measured against the eevdf model (profile pentium200)"), "{text}");
    for figure in ["switches per message", "messages per client reader wake-up", "data segments per message"] {
        assert!(text.lines().any(|l| l.contains(figure)), "{figure}: {text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let doc = json_of(&run_ok(&[&ground[..], &["--json"]].concat(), &db.path));
    let lines = doc["grounding"].as_array().expect("the grounding's lines");
    // One measured size (this machine's CPUs at nice 0 and 19), nine figures each.
    assert_eq!(lines.len(), 2 * 9, "{doc}");
    // The CPUs' idle figures are read from cpuidle states where the kernel has them,
    // and may be 0 (every CPU kept busy, by the run or by other work).
    let cpuidle = std::path::Path::new("/sys/devices/system/cpu/cpu0/cpuidle/state0/usage").exists();
    for l in lines {
        assert_eq!(l["policy"], "eevdf");
        let simulated_only_where_modelled = l["simulated"].is_null() == l["not_modelled"].is_string();
        assert!(simulated_only_where_modelled, "{l}");
        let figure = l["figure"].as_str().unwrap_or_default();
        if figure.contains("idle") {
            let measured = l["measured"].as_f64();
            assert_eq!(measured.is_some(), cpuidle, "measured where cpuidle states are: {l}");
            assert!(measured.is_none_or(|v| v >= 0.0), "{l}");
            continue;
        }
        assert!(l["measured"].as_f64().is_some_and(|v| v > 0.0), "every figure measured: {l}");
        if figure.contains("finish") {
            // A share of the run, measured and modelled alike.
            let share = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0 && x <= 1.0);
            assert!(share(&l["measured"]) && share(&l["simulated"]), "{l}");
        }
        // One run has no interval, so no verdict (and a busy one none either).
        let judged = l["simulated"].is_null() || l["verdict"] == "one_run" || l["verdict"] == "busy";
        assert!(judged, "{l}");
    }
    // A second run of the same size gives each figure an interval over runs, and a verdict.
    run_ok(&chat, &db.path);
    let two = json_of(&run_ok(&[&ground[..], &["--json"]].concat(), &db.path));
    // (A busy run is left out of its size's pool when a quiet one is there.)
    for l in two["grounding"].as_array().expect("the grounding's lines") {
        if l["measured"].is_null() {
            // An idle figure on a machine without cpuidle states (checked above).
            continue;
        }
        let runs = l["runs"].as_array().map_or(0, Vec::len);
        let verdict = l["verdict"].as_str().unwrap_or_default();
        let expected: &[&str] = match (l["simulated"].is_null(), runs) {
            (true, _) => &["not_modelled"],
            (false, 2) => &["holds", "gap", "undecided", "busy"],
            (false, _) => &["one_run", "busy"],
        };
        assert!((1..=2).contains(&runs) && expected.contains(&verdict), "{l}");
        assert_eq!(l["interval"].is_array(), runs == 2, "an interval over two runs only: {l}");
    }
    // The simulated rows are a stored sim run at the measured rooms and messages.
    let id = doc["run"].as_i64().unwrap().to_string();
    let shown = json_of(&run_ok(&["show", &id, "--json"], &db.path));
    let sim = rows(&shown, "sim.load_chat");
    assert!(
        !sim.is_empty() && sim.iter().all(|r| r["params"]["tasks"] == 1 && r["params"]["messages"] == 5),
        "{shown}"
    );
}

#[test]
fn a_figure_over_seeds_prints_its_seed_range_beside_its_median() {
    let db = temp_db();
    let args = ["sim", "--policy", "linux-2.0", "--workload", "server", "--seeds", "3", "--profile", "pentium200"];
    let over_seeds = run_ok(&[&args[..], &["--no-sensitivity"]].concat(), &db.path);
    let text = String::from_utf8_lossy(&over_seeds.stdout).to_string();
    assert!(text.lines().any(|l| l.trim_start().starts_with("linux-2.0: median of 3 seeds, seed range ")), "{text}");
    // One seed is a value: no range is claimed.
    let one = run_ok(
        &[
            "sim",
            "--policy",
            "linux-2.0",
            "--workload",
            "server",
            "--seed",
            "3",
            "--profile",
            "pentium200",
            "--no-sensitivity",
        ],
        &db.path,
    );
    assert!(!String::from_utf8_lossy(&one.stdout).contains("seed range"));
}

#[test]
fn the_smp2002_fit_is_made_once_a_build_and_reused_by_the_next_command() {
    let db = temp_db();
    let args = ["sim", "--policy", "linux-2.4", "--workload", "loop_yield", "--cpus", "2", "--tasks", "4"];
    let args = [&args[..], &["--profile", "smp2002", "--no-sensitivity", "--json"]].concat();
    let first = run_ok(&args, &db.path);
    let again = run_ok(&args, &db.path);
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).contains("reused");
    assert!(!said(&first), "nothing stored yet: fitted");
    assert!(said(&again), "{}", String::from_utf8_lossy(&again.stderr));
    // The reused profile is the fitted one, term for term, stamped with the build.
    let profile = |o: &std::process::Output| json_of(o)["results"][0]["params"]["cost_profile"].clone();
    assert_eq!(profile(&first), profile(&again));
    assert!(profile(&first)["fitted_by"].as_str().is_some_and(|b| b.starts_with("oscost ")), "{}", profile(&first));
}
