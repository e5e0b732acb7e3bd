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

/// `--visits`' value: visit files (or built-in visits) separated by commas, each with an
/// optional `:WEIGHT` (a whole number from 1, default 1). A name whose last `:` part is not a
/// number is a name whole (`wordpress:login`).
pub fn parse_weights(spec: &str) -> Result<Vec<(String, u32)>, String> {
    spec.split(',')
        .map(|part| {
            let part = part.trim();
            let (name, weight) = match part.rsplit_once(':') {
                Some((name, w)) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => {
                    let weight = w.parse::<u32>().ok().filter(|w| *w > 0).ok_or_else(|| {
                        format!("{part}: a weight is a whole number from 1 to {}", u32::MAX)
                    })?;
                    (name, weight)
                }
                _ => (part, 1),
            };
            if name.is_empty() {
                return Err(format!("{spec}: an empty visit file name"));
            }
            Ok((name.to_string(), weight))
        })
        .collect()
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
