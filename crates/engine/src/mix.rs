//! Request mixes: the requests of a run that sends more than one (a URL list, `--urls`; a
//! replayed log, `--replay`), each encoded once into a [`Table`](crate::table::Table) before
//! the run, and how a worker picks the next one (`Picker`: by weight from a seeded generator,
//! or in order).
//!
//! The hot path only indexes: a pick is a draw from a weighted index (a binary search over the
//! cumulative weights) or a step along the list, and the bytes it sends were encoded before the
//! first connection opened, HTTP/1.1 and HTTP/2 alike.

use std::sync::Arc;

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::replay::Replay;
use crate::{EngineError, RequestSpec};

/// The most entries a URL list may hold. Each has its own figures in every worker, a latency
/// histogram of ~26 KB among them (two significant digits up to an hour), so a thousand
/// entries cost ~26 MB a worker; a longer list of requests is a log to replay (`--replay`).
pub const MAX_ENTRIES: usize = 1_000;

/// The largest weight of one entry: weights are relative, and a million to one is already a
/// request that almost never goes out.
pub const MAX_WEIGHT: u32 = 1_000_000;

/// One request of a mix: where it goes and what differs from the run's base request (the
/// method, headers and body the command line gave).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The method, when not the base request's.
    pub method: Option<String>,
    /// Path and query, as the request line carries them (origin-form, RFC 9112 section 3.2.1).
    pub path: String,
    /// Header fields of this entry; one named like a base field replaces it.
    pub headers: Vec<(String, String)>,
    /// The body, when not the base request's.
    pub body: Option<Vec<u8>>,
    /// How often it is picked, relative to the others (URL lists; 1 in a replay).
    pub weight: u32,
    /// The line of the file it came from (1-based), for messages and reports.
    pub line: usize,
}

impl Entry {
    /// A request for `path` with the base's method, headers and body.
    pub fn new(path: impl Into<String>, line: usize) -> Entry {
        Entry { method: None, path: path.into(), headers: Vec::new(), body: None, weight: 1, line }
    }

    /// The whole request: `base`, with this entry's method, headers and body.
    pub fn spec(&self, base: &RequestSpec) -> RequestSpec {
        let mut headers: Vec<(String, String)> = base
            .headers
            .iter()
            .filter(|(n, _)| !self.headers.iter().any(|(m, _)| m.eq_ignore_ascii_case(n)))
            .cloned()
            .collect();
        headers.extend(self.headers.iter().cloned());
        RequestSpec {
            method: self.method.clone().unwrap_or_else(|| base.method.clone()),
            headers,
            body: self.body.clone().unwrap_or_else(|| base.body.clone()),
        }
    }

    /// The method this entry sends, given the base request's.
    pub fn method<'a>(&'a self, base: &'a RequestSpec) -> &'a str {
        self.method.as_deref().unwrap_or(&base.method)
    }
}

/// How a URL list's entries are picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// At random in proportion to their weights, from the run's seed.
    Weighted,
    /// In the file's order, each `weight` times in a row, then from the top again.
    Sequential,
}

/// A URL list (`--urls FILE`): its entries in the file's order, and how they are picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    /// The file, as named on the command line.
    pub file: String,
    pub entries: Vec<Entry>,
    pub order: Order,
}

/// What a run sends.
#[derive(Debug, Clone, Default)]
pub enum Traffic {
    /// [`crate::BenchConfig::request`] to the target's path, every time.
    #[default]
    Single,
    /// A URL list: entries picked by weight or in order, each with figures of its own.
    Mix(Arc<Mix>),
    /// A replayed log or timing script: each line due at its time (or at the run's rate), in
    /// the log's order. Open loop only.
    Replay(Arc<Replay>),
}

impl Traffic {
    /// Entries that get figures of their own (a URL list's); 0 otherwise.
    pub fn tallied(&self) -> usize {
        match self {
            Traffic::Mix(m) => m.entries.len(),
            _ => 0,
        }
    }

    pub fn replay(&self) -> Option<&Replay> {
        match self {
            Traffic::Replay(r) => Some(r),
            _ => None,
        }
    }
}

/// How one worker picks the request each new exchange carries.
#[derive(Debug, Clone)]
pub(crate) enum Picker {
    /// One request (or a replay, whose schedule says which).
    One,
    Weighted {
        index: WeightedIndex<u32>,
        rng: SmallRng,
    },
    /// The entry at `at`, `left` more times, then the next.
    Sequential {
        weights: Box<[u32]>,
        at: usize,
        left: u32,
    },
}

impl Picker {
    /// Worker `worker` of `workers`. Weighted picks draw from a generator seeded by the run's
    /// seed and the worker's index (the same seed and thread count repeat every worker's
    /// sequence); in order, each worker starts its walk at its share of the list, so that the
    /// workers do not ask for the same entries at the same moment.
    pub fn new(
        traffic: &Traffic,
        worker: usize,
        workers: usize,
        seed: u64,
    ) -> Result<Picker, EngineError> {
        let Traffic::Mix(mix) = traffic else { return Ok(Picker::One) };
        let weights: Box<[u32]> = mix.entries.iter().map(|e| e.weight).collect();
        if weights.is_empty() {
            return Err(EngineError::Config(format!("{}: no request in the list", mix.file)));
        }
        Ok(match mix.order {
            Order::Weighted => Picker::weighted(&weights, worker, seed).map_err(|e| {
                EngineError::Config(format!("{}: the weights cannot be used: {e}", mix.file))
            })?,
            Order::Sequential => {
                let at = worker * weights.len() / workers.max(1);
                let left = weights[at];
                Picker::Sequential { weights, at, left }
            }
        })
    }

    /// Picks at random in proportion to `weights`, from a generator seeded by the run's seed
    /// and worker `worker`'s index (a URL list's entries, a weighted mix's visit files).
    pub fn weighted(weights: &[u32], worker: usize, seed: u64) -> Result<Picker, String> {
        let index = WeightedIndex::new(weights.iter().copied()).map_err(|e| e.to_string())?;
        // A constant other than the schedule's, so that picks and Poisson gaps of one worker
        // are not drawn from the same sequence.
        let rng =
            SmallRng::seed_from_u64(seed ^ (worker as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        Ok(Picker::Weighted { index, rng })
    }

    /// The entry the next request carries.
    #[inline]
    pub fn next(&mut self) -> u32 {
        match self {
            Picker::One => 0,
            Picker::Weighted { index, rng } => index.sample(rng) as u32,
            Picker::Sequential { weights, at, left } => {
                if *left == 0 {
                    *at = (*at + 1) % weights.len();
                    *left = weights[*at];
                }
                *left -= 1;
                *at as u32
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(weights: &[u32], order: Order) -> Traffic {
        let entries = weights
            .iter()
            .enumerate()
            .map(|(i, w)| Entry { weight: *w, ..Entry::new(format!("/{i}"), i + 1) })
            .collect();
        Traffic::Mix(Arc::new(Mix { file: "list".into(), entries, order }))
    }

    #[test]
    fn weighted_picks_follow_the_weights_and_repeat_with_the_seed() {
        let traffic = mix(&[1, 3], Order::Weighted);
        let draw = |seed| {
            let mut p = Picker::new(&traffic, 0, 1, seed).unwrap();
            (0..40_000).map(|_| p.next()).collect::<Vec<_>>()
        };
        let picks = draw(7);
        let ones = picks.iter().filter(|&&e| e == 1).count();
        // 30,000 expected; the binomial's standard deviation is ~87, so 600 is 7 of them.
        assert!((29_400..=30_600).contains(&ones), "{ones}");
        assert_eq!(picks, draw(7), "the same seed repeats the sequence");
        assert_ne!(picks, draw(8));
    }

    #[test]
    fn sequential_walks_the_list_weight_times_each_and_workers_start_apart() {
        let traffic = mix(&[2, 1, 1], Order::Sequential);
        let mut p = Picker::new(&traffic, 0, 1, 1).unwrap();
        let walk: Vec<u32> = (0..8).map(|_| p.next()).collect();
        assert_eq!(walk, [0, 0, 1, 2, 0, 0, 1, 2]);
        let mut second = Picker::new(&traffic, 1, 2, 1).unwrap();
        assert_eq!(second.next(), 1, "worker 1 of 2 starts halfway");
    }

    #[test]
    fn entries_override_the_base_request() {
        let base = RequestSpec {
            method: "GET".into(),
            headers: vec![("Accept".into(), "*/*".into()), ("X-A".into(), "1".into())],
            body: Vec::new(),
        };
        let entry = Entry {
            method: Some("POST".into()),
            headers: vec![("accept".into(), "text/html".into())],
            body: Some(b"x".to_vec()),
            ..Entry::new("/p?q=1", 3)
        };
        let spec = entry.spec(&base);
        assert_eq!(spec.method, "POST");
        assert_eq!(
            spec.headers,
            [("X-A".into(), "1".into()), ("accept".into(), "text/html".into())]
        );
        assert_eq!(spec.body, b"x");
    }
}
