//! A suite's `[[loads]]`: each entry's model, the keys that apply to it, its points (or its
//! shape), its stop, and the settings `bench` takes as flags ([`loadlab_load`]'s, with their
//! defaults), each refused at the key that is wrong.

use loadlab_engine::{Level, Stop};
use loadlab_load::{defaults, Connection, Protocol, Schedule};
use serde::de::IgnoredAny;
use toml::Spanned;

use super::{parse_sweep, Checked, Checker};
use crate::raw::{Loads, ModelName, RawLoad, RawWorkload};
use crate::suite::{Load, Points};

/// The keys that are one model's and not another's: each with where it is written.
fn model_keys(l: &RawLoad) -> [(&'static str, Option<std::ops::Range<usize>>); 9] {
    [
        ("concurrency", l.concurrency.as_ref().map(Spanned::span)),
        ("rates", l.rates.as_ref().map(Spanned::span)),
        ("sweep", l.sweep.as_ref().map(Spanned::span)),
        ("stages", l.stages.as_ref().map(Spanned::span)),
        ("calls_per_conn", l.calls_per_conn.as_ref().map(Spanned::span)),
        ("requests", l.requests.as_ref().map(Spanned::span)),
        ("conns", l.conns.as_ref().map(Spanned::span)),
        ("arrival", l.arrival.as_ref().map(Spanned::span)),
        ("max_connections", l.max_connections.as_ref().map(Spanned::span)),
    ]
}

/// The keys of [`model_keys`] that `model` takes.
fn allowed(model: ModelName) -> &'static [&'static str] {
    match model {
        ModelName::Closed => &["concurrency", "stages", "requests"],
        ModelName::Open => &["rates", "sweep", "stages", "requests", "arrival", "max_connections"],
        ModelName::Sessions => {
            &["rates", "sweep", "stages", "calls_per_conn", "conns", "arrival", "max_connections"]
        }
    }
}

/// The model with its article, for messages: "an open load", "a closed load".
fn a_model(model: ModelName) -> &'static str {
    match model {
        ModelName::Closed => "a closed",
        ModelName::Open => "an open",
        ModelName::Sessions => "a sessions",
    }
}

impl Checker<'_> {
    pub(super) fn loads(
        &self,
        raw: &Spanned<Vec<RawLoad>>,
        workloads: &Spanned<Vec<RawWorkload>>,
    ) -> Checked<Vec<Load>> {
        if raw.get_ref().is_empty() {
            return self.fail(raw.span(), "a suite needs at least one load");
        }
        let names: Vec<&str> =
            workloads.get_ref().iter().map(|w| w.name.get_ref().as_str()).collect();
        // The settings that are bench's flags, read into their own types (serde's defaults
        // being the flags'), then each entry checked with its keys' positions.
        let connections = self.shared::<Loads<Connection>>()?.loads;
        let protocols = self.shared::<Loads<Protocol>>()?.loads;
        let schedules = self.shared::<Loads<Schedule>>()?.loads;
        let flags = connections.into_iter().zip(protocols).zip(schedules);
        raw.get_ref()
            .iter()
            .zip(flags)
            .map(|(l, ((connection, protocol), schedule))| {
                self.load(l, &names, (connection, protocol, schedule))
            })
            .collect()
    }

    fn load(
        &self,
        l: &RawLoad,
        workload_names: &[&str],
        (connection, protocol, schedule): (Connection, Protocol, Schedule),
    ) -> Checked<Load> {
        let model = *l.model.get_ref();
        let allowed = allowed(model);
        for (key, span) in model_keys(l) {
            if let (Some(span), false) = (span, allowed.contains(&key)) {
                return self.fail(
                    span,
                    format!(
                        "{key} does not apply to {} load (it takes {})",
                        a_model(model),
                        allowed.join(", ")
                    ),
                );
            }
        }
        let (points, shape) = self.points(l, model)?;
        let count_key = if model == ModelName::Sessions { "conns" } else { "requests" };
        let count = if model == ModelName::Sessions { &l.conns } else { &l.requests };
        let stop = match self.shaped_stop(l, shape.as_ref(), count_key, count.as_ref())? {
            Some(stop) => stop,
            None => self.stop(l, a_model(model), count_key, count.as_ref())?,
        };
        self.keepalive(l, model, &connection)?;
        let accept_encoding = self.accept_encoding(l)?;
        if let (Some(t), true) = (&l.timeout, connection.timeout.is_zero()) {
            return self.fail(t.span(), "the duration must be above zero");
        }
        self.positive(&l.max_connections, schedule.max_connections, "max_connections")?;
        let workloads = self.load_workloads(l, workload_names)?;
        self.positive(&l.streams, protocol.streams, "streams")?;
        Ok(Load { points, stop, connection, accept_encoding, schedule, protocol, workloads, shape })
    }

    /// The load's points for its model, and its shape when it changes over time.
    fn points(&self, l: &RawLoad, model: ModelName) -> Checked<(Points, Option<Level>)> {
        Ok(match model {
            ModelName::Closed => {
                let (concurrency, shape) = self.concurrency_points(l)?;
                (Points::Closed { concurrency }, shape)
            }
            ModelName::Open => {
                let (rates, shape) = self.rate_points(l)?;
                (Points::Open { rates }, shape)
            }
            ModelName::Sessions => {
                let calls = match &l.calls_per_conn {
                    Some(c) => self.at_least_one(c, "calls_per_conn")?,
                    None => defaults::CALLS_PER_CONN,
                };
                let (rates, shape) = self.rate_points(l)?;
                (Points::Sessions { rates, calls }, shape)
            }
        })
    }

    /// A count the file gives at `key`, at least 1.
    fn positive(&self, key: &Option<Spanned<IgnoredAny>>, n: usize, name: &str) -> Checked<()> {
        match key {
            Some(key) if n == 0 => self.fail(key.span(), format!("{name} must be at least 1")),
            _ => Ok(()),
        }
    }

    /// `keepalive = false`: a connection per request, which sessions cannot have.
    fn keepalive(&self, l: &RawLoad, model: ModelName, connection: &Connection) -> Checked<()> {
        if let (ModelName::Sessions, Some(k)) = (model, &l.keepalive) {
            if !connection.keepalive {
                return self.fail(
                    k.span(),
                    "keepalive = false does not apply to sessions: a session's calls share its \
                     connection (use calls_per_conn = 1 for a connection per request)",
                );
            }
        }
        Ok(())
    }

    /// `accept_encoding = "gzip"`: a header value, trimmed.
    fn accept_encoding(&self, l: &RawLoad) -> Checked<Option<String>> {
        let Some(a) = &l.accept_encoding else { return Ok(None) };
        let v = a.get_ref();
        if v.trim().is_empty() || v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return self.fail(a.span(), "accept_encoding: give a header value, as \"gzip\"");
        }
        Ok(Some(v.trim().to_string()))
    }

    /// The load's `workloads = [...]`, each one of the suite's; `None`: all of them.
    fn load_workloads(&self, l: &RawLoad, workload_names: &[&str]) -> Checked<Option<Vec<String>>> {
        match &l.workloads {
            Some(list) if list.is_empty() => {
                self.fail(l.model.span(), "workloads = [] applies this load to nothing")
            }
            Some(list) => {
                for w in list {
                    if !workload_names.contains(&w.get_ref().as_str()) {
                        return self.fail(
                            w.span(),
                            format!("{:?} is not one of this suite's workloads", w.get_ref()),
                        );
                    }
                }
                Ok(Some(list.iter().map(|w| w.get_ref().clone()).collect()))
            }
            None => Ok(None),
        }
    }

    /// A fixed load's stop: `requests` (`conns` for sessions) or `duration`, exactly one.
    fn stop(
        &self,
        l: &RawLoad,
        a_model: &str,
        count_key: &str,
        count: Option<&Spanned<u64>>,
    ) -> Checked<Stop> {
        match (count, &l.duration) {
            (Some(_), Some(d)) => {
                self.fail(d.span(), format!("give {count_key} or duration, not both"))
            }
            (Some(n), None) if *n.get_ref() == 0 => {
                self.fail(n.span(), format!("{count_key} must be at least 1"))
            }
            (Some(n), None) => Ok(Stop::Count(*n.get_ref())),
            (None, Some(d)) => Ok(Stop::Duration(self.duration(d, false)?)),
            (None, None) => self.fail(
                l.model.span(),
                format!("{a_model} load needs {count_key} = N or duration = \"10s\""),
            ),
        }
    }

    /// `sweep = "LOW..HIGH:STEP"`, for a load that gives neither `rates` nor `stages`.
    pub(super) fn rates(&self, l: &RawLoad) -> Checked<Vec<f64>> {
        match &l.sweep {
            Some(s) => match parse_sweep(s.get_ref()) {
                Ok(rates) => Ok(rates),
                Err(e) => self.fail(s.span(), format!("sweep: {e}")),
            },
            None => self.fail(
                l.model.span(),
                "this load needs rates = [...], sweep = \"LOW..HIGH:STEP\" or stages = \"...\"",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadlab_load::{Arrival, Connection, Protocol, Schedule};

    const SUITE: &str = r#"name = "t"
[[stacks]]
name = "nginx"
[[workloads]]
name = "hello.txt"
[[loads]]
model = "open"
rates = [100]
requests = 10
keepalive = false
timeout = "5s"
arrival = "poisson"
max_connections = 7
streams = 3
tls_resume = false
[[loads]]
model = "closed"
concurrency = [1]
requests = 10
"#;

    #[test]
    fn a_loads_keys_deserialize_into_the_flags_types_and_a_key_left_out_is_the_flags_default() {
        let suite = crate::parse(SUITE, "t.toml").unwrap();
        let (set, left_out) = (&suite.loads[0], &suite.loads[1]);
        let connection =
            Connection { keepalive: false, timeout: Duration::from_secs(5), ..Default::default() };
        assert_eq!(set.connection, connection);
        assert_eq!(set.connection.connect_timeout, Duration::from_secs(10), "--connect-timeout's");
        assert_eq!(set.protocol, Protocol { streams: 3, tls_resume: false, ..Default::default() });
        let schedule =
            Schedule { arrival: Arrival::Poisson, max_connections: 7, ..Default::default() };
        assert_eq!(set.schedule, schedule);
        assert_eq!(left_out.connection, Connection::default());
        assert_eq!(left_out.protocol, Protocol::default());
        assert_eq!(left_out.schedule, Schedule::default());
        assert_eq!(left_out.schedule.max_connections, 10_000);
    }
}
