//! `doctor`'s layouts: its findings as text and as JSON.

use std::io::Write;

use loadlab_lab::net::{Capability, DelayPath};
use loadlab_lab::Health;
use loadlab_runner::commands::doctor::{Findings, Namespace, NsState};
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
            "ip": net.ip, "tc": net.tc,
            "namespaces": f.namespaces, "namespaces_left": f.namespaces_left(),
            "shaped_interfaces": f.shaped,
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
    write_namespaces(out, &f.namespaces)?;
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

/// loadlab's network namespaces, each with what holds it: a live one is never called a
/// leftover, since `ip netns del` on a running stack's would cut it off.
fn write_namespaces(out: &mut dyn Write, namespaces: &[Namespace]) -> std::io::Result<()> {
    if namespaces.is_empty() {
        return Ok(());
    }
    let count = |s| namespaces.iter().filter(|n| n.state == s).count();
    let (in_use, stale, left) =
        (count(NsState::InUse), count(NsState::Stale), count(NsState::Left));
    writeln!(out, "network namespaces: {in_use} in use, {stale} stale, {left} left")?;
    for ns in namespaces {
        let id = ns.instance.as_deref().unwrap_or("?");
        let said = match (ns.state, ns.health, &ns.instance) {
            (NsState::InUse, Some(h), _) => {
                format!("in use by {id} ({})", crate::stack::health_name(h))
            }
            (NsState::InUse, None, Some(_)) => {
                format!("in use by {id} (processes run in it; another state directory's)")
            }
            (NsState::InUse, None, None) => "in use by a loadlab's capability probe".into(),
            (NsState::Stale, ..) => {
                format!("of stale instance {id} (the next `loadlab stack up` removes it)")
            }
            (NsState::Left, ..) => "left, no instance holds it (`ip netns del NAME`)".into(),
        };
        writeln!(out, "  {}: {said}", ns.name)?;
    }
    Ok(())
}
