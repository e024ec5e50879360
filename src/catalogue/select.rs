//! Choosing benchmarks from the command line: family names, benchmark ids, the default
//! suite, and a helpful suggestion when a name matches nothing.

use crate::bench::{BenchDef, Scope};

/// A selector that matched nothing, with the closest valid name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown benchmark {given:?}{}", .suggestion.as_ref().map(|s| format!("; did you mean {s:?}?")).unwrap_or_default())]
pub struct UnknownBenchmark {
    pub given: String,
    pub suggestion: Option<String>,
}

/// The valid name closest to `given` among families, ids and `all`.
pub fn closest<'a>(given: &str, names: impl Iterator<Item = &'a str>) -> Option<String> {
    names.map(|n| (strsim::levenshtein(given, n), n)).min_by_key(|(d, _)| *d).map(|(_, n)| n.to_string())
}

/// Resolves selectors to benchmarks in registry order. No selectors: the default
/// suite's headline variants. A family name or `all`: every variant.
pub fn select(
    registry: &[&'static BenchDef],
    selectors: &[String],
) -> Result<Vec<(&'static BenchDef, Scope)>, UnknownBenchmark> {
    if selectors.is_empty() {
        return Ok(registry.iter().filter(|b| b.in_default_suite).map(|b| (*b, Scope::Headline)).collect());
    }
    let mut chosen = vec![false; registry.len()];
    for s in selectors {
        let mut hit = false;
        for (i, b) in registry.iter().enumerate() {
            if s == "all" || b.id == *s || b.family.name() == s {
                chosen[i] = true;
                hit = true;
            }
        }
        if !hit {
            let mut names: Vec<&str> = registry.iter().map(|b| b.id.as_str()).collect();
            names.extend(registry.iter().map(|b| b.family.name()));
            names.push("all");
            return Err(UnknownBenchmark { given: s.clone(), suggestion: closest(s, names.into_iter()) });
        }
    }
    Ok(registry.iter().zip(chosen).filter(|(_, c)| *c).map(|(b, _)| (*b, Scope::Full)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::registry;

    /// A typo is answered with the nearest name.
    #[test]
    fn the_closest_name_is_suggested() {
        let names = ["syscall.getppid", "syscall.getpid", "ctx.pipe"];
        assert_eq!(closest("syscall.getppd", names.into_iter()).as_deref(), Some("syscall.getppid"));
        assert_eq!(closest("ctx.pip", names.into_iter()).as_deref(), Some("ctx.pipe"));
        assert_eq!(closest("x", std::iter::empty()), None);
    }

    #[test]
    fn selects_by_family_id_and_default() {
        let reg = registry();
        let d = select(&reg, &[]).unwrap();
        assert!(!d.is_empty() && d.iter().all(|(b, s)| b.in_default_suite && *s == Scope::Headline));
        let f = select(&reg, &["syscall".into()]).unwrap();
        assert!(f.iter().all(|(b, _)| b.id.starts_with("syscall.")));
        let one = select(&reg, &["syscall.getppid".into()]).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].0.id, "syscall.getppid");
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let reg = registry();
        let e = select(&reg, &["syscall.getpid2".into()]).unwrap_err();
        assert_eq!(e.suggestion.as_deref(), Some("syscall.getpid"));
        assert!(e.to_string().contains("did you mean \"syscall.getpid\""));
        let e = select(&reg, &["syscal".into()]).unwrap_err();
        assert_eq!(e.suggestion.as_deref(), Some("syscall"));
    }
}
