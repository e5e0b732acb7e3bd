//! On-CPU profiles of a cell's tiers: `perf record -e cpu-clock -F 99 -g` while the cell runs,
//! its `perf script` split by the tiers' pids and folded into stacks in process by inferno's
//! perf collapser (the Rust port of FlameGraph's `stackcollapse-perf.pl`).
//!
//! `cpu-clock` is the kernel's software timer event: a virtual machine often exposes no
//! hardware counters, and the software event samples a task only while it is on a CPU, which
//! is the question (where the tier's CPU went). 99 Hz, not 100, so the samples do not beat
//! with the kernel's own 100 Hz or 1000 Hz timers and see only what runs in lockstep with them.
//!
//! perf sees PHP's interpreter (`execute_ex`, `zend_compile_file`), not the PHP functions it
//! runs: [`php`] adds PHP's own stacks, from php-excimer inside the PHP tiers.

pub mod php;

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use inferno::collapse::Collapse;
use serde::{Deserialize, Serialize};

/// perf's sampling frequency, per second of a task's CPU time.
pub const FREQUENCY_HZ: u64 = 99;

/// One tier's on-CPU stacks over one cell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierProfile {
    pub tier: String,
    /// Folded stacks: `root;caller;callee COUNT`, one per line, the format flamegraph.pl and
    /// inferno read.
    pub folded: String,
    /// Samples in `folded`.
    pub samples: u64,
    /// What perf said the kernel's ring buffer dropped ("lost N chunks"): not in `folded`.
    pub lost: u64,
    /// Between two samples of a task on a CPU, µs.
    pub interval_us: u64,
}

/// The profiles of one cell, or why there are none: what a lab host's session sends back
/// too (see loadlab_remote::protocol).
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Profiles {
    pub tiers: Vec<TierProfile>,
    /// perf could not attach (`perf_event_open` refused by the kernel's
    /// `perf_event_paranoid`, a container's seccomp, a missing capability): its own words.
    pub refused: Option<String>,
}

/// A `perf record` running on every CPU, whose samples are split among the tiers by pid when
/// it stops.
///
/// System-wide, not `-p PIDS`: attached to each of a tier's hundreds of processes (a spawn-fcgi
/// tier of 200 php-cgi children), perf 6.1 opens a ring buffer per thread and came back with
/// one sample where the same load gave 130 system-wide. The samples of other processes cost
/// the same 99 Hz per CPU and are dropped when folding.
pub struct Profiler {
    child: Child,
    data: PathBuf,
    perf: PathBuf,
    /// PHP's own stacks, recorded beside perf's for a stack whose PHP tiers can.
    php: Option<php::PhpStacks>,
}

/// What records an instance's stacks: the perf found, and the profile directory of its PHP
/// tiers where it was brought up for PHP's own stacks (see [`php::dir`]).
#[derive(Clone, Debug)]
pub struct Tools {
    pub perf: PathBuf,
    pub php: Option<PathBuf>,
}

/// Names each recording's file apart from every other of this process's.
static NEXT: AtomicU64 = AtomicU64::new(0);

impl Profiler {
    /// Starts `perf` (the program at that path) on every CPU, and returns once it records.
    ///
    /// System-wide perf first writes a record of every process's mappings, which takes a
    /// second or more on a busy machine; a recording stopped before it is done holds nothing.
    /// So it starts disabled (`-D -1`) and is enabled over its control fifo, whose ack says
    /// the events are on: the cell starts after that. With `php` (an instance's
    /// [`php::dir`]), its PHP tiers record PHP's own stacks too.
    pub fn start(perf: &Path, php: Option<&Path>) -> Profiler {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("loadlab-perf-{}-{n}", std::process::id()));
        let (data, ctl, ack) =
            (base.with_extension("data"), base.with_extension("ctl"), base.with_extension("ack"));
        let fifos = [&ctl, &ack].iter().all(|p| mkfifo(p));
        let control = format!("fifo:{},{}", ctl.display(), ack.display());
        let child = Command::new(perf)
            .args(["record", "-q", "-a", "-e", "cpu-clock", "-F", &FREQUENCY_HZ.to_string(), "-g"])
            .args(["-D", "-1", "--control", &control])
            .arg("-o")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        // A perf that cannot even be started fails as a refused one does, at the stop.
        let mut child = child.unwrap_or_else(|_| {
            Command::new("false").stderr(Stdio::piped()).spawn().expect("false(1) runs")
        });
        if fifos {
            enable(&mut child, &ctl, &ack);
        }
        for f in [&ctl, &ack] {
            let _ = std::fs::remove_file(f);
        }
        let php = php.map(php::PhpStacks::start);
        Profiler { child, data, perf: perf.to_path_buf(), php }
    }

    /// Stops the recording (SIGINT: perf then writes its file and exits) and folds the stacks
    /// of each tier's pids, in the tiers' order.
    pub fn finish(mut self, tiers: &[(String, Vec<i32>)]) -> Profiles {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: kill(2) on our own child's pid, which it stays until it is waited for.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        }
        let mut said = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut said);
        }
        let status = self.child.wait();
        let recorded = status.is_ok_and(|s| s.success() || s.code().is_none())
            && self.data.exists()
            && !refused(&said);
        let mut profiles = match recorded {
            true => fold(&self.perf, &self.data, tiers),
            false => Profiles { tiers: Vec::new(), refused: Some(first_line(&said)) },
        };
        let _ = std::fs::remove_file(&self.data);
        // PHP's stacks come from inside PHP, whatever became of perf; with `refused` set, the
        // run and `stack sample` keep none of the cell's profiles, and say why.
        profiles.tiers.extend(self.php.and_then(php::PhpStacks::finish));
        profiles
    }
}

/// How long perf may take to write the mappings of every process before it records.
const START_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

fn mkfifo(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path that outlives the call.
    unsafe { libc::mkfifo(c.as_ptr(), 0o600) == 0 }
}

/// Tells perf to enable its events and waits for its ack, while it lives and for at most
/// [`START_LIMIT`]. Both fifos are opened read-write, which on Linux never blocks (a
/// write-only open would wait for a reader that a perf refused at its start never becomes).
fn enable(child: &mut Child, ctl: &Path, ack: &Path) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let open = |p: &Path| std::fs::OpenOptions::new().read(true).write(true).open(p);
    let (Ok(mut ctl), Ok(mut ack)) = (open(ctl), open(ack)) else { return };
    if ctl.write_all(b"enable\n").is_err() {
        return;
    }
    let started = std::time::Instant::now();
    while started.elapsed() < START_LIMIT && matches!(child.try_wait(), Ok(None)) {
        let mut fd = libc::pollfd { fd: ack.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd, valid for the call.
        if unsafe { libc::poll(&mut fd, 1, 100) } > 0 {
            let mut buf = [0u8; 16];
            let _ = ack.read(&mut buf);
            return;
        }
    }
}

/// `perf script` of one recording, split by tier and folded.
fn fold(perf: &Path, data: &Path, tiers: &[(String, Vec<i32>)]) -> Profiles {
    let pids: Vec<String> = tiers.iter().flat_map(|(_, p)| p).map(i32::to_string).collect();
    let spawned = Command::new(perf)
        // Without the period field: inferno weighs a stack by the period it is given (for
        // cpu-clock, the 10,101,010 ns between two samples), and the folded counts are samples.
        .args(["script", "-F", "comm,pid,tid,time,event,ip,sym,dso"])
        // Only the tiers' samples have their symbols looked up, not every process's.
        .args(["--pid", &pids.join(",")])
        .arg("-i")
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Profiles { tiers: Vec::new(), refused: Some(format!("perf script: {e}")) }
        }
    };
    let out = child.stdout.take().map(BufReader::new);
    let mut err = child.stderr.take();
    // stderr read beside stdout, so that neither pipe fills while the other is drained.
    let warnings = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let split = out.map(|o| split_by_tier(o, tiers)).unwrap_or_default();
    let _ = child.wait();
    let lost = lost_in(&warnings.join().unwrap_or_default());
    let mut profiles = Profiles::default();
    for ((tier, _), script) in tiers.iter().zip(split) {
        let Ok(folded) = fold_script(script.as_slice()) else { continue };
        profiles.tiers.push(TierProfile {
            tier: tier.clone(),
            samples: samples_in(&folded),
            folded,
            // perf counts what it lost per recording, not per process: each tier is told it.
            lost,
            interval_us: 1_000_000 / FREQUENCY_HZ,
        });
    }
    profiles
}

/// `perf script`'s samples (a header line `comm pid/tid time: event:`, then frames, then a
/// blank line) routed to the tier whose pids hold the sample's pid; others are dropped.
fn split_by_tier(script: impl std::io::BufRead, tiers: &[(String, Vec<i32>)]) -> Vec<Vec<u8>> {
    let owner: std::collections::HashMap<i32, usize> = tiers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, pids))| pids.iter().map(move |p| (*p, i)))
        .collect();
    let mut out = vec![Vec::new(); tiers.len()];
    let mut to: Option<usize> = None;
    for line in script.lines().map_while(Result::ok) {
        // Frames start with a tab; a header is right-aligned with spaces (`perf script -a`).
        if !line.starts_with('\t') && !line.trim().is_empty() {
            to = sample_pid(&line).and_then(|pid| owner.get(&pid).copied());
        }
        if let Some(i) = to {
            out[i].extend_from_slice(line.as_bytes());
            out[i].push(b'\n');
        }
        if line.trim().is_empty() {
            to = None;
        }
    }
    out
}

/// The pid of a sample's header line: the field before the time that reads `pid/tid` (the
/// command name before it may hold spaces).
fn sample_pid(header: &str) -> Option<i32> {
    let fields: Vec<&str> = header.split_whitespace().collect();
    let time = fields.iter().position(|f| f.ends_with(':'))?;
    fields.get(time.checked_sub(1)?)?.split('/').next()?.parse().ok()
}

/// `perf script`'s text folded into stacks, one thread: the machine's other CPUs are the
/// load's and the servers'.
pub fn fold_script(script: impl std::io::BufRead) -> std::io::Result<String> {
    let mut options = inferno::collapse::perf::Options::default();
    options.nthreads = 1;
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::from(options).collapse(script, &mut folded)?;
    Ok(String::from_utf8_lossy(&folded).into_owned())
}

/// The samples of folded stacks: the sum of each line's trailing count.
pub fn samples_in(folded: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, n)| n.trim().parse::<u64>().ok()))
        .sum()
}

/// The share of a profile's samples in the frames a rule picks: those in which such a frame
/// was on the CPU itself (the leaf), and those in which one was anywhere on the stack (each
/// stack counted once). The root frame is the process, not a function.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Share {
    pub samples: u64,
    pub self_samples: u64,
    pub total_samples: u64,
}

impl Share {
    /// `self_samples` as a fraction of all; 0 for a profile without samples.
    pub fn self_fraction(&self) -> f64 {
        self.self_samples as f64 / self.samples.max(1) as f64
    }

    /// `total_samples` as a fraction of all; 0 for a profile without samples.
    pub fn total_fraction(&self) -> f64 {
        self.total_samples as f64 / self.samples.max(1) as f64
    }
}

/// The [`Share`] of `folded`'s samples in the frames `picks` says yes to.
pub fn share(folded: &str, picks: impl Fn(&str) -> bool) -> Share {
    let mut share = Share { samples: 0, self_samples: 0, total_samples: 0 };
    for line in folded.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else { continue };
        let Ok(n) = n.trim().parse::<u64>() else { continue };
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        share.samples += n;
        if frames.last().is_some_and(|f| picks(f)) {
            share.self_samples += n;
        }
        if frames.iter().any(|f| picks(f)) {
            share.total_samples += n;
        }
    }
    share
}

/// perf's "Processed N events and lost M chunks!" warnings, summed.
fn lost_in(said: &str) -> u64 {
    said.lines()
        .filter_map(|l| {
            let (_, after) = l.split_once(" and lost ")?;
            after.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// Whether perf's words are the kernel refusing `perf_event_open` (EACCES, EPERM) rather
/// than another failure.
fn refused(said: &str) -> bool {
    ["perf_event_open", "No permission", "Permission denied", "Operation not permitted"]
        .iter()
        .any(|w| said.contains(w))
}

/// The first line of perf's message that says something, for a one-line note.
fn first_line(said: &str) -> String {
    said.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.eq_ignore_ascii_case("error:"))
        .map_or_else(|| "perf record failed without a word".to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
nginx 21275/21275 11649.210544: cpu-clock: 
\tffffffff816d67da vfs_write ([kernel.kallsyms])
\tffffffff816d6daf ksys_write ([kernel.kallsyms])
\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           5a000 ngx_http_write_filter (/usr/sbin/nginx)

          nginx 21275/21275 11649.229471: cpu-clock: 
\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           5a000 ngx_http_write_filter (/usr/sbin/nginx)

nginx 21275/21275 11649.239471: cpu-clock: 
\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           5a000 ngx_http_write_filter (/usr/sbin/nginx)

";

    #[test]
    fn perf_script_is_folded_root_first_with_counts() {
        let nginx = [("nginx".to_string(), vec![21275]), ("php".to_string(), vec![7])];
        let split = split_by_tier(SCRIPT.as_bytes(), &nginx);
        assert!(split[1].is_empty());
        let folded = fold_script(split[0].as_slice()).unwrap();
        assert!(folded.contains("nginx;ngx_http_write_filter;__GI___libc_write 2"), "{folded}");
        assert!(folded.contains(";ksys_write;vfs_write 1"), "{folded}");
        assert_eq!(samples_in(&folded), 3);
    }

    #[test]
    fn a_share_counts_the_picked_leaves_and_the_stacks_through_them() {
        let folded = "php-fpm;execute_ex;compile_file;zendparse 6\n\
                      php-fpm;execute_ex;compile_file;[php-fpm8.2] 2\n\
                      php-fpm;execute_ex;strlen 2\n\
                      compile_file 5\n";
        let s = share(folded, |f| f == "compile_file" || f == "zendparse");
        assert_eq!((s.samples, s.self_samples, s.total_samples), (15, 6, 8), "the root is not");
        assert!((s.self_fraction() - 0.4).abs() < 1e-9);
        assert_eq!(share("", |_| true).total_fraction(), 0.0);
    }

    #[test]
    fn perf_warnings_give_the_lost_and_the_refusal() {
        assert_eq!(lost_in("Warning:\nProcessed 1200 events and lost 7 chunks!\n"), 7);
        assert_eq!(lost_in("nothing"), 0);
        let said =
            "Error:\nNo permission to enable cpu-clock event.\n\nYou may not have permission";
        assert!(refused(said));
        assert_eq!(first_line(said), "No permission to enable cpu-clock event.");
    }

    /// The real perf on a process that spins: its stacks come back folded, named after it,
    /// with the samples a second of one CPU gives at 99 Hz. Needs perf (linux-perf) and the
    /// right to profile another process (root); in CI it must run.
    #[test]
    fn perf_profiles_a_busy_process() {
        let perf = match loadlab_programs::PERF.find() {
            Ok(p) => p,
            Err(e) if !required() => return eprintln!("skipped: {e}"),
            Err(e) => panic!("{e}"),
        };
        let mut busy = Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let pid = busy.id() as i32;
        let profiler = Profiler::start(&perf, None);
        let before = cpu_ticks(pid);
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let ticks = cpu_ticks(pid) - before;
        let profiles = profiler.finish(&[("spin".into(), vec![pid])]);
        busy.kill().unwrap();
        busy.wait().unwrap();
        if let Some(why) = &profiles.refused {
            assert!(!required(), "perf refused: {why}");
            return eprintln!("skipped: {why}");
        }
        let spin = &profiles.tiers[0];
        assert_eq!(spin.tier, "spin");
        // On a busy machine the spinner gets what the scheduler gives it: its samples follow
        // the CPU time it had (clock ticks of 10 ms, about one sample each at 99 Hz).
        let cpu = ticks as f64 * 100.0 / crate::procfs::clock_ticks() as f64;
        let lo = (cpu * 0.5 - 3.0).max(1.0) as u64;
        assert!(
            (lo..=(cpu * 1.5 + 5.0) as u64).contains(&spin.samples),
            "{} samples for {cpu:.0} ticks of 10 ms: {}",
            spin.samples,
            spin.folded
        );
        assert!(spin.folded.lines().all(|l| l.starts_with("sh")), "{}", spin.folded);
        assert_eq!(spin.interval_us, 10_101);
    }

    /// A perf that fails as it does when the kernel refuses `perf_event_open` gives no
    /// profile and perf's line, whatever the machine allows.
    #[test]
    fn a_refused_perf_gives_its_line_and_no_profile() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("perf");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'Error:' >&2\necho 'No permission to enable cpu-clock event.' >&2\nexit 255\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let profiler = Profiler::start(&fake, None);
        // A cell lasts longer than perf takes to be refused.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let profiles = profiler.finish(&[("nginx".into(), vec![1])]);
        assert!(profiles.tiers.is_empty());
        assert_eq!(profiles.refused.as_deref(), Some("No permission to enable cpu-clock event."));
    }

    fn cpu_ticks(pid: i32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = after.split_whitespace().collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    fn required() -> bool {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        set("LOADLAB_REQUIRE_SERVERS") || set("CI")
    }
}
