//! loadlab's lab: the classic experiments' server stacks, run from Debian's packages.
//!
//! - [`catalog`]: the built-in [`Stack`]s as data, each a list of [`Tier`]s and packages.
//! - [`servers`]: one module per server behind the [`servers::Server`] trait: config from
//!   templates, foreground command, readiness probe, captured config and versions.
//! - [`Lab`]: bringing a stack up into a private run directory on free 127.0.0.1 ports,
//!   verifying it ([`verify`]), tearing it down, and cleaning what a crashed run left.
//! - [`state`]: the records of running instances (process ids with start times).
//! - [`sampler`]: per-tier CPU, memory and process counts from /proc, every second, and
//!   how full each worker pool was ([`pools`]); [`named`]: the processes of a server the lab
//!   did not start (pids, a pidfile, a systemd unit), sampled as one tier.
//! - [`workloads`]: the deterministic files and pages the experiments request.
//! - [`net`]: network profiles, and the shaped namespace link a stack will run behind.
//! - [`cert`]: the per-instance CA and server certificate of a stack with `tls` on.
//! - [`own`]: the user's own config snippets, merged at documented include points and tested
//!   by each server's own check, and a docroot of the user's served beside the lab's files.
//!
//! Nothing here prints; errors are [`Error`]s that say which tier or workload failed.

pub mod catalog;
pub mod cert;
pub mod environment;
mod error;
mod fcgi;
mod http;
pub mod knobs;
mod lab;
pub mod named;
pub mod net;
pub mod own;
pub mod pools;
mod ports;
pub mod procfs;
pub mod programs;
mod ready;
pub mod sampler;
pub mod servers;
pub mod state;
mod supervise;
mod template;
pub mod verify;
pub mod wait;
pub mod workloads;

pub use catalog::{stack, Stack, Tier, STACKS};
pub use error::{Error, Result};
pub use knobs::{CpuList, Knobs, OnOff, Timeout};
pub use lab::{Health, Lab, Up};
pub use sampler::{Sample, Sampler};
pub use servers::Captured;
pub use state::{Record, StateDir};
