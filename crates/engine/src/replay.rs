//! Replayed traffic (`--replay`, `--timing-script`): the requests of a log and when each is
//! due, built once before the run. A log repeats few requests many times, so its distinct
//! requests are kept once ([`Distinct`], encoded once into the run's table) and each line is
//! two numbers: its offset from the first line and its request's index.
//!
//! Memory is the reason for the shapes: a log whose 100,000 lines are all different requests
//! keeps their paths end to end in one string and finds duplicates through a table of indices
//! into it, so that each request costs its path's bytes and a few words, not several
//! allocations (BENCHMARKS.md, "Replaying a log": 24 MB at the peak, against 50 MB with owned
//! strings per line).
//!
//! Well-formed lines that cannot be replayed are counted by reason ([`Skip`]), never dropped
//! unsaid.

use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::time::Duration;

use hashbrown::HashTable;

/// Why a well-formed line of a log was not replayed: its request is not one to replay here.
/// The names are the JSON keys under `replay.skipped`. A line that is not in the log's format
/// at all is no skip but an error naming it (`crate::input::access_log`): the file is not
/// what it claims to be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Skip {
    /// No request: `"-"` or an empty request line (nginx logs a connection closed before its
    /// request, a 400 or 408, this way), or a JSON line without one.
    NoRequest,
    /// A request line that is not `METHOD target [HTTP/x]`, or whose method or target is not
    /// one HTTP allows: what a server logs, as a 400, for a TLS handshake or a scanner's bytes
    /// sent to its plain-HTTP port.
    BadRequestLine,
    /// CONNECT asks for a tunnel (RFC 9110 section 9.3.6), not a resource of this site.
    Connect,
    /// `OPTIONS *` asks about the server, not a resource (RFC 9112 section 3.2.4).
    Asterisk,
    /// An absolute URL naming another host: a forward proxy's request, not this site's.
    OtherHost,
    /// The last line, without its end of line, does not parse: a log still being written.
    Truncated,
}

impl Skip {
    pub const ALL: [Skip; 6] = [
        Skip::NoRequest,
        Skip::BadRequestLine,
        Skip::Connect,
        Skip::Asterisk,
        Skip::OtherHost,
        Skip::Truncated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Skip::NoRequest => "no_request",
            Skip::BadRequestLine => "bad_request_line",
            Skip::Connect => "connect",
            Skip::Asterisk => "asterisk",
            Skip::OtherHost => "other_host",
            Skip::Truncated => "truncated",
        }
    }

    /// What the reason means, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Skip::NoRequest => "no request (\"-\")",
            Skip::BadRequestLine => "not a request line METHOD /path HTTP/x",
            Skip::Connect => "CONNECT (a tunnel, not a resource)",
            Skip::Asterisk => "OPTIONS * (about the server, not a resource)",
            Skip::OtherHost => "an absolute URL to another host (a proxy's request)",
            Skip::Truncated => "a last line cut short (a log still being written)",
        }
    }
}

/// The distinct requests of a log: each a method (or the run's) and a path, the paths end to
/// end in one string.
#[derive(Debug, Clone, Default)]
pub struct Distinct {
    /// The methods seen, each once.
    methods: Vec<String>,
    /// Per request: an index into `methods`, or `RUNS_METHOD`.
    method: Vec<u16>,
    paths: String,
    /// Per request: where its path ends in `paths` (it starts where the one before ends).
    ends: Vec<u32>,
}

/// A request with no method of its own (a timing script's): the run's (`-m`).
const RUNS_METHOD: u16 = u16::MAX;

impl Distinct {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Request `i`: its method (`None`: the run's) and its path.
    pub fn get(&self, i: usize) -> (Option<&str>, &str) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let path = &self.paths[start..self.ends[i] as usize];
        let method = self.methods.get(usize::from(self.method[i])).map(String::as_str);
        (method, path)
    }
}

/// The requests of a log, in due order.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The file, as named on the command line.
    pub file: String,
    /// What the lines were: `combined`, `json` (or both), `timing-script`.
    pub format: String,
    /// The distinct requests.
    pub distinct: Distinct,
    /// Per replayed line, in due order: nanoseconds after the first line (at speed 1).
    pub offsets_ns: Box<[u64]>,
    /// Per replayed line: its request, an index into `distinct`.
    pub requests: Box<[u32]>,
    /// `--speed`: 2 replays twice as fast (offsets halved).
    pub speed: f64,
    /// Lines read, blank ones aside.
    pub read: u64,
    /// Lines not replayed, by reason, with the first such line's number.
    pub skipped: BTreeMap<Skip, (u64, usize)>,
}

impl Replay {
    /// Lines replayed.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Line `k`'s due time after the first line's, at the replay's speed.
    #[inline]
    pub fn offset(&self, k: usize) -> Duration {
        Duration::from_nanos((self.offsets_ns[k] as f64 / self.speed) as u64)
    }

    /// From the first line's due time to the last's, at the replay's speed.
    pub fn span(&self) -> Duration {
        self.len().checked_sub(1).map_or(Duration::ZERO, |last| self.offset(last))
    }

    /// The rate the log offers at its speed over its first `lines` lines: lines over their
    /// span (a span under a millisecond counts as one, so that a log of one instant has a
    /// finite rate).
    pub fn mean_rate(&self, lines: usize) -> f64 {
        let n = lines.min(self.len());
        let span = n.checked_sub(1).map_or(Duration::ZERO, |last| self.offset(last));
        n as f64 / span.max(Duration::from_millis(1)).as_secs_f64()
    }

    /// Lines skipped, all reasons together.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().map(|(n, _)| n).sum()
    }
}

/// Collects a log's lines while it is read, then orders them into a [`Replay`].
#[derive(Default)]
pub(crate) struct Builder {
    /// Indices into `distinct`, hashed by their request, to find a line's request if it was
    /// seen before without a second copy of its path.
    seen: HashTable<u32>,
    hasher: std::hash::RandomState,
    distinct: Distinct,
    /// (time in ns since the epoch or since the script's start, request, whole seconds only)
    lines: Vec<(i64, u32, bool)>,
    read: u64,
    skipped: BTreeMap<Skip, (u64, usize)>,
    formats: Vec<&'static str>,
}

impl Builder {
    /// A non-blank line was read.
    pub fn read(&mut self) {
        self.read += 1;
    }

    /// Line `line` cannot be replayed, for `why`.
    pub fn skip(&mut self, why: Skip, line: usize) {
        self.skipped.entry(why).or_insert((0, line)).0 += 1;
    }

    /// A line of `format` asks `method path` (no method: the run's) at `at_ns`;
    /// `coarse` when its time has whole seconds only (the Common Log Format's), so the lines
    /// of one second are spread over it.
    pub fn line(
        &mut self,
        format: &'static str,
        method: Option<&str>,
        path: &str,
        at_ns: i64,
        coarse: bool,
    ) {
        if !self.formats.contains(&format) {
            self.formats.push(format);
        }
        let hash = self.hasher.hash_one((method, path));
        let distinct = &self.distinct;
        let found = self.seen.find(hash, |&i| distinct.get(i as usize) == (method, path)).copied();
        let entry = match found {
            Some(i) => i,
            None => {
                let d = &mut self.distinct;
                let i = d.len() as u32;
                let m = match method {
                    None => RUNS_METHOD,
                    Some(m) => match d.methods.iter().position(|x| x == m) {
                        Some(k) => k as u16,
                        None => {
                            d.methods.push(m.to_string());
                            (d.methods.len() - 1) as u16
                        }
                    },
                };
                d.method.push(m);
                d.paths.push_str(path);
                d.ends.push(d.paths.len() as u32);
                let (hasher, distinct) = (&self.hasher, &self.distinct);
                self.seen.insert_unique(hash, i, |&j| hasher.hash_one(distinct.get(j as usize)));
                i
            }
        };
        self.lines.push((at_ns, entry, coarse));
    }

    /// The replay, lines in time order. A log is written as requests end, so its lines are
    /// not quite in the order their times say; the sort is stable, so lines of one time keep
    /// the file's order. Lines of one whole second (a coarse clock) are spread evenly over
    /// that second in their order, rather than sent in one burst at its start.
    pub fn finish(mut self, file: &str) -> Replay {
        self.lines.sort_by_key(|&(at, _, _)| at);
        let first = self.lines.first().map_or(0, |l| l.0);
        let mut due: Vec<(u64, u32)> = Vec::with_capacity(self.lines.len());
        let mut i = 0;
        while i < self.lines.len() {
            let (at, _, coarse) = self.lines[i];
            let mut j = i + 1;
            if coarse {
                while j < self.lines.len() && self.lines[j].0 == at && self.lines[j].2 {
                    j += 1;
                }
            }
            let n = (j - i) as u64;
            let base = (at - first) as u64;
            for (k, line) in self.lines[i..j].iter().enumerate() {
                due.push((base + k as u64 * 1_000_000_000 / n, line.1));
            }
            i = j;
        }
        // Spread lines may pass a finer-grained line of the same second: order them again.
        due.sort_by_key(|&(at, _)| at);
        drop(self.lines);
        Replay {
            file: file.to_string(),
            format: self.formats.join("+"),
            distinct: self.distinct,
            offsets_ns: due.iter().map(|d| d.0).collect(),
            requests: due.iter().map(|d| d.1).collect(),
            speed: 1.0,
            read: self.read,
            skipped: self.skipped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_ordered_by_time_requests_kept_once_and_coarse_seconds_spread() {
        let mut b = Builder::default();
        let s = 1_000_000_000i64;
        b.line("combined", Some("GET"), "/b", 10 * s, true);
        b.line("combined", Some("GET"), "/a", 10 * s, true);
        b.line("combined", Some("GET"), "/a", 9 * s, true);
        b.line("combined", Some("POST"), "/a", 10 * s, true);
        b.line("combined", Some("GET"), "/c", 12 * s, true);
        b.skip(Skip::Connect, 6);
        b.skip(Skip::Connect, 7);
        let r = b.finish("log");
        assert_eq!(r.distinct.len(), 4, "GET /a once, POST /a apart");
        let paths: Vec<&str> = r.requests.iter().map(|&e| r.distinct.get(e as usize).1).collect();
        assert_eq!(paths, ["/a", "/b", "/a", "/a", "/c"]);
        let ms: Vec<u64> = r.offsets_ns.iter().map(|ns| ns / 1_000_000).collect();
        // Second 10 held three lines: at 1 s, 1.333 s and 1.667 s after second 9.
        assert_eq!(ms, [0, 1_000, 1_333, 1_666, 3_000]);
        assert_eq!(r.skipped[&Skip::Connect], (2, 6));
        assert_eq!(r.skipped_total(), 2);
        assert_eq!(r.distinct.get(2), (Some("POST"), "/a"));
    }

    #[test]
    fn speed_scales_the_offsets_and_the_rate() {
        let mut b = Builder::default();
        for k in 0..11 {
            b.line("json", None, "/", k * 100_000_000, false);
        }
        let mut r = b.finish("log");
        assert_eq!(r.span(), Duration::from_secs(1));
        assert!((r.mean_rate(11) - 11.0).abs() < 1e-9);
        r.speed = 2.0;
        assert_eq!(r.offset(10), Duration::from_millis(500));
        assert!((r.mean_rate(11) - 22.0).abs() < 1e-9);
        assert!((r.mean_rate(6) - 24.0).abs() < 1e-9, "the first 6 lines span 250 ms");
    }
}
