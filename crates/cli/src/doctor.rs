//! `loadlab doctor`: what is installed of the lab's packages, the limits that bound a load
//! test (open files, ephemeral ports, listen backlog), the CPUs, and stale lab instances.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use loadlab_lab::net::{Capability, DelayPath};
use loadlab_lab::{programs, Health, Knobs, Lab, Record};
use loadlab_runner::capacity::Limits;
use serde_json::json;

use crate::exit::lab_failure;
use crate::exit::OK;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Below this many open files a load test of a few thousand connections runs out.
const FEW_FILES: u64 = 10_000;
/// Below this many ephemeral ports, connections-per-request tests exhaust them (TIME_WAIT).
const FEW_PORTS: u64 = 10_000;

/// What doctor found, gathered once for either layout.
struct Findings {
    lab: Lab,
    /// Each program the lab may need: its package, its name, where it is installed.
    packages: Vec<(&'static str, &'static str, Option<PathBuf>)>,
    runnable: Vec<&'static str>,
    missing: Vec<&'static str>,
    limits: Limits,
    instances: Vec<(Record, Health)>,
    stale: Vec<String>,
    /// Network profiles: what the kernel takes, tried in a throwaway namespace (as root).
    net: Capability,
    net_left: Vec<String>,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<u8> {
    let found = find()?;
    let warnings = warnings(&found);
    if args.json {
        writeln!(std::io::stdout(), "{:#}", json(&found, &warnings))?;
    } else {
        text(&mut std::io::stdout().lock(), &found, &warnings)?;
    }
    Ok(OK)
}

fn find() -> anyhow::Result<Findings> {
    let lab = Lab::from_env().map_err(lab_failure)?;
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
    let instances = lab.instances().map_err(lab_failure)?;
    let stale = lab.stale().map_err(lab_failure)?;
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
fn warnings(f: &Findings) -> Vec<String> {
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

fn json(f: &Findings, warnings: &[String]) -> serde_json::Value {
    let (l, net) = (&f.limits, &f.net);
    json!({
        "packages": f.packages.iter().map(|(package, name, path)| json!({
            "package": package, "needs": name, "path": path, "installed": path.is_some(),
        })).collect::<Vec<_>>(),
        "stacks_runnable": f.runnable,
        "open_files": { "soft": l.open_files.0, "hard": l.open_files.1 },
        "ephemeral_ports": { "range": l.port_range, "count": l.ports },
        "somaxconn": l.somaxconn,
        "cpus": { "available": l.cpus_available, "online": l.cpus_online },
        "state_dir": f.lab.state().root(),
        "run_dir": f.lab.state().run_root(),
        "instances": f.instances.iter().map(|(r, h)| json!({
            "id": r.id, "url": r.url, "health": h,
        })).collect::<Vec<_>>(),
        "stale": f.stale,
        "network_profiles": {
            "shaping": net.shaping(), "delay": net.delay(), "delay_path": net.delay_path(),
            "netem": net.netem,
            "tun": net.tun, "tbf": net.tbf, "root": net.root,
            "ip": net.ip, "tc": net.tc, "namespaces_left": f.net_left,
        },
        "warnings": warnings,
    })
}

fn text(out: &mut dyn Write, f: &Findings, warnings: &[String]) -> std::io::Result<()> {
    writeln!(out, "packages:")?;
    for (package, name, path) in &f.packages {
        let at = path.as_ref().map_or("missing".to_string(), |p| p.display().to_string());
        writeln!(out, "  {package:<32} {name:<20} {at}")?;
    }
    let l = &f.limits;
    let stacks = loadlab_lab::STACKS.len();
    writeln!(out, "stacks that can run: {} of {stacks}", f.runnable.len())?;
    writeln!(out, "open files:      {} (hard {})", l.open_files.0, l.open_files.1)?;
    writeln!(out, "ephemeral ports: {} ({} ports)", l.port_range, l.ports.unwrap_or(0))?;
    writeln!(out, "listen backlog:  somaxconn {}", l.somaxconn)?;
    writeln!(
        out,
        "CPUs:            {} available to loadlab, {} online",
        l.cpus_available, l.cpus_online
    )?;
    writeln!(out, "state directory: {}", f.lab.state().root().display())?;
    writeln!(out, "run directories: {}", f.lab.state().run_root().display())?;
    let running = f.instances.iter().filter(|(_, h)| *h == Health::Running).count();
    writeln!(out, "instances:       {running} running, {} stale or dead", f.stale.len())?;
    for id in &f.stale {
        writeln!(out, "  {id}: stale (the next `loadlab stack up` removes it)")?;
    }
    writeln!(out, "network shaping: {}", shaping(&f.net))?;
    for warning in warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}

/// What the kernel and this process allow of a network profile's shaping, and why not.
fn shaping(net: &Capability) -> String {
    let why = if net.shaping() {
        ""
    } else if !net.root {
        " (needs root)"
    } else if net.ip.is_none() || net.tc.is_none() {
        " (needs iproute2: ip and tc)"
    } else {
        " (the kernel took no tbf qdisc)"
    };
    let delay = match (net.delay_path(), net.tun) {
        (Some(DelayPath::Netem), true) => {
            "yes, by netem (via=stage: loadlab's delay stage instead)"
        }
        (Some(DelayPath::Netem), false) => {
            "yes, by netem (no /dev/net/tun for loadlab's delay stage)"
        }
        (Some(DelayPath::Stage), _) => {
            "yes, by loadlab's delay stage (netem no: the kernel has no CONFIG_NET_SCH_NETEM)"
        }
        (None, false) => "no: no netem in the kernel, no /dev/net/tun for the delay stage",
        (None, true) => "no",
    };
    let bandwidth = if net.shaping() { "yes" } else { "no" };
    format!("bandwidth {bandwidth}{why}; delay and loss {delay}")
}
