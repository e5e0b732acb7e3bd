//! Hand-made cells for tests, here and in the crates that read them (feature `test-util`,
//! enabled by their dev-dependency): one builder instead of a struct literal in every test
//! module, so a field added to [`CellRecord`] is filled in once.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use loadlab_stats::Series;

use crate::model::{CellRecord, LoadSpec};

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
            histograms: BTreeMap::new(),
            series: Series::default(),
            seconds: Vec::new(),
            steps: Vec::new(),
            samples: Vec::new(),
            flags: Vec::new(),
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
