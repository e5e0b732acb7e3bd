//! The report's environment section: the client host (and any lab host with the path to
//! it), the link each stack was measured across, who answered at an external target's URL,
//! the packages, and every captured config.

use std::fmt::Write;

use loadlab_store::{CellRecord, ConfigRecord, HostFacts, Identity, Run};

use crate::format;

use super::Esc;

/// A captured config longer than this is cut in the report (the store keeps it whole): one
/// distribution php.ini would otherwise outweigh every chart.
const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// The external targets (stacks stored with a `url`, not the lab's) none of whose cells has
/// a sample, in the order they first appear.
pub(super) fn unsampled_externals(cells: &[CellRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cells.iter().filter(|c| is_external(c)) {
        let sampled = cells.iter().any(|o| o.stack == c.stack && !o.samples.is_empty());
        if !sampled && !out.contains(&c.stack) {
            out.push(c.stack.clone());
        }
    }
    out
}

/// Whether the cell measured a server of the user's (an external target): its stored
/// settings are its URL, not the lab's knobs.
fn is_external(c: &CellRecord) -> bool {
    c.knobs.contains_key("url")
}

/// Which link each lab stack was measured across: its `net` knob (with what carried its delay,
/// `net_delay`, when the lab recorded it), or loopback. One line per profile, naming the stacks
/// behind it. External targets are described by their identity.
fn networks(cells: &[CellRecord]) -> Vec<(String, Vec<String>)> {
    let mut by_profile: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for c in cells.iter().filter(|c| !is_external(c)) {
        let knob = |k: &str| c.knobs.get(k).and_then(|v| v.as_str());
        let profile = match (knob("net"), knob("net_delay"), knob("host")) {
            (None, _, None) => "loopback (no link in between)".to_string(),
            (None, _, Some(host)) => format!("the path to {host}"),
            (Some(net), None, None) => format!("--net {net}"),
            (Some(net), None, Some(host)) => format!("--net {net} to {host}"),
            (Some(net), Some(path), None) => format!("--net {net} (delay by {path})"),
            (Some(net), Some(path), Some(host)) => {
                format!("--net {net} to {host} (delay by {path})")
            }
        };
        let stacks = by_profile.entry(profile).or_default();
        if !stacks.contains(&c.stack) {
            stacks.push(c.stack.clone());
        }
    }
    by_profile.into_iter().collect()
}

/// A lab host that ran stacks of the run (`h`, whose record lists them as `runs`), and the
/// path to it from the client.
fn server_host(o: &mut String, h: &HostFacts, runs: &str) {
    let _ = write!(
        o,
        "<dt>server host</dt><dd>{} ({}): kernel {}, CPU {}, memory {}; ran {}</dd>\
         <dt>path</dt><dd>client NIC {} → server NIC {}; idle RTT {}</dd>",
        Esc(&h.host),
        Esc(&h.hostname),
        Esc(&h.kernel),
        Esc(&cpu(h)),
        Esc(&format::bytes(h.memory_bytes as f64)),
        Esc(runs),
        Esc(&nic(&h.client_nic, h.client_nic_mbps)),
        Esc(&nic(&h.server_nic, h.server_nic_mbps)),
        Esc(&idle_rtt(h))
    );
}

fn cpu(h: &HostFacts) -> String {
    format!("{} × {}", h.cpu_count, h.cpu_model)
}

/// An interface and its speed: `eth0, 1000 Mbit/s`.
fn nic(name: &Option<String>, mbps: Option<u64>) -> String {
    match (name, mbps) {
        (Some(n), Some(s)) => format!("{n}, {s} Mbit/s"),
        (Some(n), None) => format!("{n}, speed not reported"),
        (None, _) => "unknown".to_string(),
    }
}

fn idle_rtt(h: &HostFacts) -> String {
    h.idle_rtt_us.map_or("unknown".to_string(), |us| format!("{us} µs"))
}

/// An external target's identity as the captured configs list shows it: one `key: value`
/// line each, then what each workload answered.
fn identity_lines(id: &Identity) -> String {
    let mut out = format!(
        "url: {}\naddress: {}\ntls: {}\nserver: {}\nsampling: {}\nverified:\n",
        id.url, id.address, id.tls, id.server, id.sampling
    );
    for d in &id.verified {
        out.push_str(&format!("  {d}\n"));
    }
    out
}

/// A lab host's facts as the captured configs list shows them: one `key: value` line each,
/// then its packages.
fn host_lines(h: &HostFacts, runs: &str) -> String {
    let mut out = format!(
        "host: {}\nhostname: {}\nkernel: {}\ncpu: {}\nmemory: {}\nruns: {runs}\n\
         server nic: {}\nclient nic: {}\nidle rtt: {}\npackages:\n",
        h.host,
        h.hostname,
        h.kernel,
        cpu(h),
        format::bytes(h.memory_bytes as f64),
        nic(&h.server_nic, h.server_nic_mbps),
        nic(&h.client_nic, h.client_nic_mbps),
        idle_rtt(h),
    );
    for (name, version) in &h.packages {
        out.push_str(&format!("  {name} {version}\n"));
    }
    out
}

pub(super) fn environment(
    o: &mut String,
    run: &Run,
    cells: &[CellRecord],
    configs: &[ConfigRecord],
) {
    let e = &run.environment;
    let hosts: Vec<(HostFacts, &str)> =
        configs.iter().filter_map(|c| Some((c.host_facts()?, c.stack.as_str()))).collect();
    // With stacks on lab hosts this machine ran the client (and any stack of its own).
    let this = if hosts.is_empty() { "host" } else { "client host" };
    let _ = writeln!(
        o,
        "<section id=\"environment\">\n<h2>Environment &amp; configs</h2>\n<dl class=\"env\">\
         <dt>{this}</dt><dd>{}</dd><dt>kernel</dt><dd>{}</dd><dt>CPU</dt><dd>{} × {}</dd>\
         <dt>loadlab</dt><dd>{}</dd><dt>started</dt><dd>{}</dd>",
        Esc(&e.hostname),
        Esc(&e.kernel),
        e.cpu_count,
        Esc(&e.cpu_model),
        Esc(&e.loadlab_version),
        format::utc(run.started_at)
    );
    if let Some(f) = run.finished_at {
        let _ = write!(o, "<dt>finished</dt><dd>{} ({})</dd>", format::utc(f), run.status);
    }
    for (h, runs) in &hosts {
        server_host(o, h, runs);
    }
    for (what, stacks) in networks(cells) {
        let _ = write!(o, "<dt>network</dt><dd>{}: {}</dd>", Esc(&what), Esc(&stacks.join(", ")));
    }
    // A server of the user's: who answered at its URL, as verified before its cells.
    for c in configs {
        let Some(id) = c.identity() else { continue };
        let _ = write!(
            o,
            "<dt>external</dt><dd>{}: {} at {}, Server {}, TLS {}; {} (not started by \
             loadlab)</dd>",
            Esc(&c.stack),
            Esc(&id.url),
            Esc(&id.address),
            Esc(&id.server),
            Esc(&id.tls),
            Esc(&id.sampling)
        );
    }
    let _ = writeln!(o, "</dl>");
    if !e.packages.is_empty() {
        let _ = write!(o, "<details><summary>{} packages</summary><div class=\"body\"><table><thead><tr><th>package</th><th>version</th></tr></thead><tbody>", e.packages.len());
        for (name, version) in &e.packages {
            let _ = write!(o, "<tr><td>{}</td><td>{}</td></tr>", Esc(name), Esc(version));
        }
        let _ = writeln!(o, "</tbody></table></div></details>");
    }
    captured_configs(o, configs);
    let _ = writeln!(o, "</section>");
}

/// Every config captured from the stacks, each folded, cut at [`MAX_CONFIG_BYTES`].
fn captured_configs(o: &mut String, configs: &[ConfigRecord]) {
    for c in configs {
        let typed = (c.host_facts().map(|h| host_lines(&h, &c.stack)))
            .or_else(|| c.identity().map(|id| identity_lines(&id)));
        let mut content = typed.as_deref().unwrap_or(&c.content);
        let mut cut = String::new();
        if content.len() > MAX_CONFIG_BYTES {
            let mut end = MAX_CONFIG_BYTES;
            while !content.is_char_boundary(end) {
                end -= 1;
            }
            cut = format!("\n… {} more bytes are in the store", content.len() - end);
            content = &content[..end];
        }
        let name = if c.name.is_empty() { String::new() } else { format!(" · {}", c.name) };
        let _ = writeln!(
            o,
            "<details><summary>{} · {} · {}{}</summary><div class=\"body\"><pre>{}{}</pre></div></details>",
            Esc(&c.stack),
            Esc(&c.tier),
            Esc(&c.kind),
            Esc(&name),
            Esc(content),
            Esc(&cut)
        );
    }
}
