//! The distributions of a bench or a cell, each an HDR recorder kept whole: the one value that
//! a live bench's report carries and the store keeps, so that every layout reading a
//! distribution (ab's percentile and connection times tables, the report's latency plots and
//! SLO percentiles) reads the same one whether the figures are live or stored.

use loadlab_stats::Recorder;

/// What a bench measured as distributions, microseconds. A distribution that was not measured
/// (the uncorrected times of a closed loop, the handshakes of `http://`) or not kept (by
/// cells stored before loadlab kept it) is `None`.
#[derive(Debug, Clone, Default)]
pub struct Histograms {
    /// The latency every output shows: from each request's due time under a schedule (open
    /// loop and sessions: coordinated omission corrected), from its start in the closed loop.
    pub latency: Option<Recorder>,
    /// Under a schedule: from each request's start, the uncorrected service time.
    pub uncorrected: Option<Recorder>,
    /// TCP connects.
    pub connect: Option<Recorder>,
    /// TLS handshakes, one per new connection (`https://` only).
    pub tls: Option<Recorder>,
    /// From the request's last byte sent to the answer's first byte.
    pub waiting: Option<Recorder>,
    /// From the answer's first byte to its last (ab's processing).
    pub processing: Option<Recorder>,
    /// The lifetimes of the connections closed during the run, connect to close (httperf's
    /// connection time).
    pub lifetime: Option<Recorder>,
}

impl Histograms {
    /// The name each distribution is stored under, in the `histograms` table's `name`.
    const NAMES: [&'static str; 7] = [
        "latency",
        "latency_uncorrected",
        "connect",
        "tls",
        "waiting",
        "processing",
        "connection_lifetime",
    ];

    fn slots(&self) -> [&Option<Recorder>; 7] {
        [
            &self.latency,
            &self.uncorrected,
            &self.connect,
            &self.tls,
            &self.waiting,
            &self.processing,
            &self.lifetime,
        ]
    }

    /// Each distribution present, with the name the store keeps it under.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, &Recorder)> + '_ {
        Self::NAMES.into_iter().zip(self.slots()).filter_map(|(n, r)| Some((n, r.as_ref()?)))
    }

    /// Sets the distribution stored as `name`; `false` for a name this build does not keep.
    pub fn set(&mut self, name: &str, recorder: Recorder) -> bool {
        let slot = match name {
            "latency" => &mut self.latency,
            "latency_uncorrected" => &mut self.uncorrected,
            "connect" => &mut self.connect,
            "tls" => &mut self.tls,
            "waiting" => &mut self.waiting,
            "processing" => &mut self.processing,
            "connection_lifetime" => &mut self.lifetime,
            _ => return false,
        };
        *slot = Some(recorder);
        true
    }

    /// The latency, when kept and not empty.
    pub fn latency(&self) -> Option<&Recorder> {
        filled(&self.latency)
    }

    /// Each request's time from its start to its last byte: the uncorrected times of a
    /// schedule, which a closed loop's latency is. ab's tables read it, as ab measures so.
    pub fn request_times(&self) -> Option<&Recorder> {
        filled(&self.uncorrected).or_else(|| self.latency())
    }

    /// The connect times, when kept and not empty.
    pub fn connect(&self) -> Option<&Recorder> {
        filled(&self.connect)
    }

    /// The times to the first byte, when kept and not empty.
    pub fn waiting(&self) -> Option<&Recorder> {
        filled(&self.waiting)
    }
}

fn filled(r: &Option<Recorder>) -> Option<&Recorder> {
    r.as_ref().filter(|r| !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distribution_is_set_and_named_by_its_stored_name() {
        let mut h = Histograms::default();
        let mut r = Recorder::new();
        r.record(7);
        for name in Histograms::NAMES {
            assert!(h.set(name, r.clone()), "{name}");
        }
        assert!(!h.set("ttfb", r.clone()), "a name no build keeps");
        let names: Vec<&str> = h.named().map(|(n, _)| n).collect();
        assert_eq!(names, Histograms::NAMES);
        let closed = Histograms { latency: Some(r.clone()), ..Histograms::default() };
        assert_eq!(closed.request_times().map(Recorder::max), Some(7), "a closed loop's latency");
        assert!(Histograms::default().request_times().is_none());
    }
}
