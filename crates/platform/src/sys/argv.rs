//! The process's own command line as `ps` shows it (`/proc/PID/cmdline`): the argument
//! strings the kernel placed on the stack at exec, which every user can read. A
//! password given in an argument is overwritten there in place once it is parsed.

use std::io;

/// Where the argument strings lie: `arg_start` and `arg_end` of `/proc/self/stat`
/// (its 48th and 49th fields).
fn argument_area() -> io::Result<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "/proc/self/stat without the argument area");
    // The command name (field 2) may hold spaces and parentheses; the fields after
    // its closing one start with field 3.
    let rest = &stat[stat.rfind(')').ok_or_else(bad)? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<usize>().ok()).ok_or_else(bad);
    let (start, end) = (field(48)?, field(49)?);
    if start == 0 || end <= start {
        return Err(bad());
    }
    Ok((start, end))
}

/// Calls `mask` on each of this process's argument strings (without its NUL), in the
/// memory `ps` reads, so what it overwrites there is what other users see from then on;
/// the length of each string stays. Returns how many strings `mask` changed. To be
/// called while one thread runs (early in `main`): readers of the arguments (the
/// standard library's `args`) read the same memory.
pub fn rewrite_own_arguments(mut mask: impl FnMut(&mut [u8]) -> bool) -> io::Result<usize> {
    let (start, end) = argument_area()?;
    // SAFETY: [arg_start, arg_end) is this process's argument area as the kernel reports
    // it: the strings it copied onto the initial stack at exec, mapped readable and
    // writable for the whole life of the process and never freed or moved. Rust code
    // holds no reference into it (the standard library keeps raw C pointers and copies
    // the strings when asked), and the caller runs this while no other thread reads
    // them, so this exclusive slice aliases nothing for its short life.
    let area = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    let mut changed = 0;
    for arg in area.split_mut(|&b| b == 0) {
        if mask(arg) {
            changed += 1;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_area_holds_the_arguments_ps_shows() {
        let shown = std::fs::read("/proc/self/cmdline").unwrap();
        let mut seen = Vec::new();
        rewrite_own_arguments(|arg| {
            seen.extend_from_slice(arg);
            seen.push(0);
            false
        })
        .unwrap();
        assert!(seen.starts_with(&shown[..shown.len().min(seen.len())]), "{seen:?} vs {shown:?}");
    }
}
