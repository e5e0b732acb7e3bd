//! The load's identity, option by option: what must be the same on every agent for their
//! parts to make one test. Output options (`--format`, `--hdr-log`, `-q`) and what belongs to
//! a host (threads, pinning, source addresses) are not part of it.
//!
//! Each item is (the options it comes from, its value as the engine was given it); a long
//! value (a URL list, a replayed log, a body) is sent as its SHA-256, so that the rendezvous
//! carries no request content.

use std::time::Duration;

use loadlab_engine::{Arrival, BenchConfig, Pacing, Stop};
use sha2::{Digest, Sha256};

/// Values longer than this are sent as their digest.
const LONG: usize = 120;

/// The load of `config` (the whole test's, before [`BenchConfig::take_share`]).
pub fn describe(config: &BenchConfig) -> Vec<(String, String)> {
    let mut items: Vec<(&str, String)> = vec![("the URL", config.target.url.clone())];
    items.extend(pacing(&config.pacing));
    items.extend([
        ("--connections", config.connections.to_string()),
        stop(&config.stop),
        ("the request (--method, --header, --body)", dbg(&config.request)),
        // Before the traffic, which a visit file makes (its requests): a differing file is
        // named as such.
        ("the visits (--visits, --wsesslog, --view)", visits(config)),
        ("the traffic (--urls, --replay)", dbg(&config.traffic)),
        ("the protocol (--http2, --streams)", dbg(&config.protocol)),
        ("--no-keepalive", (!config.keepalive).to_string()),
        ("--timeout", seconds(config.timeout)),
        ("--connect-timeout", seconds(config.connect_timeout)),
        ("--warmup", seconds(config.warmup)),
        ("--seed", config.seed.to_string()),
        ("the TLS options (--cacert, --insecure, --tls-*)", dbg(&config.tls)),
    ]);
    items.into_iter().map(|(k, v)| (k.to_string(), shorten(v))).collect()
}

/// The load model flag by flag, each value as the command line spells it, so that a mismatch
/// names the one flag that differs.
fn pacing(pacing: &Pacing) -> Vec<(&'static str, String)> {
    let arrival = |a: &Arrival| format!("{a:?}").to_lowercase();
    match pacing {
        Pacing::Closed => vec![("the load model (--rate, --conn-rate)", "closed loop".into())],
        Pacing::Open { rate, arrival: a, max_connections } => vec![
            ("the load model (--rate, --conn-rate)", "open loop".into()),
            ("--rate", rate.to_string()),
            ("--arrival", arrival(a)),
            ("--max-connections", max_connections.to_string()),
        ],
        Pacing::Sessions { rate, arrival: a, calls, max_connections } => vec![
            ("the load model (--rate, --conn-rate)", "sessions".into()),
            ("--conn-rate", rate.to_string()),
            ("--arrival", arrival(a)),
            ("--calls-per-conn", calls.to_string()),
            ("--max-connections", max_connections.to_string()),
        ],
    }
}

/// The stop condition as its flag and value: `-n 1000` or `-d 10s`.
fn stop(stop: &Stop) -> (&'static str, String) {
    let value = match stop {
        Stop::Count(n) => format!("-n {n}"),
        Stop::Duration(d) => format!("-d {}", seconds(*d)),
    };
    ("the stop condition (-n, -d, --conns)", value)
}

/// `1.5s`, as the duration flags take it.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// The first item in which `theirs` differs from `ours`: (option, ours, theirs).
pub fn differs(
    ours: &[(String, String)],
    theirs: &[(String, String)],
) -> Option<(String, String, String)> {
    for (name, value) in ours {
        let other = theirs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        if other != Some(value.as_str()) {
            let other = other.unwrap_or("(absent: another loadlab version?)").to_string();
            return Some((name.clone(), value.clone(), other));
        }
    }
    theirs
        .iter()
        .find(|(n, _)| !ours.iter().any(|(o, _)| o == n))
        .map(|(n, v)| (n.clone(), "(absent: another loadlab version?)".into(), v.clone()))
}

/// The visits' identity ([`loadlab_engine::visits::Plan::identity`]); empty without visits.
fn visits(config: &BenchConfig) -> String {
    config.visits.as_ref().map(|p| p.identity()).unwrap_or_default()
}

fn dbg<T: std::fmt::Debug>(v: &T) -> String {
    format!("{v:?}")
}

fn shorten(v: String) -> String {
    if v.len() <= LONG {
        return v;
    }
    let hash = Sha256::digest(v.as_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_engine::Target;

    fn config() -> BenchConfig {
        BenchConfig::new(Target::parse("http://127.0.0.1:9/").unwrap())
    }

    #[test]
    fn the_same_load_does_not_differ_and_a_rate_does_naming_it() {
        assert_eq!(differs(&describe(&config()), &describe(&config())), None);
        let mut other = config();
        other.pacing = Pacing::Open {
            rate: 2000.0,
            arrival: loadlab_engine::Arrival::Fixed,
            max_connections: 5,
        };
        let (option, ours, theirs) = differs(&describe(&config()), &describe(&other)).unwrap();
        assert!(option.contains("--rate"), "{option}");
        assert_eq!((ours.as_str(), theirs.as_str()), ("closed loop", "open loop"));
    }

    /// A mismatch names the one flag and both values as the command line spells them, never
    /// the engine's Rust value (`Open { rate: 200.0, arrival: Fixed, .. }`).
    #[test]
    fn a_mismatch_names_the_flag_and_both_values_as_typed() {
        let open = |rate: f64, arrival| {
            let mut c = config();
            c.pacing = Pacing::Open { rate, arrival, max_connections: 5 };
            c
        };
        let said = |a: &BenchConfig, b: &BenchConfig| differs(&describe(a), &describe(b)).unwrap();
        let rate = said(&open(200.0, Arrival::Fixed), &open(300.0, Arrival::Fixed));
        assert_eq!(rate, ("--rate".into(), "200".into(), "300".into()));
        let arrival = said(&open(200.0, Arrival::Fixed), &open(200.0, Arrival::Poisson));
        assert_eq!(arrival, ("--arrival".into(), "fixed".into(), "poisson".into()));
        let mut timed = config();
        timed.stop = Stop::Duration(Duration::from_millis(2500));
        let (_, ours, theirs) = said(&config(), &timed);
        assert_eq!((ours.as_str(), theirs.as_str()), ("-d 10s", "-d 2.5s"));
        timed.stop = Stop::Count(100);
        assert_eq!(said(&config(), &timed).2, "-n 100");
    }

    #[test]
    fn host_options_are_not_the_load() {
        let mut other = config();
        other.threads = 7;
        other.hdr_log = true;
        assert_eq!(differs(&describe(&config()), &describe(&other)), None);
    }
}
