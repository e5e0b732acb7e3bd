//! loadlab's decisions, between the engine and lab below and the CLI's printing above, by what
//! they do: the commands carried out, the judgements made of a run, and several hosts together.
//!
//! - [`commands`]: what each command carries out.
//!   - [`commands::bench`]: one load test from its parsed flags to the judged result
//!     ([`commands::bench::run`]); [`commands::bench::habits`] other tools' flags on a
//!     `bench` line, refused where loadlab would read them as another test.
//!   - [`commands::sweep`]: the offered-rate sweep and its knee
//!     ([`commands::sweep::run_sweep`]); [`commands::sweep::ramp`] the knee from one rising
//!     ramp, judged second by second by the same rule; [`commands::sweep::plan`] its steps.
//!   - [`commands::run`]: a suite run's preparation and finish around the executor
//!     (overrides, checks, the store's record, the report, how the run ends), with
//!     [`commands::run::executor`] (the plan, cell by cell, stack instance by stack instance,
//!     each cell judged and stored as it ends: [`run_plan`]), [`commands::run::verify`] (a
//!     workload's answer checked before its cells), [`commands::run::found`] (a view
//!     workload's page and resources), [`commands::run::cell`] (what the store keeps of a
//!     measured cell), [`commands::run::lost`] (a cell stopped when its stack goes out of
//!     reach) and [`commands::run::stored`] (the store and run that `report`, `runs` and
//!     `compare` read).
//!   - [`commands::stack`]: `loadlab stack`'s sequences: up held or detached, the remote end
//!     of a `--host` session, sampling, and which way a `stack down` goes.
//!   - [`commands::doctor`]: what `doctor` finds of the machine and the lab, and what to change.
//! - [`judge`]: the judgements made of a run.
//!   - [`judge::trust`]: the one trust verdict. [`judge::trust::Verdict::judge`] turns a run's
//!     figures into flags with their evidence; `bench`, `sweep`, `run` and so the report all
//!     show it.
//!   - [`judge::limit`]: what limited a lab cell: the client, the network, a tier, a pool, the
//!     offer.
//!   - [`judge::capacity`]: whether a run's connections fit the client's descriptors, ports,
//!     memory.
//!   - [`judge::slo`]: the SLO gate's figures from a run's result.
//!   - [`judge::power`]: whether a suite's plan can tell its stacks apart.
//!   - [`judge::seconds`]: the figures and flags of every second of a load that changes over
//!     time.
//!   - [`judge::class`]: which class of failure (and so exit code) each library error is.
//! - [`hosts`]: several hosts together.
//!   - [`hosts::session`]: stacks on other lab hosts (`--host`), for the executor;
//!     [`hosts::facts`] what a run keeps of a lab host and of the path to it.
//!   - [`hosts::agent`], [`hosts::agent_flags`], [`hosts::fleet`], [`hosts::across`],
//!     [`hosts::sweep_agents`]: one test or sweep run from many agent hosts, their flags,
//!     their start through ssh, and what their report adds; [`hosts::merge`] agents' interval
//!     logs read, added and written as one.
//! - [`advice`]: what to do when a run cannot start (the lab's CA for its TLS instances).
//! - [`values`]: flag values beyond numbers (levels, shapes, rate lists, SLOs) parsed.
//!
//! What measures, what stands stacks up and who is told are traits
//! ([`Measure`], [`Stacks`], [`Events`]), so everything here is tested in process with fakes.

pub mod advice;
pub mod commands;
pub mod hosts;
pub mod judge;
pub mod values;

pub use commands::run::executor::{run_plan, Events, Measure, RunContext, RunError, Stacks};
pub use judge::trust::{Finding, Flag, Verdict};

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;
