//! The judgements the commands make of a run: whether its figures can be trusted, what limited
//! it, whether its connections fit the client, its SLO gate, whether a suite can tell its
//! differences apart, each second of a changing load, and which class of failure an error is.

pub mod capacity;
pub mod class;
pub mod limit;
pub mod power;
pub mod seconds;
pub mod slo;
pub mod trust;

#[cfg(test)]
mod trust_tests;
