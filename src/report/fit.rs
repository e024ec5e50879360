//! Fitting text to the terminal: tables set to the width a table may take, prose
//! (notes, preflight, footers) wrapped at word boundaries, long values elided. Every
//! command's printed text goes through here, so no line is wider than the terminal.

use comfy_table::{ContentArrangement, Table};

/// How wide a table may be, and how much a run's table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// At most this many columns, one screen: a line per figure (per-call twins folded
    /// into their batch line, raw/libc and phase twins left to `-v`), flags as numbered
    /// notes said once for every line they concern.
    Fit(u16),
    /// At most this many columns, everything (`-v`): every row, the counts, the trace
    /// pass, each flag's reason whole; the wide layout when it fits, else the narrow
    /// one (benchmark and variant stacked, the per-call max left out, cells wrapped).
    Full(u16),
    /// Every column, nothing wrapped (`--wide`).
    Wide,
}

/// The width a table is fitted to when nothing says otherwise (a pipe, a file):
/// what a terminal of common size shows without wrapping.
pub const DEFAULT_WIDTH: u16 = 100;

/// A table fitted to `width`: at most that many columns, its cells wrapped where they
/// must be (`--wide` leaves it unwrapped). Words of a cell are kept whole where the
/// width allows it; comfy-table breaks a word only when a column is narrower than it.
pub fn table(t: &mut Table, width: Width) {
    if let Some(w) = width.columns() {
        t.set_content_arrangement(ContentArrangement::Dynamic).set_width(w);
    }
}

/// `text` wrapped to `width` (nothing when `--wide`); see [`wrap`].
pub fn prose(text: &str, width: Width) -> String {
    match width.columns() {
        Some(w) => wrap(text, usize::from(w)),
        None => text.to_string(),
    }
}

/// Each line of `text` broken at spaces so it fits `width` characters, the
/// continuation lines indented by two spaces (and by the line's own indent). A word
/// longer than the line is the only thing broken inside (a path, a command line):
/// otherwise it would overflow the terminal. Ends with a line break when `text` does.
pub fn wrap(text: &str, width: usize) -> String {
    wrap_with(text, width, None)
}

/// [`wrap`] with the continuation lines indented by `indent` columns (a value beside
/// its name: `info`), when the width allows it.
pub fn hanging(text: &str, width: Width, indent: usize) -> String {
    match width.columns() {
        Some(w) => wrap_with(text, usize::from(w), Some(indent)),
        None => text.to_string(),
    }
}

fn wrap_with(text: &str, width: usize, indent: Option<usize>) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        wrap_line(line, width.max(if indent == Some(0) { 4 } else { 20 }), indent, &mut out);
    }
    out
}

/// One line of [`wrap_with`].
fn wrap_line(line: &str, width: usize, hanging: Option<usize>, out: &mut String) {
    if line.chars().count() <= width {
        out.push_str(line);
        return;
    }
    let own_indent = line.chars().take_while(|c| *c == ' ').count();
    let indent = " ".repeat(hanging.unwrap_or(own_indent + 2).min(width / 3));
    let mut current = " ".repeat(own_indent);
    let mut len = own_indent;
    let mut fresh = true;
    for word in line.split(' ') {
        // Two spaces or more between words (columns aligned) are kept, except where
        // a line breaks.
        if word.is_empty() {
            if !fresh && len < width {
                current.push(' ');
                len += 1;
            }
            continue;
        }
        let wlen = word.chars().count();
        if !fresh && len + 1 + wlen > width {
            out.push_str(current.trim_end());
            out.push('\n');
            current = indent.clone();
            len = indent.len();
            fresh = true;
        }
        if !fresh {
            current.push(' ');
            len += 1;
        }
        // A word longer than a whole line: broken where the line ends.
        let mut rest: Vec<char> = word.chars().collect();
        while len + rest.len() > width && len < width {
            let take = width - len;
            current.extend(&rest[..take]);
            out.push_str(&current);
            out.push('\n');
            rest.drain(..take);
            current = indent.clone();
            len = indent.len();
        }
        current.extend(&rest);
        len += rest.len();
        fresh = false;
    }
    out.push_str(current.trim_end());
}

/// A table of `header` and `rows` fitted to `width`: columns keep their width where
/// the table fits; otherwise the `flexible` columns (names, verdicts) share what the
/// others leave, in proportion to their widths, their text wrapped between words.
/// Columns in `right` are right-aligned. Narrower than the fixed columns, every cell
/// is wrapped where comfy-table must.
pub fn flex_table(header: &[&str], rows: &[Vec<String>], right: &[usize], flexible: &[usize], width: Width) -> Table {
    use comfy_table::{Cell, CellAlignment, presets::UTF8_FULL_CONDENSED};
    let n = header.len();
    let natural: Vec<usize> =
        (0..n).map(|i| rows.iter().map(|r| widest(&r[i])).chain([widest(header[i])]).max().unwrap_or(0)).collect();
    let chrome = 3 * n + 1;
    let wrap_to: Option<Vec<usize>> = width.columns().map(usize::from).and_then(|w| {
        if natural.iter().sum::<usize>() + chrome <= w {
            return None;
        }
        let fixed: usize = (0..n).filter(|i| !flexible.contains(i)).map(|i| natural[i]).sum();
        let room = w.saturating_sub(fixed + chrome);
        let wanted: usize = flexible.iter().map(|i| natural[*i]).sum::<usize>().max(1);
        Some(
            (0..n)
                .map(|i| if flexible.contains(&i) { (room * natural[i] / wanted).max(8) } else { natural[i] })
                .collect(),
        )
    });
    let fill = |i: usize, text: &str| match &wrap_to {
        Some(cols) if flexible.contains(&i) => wrap_cell(text, cols[i]),
        _ => text.to_string(),
    };
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header((0..n).map(|i| fill(i, header[i])).collect::<Vec<_>>());
    for r in rows {
        t.add_row((0..n).map(|i| {
            let c = Cell::new(fill(i, &r[i]));
            if right.contains(&i) { c.set_alignment(CellAlignment::Right) } else { c }
        }));
    }
    if width.columns().is_some_and(|w| widest(&t.to_string()) > usize::from(w)) {
        table(&mut t, width);
    }
    t
}

/// A column of a [`folded_table`]: its header, how it is aligned, whether it wraps
/// (names, verdicts) and whether it may be left out where the table is too wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column<'a> {
    pub header: &'a str,
    pub right: bool,
    pub flexible: bool,
    pub droppable: bool,
}

impl<'a> Column<'a> {
    /// A left-aligned column that wraps between words when the table is too wide.
    pub fn flexible(header: &'a str) -> Self {
        Column { header, right: false, flexible: true, droppable: false }
    }

    /// A right-aligned column (a number) kept whole.
    pub fn right(header: &'a str) -> Self {
        Column { header, right: true, flexible: false, droppable: false }
    }

    /// This column, left out where the table does not fit otherwise.
    pub fn droppable(self) -> Self {
        Column { droppable: true, ..self }
    }
}

/// A table of `columns` and `rows` at `width`: whole where it fits; else without
/// its droppable columns (named in the second value, for the caller to say so); then
/// with the flexible ones wrapped between words ([`flex_table`]). `-v` and `--wide`
/// (a [`Width::Full`] or [`Width::Wide`]) keep every column.
pub fn folded_table<'a>(columns: &[Column<'a>], rows: &[Vec<String>], width: Width) -> (Table, Vec<&'a str>) {
    let keep_all = !matches!(width, Width::Fit(_));
    let whole = |kept: &[usize]| {
        let header: Vec<&str> = kept.iter().map(|i| columns[*i].header).collect();
        let cells: Vec<Vec<String>> = rows.iter().map(|r| kept.iter().map(|i| r[*i].clone()).collect()).collect();
        let pick = |f: fn(&Column<'_>) -> bool| -> Vec<usize> {
            kept.iter().enumerate().filter(|(_, i)| f(&columns[**i])).map(|(at, _)| at).collect()
        };
        flex_table(&header, &cells, &pick(|c| c.right), &pick(|c| c.flexible), width)
    };
    let all: Vec<usize> = (0..columns.len()).collect();
    let full = whole(&all);
    let fits = |t: &Table| width.columns().is_none_or(|w| widest(&t.to_string()) <= usize::from(w));
    let unwrapped = width.columns().is_none_or(|w| {
        let natural: usize = all
            .iter()
            .map(|i| rows.iter().map(|r| widest(&r[*i])).chain([widest(columns[*i].header)]).max().unwrap_or(0) + 3)
            .sum();
        natural < usize::from(w)
    });
    if keep_all || (unwrapped && fits(&full)) || !columns.iter().any(|c| c.droppable) {
        return (full, Vec::new());
    }
    let kept: Vec<usize> = all.iter().copied().filter(|i| !columns[*i].droppable).collect();
    let dropped = columns.iter().filter(|c| c.droppable).map(|c| c.header).collect();
    (whole(&kept), dropped)
}

/// A cell's text wrapped to `width` between its words, continuation lines not indented.
fn wrap_cell(text: &str, width: usize) -> String {
    wrap_with(text, width, Some(0))
}

/// A message on standard error, wrapped to its terminal's width (`COLUMNS`, else the
/// terminal's, else the 100 columns of a pipe), as the tables on standard output are.
pub fn say(message: &str) {
    eprintln!("{}", for_stderr(message));
}

/// `message` wrapped to standard error's terminal when it is one; to a pipe or a file,
/// as it is (one line an event, for whatever reads the log).
pub fn for_stderr_terminal(message: &str) -> String {
    if rustix::termios::isatty(std::io::stderr()) { for_stderr(message) } else { message.to_string() }
}

/// `message` wrapped as [`say`] prints it (for a caller that prints it its own way).
pub fn for_stderr(message: &str) -> String {
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok());
    let terminal = || rustix::termios::tcgetwinsize(std::io::stderr()).ok().map(|w| w.ws_col);
    let w = columns.or_else(terminal).filter(|c| *c >= 40).unwrap_or(DEFAULT_WIDTH);
    wrap(message, usize::from(w))
}

/// `text`, or its start and `…` when it is longer than `width` characters (a kernel
/// command line in a table; JSON keeps it whole).
pub fn elide(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The widest line of `text`, in characters (what a terminal shows).
pub fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_breaks_between_words_and_keeps_them_whole() {
        let text = "spawn.fork_exec phase=full_cycle: of 82 children, 0 ran first on the parent's CPU (parent preempted), 33 started on another CPU";
        let w = wrap(text, 40);
        assert!(widest(&w) <= 40, "{w}");
        let words: Vec<&str> = text.split(' ').collect();
        let back: Vec<&str> = w.split_whitespace().collect();
        assert_eq!(words, back, "every word whole, in order:\n{w}");
        assert!(w.lines().skip(1).all(|l| l.starts_with("  ")), "continuations indented:\n{w}");
    }

    #[test]
    fn a_word_longer_than_the_line_is_the_only_one_broken() {
        let long = "x".repeat(90);
        let w = wrap(&format!("path {long} end"), 40);
        assert!(widest(&w) <= 40, "{w}");
        assert_eq!(w.chars().filter(|c| *c == 'x').count(), 90);
        assert!(w.lines().any(|l| l.trim() == "end" || l.ends_with(" end")), "{w}");
    }

    #[test]
    fn lines_and_short_text_pass_unchanged() {
        assert_eq!(wrap("a b\nc\n", 80), "a b\nc\n");
        assert_eq!(wrap("", 80), "");
        assert_eq!(elide("abcdef", 4), "abc…");
        assert_eq!(elide("abc", 4), "abc");
    }

    #[test]
    fn a_wrapped_line_keeps_the_spaces_that_align_its_columns() {
        let line = "  syscall      400.0 ns  assumed  a system call, about three hundred cycles";
        let out = wrap_with(line, 50, Some(6));
        assert_eq!(out, "  syscall      400.0 ns  assumed  a system call,\n      about three hundred cycles");
        // Where the line breaks, the spaces go with it.
        assert_eq!(wrap_with("aaaaaaaaaaaaaaaa    bbbb", 20, Some(2)), "aaaaaaaaaaaaaaaa\n  bbbb");
    }
}
