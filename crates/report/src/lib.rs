//! loadlab's report: from a stored run to a verdict a person can act on.
//!
//! - [`verdict`] groups a run's cells by workload and load, gives each stack's medians over
//!   repetitions with 95% confidence intervals (req/s, p50, p99), names the winner with the
//!   ratio of medians and its interval, tests significance (Mann-Whitney U, `~` at α = 0.05),
//!   and carries every warning: underpowered comparisons, outlying repetitions, trust flags.
//! - [`gate`] gathers each stack's SLO verdict (`run --slo`), judged over its repetitions by
//!   [`slo`].
//! - `limit.rs` reads what limited each stored cell (the runner's decision): a winner is
//!   withheld when a repetition's limit was the client or the network.
//! - [`measure`]: the measures compared (rate, p50, p99), their metrics and names;
//!   [`counted`] tells what a workload's cells count (requests, page views, visits), so that
//!   a view or visit workload is compared, headed and shown in views/s or visits/s.
//! - [`requests`] gives each request of a URL list workload its figures over repetitions;
//!   [`views`] a view workload's views/s and page-load percentiles; [`visits`] a visit
//!   workload's visits/s, visit duration and per-step table.
//! - [`text`] prints the verdict as a terminal table and compares two runs benchstat-style
//!   (`loadlab compare RUN_A RUN_B`).
//! - [`render_html`] writes the whole report as one self-contained HTML file: inline CSS and
//!   SVG charts, no script and no external URL, so it opens offline and can be mailed.
//!   `plots.rs` decides what to plot from the cells (`per_second.rs`: a changing load's
//!   seconds), `charts.rs` draws it with plotters (SVG
//!   backend only, no font features, so no fontconfig), `html/` puts the page together and
//!   escapes all text (its verdict table, cells and environment sections each a module of
//!   their own); each cell's figures are shown in ab's and httperf's layouts from [`layout`].
//! - [`profile`] reads a run's stored profiles: each stack's tiers in a group, merged over
//!   its profiled repetitions, the functions where their samples went, and the difference
//!   between two stacks of a group (a table of shares and the largest differences in words);
//!   `flame.rs` draws them as flame graphs with inferno, cut down to SVG a page can inline,
//!   and `html/profiles.rs` puts them on the page.
//! - [`layout`] writes ApacheBench's and httperf's layouts, once, over one value
//!   ([`layout::Figures`]) that a stored cell gives here and a live `bench` gives in the
//!   output crate.
//!
//! It reads only the store's data types ([`loadlab_store`]); it knows nothing of the engine
//! or the lab, and does no I/O.

mod charts;
pub mod counted;
mod flame;
pub mod profile;
pub use loadlab_stats::format;
pub mod gate;
pub mod group;
mod html;
pub mod layout;
mod limit;
pub mod measure;
mod per_second;
mod plots;
pub mod requests;
pub mod slo;
pub mod text;
pub mod verdict;
pub mod views;
pub mod visits;

#[cfg(test)]
mod testcell;

pub use html::render_html;
pub use text::{compare_runs, compare_table, regression_gate, verdict_table, Gate, RunDelta};
pub use verdict::{
    profiled_verdicts, verdicts, Comparison, Figure, GroupVerdict, Measure, StackSummary, Warning,
};
