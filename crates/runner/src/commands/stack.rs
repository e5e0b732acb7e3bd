//! `loadlab stack` as sequences: a stack up (held in the foreground or detached), the remote
//! end of a `--host` session, sampling an instance, and which way `stack down` goes (a held
//! remote session, that host's loadlab, or this lab). The order of steps, the waiting and
//! the decisions are here; the cli prints what these return, or through the `print`, `say`
//! and `note` it gives.

use std::time::{Duration, Instant};

use loadlab_lab::profiler::Profiles;
use loadlab_lab::sampler::{Proc, ProcSource, Target, Tracker};
use loadlab_lab::{procfs, Knobs, Lab, Record, Sample, Stack, Up};
use loadlab_remote::held::Held;
use loadlab_remote::protocol::{Event, Order, Watch};
use loadlab_remote::{owner, Host};

use crate::commands::run::executor::StackError;

/// What a `loadlab stack` sequence failed with: the stack itself (here or on its host, as
/// any [`Stacks`](crate::Stacks) call fails), or a step only these sequences take.
#[derive(Debug, thiserror::Error)]
pub enum StackCommandError {
    #[error(transparent)]
    Stack(#[from] StackError),
    /// apt-get could not install the stack's missing packages (its output is above).
    #[error("{0}")]
    Install(String),
    /// The caller's `print` failed (a closed pipe); the stack was taken down regardless.
    #[error(transparent)]
    Print(std::io::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl From<loadlab_lab::Error> for StackCommandError {
    fn from(e: loadlab_lab::Error) -> Self {
        StackCommandError::Stack(StackError::Lab(e))
    }
}

impl From<loadlab_remote::Error> for StackCommandError {
    fn from(e: loadlab_remote::Error) -> Self {
        StackCommandError::Stack(StackError::Remote(e))
    }
}

/// `stack up` on this machine: up and verified (`note` says when it is reachable from the
/// network), then either detached (its processes outlive this one) and printed, or printed
/// and held until `cancel`, then taken down whatever happened to the output.
pub fn up(
    lab: &Lab,
    stack: &'static Stack,
    knobs: &Knobs,
    foreground: bool,
    cancel: &dyn Fn() -> bool,
    note: &mut dyn FnMut(&str),
    print: &mut dyn FnMut(&Record, &Up) -> std::io::Result<()>,
) -> Result<(), StackCommandError> {
    let up = lab.up(stack, knobs, cancel)?;
    let mut record = up.record.clone();
    note(&exposure(&record));
    if !foreground {
        lab.detach(&mut record)?;
        return print(&record, &up).map_err(StackCommandError::Print);
    }
    let printed = print(&record, &up);
    while printed.is_ok() && !cancel() {
        std::thread::sleep(Duration::from_millis(50));
    }
    lab.down(&record.id)?;
    printed.map_err(StackCommandError::Print)
}

/// How often the remote end of a session samples its stack: the 1 s grid the local sampler
/// keeps.
pub const SESSION_SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The remote end of a `--host` session (`stack up --session`): the stack up (without
/// `--listen`, where the client's ssh reached this host: a URL it can use), its instance
/// said as an event, then its samples every second until the session's input ends or falls
/// silent (see loadlab_remote::protocol), `interrupted`, or `stack down ID` here; then down,
/// said as an event. Between a `profile start` and a `profile stop` its tiers' stacks are
/// recorded here, where their processes are ([`Recording`]), and sent back. A failed `say`
/// (a cut session) ends the hold, never the teardown. `instance` is the up instance's JSON,
/// as `stack up --json` prints it.
pub fn session(
    lab: &Lab,
    stack: &'static Stack,
    knobs: &Knobs,
    instance: fn(&Record, &Up) -> serde_json::Value,
    interrupted: &dyn Fn() -> bool,
    note: &mut dyn FnMut(&str),
    say: &mut dyn FnMut(&Event) -> std::io::Result<()>,
) -> Result<(), StackCommandError> {
    let reached = std::env::var("SSH_CONNECTION").ok();
    let listen = knobs.listen.or(loadlab_remote::args::reached_at(reached.as_deref()));
    let knobs = Knobs { listen, ..knobs.clone() };
    let watch = Watch::stdin();
    let cancel = || interrupted() || !watch.alive();
    let up = lab.up(stack, &knobs, &cancel)?;
    let id = up.record.id.clone();
    note(&exposure(&up.record));
    let mut said = say(&Event::Up { instance: instance(&up.record, &up) });
    let mut samples = lab.targets(&id).map(session_samples);
    let started = Instant::now();
    let mut next = Duration::ZERO;
    let (tell, told) = std::sync::mpsc::channel();
    let mut recording: Option<Recording> = None;
    while said.is_ok() && !cancel() {
        for order in watch.orders() {
            recording = Recording::ordered(order, recording, lab, &id, &tell);
        }
        for event in told.try_iter() {
            said = said.and_then(|()| say(&event));
        }
        if started.elapsed() >= next {
            // Taken down by `stack down ID` on this host: nothing is left to hold. Once a
            // second, as the samples: the loop's 100 ms is for the heartbeat's answer.
            if lab.record(&id).is_err() {
                break;
            }
            if let Ok(sample) = samples.as_mut().map(|take| take(started.elapsed())) {
                said = sample.map_or(Ok(()), |sample| say(&Event::Sample { sample }));
            }
            next += SESSION_SAMPLE_EVERY;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // perf is this process's child: stopped before it exits, its stacks for nobody.
    if let Some(recording) = recording {
        recording.end();
    }
    match lab.down(&id) {
        Ok(()) | Err(loadlab_lab::Error::NoSuchInstance(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let _ = say(&Event::Down { id });
    Ok(())
}

/// A lab host's tiers' stacks being recorded for the local side, on a thread of its own:
/// perf takes a second or more to start on a busy machine, and longer to fold at the stop,
/// and the session's samples and heartbeat go on meanwhile.
struct Recording {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: std::thread::JoinHandle<()>,
}

impl Recording {
    /// What becomes of `recording` by `order`: `profile start` starts one (after the one
    /// before has ended), telling `tell` `profiling` once perf records; `profile stop` lets
    /// it fold and tell the `profiles`. An instance that cannot be profiled tells its
    /// `profiles` at once, with why, as perf's refusal is told.
    fn ordered(
        order: Order,
        recording: Option<Recording>,
        lab: &Lab,
        id: &str,
        tell: &std::sync::mpsc::Sender<Event>,
    ) -> Option<Recording> {
        match order {
            Order::StopProfile => recording.map(|mut r| {
                drop(r.stop.take());
                r
            }),
            Order::StartProfile => {
                if let Some(before) = recording {
                    before.end();
                }
                let (stop, stopped) = std::sync::mpsc::channel::<()>();
                let (lab, id, tell) = (lab.clone(), id.to_string(), tell.clone());
                let thread = std::thread::spawn(move || {
                    let profiles = match lab.profiler(&id) {
                        Ok(profiler) => {
                            let _ = tell.send(Event::Profiling);
                            let _ = stopped.recv();
                            profiler.finish()
                        }
                        Err(e) => Profiles { tiers: Vec::new(), refused: Some(e.to_string()) },
                    };
                    let profiles = serde_json::to_value(profiles).unwrap_or_default();
                    let _ = tell.send(Event::Profiles { profiles });
                });
                Some(Recording { stop: Some(stop), thread })
            }
        }
    }

    /// Stops it and waits for its end.
    fn end(mut self) {
        drop(self.stop.take());
        let _ = self.thread.join();
    }
}

/// A reading of these tiers and the machine from /proc, each call a sample of the interval
/// since the last (the first call only starts the count).
fn session_samples(targets: Vec<Target>) -> impl FnMut(Duration) -> Option<serde_json::Value> {
    let mut tracker = Tracker::new(targets, procfs::clock_ticks(), procfs::page_size());
    move |at| {
        let sample = tracker.observe(at, &Proc.processes(), Proc.machine())?;
        serde_json::to_value(sample).ok()
    }
}

/// Installs what `stack` needs with these knobs and lacks (apt-get, as root or with `sudo
/// -n`), said through `note` first.
pub fn install_packages(
    stack: &'static Stack,
    knobs: &Knobs,
    note: &mut dyn FnMut(&str),
) -> Result<(), StackCommandError> {
    use loadlab_remote::apt;
    let missing = stack.missing_packages(knobs);
    if missing.is_empty() {
        return Ok(());
    }
    note(&format!("loadlab: installing {}\n", missing.join(" ")));
    let status = apt::install_command(&missing, apt::is_root())
        .status()
        .map_err(|source| StackCommandError::Io { context: "running apt-get".into(), source })?;
    if !status.success() {
        return Err(StackCommandError::Install(format!(
            "apt-get install {} failed ({status}; its output is above)",
            missing.join(" ")
        )));
    }
    Ok(())
}

/// The lines that say a stack listens beyond loopback (anyone who can reach it can read its
/// pages), and how --net shapes it there; empty on loopback.
pub fn exposure(record: &Record) -> String {
    let Some(listen) = record.listen.as_ref().filter(|l| l.is_beyond_loopback()) else {
        return String::new();
    };
    let mut said = format!(
        "loadlab: {} is reachable from the network at {} (on {}): anyone who can reach it can \
         read its pages, phpinfo() with this host's configuration among them\n",
        record.id, record.url, listen.interface
    );
    if let (Some(shaping), Some(net)) = (&listen.shaping, &record.knobs.net) {
        said.push_str(&format!(
            "loadlab: --net {net} shapes what {} sends on {} (egress, its port only); requests \
             to it are not shaped\n",
            record.id, shaping.interface
        ));
    }
    said
}

/// What `stack sample` took: the 1 Hz series, and with `--profile` each tier's stacks or
/// perf's refusal in its own words.
#[derive(Debug)]
pub struct Taken {
    pub samples: Vec<Sample>,
    pub profiles: Option<Result<Vec<loadlab_store::ProfileRecord>, String>>,
}

/// `stack sample`: the instance's tiers and the machine every `interval` for `duration` or
/// until `cancel`, with `profile` their stacks too (as a profiled cell records them);
/// `started` is told the tiers once the first reading is taken (a script's load may start
/// then).
pub fn sample(
    lab: &Lab,
    id: &str,
    duration: Duration,
    interval: Duration,
    profile: bool,
    cancel: &dyn Fn() -> bool,
    started: &mut dyn FnMut(&[&str]),
) -> Result<Taken, StackCommandError> {
    let targets = lab.targets(id)?;
    let tiers: Vec<&str> = targets.iter().map(|t| t.tier.as_str()).collect();
    let sampler = lab.sampler(id, interval, profile)?;
    started(&tiers);
    let end = Instant::now() + duration;
    while Instant::now() < end && !cancel() {
        std::thread::sleep(
            Duration::from_millis(20).min(end.saturating_duration_since(Instant::now())),
        );
    }
    let sampled = sampler.finish();
    let profiles = sampled.profiles.map(crate::commands::sampled::taken);
    Ok(Taken { samples: sampled.samples, profiles })
}

/// Which way a `stack down` went.
#[derive(Debug, PartialEq)]
pub enum Down {
    /// Held remote sessions were ended (each told to `released`).
    Released,
    /// An instance on `--host` that this machine holds no session of: that host's loadlab
    /// takes it down.
    Elsewhere,
    /// These local instances are down.
    Local(Vec<String>),
}

/// `stack down [ID] [--all] [--host H]`: an id with a host is a held session's, else that
/// host's; an id of no local instance may be a held session's; `--all` ends every held
/// session, then every local instance.
pub fn down(
    lab: &Lab,
    id: Option<&str>,
    all: bool,
    host: Option<&Host>,
    released: &mut dyn FnMut(&Held) -> std::io::Result<()>,
) -> Result<Down, StackCommandError> {
    let state = lab.state();
    if let (Some(id), Some(host)) = (id, host) {
        return Ok(match owner::release(state, Some(id), Some(host), released)? {
            true => Down::Released,
            false => Down::Elsewhere,
        });
    }
    if let Some(id) = id.filter(|id| !all && lab.record(id).is_err()) {
        if owner::release(state, Some(id), None, released)? {
            return Ok(Down::Released);
        }
    }
    if all {
        // The remote stacks this machine holds sessions of are in its state directory too.
        owner::release(state, None, None, released)?;
        return Ok(Down::Local(lab.down_all()?));
    }
    let id = id.ok_or_else(|| loadlab_lab::Error::NoSuchInstance(String::new()))?;
    lab.down(id)?;
    Ok(Down::Local(vec![id.to_string()]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_lab::StateDir;
    use loadlab_remote::held::Holds;

    fn lab(dir: &tempfile::TempDir) -> Lab {
        Lab::new(StateDir::at(dir.path()))
    }

    /// A held session whose owner is a `sleep` of this test, reaped once it ends.
    fn held_by_sleep(lab: &Lab, id: &str, host: &str) -> std::process::Child {
        let child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let owner = procfs::identify(child.id() as i32).unwrap();
        let held = Held {
            host: host.into(),
            id: id.into(),
            url: "http://10.215.0.2:1/".into(),
            owner,
            instance: serde_json::Value::Null,
        };
        let tag = host.parse::<Host>().unwrap().file_tag();
        Holds::new(lab.state()).save(&tag, &held).unwrap();
        child
    }

    fn never(_: &Held) -> std::io::Result<()> {
        panic!("nothing is held")
    }

    #[test]
    fn down_of_an_id_on_a_host_this_machine_holds_no_session_of_goes_to_that_host() {
        let dir = tempfile::tempdir().unwrap();
        let host: Host = "ssh://root@b".parse().unwrap();
        let down = down(&lab(&dir), Some("nginx-1"), false, Some(&host), &mut never).unwrap();
        assert_eq!(down, Down::Elsewhere);
    }

    #[test]
    fn down_of_an_unknown_id_nothing_holds_is_the_labs_no_such_instance() {
        let dir = tempfile::tempdir().unwrap();
        let e = down(&lab(&dir), Some("nginx-1"), false, None, &mut never).unwrap_err();
        assert!(
            matches!(
                e,
                StackCommandError::Stack(StackError::Lab(loadlab_lab::Error::NoSuchInstance(_)))
            ),
            "{e:?}"
        );
        assert_eq!(down(&lab(&dir), None, true, None, &mut never).unwrap(), Down::Local(vec![]));
    }

    #[test]
    fn down_of_a_held_id_ends_its_owner_with_or_without_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let lab = lab(&dir);
        for host in [Some("ssh://root@b"), None] {
            let mut owner = held_by_sleep(&lab, "nginx-1", "ssh://root@b");
            // Reaped as it ends, so that it is gone and not a zombie `release` waits for.
            let pid = owner.id();
            let reaper = std::thread::spawn(move || owner.wait());
            let mut seen = Vec::new();
            let mut released = |h: &Held| {
                seen.push((h.id.clone(), h.owner.pid as u32));
                Ok(())
            };
            let host = host.map(|h| h.parse::<Host>().unwrap());
            let down = down(&lab, Some("nginx-1"), false, host.as_ref(), &mut released).unwrap();
            assert_eq!(down, Down::Released);
            assert_eq!(seen, [("nginx-1".to_string(), pid)]);
            assert!(!reaper.join().unwrap().unwrap().success(), "ended by SIGTERM");
            assert!(Holds::new(lab.state()).all().unwrap().is_empty());
        }
    }

    #[test]
    fn sampling_no_instance_is_the_labs_error_before_any_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let lab = lab(&dir);
        let mut started = |_: &[&str]| panic!("no sampling without an instance");
        let e = sample(
            &lab,
            "nope",
            Duration::from_secs(5),
            Duration::from_secs(1),
            true,
            &|| false,
            &mut started,
        );
        assert!(matches!(e, Err(StackCommandError::Stack(StackError::Lab(_)))));
    }
}
