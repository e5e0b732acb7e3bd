//! loadlab's decisions, between the engine and lab below and the CLI's printing above.
//!
//! - [`bench`](mod@bench): one load test from its parsed flags to the judged result ([`bench::run`]).
//! - [`advice`]: what to do when a run cannot start (the lab's CA for its TLS instances).
//! - [`trust`]: the one trust verdict. [`trust::Verdict::judge`] turns a run's figures into
//!   flags with their evidence; `bench`, `sweep`, `run` and so the report all show it;
//!   [`trust::counted`] is what a run counts, as its findings and live line name it.
//! - [`executor`]: a suite's plan, cell by cell, stack instance by stack instance (the lab's,
//!   or external targets), each cell judged and stored as it ends ([`executor::run_plan`]).
//! - [`found`]: a view workload's page and resources, found once per stack instance.
//! - [`suite`]: a suite run's preparation and finish around the executor (overrides, checks,
//!   the store's record, the report, how the run ends).
//! - [`verify`]: a workload's answer checked through the engine before its cells: an external
//!   target's verify, and a custom workload's on a lab stack.
//! - [`sweep`]: the offered-rate sweep and its knee ([`sweep::run_sweep`]); [`ramp`] the knee
//!   from one rising ramp, judged second by second by the same rule.
//! - [`limit`]: what limited a lab cell: the client, the network, a tier, a pool, the offer.
//! - [`cell`]: what the store keeps of a measured cell.
//! - [`lost`]: a cell stopped at once when its stack goes out of reach (a lab host lost).
//! - [`class`]: which class of failure (and so exit code) each library error is.
//! - [`merge`]: agents' interval logs read, added and written as one.
//! - [`capacity`]: whether a run's connections fit the client's descriptors, ports, memory.
//! - [`habits`]: other tools' flags on a `bench` line, refused where loadlab would read them
//!   as another test.
//! - [`doctor`]: what `doctor` finds of the machine and the lab, and what to change.
//! - [`slo`]: the SLO gate's figures from a run's result.
//! - [`stored`]: the store and run that `report`, `runs` and `compare` read.
//! - [`seconds`]: the figures and flags of every second of a load that changes over time.
//! - [`values`]: flag values beyond numbers (levels, shapes, rate lists, SLOs) parsed.
//! - [`stack`]: `loadlab stack`'s sequences: up held or detached, the remote end of a
//!   `--host` session, sampling, and which way a `stack down` goes.
//!
//! What measures, what stands stacks up and who is told are traits
//! ([`executor::Measure`], [`executor::Stacks`], [`executor::Events`]), so everything here is
//! tested in process with fakes.

pub mod advice;
pub mod bench;
pub mod capacity;
pub mod cell;
pub mod class;
pub mod doctor;
pub mod executor;
pub mod found;
pub mod habits;
pub mod limit;
pub mod lost;
pub mod merge;
pub mod power;
pub mod ramp;
pub mod remote;
pub mod seconds;
pub mod slo;
pub mod stack;
pub mod stored;
pub mod suite;
pub mod sweep;
pub mod sweep_agents;
pub mod sweep_plan;
pub mod trust;
pub mod values;
pub mod verify;

pub use executor::{run_plan, Events, Measure, RunContext, RunError, Stacks};
pub use trust::{Finding, Flag, Verdict};

#[cfg(test)]
mod external_tests;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;
#[cfg(test)]
mod visit_tests;
