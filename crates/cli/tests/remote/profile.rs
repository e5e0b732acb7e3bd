//! `run --host B --profile`: each tier's stacks are recorded in B, where its processes are,
//! and stored with the cell in A. B's loadlab finds perf through a wrapper on its search path
//! that notes the network namespace it ran in, so the test knows which host recorded. perf
//! refused in B: one line, the run goes on without profiles; perf missing in B: linux-perf
//! and the host named before anything starts, exit 4. Needs root, iproute2, openssh, nginx
//! and linux-perf (and php-fpm and php-excimer for the PHP stack).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use loadlab_store::Store;

use super::lab_hosts;
use crate::support::hosts::Hosts;
use crate::support::sshd::Sshd;
use crate::support::{output_within, skip};

/// A suite of one cell: `stack` there under `workload` at 4 connections for `seconds`.
fn suite(stack: &str, workload: &str, seconds: u32) -> String {
    format!(
        "name = \"profile-on-a-host\"\n\
         description = \"{stack} on a lab host, profiled there\"\n\
         repetitions = 1\nwarmup = \"300ms\"\n\n\
         [[stacks]]\nname = \"{stack}\"\n\n\
         [[workloads]]\nname = \"{workload}\"\n\n\
         [[loads]]\nmodel = \"closed\"\nconcurrency = [4]\nduration = \"{seconds}s\"\n"
    )
}

/// The directories B's loadlab searches besides the test's own first.
const SYSTEM: &str = "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin";

/// The real perf, or `None` after a visible skip (a failure in CI).
fn perf() -> Option<PathBuf> {
    match loadlab_lab::programs::PERF.find() {
        Ok(perf) => Some(perf),
        Err(_) => {
            skip::missing("perf", "linux-perf").report();
            None
        }
    }
}

/// A `perf` in `dir` that runs `body` (a shell script's lines), after noting in `dir/ran`
/// the network namespace it runs in and its subcommand.
fn wrapper(dir: &Path, body: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let ran = dir.join("ran");
    let script =
        format!("#!/bin/sh\necho \"$(ip netns identify $$) $1\" >> {}\n{body}\n", ran.display());
    let path = dir.join("perf");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    ran
}

/// Static nginx there profiled: [`run_suite`] of hello.txt for 3 s.
fn profiled_run(sshd: &Sshd, hosts: &Hosts, search: &str) -> (Output, PathBuf) {
    run_suite(sshd, hosts, &suite("nginx", "hello.txt", 3), search)
}

/// `run --suite TEXT --host B --profile all` from A, B's loadlab searching `search`.
fn run_suite(sshd: &Sshd, hosts: &Hosts, text: &str, search: &str) -> (Output, PathBuf) {
    let suite = sshd.dir.path().join("profile.toml");
    std::fs::write(&suite, text).unwrap();
    let out = sshd.dir.path().join("out");
    let (suite_arg, out_arg, url) =
        (suite.display().to_string(), out.display().to_string(), sshd.url());
    let args =
        ["run", "--suite", &suite_arg, "--host", &url, "--profile", "all", "--out", &out_arg];
    let mut command = sshd.loadlab_in(&hosts.a, &args);
    let setting = format!("LOADLAB_SEARCH_PATH={search}");
    command.env("LOADLAB_SSH_COMMAND", sshd.ssh_command_setting(&setting));
    (output_within(command, Duration::from_secs(240)), out)
}

fn said(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A run that succeeded and recorded its one cell's profiles: what it said and them; `None`
/// after a visible skip where perf may not record.
fn recorded(out: &Output, db: &Path) -> Option<(String, Vec<loadlab_store::ProfileRecord>)> {
    let said = said(out);
    assert!(out.status.success(), "{:?}\n{said}", out.status);
    if refused_here(&said) {
        return None;
    }
    let (cell, profiles) = the_cell(db);
    assert_eq!(cell.knobs["profile"], "perf", "{:?}", cell.knobs);
    Some((said, profiles))
}

/// Whether perf may not record here (the kernel's `perf_event_paranoid`, a container), as
/// `run` says it: a skip locally, a failure in CI.
fn refused_here(said: &str) -> bool {
    if said.contains("perf could not record") {
        assert!(!skip::servers_required(), "perf refused in CI:\n{said}");
        eprintln!("skipped: perf refused here:\n{said}");
        return true;
    }
    false
}

/// The one cell of the run in `out`, and its stored profiles.
fn the_cell(out: &Path) -> (loadlab_store::CellRecord, Vec<loadlab_store::ProfileRecord>) {
    let store = Store::open(out.join("loadlab.db")).expect("the run's store");
    let run = store.runs().expect("runs").pop().expect("one run").run;
    let mut cells = store.cells(run.id).expect("cells");
    assert_eq!(cells.len(), 1);
    let cell = cells.remove(0);
    let profiles = store.profiles(run.id, cell.ordinal).expect("profiles");
    (cell, profiles)
}

#[test]
fn a_profiled_run_on_a_lab_host_records_there_and_stores_each_tiers_stacks() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let Some(real) = perf() else { return };
    let dir = sshd.dir.path().join("perf-b");
    let ran = wrapper(&dir, &format!("exec {} \"$@\"", real.display()));
    let (out, db) = profiled_run(&sshd, &hosts, &format!("{}:{SYSTEM}", dir.display()));
    let Some((said, profiles)) = recorded(&out, &db) else { return };
    let nginx = profiles.iter().find(|p| p.tier == "nginx").unwrap_or_else(|| {
        panic!(
            "no nginx profile: {:?}\n{said}",
            profiles.iter().map(|p| &p.tier).collect::<Vec<_>>()
        )
    });
    assert!(nginx.samples > 0, "{nginx:?}");
    eprintln!("nginx in B: {} samples, {} lost", nginx.samples, nginx.lost);
    assert!(nginx.folded.lines().all(|l| l.starts_with("nginx")), "{}", nginx.folded);
    assert_eq!(nginx.interval_us, 10_101);
    // perf recorded and folded in B, and nowhere else.
    let ran = std::fs::read_to_string(&ran).unwrap_or_default();
    let lines: Vec<&str> = ran.lines().collect();
    for sub in ["record", "script"] {
        assert!(lines.contains(&format!("{} {sub}", hosts.b.netns).as_str()), "{ran}");
    }
    assert!(lines.iter().all(|l| l.starts_with(&hosts.b.netns)), "{ran}");
}

#[test]
fn perf_refused_on_the_lab_host_is_one_line_and_the_run_goes_on_without_profiles() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let dir = sshd.dir.path().join("perf-b");
    let refuses =
        "echo 'Error:' >&2\necho 'No permission to enable cpu-clock event.' >&2\nexit 255";
    wrapper(&dir, refuses);
    let (out, db) = profiled_run(&sshd, &hosts, &format!("{}:{SYSTEM}", dir.display()));
    let said = said(&out);
    assert!(out.status.success(), "{:?}\n{said}", out.status);
    let line = format!(
        "perf could not record (on {}: No permission to enable cpu-clock event.); the run goes \
         on without profiles",
        sshd.url()
    );
    assert_eq!(said.matches(&line).count(), 1, "{said}");
    let (cell, profiles) = the_cell(&db);
    assert!(profiles.is_empty(), "{profiles:?}");
    let knob = cell.knobs["profile"].as_str().unwrap_or_default().to_string();
    assert!(knob.starts_with(&format!("refused: on {}", sshd.url())), "{knob}");
}

#[test]
fn perf_missing_on_the_lab_host_is_named_before_the_run_starts_with_exit_4() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    // B finds what nginx needs and no perf.
    let dir = sshd.dir.path().join("no-perf");
    std::fs::create_dir_all(&dir).unwrap();
    let nginx = loadlab_lab::stack("nginx").unwrap();
    for path in nginx.needs(&loadlab_lab::Knobs::default()).iter().filter_map(|n| n.path()) {
        let _ = std::os::unix::fs::symlink(&path, dir.join(path.file_name().unwrap()));
    }
    let (out, db) = profiled_run(&sshd, &hosts, &dir.display().to_string());
    let said = said(&out);
    assert_eq!(out.status.code(), Some(4), "{said}");
    let line = said.lines().find(|l| l.contains("lacks")).unwrap_or_else(|| panic!("{said}"));
    assert!(line.contains(&sshd.url()) && line.contains("linux-perf"), "{line}");
    assert!(!line.contains("nginx"), "B has nginx: {line}");
    assert!(!db.join("loadlab.db").exists(), "a run began");
}

/// A PHP stack there is profiled as one here is: perf's stacks of nginx and php-fpm stored,
/// and PHP's own, its PHP tiers readied for them there (`stack up --profile`). phpinfo()
/// mostly ends within excimer's first 1 ms: a few of 5 s of them do not. Needs php-fpm and
/// php-excimer too.
#[test]
fn a_php_stack_on_a_lab_host_is_profiled_there_tier_by_tier() {
    let Some((hosts, sshd)) = lab_hosts() else { return };
    let Some(_) = perf() else { return };
    if loadlab_lab::programs::EXCIMER.find().is_err() {
        return skip::missing("excimer.so", "php-excimer").report();
    }
    let (out, db) = run_suite(&sshd, &hosts, &suite("nginx-fpm", "phpinfo.php", 5), SYSTEM);
    let Some((_, profiles)) = recorded(&out, &db) else { return };
    let names: Vec<&str> = profiles.iter().map(|p| p.tier.as_str()).collect();
    let php = loadlab_lab::profiler::php::TIER;
    assert_eq!(names, ["nginx", php, "php-fpm"]);
    for p in &profiles {
        assert!(p.samples > 0, "{}: {p:?}", p.tier);
        eprintln!("{} in B: {} samples", p.tier, p.samples);
    }
}
