//! The simulations each reprint puts beside its published figures: the founding texts'
//! experiments, under the period profile of the text's machines and under `live`, each
//! figure with its sensitivity to the profile's terms, and the texts' conclusions
//! (which scheduler is faster) judged under every ±50% variant of an assumed term
//! ([`super::sensitivity`]).

use super::cost::CostProfile;
use super::sensitivity::{Claim, Conclusion, Judgement, Lab};
use super::workload::Params;
use super::{PolicyKind, WorkloadKind};
use oscost_figure::key::{BenchId, Param};
use oscost_figure::model::ResultRow;

/// The benchmark id of a judged conclusion's row.
pub const CONCLUSION_BENCHMARK: BenchId = BenchId::new("sim.conclusion");
pub use oscost_figure::key::{FRAGILE, JUDGEMENT, SENSITIVITY};
/// lat_proc's conclusion: O(1)'s fork+exit well under the old scheduler's. The text's
/// ratio is 0.38; a ratio of 0.7 or more would no longer be the gain it reports.
pub const LAT_PROC_THRESHOLD: f64 = 0.7;
/// A conclusion row's label.
pub const CONCLUSION: Param<oscost_figure::key::Text> = Param::new("conclusion");

/// Messages each chat user writes in a reprint's cell: 100, chat_c's count of the
/// 1-CPU nice-0 run, for every cell (the others ran 1000). Why not 1000: every cell's
/// sensitivity runs it again for each assumed term at ±50%, and the old scheduler's
/// goodness scans over 800 threads make a cell at 1000 take minutes. What it costs:
/// o1-2002's cells move by at most 5% between 100 and 1000, the old scheduler's by up
/// to 33%, and the 8-CPU nice-0 ratio with them (the table in docs/simulator.md,
/// with the command that makes it). The reprint says so where the model and the text
/// part.
pub const CHAT_MESSAGES: u64 = 100;
/// Messages each chat user writes in a `--quick` suite's cells: a fifth of
/// [`CHAT_MESSAGES`], the chat cells being most of a suite's simulation time.
pub const QUICK_CHAT_MESSAGES: u64 = 20;

/// How much of each experiment a suite simulates: as the reprint states it, or the
/// `--quick` run's shorter chat with no term swept: no cell's sensitivity, every
/// conclusion judged at the profile's values alone (never `robust`; the header says
/// so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Full,
    Quick,
}

impl Scale {
    /// Messages each chat user writes.
    pub fn chat_messages(self) -> u64 {
        match self {
            Scale::Full => CHAT_MESSAGES,
            Scale::Quick => QUICK_CHAT_MESSAGES,
        }
    }

    /// Whether each assumed term is swept ±50% for the cells' sensitivity and the
    /// conclusions' robustness: about 30 simulations a cell.
    pub fn sweeps(self) -> bool {
        self == Scale::Full
    }
}

/// The O(1) scheduler that stands for Molnar's measured one in every molnar02 and
/// lat_proc cell and conclusion: his January 2002 patch for 2.5.2-pre6 (`o1-2002`), the
/// one his figures measured. 2.6.0's (`o1`) stays beside it as a policy of its own.
pub const MOLNAR_O1: PolicyKind = PolicyKind::O12002;

/// Forks of the lat_proc simulation.
pub const LAT_PROC_FORKS: usize = 300;
/// CPUs of the lat_proc box (the text does not say how many: an SMP box).
pub const LAT_PROC_CPUS: usize = 2;

/// The experiments of one reprint, or none for a suite with nothing to simulate.
pub fn experiments(suite: &str, scale: Scale) -> Vec<Params> {
    let p = |policy, workload, cpus, tasks| Params::new(policy, workload, cpus, tasks);
    match suite {
        "travis98" => {
            let mut v = Vec::new();
            for policy in [PolicyKind::Linux20, PolicyKind::Linux20YieldFix] {
                for threads in [false, true] {
                    for n in [2, 4, 8, 10, 20, 40] {
                        v.push(Params { threads, ..p(policy, WorkloadKind::Travis, 1, n) });
                    }
                }
            }
            v.push(p(PolicyKind::Linux20, WorkloadKind::Server, 1, super::workload::SERVER.httpd));
            v
        }
        "molnar02" => {
            let mut v = Vec::new();
            for policy in [PolicyKind::Linux24, MOLNAR_O1] {
                for cpus in [1, 8] {
                    for nice in [0, 19] {
                        let messages = scale.chat_messages();
                        v.push(Params { nice, messages, ..p(policy, WorkloadKind::Chat, cpus, 10) });
                    }
                }
                v.push(p(policy, WorkloadKind::LoopYield, 2, 4));
                v.push(p(policy, WorkloadKind::LoopYield, 8, 16));
                v.push(p(policy, WorkloadKind::Fork, LAT_PROC_CPUS, LAT_PROC_FORKS));
            }
            v
        }
        "lmbench" => [PolicyKind::Linux24, MOLNAR_O1]
            .into_iter()
            .map(|policy| p(policy, WorkloadKind::Fork, LAT_PROC_CPUS, LAT_PROC_FORKS))
            .collect(),
        _ => Vec::new(),
    }
}

/// O(1) (as Molnar measured it, [`MOLNAR_O1`]) over the old scheduler for one experiment, claimed on the side of `threshold`
/// the published ratio stands; None where the text's figures decide no side.
fn o1_over_old(
    label: String,
    base: Params,
    figure: &'static str,
    published: Option<f64>,
    threshold: f64,
) -> Option<Conclusion> {
    let published = published?;
    Some(Conclusion {
        label,
        num: Params { policy: MOLNAR_O1, ..base.clone() },
        den: Params { policy: PolicyKind::Linux24, ..base },
        figure,
        claim: Claim::of_published(published, threshold)?,
        published,
    })
}

/// The ratio of two published means (O(1) columns over old-scheduler columns).
fn published_o1_over_old(table: &str, system: &str, row: &str) -> Option<f64> {
    let o1 = oscost_figure::published::mean_of_runs(table, system, row, "O(1)")?;
    let old = oscost_figure::published::mean_of_runs(table, system, row, "old")?;
    Some(o1 / old)
}

/// lat_proc's conclusion: O(1)'s fork+exit over the old scheduler's below
/// [`LAT_PROC_THRESHOLD`].
fn lat_proc_conclusion() -> Option<Conclusion> {
    let fork = |col: &str| oscost_figure::published::value("molnar02 lat_proc", "lat_proc fork", col);
    o1_over_old(
        "lat_proc fork+exit, O(1) / old".into(),
        Params::new(PolicyKind::Linux24, WorkloadKind::Fork, LAT_PROC_CPUS, LAT_PROC_FORKS),
        "time per fork+exit",
        fork("O(1)").zip(fork("old scheduler")).map(|(a, b)| a / b),
        LAT_PROC_THRESHOLD,
    )
}

/// The conclusions a reprint's texts draw, as ratios of its experiments: travis98's
/// "the fix is faster" (after / before) and "threads switch faster" (thread / process)
/// at each size, molnar02's O(1) / old for chat, loop_yield and lat_proc. A published
/// ratio within 10% of its threshold claims no side and is left out.
pub fn conclusions(suite: &str, scale: Scale) -> Vec<Conclusion> {
    let mut out = Vec::new();
    match suite {
        "travis98" => {
            let t2 = |row: &str, n: usize| oscost_figure::published::value("travis98 table 2", row, &n.to_string());
            let exp = |policy, threads, n| Params { threads, ..Params::new(policy, WorkloadKind::Travis, 1, n) };
            for n in [2, 4, 8, 10, 20, 40] {
                for (mode, threads) in [("process", false), ("thread", true)] {
                    let after = t2(&format!("Linux after change {mode} switch"), n);
                    let before = t2(&format!("Linux before change {mode} switch"), n);
                    if let Some(claim) = after.zip(before).and_then(|(a, b)| Claim::of_published(a / b, 1.0)) {
                        out.push(Conclusion {
                            label: format!("{mode} switch at {n}, after / before the fix"),
                            num: exp(PolicyKind::Linux20YieldFix, threads, n),
                            den: exp(PolicyKind::Linux20, threads, n),
                            figure: "time per switch",
                            claim,
                            published: after.zip(before).map(|(a, b)| a / b).unwrap_or(f64::NAN),
                        });
                    }
                }
                for (when, policy) in [("before", PolicyKind::Linux20), ("after", PolicyKind::Linux20YieldFix)] {
                    let thread = t2(&format!("Linux {when} change thread switch"), n);
                    let process = t2(&format!("Linux {when} change process switch"), n);
                    let ratio = thread.zip(process).map(|(t, p)| t / p);
                    if let Some(claim) = ratio.and_then(|r| Claim::of_published(r, 1.0)) {
                        out.push(Conclusion {
                            label: format!("{when} the fix at {n}, thread / process"),
                            num: exp(policy, true, n),
                            den: exp(policy, false, n),
                            figure: "time per switch",
                            claim,
                            published: ratio.unwrap_or(f64::NAN),
                        });
                    }
                }
            }
        }
        "molnar02" => {
            let chat = "molnar02 chat";
            let runs = [
                ("8", 8, 0, "8-CPU", "./chat_c 10 1000 nice 0"),
                ("8", 8, 19, "8-CPU", "nice -n 19 ./chat_c 10 1000"),
                ("1", 1, 0, "1-CPU", "./chat_c 10 100 nice 0"),
                ("1", 1, 19, "1-CPU", "nice -n 19 ./chat_c 10 1000"),
            ];
            for (label, cpus, nice, system, row) in runs {
                let base = Params {
                    nice,
                    messages: scale.chat_messages(),
                    ..Params::new(PolicyKind::Linux24, WorkloadKind::Chat, cpus, 10)
                };
                out.extend(o1_over_old(
                    format!("chat, {label} CPU{}, nice {nice}, O(1) / old", if cpus == 1 { "" } else { "s" }),
                    base,
                    "messages per second",
                    published_o1_over_old(chat, system, row),
                    1.0,
                ));
            }
            for (cpus, tasks, system, row) in
                [(2, 4, "2-CPU", "4 instances of ./loop_yield"), (8, 16, "8-CPU", "16 instances of ./loop_yield")]
            {
                out.extend(o1_over_old(
                    format!("loop_yield, {cpus} CPUs, O(1) / old"),
                    Params::new(PolicyKind::Linux24, WorkloadKind::LoopYield, cpus, tasks),
                    "switches per second",
                    published_o1_over_old("molnar02 loop_yield", system, row),
                    1.0,
                ));
            }
            out.extend(lat_proc_conclusion());
        }
        "lmbench" => out.extend(lat_proc_conclusion()),
        _ => {}
    }
    out
}

/// A judged conclusion as a stored row: the simulated ratio as its one value, the
/// judgement (claim, swings, fragile) as a parameter.
fn conclusion_row(j: &Judgement, profile: &CostProfile) -> ResultRow {
    let mut row = super::run::value_row(&CONCLUSION_BENCHMARK, oscost_figure::unit::Unit::Ratio, j.ratio);
    row.params.insert(super::run::SIMULATED_PARAM.into(), format!("profile {}", profile.name).into());
    row.params.set(CONCLUSION, j.label.clone());
    row.params.set(FRAGILE, j.fragile);
    row.params.set(JUDGEMENT, serde_json::to_value(j).expect("a judgement is plain data"));
    row
}

/// Every experiment of `suite` under each of `profiles`, as rows, each figure with its
/// sensitivity, then the suite's conclusions judged; `stop` is asked between
/// simulations.
pub fn rows(suite: &str, profiles: &[CostProfile], scale: Scale, stop: impl Fn() -> bool) -> Vec<ResultRow> {
    let mut out = Vec::new();
    for profile in profiles {
        let mut lab = Lab::new(profile.clone());
        let mut made: Vec<(Params, usize)> = Vec::new();
        let swept = scale.sweeps();
        for p in experiments(suite, scale) {
            if stop() {
                return out;
            }
            let made_rows = if super::seeds::is_stochastic(p.workload) {
                // Its figures vary with the seed: the median over seeds, with the range.
                let spreads = super::seeds::over_seeds(&p, profile, super::seeds::DEFAULT_SEEDS, &stop);
                super::seeds::rows(&p, profile, &spreads)
            } else {
                super::run::simulate_rows(&p, profile)
            };
            for mut row in made_rows {
                if swept {
                    let figure = row.params.get(super::run::FIGURE).unwrap_or_default().to_string();
                    let s = lab.sensitivity(&p, &figure);
                    row.params.set(SENSITIVITY, serde_json::to_value(s).expect("plain data"));
                }
                made.push((p.clone(), out.len()));
                out.push(row);
            }
        }
        for c in conclusions(suite, scale) {
            if stop() {
                return out;
            }
            let j = if swept { lab.judge(&c) } else { lab.judge_unswept(&c) };
            if j.fragile {
                // The figures the conclusion is drawn from carry its mark too.
                for (p, i) in &made {
                    let figure = out[*i].params.get(super::run::FIGURE) == Some(c.figure);
                    if figure && (*p == c.num || *p == c.den) {
                        out[*i].params.set(FRAGILE, true);
                    }
                }
            }
            out.push(conclusion_row(&j, profile));
        }
    }
    out
}

/// The judgement a stored conclusion row carries.
pub fn judgement_of(row: &ResultRow) -> Option<Judgement> {
    serde_json::from_value(row.params.get(JUDGEMENT)?.clone()).ok()
}
