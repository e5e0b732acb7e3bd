//! On-CPU profiles of a cell's tiers: one `perf record -e cpu-clock -F 99 -g` attached to each
//! tier's processes while the cell runs, its `perf script` folded into stacks in process by
//! inferno's perf collapser (the Rust port of FlameGraph's `stackcollapse-perf.pl`).
//!
//! `cpu-clock` is the kernel's software timer event: a virtual machine often exposes no
//! hardware counters, and the software event samples a task only while it is on a CPU, which
//! is the question (where the tier's CPU went). 99 Hz, not 100, so the samples do not beat
//! with the kernel's own 100 Hz or 1000 Hz timers and see only what runs in lockstep with them.
//! `-p` attaches to the threads there now; perf's default inheritance follows the children they
//! fork later (php-fpm's and Apache's spawned workers).

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use inferno::collapse::Collapse;
use serde::{Deserialize, Serialize};

/// perf's sampling frequency, per second of a task's CPU time.
pub const FREQUENCY_HZ: u64 = 99;

/// A profile with fewer samples than this says too little to draw (a flame graph of a few
/// hundred stacks is mostly noise); it is stored and said so.
pub const ENOUGH_SAMPLES: u64 = 500;

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

/// The profiles of one cell, or why there are none.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Profiles {
    pub tiers: Vec<TierProfile>,
    /// perf could not attach (`perf_event_open` refused by the kernel's
    /// `perf_event_paranoid`, a container's seccomp, a missing capability): its own words.
    pub refused: Option<String>,
}

/// `perf record`s running, one per tier.
pub struct Profiler {
    recordings: Vec<Recording>,
    perf: PathBuf,
}

struct Recording {
    tier: String,
    child: Child,
    data: PathBuf,
}

/// Names each recording's file apart from every other of this process's.
static NEXT: AtomicU64 = AtomicU64::new(0);

impl Profiler {
    /// Starts `perf` (the program at that path) on each tier's pids; a tier without any is
    /// left out.
    pub fn start(perf: &Path, tiers: &[(String, Vec<i32>)]) -> Profiler {
        let mut recordings = Vec::new();
        for (tier, pids) in tiers.iter().filter(|(_, p)| !p.is_empty()) {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let data =
                std::env::temp_dir().join(format!("loadlab-perf-{}-{n}.data", std::process::id()));
            let pids: Vec<String> = pids.iter().map(i32::to_string).collect();
            let spawned = Command::new(perf)
                .args(["record", "-q", "-e", "cpu-clock", "-F", &FREQUENCY_HZ.to_string(), "-g"])
                .arg("-o")
                .arg(&data)
                .args(["-p", &pids.join(",")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn();
            if let Ok(child) = spawned {
                recordings.push(Recording { tier: tier.clone(), child, data });
            }
        }
        Profiler { recordings, perf: perf.to_path_buf() }
    }

    /// Stops every recording (SIGINT: perf then writes its file and exits) and folds each.
    pub fn finish(self) -> Profiles {
        let mut profiles = Profiles::default();
        for mut r in self.recordings {
            // SAFETY: kill(2) on our own child's pid, which it stays until it is waited for.
            unsafe { libc::kill(r.child.id() as i32, libc::SIGINT) };
            let mut said = String::new();
            if let Some(mut err) = r.child.stderr.take() {
                let _ = err.read_to_string(&mut said);
            }
            let status = r.child.wait();
            let recorded =
                status.is_ok_and(|s| s.success() || s.code().is_none()) && r.data.exists();
            if !recorded || refused(&said) {
                profiles.refused.get_or_insert_with(|| first_line(&said));
            } else if let Some(p) = fold(&self.perf, &r.tier, &r.data) {
                profiles.tiers.push(p);
            }
            let _ = std::fs::remove_file(&r.data);
        }
        profiles
    }
}

/// `perf script` of one recording, folded.
fn fold(perf: &Path, tier: &str, data: &Path) -> Option<TierProfile> {
    let mut child = Command::new(perf)
        // Without the period field: inferno weighs a stack by the period it is given (for
        // cpu-clock, the 10,101,010 ns between two samples), and the folded counts are samples.
        .args(["script", "-F", "comm,pid,tid,time,event,ip,sym,dso"])
        .arg("-i")
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let out = BufReader::new(child.stdout.take()?);
    let mut err = child.stderr.take()?;
    // stderr read beside stdout, so that neither pipe fills while the other is drained.
    let warnings = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let folded = fold_script(out);
    let _ = child.wait();
    let said = warnings.join().unwrap_or_default();
    let folded = folded.ok()?;
    Some(TierProfile {
        tier: tier.to_string(),
        samples: samples_in(&folded),
        folded,
        lost: lost_in(&said),
        interval_us: 1_000_000 / FREQUENCY_HZ,
    })
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
        let folded = fold_script(SCRIPT.as_bytes()).unwrap();
        assert!(folded.contains("nginx;ngx_http_write_filter;__GI___libc_write 2"), "{folded}");
        assert!(folded.contains(";ksys_write;vfs_write 1"), "{folded}");
        assert_eq!(samples_in(&folded), 3);
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
        let profiler = Profiler::start(&perf, &[("spin".into(), vec![busy.id() as i32])]);
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let profiles = profiler.finish();
        busy.kill().unwrap();
        busy.wait().unwrap();
        if let Some(why) = &profiles.refused {
            assert!(!required(), "perf refused: {why}");
            return eprintln!("skipped: {why}");
        }
        let spin = &profiles.tiers[0];
        assert_eq!(spin.tier, "spin");
        assert!((50..=400).contains(&spin.samples), "{} samples: {}", spin.samples, spin.folded);
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
        let profiles = Profiler::start(&fake, &[("nginx".into(), vec![1])]).finish();
        assert!(profiles.tiers.is_empty());
        assert_eq!(profiles.refused.as_deref(), Some("No permission to enable cpu-clock event."));
    }

    fn required() -> bool {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        set("LOADLAB_REQUIRE_SERVERS") || set("CI")
    }
}
