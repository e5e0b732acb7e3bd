//! One worker thread: an event loop (epoll through mio) that owns its connection slots, its
//! read buffer and its recorders. Nothing here is shared with other workers except the request
//! budget, taken in chunks, and relaxed progress counters, published once per loop turn.
//!
//! The loop is the same for every load model and protocol, and so are its slots; the source
//! of the next request is the only part that differs. [`Pacing`] decides what a slot does when
//! it becomes free (send again at once, go back to the idle pool, or close), and whether
//! scheduled arrivals are dispatched; a run of visits (`visits`: sessions, page views, visit
//! files) is a source of its own, its visitors' calls going on the same slots, paths, schedule
//! and budget. Over HTTP/2 a slot is a connection whose requests are streams (`multiplex`); a
//! request's outcome enters the tallies the same way whatever carried it (`Exchange`). All
//! socket system calls live in `Conn::{connect, finish_connect, write_request}` and the
//! connection paths (`plain::Plain`'s read, `multiplexed::Multiplexed`'s read and flush), so
//! another I/O backend (io_uring) can replace them without touching the accounting.

mod closed_loop;
pub(crate) mod event_loop;
mod multiplex;
mod open_loop;
mod visits;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Poll, Token};

use crate::check::BodyCheck;
use crate::conn::{Conn, State, BACKOFF};
use crate::exchange::{second_of, us, Exchange};
use crate::h2::Session;
use crate::h3::streams::{Streams, H3};
use crate::http::Parser;
use crate::multiplexed::Multiplexed;
use crate::over_quic::OverQuic;
use crate::pacing::{Budget, Pacing};
use crate::plain::Plain;
use crate::result::WorkerReport;
use crate::schedule::Schedule;
use crate::slots::{Books, Parts, Slots};
use crate::spec::WorkerSpec;
use crate::sys::ThreadAccount;
use crate::timer::Timer;
use crate::{Control, ErrorClass, Protocol};
pub(crate) use event_loop::EventLoop;
use event_loop::{publish, Clocked, Seconds, TIMER};
pub(crate) use visits::Visits;

/// Size of the worker's single read buffer. Connections share it, so memory does not grow
/// with the connection count; a head that spans reads is kept by the connection's parser.
const READ_BUFFER: usize = 64 * 1024;

/// Open loop: with the next send at most this far off, the loop sleeps until it rather than
/// wake for each response, which then waits at most this long to be read. Below 1,000
/// arrivals a second responses wake the loop as they come.
const HARVEST: Duration = Duration::from_millis(1);

/// A scheduled arrival sent more than this late (µs) counts as late in its second's figures:
/// the trust verdict's tolerance for a schedule kept (`SCHEDULE_TOLERANCE_US` in the runner).
pub const LATE_BOUND_US: u64 = 1_000;

/// Whether a worker's responses carry the kernel's arrival stamps, so that its loop may sleep
/// until its next send and read them then (see [`HARVEST`]): the open loop over plain TCP and
/// HTTP/1.1. Unix sockets carry no arrival stamps, and TLS reads records, not the segments
/// the stamps belong to: their responses wake the loop as they come. HTTP/2 reads carry many
/// streams' frames at once: they are timed when read.
pub(crate) fn stamped(pacing: Pacing, unix: bool, tls: bool, protocol: Protocol) -> bool {
    matches!(pacing, Pacing::Open { .. }) && !unix && !tls && protocol == Protocol::Http1
}

pub(crate) struct Worker {
    spec: WorkerSpec,
    poll: Poll,
    conns: Vec<Conn>,
    /// Slots with an open keep-alive connection and nothing to do (open loop).
    idle: Vec<usize>,
    /// Slots without a connection (open loop and sessions).
    free: Vec<usize>,
    /// Closed-loop slots whose next request starts on the next loop turn (after a failure),
    /// so that a failure never recurses into the next attempt.
    restart: Vec<usize>,
    schedule: Option<Schedule>,
    timer: Option<Timer>,
    budget: Budget,
    budget_spent: bool,
    /// A counted schedule: when this worker's first arrival left out by the budget was due
    /// (see [`WorkerReport::schedule_end`]).
    schedule_end: Option<Instant>,
    source_next: usize,
    /// The read buffer, the tallies and the counters its connections share.
    books: Books,
    /// Requests sent as the window closed whose socket or bind failed at once: unfinished,
    /// though never in flight (see `fail`).
    refused_at_end: u64,
    /// Slots in `State::Connecting`.
    connecting: usize,
    /// HTTP/2 slots with frames queued in this loop turn, written together at its end.
    dirty: Vec<usize>,
    control: Arc<Control>,
    /// Open loop: responses carry the kernel's arrival stamp, so the loop may read them late
    /// (see [`HARVEST`]) without moving their completion time.
    stamped: bool,
    /// The events being handled were taken after a sleep that ignored them: what is read now
    /// arrived earlier, and its stamp says when. Otherwise a read's time is its own, as in
    /// every other model (the client's copy of a large body included).
    harvesting: bool,
    /// The figures of every second: the one in progress and its CPU account, and where the
    /// live snapshots stand ([`EventLoop::turn_second`]).
    seconds: Seconds,
    /// Requests completed and failed as last told to `control`.
    published: (u64, u64),
    /// Closed-loop slots whose failure is being retried this turn (`restart`, swapped).
    draining: Vec<usize>,
    /// Closed-loop stages: slots resting with no connection (above the level), and how many
    /// more should rest as soon as their request ends.
    parked: Vec<usize>,
    to_park: usize,
    /// A run of visits: the visitors, whose calls are this worker's requests (what a slot's
    /// answer means and when the next request goes are theirs); `None` for requests alone.
    visits: Option<Box<Visits>>,
}

impl Worker {
    pub fn new(
        spec: WorkerSpec,
        budget: Budget,
        schedule: Option<Schedule>,
        visits: Option<Visits>,
        control: Arc<Control>,
        index: usize,
    ) -> io::Result<Worker> {
        let poll = Poll::new()?;
        // Visitors' think times are timed as arrivals are.
        let timer = match schedule.is_some() || visits.is_some() {
            true => Some(Timer::new(poll.registry(), TIMER)?),
            false => None,
        };
        let tally = spec.tally(schedule.is_some());
        // Closed loop: every slot exists from the start. Otherwise slots are added as the
        // schedule (or the visitors) need them, up to `connections`.
        let closed = spec.pacing == Pacing::Closed && visits.is_none();
        let initial = if closed { spec.connections } else { 0 };
        let mut worker = Worker {
            poll,
            conns: Vec::with_capacity(initial),
            idle: Vec::new(),
            free: Vec::new(),
            restart: Vec::with_capacity(initial),
            schedule,
            timer,
            budget,
            budget_spent: false,
            schedule_end: None,
            source_next: 0,
            books: Books::new(tally, READ_BUFFER, spec.measure_start),
            refused_at_end: 0,
            connecting: 0,
            dirty: Vec::new(),
            stamped: stamped(spec.pacing, spec.unix.is_some(), spec.tls.is_some(), spec.protocol),
            harvesting: false,
            parked: Vec::new(),
            to_park: 0,
            seconds: Seconds::new(spec.measure_start, control.live.enabled(), index),
            draining: Vec::with_capacity(initial),
            published: (0, 0),
            visits: visits.map(Box::new),
            spec,
            control,
        };
        for _ in 0..initial {
            worker.add_slot();
        }
        Ok(worker)
    }

    /// A new slot: its connection's parser, exchange and (HTTP/2) session, made as its load
    /// needs them (visits: see [`Visits::connections`]).
    fn add_slot(&mut self) -> usize {
        let now = Instant::now();
        let mut parser = Parser::new(self.spec.limits);
        parser.capture_server();
        let visiting = self.visits.as_deref().map(|v| v.connections(&self.spec.validation));
        let (validation, streams, headers) = match &visiting {
            Some((validation, streams, headers)) => (validation, *streams, *headers),
            None => (&self.spec.validation, self.spec.protocol.streams(), false),
        };
        if headers {
            parser.capture_headers();
        }
        let exchange = || Exchange::new(BodyCheck::new(validation), now);
        let h2 = self.spec.protocol.is_h2().then(|| {
            let mut session = Session::new(streams, &self.spec.limits, exchange);
            if headers {
                session.capture_headers();
            }
            Box::new(session)
        });
        let h3 = self.spec.protocol.is_h3().then(|| {
            let max_field_section = self.spec.limits.max_head_bytes;
            let streams = Streams::new(streams, max_field_section, exchange);
            Box::new(H3 { quic: None, streams })
        });
        let conn = Conn::new(parser, exchange(), h2, h3, now);
        self.conns.push(conn);
        self.conns.len() - 1
    }

    /// Whether the run is over at `now`, and then when it ended: a stop asked for (Ctrl-C), the
    /// planned end of a timed run, or a counted run's budget spent with nothing left in
    /// flight (it ended with its last event).
    fn ended(&mut self, now: Instant) -> Option<Instant> {
        if self.control.stop.load(Ordering::Relaxed) {
            return Some(now);
        }
        if let Some(end) = self.spec.end {
            if now >= end {
                // Arrivals due before the end go out (and stay unfinished), so that only
                // what the client truly could not send counts as never sent.
                self.dispatch(now, end - Duration::from_nanos(1));
                return Some(end);
            }
        }
        if let Some(visits) = self.visits.as_deref() {
            return visits.done(self.budget_spent).then_some(self.books.last_event);
        }
        let idle = || self.restart.is_empty() && !self.conns.iter().any(Conn::in_flight);
        (self.budget_spent && idle()).then_some(self.books.last_event)
    }

    /// How long the loop may wait for events at `now` before its next duty at `wake`: none
    /// when failed slots wait to start again.
    fn wait_for(&mut self, now: Instant, wake: Instant) -> Duration {
        if !self.restart.is_empty() {
            return Duration::ZERO;
        }
        if let (Some(at), Some(timer)) = (self.visits_wake(), self.timer.as_mut()) {
            // Should arming fail, the sweep tick still wakes the loop, only later; the
            // lateness is then measured like any other.
            let _ = timer.arm(at);
        }
        let mut timeout = wake.saturating_duration_since(now);
        if self.spec.protocol.is_h3() {
            if let Some(at) = self.quic_wake(self.conns.len()) {
                timeout = timeout.min(at.saturating_duration_since(now));
            }
        }
        // The open loop's next send is near: sleep until it whatever becomes ready, then
        // take everything that did (responses keep the kernel's arrival stamps). One
        // wake-up per send rather than one per send and one per response.
        // Not while a response is arriving in pieces: one larger than the socket's buffer
        // would stall the server until it is read, and the stamps would time that stall.
        let receiving =
            || self.conns.iter().any(|c| c.state == State::Reading && c.ex.first_byte.is_some());
        if let (true, false, Some(timer)) = (self.stamped, timeout.is_zero(), &self.timer) {
            // A send time already past means dispatch found no connection for it: then
            // only an event (a response, a connect) can let it go, so wait for one.
            let near = |at: &Instant| *at > now && *at - now <= HARVEST;
            if let Some(send_at) = timer.armed().filter(near).filter(|_| !receiving()) {
                timer.sleep_until(send_at.min(wake));
                self.harvesting = true;
                return Duration::ZERO;
            }
        }
        timeout
    }

    /// What the worker measured, once its loop ended at `end_at`, with the CPU its thread
    /// used meanwhile.
    fn report(mut self, account: ThreadAccount, end_at: Instant) -> WorkerReport {
        self.books.tally.unfinished =
            self.refused_at_end + self.conns.iter().map(Conn::measured_in_flight).sum::<u64>();
        self.account_second();
        if let (Some(schedule), false) = (self.schedule.as_mut(), self.budget_spent) {
            // Those due after a stop was asked for were not due in the run.
            let until = self.control.schedule_end(end_at);
            self.books.never_sent(schedule, self.spec.measure_start, until);
        }
        if let Some(visits) = self.visits.take() {
            visits.end_visits(&mut self.books.tally, self.spec.validation.keep_answer);
        }
        let measure_start = self.spec.measure_start;
        WorkerReport {
            cpu: account.cpu,
            cpu_wait: account.cpu_wait,
            involuntary_switches: account.involuntary_switches,
            wall: end_at.saturating_duration_since(measure_start),
            last_event: self.books.last_event.saturating_duration_since(measure_start),
            schedule_end: self.schedule_end.map(|due| due.saturating_duration_since(measure_start)),
            peak_open: self.books.peak_open,
            slots: self.conns.len(),
            server: self.books.server.take(),
            negotiated: self.books.negotiated.take(),
            tally: self.books.tally,
        }
    }

    /// Starts a request on slot `idx`, on its open connection or a new one. `due` is when the
    /// request was due: `now` in the closed loop and for a session's later calls, the
    /// schedule's time for a scheduled arrival.
    fn start_request(&mut self, idx: usize, now: Instant, due: Instant) {
        self.start(idx, now, due, false, None)
    }

    fn start(
        &mut self,
        idx: usize,
        now: Instant,
        due: Instant,
        scheduled: bool,
        entry: Option<u32>,
    ) {
        if self.conns[idx].multiplexed() {
            return self.start_streams(idx, now, due, scheduled, entry);
        }
        let measured = due >= self.spec.measure_start;
        if self.spec.pacing == Pacing::Closed && measured && !self.budget.take() {
            self.budget_spent = true;
            self.close(idx);
            self.conns[idx].state = State::Idle;
            return;
        }
        let entry = entry.unwrap_or_else(|| self.spec.picker.next());
        let conn = &mut self.conns[idx];
        conn.ex.begin(now, due, self.spec.timeout, measured, entry);
        conn.parser.reset(self.spec.table.is_head(entry));
        if measured && scheduled {
            self.record_late(now, due);
        }
        self.send_or_connect(idx, now);
    }

    /// Slot `idx`'s request begun: written on its open connection, or a connection opened.
    fn send_or_connect(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.conns[idx];
        if conn.stream.is_some() {
            conn.state = State::Writing { sent: 0 };
            return self.write(idx, now);
        }
        if let Err(e) = self.open_connection(idx, now) {
            self.fail_io(idx, &e, now);
        }
    }

    /// Starts connecting slot `idx` (its deadline the connect timeout from `now`), counted
    /// among the connections opened when its request is measured: to the target from the
    /// run's source addresses in turn, or to a visitor's other origin (a page view's allowed
    /// host) at its own address, over TLS when it is an `https` one. Over TLS every connection
    /// shares its origin's one client configuration, so a new one resumes a session.
    fn open_connection(&mut self, idx: usize, now: Instant) -> io::Result<()> {
        let other = self.visits.as_deref().and_then(|v| v.origin(idx));
        let source = (other.is_none() && self.visits.is_none() && !self.spec.source_ips.is_empty())
            .then(|| {
                let ip = self.spec.source_ips[self.source_next % self.spec.source_ips.len()];
                self.source_next += 1;
                SocketAddr::new(ip, 0)
            });
        let to = match other {
            Some(o) => crate::conn::To { addr: o.addr, unix: None, tls: o.tls.as_ref() },
            None => crate::conn::To {
                addr: self.spec.addr,
                unix: self.spec.unix.as_deref(),
                tls: self.spec.tls.as_ref(),
            },
        };
        let conn = &mut self.conns[idx];
        match (self.spec.protocol.is_h3(), to.tls) {
            (true, Some(tls)) => {
                {
                    // Silent for as long as a connect may take: the server is gone (quic_idle_timeout).
                    let idle = self.spec.connect_timeout;
                    conn.connect_quic(self.poll.registry(), Token(idx), to.addr, tls, idle, now)?
                }
            }
            _ => conn.connect(self.poll.registry(), Token(idx), to, source, self.stamped)?,
        }
        let measured = self.conns[idx].ex.measured;
        self.opened(idx, measured, now);
        self.connecting += 1;
        self.open_into_second();
        if let Some(v) = self.visits.as_deref_mut().filter(|_| measured) {
            v.count_connection();
        }
        Ok(())
    }

    fn on_event(&mut self, event: &Event) {
        let idx = event.token().0;
        let now = Instant::now();
        if self.conns[idx].h3.is_some() {
            return self.on_h3_event(idx, event, now);
        }
        if self.conns[idx].h2.is_some() {
            return self.on_h2_event(idx, event, now);
        }
        self.on_h1_event(idx, event, now);
    }

    /// Whether a timed run is over: what ends after that is left unfinished, so that no
    /// request is counted beyond the measured window.
    fn past_end(&self, now: Instant) -> bool {
        self.spec.end.is_some_and(|end| now >= end)
    }

    /// A timed run counts what ends inside its window, whenever it started: requests sent
    /// during warm-up and answered inside the window balance those still in flight at its end,
    /// so the measured rate is not biased by the server's latency (a sweep step at 10 s with
    /// 200 ms latency would otherwise lose 2% and look overloaded). A counted run counts what
    /// it budgeted, so that completed + failed = N.
    fn count_by_end(&mut self, idx: usize, now: Instant) {
        if self.spec.end.is_some() {
            self.conns[idx].ex.measured = now >= self.spec.measure_start;
        }
    }

    /// A full response arrived on slot `idx`.
    fn complete(&mut self, idx: usize, now: Instant, must_close: bool) {
        if self.visits.is_some() {
            return self.complete_call(idx, now, must_close);
        }
        if self.past_end(now) {
            return;
        }
        self.count_by_end(idx, now);
        self.record_answer(idx, self.schedule.is_some(), must_close, now);
        match self.spec.pacing {
            Pacing::Closed if self.to_park > 0 => self.park(idx),
            Pacing::Closed => self.start_request(idx, now, now),
            Pacing::Open { .. } => self.release(idx),
            Pacing::Sessions { .. } => {
                let conn = &mut self.conns[idx];
                conn.calls_left = conn.calls_left.saturating_sub(1);
                if conn.calls_left > 0 {
                    // The session's next call goes out as soon as the last reply is in; if the
                    // server closed the connection (HTTP/1.0, Connection: close), on a new one,
                    // so the offered load stays what was asked for.
                    self.start_request(idx, now, now);
                } else {
                    self.release(idx);
                }
            }
        }
    }

    /// The request on slot `idx` failed. In the closed loop its next one starts on the next
    /// loop turn; otherwise the slot is freed (a failed session ends, as in httperf).
    fn fail(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant) {
        if self.visits.is_some() {
            return self.fail_call(idx, class, errno, now);
        }
        if self.past_end(now) {
            // Its outcome falls after the window: the request stays unfinished. One refused
            // at once (no socket, no source address) as the last due arrivals go out never
            // entered flight, so the final count of slots in flight would miss it.
            let conn = &self.conns[idx];
            if conn.ex.measured && !conn.in_flight() {
                self.refused_at_end += 1;
            }
            return;
        }
        self.count_by_end(idx, now);
        self.record_failure(idx, class, errno, now);
        if self.spec.pacing != Pacing::Closed {
            self.release(idx);
        } else if matches!(class, ErrorClass::FdUnavail | ErrorClass::AddrUnavail) {
            self.conns[idx].state = State::Backoff(now + BACKOFF);
        } else {
            self.conns[idx].state = State::Idle;
            self.restart.push(idx);
        }
    }

    /// Fails requests past their deadline and wakes slots whose backoff is over.
    fn sweep(&mut self, now: Instant) {
        for idx in 0..self.conns.len() {
            if let Some(visits) = self.visits.as_deref() {
                // A visitor's slots rest until its visit ends; a slot no visitor holds waits.
                if visits.unheld(idx) {
                    continue;
                }
            } else if let State::Backoff(at) = self.conns[idx].state {
                if now >= at {
                    self.conns[idx].state = State::Idle;
                    self.restart.push(idx);
                    continue;
                }
            }
            if self.conns[idx].h3.is_some() {
                self.sweep_h3(idx, now);
            } else if self.conns[idx].h2.is_some() {
                self.sweep_h2(idx, now);
            } else {
                self.sweep_h1(idx, now);
            }
        }
    }

    /// A scheduled arrival sent at `now`, due at `due`: its lateness, and in its due second
    /// whether it was later than [`LATE_BOUND_US`].
    fn record_late(&mut self, now: Instant, due: Instant) {
        let late = us(now.saturating_duration_since(due));
        self.books.tally.timings.late.record(late);
        if late > LATE_BOUND_US {
            self.books.tally.series.at(second_of(self.spec.measure_start, due)).late += 1;
        }
    }
}

impl EventLoop for Worker {
    fn spec(&self) -> &WorkerSpec {
        &self.spec
    }

    fn clocked(&mut self) -> Clocked<'_> {
        Clocked {
            seconds: &mut self.seconds,
            tally: &mut self.books.tally,
            open: self.books.open,
            popped: self.schedule.as_ref().map_or(0, Schedule::popped),
            control: &self.control,
        }
    }

    fn poll(&mut self) -> &mut Poll {
        &mut self.poll
    }

    fn begin(&mut self, now: Instant) {
        self.start_closed_loop(now);
    }

    fn window_opens(&mut self) {
        if self.visits.is_some() {
            self.carry_into_window();
        } else if self.spec.end.is_none() && self.spec.pacing == Pacing::Closed {
            self.adopt_warm_up();
        }
    }

    fn ended(&mut self, now: Instant) -> Option<Instant> {
        Worker::ended(self, now)
    }

    fn each_turn(&mut self, now: Instant) {
        if self.spec.levels.is_some() && self.visits.is_none() {
            self.follow_levels(now);
        }
    }

    fn sweep(&mut self, now: Instant) {
        Worker::sweep(self, now);
    }

    fn drive(&mut self, now: Instant) {
        if self.visits.is_some() {
            self.wake_thinkers(now);
            self.arrive(now);
        } else {
            // Failed slots start again here, outside the code that saw them fail.
            std::mem::swap(&mut self.restart, &mut self.draining);
            while let Some(idx) = self.draining.pop() {
                self.start_request(idx, now, now);
            }
            self.dispatch(now, now);
        }
        if self.spec.protocol.is_h3() {
            self.quic_timers(self.conns.len(), now);
        }
        self.flush_dirty(now);
    }

    fn wait_for(&mut self, now: Instant, wake: Instant) -> Duration {
        Worker::wait_for(self, now, wake)
    }

    fn on_timer(&mut self) {
        if let Some(t) = self.timer.as_mut() {
            t.fired();
        }
    }

    fn on_event(&mut self, event: &Event) {
        Worker::on_event(self, event);
    }

    fn after_events(&mut self, now: Instant) {
        self.harvesting = false;
        self.flush_dirty(now);
    }

    fn publish_progress(&mut self) {
        let c = &self.control;
        let done = (self.books.tally.completed, self.books.tally.failed);
        publish([&c.completed, &c.failed], done, &mut self.published);
        if let Some(visits) = self.visits.as_deref_mut() {
            visits.publish(c);
        }
    }

    fn report(self, account: ThreadAccount, end_at: Instant) -> WorkerReport {
        Worker::report(self, account, end_at)
    }
}

impl Slots for Worker {
    fn parts(&mut self, idx: usize) -> Parts<'_> {
        Parts {
            conn: &mut self.conns[idx],
            books: &mut self.books,
            spec: &self.spec,
            own: self.visits.as_deref().and_then(|v| v.own(idx)),
            stamped: self.stamped,
            harvesting: self.harvesting,
        }
    }

    fn connect_ended(&mut self) {
        self.connecting -= 1;
    }

    /// Every origin's handshake is timed and counted; the run's `tls` is what its target
    /// settled.
    fn names_tls(&self, idx: usize) -> bool {
        self.visits.as_deref().is_none_or(|v| v.origin(idx).is_none())
    }
}

impl Plain for Worker {
    fn complete(&mut self, idx: usize, at: Instant, must_close: bool) {
        Worker::complete(self, idx, at, must_close);
    }

    fn fail(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant) {
        Worker::fail(self, idx, class, errno, now);
    }
}
