//! loadlab's suites: what a `loadlab run` measures, as data.
//!
//! - [`parse`] / [`read`]: the TOML suite format (see docs/suites.md) checked into a
//!   [`Suite`] ([`suite`]): the lab's stacks with knobs or external targets (a URL), built-in
//!   or custom workloads with their checks, loads, repetitions, warm-up, pinning and how
//!   `--quick` shrinks it. Mistakes are [`SuiteError`]s with file, line and column.
//! - [`mod@plan`]: a suite unrolled into [`Cell`]s in execution order (each repetition brings
//!   every stack up in turn: A B A B), with the stack/workload pairs it skips and why.
//! - [`estimate`]: how long a plan will take, before it runs.
//! - [`mod@builtin`]: the five classic experiments and `classic`, their short tour, embedded.
//!
//! Nothing here prints, starts a process or measures: the CLI runs the plan.

pub mod builtin;
mod error;
pub mod estimate;
mod parse;
pub mod plan;
mod raw;
pub mod suite;

pub use builtin::{builtin, load, DEFAULT};
pub use error::{Location, SuiteError};
pub use estimate::Estimate;
pub use parse::{parse, parse_sweep, read};
pub use plan::{plan, Cell, CellWorkload, Check, LoadPoint, Plan, Point, Skipped};
pub use suite::{
    CustomRequest, External, LabStack, Load, Points, Profiling, Quick, StackSource, StackSpec,
    Suite, WorkloadSpec,
};
