//! A TLS stack on another host is loaded trusting its own CA, copied from there through ssh:
//! no `--insecure`, verify and every request over https to B's address (which the
//! instance's certificate names). Needs root, iproute2, openssh and nginx.

use std::time::Duration;

use super::{lab_hosts, left_in_b};
use crate::support::{output_within, wait_until};

#[test]
fn a_tls_stack_on_b_is_loaded_trusting_its_ca_fetched_through_the_session() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let suite = sshd.dir.path().join("tls.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"tls-on-b\"\nrepetitions = 1\n\n[[stacks]]\nname = \"nginx\"\ntls = true\n\
             host = \"{}\"\n\n[[workloads]]\nname = \"hello.txt\"\n\n[[loads]]\n\
             model = \"closed\"\nconcurrency = [2]\nrequests = 100\n",
            sshd.url()
        ),
    )
    .unwrap();
    let out = sshd.dir.path().join("out");
    let (suite_arg, out_arg) = (suite.display().to_string(), out.display().to_string());
    let ran = output_within(
        sshd.loadlab_in(&hosts.a, &["run", "--suite", &suite_arg, "--out", &out_arg]),
        Duration::from_secs(180),
    );
    let stdout = String::from_utf8_lossy(&ran.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
    assert!(ran.status.success(), "{:?}\n{stdout}\n{stderr}", ran.status);
    assert!(stdout.contains(&format!("at https://{}:", hosts.b.addr)), "{stdout}");
    super::only_cell(&out, 100.0);
    assert!(wait_until(Duration::from_secs(5), || left_in_b(&hosts, &sshd).is_empty()));
    // The copy of the CA went with the run.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loadlab-remote-ca-"))
        .filter(|e| {
            std::fs::read_dir(e.path()).is_ok_and(|mut d| {
                d.any(|f| {
                    f.is_ok_and(|f| {
                        f.file_name()
                            .to_string_lossy()
                            .contains(&hosts.b.addr.to_string().replace('.', "_"))
                    })
                })
            })
        })
        .collect();
    assert!(left.is_empty(), "CA copies left: {left:?}");
}
