//! How a run learns a lab host and the path to it ([`HostFacts`]): the machine there (kernel, CPUs,
//! memory, package versions, the interface that answers the client and its speed), read by
//! one ssh command, and from this side the interface that reaches it and the idle round
//! trip (TCP connects to the stack's own port, each one SYN and its SYN-ACK).

use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::process::Stdio;
use std::time::{Duration, Instant};

use loadlab_remote::{Host, Ssh};
use loadlab_store::HostFacts;

/// How long reading the host may take.
const LIMIT: Duration = Duration::from_secs(30);
/// Connects timed for the idle round trip.
const RTT_PROBES: usize = 5;

/// Reads `host` (through `ssh`) and the path to the stack at `url`.
pub fn learn(ssh: &Ssh, host: &Host, url: &str, packages: &[&str]) -> HostFacts {
    let server = server_addr(url);
    let client_ip = server.and_then(|s| source_for(s.ip()));
    let mut facts = HostFacts { host: host.to_string(), ..HostFacts::default() };
    let script = script(client_ip, packages);
    let command = ssh.command(host, &script);
    if let Ok(done) = loadlab_remote::run::finish(command, Stdio::null(), host, LIMIT) {
        read_into(&mut facts, &done.stdout);
    }
    if let Some(server) = server {
        let link = loadlab_engine::Link::of(server, None);
        facts.client_nic = link.interface;
        facts.client_nic_mbps = link.speed_mbps;
        facts.idle_rtt_us = idle_rtt(server).map(|d| d.as_micros() as u64);
    }
    facts
}

/// The address a stack's URL names, with its port.
fn server_addr(url: &str) -> Option<SocketAddr> {
    let target = loadlab_engine::Target::parse(url).ok()?;
    (target.host.as_str(), target.port).to_socket_addrs().ok()?.next()
}

/// The address this machine sends from to `to` (a UDP connect sends nothing).
fn source_for(to: IpAddr) -> Option<IpAddr> {
    let bind = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect((to, 9)).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

/// The median of [`RTT_PROBES`] connects to `server`, or `None` if none connected.
fn idle_rtt(server: SocketAddr) -> Option<Duration> {
    let mut times: Vec<Duration> = (0..RTT_PROBES)
        .filter_map(|_| {
            let started = Instant::now();
            let conn = TcpStream::connect_timeout(&server, Duration::from_secs(2)).ok()?;
            let took = started.elapsed();
            drop(conn);
            Some(took)
        })
        .collect();
    times.sort();
    times.get(times.len() / 2).copied()
}

/// The shell script that prints `key=value` lines of the machine it runs on (POSIX sh,
/// /proc, /sys, `ip` and `dpkg-query`, as the lab's own environment reads them).
fn script(client: Option<IpAddr>, packages: &[&str]) -> String {
    let mut names: Vec<&str> = packages.to_vec();
    names.sort_unstable();
    names.dedup();
    let quoted: Vec<String> =
        names.iter().filter(|n| is_package_name(n)).map(|n| format!("'{n}'")).collect();
    let mut s = String::from(
        "echo \"hostname=$(cat /proc/sys/kernel/hostname)\"; \
         echo \"kernel=$(cat /proc/sys/kernel/osrelease)\"; \
         echo \"cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)\"; \
         echo \"cpu_count=$(nproc)\"; \
         echo \"memory_kb=$(sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo)\"; ",
    );
    if let Some(ip) = client {
        s.push_str(&format!(
            "dev=$(ip -o route get {ip} 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p'); \
             echo \"nic=$dev\"; \
             [ -n \"$dev\" ] && echo \"nic_speed=$(cat /sys/class/net/$dev/speed 2>/dev/null)\"; "
        ));
    }
    if !quoted.is_empty() {
        s.push_str(&format!(
            "dpkg-query -W -f 'package=${{Package}} ${{Version}}\\n' {} 2>/dev/null; ",
            quoted.join(" ")
        ));
    }
    s.push_str("true");
    s
}

/// Debian's package names: lower case letters, digits, `+-.`.
fn is_package_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
}

/// The script's output read into `facts`.
fn read_into(facts: &mut HostFacts, output: &str) {
    for line in output.lines() {
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim();
        match key {
            "hostname" => facts.hostname = value.into(),
            "kernel" => facts.kernel = value.into(),
            "cpu_model" => facts.cpu_model = value.into(),
            "cpu_count" => facts.cpu_count = value.parse().unwrap_or(0),
            "memory_kb" => facts.memory_bytes = value.parse::<u64>().unwrap_or(0) * 1024,
            "nic" if !value.is_empty() => facts.server_nic = Some(value.into()),
            // A virtual device says -1, or nothing.
            "nic_speed" => facts.server_nic_mbps = value.parse::<u64>().ok().filter(|s| *s > 0),
            "package" => {
                if let Some((name, version)) = value.split_once(' ') {
                    facts.packages.insert(name.into(), version.into());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_lines_are_read_and_unknowns_stay_empty() {
        let mut facts = HostFacts::default();
        read_into(
            &mut facts,
            "hostname=lab1\nkernel=6.1.0-18-amd64\ncpu_model=AMD EPYC 7B13\ncpu_count=8\n\
             memory_kb=16384\nnic=eth0\nnic_speed=-1\npackage=nginx 1.22.1-9\nnoise\n",
        );
        assert_eq!((facts.hostname.as_str(), facts.cpu_count), ("lab1", 8));
        assert_eq!(facts.memory_bytes, 16384 * 1024);
        assert_eq!((facts.server_nic.as_deref(), facts.server_nic_mbps), (Some("eth0"), None));
        assert_eq!(facts.packages["nginx"], "1.22.1-9");
        assert_eq!(facts.idle_rtt_us, None);
    }

    #[test]
    fn the_script_asks_only_about_package_names_and_the_clients_route() {
        let s = script("10.215.0.1".parse().ok(), &["nginx", "php8.2-fpm", "x; rm -rf /"]);
        assert!(s.contains("'nginx' 'php8.2-fpm'"), "{s}");
        assert!(!s.contains("rm -rf"), "{s}");
        assert!(s.contains("ip -o route get 10.215.0.1"), "{s}");
        assert!(!script(None, &[]).contains("dpkg-query"));
    }

    /// The script run by this machine's own shell reads this machine as lab::environment does.
    #[test]
    fn the_script_reads_this_machine() {
        let out = std::process::Command::new("sh").arg("-c").arg(script(None, &[])).output();
        let mut facts = HostFacts::default();
        read_into(&mut facts, &String::from_utf8_lossy(&out.expect("sh runs").stdout));
        let here = loadlab_lab::environment::read(&[]);
        assert_eq!(facts.kernel, here.kernel);
        assert_eq!(facts.cpu_model, here.cpu_model);
        assert!(facts.cpu_count >= 1 && facts.memory_bytes > 0, "{facts:?}");
    }
}
