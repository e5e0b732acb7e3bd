//! `doctor`'s findings: what is installed of the lab's packages, which stacks can run, the
//! limits that bound a load test (through [`crate::capacity::Limits`], the probes a run's
//! capacity check uses), the lab's instances, what the kernel allows of network profiles, and
//! what the user should change.

use std::path::PathBuf;

use loadlab_lab::net::Capability;
use loadlab_lab::{programs, Health, Knobs, Lab, Record};

use crate::capacity::Limits;

/// Below this many open files a load test of a few thousand connections runs out.
const FEW_FILES: u64 = 10_000;
/// Below this many ephemeral ports, connections-per-request tests exhaust them (TIME_WAIT).
const FEW_PORTS: u64 = 10_000;

/// What doctor found, gathered once for either layout.
#[derive(Debug)]
pub struct Findings {
    pub lab: Lab,
    /// Each program the lab may need: its package, its name, where it is installed.
    pub packages: Vec<(&'static str, &'static str, Option<PathBuf>)>,
    pub runnable: Vec<&'static str>,
    pub missing: Vec<&'static str>,
    pub limits: Limits,
    pub instances: Vec<(Record, Health)>,
    pub stale: Vec<String>,
    /// Network profiles: what the kernel takes, tried in a throwaway namespace (as root).
    pub net: Capability,
    pub net_left: Vec<String>,
}

/// This machine and the lab's state now.
pub fn find() -> Result<Findings, loadlab_lab::Error> {
    let lab = Lab::from_env()?;
    let packages: Vec<_> =
        programs::ALL.iter().map(|need| (need.package, need.name(), need.path())).collect();
    let default = Knobs::default();
    let runnable: Vec<&str> = loadlab_lab::STACKS
        .iter()
        .filter(|s| s.missing_packages(&default).is_empty())
        .map(|s| s.name)
        .collect();
    let mut missing: Vec<&str> = packages.iter().filter(|p| p.2.is_none()).map(|p| p.0).collect();
    missing.dedup();
    let instances = lab.instances()?;
    let stale = lab.stale()?;
    Ok(Findings {
        lab,
        packages,
        runnable,
        missing,
        limits: Limits::here(),
        instances,
        stale,
        net: loadlab_lab::net::capability(),
        net_left: loadlab_lab::net::namespaces(),
    })
}

/// What the user should change: leftovers, limits too low for load tests, missing packages.
pub fn warnings(f: &Findings) -> Vec<String> {
    let (soft, hard) = f.limits.open_files;
    let mut warnings = Vec::new();
    if !f.net_left.is_empty() {
        warnings.push(format!(
            "network namespaces left by loadlab: {} (remove with `ip netns del NAME`)",
            f.net_left.join(" ")
        ));
    }
    if soft < FEW_FILES {
        warnings.push(format!(
            "open files limit {soft}: load tests need one per connection; raise it with \
             `ulimit -n {}`",
            hard.min(1 << 20)
        ));
    }
    if f.limits.ports.is_some_and(|n| n < FEW_PORTS) {
        let (n, range) = (f.limits.ports.unwrap_or(0), &f.limits.port_range);
        warnings.push(format!("only {n} ephemeral ports ({range})"));
    }
    if !f.missing.is_empty() {
        warnings.push(format!("missing packages: apt-get install {}", f.missing.join(" ")));
    }
    warnings
}
