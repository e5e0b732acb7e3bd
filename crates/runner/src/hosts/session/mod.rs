//! Stacks on other lab hosts, for the executor: each instance is the remote loadlab's `stack
//! up --session` in the foreground of one ssh session ([`loadlab_remote::Session`]), so it
//! lives exactly as long as that session: closed in order by `down`, and taken down there
//! within the heartbeat timeout whatever else ends it (Ctrl-C, this process killed, the path
//! cut). A thread per session reads its events as they come, so each 1 Hz sample is stamped
//! with the moment it arrived here and a cell takes those that arrived while it ran (the two
//! hosts' clocks need not agree); the cell's live hook (the view's and the metrics
//! endpoint's tiers) is told of each as it arrives, as a sampler here tells it of each taken.
//! A profiled cell's stacks are recorded there and come back over the same session
//! ([`profile`]). [`Placed`] puts each stack where the suite says.

mod flags;
mod profile;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::hosts::facts;
use loadlab_lab::named::Processes;
use loadlab_lab::procfs::ProcId;
use loadlab_lab::programs::Need;
use loadlab_lab::sampler::{self, Sample, Sampled};
use loadlab_lab::{Captured, Lab};
use loadlab_remote::protocol::{Event, Order};
use loadlab_remote::{provision, Host, Session, Ssh};
use loadlab_store::HostFacts;
use loadlab_suite::LabStack;

use crate::commands::run::executor::{Instance, Sampling, StackError, Stacks};
use profile::{Ask, RemoteProfile};

/// A remote stack's start and verify (a first MariaDB datadir included), the copy of the
/// binary aside.
const UP_LIMIT: Duration = Duration::from_secs(300);
/// `stack show` there.
const SHOW_LIMIT: Duration = Duration::from_secs(60);
/// How long a stopped cell waits for the sample that covers its last interval: one
/// interval and the way back.
const LAST_SAMPLE_WAIT: Duration = Duration::from_millis(1500);
/// Samples kept per session: ten minutes at 1 Hz, more than a cell; older ones go.
const KEPT: usize = 600;
/// A session that says nothing this long is lost: the remote samples every second, and takes
/// its stack down after as long without this side's heartbeat.
const SILENT_LIMIT: Duration = loadlab_remote::protocol::HEARTBEAT_TIMEOUT;

/// The lab here and the lab hosts the suite names: each call goes where its stack is.
pub struct Placed<'a> {
    pub lab: &'a Lab,
    pub remote: &'a RemoteStacks,
}

impl Stacks for Placed<'_> {
    fn up(&self, lab: &LabStack, cancel: &dyn Fn() -> bool) -> Result<Instance, StackError> {
        match &lab.host {
            Some(host) => self.remote.up(host, lab, cancel),
            None => Stacks::up(self.lab, lab, cancel),
        }
    }

    fn down(&self, id: &str) -> Result<(), StackError> {
        match self.remote.holds(id) {
            true => self.remote.down(id),
            false => Stacks::down(self.lab, id),
        }
    }

    fn capture(&self, id: &str) -> Result<Vec<Captured>, StackError> {
        match self.remote.holds(id) {
            true => self.remote.capture(id),
            false => Stacks::capture(self.lab, id),
        }
    }

    fn sample(&self, id: &str, profile: bool) -> Result<Box<dyn Sampling>, StackError> {
        match self.remote.holds(id) {
            // A lab host's samples and profiles come back over its session.
            true => self.remote.sample(id, profile),
            false => Stacks::sample(self.lab, id, profile),
        }
    }

    fn resolve(&self, processes: &Processes) -> Result<Vec<ProcId>, StackError> {
        Stacks::resolve(self.lab, processes)
    }

    fn sample_processes(&self, roots: &[ProcId]) -> Result<Box<dyn Sampling>, StackError> {
        Stacks::sample_processes(self.lab, roots)
    }

    fn host_facts(&self, id: &str) -> Option<HostFacts> {
        self.remote.facts(id)
    }
}

/// The remote stacks of a run: the binary found (or copied) once per host, a session per
/// instance. Dropping it closes every session still open.
pub struct RemoteStacks {
    /// Said as it happens: the copy of the binary to a host.
    note: Box<dyn Fn(&str) + Send + Sync>,
    programs: Mutex<BTreeMap<String, String>>,
    facts: Mutex<BTreeMap<String, HostFacts>>,
    live: Mutex<BTreeMap<String, Live>>,
    /// The environment's package names to ask each host about.
    packages: Vec<String>,
    /// `--install-packages`: each remote `stack up` installs what its stack lacks there.
    install: bool,
    /// The CAs of TLS stacks there, copied here for the client: removed with this.
    cas: Mutex<Option<tempfile::TempDir>>,
}

/// One instance's session, read by its own thread.
struct Live {
    host: Host,
    program: String,
    samples: Arc<Mutex<Vec<(Instant, Sample)>>>,
    /// Why the session ended before it was closed, once it has.
    ended: Arc<Mutex<Option<String>>>,
    /// Who is told of each sample as it arrives: the live hook of the cell sampling now.
    told: Told,
    asks: Sender<Ask>,
    reader: Option<JoinHandle<loadlab_remote::Result<bool>>>,
}

/// A session's live hook, set by the cell sampling it ([`Window`]'s `live`) until it stops.
type Told = Arc<Mutex<Option<sampler::Live>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RemoteStacks {
    /// `note` hears what is worth telling (a binary copied); `packages`: the versions each
    /// host's environment records.
    pub fn new(note: Box<dyn Fn(&str) + Send + Sync>, packages: Vec<String>) -> RemoteStacks {
        RemoteStacks {
            note,
            programs: Mutex::default(),
            facts: Mutex::default(),
            live: Mutex::default(),
            packages,
            install: false,
            cas: Mutex::default(),
        }
    }

    /// Has each remote `stack up` install its stack's missing packages there first
    /// (`--install-packages`, the apt logic of that host's loadlab).
    pub fn installing(mut self, install: bool) -> RemoteStacks {
        self.install = install;
        self
    }

    /// The packages of `needs` that `host` lacks, as its own loadlab finds them (`doctor
    /// --json` there: the programs each package gives, looked for where that host looks).
    pub fn missing(&self, host: &str, needs: &[Need]) -> Result<Vec<&'static str>, StackError> {
        let host: Host = host.parse()?;
        let ssh = Ssh::from_env()?;
        let program = self.program(&ssh, &host)?;
        let line = loadlab_remote::ssh::command_line(&[&program, "doctor", "--json"]);
        let command = ssh.command(&host, &line);
        let found = loadlab_remote::run::finish(command, Stdio::null(), &host, SHOW_LIMIT)?;
        let doctor: serde_json::Value =
            serde_json::from_str(&found.stdout).map_err(|e| loadlab_remote::Error::Protocol {
                host: host.to_string(),
                reason: format!("doctor --json: {e}: {}", found.stderr.trim()),
            })?;
        Ok(lacking(&doctor, needs))
    }

    fn holds(&self, id: &str) -> bool {
        lock(&self.live).contains_key(id)
    }

    /// What was learnt of the host instance `id` runs on.
    pub fn facts(&self, id: &str) -> Option<HostFacts> {
        let live = lock(&self.live);
        let host = live.get(id)?.host.to_string();
        lock(&self.facts).get(&host).cloned()
    }

    /// The loadlab to run on `host`: found or copied on first use.
    fn program(&self, ssh: &Ssh, host: &Host) -> loadlab_remote::Result<String> {
        if let Some(p) = lock(&self.programs).get(&host.to_string()) {
            return Ok(p.clone());
        }
        let local = provision::Local::this(env!("CARGO_PKG_VERSION"))?;
        let remote = provision::ensure(ssh, host, &local, &mut |line| (self.note)(line))?;
        lock(&self.programs).insert(host.to_string(), remote.program.clone());
        Ok(remote.program)
    }

    fn up(
        &self,
        host: &str,
        lab: &LabStack,
        cancel: &dyn Fn() -> bool,
    ) -> Result<Instance, StackError> {
        let started = Instant::now();
        let host: Host = host.parse()?;
        let ssh = Ssh::from_env()?;
        let program = self.program(&ssh, &host)?;
        // Without a `listen` knob the remote end listens where ssh reached it, which is
        // where this client reaches it too.
        let words = flags::up_words(lab.stack, &lab.knobs, self.install)
            .map_err(loadlab_lab::Error::BadKnob)?;
        let args =
            loadlab_remote::args::remote_up_args(&words).map_err(loadlab_lab::Error::BadKnob)?;
        let mut session = Session::start(&ssh, &host, &program, &args, Stdio::inherit())?;
        let instance = match session.wait_up(UP_LIMIT, cancel) {
            Ok(instance) => instance,
            Err(_) if cancel() => return Err(loadlab_lab::Error::Interrupted.into()),
            Err(e) => return Err(e.into()),
        };
        let (Some(id), Some(url)) = (instance["id"].as_str(), instance["url"].as_str()) else {
            return Err(loadlab_remote::Error::Protocol {
                host: host.to_string(),
                reason: format!("an instance without id or url: {instance}"),
            }
            .into());
        };
        let id = id.to_string();
        // Its CA is a file there: the client here trusts a copy.
        let cacert = match instance["cacert"].as_str() {
            Some(there) => Some(self.fetch_ca(&ssh, &host, &id, there)?),
            None => None,
        };
        let up = Instance {
            id: id.clone(),
            url: url.to_string(),
            elapsed: started.elapsed(),
            checks: instance["checks"].as_array().map_or(0, Vec::len),
            cacert,
            net_delay: None,
        };
        self.learn(&ssh, &host, &up.url);
        lock(&self.live).insert(id, Live::read(session, host, program));
        Ok(up)
    }

    /// Copies instance `id`'s CA from `there` on `host` (through ssh) into this run's
    /// directory of CAs: the file the client's TLS trusts.
    fn fetch_ca(
        &self,
        ssh: &Ssh,
        host: &Host,
        id: &str,
        there: &str,
    ) -> Result<std::path::PathBuf, StackError> {
        let line = loadlab_remote::ssh::command_line(&["cat", there]);
        let read =
            loadlab_remote::run::finish(ssh.command(host, &line), Stdio::null(), host, SHOW_LIMIT)?;
        if !read.status.success() || !read.stdout.contains("BEGIN CERTIFICATE") {
            return Err(loadlab_remote::Error::Protocol {
                host: host.to_string(),
                reason: format!("{id}'s CA {there}: {}", read.stderr.trim()),
            }
            .into());
        }
        let mut cas = lock(&self.cas);
        let dir = match &mut *cas {
            Some(dir) => dir,
            None => {
                let made = tempfile::Builder::new().prefix("loadlab-remote-ca-").tempdir();
                let made = made.map_err(|source| loadlab_remote::Error::Io {
                    context: "making a directory for lab hosts' CAs".into(),
                    source,
                })?;
                cas.insert(made)
            }
        };
        // Two hosts may each have an nginx-1.
        let tag: String =
            host.to_string().chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect();
        let here = dir.path().join(format!("{tag}-{id}-ca.pem"));
        std::fs::write(&here, read.stdout).map_err(|source| loadlab_remote::Error::Io {
            context: format!("writing {}", here.display()),
            source,
        })?;
        Ok(here)
    }

    /// The host's machine and the path to it, once per host (a failure to read them is no
    /// reason to stop: the record says what is unknown).
    fn learn(&self, ssh: &Ssh, host: &Host, url: &str) {
        if lock(&self.facts).contains_key(&host.to_string()) {
            return;
        }
        let names: Vec<&str> = self.packages.iter().map(String::as_str).collect();
        let facts = facts::learn(ssh, host, url, &names);
        lock(&self.facts).insert(host.to_string(), facts);
    }

    fn down(&self, id: &str) -> Result<(), StackError> {
        let Some(live) = lock(&self.live).remove(id) else {
            return Err(loadlab_lab::Error::NoSuchInstance(id.to_string()).into());
        };
        let host = live.host.to_string();
        let ended = lock(&live.ended).clone();
        match live.close()? {
            true => Ok(()),
            false => Err(loadlab_remote::Error::Lost {
                host,
                reason: format!(
                    "{}; {id} there was not said to be down (the remote takes its stack down \
                     when its session ends)",
                    ended.as_deref().unwrap_or("the session ended")
                ),
            }
            .into()),
        }
    }

    fn capture(&self, id: &str) -> Result<Vec<Captured>, StackError> {
        let (host, program) = {
            let live = lock(&self.live);
            let live = live.get(id).ok_or_else(|| loadlab_lab::Error::NoSuchInstance(id.into()))?;
            (live.host.clone(), live.program.clone())
        };
        let ssh = Ssh::from_env()?;
        let line = loadlab_remote::ssh::command_line(&[&program, "stack", "show", id, "--json"]);
        let shown = loadlab_remote::run::finish(
            ssh.command(&host, &line),
            Stdio::null(),
            &host,
            SHOW_LIMIT,
        )?;
        let value: serde_json::Value =
            serde_json::from_str(&shown.stdout).map_err(|e| loadlab_remote::Error::Protocol {
                host: host.to_string(),
                reason: format!("stack show {id} --json: {e}: {}", shown.stderr.trim()),
            })?;
        Ok(captured(&value))
    }

    /// Its samples from now, and with `profile` its stacks recorded there (once that host
    /// records them, which the cell then waits for).
    fn sample(&self, id: &str, profile: bool) -> Result<Box<dyn Sampling>, StackError> {
        let (asks, host, samples, ended, told) = {
            let live = lock(&self.live);
            let live = live.get(id).ok_or_else(|| loadlab_lab::Error::NoSuchInstance(id.into()))?;
            let host = live.host.to_string();
            (live.asks.clone(), host, live.samples.clone(), live.ended.clone(), live.told.clone())
        };
        let profile = profile.then(|| RemoteProfile::start(&asks, &host));
        Ok(Box::new(Window { from: Instant::now(), samples, ended, told, profile }))
    }
}

impl Drop for RemoteStacks {
    fn drop(&mut self) {
        for (_, live) in std::mem::take(&mut *lock(&self.live)) {
            let _ = live.close();
        }
    }
}

/// The packages of `needs` whose program `doctor --json`'s `packages` says is not installed
/// (one it does not list is left for that host's `stack up` to find).
fn lacking(doctor: &serde_json::Value, needs: &[Need]) -> Vec<&'static str> {
    let listed = doctor["packages"].as_array().cloned().unwrap_or_default();
    let mut missing: Vec<&'static str> = Vec::new();
    for need in needs {
        let absent = listed.iter().any(|p| {
            p["package"] == need.package && p["needs"] == need.name() && p["installed"] == false
        });
        if absent && !missing.contains(&need.package) {
            missing.push(need.package);
        }
    }
    missing
}

/// `stack show --json`'s `captured` list.
fn captured(shown: &serde_json::Value) -> Vec<Captured> {
    let text = |c: &serde_json::Value, k: &str| c[k].as_str().unwrap_or_default().to_string();
    shown["captured"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| Captured {
                    tier: text(c, "tier"),
                    what: text(c, "what"),
                    text: text(c, "text"),
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Live {
    /// Starts reading `session`'s events on a thread of their own.
    fn read(session: Session, host: Host, program: String) -> Live {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let ended = Arc::new(Mutex::new(None));
        let told = Told::default();
        let (asks, asked) = mpsc::channel();
        let reader = {
            let heard =
                Heard { samples: samples.clone(), ended: ended.clone(), told: told.clone() };
            std::thread::spawn(move || pump(session, &asked, &heard, SILENT_LIMIT))
        };
        Live { host, program, samples, ended, told, asks, reader: Some(reader) }
    }

    /// Closes the session and waits for its end: whether the remote said its stack is down.
    fn close(mut self) -> loadlab_remote::Result<bool> {
        let _ = self.asks.send(Ask::Close);
        match self.reader.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Ok(false),
        }
    }
}

/// What a session's reader keeps of it: its samples as they arrived, why it ended, and the
/// hook to tell of each sample.
struct Heard {
    samples: Arc<Mutex<Vec<(Instant, Sample)>>>,
    ended: Arc<Mutex<Option<String>>>,
    told: Told,
}

/// Reads events until told to close (then closes in order) or until the session ends, or
/// says nothing for `silent` (the path is cut: ssh's keepalives would take 15 s to tell);
/// passes a profiled cell's orders on, and its host's answers back.
fn pump(
    mut session: Session,
    asked: &Receiver<Ask>,
    heard_of: &Heard,
    silent: Duration,
) -> loadlab_remote::Result<bool> {
    let Heard { samples, ended, told } = heard_of;
    let mut heard = Instant::now();
    let mut went_silent = false;
    let mut profile_to: Option<Sender<Event>> = None;
    loop {
        match asked.try_recv() {
            Ok(Ask::StartProfile(to)) => {
                session.order(Order::StartProfile);
                profile_to = Some(to);
            }
            Ok(Ask::StopProfile) => {
                session.order(Order::StopProfile);
            }
            Err(TryRecvError::Empty) => {}
            Ok(Ask::Close) | Err(TryRecvError::Disconnected) => return session.close(),
        }
        let event = session.next(Duration::from_millis(100));
        if let Ok(Some(_)) = event {
            heard = Instant::now();
        }
        let why = match event {
            Ok(None) if !session.ended() && heard.elapsed() >= silent => {
                went_silent = true;
                format!(
                    "nothing from it for {:.1} s (it samples every second): the path to it is \
                     cut, or it stopped",
                    heard.elapsed().as_secs_f64()
                )
            }
            Ok(Some(Event::Sample { sample })) => {
                if let Ok(sample) = serde_json::from_value::<Sample>(sample) {
                    // Told before it is kept: a cell's stop, which waits for the sample after
                    // it, then ends the telling with every one of its samples told.
                    let to = lock(told).clone();
                    if let Some(to) = to {
                        to(&sample);
                    }
                    let mut kept = lock(samples);
                    kept.push((Instant::now(), sample));
                    let excess = kept.len().saturating_sub(KEPT);
                    kept.drain(..excess);
                }
                continue;
            }
            Ok(Some(Event::Down { .. })) => "the remote took its stack down".to_string(),
            Ok(Some(event @ (Event::Profiling | Event::Profiles { .. }))) => {
                if let Some(to) = &profile_to {
                    let _ = to.send(event);
                }
                continue;
            }
            Ok(Some(_)) => continue,
            Ok(None) if !session.ended() => continue,
            Ok(None) => "the session ended".to_string(),
            Err(e) => e.to_string(),
        };
        *lock(ended) = Some(why);
        // A cell waiting for its stacks learns they will not come.
        drop(profile_to.take());
        // Wait for the close that `down` sends, so it learns how the session ended.
        while let Ok(ask) = asked.recv() {
            if matches!(ask, Ask::Close) {
                break;
            }
        }
        if went_silent {
            session.abandon();
            return Ok(false);
        }
        return session.close();
    }
}

/// A cell's samples: those that arrived from its start until the one after its stop; and
/// its stacks, when profiled.
struct Window {
    from: Instant,
    samples: Arc<Mutex<Vec<(Instant, Sample)>>>,
    ended: Arc<Mutex<Option<String>>>,
    told: Told,
    profile: Option<RemoteProfile>,
}

impl Drop for Window {
    /// The cell's hook hears no more: the session's next samples belong to no cell, or to the
    /// next one's.
    fn drop(&mut self) {
        *lock(&self.told) = None;
    }
}

impl Sampling for Window {
    fn live(&self, to: sampler::Live) {
        *lock(&self.told) = Some(to);
    }

    fn lost(&self) -> Option<crate::commands::run::lost::Lost> {
        let ended = self.ended.clone();
        Some(std::sync::Arc::new(move || lock(&ended).clone()))
    }

    fn stop(mut self: Box<Self>) -> Sampled {
        let stopped = Instant::now();
        // Asked for at once: the host folds them while the last sample comes.
        let profiles = self.profile.take().map(RemoteProfile::finish).unwrap_or_default();
        // The interval the cell ended in is reported up to a second later.
        let deadline = stopped + LAST_SAMPLE_WAIT;
        let last = |kept: &[(Instant, Sample)]| kept.last().is_some_and(|(at, _)| *at >= stopped);
        while Instant::now() < deadline
            && !last(&lock(&self.samples))
            && lock(&self.ended).is_none()
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let kept = lock(&self.samples);
        let after = kept.iter().position(|(at, _)| *at >= stopped);
        let end = after.map_or(kept.len(), |i| i + 1);
        let mut samples: Vec<Sample> =
            kept[..end].iter().filter(|(at, _)| *at >= self.from).map(|(_, s)| s.clone()).collect();
        // The session's clock starts at its start; the cell's at its first sample's start.
        let base = samples.first().map_or(0, |s| s.t_ms.saturating_sub(s.interval_ms));
        for s in &mut samples {
            s.t_ms -= base;
        }
        Sampled { samples, cpu: None, profiles }
    }
}

#[cfg(test)]
mod tests;
