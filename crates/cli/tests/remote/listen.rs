//! A suite's `listen` on a stack of another host: the front binds the address the suite gives
//! (here B's IPv6 address, where ssh reached B over IPv4, so the default would differ), the
//! cells load it there from A, and MariaDB behind it stays on loopback (verify's loopback
//! check fails on any other listening socket). Needs root, iproute2, openssh, nginx, php-fpm
//! and MariaDB.

use std::time::Duration;

use super::{lab_hosts, left_in_b};
use crate::support::{output_within, wait_until};

/// A first MariaDB datadir on B, a verify, one short cell.
const WHOLE_RUN: Duration = Duration::from_secs(240);

#[test]
fn a_suites_listen_puts_the_front_there_and_mariadb_stays_on_loopback() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let suite = sshd.dir.path().join("listen.toml");
    let listen = hosts.b.addr6.to_string();
    std::fs::write(
        &suite,
        format!(
            "name = \"listen-on-b\"\nrepetitions = 1\n\n[[stacks]]\nname = \"nginx-fpm\"\n\
             db = true\nhost = \"{}\"\nlisten = \"[{listen}]\"\n\n[[workloads]]\n\
             name = \"country.php\"\n\n[[loads]]\nmodel = \"closed\"\nconcurrency = [2]\n\
             requests = 50\n",
            sshd.url()
        ),
    )
    .unwrap();
    let out = sshd.dir.path().join("out");
    let (suite_arg, out_arg) = (suite.display().to_string(), out.display().to_string());
    let args = ["run", "--suite", &suite_arg, "--out", &out_arg];
    let ran = output_within(sshd.loadlab_in(&hosts.a, &args), WHOLE_RUN);
    let stdout = String::from_utf8_lossy(&ran.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
    assert!(ran.status.success(), "{:?}\n{stdout}\n{stderr}", ran.status);
    let at = format!("at http://[{listen}]:");
    assert!(stdout.contains(&at), "the front is not on {listen}:\n{stdout}");
    assert!(wait_until(Duration::from_secs(5), || left_in_b(&hosts, &sshd).is_empty()));

    let cell = super::only_cell(&out, 50.0);
    assert_eq!(cell.knobs.get("listen").and_then(|l| l.as_str()), Some(&*listen));
    let tiers: Vec<&str> = cell.samples.iter().map(|s| s.tier.as_str()).collect();
    assert!(tiers.contains(&"mariadb"), "MariaDB sampled on B: {tiers:?}");
}
