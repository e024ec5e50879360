//! The manual pages, as roff, generated from the command line's clap definition with
//! clap_mangen (so they never drift from the flags): oscost(1), and a page for each
//! command, oscost-COMMAND(1), each with the sections clap does not know: EXIT STATUS,
//! and on oscost(1) ENVIRONMENT and FILES.

/// Why no page could be made.
#[derive(Debug, thiserror::Error)]
pub enum ManualError {
    #[error("no command {name:?}; the pages are oscost(1) and oscost-{{{}}}(1)", .commands.join(","))]
    NoCommand { name: String, commands: Vec<String> },
    #[error("writing the manual page")]
    Write(#[from] std::io::Error),
}

/// The page of `top` (the whole command line), or of its command `command`.
pub fn page(top: clap::Command, command: Option<&str>) -> Result<String, ManualError> {
    let cmd = match command {
        None => top,
        Some(name) => {
            let sub = top.find_subcommand(name).cloned().ok_or_else(|| ManualError::NoCommand {
                name: name.to_string(),
                commands: top.get_subcommands().map(|c| c.get_name().to_string()).collect(),
            })?;
            sub.display_name(format!("oscost-{name}")).bin_name(format!("oscost {name}"))
        }
    };
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut buf)?;
    }
    manual_sections(command.is_none()).to_writer(&mut buf)?;
    if cmd.get_version().is_some() {
        man.render_version_section(&mut buf)?;
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The sections clap cannot derive: exit statuses always; the environment and files
/// on the main page.
fn manual_sections(main_page: bool) -> roff::Roff {
    use roff::{bold, roman};
    let mut r = roff::Roff::new();
    let item = |r: &mut roff::Roff, term: &str, text: &str| {
        r.control("TP", []).text([bold(term)]).text([roman(text)]);
    };
    r.control("SH", ["EXIT STATUS"]);
    for (code, text) in [
        ("0", "Success."),
        ("1", "A benchmark failed, storing failed (the run's rounds were rescued to a file), or another error."),
        (
            "2",
            "Bad input, refused before anything was measured or written: an unknown benchmark, suite or flag, a size beyond a limit, a refused helper, a malformed import, a database path another user could change, an output that is not a regular file or a new name.",
        ),
        (
            "3",
            "compare --fail-on found a figure with the verdict it fails on, or history --fail-on-change a figure that changed.",
        ),
        ("129, 130, 143", "Stopped by SIGHUP, SIGINT or SIGTERM; the rounds that finished are stored."),
        ("141", "The reader of the output closed the pipe."),
    ] {
        item(&mut r, code, text);
    }
    if main_page {
        r.control("SH", ["ENVIRONMENT"]);
        for (name, text) in [
            ("OSCOST_DB", "The results database when --db is not given: a SQLite file or a postgres:// URL."),
            (
                "XDG_DATA_HOME",
                "Where the default database lives ($XDG_DATA_HOME/oscost/results.db); ignored unless absolute.",
            ),
            ("HOME", "The default database's folder without XDG_DATA_HOME (~/.local/share/oscost)."),
            (
                "PGPASSWORD, PGPASSFILE",
                "The PostgreSQL password when the URL has none: PGPASSWORD, else the first matching line of PGPASSFILE (default ~/.pgpass; read only when it is a regular file of the user, mode 0600). A password in a URL on the command line is hidden from ps once oscost has read it, with a warning.",
            ),
            (
                "COLUMNS",
                "The width tables are fitted to (else the terminal's, else 100 columns); --wide prints every column unwrapped.",
            ),
            (
                "COMPLETE",
                "Set to a shell name (bash, zsh, fish, elvish, powershell), oscost prints that shell's dynamic completion script: source <(COMPLETE=bash oscost).",
            ),
            (
                "TMPDIR",
                "Where a private folder (mode 0700) is made for the files of the open and stat probes and, when the database's folder cannot hold it, a rescue file.",
            ),
            (
                "OSCOST_WORKER_FAULT",
                "A test hook that makes one benchmark's worker crash or hang; oscost warns when it is set.",
            ),
        ] {
            item(&mut r, name, text);
        }
        r.control("SH", ["FILES"]);
        for (name, text) in [
            (
                "~/.local/share/oscost/results.db",
                "The default results database (SQLite, WAL mode), in a folder oscost made mode 0700; a planted link there is refused. Any database file (--db) is used only where no other user can change its path: every folder on the way is the user's or root's and not writable by others (or sticky, holding an entry of theirs), its own folder is writable by no one else (SQLite makes its -wal and -shm files there), a link is followed only when it is the user's or root's, and an existing file must be a regular SQLite file of the user or root (an empty one only of the user's own). A file that fails SQLite's quick_check is not written into.",
            ),
            (
                "<db>.unsaved-run<ID>-<PID>.json",
                "A run's measured rounds when storing failed: an export with a UUID of its own, for oscost import.",
            ),
        ] {
            item(&mut r, name, text);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top() -> clap::Command {
        clap::Command::new("oscost")
            .version("1")
            .about("what it costs")
            .subcommand(clap::Command::new("run").about("measure").arg(clap::Arg::new("quick").long("quick")))
    }

    #[test]
    fn the_main_page_has_every_section_and_a_command_page_its_exit_statuses() {
        let main = page(top(), None).unwrap();
        for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "OSCOST_DB"] {
            assert!(main.contains(section), "{section} missing");
        }
        let run = page(top(), Some("run")).unwrap();
        assert!(run.contains("oscost\\-run") || run.contains("oscost-run"), "{run}");
        assert!(run.contains("EXIT STATUS") && !run.contains("ENVIRONMENT"));
        let err = page(top(), Some("nope")).unwrap_err();
        assert_eq!(err.to_string(), "no command \"nope\"; the pages are oscost(1) and oscost-{run}(1)");
    }
}
