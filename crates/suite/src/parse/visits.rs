//! A workload's `visits = "FILE"` or `visits = "wordpress:NAME"`, or a weighted mix
//! of them (`visits = ["a.toml:3", "b.toml"]`): each visit file checked when the suite is (a
//! wrong step is refused before any stack starts, at this key), each built-in name known to
//! the lab, its `given` values each used by a step (none captured by one), and the keys that
//! do not go with a visit refused.

use loadlab_engine::visits::{parse_weight, Weighted};
use loadlab_engine::{BenchConfig, RequestSpec, Target};
use toml::Spanned;

use super::{Checked, Checker};
use crate::raw::{RawWorkload, VisitsValue};
use crate::suite::{builtin_workload, CustomRequest};

/// A visit's given values, by name.
type Given = Vec<(String, String)>;

/// A given value whose name no step of `visit` uses.
fn unused(visit: &loadlab_visit::Visit, given: &Given) -> Result<(), String> {
    match given.iter().find(|(n, _)| !visit.uses(n)) {
        Some((n, _)) => Err(format!("a value is given for {{{n}}}, which no step uses")),
        None => Ok(()),
    }
}

impl Checker<'_> {
    /// The workload's visit (a built-in name as written, a file made absolute) and the values
    /// it is given, checked; `None` without `visits`.
    pub(super) fn visits(&self, w: &RawWorkload) -> Checked<(Option<Weighted>, Given)> {
        let name = w.name.get_ref();
        let given = self.given(w)?;
        let Some(v) = &w.visits else {
            return match &w.given {
                Some(g) => self.fail(g.span(), format!("{name}: given goes with visits")),
                None => Ok((None, given)),
            };
        };
        let others = [
            ("urls", w.urls.as_ref().map(Spanned::span)),
            ("view", w.view.as_ref().filter(|v| *v.get_ref()).map(Spanned::span)),
            ("body", w.body.as_ref().map(Spanned::span)),
            ("body_file", w.body_file.as_ref().map(Spanned::span)),
        ];
        if let Some((key, span)) = others.into_iter().find_map(|(k, s)| Some((k, s?))) {
            return self.fail(
                span,
                format!(
                    "{name}: {key} does not go with visits: the visit's steps are its requests"
                ),
            );
        }
        if builtin_workload(name).is_some() {
            return self.fail(
                w.name.span(),
                format!("{name:?} is a built-in workload: name the visit workload otherwise"),
            );
        }
        // The list as `bench --visits` given once per element (each one name, commas and
        // all), the string as `--visits` given once; an empty list is one empty name.
        let parsed = match v.get_ref() {
            VisitsValue::One(one) => {
                let is_file = |n: &str| self.dir.join(n).is_file();
                loadlab_engine::visits::parse_visits(std::slice::from_ref(one), is_file)
            }
            VisitsValue::Many(many) if many.is_empty() => parse_weight("").map(|w| vec![w]),
            VisitsValue::Many(many) => many.iter().map(|m| parse_weight(m)).collect(),
        };
        let weighted = match parsed {
            Ok(w) => w,
            Err(e) => return self.fail(v.span(), format!("visits: {e}")),
        };
        if let [(one, 1)] = weighted.as_slice() {
            return Ok((Some(vec![(self.visit(one, v.span(), &given, true)?, 1)]), given));
        }
        // A weighted mix, as `bench --visits` takes it: each name resolved, then its weight;
        // a given value need only be used by one of them.
        let mut resolved = Vec::with_capacity(weighted.len());
        for (name, weight) in &weighted {
            resolved.push((self.visit(name, v.span(), &given, false)?, *weight));
        }
        Ok((Some(resolved), given))
    }

    /// One visit of a workload's `visits` (written at `span`): a built-in name as written, a
    /// file made absolute, checked with the values `given` (each used by a step when `alone`).
    fn visit(
        &self,
        spec: &str,
        span: std::ops::Range<usize>,
        given: &Given,
        alone: bool,
    ) -> Checked<String> {
        let mut names: Vec<&str> = given.iter().map(|(n, _)| n.as_str()).collect();
        if spec.starts_with("wordpress:") || loadlab_lab::visits::builtin(spec).is_some() {
            let Some(b) = loadlab_lab::visits::builtin(spec) else {
                let known: Vec<&str> =
                    loadlab_lab::visits::BUILTINS.iter().map(|b| b.name).collect();
                return self.fail(
                    span,
                    format!("visits: no built-in visit {spec:?}; they are: {}", known.join(", ")),
                );
            };
            names.extend(b.given.iter().filter(|g| !given.iter().any(|(n, _)| n == *g)));
            let read = loadlab_visit::visit_file::parse(b.text, b.name, &names)
                .map_err(|e| e.to_string())
                .and_then(|visit| if alone { unused(&visit, given) } else { Ok(()) });
            if let Err(e) = read {
                return self.fail(span, format!("visits: {e}"));
            }
            return Ok(spec.to_string());
        }
        let file = self.dir.join(spec).display().to_string();
        let read = if alone {
            // Any host: each stack has its own; the steps' paths and checks are what is checked.
            let probe = BenchConfig::new(Target::parse("http://localhost/").expect("a valid URL"));
            let vars = given.iter().cloned().collect();
            loadlab_engine::visits::VisitFile::read(&file, &probe, None, vars)
                .map(drop)
                .map_err(|e| e.to_string())
        } else {
            std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}")).and_then(|text| {
                loadlab_visit::visit_file::parse(&text, &file, &names)
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        };
        if let Err(e) = read {
            return self.fail(span, format!("visits: {e}"));
        }
        Ok(file)
    }

    /// `given = { NAME = "VALUE" }`, each as `loadlab_visit::given_refusal` allows.
    fn given(&self, w: &RawWorkload) -> Checked<Given> {
        let Some(g) = &w.given else { return Ok(Vec::new()) };
        for (n, value) in g.get_ref() {
            if let Some(why) = loadlab_visit::given_refusal(n, value) {
                return self.fail(g.span(), format!("given {n}: {why}"));
            }
        }
        Ok(g.get_ref().iter().map(|(n, v)| (n.clone(), v.clone())).collect())
    }

    /// A visit workload's base request when it gives no `path`: GET / (what verify asks of
    /// the stack before its cells; the steps carry their own paths).
    pub(super) fn visit_base(&self) -> CustomRequest {
        CustomRequest { path: "/".into(), spec: RequestSpec::default(), urls: None }
    }
}
