//! The hardening pass, defect 4: a stop signal on a busy machine. Its own test binary,
//! so the busy loops it starts (raised to nice −15 as root) slow no other test.

mod common;

use common::*;

/// Busy loops on every CPU, killed and reaped when dropped.
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    /// `n` busy loops, at nice −15 when root may raise them (the run's tasks then get a
    /// small share of the CPUs, as on a machine busy with more important work).
    fn start(n: usize) -> Self {
        let nice = if oscost::sys::is_root() { "-15" } else { "0" };
        Self(
            (0..n)
                .map(|_| {
                    std::process::Command::new("nice")
                        .args(["-n", nice, "sh", "-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Defect 4: a stop signal gave the worker 5 s to report; reaping a thousand tasks with
/// both CPUs busy can take longer, so the worker was killed and the round's finished
/// points were lost with it. A worker now reports each row as it finishes it, so
/// however long the stop takes, SIGINT while the 1024-task point starts, with two CPU
/// hogs, keeps the 2-task points measured before it, and leaves no task.
#[test]
fn sigint_during_a_1024_task_run_under_cpu_load_keeps_the_finished_points() {
    let _hogs = Hogs::start(2);
    let db = temp_db();
    let mark = new_mark();
    // The run's own bound (from its budgets) is a hang catcher; on a machine this busy
    // it can pass before the point starts, so the run is given one only a hang reaches.
    let args = ["run", "load.runqueue", "--tasks", "2,1024", "--rounds", "1", "--no-trace", "--timeout", "30m"];
    let mut run = spawn_marked(&args, &db.path, &mark);
    // The 1024-task point is starting once hundreds of the run's tasks exist: waited
    // for as such, however slowly a loaded machine gets there.
    let started = wait_marked(&mark, 300, &mut run);
    assert!(started >= 300, "the run ended ({:?}) before its 1024-task point was seen", run.try_wait());
    let _ = std::process::Command::new("kill").args(["-INT", &run.id().to_string()]).status();
    let status = wait_or_hang(&mut run, "the stopped run");
    assert_eq!(status.code(), Some(130), "stopped by SIGINT");
    let left = wait_unmarked(&mark);
    assert!(left.is_empty(), "{} tasks of the run were left", left.len());
    let doc = json_of(&run_ok(&["show", "latest", "--json"], &db.path));
    let at_two: Vec<_> = rows(&doc, "load.runqueue").into_iter().filter(|r| r["params"]["tasks"] == 2).collect();
    assert!(!at_two.is_empty(), "the finished 2-task points were lost: {doc}");
}
