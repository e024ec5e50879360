//! Paths and outputs, hardened: the database is opened only where no other user can
//! change what its path names, outputs are regular files (or `-`), a damaged or
//! read-only database is refused with its path and why, and a password given on the
//! command line does not stay in `ps`. Tests that act as another user need root and
//! say what they skip otherwise.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::*;

const NOBODY: u32 = 65534;

/// A folder like /tmp (sticky, world-writable) inside a private one, and the private
/// one made traversable so that `nobody` can reach what it is given.
fn sticky_folder() -> (tempfile::TempDir, std::path::PathBuf) {
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = base.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    (base, tmp)
}

/// A symlink at `at` pointing to `to`, owned by `nobody` as another user's would be.
fn plant_link(to: &Path, at: &Path) {
    std::os::unix::fs::symlink(to, at).unwrap();
    std::os::unix::fs::lchown(at, Some(NOBODY), Some(NOBODY)).unwrap();
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A dangling link planted by another user at `--db` in a sticky, world-writable
/// folder: neither a run, nor a reader, nor an import creates the file it points at.
#[test]
fn a_dangling_link_at_db_creates_nothing_where_it_points() {
    if !oscost::sys::is_root() {
        eprintln!(
            "skipped: a_dangling_link_at_db_creates_nothing_where_it_points needs root (it plants a link as nobody)"
        );
        return;
    }
    let (base, tmp) = sticky_folder();
    let target = base.path().join("planted-target.db");
    let link = tmp.join("results.db");
    plant_link(&target, &link);
    for args in [&["run", "syscall.getppid", "--quick"][..], &["runs"], &["show"]] {
        let out = oscost().args(args).arg("--db").arg(&link).output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{args:?} used the planted link");
        let err = stderr(&out);
        assert!(err.contains("symbolic link of uid 65534"), "{args:?}: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("stored as run"), "{args:?} measured");
    }
    let out = oscost().args(["run", "syscall.getppid", "--quick", "--db"]).arg(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an unsafe path is bad input: {}", stderr(&out));
    assert!(!target.exists(), "root created the file the link points at");
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 1, "only the sticky folder is there");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 1, "nothing but the link in the sticky folder");
}

/// A link planted at `--db` to an empty root-only file: refused, and the file stays
/// empty (it is not turned into a database).
#[test]
fn a_link_to_an_empty_root_only_file_is_refused_and_the_file_stays_empty() {
    if !oscost::sys::is_root() {
        eprintln!(
            "skipped: a_link_to_an_empty_root_only_file_is_refused_and_the_file_stays_empty needs root (a link of nobody's)"
        );
        return;
    }
    let (base, tmp) = sticky_folder();
    let secret = base.path().join("root-only");
    std::fs::write(&secret, b"").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = tmp.join("results.db");
    plant_link(&secret, &link);
    for args in [&["run", "syscall.getppid", "--quick"][..], &["runs"]] {
        let out = oscost().args(args).arg("--db").arg(&link).output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    }
    let m = std::fs::metadata(&secret).unwrap();
    assert_eq!((m.len(), m.mode() & 0o777), (0, 0o600), "the root-only file was changed");
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 2, "no -wal or -shm beside it");
}

/// What is accepted stays accepted: an empty file of one's own becomes a database, a
/// link of one's own in one's own folder is followed; a database in a folder others
/// can write, a file that is not SQLite's, a folder and a device are refused.
#[test]
fn own_paths_work_and_shared_or_foreign_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    assert!(oscost().args(["runs", "--db"]).arg(&empty).output().unwrap().status.success());
    let own = dir.path().join("sub/new.db");
    run_ok(SMALL_SIM, &own);
    assert_eq!(std::fs::metadata(dir.path().join("sub")).unwrap().mode() & 0o777, 0o700);
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&empty, &link).unwrap();
    let out = oscost().args(["runs", "--db"]).arg(&link).output().unwrap();
    assert!(out.status.success(), "an own link in an own folder: {}", stderr(&out));

    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = oscost().args(["runs", "--db"]).arg(shared.join("r.db")).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("-wal and -shm"), "{}", stderr(&out));

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all, and longer than a header").unwrap();
    let out = oscost().args(["run", "syscall.getppid", "--quick", "--db"]).arg(&junk).output().unwrap();
    assert!(stderr(&out).contains("is not an oscost results database"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&junk).unwrap(), b"not a database at all, and longer than a header");

    for (path, kind) in [(dir.path().to_path_buf(), "a folder"), ("/dev/null".into(), "a character device")] {
        let out = oscost().args(["runs", "--db"]).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(kind), "{}", stderr(&out));
    }
}

/// Root with a HOME another user owns (as `sudo` keeps it), where root's own
/// `~/.local/share/oscost` was made by an earlier run: that user swaps `~/.local` with
/// a tree of theirs (`renameat2(RENAME_EXCHANGE)`) in a loop while root opens the
/// default database again and again, creating it (import) and reading it (runs). Not
/// once is a file made or opened in the other tree: such a HOME is refused, as every
/// entry in it could be changed under oscost.
#[test]
fn swapping_dot_local_under_root_never_wins() {
    if !oscost::sys::is_root() {
        eprintln!("skipped: swapping_dot_local_under_root_never_wins needs root (the swapper runs as nobody)");
        return;
    }
    let outcomes = swap_race(HomeOf::Nobody);
    assert_eq!(outcomes.get("ok"), None, "a HOME another user owns was used: {outcomes:?}");
}

/// The same race in a HOME that is root's but sticky and world-writable (like /tmp):
/// the other user may make entries there but not rename root's, so root's database is
/// used, every time, and nothing lands in the other tree.
#[test]
fn swapping_dot_local_in_a_sticky_home_never_wins() {
    if !oscost::sys::is_root() {
        eprintln!("skipped: swapping_dot_local_in_a_sticky_home_never_wins needs root (the swapper runs as nobody)");
        return;
    }
    let outcomes = swap_race(HomeOf::RootSticky);
    assert_eq!(outcomes.get("ok"), Some(&100), "root's own database was not used every time: {outcomes:?}");
}

enum HomeOf {
    Nobody,
    RootSticky,
}

/// Runs the swap race (see the tests above) 100 times and returns how the attempts
/// ended (the first words of their error, or `ok`), after checking that nothing was
/// made or opened in the other user's tree.
fn swap_race(home_of: HomeOf) -> std::collections::BTreeMap<String, usize> {
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = base.path().join("home");
    std::fs::create_dir_all(home.join(".local/share/oscost")).unwrap();
    for p in [".local", ".local/share", ".local/share/oscost"] {
        std::fs::set_permissions(home.join(p), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    // The other user's tree, and where it leads: a folder of theirs.
    let decoy = base.path().join("decoy");
    std::fs::create_dir_all(decoy.join("oscost")).unwrap();
    let evil = home.join(".evil");
    std::fs::create_dir(&evil).unwrap();
    std::os::unix::fs::symlink(&decoy, evil.join("share")).unwrap();
    for p in [&evil, &decoy, &decoy.join("oscost")] {
        std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::os::unix::fs::lchown(evil.join("share"), Some(NOBODY), Some(NOBODY)).unwrap();
    match home_of {
        HomeOf::Nobody => std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap(),
        HomeOf::RootSticky => std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o1777)).unwrap(),
    }
    let export = base.path().join("empty.json");
    std::fs::write(&export, format!(r#"{{"schema_version":{},"runs":[]}}"#, oscost::model::SCHEMA_VERSION)).unwrap();

    let swapper = swap_forever_as_nobody(&home.join(".local"), &evil);
    let mut inodes = std::collections::BTreeSet::new();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..100 {
        let args: &[&str] = if i % 2 == 0 { &["import", export.to_str().unwrap()] } else { &["runs"] };
        let out = oscost()
            .current_dir(base.path())
            .env("HOME", &home)
            .env_remove("XDG_DATA_HOME")
            .env_remove("OSCOST_DB")
            .args(args)
            .output()
            .unwrap();
        let outcome = if out.status.success() {
            "ok".to_string()
        } else {
            stderr(&out).lines().next().unwrap_or("").chars().take(50).collect()
        };
        *outcomes.entry(outcome).or_default() += 1;
        if let Ok(m) = std::fs::symlink_metadata(home.join(".local")) {
            inodes.insert(m.ino());
        }
    }
    oscost::sys::kill_hard(swapper);
    let _ = oscost::sys::wait_child(swapper);
    if let HomeOf::Nobody = home_of {
        assert!(inodes.len() == 2, "the swapper never swapped (.local seen as {inodes:?})");
    }
    let left: Vec<_> = walk(&decoy);
    assert_eq!(left, vec![decoy.join("oscost")], "root made or left files in the other tree; outcomes {outcomes:?}");
    eprintln!("the swapper lost 100 of 100 attempts: {outcomes:?}");
    outcomes
}

/// Every path below `dir`, sorted.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        all.push(e.path());
        if e.file_type().unwrap().is_dir() {
            all.extend(walk(&e.path()));
        }
    }
    all.sort();
    all
}

/// A child, as `nobody`, that exchanges `a` and `b` (renameat2 RENAME_EXCHANGE) until
/// killed. The child only makes system calls (no allocation after fork).
fn swap_forever_as_nobody(a: &Path, b: &Path) -> libc::pid_t {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    oscost::sys::fork_child(|| {
        let gid = rustix::process::Gid::from_raw(NOBODY);
        let uid = rustix::process::Uid::from_raw(NOBODY);
        if rustix::thread::set_thread_groups(&[]).is_err()
            || rustix::thread::set_thread_gid(gid).is_err()
            || rustix::thread::set_thread_uid(uid).is_err()
        {
            return 1;
        }
        loop {
            let _ = rustix::fs::renameat_with(
                rustix::fs::CWD,
                a.as_c_str(),
                rustix::fs::CWD,
                b.as_c_str(),
                rustix::fs::RenameFlags::EXCHANGE,
            );
        }
    })
    .unwrap()
}

/// `-o` and `--export-*` onto a character device (a copy of /dev/null) or a symlink:
/// exit 2 before anything is measured or read, and the node is left as it was.
#[test]
fn outputs_onto_a_device_or_a_link_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut nodes = vec![];
    if oscost::sys::is_root() {
        let null = dir.path().join("null");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &null,
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        )
        .unwrap();
        nodes.push(null);
    } else {
        eprintln!(
            "skipped: the character-device case of outputs_onto_a_device_or_a_link_are_refused needs root (mknod)"
        );
    }
    let kept = dir.path().join("kept");
    std::fs::write(&kept, b"kept").unwrap();
    let link = dir.path().join("stdout-link");
    std::os::unix::fs::symlink("/dev/stdout", &link).unwrap();
    let link2 = dir.path().join("file-link");
    std::os::unix::fs::symlink(&kept, &link2).unwrap();
    nodes.extend([link, link2]);
    for node in &nodes {
        let before = std::fs::symlink_metadata(node).unwrap();
        for args in [
            vec!["export", "-o", node.to_str().unwrap()],
            vec!["report", "-o", node.to_str().unwrap()],
            vec!["history", "--html", node.to_str().unwrap()],
            vec!["run", "syscall.getppid", "--quick", "--export-json", node.to_str().unwrap()],
            vec!["run", "syscall.getppid", "--quick", "--export-prometheus", node.to_str().unwrap()],
        ] {
            let out = oscost().args(&args).arg("--db").arg(&db).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).contains("only to a regular file"), "{args:?}: {}", stderr(&out));
            let after = std::fs::symlink_metadata(node).unwrap();
            assert_eq!((after.ino(), after.mode(), after.rdev()), (before.ino(), before.mode(), before.rdev()));
        }
    }
    assert_eq!(std::fs::read(&kept).unwrap(), b"kept");
    assert!(!db.exists(), "a refused output still opened (or measured into) the database");
}

/// A bad `--export-json` (a folder, or a name in a folder that is not there) is
/// refused with exit 2 before measuring: no run is stored. An export that fails after
/// measuring (a folder no file can be made in) still prints the table and the run id,
/// then exits non-zero.
#[test]
fn a_bad_export_path_is_refused_before_measuring() {
    let db = temp_db();
    run_ok(&["sim", "--policy", "o1", "--workload", "travis", "--no-sensitivity", "--tasks", "2"], &db.path);
    let before = runs_count(&db.path);
    let folder = db.dir.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let nowhere = db.dir.path().join("missing-folder/out.json");
    for (bad, said) in [(&folder, "a folder"), (&nowhere, "no folder")] {
        let out = oscost()
            .args(["run", "syscall.getppid", "--quick", "--export-json"])
            .arg(bad)
            .arg("--db")
            .arg(&db.path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(said), "{}", stderr(&out));
        assert_eq!(runs_count(&db.path), before, "a run was measured and stored");
    }

    // /proc takes no new file, from root either, though it is a folder: the check
    // passes and the write fails after measuring, and the table and the run id are
    // printed all the same.
    let unwritable = Path::new("/proc/oscost-export-test.json");
    let out = oscost()
        .args(["run", "syscall.getppid", "--quick", "--export-json"])
        .arg(unwritable)
        .arg("--db")
        .arg(&db.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("syscall.getppid") && stdout.contains("stored as run #"), "{stdout}");
    assert!(stderr(&out).contains("oscost-export-test.json"), "{}", stderr(&out));
    assert_eq!(runs_count(&db.path), before + 1);
}

fn runs_count(db: &Path) -> usize {
    let out = run_ok(&["runs", "--json"], db);
    json_of(&out).as_array().map_or(0, |a| a.len())
}

/// `report` without `-o` does not replace a report.html already there, unless --force.
#[test]
fn report_keeps_an_existing_report_without_force() {
    let db = temp_db();
    run_ok(&["sim", "--policy", "o1", "--workload", "travis", "--no-sensitivity", "--tasks", "2"], &db.path);
    let cwd = tempfile::tempdir().unwrap();
    let report = cwd.path().join("report.html");
    std::fs::write(&report, "mine").unwrap();
    let out = oscost().current_dir(cwd.path()).args(["report", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "mine");
    let out = oscost().current_dir(cwd.path()).args(["report", "--force", "--db"]).arg(&db.path).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&report).unwrap().contains("<html"));
    // `-` is standard output.
    let out = oscost().args(["report", "-o", "-", "--db"]).arg(&db.path).output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("<html"));
}

/// A database whose `PRAGMA quick_check` fails: `run` refuses it, before measuring,
/// with a message that says so; the file is left as it was.
#[test]
fn a_damaged_database_is_refused_before_measuring() {
    let db = temp_db();
    drop(oscost::store::Store::open(&db.path).unwrap());
    let mut bytes = std::fs::read(&db.path).unwrap();
    let page = 4096;
    assert!(bytes.len() >= 4 * page, "the schema spans pages ({} bytes)", bytes.len());
    bytes[2 * page..4 * page].fill(0xff);
    std::fs::write(&db.path, &bytes).unwrap();
    let out = oscost().args(["run", "syscall.getppid", "--quick", "--db"]).arg(&db.path).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("is damaged") && err.contains(db.path.to_str().unwrap()), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("stored as run"));
    assert_eq!(std::fs::read(&db.path).unwrap(), bytes, "the damaged file was written");
}

/// A database the user may not write: the error names the file and why (its mode
/// and owner), before anything is measured. As root it is tried as `nobody` (root
/// may write any file).
#[test]
fn a_read_only_database_names_its_path_and_why() {
    let db = temp_db();
    run_ok(&["sim", "--policy", "o1", "--workload", "travis", "--no-sensitivity", "--tasks", "2"], &db.path);
    let mut cmd = oscost();
    if oscost::sys::is_root() {
        for p in [db.dir.path(), &db.path] {
            std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        std::fs::set_permissions(db.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        if !Path::new("/usr/bin/setpriv").exists() {
            eprintln!("skipped: a_read_only_database_names_its_path_and_why needs setpriv as root");
            return;
        }
        cmd = std::process::Command::new("/usr/bin/setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_oscost")]);
    }
    std::fs::set_permissions(&db.path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = cmd.args(["run", "syscall.getppid", "--quick", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(db.path.to_str().unwrap()) && err.contains("cannot be written"), "{err}");
    assert!(err.contains("mode 444"), "the cause is named: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("stored as run"));
}

/// A password in `--db`'s URL is overwritten in the process's command line (what `ps`
/// shows) while oscost still runs, and appears in no message. The server accepts the
/// connection and never answers, so oscost waits for it (connect_timeout).
#[test]
fn a_password_on_the_command_line_leaves_ps() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("postgres://u:hunter2secret@127.0.0.1:{port}/db?connect_timeout=20");
    let mut child = oscost()
        .args(["runs", "--db", &url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let cmdline = format!("/proc/{}/cmdline", child.id());
    let deadline = std::time::Instant::now() + HANG;
    let mut hidden = false;
    while std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        let shown = std::fs::read(&cmdline).unwrap_or_default();
        let shown = String::from_utf8_lossy(&shown);
        if shown.contains("127.0.0.1") && !shown.contains("hunter2secret") {
            assert!(shown.contains("u:*************@"), "{shown}");
            hidden = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(hidden && still_running, "the password stayed in ps while oscost ran: {}", stderr(&out));
    assert!(stderr(&out).contains("PGPASSWORD"), "the user is told where to give it: {}", stderr(&out));
    assert!(!stderr(&out).contains("hunter2secret"));

    // An invalid parameter in capitals is refused without its value.
    let out = oscost().args(["runs", "--db", "postgres://127.0.0.1:1/db?PASSWORD=hunter2secret"]).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("hunter2secret"), "{}", stderr(&out));
}

/// Dynamic completion (`COMPLETE=bash`) offers the runs of the database `OSCOST_DB`
/// names; through a link another user planted it opens nothing and offers no run.
#[test]
fn completion_reads_no_database_through_a_planted_link() {
    let (base, tmp) = sticky_folder();
    let db = base.path().join("r.db");
    run_ok(SMALL_SIM, &db);
    let offered = |db: &Path| -> Vec<String> {
        let out = oscost()
            .env("OSCOST_DB", db)
            .env("COMPLETE", "bash")
            .env("_CLAP_COMPLETE_INDEX", "2")
            .env("_CLAP_COMPLETE_COMP_TYPE", "9")
            .env("_CLAP_COMPLETE_SPACE", "false")
            .env("_CLAP_IFS", "\n")
            .args(["--", "oscost", "show", ""])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    };
    assert!(offered(&db).contains(&"1".to_string()), "the run of one's own database: {:?}", offered(&db));
    if !oscost::sys::is_root() {
        eprintln!("skipped: the planted-link case of completion_reads_no_database_through_a_planted_link needs root");
        return;
    }
    let link = tmp.join("results.db");
    plant_link(&db, &link);
    let through_link = offered(&link);
    assert!(
        through_link.contains(&"latest".to_string()) && !through_link.contains(&"1".to_string()),
        "{through_link:?}"
    );
}

/// `import FILE` and `--noop PATH` keep the rules of `--db`: a link another user
/// planted in a sticky folder is not followed (as root), a file in a folder other
/// users can write, a file of another user, a folder or a device are refused with
/// exit 2 before anything is read, stored or measured; an own file in an own folder,
/// and an own link to it, are taken.
#[test]
fn import_and_noop_keep_the_rules_of_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &db);
    let export = dir.path().join("runs.json");
    run_ok(&["export", "latest", "--format", "json", "-o", export.to_str().unwrap()], &db);
    let noop = dir.path().join("noop");
    std::fs::copy("/bin/true", &noop).unwrap();
    std::fs::set_permissions(&noop, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fresh = || dir.path().join(format!("fresh-{}.db", new_mark()));
    let import = |file: &Path, into: &Path| oscost().args(["import"]).arg(file).arg("--db").arg(into).output().unwrap();
    let measure = |noop: &Path, into: &Path| {
        oscost()
            .args(["run", "spawn.fork_exec", "--quick", "--rounds", "1", "--noop"])
            .arg(noop)
            .arg("--db")
            .arg(into)
            .output()
            .unwrap()
    };
    // Own files in an own folder, directly and through an own link.
    let own_link = dir.path().join("runs-link.json");
    std::os::unix::fs::symlink(&export, &own_link).unwrap();
    for file in [&export, &own_link] {
        let out = import(file, &fresh());
        assert!(out.status.success(), "{}: {}", file.display(), stderr(&out));
    }
    let out = measure(&noop, &fresh());
    assert!(out.status.success(), "{}", stderr(&out));

    // A folder and a device.
    for (path, kind) in [(dir.path().to_path_buf(), "a folder"), ("/dev/null".into(), "a character device")] {
        for out in [import(&path, &fresh()), measure(&path, &fresh())] {
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert!(stderr(&out).contains(kind), "{}", stderr(&out));
        }
    }
    // A folder others can write, its entry not the user's (as root: nobody's).
    if oscost::sys::is_root() {
        let (_base, tmp) = sticky_folder();
        let planted_export = tmp.join("runs.json");
        let planted_noop = tmp.join("noop");
        plant_link(&export, &planted_export);
        plant_link(&noop, &planted_noop);
        let into = fresh();
        for out in [import(&planted_export, &into), measure(&planted_noop, &into)] {
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert!(stderr(&out).contains("symbolic link of uid 65534"), "{}", stderr(&out));
        }
        assert!(!into.exists(), "nothing was stored");
        let theirs = tmp.join("theirs.json");
        std::fs::copy(&export, &theirs).unwrap();
        std::os::unix::fs::lchown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
        let out = import(&theirs, &into);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        // A sticky folder keeps only its trusted users' entries: another's file in it
        // could be replaced under oscost.
        assert!(stderr(&out).contains("can be written by other users"), "{}", stderr(&out));
        assert!(!into.exists(), "nothing was stored");
        // Another user's file in root's own folder: theirs to change while it is read.
        let foreign = dir.path().join("foreign.json");
        std::fs::copy(&export, &foreign).unwrap();
        std::os::unix::fs::lchown(&foreign, Some(NOBODY), Some(NOBODY)).unwrap();
        let out = import(&foreign, &into);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("belongs to uid 65534"), "{}", stderr(&out));
        assert!(!into.exists(), "nothing was stored");
    } else {
        eprintln!("skipped: the planted-link part of import_and_noop_keep_the_rules_of_db needs root");
    }
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let shared_export = shared.join("runs.json");
    std::fs::copy(&export, &shared_export).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let into = fresh();
    let out = import(&shared_export, &into);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("can be written by other users"), "{}", stderr(&out));
    assert!(!into.exists(), "nothing was stored");
}
