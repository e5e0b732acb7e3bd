//! `stack sample --host` stopped with Ctrl-C leaves no sampler running on B: as a terminal
//! sends it (SIGINT to the whole foreground process group: loadlab and its ssh) and as `kill
//! -INT` of loadlab alone. Needs root, iproute2, openssh and nginx.

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{comm, lab_hosts, left_in_b, up_held};
use crate::support::{sys, wait_until};

/// B's processes whose command line is a `stack sample`.
fn samplers_in_b(
    hosts: &crate::support::hosts::Hosts,
    sshd: &crate::support::sshd::Sshd,
) -> Vec<i32> {
    left_in_b(hosts, sshd)
        .into_iter()
        .filter(|p| {
            let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            words.windows(2).any(|w| w[0] == b"stack" && w[1] == b"sample")
        })
        .collect()
}

#[test]
fn ctrl_c_of_stack_sample_host_leaves_no_sampler_on_b() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let (instance, _) = up_held(&sshd, &hosts);
    let id = instance["id"].as_str().unwrap();
    let url = sshd.url();
    for whole_group in [true, false] {
        let args = ["stack", "sample", id, "--host", &url, "--duration", "120s", "--json"];
        let mut command = sshd.loadlab_in(&hosts.a, &args);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // Its own group, as a shell's job: a terminal's Ctrl-C goes to the whole group.
        command.process_group(0);
        let mut child = command.spawn().expect("start loadlab in A");
        // It prints at its end; what shows it started is its process in B.
        let started =
            wait_until(Duration::from_secs(60), || samplers_in_b(&hosts, &sshd).len() == 1);
        if !started {
            let _ = sys::kill(-(child.id() as i32), libc::SIGKILL);
            let _ = child.wait();
            panic!("no sampler started in B");
        }
        std::thread::sleep(Duration::from_millis(1500));
        let pid = child.id() as i32;
        let target = if whole_group { -pid } else { pid };
        sys::kill(target, libc::SIGINT).unwrap();
        let ended = wait_until(Duration::from_secs(10), || child.try_wait().unwrap().is_some());
        if !ended {
            let _ = sys::kill(-pid, libc::SIGKILL);
        }
        let _ = child.wait();
        assert!(ended, "loadlab went on after Ctrl-C (group: {whole_group})");
        let started = Instant::now();
        let gone = wait_until(Duration::from_secs(5), || samplers_in_b(&hosts, &sshd).is_empty());
        let left: Vec<String> =
            samplers_in_b(&hosts, &sshd).iter().map(|p| format!("{p} {}", comm(*p))).collect();
        assert!(gone, "a sampler left in B (group: {whole_group}): {left:?}");
        eprintln!(
            "B's sampler gone {:?} after loadlab ended (group: {whole_group})",
            started.elapsed()
        );
        // Nothing of ssh left in A either.
        assert!(wait_until(Duration::from_secs(5), || {
            super::pids_in(&hosts.a).iter().all(|p| comm(*p) != "ssh" || is_held_session(*p))
        }));
    }
    let down = super::run(&sshd, &hosts, &["stack", "down", id, "--host", &url]);
    crate::support::assert_success(&down, &["stack", "down"]);
}

/// The ssh of the held session (its owner's child), which stays.
fn is_held_session(pid: i32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains("--session")
}
