//! The machines a run measured, as it keeps them: a lab host ([`HostFacts`]), the machine a
//! stack ran on over ssh and the path to it, and who answered at an external target's URL
//! ([`Identity`]). Each is stored as JSON in a config record of its kind
//! ([`ConfigRecord::HOST`], [`ConfigRecord::IDENTITY`]) and read back as the same typed value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ConfigRecord;

/// A lab host and the path to it; what could not be read is empty or `None`.
///
/// Every field defaults when missing, so a record written with fewer fields still reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostFacts {
    /// `ssh://...`.
    pub host: String,
    pub hostname: String,
    /// `uname -r` there.
    pub kernel: String,
    pub cpu_model: String,
    /// CPUs online there: what its tiers and its machine CPU are judged against.
    pub cpu_count: u32,
    pub memory_bytes: u64,
    /// Package name to installed version there.
    pub packages: BTreeMap<String, String>,
    /// The server's interface towards the client, and its speed as its kernel says.
    pub server_nic: Option<String>,
    pub server_nic_mbps: Option<u64>,
    /// The client's interface towards the server, and its speed.
    pub client_nic: Option<String>,
    pub client_nic_mbps: Option<u64>,
    /// The median of a few TCP connects to the stack's port before any load, microseconds.
    pub idle_rtt_us: Option<u64>,
}

/// Who answered at an external target's URL, as verified before its cells: each field as the
/// run said it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Identity {
    pub url: String,
    /// The address the URL resolved to (`127.0.0.1:8080`), `?` when none answered.
    pub address: String,
    /// `no`, or which certificates were trusted.
    pub tls: String,
    /// Its Server header.
    pub server: String,
    /// Which processes were sampled, or why none was.
    pub sampling: String,
    /// What each workload answered.
    pub verified: Vec<String>,
}

impl ConfigRecord {
    /// The record of external target `stack` (tier `tier`): who answered at its URL.
    pub fn of_identity(stack: &str, tier: &str, identity: &Identity) -> ConfigRecord {
        ConfigRecord {
            stack: stack.to_owned(),
            tier: tier.to_owned(),
            kind: ConfigRecord::IDENTITY.into(),
            name: String::new(),
            // A struct of strings always serializes.
            content: serde_json::to_string_pretty(identity).unwrap_or_default(),
        }
    }

    /// An [`ConfigRecord::IDENTITY`] record's identity; `None` for another kind.
    pub fn identity(&self) -> Option<Identity> {
        if self.kind != ConfigRecord::IDENTITY {
            return None;
        }
        // Runs stored before it was kept as JSON hold it as `key: value` lines, then
        // `verified:` and a `  detail` line for each workload.
        Some(serde_json::from_str(&self.content).unwrap_or_else(|_| {
            let mut id = Identity::default();
            for (key, value) in fields(&self.content) {
                match key {
                    "url" => id.url = value.into(),
                    "address" => id.address = value.into(),
                    "tls" => id.tls = value.into(),
                    "server" => id.server = value.into(),
                    "sampling" => id.sampling = value.into(),
                    _ => {}
                }
            }
            id.verified = indented_after(&self.content, "verified:");
            id
        }))
    }

    /// The record of lab host `facts`, which ran `stacks` (their names, comma separated).
    pub fn of_host(facts: &HostFacts, stacks: &str) -> ConfigRecord {
        ConfigRecord {
            stack: stacks.to_owned(),
            tier: "host".into(),
            kind: ConfigRecord::HOST.into(),
            name: facts.host.clone(),
            // A struct of strings, numbers and maps with string keys always serializes.
            content: serde_json::to_string_pretty(facts).unwrap_or_default(),
        }
    }

    /// A [`ConfigRecord::HOST`] record's facts; `None` for another kind.
    pub fn host_facts(&self) -> Option<HostFacts> {
        if self.kind != ConfigRecord::HOST {
            return None;
        }
        // Runs stored before the facts were kept as JSON hold them as `key: value` lines.
        Some(serde_json::from_str(&self.content).unwrap_or_else(|_| self.host_facts_from_lines()))
    }

    /// The facts of a host record written as `key: value` lines: `host`, `hostname`, `kernel`,
    /// `cpu` (`8 × model`), `memory` (`15.6 GiB`, read back to the tenth), `server nic` and
    /// `client nic` (`eth0, 1000 Mbit/s`, `eth0, speed not reported` or `unknown`), `idle rtt`
    /// (`61 µs` or `unknown`), then `packages:` with a `  name version` line each.
    fn host_facts_from_lines(&self) -> HostFacts {
        let mut facts = HostFacts::default();
        for (key, value) in fields(&self.content) {
            match key {
                "host" => facts.host = value.into(),
                "hostname" => facts.hostname = value.into(),
                "kernel" => facts.kernel = value.into(),
                "cpu" => {
                    let (count, model) = value.split_once(" × ").unwrap_or(("0", value));
                    facts.cpu_count = count.parse().unwrap_or(0);
                    facts.cpu_model = model.into();
                }
                "memory" => facts.memory_bytes = bytes_from_text(value).unwrap_or(0),
                "server nic" => (facts.server_nic, facts.server_nic_mbps) = nic_from_text(value),
                "client nic" => (facts.client_nic, facts.client_nic_mbps) = nic_from_text(value),
                "idle rtt" => {
                    facts.idle_rtt_us = value.strip_suffix(" µs").and_then(|v| v.parse().ok())
                }
                _ => {}
            }
        }
        for line in indented_after(&self.content, "packages:") {
            if let Some((name, version)) = line.split_once(' ') {
                facts.packages.insert(name.into(), version.into());
            }
        }
        facts
    }
}

/// The `key: value` lines of a record written as lines, in order.
fn fields(content: &str) -> impl Iterator<Item = (&str, &str)> {
    content.lines().filter(|l| !l.starts_with(' ')).filter_map(|l| l.split_once(": "))
}

/// The indented lines after the line `head`, unindented.
fn indented_after(content: &str, head: &str) -> Vec<String> {
    let after = content.lines().skip_while(|l| *l != head).skip(1);
    after.take_while(|l| l.starts_with("  ")).map(|l| l.trim().to_owned()).collect()
}

/// `eth0, 1000 Mbit/s`, `eth0, speed not reported` or `unknown`, read back.
fn nic_from_text(text: &str) -> (Option<String>, Option<u64>) {
    match text.split_once(", ") {
        Some((name, speed)) => {
            (Some(name.into()), speed.strip_suffix(" Mbit/s").and_then(|s| s.parse().ok()))
        }
        None if text == "unknown" => (None, None),
        None => (Some(text.into()), None),
    }
}

/// A size as `loadlab_stats::format::bytes` writes it (`512 B`, `15.6 GiB`), read back.
fn bytes_from_text(text: &str) -> Option<u64> {
    let (number, unit) = text.split_once(' ')?;
    let power = ["B", "KiB", "MiB", "GiB", "TiB"].iter().position(|u| *u == unit)?;
    let value: f64 = number.parse().ok()?;
    Some((value * 1024f64.powi(power as i32)).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_facts_are_read_back_as_stored() {
        let record = ConfigRecord::of_host(&HostFacts::for_test(), "nginx, nginx-fpm");
        assert_eq!((record.kind.as_str(), record.name.as_str()), ("host", "ssh://root@lab2"));
        assert_eq!(record.stack, "nginx, nginx-fpm");
        assert_eq!(record.host_facts(), Some(HostFacts::for_test()));
        let other = ConfigRecord { kind: "capture".into(), ..record };
        assert_eq!(other.host_facts(), None);
    }

    #[test]
    fn an_identity_is_read_back_as_stored_and_from_the_old_lines() {
        let id = Identity {
            url: "http://127.0.0.1:8080".into(),
            address: "127.0.0.1:8080".into(),
            tls: "no".into(),
            server: "nginx/1.22.1".into(),
            sampling: "not sampled: external target".into(),
            verified: vec!["robots gzip: status 200, 24 body bytes".into()],
        };
        let record = ConfigRecord::of_identity("mine", "external", &id);
        assert_eq!(record.identity(), Some(id.clone()));
        assert_eq!(record.host_facts(), None);
        let old = ConfigRecord {
            content: "url: http://127.0.0.1:8080\naddress: 127.0.0.1:8080\ntls: no\n\
                      server: nginx/1.22.1\nsampling: not sampled: external target\n\
                      verified:\n  robots gzip: status 200, 24 body bytes\n"
                .into(),
            ..record
        };
        assert_eq!(old.identity(), Some(id));
    }

    #[test]
    fn a_host_stored_as_lines_still_reads() {
        let record = ConfigRecord {
            stack: "nginx".into(),
            tier: "host".into(),
            kind: ConfigRecord::HOST.into(),
            name: "ssh://root@lab2".into(),
            content: "host: ssh://root@lab2\nhostname: lab2\nkernel: 6.1.0\ncpu: 8 × EPYC\n\
                      memory: 16.0 GiB\nruns: nginx\nserver nic: eth0, 1000 Mbit/s\n\
                      client nic: eth1, 1000 Mbit/s\nidle rtt: 61 µs\npackages:\n  \
                      nginx 1.22\n"
                .into(),
        };
        assert_eq!(record.host_facts(), Some(HostFacts::for_test()));
        let unknown = ConfigRecord {
            content: "host: ssh://b\nserver nic: unknown\nidle rtt: unknown\n".into(),
            ..record
        };
        let read = unknown.host_facts().expect("a host record");
        assert_eq!((read.server_nic, read.idle_rtt_us, read.cpu_count), (None, None, 0));
    }
}
