//! The visits' load on a worker thread: its visitors, their connections and its recorders,
//! turned by the request loop's event loop (`worker::EventLoop`), whose connection slots,
//! connection paths (`plain`, `multiplexed`), request table and tallies it shares. A visitor holds up to `Plan::per_visitor` connections per origin (the
//! target's, and a page view's allowed hosts', `Plan::origins`); a burst's first
//! call goes on one of them, the others spread over them once its answer is in, each
//! connection carrying one call at a time (no pipelining). Between bursts the visitor thinks:
//! its connections stay open (a server that closes an idle one costs a reconnect, as it costs
//! a browser), and a heap of wake-up times holds the thinking visitors. Without a schedule the
//! visitors are a closed population: as many as the worker's share of `-c`, a new visit
//! starting as soon as one ends. Over HTTP/2 (`streams`) a visitor holds one connection per
//! origin instead, as a browser does, and a burst's calls are its concurrent streams.

mod streams;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Poll, Token};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use loadlab_visit::{Check, Response};

use super::carry::{self, Carry};
use super::Plan;
use crate::check::BodyCheck;
use crate::conn::{Conn, State, To};
use crate::exchange::{second_of, us, Exchange};
use crate::http::Parser;
use crate::mix::Picker;
use crate::multiplexed::Multiplexed;
use crate::pacing::Budget;
use crate::plain::Plain;
use crate::result::WorkerReport;
use crate::schedule::Schedule;
use crate::session_tally::{SessionTally, StepFailure};
use crate::slots::{Books, Parts, Slots};
use crate::spec::WorkerSpec;
use crate::sys::ThreadAccount;
use crate::timer::Timer;
use crate::worker::event_loop::{publish, Clocked, Seconds, TIMER};
use crate::worker::EventLoop;
use crate::{Control, ErrorClass};

const READ_BUFFER: usize = 64 * 1024;

/// One visitor's visit in progress.
#[derive(Debug)]
struct Visitor {
    /// Which visit of the plan.
    visit: usize,
    /// When the visit was due (its arrival on the schedule).
    due: Instant,
    measured: bool,
    burst: usize,
    /// The next call of the burst to issue.
    next: usize,
    /// The burst's first answer is in: its other calls may go.
    opened_up: bool,
    /// When the burst's calls not yet issued became due (its first call's due time, then the
    /// first answer's arrival).
    ready_at: Instant,
    in_flight: u32,
    replies: u32,
    /// Its connection slots.
    slots: Vec<usize>,
    think: Duration,
    /// When the current burst (a visit file's step) was due: its latency counts from there.
    step_due: Instant,
    /// A visit file's visitor: its cookie jar and captured values.
    carry: Option<Carry>,
}

/// A connection of a visitor, with the call it carries.
#[derive(Debug)]
struct Slot {
    conn: Conn,
    visitor: usize,
    /// The origin it connects to (`Plan::origins`): 0, the target.
    origin: usize,
    /// The call in flight: its burst and its place there.
    call: (usize, usize),
    /// A visit file's call: this visitor's own request bytes, sent instead of the table's.
    own: Option<Vec<u8>>,
    /// HTTP/2: the call each stream slot carries, and (a visit file's) its request's path.
    calls: Vec<(usize, usize)>,
    paths: Vec<String>,
}

pub(crate) struct VisitWorker {
    spec: WorkerSpec,
    plan: Arc<Plan>,
    poll: Poll,
    timer: Timer,
    /// The arrivals; `None` for a closed population of `spec.connections` visitors.
    schedule: Option<Schedule>,
    /// Answers' bodies are kept (up to `check::MAX_BODY`) for a check or a capture.
    keep_body: bool,
    /// This worker's stream of the global arrivals (index, streams): arrival k of this worker
    /// is global arrival `index + k x streams`, and visits go round-robin over the plan by it.
    stream: (usize, usize),
    arrivals: usize,
    /// A weighted mix of visit files: which visit each arriving visitor makes; `None`, the
    /// plan's visits in turn by global arrival.
    pick: Option<Picker>,
    budget: Budget,
    budget_spent: bool,
    schedule_end: Option<Instant>,
    visitors: Vec<Option<Visitor>>,
    free_visitors: Vec<usize>,
    live: usize,
    slots: Vec<Slot>,
    free_slots: Vec<usize>,
    /// Thinking visitors by wake-up time.
    thinking: BinaryHeap<Reverse<(Instant, usize)>>,
    rng: SmallRng,
    /// The read buffer, the tallies and the counters its connections share.
    books: Books,
    sessions: SessionTally,
    control: Arc<Control>,
    /// The figures of every second (see [`EventLoop::turn_second`]).
    seconds: Seconds,
    /// Requests, then visits, completed and failed as last told to `control`.
    published: [(u64, u64); 2],
}

impl VisitWorker {
    pub fn new(
        spec: WorkerSpec,
        plan: Arc<Plan>,
        budget: Budget,
        schedule: Option<Schedule>,
        stream: (usize, usize),
        seed: u64,
        control: Arc<Control>,
    ) -> io::Result<VisitWorker> {
        let poll = Poll::new()?;
        let timer = Timer::new(poll.registry(), TIMER)?;
        let tally = spec.tally(schedule.is_some());
        let pick = match plan.weights() {
            Some(w) => Some(Picker::weighted(&w, stream.0, seed).map_err(io::Error::other)?),
            None => None,
        };
        let mut sessions = SessionTally::default();
        sessions.steps.resize_with(plan.steps.len(), Default::default);
        if pick.is_some() {
            sessions.by_visit.resize_with(plan.visits.len(), Default::default);
        }
        let measure_start = spec.measure_start;
        Ok(VisitWorker {
            keep_body: plan.needs_body(),
            rng: SmallRng::seed_from_u64(seed ^ (stream.0 as u64).wrapping_mul(0x9e37_79b9)),
            spec,
            plan,
            poll,
            timer,
            schedule,
            stream,
            arrivals: 0,
            pick,
            budget,
            budget_spent: false,
            schedule_end: None,
            visitors: Vec::new(),
            free_visitors: Vec::new(),
            live: 0,
            slots: Vec::new(),
            free_slots: Vec::new(),
            thinking: BinaryHeap::new(),
            books: Books::new(tally, READ_BUFFER, measure_start),
            sessions,
            seconds: Seconds::new(measure_start, control.live.enabled(), stream.0),
            published: [(0, 0); 2],
            control,
        })
    }

    /// The run is over: a stop asked for, a timed run's end, or every budgeted visit ended.
    fn ended(&mut self, now: Instant) -> Option<Instant> {
        if self.control.stop.load(Ordering::Relaxed) {
            return Some(now);
        }
        if let Some(end) = self.spec.end.filter(|end| now >= *end) {
            return Some(end);
        }
        (self.budget_spent && self.live == 0).then_some(self.books.last_event)
    }

    fn next_arrival(&self) -> Option<Instant> {
        (!self.budget_spent).then(|| self.schedule.as_ref()?.peek()).flatten()
    }

    /// Starts the visits due by `now`: the schedule's, or, for a closed population, as many
    /// as bring its visitors back to `spec.connections` (a visitor that ended one visit starts
    /// its next at once: it is due when the last one ended).
    fn arrive(&mut self, now: Instant) {
        if self.schedule.is_none() {
            while !self.budget_spent && self.live < self.spec.connections && !self.past_end(now) {
                let measured = now >= self.spec.measure_start;
                if measured && !self.budget.take() {
                    self.budget_spent = true;
                    return;
                }
                self.begin_visit(now, measured, now);
            }
            return;
        }
        while let Some(due) = self.next_arrival().filter(|due| *due <= now) {
            let measured = due >= self.spec.measure_start;
            if measured && !self.budget.take() {
                self.budget_spent = true;
                self.schedule_end = Some(due);
                return;
            }
            if let Some(s) = self.schedule.as_mut() {
                s.pop();
            }
            self.books.arrival_due(self.spec.measure_start, due);
            self.begin_visit(due, measured, now);
        }
    }

    /// A visit due at `due` begins at `now` with its first call.
    fn begin_visit(&mut self, due: Instant, measured: bool, now: Instant) {
        let global = self.stream.0 + self.arrivals * self.stream.1;
        self.arrivals += 1;
        // The visitor's number (`{visitor}`, from 1): its place among this worker's live
        // visitors, interleaved with the other workers', so that no two visitors in a visit at
        // once share one, and a closed population of K numbers itself 1..=K.
        let v = self.free_visitors.pop().unwrap_or(self.visitors.len());
        let number = v * self.stream.1 + self.stream.0 + 1;
        self.sessions.top_visitor = self.sessions.top_visitor.max(number as u64);
        let visitor = Visitor {
            visit: match self.pick.as_mut() {
                Some(pick) => pick.next() as usize,
                None => global % self.plan.visits.len(),
            },
            due,
            measured,
            burst: 0,
            next: 0,
            opened_up: false,
            ready_at: due,
            in_flight: 0,
            replies: 0,
            slots: Vec::new(),
            think: Duration::ZERO,
            step_due: due,
            carry: self.plan.render.as_ref().map(|r| Carry::new(r, number)),
        };
        match self.visitors.get_mut(v) {
            Some(free) => *free = Some(visitor),
            None => self.visitors.push(Some(visitor)),
        }
        self.live += 1;
        self.sessions.started += u64::from(measured);
        self.issue(v, now);
    }

    /// A closed population's visits in progress when the measurement starts are measured
    /// from then on, as wrk counts the requests it completes: a visitor's next visit starts
    /// only when its current one ends, so leaving a warm-up visit out of the window would
    /// leave its visitor out for as long as that visit lasts, and in a window a few visits
    /// long, visits/s would count only the visits begun and ended inside it. Such a visit's
    /// lifetime runs from its due time, as every visit's; its steps count from the first one
    /// due in the window. An open loop's visits are its schedule's, measured by their due time.
    fn carry_into_window(&mut self) {
        if self.schedule.is_some() {
            return;
        }
        for visitor in self.visitors.iter_mut().flatten().filter(|v| !v.measured) {
            if !self.budget.take() {
                self.budget_spent = true;
                return;
            }
            visitor.measured = true;
            self.sessions.started += 1;
            // Its connections are the visit's (httperf's connections per session), though
            // opened before the window and so not among the requests' connections opened.
            self.sessions.connections += visitor.slots.len() as u64;
        }
    }

    /// Visitors whose think time is over start their next burst.
    fn wake_thinkers(&mut self, now: Instant) {
        while let Some(&Reverse((at, v))) = self.thinking.peek() {
            if at > now {
                return;
            }
            self.thinking.pop();
            if let Some(visitor) = self.visitors[v].as_mut() {
                visitor.ready_at = at;
                self.issue(v, now);
            }
        }
    }

    /// Issues what visitor `v` may issue now: the burst's first call alone, the others once
    /// its answer is in, each on an idle connection of the visitor or a new one while it
    /// holds fewer than the plan allows.
    fn issue(&mut self, v: usize, now: Instant) {
        loop {
            let Some(visitor) = self.visitors[v].as_ref() else { return };
            let burst = &self.plan.visits[visitor.visit].bursts[visitor.burst];
            let limit = if visitor.opened_up { burst.entries.len() } else { 1 };
            if visitor.next >= limit {
                return;
            }
            let entry = burst.entries[visitor.next];
            let origin = self.plan.origins.of(entry);
            if self.spec.protocol.is_h2() {
                if !self.issue_stream(v, origin, entry, now) {
                    return;
                }
                continue;
            }
            let mut own = visitor.slots.iter().copied().filter(|s| self.slots[*s].origin == origin);
            let held = own.clone().count();
            let slot = match own.find(|s| self.slots[*s].conn.state == State::Idle) {
                Some(s) => s,
                None if held < self.plan.per_visitor => self.new_slot(v, origin),
                None => return,
            };
            if let Err(class) = self.render(v, slot, now) {
                let visitor = self.visitors[v].as_ref().expect("a live visitor");
                let call = (visitor.burst, visitor.next);
                return self.end_visit(v, now, Some((call, class.to_string())));
            }
            let (call, due, measured) = self.take_call(v);
            self.start(slot, call, entry, now, due, measured);
        }
    }

    /// Visitor `v`'s next call is issued: which it is, when it was due and whether it counts.
    fn take_call(&mut self, v: usize) -> ((usize, usize), Instant, bool) {
        let visitor = self.visitors[v].as_mut().expect("a live visitor");
        let call = (visitor.burst, visitor.next);
        visitor.next += 1;
        visitor.in_flight += 1;
        let (due, measured) = (visitor.ready_at, visitor.measured);
        if call.1 == 0 {
            visitor.step_due = due;
            if let Some(i) = self.plan.step_index(visitor.visit, call.0).filter(|_| measured) {
                self.sessions.steps[i].started += 1;
            }
        }
        (call, due, measured)
    }

    /// A visit file's call: visitor `v`'s next request rendered into slot `slot`'s own bytes
    /// (its captured values, its cookies). Other visits send the table's bytes.
    fn render(&mut self, v: usize, slot: usize, now: Instant) -> Result<(), &'static str> {
        let plan = self.plan.clone();
        let Some(render) = &plan.render else { return Ok(()) };
        let visitor = self.visitors[v].as_ref().expect("a live visitor");
        let call = &plan.visits[visitor.visit].bursts[visitor.burst].calls[visitor.next];
        let carry = visitor.carry.as_ref().expect("a visit file's visitor carries");
        let out = self.slots[slot].own.get_or_insert_with(Vec::new);
        // Reading the file checked every name against earlier captures, and a capture that
        // finds nothing ends its visit: a name without a value here is that capture's failure.
        carry.render(render, call, now, out).map_err(|_| "capture")
    }

    fn new_slot(&mut self, v: usize, origin: usize) -> usize {
        let now = Instant::now();
        let idx = match self.free_slots.pop() {
            Some(idx) => idx,
            None => {
                let mut parser = Parser::new(self.spec.limits);
                parser.capture_server();
                if self.plan.render.is_some() {
                    parser.capture_headers();
                }
                // A check or capture on the body reads it whole: the answer is kept as a
                // verify's is (and dropped from the run's figures at the end, see `report`).
                let validation = crate::check::Validation {
                    keep_answer: self.keep_body || self.spec.validation.keep_answer,
                    ..self.spec.validation.clone()
                };
                let exchange = || Exchange::new(BodyCheck::new(&validation), now);
                let h2 = self.spec.protocol.is_h2().then(|| self.session(exchange));
                let conn = Conn::new(parser, exchange(), h2, now);
                let (calls, paths) = (Vec::new(), Vec::new());
                let call = (0, 0);
                self.slots.push(Slot { conn, visitor: v, origin, call, own: None, calls, paths });
                self.slots.len() - 1
            }
        };
        self.slots[idx].visitor = v;
        self.slots[idx].origin = origin;
        self.slots[idx].conn.state = State::Idle;
        self.visitors[v].as_mut().expect("a live visitor").slots.push(idx);
        idx
    }

    fn start(
        &mut self,
        idx: usize,
        call: (usize, usize),
        entry: u32,
        now: Instant,
        due: Instant,
        measured: bool,
    ) {
        let slot = &mut self.slots[idx];
        slot.call = call;
        slot.conn.ex.begin(now, due, self.spec.timeout, measured, entry);
        slot.conn.parser.reset(self.spec.table.is_head(entry));
        // Lateness is the schedule's: how late a visit's first call left after the visit was
        // due. A later call waiting for one of its visitor's connections is the visit's own
        // pace (it counts in its latency), not the client falling behind.
        if measured && call == (0, 0) && self.schedule.is_some() {
            self.books.tally.timings.late.record(us(now.saturating_duration_since(due)));
        }
        if slot.conn.stream.is_some() {
            slot.conn.state = State::Writing { sent: 0 };
            return self.write(idx, now);
        }
        if let Err(e) = self.connect(idx, now, measured) {
            self.fail_io(idx, &e, now);
        }
    }

    /// Opens slot `idx`'s connection toward its origin, its deadline the connect timeout.
    fn connect(&mut self, idx: usize, now: Instant, measured: bool) -> io::Result<()> {
        let slot = &mut self.slots[idx];
        // Over TLS, the run's one client configuration: a visitor's new connection resumes a
        // session as the request loop's do (its cache is shared by every connection). An
        // allowed host's origin is spoken to at its own address, over TLS when it is an
        // `https` one (with the configuration the other origins' connections share).
        let to = match self.plan.origins.get(slot.origin) {
            Some(other) => To { addr: other.addr, unix: None, tls: other.tls.as_ref() },
            None => To {
                addr: self.spec.addr,
                unix: self.spec.unix.as_deref(),
                tls: self.spec.tls.as_ref(),
            },
        };
        let conn = &mut slot.conn;
        conn.connect(self.poll.registry(), Token(idx), to, None, false)?;
        self.opened(idx, measured, now);
        self.open_into_second();
        if measured {
            self.sessions.connections += 1;
        }
        Ok(())
    }

    fn on_event(&mut self, event: &Event) {
        let idx = event.token().0;
        let now = Instant::now();
        if self.slots[idx].conn.h2.is_some() {
            return self.on_h2_event(idx, event, now);
        }
        self.on_h1_event(idx, event, now);
    }

    fn past_end(&self, now: Instant) -> bool {
        self.spec.end.is_some_and(|end| now >= end)
    }

    /// A full answer arrived on slot `idx`: recorded, checked, and the visit goes on.
    fn complete(&mut self, idx: usize, now: Instant, must_close: bool) {
        if self.past_end(now) {
            return;
        }
        let (v, call) = (self.slots[idx].visitor, self.slots[idx].call);
        // A run's own checks (--expect-status, --expect-contains) fail a call as they fail a
        // request anywhere; here the visit ends with it, counted under `validation`.
        let invalid = self.record_answer(idx, true, must_close, now);
        let status = self.slots[idx].conn.parser.status();
        let verdict = if invalid {
            Err(ErrorClass::Validation.name())
        } else {
            let slot = &mut self.slots[idx];
            let headers = slot.conn.parser.take_headers();
            let body = slot.conn.ex.check.kept().unwrap_or_default();
            let answer = Response { status, headers: &headers, body };
            let path = slot.own.as_deref().map(carry::request_path);
            let visitor = self.visitors[v].as_mut().expect("a live visitor");
            judge(&self.plan, visitor, call, path, &answer, now)
        };
        let measured = self.slots[idx].conn.ex.measured;
        self.count_expected(v, call, status, measured && verdict.is_ok());
        self.answered(v, call, verdict, now);
    }

    /// A measured answer that passed its checks (`passed`) and is not 2xx is counted when its
    /// call's status check names it: an answer the visit expects, such as a login's redirect.
    fn count_expected(&mut self, v: usize, call: (usize, usize), status: u16, passed: bool) {
        let visitor = self.visitors[v].as_ref().expect("a live visitor");
        let call = &self.plan.visits[visitor.visit].bursts[call.0].calls[call.1];
        let named = |c: &Check| matches!(c, Check::Status(s) if s.contains(&status));
        if passed && !(200..300).contains(&status) && call.checks.iter().any(named) {
            self.sessions.expected_not_2xx += 1;
        }
    }

    /// Visitor `v`'s call `call` was answered and judged: its visit ends on a broken
    /// verdict, or goes on (the burst's other calls, the next burst after a think time).
    fn answered(&mut self, v: usize, call: (usize, usize), verdict: Verdict, now: Instant) {
        let plan = self.plan.clone();
        let visitor = self.visitors[v].as_mut().expect("a live visitor");
        visitor.in_flight -= 1;
        visitor.replies += 1;
        let burst = &plan.visits[visitor.visit].bursts[call.0];
        if let Err(class) = verdict {
            return self.end_visit(v, now, Some((call, class.to_string())));
        }
        if call.1 == 0 {
            visitor.opened_up = true;
            visitor.ready_at = now;
        }
        if visitor.next < burst.entries.len() || visitor.in_flight > 0 {
            return self.issue(v, now);
        }
        // The burst is over: the visit ends, or its visitor thinks.
        let in_window = visitor.measured && visitor.step_due >= self.spec.measure_start;
        if let Some(i) = plan.step_index(visitor.visit, visitor.burst).filter(|_| in_window) {
            let step = &mut self.sessions.steps[i];
            step.completed += 1;
            step.latency.record(us(now.saturating_duration_since(visitor.step_due)));
        }
        if visitor.burst + 1 == plan.visits[visitor.visit].bursts.len() {
            return self.end_visit(v, now, None);
        }
        let think = burst.think.sample(&mut self.rng);
        visitor.think += think;
        visitor.burst += 1;
        visitor.next = 0;
        visitor.opened_up = false;
        self.thinking.push(Reverse((now + think, v)));
    }

    /// The call on slot `idx` failed: counted as a request, and its visit fails.
    fn fail(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant) {
        if self.past_end(now) {
            return;
        }
        let (v, call) = (self.slots[idx].visitor, self.slots[idx].call);
        self.record_failure(idx, class, errno, now);
        self.slots[idx].conn.state = State::Idle;
        self.call_failed(v, call, class, now);
    }

    /// Visitor `v`'s call `call` failed in `class` (recorded by the caller): its visit ends.
    fn call_failed(&mut self, v: usize, call: (usize, usize), class: ErrorClass, now: Instant) {
        if let Some(visitor) = self.visitors[v].as_mut() {
            visitor.in_flight -= 1;
        }
        self.end_visit(v, now, Some((call, class.name().to_string())));
    }

    /// Visit `v` ends at `now`, completed or failed (where and why); its connections close.
    fn end_visit(&mut self, v: usize, now: Instant, failure: Option<((usize, usize), String)>) {
        let visitor = self.visitors[v].take().expect("a live visitor");
        let plan = self.plan.clone();
        let plan = &plan.visits[visitor.visit];
        let mut abandoned = 0;
        for &s in &visitor.slots {
            let conn = &mut self.slots[s].conn;
            match conn.h2.as_mut() {
                Some(h2) => {
                    // Its other streams are abandoned with the visit, as other connections'
                    // calls are over HTTP/1.1.
                    abandoned += h2.in_flight() as u64;
                    h2.abandon();
                }
                None => abandoned += u64::from(conn.in_flight()),
            }
            self.slots[s].conn.state = State::Idle;
            self.close(s);
            self.free_slots.push(s);
        }
        self.free_visitors.push(v);
        self.live -= 1;
        if !visitor.measured {
            return;
        }
        let life = us(now.saturating_duration_since(visitor.due));
        self.sessions.think_us += us(visitor.think);
        self.sessions.count_replies(visitor.replies);
        match failure {
            None => {
                self.sessions.completed += 1;
                self.sessions.lifetime.record(life);
                if let Some(own) = self.sessions.by_visit.get_mut(visitor.visit) {
                    own.record(life);
                }
                self.sessions.count_completed_at(second_of(self.spec.measure_start, now));
            }
            Some(((burst, call), class)) => {
                self.sessions.failed += 1;
                self.sessions.failtime.record(life);
                self.sessions.abandoned += abandoned;
                let planned: usize = plan.bursts.iter().map(|b| b.entries.len()).sum();
                let issued: usize =
                    plan.bursts[..burst].iter().map(|b| b.entries.len()).sum::<usize>()
                        + visitor.next;
                self.sessions.not_issued += (planned - issued) as u64;
                let step = self.plan.step_index(visitor.visit, burst);
                if let Some(i) = step.filter(|_| visitor.step_due >= self.spec.measure_start) {
                    *self.sessions.steps[i].failed.entry(class.clone()).or_insert(0) += 1;
                }
                let at = StepFailure { step: burst as u32 + 1, call: call as u32 + 1, class };
                *self.sessions.failures.entry(at).or_insert(0) += 1;
            }
        }
    }

    /// Fails calls past their deadline.
    fn sweep(&mut self, now: Instant) {
        for idx in 0..self.slots.len() {
            if self.visitors[self.slots[idx].visitor].is_none() {
                continue;
            }
            if self.slots[idx].conn.h2.is_some() {
                self.sweep_h2(idx, now);
            } else {
                self.sweep_h1(idx, now);
            }
        }
    }

    fn report(mut self, account: ThreadAccount, end_at: Instant) -> WorkerReport {
        self.books.tally.unfinished = self.slots.iter().map(|s| s.conn.measured_in_flight()).sum();
        self.account_second();
        self.sessions.unfinished =
            self.visitors.iter().flatten().filter(|v| v.measured).count() as u64;
        if let Some(schedule) = self.schedule.as_mut().filter(|_| !self.budget_spent) {
            let until = self.control.schedule_end(end_at);
            self.books.never_sent(schedule, self.spec.measure_start, until);
        }
        if !self.spec.validation.keep_answer {
            // Kept for the visits' checks and captures only, not a verify's answer.
            self.books.tally.answer = None;
        }
        let measure_start = self.spec.measure_start;
        self.books.tally.sessions = Some(Box::new(self.sessions));
        WorkerReport {
            cpu: account.cpu,
            cpu_wait: account.cpu_wait,
            involuntary_switches: account.involuntary_switches,
            wall: end_at.saturating_duration_since(measure_start),
            last_event: self.books.last_event.saturating_duration_since(measure_start),
            schedule_end: self.schedule_end.map(|due| due.saturating_duration_since(measure_start)),
            peak_open: self.books.peak_open,
            slots: self.slots.len(),
            server: self.books.server.take(),
            negotiated: self.books.negotiated.take(),
            tally: self.books.tally,
        }
    }
}

impl EventLoop for VisitWorker {
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

    fn window_opens(&mut self) {
        self.carry_into_window();
    }

    fn ended(&mut self, now: Instant) -> Option<Instant> {
        VisitWorker::ended(self, now)
    }

    fn sweep(&mut self, now: Instant) {
        VisitWorker::sweep(self, now);
    }

    fn drive(&mut self, now: Instant) {
        self.wake_thinkers(now);
        self.arrive(now);
    }

    /// The timer is armed for the next arrival or the next visitor done thinking.
    fn wait_for(&mut self, now: Instant, wake: Instant) -> Duration {
        let timed = [self.next_arrival(), self.thinking.peek().map(|Reverse((at, _))| *at)];
        if let Some(at) = timed.into_iter().flatten().min() {
            // Should arming fail, the sweep tick still wakes the loop, only later; the
            // lateness is then measured like any other.
            let _ = self.timer.arm(at);
        }
        wake.saturating_duration_since(now)
    }

    fn on_timer(&mut self) {
        self.timer.fired();
    }

    fn on_event(&mut self, event: &Event) {
        VisitWorker::on_event(self, event);
    }

    fn publish_progress(&mut self) {
        let c = &self.control;
        let done = (self.books.tally.completed, self.books.tally.failed);
        publish([&c.completed, &c.failed], done, &mut self.published[0]);
        let ended = (self.sessions.completed, self.sessions.failed);
        publish([&c.visits_completed, &c.visits_failed], ended, &mut self.published[1]);
    }

    fn report(self, account: ThreadAccount, end_at: Instant) -> WorkerReport {
        VisitWorker::report(self, account, end_at)
    }
}

impl Slots for VisitWorker {
    fn parts(&mut self, idx: usize) -> Parts<'_> {
        let slot = &mut self.slots[idx];
        Parts {
            conn: &mut slot.conn,
            books: &mut self.books,
            spec: &self.spec,
            own: slot.own.as_deref().filter(|_| self.plan.render.is_some()),
            stamped: false,
            harvesting: false,
        }
    }

    /// Every origin's handshake is timed and counted; the run's `tls` is what its target
    /// settled.
    fn names_tls(&self, idx: usize) -> bool {
        self.slots[idx].origin == 0
    }
}

impl Plain for VisitWorker {
    fn complete(&mut self, idx: usize, at: Instant, must_close: bool) {
        VisitWorker::complete(self, idx, at, must_close);
    }

    fn fail(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant) {
        VisitWorker::fail(self, idx, class, errno, now);
    }
}

/// An answer's verdict: `Err` with the class that ends its visit.
type Verdict = Result<(), &'static str>;

/// Judges `answer` to `visitor`'s call `call` (a visit file's request for `path`): its cookies
/// and captures kept, its checks applied.
fn judge(
    plan: &Plan,
    visitor: &mut Visitor,
    call: (usize, usize),
    path: Option<&str>,
    answer: &Response<'_>,
    now: Instant,
) -> Verdict {
    let call = &plan.visits[visitor.visit].bursts[call.0].calls[call.1];
    match (visitor.carry.as_mut(), path) {
        (Some(carry), Some(path)) => carry.judge(call, path, answer, now),
        _ => carry::judge_checks(call, answer),
    }
}
