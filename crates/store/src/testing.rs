//! Hand-made cells for tests, here and in the crates that read them (feature `test-util`,
//! enabled by their dev-dependency): one builder instead of a struct literal in every test
//! module, so a field added to [`CellRecord`] is filled in once.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use loadlab_stats::Series;

use crate::model::{CellRecord, LoadSpec};
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
