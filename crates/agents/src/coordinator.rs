//! Agent 0's side of the rendezvous: it listens, admits each agent that proves the secret,
//! is of the same test (N, a free index) and has the same load, measures every agent's clock,
//! announces one start time, then watches the run: heartbeats, a lost agent (silent for
//! [`HEARTBEAT_LOSS`], or its connection gone) stops everyone, and each agent's measurements
//! arrive at its end. An agent that connects after the start is refused.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadlab_engine::{BenchResult, Control};

use crate::auth::{self, Token};
use crate::clock::{self, Offset, Sample};
use crate::part::Part;
use crate::stream::{self, Seconds};
use crate::wire::{self, Msg, SweepStep};
use crate::{io, load, named, AgentsError, HEARTBEAT_LOSS};

/// Clock samples per agent; the shortest round trip of them is kept.
const PINGS: usize = 8;
/// How long one connection may take to prove the secret and say it is ready.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// The longest a blocked `accept` waits before its loop looks at its deadline (or at
/// `go_on`) again; a connection that comes wakes it at once.
const ACCEPT_WAIT: Duration = Duration::from_millis(100);

/// What agent 0 expects of the others.
#[derive(Debug, Clone)]
pub struct Plan {
    pub of: usize,
    pub token: Token,
    /// `--rendezvous-timeout`: how long to wait for every agent to be ready.
    pub timeout: Duration,
    /// Agent 0's load ([`load::describe`]).
    pub load: Vec<(String, String)>,
    /// `--on-agent-loss`: what a lost agent does to the others.
    pub on_loss: OnLoss,
    /// Agent 0's `--agent-weight`.
    pub weight: u64,
}

/// `--on-agent-loss`: what the loss of an agent does to the test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnLoss {
    /// Every agent stops; agent 0 reports what was measured until then.
    #[default]
    Stop,
    /// The others go on; the merged result is partial and gives the shortfall per second.
    Continue,
}

/// An admitted agent.
#[derive(Debug)]
struct Joined {
    index: usize,
    host: String,
    stream: TcpStream,
    offset: Offset,
    weight: u64,
}

/// Agent 0 with every other agent admitted.
#[derive(Debug)]
pub struct Coordinator {
    listener: TcpListener,
    plan: Plan,
    members: Vec<Joined>,
    /// The index and weight of each agent forgotten (lost in a sweep's step): its share stays
    /// its own, due and not sent, never dealt out to the others.
    forgotten: Vec<(usize, u64)>,
}

/// What one admitted agent is, for the report.
#[derive(Debug, Clone)]
pub struct Roster {
    pub index: usize,
    pub host: String,
    pub offset: Offset,
}

impl Coordinator {
    /// Admits agents on `listener` until all N-1 are ready or `plan.timeout` has passed (then
    /// [`AgentsError::Missing`], naming them). A load that differs ends the rendezvous at once
    /// ([`AgentsError::LoadDiffers`]); every admitted agent is told why.
    pub fn gather(listener: TcpListener, plan: Plan) -> Result<Coordinator, AgentsError> {
        Coordinator::gather_while(listener, plan, &mut || true)
    }

    /// [`Coordinator::gather`], given up early (as if the timeout had passed) once `go_on`
    /// says so: agent 0 that started the others itself knows when one ended before the start,
    /// or was interrupted, and need not wait out the timeout.
    pub fn gather_while(
        listener: TcpListener,
        plan: Plan,
        go_on: &mut dyn FnMut() -> bool,
    ) -> Result<Coordinator, AgentsError> {
        // A blocking accept bounded by SO_RCVTIMEO (Linux applies the receive timeout to
        // accept(2)), not a non-blocking one polled: the thread sleeps in the kernel until an
        // agent connects, waking only every ACCEPT_WAIT to look at the deadline.
        listener.set_nonblocking(false).map_err(io("listening"))?;
        let deadline = Instant::now() + plan.timeout;
        let mut c = Coordinator { listener, plan, members: Vec::new(), forgotten: Vec::new() };
        while c.members.len() + 1 < c.plan.of {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !go_on() {
                let missing = c.missing();
                c.refuse_all(&format!("the rendezvous timed out: {}", crate::list(&missing)));
                return Err(AgentsError::Missing { missing, timeout: c.plan.timeout });
            }
            let stream = match accept_within(&c.listener, left.min(ACCEPT_WAIT)) {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => return Err(AgentsError::Io { context: "accepting an agent", source: e }),
            };
            if let Err(e) = c.admit(stream) {
                c.refuse_all(&e.to_string());
                return Err(e);
            }
        }
        Ok(c)
    }

    /// The indices 1..N not admitted yet.
    fn missing(&self) -> Vec<usize> {
        (1..self.plan.of).filter(|i| !self.members.iter().any(|m| m.index == *i)).collect()
    }

    fn refuse_all(&mut self, reason: &str) {
        for m in &mut self.members {
            let _ = wire::send(&mut m.stream, &Msg::Refused { reason: reason.to_string() });
        }
    }

    /// One connection: the secret (dropped in silence without it), then its readiness. A
    /// connection that fails the handshake is not the test's concern: it is dropped and the
    /// rendezvous goes on; a differing load is.
    fn admit(&mut self, mut stream: TcpStream) -> Result<(), AgentsError> {
        let Some(Msg::Ready { index, of, host, load: theirs, weight }) =
            handshake(&mut stream, &self.plan.token)
        else {
            return Ok(());
        };
        let refuse = |stream: &mut TcpStream, reason: String| {
            let _ = wire::send(stream, &Msg::Refused { reason });
        };
        if of != self.plan.of {
            refuse(&mut stream, format!("--agents {of} here, {} on agent 0", self.plan.of));
            return Ok(());
        }
        if index == 0 || index >= of || self.members.iter().any(|m| m.index == index) {
            refuse(&mut stream, format!("--agent {index} is taken or not in 1..{}", of - 1));
            return Ok(());
        }
        if weight == 0 {
            refuse(&mut stream, format!("--agent-weight 0 on agent {index}: at least 1"));
            return Ok(());
        }
        if let Some((option, ours, theirs)) = load::differs(&self.plan.load, &theirs) {
            let e = AgentsError::LoadDiffers { index, option, ours, theirs };
            refuse(&mut stream, e.to_string());
            return Err(e);
        }
        wire::send(&mut stream, &Msg::Accepted).map_err(io("admitting an agent"))?;
        self.members.push(Joined { index, host, stream, offset: Offset::default(), weight });
        Ok(())
    }

    /// Measures every agent's clock, then sends each the one start time (by agent 0's clock)
    /// with its offset; returns the start time.
    pub fn start(&mut self) -> Result<u64, AgentsError> {
        self.start_step(None)
    }

    /// [`Coordinator::start`] of a sweep's `step`, which every agent checks against its own
    /// command line.
    pub fn start_step(&mut self, step: Option<SweepStep>) -> Result<u64, AgentsError> {
        for m in &mut self.members {
            let mut samples = Vec::with_capacity(PINGS);
            for _ in 0..PINGS {
                let t0 = clock::now_ns();
                wire::send(&mut m.stream, &Msg::Ping { t0 }).map_err(io("measuring a clock"))?;
                let Msg::Pong { t0: back, t1 } =
                    wire::recv(&mut m.stream).map_err(io("measuring a clock"))?
                else {
                    return Err(AgentsError::Refused(format!(
                        "agent {} answered a ping oddly",
                        m.index
                    )));
                };
                samples.push(Sample { t0: back, t1, t2: clock::now_ns() });
            }
            m.offset = clock::estimate(&samples).unwrap_or_default();
        }
        let slowest = self.members.iter().map(|m| m.offset.rtt_ns).max().unwrap_or(0);
        let at = clock::start_at(clock::now_ns(), slowest);
        let weights = self.weights();
        for m in &mut self.members {
            let (offset, weights) = (m.offset.offset_ns, weights.clone());
            let start = Msg::Start { at, offset, weights, step };
            wire::send(&mut m.stream, &start).map_err(io("sending the start"))?;
        }
        Ok(at)
    }

    /// Every agent's `--agent-weight`, in index order (once all are admitted), the forgotten
    /// ones' included.
    pub fn weights(&self) -> Vec<u64> {
        let mut all: Vec<(usize, u64)> = self.members.iter().map(|m| (m.index, m.weight)).collect();
        all.extend(&self.forgotten);
        all.sort_by_key(|(index, _)| *index);
        std::iter::once(self.plan.weight).chain(all.into_iter().map(|(_, w)| w)).collect()
    }

    /// Who is in the test, agent 0 first.
    pub fn roster(&self, host: &str) -> Vec<Roster> {
        let mut r = vec![Roster { index: 0, host: host.to_string(), offset: Offset::default() }];
        r.extend(self.members.iter().map(|m| Roster {
            index: m.index,
            host: m.host.clone(),
            offset: m.offset,
        }));
        r.sort_by_key(|r| r.index);
        r
    }

    /// From the start at `start` (agent 0's clock, ns): watches the agents; a lost one stops
    /// `control` (agent 0's own run) and every other agent. The connections stay agent 0's:
    /// a sweep starts its next step on them ([`Coordinator::start`] again).
    pub fn watch(&self, control: Arc<Control>, counters: Arc<Counters>, start: u64) -> Watch {
        let board = Arc::new(Board {
            seen: Mutex::new(self.members.iter().map(|m| Seen::new(m.index)).collect()),
            changed: Condvar::new(),
            done: AtomicBool::new(false),
        });
        let writers: Vec<TcpStream> =
            self.members.iter().filter_map(|m| m.stream.try_clone().ok()).collect();
        let sockets: Vec<TcpStream> =
            self.members.iter().filter_map(|m| m.stream.try_clone().ok()).collect();
        let mut threads = Vec::new();
        for (slot, m) in self.members.iter().enumerate() {
            let Ok(stream) = m.stream.try_clone() else {
                // No reader to hear it (out of descriptors): lost at once, never awaited.
                board.lock()[slot].gone = true;
                continue;
            };
            let (board, counters) = (board.clone(), counters.clone());
            threads.push(named("agent-read", move || listen(stream, slot, &board, &counters)));
        }
        let (b, c, on_loss) = (board.clone(), control, self.plan.on_loss);
        let monitor = named("agent-watch", move || monitor(&b, &c, writers, start, on_loss));
        let (token, b) = (self.plan.token.clone(), board.clone());
        let mut late = None;
        if let Ok(listener) = self.listener.try_clone() {
            let wake = waker(&listener);
            let thread = named("agent-late", move || refuse_late(&listener, &token, &b.done));
            late = Some((thread, wake));
        }
        Watch { board, threads, monitor, late, sockets }
    }

    /// Between a sweep's steps: the agents lost in the last one are not awaited again (their
    /// connections close); their weights stay in [`Coordinator::weights`].
    pub fn forget(&mut self, lost: &[Lost]) {
        let (gone, kept) = std::mem::take(&mut self.members)
            .into_iter()
            .partition(|m| lost.iter().any(|l| l.index == m.index));
        self.members = kept;
        self.forgotten.extend(gone.iter().map(|m: &Joined| (m.index, m.weight)));
    }

    /// The sweep is over: every agent still here is told so, between steps.
    pub fn end(mut self, reason: &str) {
        for m in &mut self.members {
            let stop = Msg::Stop { reason: reason.to_string(), lost: false };
            let _ = wire::send(&mut m.stream, &stop);
        }
    }
}

/// The secret, then the first message; `None` (the connection to be dropped) when the peer
/// cannot prove the secret or says nothing sensible in time.
fn handshake(stream: &mut TcpStream, token: &Token) -> Option<Msg> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(HANDSHAKE)).ok()?;
    stream.set_write_timeout(Some(HANDSHAKE)).ok()?;
    stream.set_nodelay(true).ok()?;
    if !auth::challenge(stream, token).ok()? {
        return None;
    }
    let msg = wire::recv(stream).ok()?;
    stream.set_read_timeout(None).ok()?;
    Some(msg)
}

/// What agent 0 knows of one agent during the run.
#[derive(Debug)]
pub struct Seen {
    pub index: usize,
    pub completed: u64,
    pub failed: u64,
    /// A run of visits' visits (page views, sessions), completed and failed.
    pub visits: (u64, u64),
    pub part: Option<(Box<Part>, u64)>,
    /// Its seconds as streamed during the run ([`crate::stream`]).
    pub seconds: Seconds,
    /// The connection ended or broke, or the agent was silent for [`HEARTBEAT_LOSS`], before
    /// its measurements came.
    gone: bool,
}

impl Seen {
    fn new(index: usize) -> Seen {
        Seen {
            index,
            completed: 0,
            failed: 0,
            visits: (0, 0),
            part: None,
            seconds: Seconds::new(),
            gone: false,
        }
    }
}

/// Adds every agent's measurements into agent 0's `result`: its part, or for an agent lost
/// what it streamed until its loss. An error names the agent whose part could not be added.
pub fn merge_all(result: &mut BenchResult, seen: &[Seen]) -> Result<(), (usize, String)> {
    for s in seen {
        let merged = match &s.part {
            Some((p, _)) => crate::part::merge_into(result, p),
            None => stream::merge_lost(result, &s.seconds),
        };
        merged.map_err(|reason| (s.index, reason))?;
    }
    Ok(())
}

/// What the threads watching a run share: every agent's [`Seen`], and a condition variable
/// signalled whenever one changes in a way that matters (its measurements came, it is gone)
/// or the watch ends, so that nobody polls.
#[derive(Debug)]
struct Board {
    seen: Mutex<Vec<Seen>>,
    changed: Condvar,
    /// The watch is over ([`Watch::finish`]).
    done: AtomicBool,
}

impl Board {
    fn lock(&self) -> MutexGuard<'_, Vec<Seen>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the next change.
    fn wait<'a>(&self, guard: MutexGuard<'a, Vec<Seen>>) -> MutexGuard<'a, Vec<Seen>> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }
}

/// The other agents' counters summed, as their heartbeats tell them: for agent 0's live
/// progress line of the whole test, of requests or (a run of visits) of visits.
#[derive(Debug, Default)]
pub struct Counters {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    /// Page views, visits or sessions, completed and failed.
    pub visits_completed: AtomicU64,
    pub visits_failed: AtomicU64,
    /// Who is told of each agent's seconds as they stream in ([`Counters::tell_seconds`]).
    told: Told,
}

/// Told of the seconds agent `index` streamed, as they come (once a second per agent, on its
/// reader's thread): agent 0's metrics endpoint adds them into the whole test's figures.
pub type OnSeconds = Arc<dyn Fn(usize, &[stream::Second]) + Send + Sync>;

#[derive(Default)]
struct Told(std::sync::OnceLock<OnSeconds>);

impl std::fmt::Debug for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "Told(set)" } else { "Told(none)" })
    }
}

impl Counters {
    /// Tells `to` of every agent's seconds from now on (the first only is kept: one endpoint).
    pub fn tell_seconds(&self, to: OnSeconds) {
        let _ = self.told.0.set(to);
    }
}

impl Counters {
    /// Moves the sums by agent `s`'s progress since its last message (its counters only
    /// grow), and keeps its new counters.
    fn advance(&self, s: &mut Seen, (completed, failed): (u64, u64), visits: (u64, u64)) {
        let more = |sum: &AtomicU64, now: u64, was: u64| {
            sum.fetch_add(now.saturating_sub(was), Ordering::Relaxed);
        };
        more(&self.completed, completed, s.completed);
        more(&self.failed, failed, s.failed);
        more(&self.visits_completed, visits.0, s.visits.0);
        more(&self.visits_failed, visits.1, s.visits.1);
        (s.completed, s.failed, s.visits) = (completed, failed, visits);
    }
}

/// An agent that stopped: its index, and the second of the test in which it was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    pub index: usize,
    pub second: u64,
}

/// The run being watched.
#[derive(Debug)]
pub struct Watch {
    board: Arc<Board>,
    threads: Vec<JoinHandle<()>>,
    monitor: JoinHandle<Vec<Lost>>,
    /// The thread that refuses late agents, and the address that wakes its blocked accept.
    late: Option<(JoinHandle<()>, Option<SocketAddr>)>,
    /// The agents' connections, to stop them all ([`Watch::stop_all`]).
    sockets: Vec<TcpStream>,
}

impl Watch {
    /// The other agents' counters so far (completed, failed), from their heartbeats.
    pub fn progress(&self) -> (u64, u64) {
        let seen = self.board.lock();
        seen.iter().fold((0, 0), |(c, f), s| (c + s.completed, f + s.failed))
    }

    /// Stops every agent (agent 0's own run ended early: Ctrl-C), so that none runs on to
    /// its end for nothing; each still sends what it measured.
    pub fn stop_all(&mut self, reason: &str) {
        for s in &mut self.sockets {
            let _ = wire::send(s, &Msg::Stop { reason: reason.to_string(), lost: false });
        }
    }

    /// After agent 0's own run: waits for every agent's measurements (or its loss, which the
    /// heartbeat rule bounds: a reader gives up after [`HEARTBEAT_LOSS`] of silence), then
    /// returns them and the agents lost, in the order they were.
    pub fn finish(self) -> (Vec<Seen>, Vec<Lost>) {
        {
            let mut seen = self.board.lock();
            while !seen.iter().all(|s| s.part.is_some() || s.gone) {
                seen = self.board.wait(seen);
            }
            // Under the lock, so that the monitor cannot miss it between its look and its wait.
            self.board.done.store(true, Ordering::Relaxed);
            self.board.changed.notify_all();
        }
        // Every reader has ended (its agent settled); the connections stay open for a sweep's
        // next step (a lost agent's closes when its coordinator forgets it, or at the end).
        for t in self.threads {
            let _ = t.join();
        }
        if let Some((thread, wake)) = self.late {
            // A connection of our own ends the blocked accept now rather than at its timeout.
            if let Some(at) = wake {
                let _ = TcpStream::connect_timeout(&at, ACCEPT_WAIT);
            }
            let _ = thread.join();
        }
        let mut lost = self.monitor.join().unwrap_or_default();
        let seen = std::mem::take(&mut *self.board.lock());
        // An agent whose connection ended just before the monitor's next look is lost all
        // the same (in the second after its last streamed one): never a silent partial result.
        for s in seen.iter().filter(|s| s.part.is_none()) {
            if !lost.iter().any(|l| l.index == s.index) {
                let second = s.seconds.keys().next_back().map_or(0, |l| u64::from(*l) + 1);
                lost.push(Lost { index: s.index, second });
            }
        }
        (seen, lost)
    }
}

/// One agent's messages until its measurements come or it is gone: its connection ended, or
/// it was silent for [`HEARTBEAT_LOSS`] (the read's timeout; a message cut by it is as lost
/// as its sender). No shorter timeout: one could cut a message in two and lose the framing.
fn listen(mut stream: TcpStream, slot: usize, board: &Board, counters: &Counters) {
    let _ = stream.set_read_timeout(Some(HEARTBEAT_LOSS));
    loop {
        let Ok(msg) = wire::recv(&mut stream) else {
            board.lock()[slot].gone = true;
            board.changed.notify_all();
            return;
        };
        let mut seen = board.lock();
        let s = &mut seen[slot];
        if let Msg::Seconds { seconds } = &msg {
            stream::add_all(&mut s.seconds, seconds);
            if let Some(to) = counters.told.0.get() {
                to(s.index, seconds);
            }
            continue;
        }
        let (requests, visits) = match &msg {
            Msg::Beat { completed, failed, visits } => ((*completed, *failed), *visits),
            Msg::Done { part, .. } => (part.completed_failed(), part.visits_completed_failed()),
            _ => ((s.completed, s.failed), s.visits),
        };
        counters.advance(s, requests, visits);
        if let Msg::Done { part, late_ns } = msg {
            s.part = Some((part, late_ns));
            drop(seen);
            board.changed.notify_all();
            // Its run is over on both sides: the agent's reader ends on this.
            let _ = wire::send(&mut stream, &Msg::Over);
            return;
        }
    }
}

/// The loss rule's consequence: an agent gone without its measurements (its reader saw the
/// connection end, or [`HEARTBEAT_LOSS`] of silence) is lost; then (by default) agent 0's run
/// and every other agent stop, or with [`OnLoss::Continue`] the others go on. It sleeps on
/// the board until something changes.
fn monitor(
    board: &Board,
    control: &Control,
    mut writers: Vec<TcpStream>,
    start: u64,
    on_loss: OnLoss,
) -> Vec<Lost> {
    let mut lost: Vec<Lost> = Vec::new();
    let mut seen = board.lock();
    while !board.done.load(Ordering::Relaxed) {
        let newly: Vec<usize> = seen
            .iter()
            .filter(|s| s.part.is_none() && s.gone)
            .map(|s| s.index)
            .filter(|i| !lost.iter().any(|l| l.index == *i))
            .collect();
        if newly.is_empty() {
            seen = board.wait(seen);
            continue;
        }
        drop(seen);
        for index in newly {
            let second = clock::now_ns().saturating_sub(start) / 1_000_000_000;
            if lost.is_empty() && on_loss == OnLoss::Stop {
                control.request_stop();
                let reason = format!("agent {index} was lost in second {second}");
                for w in &mut writers {
                    let _ = wire::send(w, &Msg::Stop { reason: reason.clone(), lost: true });
                }
            }
            lost.push(Lost { index, second });
        }
        seen = board.lock();
    }
    lost
}

/// After the start: whoever connects and proves the secret is told it is late. The accept
/// blocks (bounded by [`ACCEPT_WAIT`]); [`Watch::finish`] wakes it with a connection of its own.
fn refuse_late(listener: &TcpListener, token: &Token, done: &AtomicBool) {
    while !done.load(Ordering::Relaxed) {
        let Ok(Some(mut stream)) = accept_within(listener, Duration::from_secs(1)) else {
            continue;
        };
        if done.load(Ordering::Relaxed) {
            return;
        }
        if let Some(Msg::Ready { index, .. }) = handshake(&mut stream, token) {
            let reason = format!("agent {index} is late: the test has started without it");
            let _ = wire::send(&mut stream, &Msg::Refused { reason });
        }
    }
}

/// One connection accepted within `wait`, or `None` when none came.
fn accept_within(listener: &TcpListener, wait: Duration) -> io::Result<Option<TcpStream>> {
    let wait = wait.max(Duration::from_millis(1));
    socket2::SockRef::from(listener).set_read_timeout(Some(wait))?;
    match listener.accept() {
        Ok((s, _)) => Ok(Some(s)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The address a connection of agent 0's own reaches `listener` at: its own, the loopback of
/// its family when it listens on every address.
fn waker(listener: &TcpListener) -> Option<SocketAddr> {
    let mut at = listener.local_addr().ok()?;
    if at.ip().is_unspecified() {
        at.set_ip(match at.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_engine::visits::SessionTally;
    use loadlab_engine::Tally;

    /// An agent's part of a run of visits: `requests` and `visits` (completed, failed).
    fn part(requests: (u64, u64), visits: (u64, u64)) -> Box<Part> {
        let sessions = SessionTally { completed: visits.0, failed: visits.1, ..Default::default() };
        let tally = Tally {
            completed: requests.0,
            failed: requests.1,
            sessions: Some(Box::new(sessions)),
            ..Default::default()
        };
        Box::new(Part::of_tally(&tally, 0))
    }

    /// Two agents' heartbeats and measurements, through agent 0's readers over loopback: the
    /// sums agent 0's live line shows count each agent's visits as well as its requests, and
    /// never count an agent twice (a beat's counters are its totals so far).
    #[test]
    fn agent_0s_counters_add_every_agents_visits_as_well_as_its_requests() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let board = Arc::new(Board {
            seen: Mutex::new(vec![Seen::new(1), Seen::new(2)]),
            changed: Condvar::new(),
            done: AtomicBool::new(false),
        });
        let counters = Arc::new(Counters::default());
        let mut agents = Vec::new();
        let mut readers = Vec::new();
        for slot in 0..2 {
            agents.push(TcpStream::connect(at).unwrap());
            let (stream, _) = listener.accept().unwrap();
            let (b, c) = (board.clone(), counters.clone());
            readers.push(std::thread::spawn(move || listen(stream, slot, &b, &c)));
        }
        let beat = |completed, failed, visits| Msg::Beat { completed, failed, visits };
        wire::send(&mut agents[0], &beat(30, 1, (10, 1))).unwrap();
        wire::send(&mut agents[0], &beat(60, 1, (20, 2))).unwrap();
        wire::send(&mut agents[1], &beat(9, 0, (3, 0))).unwrap();
        // Agent 2's measurements come: its final counts replace its last beat's.
        let done = Msg::Done { part: part((12, 0), (4, 1)), late_ns: 0 };
        wire::send(&mut agents[1], &done).unwrap();
        assert!(matches!(wire::recv(&mut agents[1]).unwrap(), Msg::Over));
        readers.pop().unwrap().join().unwrap();
        // Agent 1's beats are read in order; its reader ends when its connection does.
        let deadline = Instant::now() + Duration::from_secs(10);
        while counters.visits_completed.load(Ordering::Relaxed) < 24 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(agents);
        readers.pop().unwrap().join().unwrap();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &counters;
        assert_eq!((load(&c.completed), load(&c.failed)), (72, 1));
        assert_eq!((load(&c.visits_completed), load(&c.visits_failed)), (24, 3));
        let seen = board.lock();
        assert_eq!((seen[0].visits, seen[1].visits), ((20, 2), (4, 1)));
        assert!(seen[0].gone && seen[1].part.is_some());
    }
}
