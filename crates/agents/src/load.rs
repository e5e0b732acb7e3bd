//! The load's identity, option by option: what must be the same on every agent for their
//! parts to make one test. Output options (`--format`, `--hdr-log`, `-q`) and what belongs to
//! a host (threads, pinning, source addresses) are not part of it.
//!
//! Each item is (the options it comes from, its value as the engine was given it); a long
//! value (a URL list, a replayed log, a body) is sent as its SHA-256, so that the rendezvous
//! carries no request content.

use loadlab_engine::BenchConfig;
use sha2::{Digest, Sha256};

/// Values longer than this are sent as their digest.
const LONG: usize = 120;

/// The load of `config` (the whole test's, before [`BenchConfig::take_share`]).
pub fn describe(config: &BenchConfig) -> Vec<(String, String)> {
    let items: [(&str, String); 14] = [
        ("the URL", config.target.url.clone()),
        ("the load model (--rate, --conn-rate, --arrival, --max-connections)", dbg(&config.pacing)),
        ("--connections", config.connections.to_string()),
        ("the stop condition (-n, -d, --conns)", dbg(&config.stop)),
        ("the request (--method, --header, --body)", dbg(&config.request)),
        // Before the traffic, which a visit file makes (its requests): a differing file is
        // named as such.
        ("the visits (--visits, --wsesslog, --view)", visits(config)),
        ("the traffic (--urls, --replay)", dbg(&config.traffic)),
        ("the protocol (--http2, --streams)", dbg(&config.protocol)),
        ("--no-keepalive", config.keepalive.to_string()),
        ("--timeout", dbg(&config.timeout)),
        ("--connect-timeout", dbg(&config.connect_timeout)),
        ("--warmup", dbg(&config.warmup)),
        ("--seed", config.seed.to_string()),
        ("the TLS options (--cacert, --insecure, --tls-*)", dbg(&config.tls)),
    ];
    items.into_iter().map(|(k, v)| (k.to_string(), shorten(v))).collect()
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
    use loadlab_engine::{Pacing, Target};

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
        let (option, _, theirs) = differs(&describe(&config()), &describe(&other)).unwrap();
        assert!(option.contains("--rate"), "{option}");
        assert!(theirs.contains("2000"), "{theirs}");
    }

    #[test]
    fn host_options_are_not_the_load() {
        let mut other = config();
        other.threads = 7;
        other.hdr_log = true;
        assert_eq!(differs(&describe(&config()), &describe(&other)), None);
    }
}
