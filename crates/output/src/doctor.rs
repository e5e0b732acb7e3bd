//! `doctor`'s layouts: its findings as text and as JSON.

use std::io::Write;

use loadlab_lab::net::{Capability, DelayPath};
use loadlab_lab::Health;
use loadlab_runner::doctor::Findings;
use serde_json::json;

/// `doctor --json`.
pub fn json(f: &Findings, warnings: &[String]) -> serde_json::Value {
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

/// `doctor`'s text.
pub fn write_text(out: &mut dyn Write, f: &Findings, warnings: &[String]) -> std::io::Result<()> {
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
