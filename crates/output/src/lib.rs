//! loadlab's results in the layouts the command line prints, each written to any
//! [`std::io::Write`], so that what a run decided is shown the same wherever it is shown (the
//! terminal, a file, an agent's report home). Nothing here decides: every figure, flag and
//! limit comes judged from the runner.
//!
//! - [`bench`](mod@bench): one `bench` run as text, JSON, ApacheBench's and httperf's layouts, or CSV;
//!   its latency spectrum and interval log as files.
//! - [`sweep`]: the sweep's table, its knee lines and autobench's CSV.
//! - [`stack`]: the lab's stacks and instances, as `stack list` and `stack up` show them.
//! - [`suite`]: `loadlab run`'s plan, progress lines and end.
//! - [`doctor`]: doctor's findings as text and JSON.
//! - [`cells`]: a stored run's cells as CSV.
//! - [`profile`]: a cell's or a sample's profiles, each tier's top functions.
//! - [`usage`]: a command line clap refused, as one line.

pub mod bench;
pub mod cells;
pub mod doctor;
pub mod profile;
pub mod stack;
pub mod suite;
pub mod sweep;
pub mod usage;
