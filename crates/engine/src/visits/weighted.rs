//! A weighted mix of visit files (`--visits a.toml:3,b.toml:1`): each arriving visitor picks
//! one file's visit by weight, from the run's seed (the driver's picker, as a URL list's
//! weighted picks: one generator per worker's stream of the schedule, so that the same seed,
//! threads and agents repeat the same picks). The files' distinct requests share one URL list;
//! each file's steps have figures of their own, named after their file.

use loadlab_visit::Vars;

use super::carry::Render;
use super::{Plan, VisitFile};
use crate::EngineError;

/// One visit file of a mix: what names it (its path, or a built-in visit's name), its text
/// and its weight.
#[derive(Debug, Clone)]
pub struct WeightedFile {
    pub name: String,
    pub text: String,
    pub weight: u32,
}

/// Visit files (or built-in visits) with their weights, in the order named.
pub type Weighted = Vec<(String, u32)>;

/// `--visits` as given, each time it is: given more than once, each value is one visit file
/// (or built-in visit) with an optional `:WEIGHT`, commas and all, so that any path can be
/// named; given once, a comma list ([`parse_weights`]), unless the value, its `:WEIGHT`
/// aside, names a file as a whole (`is_file`: a path holding a comma). A suite's list of
/// visits is the first case, its string the second.
pub fn parse_visits(values: &[String], is_file: impl Fn(&str) -> bool) -> Result<Weighted, String> {
    match values {
        [] => Err("an empty visit file name".to_string()),
        [one] => match parse_weight(one) {
            Ok((name, weight)) if is_file(&name) => Ok(vec![(name, weight)]),
            _ => parse_weights(one),
        },
        many => many.iter().map(|v| parse_weight(v)).collect(),
    }
}

/// `--visits`' value: visit files (or built-in visits) separated by commas, each as
/// [`parse_weight`] reads one.
pub fn parse_weights(spec: &str) -> Result<Weighted, String> {
    spec.split(',').map(|part| parse_weight(part.trim())).collect()
}

/// One visit file (or built-in visit) with an optional `:WEIGHT` (a whole number from 1,
/// default 1). A name whose last `:` part is not a number is a name whole (`wordpress:login`).
pub fn parse_weight(item: &str) -> Result<(String, u32), String> {
    let (name, weight) = match item.rsplit_once(':') {
        Some((name, w)) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => {
            let weight = w.parse::<u32>().ok().filter(|w| *w > 0).ok_or_else(|| {
                format!("{item}: a weight is a whole number from 1 to {}", u32::MAX)
            })?;
            (name, weight)
        }
        _ => (item, 1),
    };
    if name.is_empty() {
        return Err(format!("{item:?}: an empty visit file name"));
    }
    Ok((name.to_string(), weight))
}

impl VisitFile {
    /// Several visit files' visits for `config`'s target and base request, picked by weight.
    /// `per_visitor` as [`VisitFile::read`]'s, over every file's steps; `given` as
    /// [`VisitFile::parse`]'s, each value used by a step of at least one of the files.
    pub fn weighted(
        files: &[WeightedFile],
        config: &crate::BenchConfig,
        per_visitor: Option<usize>,
        given: Vars,
    ) -> Result<VisitFile, EngineError> {
        let names: Vec<&str> = given.keys().map(String::as_str).collect();
        let mut visits = Vec::with_capacity(files.len());
        for f in files {
            let visit = loadlab_visit::visit_file::parse(&f.text, &f.name, &names)
                .map_err(|e| EngineError::Config(e.to_string()))?;
            visits.push((f.name.clone(), visit, f.weight));
        }
        if let Some(unused) = names.iter().find(|n| !visits.iter().any(|(_, v, _)| v.uses(n))) {
            return Err(EngineError::Config(format!(
                "a value is given for {{{unused}}}, which no step of the visits uses"
            )));
        }
        let widest = visits.iter().flat_map(|(_, v, _)| &v.bursts).map(|b| b.calls.len()).max();
        let per_visitor = per_visitor.unwrap_or(widest.unwrap_or(1).min(super::PER_VISITOR));
        let render = Render {
            base: config.request.clone(),
            target: config.target.clone(),
            keepalive: config.keepalive,
            given,
        };
        let label: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        let (plan, mix) = Plan::carrying_all(&label.join(","), &visits, per_visitor, render)?;
        Ok(VisitFile { plan, mix })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_a_colon_and_a_built_in_name_keeps_its_own() {
        let parsed = parse_weights("a.toml:3, b.toml,wordpress:login:2,wordpress:front").unwrap();
        let expected =
            [("a.toml", 3), ("b.toml", 1), ("wordpress:login", 2), ("wordpress:front", 1)];
        let expected: Vec<(String, u32)> =
            expected.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        assert_eq!(parsed, expected);
        assert!(parse_weights("a.toml:0").unwrap_err().contains("from 1"));
        assert!(parse_weights("a.toml:99999999999").unwrap_err().contains("whole number"));
        assert!(parse_weights(":3").unwrap_err().contains("empty"));
    }

    #[test]
    fn visits_given_more_than_once_are_one_name_each_and_a_whole_file_is_not_split() {
        let named = |v: &[&str], file: &str| {
            let values: Vec<String> = v.iter().map(|s| s.to_string()).collect();
            parse_visits(&values, |n| n == file)
        };
        let pairs = |p: &[(&str, u32)]| -> Weighted {
            p.iter().map(|(n, w)| (n.to_string(), *w)).collect()
        };
        // Several values: each one name, its commas and colons kept, the last `:N` a weight.
        let many = named(&["dir,x/a,b.toml:3", "c:d.toml", "wordpress:login:2"], "");
        assert_eq!(
            many,
            Ok(pairs(&[("dir,x/a,b.toml", 3), ("c:d.toml", 1), ("wordpress:login", 2)]))
        );
        // One value: a comma list, unless it names a file whole.
        assert_eq!(named(&["a,b.toml:2"], ""), Ok(pairs(&[("a", 1), ("b.toml", 2)])));
        assert_eq!(named(&["a,b.toml:2"], "a,b.toml"), Ok(pairs(&[("a,b.toml", 2)])));
        // An empty name or a bad weight, in any of them.
        for bad in [&["a.toml", ""][..], &["a.toml", ":2"], &[""], &[], &["a.toml:0", "b.toml"]] {
            assert!(named(bad, "").is_err(), "{bad:?}");
        }
        assert!(named(&["a.toml", "b,c.toml:0"], "").unwrap_err().contains("from 1"));
    }

    #[test]
    fn each_files_steps_are_named_after_it_and_indexed_in_turn() {
        let config = crate::BenchConfig::new(crate::Target::parse("http://127.0.0.1:9/").unwrap());
        let file = |name: &str, text: &str, weight| WeightedFile {
            name: name.into(),
            text: text.into(),
            weight,
        };
        let files = [
            file("a.toml", "[[step]]\npath = \"/a\"\n[[step]]\npath = \"/b\"\n", 3),
            file("b.toml", "[[step]]\npath = \"/a\"\n", 1),
        ];
        let v = VisitFile::weighted(&files, &config, None, Vars::new()).unwrap();
        assert_eq!(v.plan.steps, ["a.toml: 1 GET /a", "a.toml: 2 GET /b", "b.toml: 1 GET /a"]);
        assert_eq!(v.plan.step_index(1, 0), Some(2));
        assert_eq!(v.plan.weights(), Some(vec![3, 1]));
        // The files' requests share one list: /a once.
        assert_eq!(v.mix.entries.len(), 2);
    }
}
