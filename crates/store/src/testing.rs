//! Hand-made cells for tests, here and in the crates that read them (feature `test-util`,
//! enabled by their dev-dependency): one builder instead of a struct literal in every test
//! module, so a field added to [`CellRecord`] is filled in once.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use loadlab_stats::Series;

use crate::model::{CellRecord, LoadSpec};
use crate::profile::ProfileRecord;
use crate::HostFacts;

impl CellRecord {
    /// A cell of `stack` on `workload` under `load` with nothing measured: ordinal and
    /// repetition 0, 10 s measured from the epoch, no knobs, flags, limit or SLO. A test sets
    /// what it looks at, by struct update (`CellRecord { repetition: 2, ..for_test(...) }`) or
    /// [`CellRecord::with_metrics`].
    pub fn for_test(stack: &str, workload: &str, load: LoadSpec) -> CellRecord {
        CellRecord {
            ordinal: 0,
            stack: stack.to_owned(),
            knobs: BTreeMap::new(),
            workload: workload.to_owned(),
            load,
            repetition: 0,
            started_at: UNIX_EPOCH,
            duration_s: 10.0,
            metrics: BTreeMap::new(),
            histograms: Default::default(),
            series: Series::default(),
            seconds: Vec::new(),
            steps: Vec::new(),
            samples: Vec::new(),
            flags: Vec::new(),
            counted: None,
            limited_by: None,
            slo: None,
        }
    }

    /// The cell with exactly these named figures (see [`metric`](crate::metric)).
    pub fn with_metrics(mut self, metrics: &[(&str, f64)]) -> CellRecord {
        self.metrics = metrics.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        self
    }
}

impl HostFacts {
    /// A lab host `ssh://root@lab2` with every fact known: 8 EPYC CPUs, 16 GiB, nginx 1.22,
    /// eth1 to eth0 at 1000 Mbit/s, 61 µs idle.
    pub fn for_test() -> HostFacts {
        HostFacts {
            host: "ssh://root@lab2".into(),
            hostname: "lab2".into(),
            kernel: "6.1.0".into(),
            cpu_model: "EPYC".into(),
            cpu_count: 8,
            memory_bytes: 16 << 30,
            packages: [("nginx".to_string(), "1.22".to_string())].into(),
            server_nic: Some("eth0".into()),
            server_nic_mbps: Some(1000),
            client_nic: Some("eth1".into()),
            client_nic_mbps: Some(1000),
            idle_rtt_us: Some(61),
        }
    }
}

impl ProfileRecord {
    /// `tier`'s profile of `folded`, its samples counted from it, none lost, at perf's 99 Hz.
    pub fn for_test(tier: &str, folded: &str) -> ProfileRecord {
        let samples =
            folded.lines().filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<u64>().ok()).sum();
        ProfileRecord {
            tier: tier.to_owned(),
            folded: folded.to_owned(),
            samples,
            lost: 0,
            interval_us: 10_101,
        }
    }

    /// A tier's profile that draws a larger flame graph than any real one measured, for
    /// bounding what a report of profiles weighs: a call tree of long-named functions two
    /// callees wide and 6 deep, each of its 64 paths going on 2 frames deeper with 0.5% to 1.7%
    /// of the samples (so all 254 of its frames are wide enough to be drawn), under a root of
    /// `tier`, and besides them `tail` paths 20 frames deep of one sample each (too narrow to
    /// draw, as most of a real profile's are). The same `seed` gives the same counts.
    pub fn dense_for_test(tier: &str, tail: usize, seed: u64) -> ProfileRecord {
        // A 64-bit LCG (Knuth's MMIX constants).
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let frame = |level: u64, i: u64| format!(";{tier}_module_{level}::handler_number_{i}");
        let mut folded = String::new();
        for path in 0..64u64 {
            folded.push_str(tier);
            for level in 0..6 {
                folded.push_str(&frame(level, path >> (5 - level)));
            }
            folded.push_str(&frame(6, path));
            folded.push_str(&frame(7, path));
            folded.push_str(&format!(" {}\n", 20 + next() % 41));
        }
        for i in 0..tail as u64 {
            folded.push_str(tier);
            for level in 0..20 {
                folded.push_str(&frame(level, 1_000 + i * 20 + level));
            }
            folded.push_str(" 1\n");
        }
        ProfileRecord::for_test(tier, &folded)
    }
}
