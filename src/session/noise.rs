//! This machine's between-run spreads, read from its noise runs in the store: what no
//! round of one run can show, so `--precision` judges a figure with them beside its
//! interval, both while the run adds rounds and once it is done.

use super::{ADAPTIVE_MAX_ROUNDS, RunOutcome, RunRequest};
use crate::machine;
use crate::model::RunDocument;
use crate::store::Store;

/// A machine's between-run spreads from `store`: its noise runs of comparability key
/// `key` (a machine's `comparability_key`), oldest first.
pub fn machine_noise(
    store: &Store,
    key: &[(String, String)],
) -> Result<crate::judge::noise::RunNoise, crate::store::StoreError> {
    let listed = store.list_runs(&crate::store::RunFilter::default())?;
    let docs = listed
        .iter()
        .filter(|l| l.kind == crate::model::RunKind::Noise)
        .map(|l| store.load_run(l.id).map(|(d, _)| d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::judge::noise::RunNoise::from_noise(&crate::judge::noise::applicable(docs, key)))
}

/// A `--precision` run's figures judged against `target` (see
/// `precision::judge_run`), with this machine's noise runs in the run's database
/// beside; noise runs that cannot be read leave each figure judged within the run,
/// with a warning.
pub fn judge_precision(outcome: &RunOutcome, doc: &RunDocument, target: f64) -> crate::judge::precision::RunJudgement {
    let noise = machine_noise(&outcome.store, &doc.machine.comparability_key()).unwrap_or_else(|e| {
        eprintln!("warning: this machine's noise runs could not be read ({e}); precision is judged within the run");
        crate::judge::noise::RunNoise::none()
    });
    crate::judge::precision::judge_run(&doc.results, target, &noise, &outcome.round_caps, ADAPTIVE_MAX_ROUNDS)
}

/// Under `--precision`, this machine's between-run spreads from its noise runs in the
/// run's database (`store`, the run's own): what runs add, no round of one run can
/// show, so a target is judged with it. None without `--precision` or noise runs.
pub(super) fn precision_noise(
    req: &RunRequest,
    store: &Store,
    machine: &machine::Machine,
) -> crate::judge::noise::RunNoise {
    if req.precision.is_none() {
        return crate::judge::noise::RunNoise::none();
    }
    match machine_noise(store, &machine.comparability_key()) {
        Ok(noise) => {
            if let (false, Some(src)) = (req.quiet, &noise.source) {
                eprintln!(
                    "precision: its spread between runs stands beside its interval (and its blocks of rounds), for the {} figures this machine's {} noise runs measured ({} to {}); a figure whose spread alone is past the target needs runs, not rounds",
                    noise.len(),
                    src.runs,
                    src.first,
                    src.last
                );
            }
            noise
        }
        Err(e) => {
            eprintln!(
                "warning: this machine's noise runs could not be read ({e}); precision is judged within this run"
            );
            crate::judge::noise::RunNoise::none()
        }
    }
}
