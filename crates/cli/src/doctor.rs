//! `loadlab doctor`: what is installed of the lab's packages, the limits that bound a load
//! test (open files, ephemeral ports, listen backlog), the CPUs, and stale lab instances.

use std::io::Write;

use clap::Args;
use loadlab_lab::net::DelayPath;
use loadlab_lab::{programs, Health, Knobs, Lab};
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

pub fn run(args: DoctorArgs) -> anyhow::Result<u8> {
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
    let limits = loadlab_runner::capacity::Limits::here();
    let (soft, hard) = limits.open_files;
    let (ports, port_count, somaxconn) = (&limits.port_range, limits.ports, &limits.somaxconn);
    let (cpus, online) = (limits.cpus_available, limits.cpus_online);
    let instances = lab.instances().map_err(lab_failure)?;
    let stale = lab.stale().map_err(lab_failure)?;
    // Network profiles: what the kernel takes, tried in a throwaway namespace (as root).
    let net = loadlab_lab::net::capability();
    let net_left = loadlab_lab::net::namespaces();
    let mut warnings = Vec::new();
    if !net_left.is_empty() {
        warnings.push(format!(
            "network namespaces left by loadlab: {} (remove with `ip netns del NAME`)",
            net_left.join(" ")
        ));
    }
    if soft < FEW_FILES {
        warnings.push(format!(
            "open files limit {soft}: load tests need one per connection; raise it with \
             `ulimit -n {}`",
            hard.min(1 << 20)
        ));
    }
    if port_count.is_some_and(|n| n < FEW_PORTS) {
        warnings.push(format!("only {} ephemeral ports ({ports})", port_count.unwrap_or(0)));
    }
    if !missing.is_empty() {
        warnings.push(format!("missing packages: apt-get install {}", missing.join(" ")));
    }
    if args.json {
        let value = json!({
            "packages": packages.iter().map(|(package, name, path)| json!({
                "package": package, "needs": name, "path": path, "installed": path.is_some(),
            })).collect::<Vec<_>>(),
            "stacks_runnable": runnable,
            "open_files": { "soft": soft, "hard": hard },
            "ephemeral_ports": { "range": ports, "count": port_count },
            "somaxconn": somaxconn,
            "cpus": { "available": cpus, "online": online },
            "state_dir": lab.state().root(),
            "run_dir": lab.state().run_root(),
            "instances": instances.iter().map(|(r, h)| json!({
                "id": r.id, "url": r.url, "health": h,
            })).collect::<Vec<_>>(),
            "stale": stale,
            "network_profiles": {
                "shaping": net.shaping(), "delay": net.delay(), "delay_path": net.delay_path(),
                "netem": net.netem,
                "tun": net.tun, "tbf": net.tbf, "root": net.root,
                "ip": net.ip, "tc": net.tc, "namespaces_left": net_left,
            },
            "warnings": warnings,
        });
        writeln!(std::io::stdout(), "{value:#}")?;
        return Ok(OK);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "packages:")?;
    for (package, name, path) in &packages {
        let at = path.as_ref().map_or("missing".to_string(), |p| p.display().to_string());
        writeln!(out, "  {package:<32} {name:<20} {at}")?;
    }
    writeln!(out, "stacks that can run: {} of {}", runnable.len(), loadlab_lab::STACKS.len())?;
    writeln!(out, "open files:      {soft} (hard {hard})")?;
    writeln!(out, "ephemeral ports: {ports} ({} ports)", port_count.unwrap_or(0))?;
    writeln!(out, "listen backlog:  somaxconn {somaxconn}")?;
    writeln!(out, "CPUs:            {cpus} available to loadlab, {online} online")?;
    writeln!(out, "state directory: {}", lab.state().root().display())?;
    writeln!(out, "run directories: {}", lab.state().run_root().display())?;
    let running = instances.iter().filter(|(_, h)| *h == Health::Running).count();
    writeln!(out, "instances:       {running} running, {} stale or dead", stale.len())?;
    for id in &stale {
        writeln!(out, "  {id}: stale (the next `loadlab stack up` removes it)")?;
    }
    let why = if net.shaping() {
        String::new()
    } else if !net.root {
        " (needs root)".to_string()
    } else if net.ip.is_none() || net.tc.is_none() {
        " (needs iproute2: ip and tc)".to_string()
    } else {
        " (the kernel took no tbf qdisc)".to_string()
    };
    writeln!(
        out,
        "network shaping: bandwidth {}{why}; delay and loss {}",
        if net.shaping() { "yes" } else { "no" },
        match (net.delay_path(), net.tun) {
            (Some(DelayPath::Netem), true) => {
                "yes, by netem (via=stage: loadlab's delay stage instead)"
            }
            (Some(DelayPath::Netem), false) => {
                "yes, by netem (no /dev/net/tun for loadlab's delay stage)"
            }
            (Some(DelayPath::Stage), _) => {
                "yes, by loadlab's delay stage (netem no: the kernel has no \
                 CONFIG_NET_SCH_NETEM)"
            }
            (None, false) => "no: no netem in the kernel, no /dev/net/tun for the delay stage",
            (None, true) => "no",
        }
    )?;
    for warning in &warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(OK)
}
