//! The commands the runner carries out, each from its parsed request to what the command line
//! prints: `bench`, `sweep`, `run` (a suite), `stack` and `doctor`.

pub mod bench;
pub mod doctor;
pub mod run;
pub mod sampled;
pub mod stack;
pub mod sweep;
