//! loadlab's lab: the classic experiments' server stacks, run from Debian's packages.
//!
//! Data first, behaviour on top: the data modules import no behaviour, and behaviour imports
//! data (no module reaches back up).
//!
//! Data:
//! - [`catalog`]: the built-in [`Stack`]s, each a list of [`tier`]s and packages; [`knobs`]:
//!   the settings an experiment varies; [`includes`]: the user's own config files, by the
//!   include point each fills.
//! - [`plan`]: everything an instance's configs are generated from, and its run directory's
//!   layout; [`state`]: the records of running instances (process ids with start times).
//! - [`workloads`]: the deterministic files and pages the experiments request; [`visits`]:
//!   the built-in visits of the WordPress stacks, and the values an instance gives them.
//!
//! Behaviour:
//! - [`servers`]: one module per server behind the [`servers::Server`] trait: config from
//!   templates, foreground command, readiness probe; [`capture`]: their effective config and
//!   versions.
//! - [`Lab`]: bringing a stack up into a private run directory on free 127.0.0.1 ports,
//!   verifying it ([`verify`]), tearing it down, and cleaning what a crashed run left.
//! - [`profiler`]: each tier's on-CPU stacks over a cell (perf), folded.
//! - [`sampler`]: per-tier CPU, memory and process counts from /proc, every second, and
//!   how full each worker pool was ([`pools`]); [`named`]: the processes of a server the lab
//!   did not start (pids, a pidfile, a systemd unit), sampled as one tier.
//! - [`cert`]: the per-instance CA and server certificate of a stack with `tls` on.
//! - [`own`]: the user's own config snippets, merged at documented include points and tested
//!   by each server's own check, and a docroot of the user's served beside the lab's files.
//! - The system calls are in one private module (`sys`), behind safe wrappers.
//!
//! Crates of their own, re-exported under their old names: [`net`] (`loadlab-net`: network
//! profiles, and the shaped namespace link a stack will run behind) and [`programs`]
//! (`loadlab-programs`: finding programs and the packages that provide them).
//!
//! Nothing here prints; errors are [`Error`]s that say which tier or workload failed.

pub mod capture;
pub mod catalog;
pub mod cert;
pub mod environment;
mod error;
mod fcgi;
pub mod includes;
pub mod knobs;
mod lab;
pub mod named;
pub mod own;
pub mod plan;
pub mod pools;
mod ports;
pub mod procfs;
pub mod profiler;
mod ready;
pub mod sampler;
pub mod servers;
pub mod state;
mod supervise;
mod sys;
mod template;
pub mod tier;
pub mod verify;
pub mod visits;
pub mod wait;
pub mod workloads;

pub use capture::Captured;
pub use catalog::{stack, Stack, Tier, STACKS};
pub use error::{Error, Result};
pub use knobs::{CpuList, Knobs, OnOff, Timeout};
pub use lab::{Health, Lab, Up};
/// The network profiles, a crate of their own; here under the name the lab has always used.
pub use loadlab_net as net;
/// Finding programs and their packages, a crate of its own shared with [`net`].
pub use loadlab_programs as programs;
pub use sampler::{Sample, Sampler};
pub use state::{Record, StateDir};
