//! [`parse`]: a suite file's text checked into a [`Suite`], or a [`SuiteError`] that says,
//! with line and column, what is wrong. Everything the lab or the engine would refuse later (an
//! unknown stack, a knob that does not apply, a workload no stack serves) is refused here,
//! before any stack comes up; the user's own servers and requests are checked in `own`.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use loadlab_lab::catalog;
use loadlab_lab::knobs::{CpuList, Knobs, OnOff, Timeout};
use loadlab_load::{Expect, Origin, Request};
use loadlab_stats::slo::Slo;
use toml::Spanned;

use crate::error::SuiteError;
use crate::raw::{RawQuick, RawStack, RawSuite, RawWorkload, Workloads};
use crate::suite::{selected, why_not, Quick, StackSpec, Suite, WorkloadSpec, DEFAULT_REPETITIONS};

mod load;
mod own;
mod shape;
mod visits;

/// A sweep longer than this is surely a typo (a step of 1 instead of 10).
const MAX_POINTS: usize = 1_000;

/// Parses and checks a suite file's text; `file` names it in errors, and the files it names
/// (`body_file`, `cacert`, `pidfile`) are relative to its directory.
pub fn parse(text: &str, file: &str) -> Result<Suite, SuiteError> {
    let raw: RawSuite = toml::from_str(text).map_err(|e| invalid(text, file, e))?;
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    Checker { file, text, dir }.suite(raw)
}

/// TOML's own refusal of `text` (the file `file`), at its position.
fn invalid(text: &str, file: &str, e: toml::de::Error) -> SuiteError {
    SuiteError::Invalid {
        file: file.to_string(),
        at: e.span().map(|s| crate::error::locate(text, s.start)),
        message: e.message().trim_end().to_string(),
    }
}

/// Reads and parses a suite file.
pub fn read(path: &Path) -> Result<Suite, SuiteError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| SuiteError::Read { path: path.to_path_buf(), source })?;
    parse(&text, &path.display().to_string())
}

/// Turns the raw file into a [`Suite`], failing at the first problem with its position.
struct Checker<'a> {
    file: &'a str,
    text: &'a str,
    /// The suite file's directory, which the paths it holds are relative to.
    dir: &'a Path,
}

type Checked<T> = Result<T, SuiteError>;

impl Checker<'_> {
    fn fail<T>(&self, span: Range<usize>, message: impl Into<String>) -> Checked<T> {
        Err(SuiteError::at(self.file, self.text, span, message.into()))
    }

    /// What the file sets of a type `bench`'s flags share (`loadlab_load`'s), read from the
    /// whole text: the type's keys, every other left to [`RawSuite`].
    fn shared<T: serde::de::DeserializeOwned>(&self) -> Checked<T> {
        toml::from_str(self.text).map_err(|e| invalid(self.text, self.file, e))
    }

    fn suite(&self, raw: RawSuite) -> Checked<Suite> {
        let name = raw.name.get_ref();
        if !is_label(name) {
            return self.fail(raw.name.span(), "name: use letters, digits, '-', '_' and '.'");
        }
        if let Some(i) = &raw.interleave {
            if !i.get_ref() {
                // Running all of A and then all of B confounds the stacks with whatever drifts
                // over time (thermal throttling, a cron job, a filling page cache).
                return self.fail(
                    i.span(),
                    "interleave = false is not supported: stacks always alternate (A B A B) \
                     so that drift over time does not masquerade as a difference between them",
                );
            }
        }
        let repetitions = match &raw.repetitions {
            Some(r) => self.at_least_one(r, "repetitions")?,
            None => DEFAULT_REPETITIONS,
        };
        // `--warmup`'s type, read from the top of the file (a table of its own keys: a bad
        // value is refused at its line and column).
        let warmup = self.shared::<loadlab_load::Warmup>()?.warmup;
        // What each workload sends and expects, read now so that a wrong type is refused
        // before any check, as the file's other types are.
        let requests = self.shared::<Workloads<Request>>()?.workloads;
        let expects = self.shared::<Workloads<Expect>>()?.workloads;
        let asked: Vec<_> = requests.into_iter().zip(expects).collect();
        let client_cpus = raw.client_cpus.as_ref().map(|c| self.cpus(c)).transpose()?;
        let stack_cpus = raw.stack_cpus.as_ref().map(|c| self.cpus(c)).transpose()?;

        let suite_net = raw.net.as_ref().map(|n| self.net(n)).transpose()?;
        let stacks = self.stacks(&raw.stacks, stack_cpus.as_ref(), suite_net.as_deref())?;
        let suite_slo = raw.slo.as_ref().map(|s| self.slo(s)).transpose()?;
        let workloads = self.workloads(&raw.workloads, &asked, &stacks, suite_slo.as_ref())?;
        let loads = self.loads(&raw.loads, &raw.workloads)?;
        // A stack or workload with nothing to run is a mistake in the file, not a plan to
        // silently run less than it says.
        for (w, spec) in raw.workloads.get_ref().iter().zip(&workloads) {
            if !loads.iter().any(|l| l.applies_to(&spec.name)) {
                return self.fail(w.name.span(), format!("no load applies to {}", spec.name));
            }
        }
        for (s, spec) in raw.stacks.get_ref().iter().zip(&stacks) {
            // Every workload has a load by now, so serving one is enough to run something.
            if !workloads.iter().any(|w| selected(w, spec) && spec.runs(w)) {
                return self.fail(
                    stack_span(s),
                    format!("none of the suite's workloads runs on {}", spec.label),
                );
            }
        }
        let quick = match &raw.quick {
            Some(q) => self.quick(q)?,
            None => Quick::default(),
        };
        let profile = match &raw.profile {
            Some(p) => {
                p.get_ref().parse().or_else(|e| self.fail(p.span(), format!("profile: {e}")))?
            }
            None => Default::default(),
        };
        Ok(Suite {
            name: name.clone(),
            description: raw.description.trim().to_string(),
            origin: self.file.to_string(),
            stacks,
            workloads,
            loads,
            repetitions,
            warmup,
            client_cpus,
            quick,
            profile,
        })
    }

    fn stacks(
        &self,
        raw: &Spanned<Vec<Spanned<RawStack>>>,
        stack_cpus: Option<&CpuList>,
        suite_net: Option<&str>,
    ) -> Checked<Vec<StackSpec>> {
        if raw.get_ref().is_empty() {
            return self.fail(raw.span(), "a suite needs at least one stack");
        }
        let mut out: Vec<StackSpec> = Vec::new();
        for entry in raw.get_ref() {
            let s = entry.get_ref();
            let spec =
                match (&s.name, &s.url) {
                    (Some(name), None) => self.stack(s, name, stack_cpus, suite_net)?,
                    (None, Some(url)) => self.external(s, url)?,
                    (Some(_), Some(url)) => {
                        return self.fail(
                            url.span(),
                            "give name (a built-in stack) or url (a server of yours), not both",
                        )
                    }
                    (None, None) => return self.fail(
                        entry.span(),
                        "a stack needs name = \"...\" (a built-in stack: `loadlab stack list`) \
                         or url = \"http://...\" (a server of yours)",
                    ),
                };
            if out.iter().any(|o| o.label == spec.label) {
                let span = s.label.as_ref().map_or(stack_span(entry), Spanned::span);
                let hint = if s.label.is_some() { "" } else { "; give each a distinct label" };
                return self.fail(span, format!("stack {:?} appears twice{hint}", spec.label));
            }
            out.push(spec);
        }
        Ok(out)
    }

    fn stack(
        &self,
        s: &RawStack,
        name: &Spanned<String>,
        stack_cpus: Option<&CpuList>,
        suite_net: Option<&str>,
    ) -> Checked<StackSpec> {
        let Ok(stack) = catalog::stack(name.get_ref()) else {
            let known: Vec<&str> = catalog::STACKS.iter().map(|s| s.name).collect();
            return self.fail(
                name.span(),
                format!("unknown stack {:?}; the stacks are: {}", name.get_ref(), known.join(", ")),
            );
        };
        // The keys of an external target, said as such rather than as unknown.
        if let Some((key, span)) =
            s.external_keys().into_iter().find_map(|(k, span)| Some((k, span?)))
        {
            return self.fail(
                span,
                format!(
                    "{key} applies to an external target (url = \"...\"), not to the lab's {}",
                    stack.name
                ),
            );
        }
        let label = self.label(s)?.unwrap_or_else(|| stack.name.to_string());
        let knobs = self.knobs(s, stack_cpus, suite_net)?;
        // The lab's rules, with the file's key at the knob's own position (the stack's name
        // for a knob the file did not write, as stack_cpus).
        if let Some(p) = stack.knob_problem(&knobs) {
            let span = s.knob_span(p.key).unwrap_or(name.span());
            return self.fail(span, format!("{}: {}", p.key, p.reason));
        }
        let http3 = self.http3(s, stack, &knobs)?;
        let host = s.host.as_ref().map(|h| self.host(h)).transpose()?;
        Ok(StackSpec::lab(label, stack, knobs, http3, host))
    }

    /// `http3 = true`: the client speaks HTTP/3, which the stack must serve (the lab's rule,
    /// as `bench --http3` finds it out from the server), and which is one protocol of two with
    /// `http2`.
    fn http3(&self, s: &RawStack, stack: &catalog::Stack, knobs: &Knobs) -> Checked<bool> {
        let Some(h3) = s.http3.as_ref().filter(|h| *h.get_ref()) else { return Ok(false) };
        if knobs.http2.is_on() {
            return self.fail(
                h3.span(),
                "http3: give http2 = true or http3 = true, not both: the client speaks one \
                 protocol to a stack",
            );
        }
        match stack.http3_problem(knobs) {
            Some(reason) => self.fail(h3.span(), format!("http3: {reason}")),
            None => Ok(true),
        }
    }

    /// A lab stack's knobs as the file sets them, over the lab's defaults and the suite's
    /// `stack_cpus` and `net`.
    fn knobs(
        &self,
        s: &RawStack,
        stack_cpus: Option<&CpuList>,
        suite_net: Option<&str>,
    ) -> Checked<Knobs> {
        let on_off = |b: &Spanned<bool>| if *b.get_ref() { OnOff::On } else { OnOff::Off };
        let count = |n: &Option<Spanned<u32>>, key| {
            n.as_ref().map(|n| self.at_least_one(n, key)).transpose()
        };
        let keepalive_timeout = match &s.keepalive_timeout {
            Some(t) => Some(
                t.get_ref()
                    .parse::<Timeout>()
                    .or_else(|e| self.fail(t.span(), format!("keepalive_timeout: {e}")))?,
            ),
            None => None,
        };
        let cpus = match &s.cpus {
            Some(c) => Some(self.cpus(c)?),
            None => stack_cpus.cloned(),
        };
        Ok(Knobs {
            port: None,
            listen: s.listen.as_ref().map(|l| self.listen(l)).transpose()?,
            keepalive: s.keepalive.as_ref().map_or(OnOff::On, on_off),
            keepalive_timeout,
            keepalive_requests: count(&s.keepalive_requests, "keepalive_requests")?,
            gzip: s.gzip.as_ref().map_or(OnOff::Off, on_off),
            opcache: s.opcache.as_ref().map(on_off),
            db: s.db.as_ref().map(on_off),
            workers: count(&s.workers, "workers")?,
            php_workers: count(&s.php_workers, "php_workers")?,
            access_log: s.access_log.as_ref().map_or(OnOff::Off, on_off),
            cpus,
            net: match &s.net {
                Some(n) => Some(self.net(n)?),
                None => suite_net.map(str::to_string),
            }
            .filter(|n| n != "loopback"),
            tls: s.tls.as_ref().map_or(OnOff::Off, on_off),
            http2: s.http2.as_ref().map_or(OnOff::Off, on_off),
            config: s.config.as_ref().map(|c| self.own_config(c)).transpose()?,
            docroot: s.docroot.as_ref().map(|d| self.own_docroot(d)).transpose()?,
            // A profiled run sets it (see the runner's suite loading), not the suite.
            excimer: OnOff::Off,
        })
    }

    /// `host = "ssh://..."`: the lab host a stack runs on, as `loadlab_remote::Host` writes it.
    fn host(&self, h: &Spanned<String>) -> Checked<String> {
        h.get_ref().parse::<loadlab_remote::Host>().map(|h| h.to_string()).or_else(|e| {
            let why = match e {
                loadlab_remote::Error::BadHost(why) => why,
                e => e.to_string(),
            };
            self.fail(h.span(), format!("host: {why}"))
        })
    }

    /// `label = "..."`, checked.
    fn label(&self, s: &RawStack) -> Checked<Option<String>> {
        match &s.label {
            Some(l) if !is_label(l.get_ref()) => {
                self.fail(l.span(), "label: use letters, digits, '-', '_' and '.'")
            }
            Some(l) => Ok(Some(l.get_ref().clone())),
            None => Ok(None),
        }
    }

    /// The workloads, each with what `asked` holds of it (the same entry read as `bench`'s
    /// request flags).
    fn workloads(
        &self,
        raw: &Spanned<Vec<RawWorkload>>,
        asked: &[(Request, Expect)],
        stacks: &[StackSpec],
        suite_slo: Option<&Slo>,
    ) -> Checked<Vec<WorkloadSpec>> {
        if raw.get_ref().is_empty() {
            return self.fail(raw.span(), "a suite needs at least one workload");
        }
        let mut out: Vec<WorkloadSpec> = Vec::new();
        for (w, (request, expect)) in raw.get_ref().iter().zip(asked) {
            let name = w.name.get_ref();
            let (visits, given) = self.visits(w)?;
            let request = match (&visits, &w.path) {
                (Some(_), None) => Some(self.visit_base()),
                _ => self.request(w, request)?,
            };
            if out.iter().any(|o| &o.name == name) {
                return self.fail(w.name.span(), format!("workload {name:?} appears twice"));
            }
            let slo = match &w.slo {
                Some(s) => Some(self.slo(s)?),
                None => suite_slo.cloned(),
            };
            let mut spec = WorkloadSpec {
                name: name.clone(),
                request,
                stacks: None,
                expect: expect.validation(Origin::Suite).or_else(|e| self.refused(w, e))?,
                slo,
                view: w.view.as_ref().is_some_and(|v| *v.get_ref()),
                view_hosts: w.view_hosts.as_ref().map(|h| h.get_ref().clone()).unwrap_or_default(),
                visits,
                given,
            };
            if let (false, Some(hosts)) = (spec.view, &w.view_hosts) {
                return self
                    .fail(hosts.span(), format!("{name}: view_hosts goes with view = true"));
            }
            if let (true, Some(urls)) = (spec.view, &w.urls) {
                return self.fail(urls.span(), format!("{name}: a view fetches its page's resources, not a URL list: view = true or urls, not both"));
            }
            spec.stacks = self.filter(w, &spec, stacks)?;
            out.push(spec);
        }
        Ok(out)
    }

    /// A workload's `stacks = [...]`, each label known and able to run it; without one, some
    /// stack of the suite must run it.
    fn filter(
        &self,
        w: &RawWorkload,
        spec: &WorkloadSpec,
        stacks: &[StackSpec],
    ) -> Checked<Option<Vec<String>>> {
        let name = &spec.name;
        match &w.stacks {
            Some(labels) if labels.is_empty() => {
                self.fail(w.name.span(), format!("{name}: stacks = [] runs it nowhere"))
            }
            Some(labels) => {
                for l in labels {
                    let Some(stack) = stacks.iter().find(|s| &s.label == l.get_ref()) else {
                        return self.fail(
                            l.span(),
                            format!("no stack labelled {:?} in this suite", l.get_ref()),
                        );
                    };
                    if !stack.runs(spec) {
                        return self.fail(
                            l.span(),
                            format!(
                                "{name} cannot run on {}: {}",
                                l.get_ref(),
                                why_not(stack, name)
                            ),
                        );
                    }
                }
                Ok(Some(labels.iter().map(|l| l.get_ref().clone()).collect()))
            }
            None => {
                if !stacks.iter().any(|s| s.runs(spec)) {
                    let why: Vec<String> = stacks.iter().map(|s| why_not(s, name)).collect();
                    return self.fail(
                        w.name.span(),
                        format!("no stack of the suite serves {name} ({})", why.join("; ")),
                    );
                }
                Ok(None)
            }
        }
    }

    fn slo(&self, s: &Spanned<String>) -> Checked<Slo> {
        match s.get_ref().parse::<Slo>() {
            Ok(slo) => Ok(slo),
            Err(e) => self.fail(s.span(), format!("slo: {e}")),
        }
    }

    fn quick(&self, q: &RawQuick) -> Checked<Quick> {
        let mut quick = Quick::default();
        if let Some(f) = &q.factor {
            let f_val = *f.get_ref();
            if !(f_val > 0.0 && f_val <= 1.0) {
                return self.fail(f.span(), "quick.factor: a number above 0 and at most 1");
            }
            quick.factor = f_val;
        }
        if let Some(n) = &q.min_requests {
            quick.min_requests = *n.get_ref();
        }
        if let Some(n) = &q.min_conns {
            quick.min_conns = *n.get_ref();
        }
        if let Some(d) = &q.min_duration {
            quick.min_duration = self.duration(d, true)?;
        }
        if let Some(r) = &q.repetitions {
            quick.repetitions = Some(self.at_least_one(r, "quick.repetitions")?);
        }
        Ok(quick)
    }

    fn at_least_one(&self, n: &Spanned<u32>, key: &str) -> Checked<u32> {
        match *n.get_ref() {
            0 => self.fail(n.span(), format!("{key} must be at least 1")),
            v => Ok(v),
        }
    }

    /// `10s`, `500ms`, `1m 30s`: what `loadlab bench -d` takes, read by the same parser.
    fn duration(&self, s: &Spanned<String>, zero_ok: bool) -> Checked<Duration> {
        match loadlab_load::parse_duration(s.get_ref()) {
            Ok(d) if d.is_zero() && !zero_ok => {
                self.fail(s.span(), "the duration must be above zero")
            }
            Ok(d) => Ok(d),
            Err(e) => self.fail(s.span(), e),
        }
    }

    /// A network profile (`net = "lan-100mbit"`), checked as `stack up --net` checks it.
    fn net(&self, s: &Spanned<String>) -> Checked<String> {
        match s.get_ref().parse::<loadlab_lab::net::Profile>() {
            Ok(_) => Ok(s.get_ref().clone()),
            Err(e) => self.fail(s.span(), format!("net: {e}")),
        }
    }

    /// `listen = "ADDR"`: an IP address, `0.0.0.0` or `::` (`[::]` as URLs write it); whether
    /// it is the stack's host's is checked there when the stack starts.
    fn listen(&self, s: &Spanned<String>) -> Checked<std::net::IpAddr> {
        let text = s.get_ref().trim();
        let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(text);
        bare.parse().or_else(|_| {
            self.fail(
                s.span(),
                format!(
                    "listen: {text:?} is not an IP address; give one of the stack's host, \
                     0.0.0.0 or ::"
                ),
            )
        })
    }

    fn cpus(&self, s: &Spanned<String>) -> Checked<CpuList> {
        s.get_ref().parse::<CpuList>().or_else(|e| self.fail(s.span(), e))
    }
}

/// Where a stack entry is best pointed at: its name or url, else its `[[stacks]]` header.
fn stack_span(entry: &Spanned<RawStack>) -> Range<usize> {
    let s = entry.get_ref();
    s.name.as_ref().or(s.url.as_ref()).map_or(entry.span(), Spanned::span)
}

/// Names and labels mark stored runs and cells, and may end up in file names: keep them to
/// what is safe in both.
fn is_label(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Parses `LOW..HIGH:STEP` (`100..580:20`) into the rates LOW, LOW+STEP, ... up to HIGH.
pub fn parse_sweep(s: &str) -> Result<Vec<f64>, String> {
    let bad = || format!("{s:?}: expected LOW..HIGH:STEP, as \"100..580:20\"");
    let (range, step) = s.split_once(':').ok_or_else(bad)?;
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    let num = |x: &str| x.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
    let (Some(lo), Some(hi), Some(step)) = (num(lo), num(hi), num(step)) else {
        return Err(bad());
    };
    if lo > hi {
        return Err(format!("{s:?}: LOW is above HIGH"));
    }
    // The small tolerance lets fractional steps (0.1) reach HIGH despite binary rounding.
    let steps = ((hi - lo) / step + 1e-9).floor();
    if steps >= MAX_POINTS as f64 {
        return Err(format!("{s:?}: more than {MAX_POINTS} rates"));
    }
    Ok((0..=steps as usize).map(|i| lo + step * i as f64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_include_both_ends() {
        assert_eq!(parse_sweep("10..200:10").unwrap().len(), 20);
        assert_eq!(parse_sweep("100..580:20").unwrap().last(), Some(&580.0));
        assert_eq!(parse_sweep("50..125:25").unwrap(), vec![50.0, 75.0, 100.0, 125.0]);
        assert_eq!(parse_sweep("0.1..0.3:0.1").unwrap().len(), 3);
        assert_eq!(parse_sweep("10..15:10").unwrap(), vec![10.0]);
        for bad in ["", "10..20", "20..10:1", "0..10:1", "a..b:c", "1..100000:1"] {
            assert!(parse_sweep(bad).is_err(), "{bad}");
        }
    }
}
