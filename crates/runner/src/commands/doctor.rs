//! `doctor`'s findings: what is installed of the lab's packages, which stacks can run, the
//! limits that bound a load test (through [`crate::judge::capacity::Limits`], the probes a run's
//! capacity check uses), the lab's instances, what the kernel allows of network profiles, which
//! of loadlab's network namespaces are in use and which are leftovers, and what the user should
//! change.

use std::path::PathBuf;

use loadlab_lab::net::Capability;
use loadlab_lab::{programs, Health, Knobs, Lab, Record};

use crate::judge::capacity::Limits;

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
    /// loadlab's network namespaces on this machine, each with what holds it.
    pub namespaces: Vec<Namespace>,
    /// Interfaces carrying loadlab's `--listen --net` shaping (htb root `10ad:`).
    pub shaped: Vec<Shaped>,
}

/// An interface with loadlab's shaping root, its classes, and this state directory's live
/// instances that hold one of them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shaped {
    pub interface: String,
    pub classes: usize,
    pub held_by: Vec<String>,
}

/// What holds each shaped interface: the live (not stale) instances whose record shapes it.
pub fn shaped(
    interfaces: &[(String, usize)],
    instances: &[(Record, Health)],
    stale: &[String],
) -> Vec<Shaped> {
    let on = |r: &Record, dev: &str| {
        r.listen.as_ref().and_then(|l| l.shaping.as_ref()).is_some_and(|s| s.interface == dev)
    };
    interfaces
        .iter()
        .map(|(dev, classes)| Shaped {
            interface: dev.clone(),
            classes: *classes,
            held_by: instances
                .iter()
                .filter(|(r, _)| on(r, dev) && !stale.contains(&r.id))
                .map(|(r, _)| r.id.clone())
                .collect(),
        })
        .collect()
}

/// A `loadlab-net-*` namespace and what holds it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Namespace {
    pub name: String,
    pub state: NsState,
    /// The instance it was made for: this state directory's record's, else read from the name
    /// (`loadlab-net-ID-HASH`); `None` for a capability probe's.
    pub instance: Option<String>,
    /// The instance's health, when this state directory holds its record.
    pub health: Option<Health>,
}

/// Whether a namespace may be removed, and by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NsState {
    /// A live instance's (or a running probe's): never to be deleted by hand.
    InUse,
    /// A stale or dead instance's of this state directory: the next `stack up` removes it
    /// with the instance.
    Stale,
    /// No instance holds it: remove it with `ip netns del NAME`.
    Left,
}

impl Findings {
    /// The namespaces no instance holds.
    pub fn namespaces_left(&self) -> Vec<&str> {
        let left = self.namespaces.iter().filter(|n| n.state == NsState::Left);
        left.map(|n| n.name.as_str()).collect()
    }
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
    let names = loadlab_lab::net::namespaces();
    let namespaces = namespaces(&lab, &names, &instances, &stale, &loadlab_lab::net::occupied);
    let roots: Vec<(String, usize)> = loadlab_lab::net::host::leftovers()
        .into_iter()
        .map(|dev| {
            let n = loadlab_lab::net::host::classes(&dev).len();
            (dev, n)
        })
        .collect();
    let shaped = shaped(&roots, &instances, &stale);
    Ok(Findings {
        lab,
        packages,
        runnable,
        missing,
        limits: Limits::here(),
        instances,
        stale,
        net: loadlab_lab::net::capability(),
        namespaces,
        shaped,
    })
}

/// What the user should change: leftovers, limits too low for load tests, missing packages.
pub fn warnings(f: &Findings) -> Vec<String> {
    let (soft, hard) = f.limits.open_files;
    let mut warnings = Vec::new();
    let left = f.namespaces_left();
    if !left.is_empty() {
        warnings.push(format!(
            "network namespaces left by loadlab, no instance holds them: {} (remove with `ip \
             netns del NAME`)",
            left.join(" ")
        ));
    }
    for s in f.shaped.iter().filter(|s| s.held_by.is_empty()) {
        warnings.push(if s.classes == 0 {
            format!(
                "loadlab's shaping root (htb 10ad:) is left on {} with no class under it \
                 (remove with `tc qdisc del dev {} root`)",
                s.interface, s.interface
            )
        } else {
            format!(
                "loadlab's shaping on {} has {} class(es) no instance of this state directory \
                 holds: another state directory's live stack, or a killed one's (the next \
                 `stack up --listen --net` on this host removes those)",
                s.interface, s.classes
            )
        });
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

/// What holds each of `names`: an instance of this lab's (by its record's link, or the name
/// the lab gives its namespace before the link is recorded; `stale` are the ids the next
/// start removes, see `Lab::stale`), or, for a name no record has,
/// processes running in it (`occupied`: another state directory's or another user's live
/// stack) or a probe whose loadlab still runs; else nothing, a leftover.
pub fn namespaces(
    lab: &Lab,
    names: &[String],
    instances: &[(Record, Health)],
    stale: &[String],
    occupied: &dyn Fn(&str) -> bool,
) -> Vec<Namespace> {
    names
        .iter()
        .map(|name| {
            let ours = instances.iter().find(|(r, _)| {
                r.net.as_ref().is_some_and(|l| &l.namespace == name)
                    || &lab.namespace_of(&r.id) == name
            });
            let (state, instance, health) = match ours {
                Some((r, h)) => {
                    let state = if stale.contains(&r.id) { NsState::Stale } else { NsState::InUse };
                    (state, Some(r.id.clone()), Some(*h))
                }
                None => {
                    let held = occupied(name) || probe_pid(name).is_some_and(pid_alive);
                    let state = if held { NsState::InUse } else { NsState::Left };
                    (state, instance_in(name), None)
                }
            };
            Namespace { name: name.clone(), state, instance, health }
        })
        .collect()
}

/// The instance id in a stack's namespace name, `loadlab-net-ID-HASH` (HASH: 8 hex digits of
/// its run directory, see the lab's `namespace_of`).
fn instance_in(name: &str) -> Option<String> {
    let tag = name.strip_prefix(loadlab_lab::net::NS_PREFIX)?;
    let (id, hash) = tag.rsplit_once('-')?;
    let hashed = hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit());
    (hashed && !id.is_empty()).then(|| id.to_string())
}

/// The loadlab process whose capability probe made `name` (`loadlab-net-probe-PID-N`).
fn probe_pid(name: &str) -> Option<u32> {
    let tag = name.strip_prefix(loadlab_lab::net::NS_PREFIX)?.strip_prefix("probe-")?;
    tag.split_once('-')?.0.parse().ok()
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_lab::StateDir;

    fn record(lab: &Lab, id: &str) -> Record {
        let run_dir = lab.state().run_root().join(id);
        Record::unstarted(id.into(), "nginx".into(), "http://10.214.0.2:80/".into(), run_dir)
    }

    /// A `loadlab-net-*` namespace is a leftover to delete only when no instance holds it: a
    /// running stack's is in use.
    #[test]
    fn a_live_instances_namespace_is_in_use_and_only_an_unheld_one_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let lab = Lab::new(StateDir::at(dir.path()));
        let instances = vec![
            (record(&lab, "nginx-1"), Health::Running),
            (record(&lab, "nginx-2"), Health::Stale),
            (record(&lab, "nginx-3"), Health::Broken),
        ];
        let elsewhere = "loadlab-net-apache-4-0123abcd".to_string();
        let names = vec![
            lab.namespace_of("nginx-1"),
            lab.namespace_of("nginx-2"),
            lab.namespace_of("nginx-3"),
            elsewhere.clone(),
            "loadlab-net-varnish-1-89abcdef".into(),
            format!("loadlab-net-probe-{}-0", std::process::id()),
            format!("loadlab-net-probe-{}-0", u32::MAX),
        ];
        let occupied = |name: &str| name == elsewhere;
        let found = namespaces(&lab, &names, &instances, &["nginx-2".into()], &occupied);
        let seen: Vec<_> =
            found.iter().map(|n| (n.state, n.instance.as_deref(), n.health)).collect();
        use NsState::*;
        assert_eq!(
            seen,
            [
                (InUse, Some("nginx-1"), Some(Health::Running)),
                (Stale, Some("nginx-2"), Some(Health::Stale)),
                // Some tiers died: `stack down` is its way out, never `ip netns del`.
                (InUse, Some("nginx-3"), Some(Health::Broken)),
                (InUse, Some("apache-4"), None),
                (Left, Some("varnish-1"), None),
                (InUse, None, None),
                (Left, None, None),
            ]
        );
    }

    /// `--listen --net` shaping left by a killed stack is found: an interface is held only by
    /// a live instance whose record shapes it.
    #[test]
    fn a_shaped_interface_is_held_only_by_a_live_instance_that_shapes_it() {
        let dir = tempfile::tempdir().unwrap();
        let lab = Lab::new(StateDir::at(dir.path()));
        let shaping = |dev: &str| loadlab_lab::net::host::Exposure {
            bind: "10.0.0.2".parse().unwrap(),
            public: "10.0.0.2".parse().unwrap(),
            primary: false,
            interface: dev.into(),
            shaping: Some(loadlab_lab::net::host::Shaping {
                interface: dev.into(),
                class: 1,
                port: 80,
                source: None,
                rate_bps: 100_000_000,
                netem: false,
            }),
        };
        let mut live = record(&lab, "nginx-1");
        live.listen = Some(shaping("eth0"));
        let mut dead = record(&lab, "nginx-2");
        dead.listen = Some(shaping("eth1"));
        let unshaped = record(&lab, "nginx-3");
        let instances =
            vec![(live, Health::Running), (dead, Health::Stale), (unshaped, Health::Running)];
        let roots = vec![("eth0".to_string(), 1), ("eth1".to_string(), 1), ("eth2".into(), 0)];
        let found = shaped(&roots, &instances, &["nginx-2".to_string()]);
        let held: Vec<_> =
            found.iter().map(|s| (s.interface.as_str(), s.held_by.clone())).collect();
        assert_eq!(
            held,
            [("eth0", vec!["nginx-1".to_string()]), ("eth1", vec![]), ("eth2", vec![])]
        );
    }
}
