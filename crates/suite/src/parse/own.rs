//! The parts of a suite that are the user's own: a server at a URL (`[[stacks]]` with `url`),
//! config snippets and a docroot on a lab stack (`config`, `docroot`), and a request
//! (`[[workloads]]` with `path`), checked before anything runs: a file the suite names must be
//! readable, a certificate parse, a header be one, a config directory hold only include points.

use std::ops::Range;
use std::path::PathBuf;

use loadlab_engine::{Target, TlsOptions};
use loadlab_lab::named::Processes;
use loadlab_lab::own;
use loadlab_load::{Origin, Refusal, Request, Setting};
use toml::Spanned;

use super::{Checked, Checker};
use crate::raw::{RawStack, RawWorkload};
use crate::suite::{all_workload_names, builtin_workload, CustomRequest, External, StackSpec};

impl Checker<'_> {
    /// A server of the user's at `url`: no knob of the lab applies, a label is needed, and
    /// what to trust (https) and what to sample are checked here, before anything runs.
    pub(super) fn external(&self, s: &RawStack, url: &Spanned<String>) -> Checked<StackSpec> {
        for key in RawStack::KNOBS {
            if let Some(span) = s.knob_span(key) {
                return self.fail(
                    span,
                    format!(
                        "{key} is a knob of the lab's stacks: an external target (url) runs as \
                         you configured it, and loadlab neither starts nor changes it"
                    ),
                );
            }
        }
        let Some(label) = self.label(s)? else {
            return self.fail(
                url.span(),
                "an external target needs a label (label = \"my-nginx\"): it names the stack \
                 in the cells and the report",
            );
        };
        let target = match Target::parse(url.get_ref()) {
            Ok(t) => t,
            Err(e) => return self.fail(url.span(), format!("url: {e}")),
        };
        if target.path.contains('?') {
            return self.fail(
                url.span(),
                "url: a query cannot be combined with the workloads' paths; put it in a \
                 workload's path",
            );
        }
        let tls = self.external_tls(s, &target)?;
        let processes = self.processes(s)?;
        let base = url.get_ref().trim_end_matches('/').to_string();
        Ok(StackSpec::external(label, External { url: base, tls, processes }))
    }

    /// An external `https://` target's trust: the file's `cacert` or `insecure`; sessions
    /// resume as in `bench`.
    fn external_tls(&self, s: &RawStack, target: &Target) -> Checked<TlsOptions> {
        let mut tls = TlsOptions { resume: true, ..TlsOptions::default() };
        if let Some(i) = &s.insecure {
            if !target.tls {
                return self.fail(i.span(), "insecure applies to an https:// url");
            }
            tls.insecure = *i.get_ref();
        }
        if let Some(c) = &s.cacert {
            if !target.tls {
                return self.fail(c.span(), "cacert applies to an https:// url");
            }
            if tls.insecure {
                return self.fail(c.span(), "give cacert or insecure = true, not both");
            }
            tls.cacert = Some(self.path(c));
            // The engine's own reading of the file, so a bad one is refused here with its line.
            if let Err(e) = loadlab_engine::tls::client_config(&tls, false) {
                let e = e.strip_prefix("--cacert ").unwrap_or(&e);
                return self.fail(c.span(), format!("cacert: {e}"));
            }
        }
        Ok(tls)
    }

    /// The processes to sample as the tier `external`: `pids`, `pidfile` or `unit`, at most
    /// one; `None`: not sampled.
    fn processes(&self, s: &RawStack) -> Checked<Option<Processes>> {
        let named: Vec<(&str, Range<usize>)> = s
            .external_keys()
            .into_iter()
            .filter(|(k, _)| ["pids", "pidfile", "unit"].contains(k))
            .filter_map(|(k, span)| Some((k, span?)))
            .collect();
        if let [_, (second, span), ..] = named.as_slice() {
            return self.fail(
                span.clone(),
                format!("{second}: name the processes to sample once: pids, pidfile or unit"),
            );
        }
        Ok(if let Some(pids) = &s.pids {
            if pids.get_ref().is_empty() {
                return self.fail(pids.span(), "pids: give at least one, or leave pids out");
            }
            let mut list = Vec::new();
            for p in pids.get_ref() {
                match i32::try_from(*p.get_ref()) {
                    Ok(pid) if pid > 0 => list.push(pid),
                    _ => return self.fail(p.span(), "pids: a process id is a positive number"),
                }
            }
            Some(Processes::Pids(list))
        } else if let Some(f) = &s.pidfile {
            Some(Processes::Pidfile(self.path(f)))
        } else if let Some(u) = &s.unit {
            let unit = u.get_ref().trim();
            if unit.is_empty() || unit.contains(char::is_whitespace) || unit.contains('/') {
                return self.fail(u.span(), "unit: a systemd unit's name, as \"nginx.service\"");
            }
            Some(Processes::Unit(unit.to_string()))
        } else {
            None
        })
    }

    /// `config = "DIR"`: the user's config snippets, by the include points' names.
    pub(super) fn own_config(&self, s: &Spanned<String>) -> Checked<own::Config> {
        own::Config::read(&self.path(s)).or_else(|e| self.fail(s.span(), format!("config: {e}")))
    }

    /// `docroot = "DIR"`: the user's files, served beside the lab's.
    pub(super) fn own_docroot(&self, s: &Spanned<String>) -> Checked<PathBuf> {
        own::read_docroot(&self.path(s)).or_else(|e| self.fail(s.span(), format!("docroot: {e}")))
    }

    /// The refusal of a value of `w`'s that `bench`'s request flags share, at its key.
    pub(super) fn refused<T>(&self, w: &RawWorkload, refusal: Refusal) -> Checked<T> {
        let key = match refusal.setting {
            Setting::Method => w.method.as_ref(),
            Setting::Header(i) => w.headers.as_ref().and_then(|h| h.get(i)),
            Setting::Body => w.body_file.as_ref(),
            Setting::BodyString => w.body.as_ref(),
            Setting::ExpectStatus => w.expect_status.as_ref(),
            Setting::ExpectBodySha256 => w.expect_sha256.as_ref(),
            Setting::ExpectContains => w.expect_contains.as_ref(),
        };
        // A value left out is its default, which is never refused: the name is a fallback.
        let span = key.map_or(w.name.span(), Spanned::span);
        self.fail(span, refusal.to_string())
    }

    /// A path the file gives, relative to the file's directory.
    fn path(&self, s: &Spanned<String>) -> PathBuf {
        self.dir.join(s.get_ref())
    }

    /// A custom request (`path`, and `request`: its `method`, `headers`, `body` or
    /// `body_file`), or `None` for a built-in workload, whose name must then be the lab's.
    pub(super) fn request(
        &self,
        w: &RawWorkload,
        request: &Request,
    ) -> Checked<Option<CustomRequest>> {
        let name = w.name.get_ref();
        if let Some(urls) = &w.urls {
            return self.url_list(w, urls, request).map(Some);
        }
        if let Some(order) = &w.urls_order {
            return self.fail(order.span(), "urls_order orders a URL list: give urls = \"FILE\"");
        }
        let Some(path) = &w.path else { return self.builtin_request(w) };
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            return self.fail(w.name.span(), "name: a label of printable characters");
        }
        let p = path.get_ref();
        if !p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return self.fail(
                path.span(),
                "path: starts with / and holds no spaces or control characters (encode them \
                 as %20)",
            );
        }
        if let Some(builtin) = builtin_workload(name) {
            if builtin.path != p.as_str() {
                return self.fail(
                    w.name.span(),
                    format!(
                        "{name:?} is the built-in workload at {}: name this request otherwise \
                         (or give path = \"{}\")",
                        builtin.path, builtin.path
                    ),
                );
            }
        }
        let spec = request.spec(Origin::Suite, self.dir).or_else(|e| self.refused(w, e))?;
        Ok(Some(CustomRequest { path: p.clone(), spec, urls: None }))
    }

    /// A workload without `path`: the lab's built-in one of its name (`None`), none of a
    /// custom request's keys given.
    fn builtin_request(&self, w: &RawWorkload) -> Checked<Option<CustomRequest>> {
        let name = w.name.get_ref();
        let custom = [
            ("method", w.method.as_ref().map(Spanned::span)),
            ("body", w.body.as_ref().map(Spanned::span)),
            ("body_file", w.body_file.as_ref().map(Spanned::span)),
            ("headers", w.headers.as_ref().and_then(|h| h.first()).map(Spanned::span)),
        ];
        if let Some((key, span)) = custom.into_iter().find_map(|(k, s)| Some((k, s?))) {
            let path = builtin_workload(name).map_or("/...", |b| b.path);
            return self.fail(
                span,
                format!(
                    "{key} is part of a custom request, which needs its path (path = \
                     \"{path}\"; name is then its label)"
                ),
            );
        }
        if builtin_workload(name).is_none() {
            let known = all_workload_names();
            return self.fail(
                w.name.span(),
                format!(
                    "unknown workload {name:?}; the workloads are: {}, or give a path for a \
                     request of your own",
                    known.join(", ")
                ),
            );
        }
        Ok(None)
    }

    /// A workload whose requests are a URL list (`urls = FILE`, bench --urls's format, with
    /// paths: the suite's stacks each have their own host), read and checked now so that a
    /// wrong line stops the suite before anything starts.
    fn url_list(
        &self,
        w: &RawWorkload,
        urls: &Spanned<String>,
        request: &Request,
    ) -> Checked<CustomRequest> {
        let name = w.name.get_ref();
        let mut custom = [
            ("path", w.path.as_ref().map(Spanned::span)),
            ("body", w.body.as_ref().map(Spanned::span)),
            ("body_file", w.body_file.as_ref().map(Spanned::span)),
        ];
        if let Some((key, span)) = custom.iter_mut().find_map(|(k, s)| Some((*k, s.take()?))) {
            return self.fail(
                span,
                format!("{key} does not go with urls: each line of the list gives its own"),
            );
        }
        if builtin_workload(name).is_some() {
            return self.fail(
                w.name.span(),
                format!("{name:?} is a built-in workload: name the URL list otherwise"),
            );
        }
        let order = match w.urls_order.as_ref().map(|o| (o, o.get_ref().as_str())) {
            None | Some((_, "weighted")) => loadlab_engine::Order::Weighted,
            Some((_, "sequential")) => loadlab_engine::Order::Sequential,
            Some((o, other)) => {
                return self
                    .fail(o.span(), format!("urls_order: weighted or sequential, not {other:?}"))
            }
        };
        let file = self.path(urls);
        // Any host: a line's absolute URL would name one stack's, and each stack has its own.
        let probe = Target::parse("http://localhost/").expect("a valid URL");
        let mix = match loadlab_engine::input::url_list::read(&file, &probe, order) {
            Ok(mix) => mix,
            Err(e) => return self.fail(urls.span(), format!("urls: {e}")),
        };
        // What its lines leave out, checked as a single request's (no body: refused above).
        let spec = request.spec(Origin::Suite, self.dir).or_else(|e| self.refused(w, e))?;
        let path = mix.entries.first().map_or_else(|| "/".to_string(), |e| e.path.clone());
        Ok(CustomRequest { path, spec, urls: Some(std::sync::Arc::new(mix)) })
    }
}
