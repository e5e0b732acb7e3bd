//! `stack`'s layouts: the built-in stacks and the instances (`list`), and an instance that
//! came up (`up`), as text and as JSON.

use std::io::{self, Write};

use loadlab_lab::verify::Check;
use loadlab_lab::{Health, Knobs, Record, Sample, Up};
use serde_json::{json, Value};

/// `stack list --json`: the built-in stacks and the instances.
pub fn list_json(instances: &[(Record, Health)]) -> Value {
    let default = Knobs::default();
    {
        let stacks: Vec<_> = loadlab_lab::STACKS
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "summary": s.summary,
                    "tiers": s.tiers(&default).iter().map(|t| t.name()).collect::<Vec<_>>(),
                    "db": s.db,
                    "packages": s.packages(&default),
                    "missing": s.missing_packages(&default),
                })
            })
            .collect();
        let running: Vec<_> = instances.iter().map(|(r, h)| instance_json(r, *h)).collect();
        json!({ "stacks": stacks, "instances": running })
    }
}

/// `stack list`: the built-in stacks (tiers, packages, installed or not), then the instances.
pub fn write_list(out: &mut dyn Write, instances: &[(Record, Health)]) -> io::Result<()> {
    let default = Knobs::default();
    writeln!(out, "{:<28} {:<30} {:<9} PACKAGES", "STACK", "TIERS", "INSTALLED")?;
    for s in loadlab_lab::STACKS {
        let tiers: Vec<&str> = s.tiers(&default).iter().map(|t| t.name()).collect();
        let missing = s.missing_packages(&default);
        let installed = if missing.is_empty() { "yes" } else { "no" };
        writeln!(
            out,
            "{:<28} {:<30} {installed:<9} {}",
            s.name,
            tiers.join("+"),
            s.packages(&default).join(" ")
        )?;
        if !missing.is_empty() {
            writeln!(out, "{:<28} install with: apt-get install {}", "", missing.join(" "))?;
        }
    }
    if !instances.is_empty() {
        // Ids grow past the stacks' names (wordpress-varnish-nginx-fpm-1): the column too.
        let w = instances.iter().map(|(r, _)| r.id.len()).max().unwrap_or(0).max(28);
        writeln!(out, "\n{:<w$} {:<9} URL", "INSTANCE", "HEALTH")?;
        for (record, health) in instances {
            writeln!(out, "{:<w$} {:<9} {}", record.id, health_name(*health), record.url)?;
        }
    }
    Ok(())
}

pub fn health_name(health: Health) -> &'static str {
    match health {
        Health::Running => "running",
        Health::Starting => "starting",
        Health::Stale => "stale",
        Health::Broken => "broken",
        Health::Dead => "dead",
    }
}

/// One instance as `stack list --json` and `stack up --json` show it.
pub fn instance_json(record: &Record, health: Health) -> Value {
    let mut value = json!({
        "id": record.id,
        "name": record.stack,
        "url": record.url,
        "health": health,
        "pids": pids(record),
        "tiers": record.tiers.iter().map(|t| json!({
            "name": t.name,
            "pid": t.leader.map(|l| l.pid),
            "port": t.port,
            "socket": t.socket,
        })).collect::<Vec<_>>(),
        "run_dir": record.run_dir,
        // The instance's CA when its front speaks TLS: `loadlab bench --cacert` takes it.
        "cacert": record.cacert(),
        "knobs": record.knobs,
        // The link of a network profile: its namespace, devices, addresses, delay stage.
        "net": record.net,
    });
    // With --listen only: where the front listens, is reached, and its shaping.
    if let Some(listen) = &record.listen {
        value["listen"] = json!(listen);
    }
    value
}

/// Every live process of the instance, leaders first.
fn pids(record: &Record) -> Vec<i32> {
    let all = loadlab_lab::procfs::all();
    record
        .leaders()
        .into_iter()
        .flat_map(|l| loadlab_lab::procfs::group(l, &all))
        .map(|p| p.pid)
        .collect()
}

/// `stack up --json`: the instance, how long it took to come up, by phase, and its checks.
pub fn up_json(record: &Record, up: &Up) -> Value {
    {
        let mut value = instance_json(record, Health::Running);
        value["up_ms"] = json!(up.elapsed.as_millis() as u64);
        value["phases_ms"] = up
            .phases
            .iter()
            .map(|(name, took)| (name.clone(), json!(took.as_millis() as u64)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        value["checks"] = json!(up.report.checks);
        value
    }
}

/// `stack up`: the instance, its link, TLS and HTTP/2, and each tier's process and address.
pub fn write_up(out: &mut dyn Write, record: &Record, up: &Up, foreground: bool) -> io::Result<()> {
    {
        let phases: Vec<String> = up
            .phases
            .iter()
            .map(|(name, took)| format!("{name} {:.2}", took.as_secs_f64()))
            .collect();
        writeln!(
            out,
            "{}  {}  up and verified in {:.2} s ({} checks; {})",
            record.id,
            record.url,
            up.elapsed.as_secs_f64(),
            up.report.checks.len(),
            phases.join(", ")
        )?;
        if let Some(link) = &record.net {
            let delay = match link.delay {
                Some(path) => format!(", delay by {path}"),
                None => String::new(),
            };
            writeln!(
                out,
                "  behind --net {}: namespace {}, link {} ({}) to {}{delay}",
                record.knobs.net.as_deref().unwrap_or_default(),
                link.namespace,
                link.host_if,
                link.host_ip,
                link.ns_ip
            )?;
        }
        if let Some(ca) = record.cacert() {
            writeln!(
                out,
                "  TLS: the instance's CA is {} (loadlab bench --cacert it)",
                ca.display()
            )?;
        }
        if record.knobs.http2.is_on() {
            let how = if record.knobs.tls.is_on() { "h2 by ALPN" } else { "h2c, prior knowledge" };
            writeln!(out, "  HTTP/2: {how}, HTTP/1.1 beside it")?;
        }
        let front = record.tiers.first();
        if let Some(caddy) = front.filter(|t| matches!(t.tier, loadlab_lab::Tier::Caddy { .. })) {
            if let (true, Some(port)) = (record.knobs.tls.is_on(), caddy.port) {
                writeln!(out, "  HTTP/3: QUIC on UDP port {port}, offered by Alt-Svc")?;
            }
        }
        for tier in &record.tiers {
            let pid = tier.leader.map_or(0, |l| l.pid);
            let at = match (&tier.port, &tier.socket) {
                (Some(_), _) => record.tier_addr(tier).map(|a| a.to_string()).unwrap_or_default(),
                (None, Some(socket)) => socket.display().to_string(),
                _ => String::new(),
            };
            writeln!(out, "  {:<11} pid {pid:<8} {at}", tier.name)?;
        }
        if !foreground {
            writeln!(out, "stop it with: loadlab stack down {}", record.id)?;
        }
    }
    Ok(())
}

/// `stack sample`'s table: each sample's tiers, with the machine's busy CPU and load.
pub fn write_samples(out: &mut dyn Write, samples: &[Sample]) -> io::Result<()> {
    writeln!(
        out,
        "{:>7} {:<11} {:>7} {:>7} {:>10} {:>5} {:>6} {:>5}",
        "t", "tier", "user%", "sys%", "rss", "procs", "cpu%", "load1"
    )?;
    for s in samples {
        for t in &s.tiers {
            let (busy, load) = s.machine.as_ref().map_or((0.0, 0.0), |m| (m.cpu_busy_pct, m.load1));
            writeln!(
                out,
                "{:>6.1}s {:<11} {:>7.1} {:>7.1} {:>10} {:>5} {:>6.1} {:>5.2}",
                s.t_ms as f64 / 1000.0,
                t.tier,
                t.cpu_user_pct,
                t.cpu_sys_pct,
                loadlab_stats::format::bytes(t.rss_bytes as f64),
                t.processes,
                busy,
                load
            )?;
        }
    }
    Ok(())
}

/// `stack verify`'s lines: each check, ok or FAIL, with its workload and what was seen.
pub fn write_checks(out: &mut dyn Write, checks: &[Check]) -> io::Result<()> {
    for check in checks {
        let mark = if check.ok { "ok  " } else { "FAIL" };
        writeln!(out, "{mark} {:<12} {}", check.workload, check.detail)?;
    }
    Ok(())
}
