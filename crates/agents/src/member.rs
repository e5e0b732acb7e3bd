//! Every agent but agent 0: it connects to the rendezvous (retrying until agent 0 listens),
//! proves the secret, says it is ready with its load, answers the clock pings, and learns the
//! start time. During the run it sends heartbeats and stops when agent 0 says so or is gone;
//! at its end it sends its measurements.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadlab_engine::Control;

use crate::auth::{self, Token};
use crate::clock;
use crate::part::Part;
use crate::stream::Deltas;
use crate::wire::{self, Msg, SweepStep};
use crate::{io, AgentsError, HEARTBEAT_EVERY};

/// Who this agent is, as it tells agent 0.
#[derive(Debug, Clone)]
pub struct Hello {
    pub index: usize,
    pub of: usize,
    pub host: String,
    pub load: Vec<(String, String)>,
    /// `--agent-weight`.
    pub weight: u64,
}

/// An agent admitted, with its start time by its own clock.
#[derive(Debug)]
pub struct Member {
    stream: TcpStream,
    /// The start, by this agent's wall clock, ns since the epoch.
    pub start_local: u64,
    /// This agent's clock minus agent 0's, as agent 0 measured it.
    pub offset_ns: i64,
    /// Every agent's `--agent-weight`, in index order, as agent 0 learnt them.
    pub weights: Vec<u64>,
    /// A sweep's step, as agent 0 named it (to be checked against this agent's own).
    pub step: Option<SweepStep>,
}

impl Member {
    /// Joins the rendezvous at `addr` within `timeout`.
    pub fn join(
        addr: SocketAddr,
        token: &Token,
        hello: Hello,
        timeout: Duration,
    ) -> Result<Member, AgentsError> {
        let deadline = Instant::now() + timeout;
        let mut stream = connect(addr, deadline)?;
        stream.set_read_timeout(Some(timeout)).map_err(io("joining"))?;
        stream.set_nodelay(true).map_err(io("joining"))?;
        let dropped = || {
            AgentsError::Refused(format!(
                "agent 0 at {addr} dropped this agent: its secret (--token-file or LOADLAB_TOKEN) is not agent 0's"
            ))
        };
        match auth::respond(&mut stream, token) {
            Ok(true) => {}
            Ok(false) => {
                return Err(AgentsError::Refused(format!(
                    "{addr} could not prove the shared secret"
                )))
            }
            Err(_) => return Err(dropped()),
        }
        let Hello { index, of, host, load, weight } = hello;
        wire::send(&mut stream, &Msg::Ready { index, of, host, load, weight })
            .map_err(io("saying ready"))?;
        match next_start(stream)? {
            Next::Start(member) => Ok(member),
            Next::Over(reason) => Err(AgentsError::Refused(reason)),
        }
    }

    /// Heartbeats from now on (the counters of `control`), and a stop from agent 0 (or its
    /// loss) stops `control`. The engine itself waits for the start after its setup
    /// (`BenchConfig::start_at`), so that a slow wake-up does not shift the schedule.
    pub fn begin(self, control: Arc<Control>) -> Result<Running, AgentsError> {
        let done = Arc::new(AtomicBool::new(false));
        let mut writer = self.stream.try_clone().map_err(io("starting"))?;
        // The workers publish their seconds from now on (`loadlab_engine::live`).
        control.live.enable();
        let (c, d) = (control.clone(), done.clone());
        let beats = crate::named("agent-beat", move || {
            let mut deltas = Deltas::default();
            while !d.load(Ordering::Relaxed) {
                let seconds = Msg::Seconds { seconds: deltas.seconds(c.live.take()) };
                let beat = Msg::Beat {
                    completed: c.completed.load(Ordering::Relaxed),
                    failed: c.failed.load(Ordering::Relaxed),
                    visits: (
                        c.visits_completed.load(Ordering::Relaxed),
                        c.visits_failed.load(Ordering::Relaxed),
                    ),
                };
                if wire::send(&mut writer, &seconds)
                    .and_then(|_| wire::send(&mut writer, &beat))
                    .is_err()
                {
                    c.request_stop();
                    return deltas;
                }
                // Unparked at the end (`end_step`), so that the run's end waits for no beat.
                std::thread::park_timeout(HEARTBEAT_EVERY);
            }
            deltas
        });
        let mut reader = self.stream.try_clone().map_err(io("starting"))?;
        // Blocking reads: a timeout could cut a message in two. `end` shuts the reading side
        // down to end the last one.
        let _ = reader.set_read_timeout(None);
        let (c, d) = (control.clone(), done.clone());
        let stops = crate::named("agent-stop", move || listen(&mut reader, &c, &d));
        Ok(Running { stream: self.stream, done, beats, stops, control })
    }
}

/// What agent 0 says between runs: the next start, or that the test (a sweep) is over.
#[derive(Debug)]
pub enum Next {
    Start(Member),
    Over(String),
}

/// Agent 0's messages until a start (the clock pings answered on the way) or a stop.
fn next_start(mut stream: TcpStream) -> Result<Next, AgentsError> {
    loop {
        match wire::recv(&mut stream).map_err(io("waiting for the start"))? {
            // `Over`: the end of a step agent 0 stopped early, read after its stop.
            Msg::Accepted | Msg::Over => {}
            Msg::Ping { t0 } => {
                let pong = Msg::Pong { t0, t1: clock::now_ns() };
                wire::send(&mut stream, &pong).map_err(io("answering a ping"))?;
            }
            Msg::Start { at, offset, weights, step } => {
                let start_local = at.saturating_add_signed(offset);
                let offset_ns = offset;
                return Ok(Next::Start(Member { stream, start_local, offset_ns, weights, step }));
            }
            Msg::Stop { reason, .. } => return Ok(Next::Over(reason)),
            Msg::Refused { reason } => return Err(AgentsError::Refused(reason)),
            other => {
                return Err(AgentsError::Refused(format!(
                    "agent 0 sent {other:?} before the start"
                )))
            }
        }
    }
}

/// An agent between a sweep's steps, its connection to agent 0 kept.
#[derive(Debug)]
pub struct Idle {
    stream: TcpStream,
}

impl Idle {
    /// Waits (at most `timeout`) for agent 0's next start, or its word that the sweep is over.
    pub fn next(self, timeout: Duration) -> Result<Next, AgentsError> {
        self.stream.set_read_timeout(Some(timeout)).map_err(io("waiting for the start"))?;
        next_start(self.stream)
    }
}

/// Connects, retrying while nobody listens yet (agent 0 may start last).
fn connect(addr: SocketAddr, deadline: Instant) -> Result<TcpStream, AgentsError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match TcpStream::connect_timeout(&addr, left.max(Duration::from_millis(1))) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => {
                return Err(AgentsError::Io { context: "connecting to agent 0", source: e })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Why agent 0 stopped this agent's run early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub reason: String,
    /// An agent (or agent 0 itself) was lost; otherwise agent 0's own run was interrupted
    /// (Ctrl-C) or failed, and this agent was stopped on purpose.
    pub lost: bool,
}

/// Agent 0's messages during the run: a stop, or the connection's end, stops the run. Returns
/// why it stopped, if it did.
fn listen(reader: &mut TcpStream, control: &Control, done: &AtomicBool) -> Option<Stopped> {
    while !done.load(Ordering::Relaxed) {
        match wire::recv(reader) {
            Ok(Msg::Stop { reason, lost }) => {
                control.request_stop();
                return Some(Stopped { reason, lost });
            }
            // Agent 0 has this agent's measurements.
            Ok(Msg::Over) => return None,
            Ok(_) => {}
            Err(_) if done.load(Ordering::Relaxed) => return None,
            Err(e) => {
                control.request_stop();
                return Some(Stopped { reason: format!("agent 0 was lost: {e}"), lost: true });
            }
        }
    }
    None
}

/// An agent's run under way.
#[derive(Debug)]
pub struct Running {
    stream: TcpStream,
    done: Arc<AtomicBool>,
    beats: JoinHandle<Deltas>,
    stops: JoinHandle<Option<Stopped>>,
    control: Arc<Control>,
}

impl Running {
    /// Sends the last seconds and the measurements; returns why agent 0 stopped the run
    /// early, if it did.
    pub fn end(self, part: Part, late_ns: u64) -> Result<Option<Stopped>, AgentsError> {
        self.end_step(part, late_ns).map(|(stopped, _)| stopped)
    }

    /// [`Running::end`], the connection kept for a sweep's next step: agent 0 answers the
    /// measurements with [`Msg::Over`], which ends this agent's reader.
    pub fn end_step(
        mut self,
        part: Part,
        late_ns: u64,
    ) -> Result<(Option<Stopped>, Idle), AgentsError> {
        self.done.store(true, Ordering::Relaxed);
        self.beats.thread().unpark();
        let mut deltas = self.beats.join().unwrap_or_default();
        let last = Msg::Seconds { seconds: deltas.seconds(self.control.live.take()) };
        let sent = wire::send(&mut self.stream, &last).and_then(|_| {
            wire::send(&mut self.stream, &Msg::Done { part: Box::new(part), late_ns })
        });
        if sent.is_err() {
            // Agent 0 gone: its reader ends on the broken connection.
            let _ = self.stream.shutdown(std::net::Shutdown::Read);
        }
        let stopped = self.stops.join().ok().flatten();
        let idle = Idle { stream: self.stream };
        match (sent, &stopped) {
            // Agent 0 gone: nobody to send to, and the stop says so.
            (Err(_), Some(_)) => Ok((stopped, idle)),
            (Err(e), None) => {
                Err(AgentsError::Io { context: "sending the measurements", source: e })
            }
            (Ok(()), _) => Ok((stopped, idle)),
        }
    }
}
