//! A workload's `visits = "FILE"` or `visits = "wordpress:NAME"` (issue 25), or a weighted mix
//! of them (`visits = ["a.toml:3", "b.toml"]`): each visit file checked when the suite is (a
//! wrong step is refused before any stack starts, at this key), each built-in name known to
//! the lab, and the keys that do not go with a visit refused.

use loadlab_engine::{BenchConfig, RequestSpec, Target};
use toml::Spanned;

use super::{Checked, Checker};
use crate::raw::{RawWorkload, VisitsValue};
use crate::suite::{builtin_workload, CustomRequest};

impl Checker<'_> {
    /// The workload's visit (a built-in name as written, a file made absolute), checked; `None`
    /// without `visits`.
    pub(super) fn visits(&self, w: &RawWorkload) -> Checked<Option<String>> {
        let Some(v) = &w.visits else { return Ok(None) };
        let name = w.name.get_ref();
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
        let items = match v.get_ref() {
            VisitsValue::One(one) => vec![one.as_str()],
            VisitsValue::Many(many) => many.iter().map(String::as_str).collect(),
        };
        // An empty list is one empty name, refused as such.
        let weighted = match loadlab_engine::visits::parse_weights(&items.join(",")) {
            Ok(w) => w,
            Err(e) => return self.fail(v.span(), format!("visits: {e}")),
        };
        if let [(one, 1)] = weighted.as_slice() {
            return self.visit(one, v.span()).map(Some);
        }
        // A weighted mix, as `bench --visits` takes it: each name resolved, then its weight.
        let mut resolved = Vec::with_capacity(weighted.len());
        for (name, weight) in &weighted {
            resolved.push(format!("{}:{weight}", self.visit(name, v.span())?));
        }
        Ok(Some(resolved.join(",")))
    }

    /// One visit of a workload's `visits` (written at `span`): a built-in name as written, a
    /// file made absolute and checked.
    fn visit(&self, spec: &str, span: std::ops::Range<usize>) -> Checked<String> {
        if spec.starts_with("wordpress:") || loadlab_lab::visits::builtin(spec).is_some() {
            if loadlab_lab::visits::builtin(spec).is_none() {
                let known: Vec<&str> =
                    loadlab_lab::visits::BUILTINS.iter().map(|b| b.name).collect();
                return self.fail(
                    span,
                    format!("visits: no built-in visit {spec:?}; they are: {}", known.join(", ")),
                );
            }
            return Ok(spec.to_string());
        }
        let file = self.dir.join(spec);
        let file = file.display().to_string();
        // Any host: each stack has its own; the steps' paths and checks are what is checked.
        let probe = BenchConfig::new(Target::parse("http://localhost/").expect("a valid URL"));
        if let Err(e) = loadlab_engine::visits::VisitFile::read(&file, &probe, None) {
            return self.fail(span, format!("visits: {e}"));
        }
        Ok(file)
    }

    /// A visit workload's base request when it gives no `path`: GET / (what verify asks of
    /// the stack before its cells; the steps carry their own paths).
    pub(super) fn visit_base(&self) -> CustomRequest {
        CustomRequest { path: "/".into(), spec: RequestSpec::default(), urls: None }
    }
}
