//! What the tests share: the synthetic run, and rendering it from a store file.

pub mod chromium;
pub mod synthetic;

use std::path::Path;

use loadlab_report::render_html;
use loadlab_store::{CellRecord, RunProfiles, Store};

/// The synthetic run stored at `db`, read back and rendered, as `loadlab report` would.
pub fn report_from_store(db: &Path) -> String {
    report_of(db, synthetic::cells(), &RunProfiles::new())
}

/// A run of `cells` (with the synthetic run's environment and configs) and `profiles` (by
/// the cells' ordinals) stored at `db`, read back and rendered.
pub fn report_of(db: &Path, cells: Vec<CellRecord>, profiles: &RunProfiles) -> String {
    let run = synthetic::store_run(db, cells, profiles);
    let store = Store::open(db).expect("reopen the store");
    let cells = store.cells(run).expect("read the cells");
    let configs = store.configs(run).expect("read the configs");
    let profiles = store.run_profiles(run).expect("read the profiles");
    render_html(&store.run(run).expect("read the run"), &cells, &configs, &profiles)
}
