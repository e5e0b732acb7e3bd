//! Network profiles: the link between the client and a stack. `loopback` is the lab's default
//! (the stack on 127.0.0.1); the others put the stack in a network namespace of its own, joined
//! to the client's by a link whose two ends are shaped with `tc` as the profile says (seeds 000
//! and 001 measured across a 100 Mbit/s switch): a veth pair with tbf for bandwidth alone; for
//! delay, jitter and loss either a veth pair with netem ([`mod@netem`]) where the kernel has it, or
//! a TUN pair with loadlab's delay stage ([`stage`]) between them, on any kernel. This crate
//! owns the namespace and its link, and what `doctor` says about them; [`profile`] what a
//! profile says.
//!
//! Everything created is named `loadlab-net-*` (namespace), `llv*` (veth) and `llt*` (TUN), on
//! a private 10.214.0.0/16 /30 per link, so that leftovers are recognised and nothing is
//! reachable from outside the machine.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use loadlab_programs::{Need, IP, TC};

use crate::sys::is_root;

pub mod host;
pub mod netem;
pub mod profile;
pub mod stage;
mod sys;

pub use profile::{DelayPath, Profile};

/// Namespaces loadlab creates start with this.
pub const NS_PREFIX: &str = "loadlab-net-";

/// The longest a shaped end queues what it cannot send yet (tbf's `latency`, and what netem's
/// limit holds beyond the delay): a switch port's buffer, not an unbounded one.
const QUEUE: Duration = Duration::from_millis(50);

/// What this machine can do with profiles, as `doctor` says it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Capability {
    pub root: bool,
    pub ip: Option<PathBuf>,
    pub tc: Option<PathBuf>,
    /// The kernel took a netem qdisc (delay, jitter, loss) in a throwaway namespace.
    pub netem: bool,
    /// The kernel took a tbf qdisc (bandwidth).
    pub tbf: bool,
    /// `/dev/net/tun` is there, for the delay stage's devices.
    pub tun: bool,
}

impl Capability {
    /// Bandwidth profiles can run here.
    pub fn shaping(&self) -> bool {
        self.root && self.ip.is_some() && self.tc.is_some() && self.tbf
    }

    /// What carries delay, jitter and loss here when a profile does not say (`via=`): netem
    /// where the kernel has it, loadlab's stage where it does not; `None` when neither can.
    pub fn delay_path(&self) -> Option<DelayPath> {
        match (self.shaping(), self.netem, self.tun) {
            (true, true, _) => Some(DelayPath::Netem),
            (true, false, true) => Some(DelayPath::Stage),
            _ => None,
        }
    }

    /// Delay, jitter and loss can run here, by netem or by loadlab's own stage.
    pub fn delay(&self) -> bool {
        self.delay_path().is_some()
    }
}

/// Tries what the kernel can do in a namespace of its own, removed before returning.
pub fn capability() -> Capability {
    let (ip, tc) = (IP.path(), TC.path());
    let mut cap = Capability {
        root: is_root(),
        ip,
        tc,
        netem: false,
        tbf: false,
        tun: std::path::Path::new("/dev/net/tun").exists(),
    };
    (cap.tbf, cap.netem) = probe(|ns| {
        (
            takes(ns, &["tbf", "rate", "100mbit", "burst", "32kb", "latency", "50ms"]),
            takes(ns, NETEM_PROBE),
        )
    })
    .unwrap_or_default();
    cap
}

/// Whether the kernel takes a netem qdisc (tried in a throwaway namespace, as root).
pub fn netem() -> bool {
    probe(|ns| takes(ns, NETEM_PROBE)).unwrap_or(false)
}

const NETEM_PROBE: &[&str] = &["netem", "delay", "1ms"];

/// Runs `f` with a namespace of its own, removed after; `None` without root or iproute2, or
/// when no namespace could be made.
fn probe<T>(f: impl FnOnce(&str) -> T) -> Option<T> {
    static PROBES: AtomicU32 = AtomicU32::new(0);
    if unavailable().is_some() {
        return None;
    }
    let n = PROBES.fetch_add(1, Ordering::Relaxed);
    let ns = format!("{NS_PREFIX}probe-{}-{n}", std::process::id());
    step(IP, &["netns", "add", &ns]).ok()?;
    let _ = step(IP, &["-n", &ns, "link", "set", "lo", "up"]);
    let out = f(&ns);
    let _ = step(IP, &["netns", "del", &ns]);
    Some(out)
}

/// Whether the root qdisc `kind` (with its arguments) is taken on the loopback of `ns`.
fn takes(ns: &str, kind: &[&str]) -> bool {
    let mut args = vec!["-n", ns, "qdisc", "add", "dev", "lo", "root"];
    args.extend_from_slice(kind);
    let ok = step(TC, &args).is_ok();
    let _ = step(TC, &["-n", ns, "qdisc", "del", "dev", "lo", "root"]);
    ok
}

/// Why no profile can run here (not root, no `ip` or `tc`), checked without changing
/// anything; `None` when one may.
pub fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("network profiles need root (a namespace, a veth pair, tc qdiscs)".into());
    }
    if IP.path().is_none() || TC.path().is_none() {
        return Some("network profiles need iproute2 (ip and tc): apt-get install iproute2".into());
    }
    None
}

/// A namespace joined to this one by a shaped link: a veth pair with tbf for bandwidth-only
/// profiles; for delay, jitter or loss a veth pair with netem, or a pair of TUN devices with
/// loadlab's delay stage between them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    pub namespace: String,
    pub host_if: String,
    pub ns_if: String,
    pub host_ip: Ipv4Addr,
    pub ns_ip: Ipv4Addr,
    /// What carries the profile's delay, jitter and loss; `None` for bandwidth alone.
    #[serde(default)]
    pub delay: Option<DelayPath>,
    /// The delay stage's process, when the link has one.
    #[serde(default)]
    pub stage: Option<u32>,
}

impl Link {
    /// Creates the namespace `loadlab-net-TAG`, the devices on a free /30 and the shaping of
    /// both ends; `delay` (see [`Profile::delay_path`]) says what carries the profile's delay,
    /// jitter and loss: netem on both ends, or the stage that carries packets between them.
    /// Whatever was created is removed again when a step fails.
    pub fn create(tag: &str, profile: &Profile, delay: Option<DelayPath>) -> Result<Link, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let staged = delay == Some(DelayPath::Stage);
        let netem = delay == Some(DelayPath::Netem);
        let program = match (staged, stage::program()) {
            (true, None) => {
                return Err("the delay stage needs the loadlab program (net-stage)".into());
            }
            (_, program) => program,
        };
        // Two `stack up`s at once would pick the same free /30: the pick and the address it
        // claims happen under one machine-wide lock, released when `create` returns.
        let _picking = pick_lock()?;
        let index = free_block().ok_or("no free /30 left in 10.214.0.0/16")?;
        let base = u32::from(Ipv4Addr::new(10, 214, 0, 0)) + index * 4;
        // TUN devices for a staged link (llt*), a veth pair otherwise (llv*).
        let kind = if staged { "llt" } else { "llv" };
        let mut link = Link {
            namespace: format!("{NS_PREFIX}{tag}"),
            host_if: format!("{kind}h{index}"),
            ns_if: format!("{kind}n{index}"),
            host_ip: Ipv4Addr::from(base + 1),
            ns_ip: Ipv4Addr::from(base + 2),
            delay,
            stage: None,
        };
        let shape = stage::Shape::from(profile);
        let mut build = || -> Result<(), String> {
            link.add_devices(netem)?;
            link.shape_ends(profile, &shape)?;
            if let (true, Some(program)) = (staged, program) {
                link.stage = Some(stage::spawn(program, &link, &shape)?);
            }
            Ok(())
        };
        match build() {
            Ok(()) => Ok(link),
            Err(e) => {
                link.remove();
                Err(e)
            }
        }
    }

    /// Creates the namespace and the link's two devices (TUNs for the stage, else a veth pair),
    /// addressed and up, each end in its namespace.
    fn add_devices(&self, netem: bool) -> Result<(), String> {
        let (ns, h, n) = (self.namespace.as_str(), self.host_if.as_str(), self.ns_if.as_str());
        let staged = self.delay == Some(DelayPath::Stage);
        step(IP, &["netns", "add", ns])?;
        if staged {
            step(IP, &["tuntap", "add", "dev", h, "mode", "tun"])?;
            step(IP, &["-n", ns, "tuntap", "add", "dev", n, "mode", "tun"])?;
        } else {
            // netem counts its queue in packets and draws loss per packet, and a GSO packet is
            // 1 to 45 TCP segments: on a netem link TCP sends one segment per packet (it takes
            // gso_max_segs from the route's device), so that the queue holds what a tbf's
            // would (netem::limit) and a drop loses what a real link's would, as the stage's
            // wire-sized packets do.
            let one: &[&str] = if netem { &["gso_max_segs", "1"] } else { &[] };
            let mut add = vec!["link", "add", h];
            add.extend_from_slice(one);
            add.extend_from_slice(&["type", "veth", "peer", "name", n]);
            add.extend_from_slice(one);
            step(IP, &add)?;
            step(IP, &["link", "set", n, "netns", ns])?;
        }
        step(IP, &["addr", "add", &format!("{}/30", self.host_ip), "dev", h])?;
        step(IP, &["link", "set", h, "up"])?;
        step(IP, &["-n", ns, "addr", "add", &format!("{}/30", self.ns_ip), "dev", n])?;
        step(IP, &["-n", ns, "link", "set", n, "up"])?;
        step(IP, &["-n", ns, "link", "set", "lo", "up"])?;
        if !staged {
            steer_flows(ns, h, n)?;
        }
        Ok(())
    }

    /// Shapes both directions: what the stack sends leaves by its end, what the client sends
    /// by the host's. netem carries the whole profile; otherwise tbf its bandwidth (the stage,
    /// if any, carries delay, jitter and loss between the devices).
    fn shape_ends(&self, profile: &Profile, shape: &stage::Shape) -> Result<(), String> {
        let (ns, h, n) = (self.namespace.as_str(), self.host_if.as_str(), self.ns_if.as_str());
        let staged = self.delay == Some(DelayPath::Stage);
        if self.delay == Some(DelayPath::Netem) {
            for (dev_ns, dev) in [(Some(ns), n), (None, h)] {
                let args = netem::qdisc_args(profile, dev_ns, dev);
                step(TC, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
            }
        } else if let Some(rate) = profile.rate_bps {
            let burst = burst(rate, staged && stage::offloads(shape)).to_string();
            let rate = format!("{rate}bit");
            let latency = format!("{}ms", QUEUE.as_millis());
            let tbf = ["root", "tbf", "rate", &rate, "burst", &burst, "latency", &latency];
            let mut a = vec!["-n", ns, "qdisc", "add", "dev", n];
            a.extend_from_slice(&tbf);
            step(TC, &a)?;
            let mut b = vec!["qdisc", "add", "dev", h];
            b.extend_from_slice(&tbf);
            step(TC, &b)?;
        }
        Ok(())
    }

    /// The link as it is now, for the configs stored with a run: what carries the delay, and
    /// each end's qdiscs as `tc qdisc show` prints them.
    pub fn show(&self) -> String {
        let carrier = match (self.delay, self.stage) {
            (Some(DelayPath::Netem), _) => "netem on both ends".to_string(),
            (Some(DelayPath::Stage), Some(pid)) => {
                format!("loadlab's delay stage (pid {pid}) between the two TUN devices")
            }
            (Some(DelayPath::Stage), None) => "loadlab's delay stage".to_string(),
            (None, _) => "none (bandwidth alone)".to_string(),
        };
        let qdiscs = |args: &[&str]| output(TC, args).unwrap_or_else(|e| e).trim_end().to_string();
        format!(
            "delay, jitter and loss: {carrier}\n{} ({}, the client's end):\n{}\n{} ({} in {}, the \
             stack's end):\n{}\n",
            self.host_if,
            self.host_ip,
            qdiscs(&["qdisc", "show", "dev", &self.host_if]),
            self.ns_if,
            self.ns_ip,
            self.namespace,
            qdiscs(&["-n", &self.namespace, "qdisc", "show", "dev", &self.ns_if]),
        )
    }

    /// Removes the devices and the namespace (deleting one end of a veth deletes both; the
    /// qdiscs go with their devices; the delay stage ends when its devices go, and is stopped
    /// if it has not). Safe to call on what is half there or already gone.
    pub fn remove(&self) {
        let _ = step(IP, &["link", "del", &self.host_if]);
        if let Some(pid) = self.stage {
            stage::stop(pid);
        }
        let _ = step(IP, &["netns", "del", &self.namespace]);
    }
}

/// Keeps each flow's packets in order across a veth. A veth hands what its qdisc releases to
/// the peer's backlog on the CPU that released it (net/core/dev.c, netif_rx_internal), and a
/// qdisc releases packets from whichever CPU sends or runs its timer: two CPUs' backlogs then
/// deliver one flow's packets out of order, which TCP takes for loss (measured under netem:
/// 1,257 reorderings and 88 retransmissions in 5 s of 100 Mbit/s, none with this). Receive
/// packet steering on both ends puts every packet of a flow on one CPU, chosen by its hash.
fn steer_flows(ns: &str, host_if: &str, ns_if: &str) -> Result<(), String> {
    let online = sys::online_cpus();
    let mask = cpu_mask(online);
    let queue = |dev: &str| format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus");
    std::fs::write(queue(host_if), &mask).map_err(|e| format!("{}: {e}", queue(host_if)))?;
    // The namespace's devices are in a sysfs mounted there, which `ip netns exec` makes.
    let ip = IP.path().ok_or("ip is missing")?;
    let mut tee = Command::new(ip)
        .args(["netns", "exec", ns, "tee", &queue(ns_if)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("ip netns exec {ns} tee: {e}"))?;
    use std::io::Write as _;
    let wrote = tee.stdin.take().expect("piped").write_all(mask.as_bytes());
    let out = tee.wait_with_output().map_err(|e| e.to_string())?;
    match (wrote, out.status.success()) {
        (Ok(()), true) => Ok(()),
        _ => Err(format!("{}: {}", queue(ns_if), String::from_utf8_lossy(&out.stderr).trim())),
    }
}

/// The mask of CPUs 0 to `n - 1` as sysfs writes one: 32-bit hex words, highest first,
/// separated by commas.
fn cpu_mask(n: usize) -> String {
    let words: Vec<String> = (0..n.div_ceil(32))
        .rev()
        .map(|w| {
            let bits = (n - w * 32).min(32);
            format!("{:x}", if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 })
        })
        .collect();
    words.join(",")
}

/// The bucket of a tbf shaping `rate` bit/s: at least 32 KB or 4 ms of the rate, and a whole
/// 64 KB GSO packet where the stage takes offloads (`gso`; tbf would split larger packets into
/// wire-sized ones for the stage to carry one by one).
fn burst(rate: u64, gso: bool) -> u64 {
    (rate / 8 / 250).max(if gso { 96 } else { 32 } * 1024)
}

/// Runs one `ip` or `tc` command, its stderr as the error.
fn step(program: Need, args: &[&str]) -> Result<(), String> {
    output(program, args).map(drop)
}

/// Runs one `ip` or `tc` command: its stdout, or its stderr as the error.
fn output(program: Need, args: &[&str]) -> Result<String, String> {
    let path = program.path().ok_or_else(|| format!("{} is missing", program.name()))?;
    let out = Command::new(&path).args(args).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{} {}: {}",
            program.name(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// An exclusive lock on `/run/loadlab-net.lock`, held while the returned file is open.
fn pick_lock() -> Result<std::fs::File, String> {
    let path = std::path::Path::new("/run/loadlab-net.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // Blocks until the other holder closes its file.
    sys::lock_exclusive(&file).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(file)
}

/// The /30s already given to veths of loadlab's, read from the host's addresses.
fn free_block() -> Option<u32> {
    let ip = IP.path()?;
    let out = Command::new(ip).args(["-4", "-o", "addr", "show"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    (0..16_384u32).find(|i| {
        let host = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 214, 0, 0)) + i * 4 + 1);
        !text.contains(&format!(" {host}/"))
    })
}

/// Namespaces of loadlab's that exist now (`ip netns list`), for `doctor` and cleanup.
pub fn namespaces() -> Vec<String> {
    let Some(ip) = IP.path() else { return Vec::new() };
    let Ok(out) = Command::new(ip).args(["netns", "list"]).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(NS_PREFIX))
        .map(str::to_string)
        .collect()
}

/// Whether a process runs in namespace `name` now: what tells a live stack's namespace from one
/// a crash left, whoever made it (another state directory, another user). `/run/netns/NAME` is
/// a bind mount of the namespace's nsfs inode, and `/proc/PID/ns/net` of each process resolves
/// to the same (device, inode) when that process is inside it (namespaces(7)).
pub fn occupied(name: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(ns) = std::fs::metadata(std::path::Path::new("/run/netns").join(name)) else {
        return false;
    };
    let Ok(procs) = std::fs::read_dir("/proc") else { return false };
    procs.flatten().any(|p| {
        let is_pid = p.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::metadata(p.path().join("ns/net"))
                .is_ok_and(|m| (m.dev(), m.ino()) == (ns.dev(), ns.ino()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_are_written_as_sysfs_reads_them() {
        assert_eq!(cpu_mask(1), "1");
        assert_eq!(cpu_mask(2), "3");
        assert_eq!(cpu_mask(32), "ffffffff");
        assert_eq!(cpu_mask(33), "1,ffffffff");
        assert_eq!(cpu_mask(70), "3f,ffffffff,ffffffff");
    }

    #[test]
    fn a_shaped_link_is_created_and_leaves_nothing_when_removed() {
        let cap = capability();
        if !cap.shaping() {
            let strict = std::env::var_os("LOADLAB_REQUIRE_SERVERS").is_some_and(|v| v == "1");
            assert!(!strict, "CI must be able to shape links: {cap:?}");
            eprintln!("SKIP: cannot shape links here: {cap:?}");
            return;
        }
        let probes = format!("probe-{}-", std::process::id());
        assert!(!namespaces().iter().any(|n| n.contains(&probes)), "the probe left its namespace");
        let tag = format!("test-{}", std::process::id());
        let link = Link::create(&tag, &"lan-100mbit".parse().unwrap(), None).expect("a link");
        let tc = TC.path().unwrap();
        let shown = |args: &[&str]| {
            String::from_utf8_lossy(&Command::new(&tc).args(args).output().unwrap().stdout)
                .into_owned()
        };
        let inside = shown(&["-n", &link.namespace, "qdisc", "show", "dev", &link.ns_if]);
        let outside = shown(&["qdisc", "show", "dev", &link.host_if]);
        let steered = std::fs::read_to_string(format!(
            "/sys/class/net/{}/queues/rx-0/rps_cpus",
            link.host_if
        ));
        link.remove();
        // Every CPU may take the link's flows (sysfs pads the mask with zeroes).
        let online = sys::online_cpus();
        let steered = steered.expect("the veth's receive queue");
        assert!(steered.trim().ends_with(&cpu_mask(online)), "{steered}");
        assert!(inside.contains("tbf") && inside.contains("rate 100Mbit"), "{inside}");
        assert!(outside.contains("tbf") && outside.contains("rate 100Mbit"), "{outside}");
        assert!(!namespaces().contains(&link.namespace), "the namespace is left");
        assert!(!std::path::Path::new("/sys/class/net").join(&link.host_if).exists());
        // A test binary carries no delay stage (the loadlab program does): refused, nothing made.
        let staged = Link::create(&tag, &"wan".parse().unwrap(), Some(DelayPath::Stage));
        assert!(staged.is_err(), "no stage here");
        assert!(!namespaces().contains(&link.namespace), "a refused profile creates nothing");
    }
}
