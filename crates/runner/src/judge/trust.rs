//! The trust verdict: what a run's figures can be taken to say about the server. Made once,
//! here, from the engine's result and the run's configuration; `bench`'s warnings, a sweep
//! step's flags, a stored cell's flags and so the report all read the same [`Verdict`].
//!
//! Each [`Finding`] names its flag, the evidence in a few words (what the store keeps and the
//! report shows) and a sentence for a person. A finding [`Finding::untrusted`] means the figure
//! is someone else's limit (the client's CPU or descriptors, the network), not the server's: a
//! sweep never takes such a step for the server's knee.

use loadlab_engine::{BenchConfig, BenchResult, ErrorClass, Pacing, Stop};
use loadlab_stats::format;
use loadlab_store::Counted;
use loadlab_visit::CHECK_CLASSES;
use serde::Serialize;

/// The one flag type, shared with the store (which keeps it by name) and the report.
pub use loadlab_store::Flag;

/// Requests sent later than this after their due time (at the 99th percentile) mean the
/// schedule was not kept. A millisecond is far beyond the timer's precision and the loop's
/// turn time on a client that keeps up.
pub const SCHEDULE_TOLERANCE_US: u64 = 1_000;

/// Above this CPU use a worker (or the client as a whole) is taken to be the bottleneck.
pub const SATURATION: f64 = 0.90;

/// A worker was starved when it waited for a CPU, while runnable, for at least this share of
/// its window ([`STARVED_WAIT`]) and that wait was at least this share of the time it wanted a
/// CPU, running or waiting ([`STARVED_DENIED`]): other work held the CPUs it may run on, so the
/// rate is the client's. Measured on 2 CPUs against nginx (docs/trust.md): unstarved runs
/// waited at most 13% of the window and were denied at most 26% of what they wanted; with one
/// busy loop on a CPU the client used they waited 22-46% and were denied 46-62%.
pub const STARVED_WAIT: f64 = 0.15;
pub const STARVED_DENIED: f64 = 0.35;
/// ...and the wait must add up to this much: over a run of a few milliseconds a handful of
/// preemptions is a large share and says nothing (seen: 200 requests in 20 ms on a loaded
/// machine, 4 ms waited).
pub const STARVED_MIN_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// The path rule of `network_bound` (docs/trust.md): the median handshake RTT under load at
/// least this many times the idle one...
pub const QUEUED_RTT_RATIO: f64 = 3.0;
/// ...and at least this much above it (µs): a queue formed on the path. Measured through a
/// veth: unshaped at full speed the median rose from 5-6 µs to 16-19 µs; behind tbf at
/// 10 Mbit/s-1 Gbit/s it rose to 0.16-40 ms.
pub const QUEUED_RTT_RISE_US: u32 = 100;
/// The rule needs this many answered probes in the window (one every 250 ms).
pub const QUEUED_RTT_PROBES: usize = 3;
/// ...a client using less than this share of its CPU...
pub const QUEUED_CLIENT_BUSY: f64 = 0.50;
/// ...on a machine whose CPUs were less busy than this (a full machine delays handshakes).
pub const QUEUED_MACHINE_BUSY: f64 = 0.90;

/// The round-trip rule of `network_bound` (docs/trust.md): in a closed loop each connection
/// has one request outstanding, so N connections across a path of round trip R carry at most
/// N / R requests a second whatever the server. When the idle round trip(s) a request needs
/// make up at least this share of its median latency, that bound, not the server, set the
/// rate (behind a 40 ms profile a 13-byte file took 40.7-41 ms at the median; on a LAN with
/// no delay the idle RTT was 7-8 µs of a 85-91 µs median)...
pub const ROUND_TRIP_SHARE: f64 = 0.5;
/// ...and the round trip is at least this long (µs): below it the handshake probe's own
/// granularity and the kernel's timestamps are too coarse to split a latency by.
pub const ROUND_TRIP_MIN_US: u32 = 1_000;

/// Responses whose status was not 2xx (1xx, 3xx, 4xx, 5xx).
pub fn not_2xx(t: &loadlab_engine::Tally) -> u64 {
    not_2xx_of(&t.status_classes())
}

/// Answers not 2xx that nothing asked for: a visit's step that names its status (a login's
/// 302) knows the answer for a right one, as `--expect-status` would. The trust verdict and
/// the SLO's `errors` term count these.
pub fn unasked_not_2xx(t: &loadlab_engine::Tally) -> u64 {
    let expected = t.sessions.as_deref().map_or(0, |s| s.expected_not_2xx);
    not_2xx(t).saturating_sub(expected)
}

/// The same from counts by status class, 1xx at index 0 to 5xx at 4 (a whole run's, or one
/// URL list entry's).
pub fn not_2xx_of(classes: &[u64; 5]) -> u64 {
    classes[0] + classes[2] + classes[3] + classes[4]
}

/// The share of the latency a percentile of lateness must reach to be said: below it, the
/// client's delay in sending is too small a part of the latency it is counted in to matter.
pub const LATE_SHARE: f64 = 0.10;

/// Why an open loop's schedule counts as missed, with its figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Missed {
    /// Arrivals due in the window were never sent: the offered rate was not offered.
    NotSent { requests: u64, share: f64 },
    /// Requests went out late by a material part of the latency they are counted in (latency
    /// counts from the due time, so the client's lateness is inside it).
    Late { percentile: f64, late_us: u64, latency_us: u64 },
}

impl Missed {
    fn evidence(&self) -> String {
        match self {
            Missed::NotSent { requests, share } => {
                format!("{requests} never sent ({} of the schedule)", format::percent(*share))
            }
            Missed::Late { percentile, late_us, latency_us } => format!(
                "late p{percentile} {}, {} of the p{percentile} latency",
                format::micros(*late_us as f64),
                format::percent(*late_us as f64 / (*latency_us).max(1) as f64)
            ),
        }
    }

    fn sentence(&self) -> String {
        match self {
            Missed::NotSent { requests, share } => format!(
                "{requests} requests due in the window were never sent ({} of the schedule)",
                format::percent(*share)
            ),
            Missed::Late { percentile, late_us, latency_us } => format!(
                "{}% of requests went out {} or more after their due time, {} of the p{percentile} \
                 latency of {} that includes it: that much of the latency is the client's",
                100.0 - percentile,
                format::micros(*late_us as f64),
                format::percent(*late_us as f64 / (*latency_us).max(1) as f64),
                format::micros(*latency_us as f64)
            ),
        }
    }
}

/// The schedule rule (docs/load-models.md): arrivals never sent; or, at the median or (with
/// 100 arrivals or more, so that it is not the single worst wake-up) the 99th percentile,
/// lateness above [`SCHEDULE_TOLERANCE_US`] that is at least [`LATE_SHARE`] of the latency at
/// the same percentile.
pub fn schedule_missed(r: &BenchResult) -> Option<Missed> {
    r.pacing.rate()?;
    let t = &r.tally;
    if t.not_sent > 0 {
        let due = t.sent + t.not_sent;
        return Some(Missed::NotSent {
            requests: r.not_sent_requests(),
            share: t.not_sent as f64 / due.max(1) as f64,
        });
    }
    let late = &t.timings.late;
    let mut percentiles = vec![50.0];
    if late.count() >= 100 {
        percentiles.push(99.0);
    }
    percentiles.into_iter().rev().find_map(|p| {
        let (late_us, latency_us) = (late.percentile(p), t.timings.corrected.percentile(p));
        (late_us > SCHEDULE_TOLERANCE_US && late_us as f64 >= LATE_SHARE * latency_us as f64)
            .then_some(Missed::Late { percentile: p, late_us, latency_us })
    })
}

/// What the path probe shows when a queue on the link set the pace.
struct Queued {
    idle_us: u32,
    load_us: u32,
    probes: usize,
}

/// The path rule: not loopback (it has no queue that paces), enough probes, the median
/// handshake RTT under load well above the idle one, with the client and the machine not busy
/// (their own delays are not the link's).
fn path_queued(r: &BenchResult) -> Option<Queued> {
    if r.link.is_loopback() {
        return None;
    }
    let p = &r.path;
    let (idle, load) = (p.idle_us?, p.median_under_load_us()?);
    let rose = f64::from(load) >= QUEUED_RTT_RATIO * f64::from(idle.max(1))
        && load.saturating_sub(idle) >= QUEUED_RTT_RISE_US;
    let quiet = r.client_busy() < QUEUED_CLIENT_BUSY
        && p.machine_busy.is_none_or(|m| m < QUEUED_MACHINE_BUSY);
    (p.under_load_us.len() >= QUEUED_RTT_PROBES && rose && quiet).then_some(Queued {
        idle_us: idle,
        load_us: load,
        probes: p.under_load_us.len(),
    })
}

/// What the round-trip rule found: a closed loop paced by the path's round trip.
struct RoundTrips {
    /// Round trips per request: 1 with keep-alive, 2 with a handshake per request.
    trips: u32,
    rtt_us: u32,
    p50_us: u64,
    /// connections / (trips x RTT)
    bound_rps: f64,
}

/// The round-trip rule: a closed loop, not over loopback, whose idle round trip (x2 when each
/// request opens its connection) is at least [`ROUND_TRIP_SHARE`] of its median latency.
fn round_trip_bound(cfg: &BenchConfig, r: &BenchResult) -> Option<RoundTrips> {
    if r.link.is_loopback() || cfg.pacing != Pacing::Closed || r.tally.completed == 0 {
        return None;
    }
    let rtt_us = r.path.idle_us.filter(|&u| u >= ROUND_TRIP_MIN_US)?;
    let trips = if cfg.keepalive { 1 } else { 2 };
    let p50_us = r.tally.timings.total.percentile(50.0);
    let per_request = f64::from(trips) * f64::from(rtt_us);
    (per_request >= ROUND_TRIP_SHARE * p50_us as f64).then(|| RoundTrips {
        trips,
        rtt_us,
        p50_us,
        bound_rps: cfg.connections as f64 / (per_request / 1e6),
    })
}

/// One reason for doubt: the flag, its evidence in a few words, and a sentence for a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub flag: Flag,
    /// e.g. "client CPU 98% (busiest worker 99%)"; what the store keeps beside the flag.
    pub evidence: String,
    /// The whole warning as `bench` prints it.
    pub warning: String,
}

impl Finding {
    pub fn untrusted(&self) -> bool {
        self.flag.untrusted()
    }
}

/// Everything the figures of one run can and cannot be taken to say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    /// Facts worth knowing that weaken no figure (a varying body length, requests in flight
    /// at the end).
    pub notes: Vec<String>,
}

impl Verdict {
    /// Judges what `r`, measured with `cfg`, can say: every rule of [`RULES`] in order, then
    /// every note of [`NOTES`].
    pub fn judge(cfg: &BenchConfig, r: &BenchResult) -> Verdict {
        Verdict {
            findings: RULES.iter().filter_map(|rule| rule(cfg, r)).collect(),
            notes: NOTES.iter().filter_map(|note| note(cfg, r)).collect(),
        }
    }

    pub fn has(&self, flag: Flag) -> bool {
        self.findings.iter().any(|f| f.flag == flag)
    }

    /// False when a finding says the figures are the client's or the network's limit.
    pub fn trusted(&self) -> bool {
        !self.findings.iter().any(Finding::untrusted)
    }

    /// The warnings as `bench` prints them, in the order found.
    pub fn warnings(&self) -> Vec<String> {
        self.findings.iter().map(|f| f.warning.clone()).collect()
    }

    /// The findings as the store keeps them with a cell.
    pub fn store_flags(&self) -> Vec<loadlab_store::TrustFlag> {
        self.findings
            .iter()
            .map(|f| loadlab_store::TrustFlag { flag: f.flag.clone(), detail: f.evidence.clone() })
            .collect()
    }
}

/// One trust rule: the finding it makes of a run, if any.
type Rule = fn(&BenchConfig, &BenchResult) -> Option<Finding>;

/// Every rule, in the order their findings are listed (JSON `warnings`, the store's flags).
pub const RULES: [Rule; 13] = [
    client_saturated,
    client_starved,
    network_bound,
    errors,
    descriptors,
    non_2xx,
    checks_failed,
    visitors_past_users,
    interrupted,
    connections_short,
    nothing_completed,
    schedule_not_kept,
    connections_exhausted,
];

/// One note: a fact worth knowing that weakens no figure.
type Note = fn(&BenchConfig, &BenchResult) -> Option<String>;

/// Every note, in the order they are listed.
pub const NOTES: [Note; 4] = [idle_rtt_unknown, nominal_link, still_in_flight, body_length_varied];

fn finding(flag: Flag, evidence: String, warning: String) -> Option<Finding> {
    Some(Finding { flag, evidence, warning })
}

/// The flags one second of a run in progress raises, by this verdict's rules applied to that
/// second's evidence, so that a live view can show each the moment it is: failures, no
/// descriptor or port, a client of `workers` workers using over [`SATURATION`] of its CPU,
/// or waiting for one as long as [`client_starved`] asks (the wait's share of the second and
/// of the time wanted). The run's own verdict, judged from the whole result, comes after it.
pub fn raised_in(s: &crate::commands::bench::following::Second, workers: usize) -> Vec<Flag> {
    let second_us = 1e6 * workers.max(1) as f64;
    let (cpu, wait) = (s.cpu_us as f64, s.cpu_wait_us as f64);
    let short_of = |c: &ErrorClass| matches!(c, ErrorClass::FdUnavail | ErrorClass::AddrUnavail);
    let rules = [
        (s.failed > 0, Flag::Errors),
        (s.errors.iter().any(|(c, n)| short_of(c) && *n > 0), Flag::FdExhausted),
        (cpu > SATURATION * second_us, Flag::ClientSaturated),
        (
            wait >= STARVED_WAIT * second_us && wait >= STARVED_DENIED * (cpu + wait),
            Flag::ClientStarved,
        ),
    ];
    rules.into_iter().filter_map(|(raised, flag)| raised.then_some(flag)).collect()
}

/// Whether the client, as a whole or in one worker, used over [`SATURATION`] of its CPU.
fn saturated(r: &BenchResult) -> bool {
    r.max_worker_busy() > SATURATION || r.client_busy() > SATURATION
}

fn client_saturated(_: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    if !saturated(r) {
        return None;
    }
    let (busy, worker) = (format::percent(r.client_busy()), format::percent(r.max_worker_busy()));
    finding(
        Flag::ClientSaturated,
        format!("client CPU {busy} (busiest worker {worker})"),
        format!(
            "client saturated: it used {busy} of its CPU (busiest worker {worker}), so the \
             request rate may be the client's limit, not the server's"
        ),
    )
}

/// [`STARVED_WAIT`], [`STARVED_DENIED`] and [`STARVED_MIN_WAIT`] all reached.
fn client_starved(_: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let (waiting, denied) = r.starvation();
    let waited = r.workers.iter().map(|w| w.cpu_wait).max().unwrap_or_default();
    if waiting < STARVED_WAIT || denied < STARVED_DENIED || waited < STARVED_MIN_WAIT {
        return None;
    }
    let (evidence, why) = match &r.cgroup_throttle {
        // The cgroup's quota took the CPUs away: the machine may have had idle ones.
        Some(t) => {
            let quota = describe_quota(t);
            (format!("; {quota}"), format!(" because {quota}"))
        }
        // Who held the CPUs is not known; over loopback the server is a candidate.
        None if r.link.is_loopback() => (
            String::new(),
            " while other work held its CPUs (over loopback the server itself may be that \
             work: pin client and server to different CPUs to tell)"
                .to_owned(),
        ),
        None => (String::new(), " while other work held its CPUs".to_owned()),
    };
    finding(
        Flag::ClientStarved,
        format!(
            "a worker waited for a CPU {} of the run, {} of the CPU time it wanted{evidence}",
            format::percent(waiting),
            format::percent(denied)
        ),
        format!(
            "client starved: a worker waited for a CPU {} of the run ({} of the time it wanted \
             one; {} in all, {} preemptions){why}, so the request rate is the client's, not the \
             server's",
            format::percent(waiting),
            format::percent(denied),
            format::seconds(r.cpu_wait().as_secs_f64()),
            format::count(r.involuntary_switches() as f64),
        ),
    )
}

/// "its cgroup's CPU quota (0.5 CPU: 50.0 ms per 100 ms, at /sys/fs/cgroup/ci) throttled it in
/// 18 of 20 periods, 1.4 s in all".
fn describe_quota(t: &loadlab_engine::cgroup::CgroupThrottle) -> String {
    let (q, n) = (&t.quota, &t.throttling);
    format!(
        "its cgroup's CPU quota ({} CPU: {} per {}, at {}) throttled it in {} of {} periods, {} \
         in all",
        (q.cpus() * 100.0).round() / 100.0,
        format::micros(q.quota.as_micros() as f64),
        format::micros(q.period.as_micros() as f64),
        t.cgroup.display(),
        n.throttled_periods,
        n.periods,
        format::seconds(n.throttled.as_secs_f64()),
    )
}

/// The three rules of `network_bound`, the first that holds: a queue on the path, the link's
/// speed, the round trip. The path rule is not skipped when the client starved: the kernel
/// times the handshake when the SYN-ACK arrives, however long the probing thread then waits
/// for a CPU.
fn network_bound(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    queued_path(r).or_else(|| full_link(r)).or_else(|| round_trips(cfg, r))
}

fn queued_path(r: &BenchResult) -> Option<Finding> {
    let q = path_queued(r)?;
    let (idle, load) = (format::micros(f64::from(q.idle_us)), format::micros(f64::from(q.load_us)));
    let carried = format::mbps(r.achieved_mbps());
    finding(
        Flag::NetworkBound,
        format!("RTT {idle} idle, {load} under load; {carried} carried"),
        format!(
            "network-bound: the path's RTT rose from {idle} idle to {load} under load (median of \
             {} probes) while the client was {} busy; the run carried {carried}: a queue on the \
             link, not the server, set the pace",
            q.probes,
            format::percent(r.client_busy()),
        ),
    )
}

fn full_link(r: &BenchResult) -> Option<Finding> {
    let u = r.link_utilisation().filter(|_| r.network_bound())?;
    let link = describe_link(r.link.interface.as_deref(), r.link.speed_mbps);
    finding(
        Flag::NetworkBound,
        format!("{link} at {} of its capacity", format::percent(u)),
        format!(
            "the link {link} carried {} of its capacity: the network, not the server, limited \
             throughput",
            format::percent(u)
        ),
    )
}

fn round_trips(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let rt = round_trip_bound(cfg, r)?;
    let rtt = format::micros(f64::from(rt.rtt_us));
    let each = if rt.trips == 1 {
        format!("one round trip of {rtt}")
    } else {
        format!("two round trips of {rtt} (a handshake, then the request)")
    };
    let (bound, achieved) = (format::count(rt.bound_rps), format::count(r.rps()));
    finding(
        Flag::NetworkBound,
        format!(
            "{} conn / {rtt} RTT{} = at most {bound} req/s; {achieved} achieved",
            cfg.connections,
            if rt.trips == 2 { " x 2" } else { "" },
        ),
        format!(
            "network-bound: each request needed {each} of its {} median, so {} connection{} can \
             carry at most {bound} req/s whatever the server; {achieved} req/s were achieved: \
             the round trip, not the server, set this rate (more connections, or an open loop \
             with --rate, load the server instead)",
            format::micros(rt.p50_us as f64),
            cfg.connections,
            if cfg.connections == 1 { "" } else { "s" },
        ),
    )
}

fn errors(_: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let t = &r.tally;
    if t.failed == 0 {
        return None;
    }
    let done = t.completed + t.failed;
    let mut classes: Vec<(ErrorClass, u64)> = t.errors.iter().filter(|(_, n)| *n > 0).collect();
    classes.sort_by_key(|c| std::cmp::Reverse(c.1));
    let list: Vec<String> = classes.iter().map(|(c, n)| format!("{} {n}", c.name())).collect();
    finding(
        Flag::Errors,
        format!("{} of {done}", list.join(", ")),
        format!(
            "{} of {done} requests failed ({:.2}%: {}); latency covers completed requests only",
            t.failed,
            100.0 * t.failed as f64 / done.max(1) as f64,
            list.join(", ")
        ),
    )
}

/// `fd_exhausted` when requests found no descriptor or port; else `fd_limit_low` when the
/// connections need more descriptors than the limit allows. The closed loop opens all its
/// connections; the open loop only as many as the server's latency requires, so what it
/// reached is what counts.
fn descriptors(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let t = &r.tally;
    let fd_errors = t.errors.get(ErrorClass::FdUnavail) + t.errors.get(ErrorClass::AddrUnavail);
    if fd_errors > 0 {
        return finding(
            Flag::FdExhausted,
            format!("{fd_errors} requests found no descriptor or local port"),
            format!(
                "the client ran out of file descriptors or local ports ({fd_errors} times; \
                 open-file limit {}): those failures say nothing about the server",
                r.fd_limit
            ),
        );
    }
    let needed = if cfg.pacing == Pacing::Closed { r.pool } else { r.peak_open };
    if r.fd_limit == 0 || (needed as u64 + 16) <= r.fd_limit {
        return None;
    }
    finding(
        Flag::FdLimitLow,
        format!("{needed} connections, open-file limit {}", r.fd_limit),
        format!(
            "{needed} connections need more descriptors than the open-file limit ({}) allows",
            r.fd_limit
        ),
    )
}

/// Answers not 2xx that nothing asked for ([`unasked_not_2xx`]), counted as completed.
fn non_2xx(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let n = unasked_not_2xx(&r.tally);
    if n == 0 || !cfg.validation.status.is_empty() {
        return None;
    }
    finding(
        Flag::Non2xx,
        format!("{n} of {} responses", r.tally.completed),
        format!(
            "{n} responses were not 2xx and are counted as completed; use --expect-status to \
             count them as failures"
        ),
    )
}

/// A visit's step whose answer came but failed its check (or a capture found nothing): the
/// request counts as completed, as an HTTP request it was (k6 counts checks apart from
/// requests), so the requests' figures hold answers a visitor could not use. Said beside
/// them, with the steps that failed.
fn checks_failed(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let steps = &r.tally.sessions.as_deref()?.steps;
    let names = cfg.visits.as_ref().map(|p| p.steps.as_slice()).unwrap_or_default();
    let mut total = 0;
    let mut each = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        for (class, n) in step.failed.iter().filter(|(c, _)| CHECK_CLASSES.contains(&c.as_str())) {
            total += n;
            let name = names.get(i).map_or_else(|| format!("step {}", i + 1), String::clone);
            each.push(format!("{name}: {class} {n}"));
        }
    }
    if total == 0 {
        return None;
    }
    finding(
        Flag::ChecksFailed,
        format!("{total} checks failed ({})", each.join(", ")),
        format!(
            "{total} checks failed ({}): their answers count as completed requests in the \
             rate and latency above; the visits failed there",
            each.join(", ")
        ),
    )
}

/// A visit that logs each visitor in as its own user of the lab's (`{visitor}` in its given
/// user) holds as many users as the lab made. A closed population above them is refused up
/// front; in the open loop a visitor's number is its place among the visits in flight, which
/// only the run knows: past the users, visitors shared one, and WordPress loses logins to a
/// shared user's session row (docs/lab.md), so failed visits may be the client's doing.
fn visitors_past_users(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let users = cfg.visits.as_ref()?.users?;
    let top = r.tally.sessions.as_deref()?.top_visitor;
    if top <= users {
        return None;
    }
    finding(
        Flag::VisitorsPastUsers,
        format!("visitor numbers up to {top}, {users} users"),
        format!(
            "visitor numbers went up to {top} (the visits in flight at once), past the {users} \
             users the lab made for them: visitors above {users} shared a user, and a shared \
             user's logins may fail; offer a lower --rate or run -c {users} visitors"
        ),
    )
}

fn interrupted(_: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    if !r.interrupted {
        return None;
    }
    finding(
        Flag::Interrupted,
        "stopped before its end".into(),
        "the run was interrupted: figures cover the time until the interruption".into(),
    )
}

/// A closed loop that never had the connections it asked for open at once, with nothing
/// failed and nothing interrupted to explain it.
fn connections_short(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let asked = match cfg.stop {
        Stop::Count(n) => cfg.connections.min(n as usize),
        Stop::Duration(_) => cfg.connections,
    };
    let short = cfg.pacing == Pacing::Closed && r.peak_open < asked;
    if !short || r.tally.failed > 0 || r.interrupted {
        return None;
    }
    finding(
        Flag::ConnectionsShort,
        format!("{} of {asked} connections open at once", r.peak_open),
        format!("only {} of {asked} connections were open at once", r.peak_open),
    )
}

/// What a run of `config` counts: its requests, or for a run of visits the page views,
/// visits of a visit file or httperf sessions; the figures a cell's record stores
/// (`crate::cell`) say the same.
pub fn counted(config: &BenchConfig) -> Counted {
    match config.visits.as_deref() {
        None => Counted::Requests,
        Some(p) if p.view.is_some() => Counted::Views,
        Some(p) if !p.steps.is_empty() => Counted::Visits,
        Some(_) => Counted::Sessions,
    }
}

fn nothing_completed(cfg: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let t = &r.tally;
    // A run of visits is reported in visits: requests that completed in visits none of
    // which ended leave no visits/s or visit latency, as no request leaves no req/s.
    if let Some(s) = r.tally.sessions.as_deref().filter(|s| s.completed == 0) {
        let unit = counted(cfg);
        let noun = unit.noun();
        return finding(
            Flag::NothingCompleted,
            format!(
                "no {noun} completed: {} begun, {} failed, {} still going at the end",
                s.started, s.failed, s.unfinished
            ),
            format!(
                "no {noun} completed ({} begun, {} failed, {} still going at the end): there \
                 is no {} or {noun} latency to report",
                s.started,
                s.failed,
                s.unfinished,
                unit.rate_unit()
            ),
        );
    }
    if t.completed > 0 {
        return None;
    }
    finding(
        Flag::NothingCompleted,
        format!("{} failed, {} still in flight at the end", t.failed, t.unfinished),
        "no request completed: there is no latency or throughput to report".into(),
    )
}

/// An open loop's schedule not kept ([`schedule_missed`]).
fn schedule_not_kept(_: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    let offered = r.offered_rps()?;
    let missed = schedule_missed(r)?;
    let below = r.rps() < 0.99 * offered;
    finding(
        Flag::ScheduleMissed,
        missed.evidence(),
        format!(
            "the schedule was not kept: {}{}{}",
            missed.sentence(),
            if below { "; the achieved rate is below the offered one" } else { "" },
            if saturated(r) { ", because the client was saturated" } else { "" }
        ),
    )
}

/// Open loop and sessions: the peak of open connections reached the cap.
fn connections_exhausted(_: &BenchConfig, r: &BenchResult) -> Option<Finding> {
    r.offered_rps()?;
    if r.pool == 0 || r.peak_open < r.pool {
        return None;
    }
    finding(
        Flag::ConnectionsExhausted,
        format!("all {} allowed connections busy", r.pool),
        format!(
            "all {} allowed connections were busy at some point: requests waited for a free \
             connection (their latency counts from when they were due); raise \
             --max-connections if the server can take more",
            r.pool
        ),
    )
}

/// A probed path without an idle RTT: the path-queue and round-trip rules of `network_bound`
/// compare with it, so neither could apply. Said, so that a null `idle_rtt_us` is never read as
/// "the round trip did not matter".
fn idle_rtt_unknown(_: &BenchConfig, r: &BenchResult) -> Option<String> {
    let why = r.path.idle_unknown.as_ref()?;
    Some(format!(
        "round-trip and path-queue rules of network_bound not applied: no idle RTT measured \
         ({why})"
    ))
}

fn nominal_link(_: &BenchConfig, r: &BenchResult) -> Option<String> {
    let u = r.link_utilisation().filter(|&u| u > loadlab_engine::link::NOMINAL)?;
    Some(format!(
        "the link {} carried {} of the speed it reports: that speed is nominal, not a limit",
        describe_link(r.link.interface.as_deref(), r.link.speed_mbps),
        format::percent(u)
    ))
}

fn still_in_flight(_: &BenchConfig, r: &BenchResult) -> Option<String> {
    let n = r.tally.unfinished;
    (n > 0).then(|| {
        format!(
            "{n} requests were still in flight when the run ended; they are neither completed \
             nor failed"
        )
    })
}

fn body_length_varied(_: &BenchConfig, r: &BenchResult) -> Option<String> {
    let l = &r.tally.lengths;
    l.varied().then(|| {
        format!(
            "body length varied from {} to {} bytes (normal for dynamic pages; not counted as \
             failures)",
            l.min, l.max
        )
    })
}

/// How a link is named: `eth0 (100 Mbit/s)`, `lo (speed unknown)`.
pub fn describe_link(interface: Option<&str>, speed_mbps: Option<u64>) -> String {
    let name = interface.unwrap_or("(interface not found)");
    match speed_mbps {
        Some(mbps) => format!("{name} ({mbps} Mbit/s)"),
        None => format!("{name} (speed unknown)"),
    }
}
