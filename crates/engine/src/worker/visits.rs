//! Visits as the worker's source of requests: its visitors, what each has in progress and
//! which of the worker's connection slots it holds ([`Visits`], beside the worker's `conns`
//! by the same index). The worker's loop, slots, connection paths (`plain`, `multiplexed`),
//! schedule, budget, request table and tallies are the request loop's own; only what a slot's
//! answer or failure means, and when the next request goes, are the visits'.
//!
//! A visitor holds up to `Plan::per_visitor` connections per origin (the target's, and a page
//! view's allowed hosts', `Plan::origins`); a burst's first call goes on one of them, the
//! others spread over them once its answer is in, each connection carrying one call at a time
//! (no pipelining). Between bursts the visitor thinks: its connections stay open (a server
//! that closes an idle one costs a reconnect, as it costs a browser), and a heap of wake-up
//! times holds the thinking visitors. Without a schedule the visitors are a closed population:
//! as many as the worker's share of `-c`, a new visit starting as soon as one ends. Over
//! HTTP/2 (`streams`) a visitor holds one connection per origin instead, as a browser does,
//! and a burst's calls are its concurrent streams.

mod streams;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use loadlab_visit::{Check, Response};

use super::Worker;
use crate::check::Validation;
use crate::conn::State;
use crate::exchange::{second_of, us};
use crate::mix::Picker;
use crate::plain::Plain;
use crate::session_tally::{SessionTally, StepFailure};
use crate::slots::Slots;
use crate::visits::carry::{self, Carry};
use crate::visits::{Origin, Plan};
use crate::ErrorClass;

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

/// A connection slot's part in the visits: whose it is, where it connects and the call it
/// carries.
#[derive(Debug, Default)]
struct Slot {
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

/// The visits a worker drives: its visitors and their part of its slots.
pub(crate) struct Visits {
    plan: Arc<Plan>,
    /// Answers' bodies are kept (up to `check::MAX_BODY`) for a check or a capture.
    keep_body: bool,
    /// This worker's stream of the global arrivals (index, streams): arrival k of this worker
    /// is global arrival `index + k x streams`, and visits go round-robin over the plan by it.
    stream: (usize, usize),
    arrivals: usize,
    /// A weighted mix of visit files: which visit each arriving visitor makes; `None`, the
    /// plan's visits in turn by global arrival.
    pick: Option<Picker>,
    visitors: Vec<Option<Visitor>>,
    free_visitors: Vec<usize>,
    live: usize,
    /// By the worker's slot index.
    slots: Vec<Slot>,
    free_slots: Vec<usize>,
    /// Thinking visitors by wake-up time.
    thinking: BinaryHeap<Reverse<(Instant, usize)>>,
    rng: SmallRng,
    sessions: SessionTally,
    /// Visits completed and failed as last told to the run's counters.
    published: (u64, u64),
}

impl Visits {
    /// `plan`'s visits for the worker holding stream `stream` of the run's arrivals.
    pub fn new(plan: Arc<Plan>, stream: (usize, usize), seed: u64) -> io::Result<Visits> {
        let pick = match plan.weights() {
            Some(w) => Some(Picker::weighted(&w, stream.0, seed).map_err(io::Error::other)?),
            None => None,
        };
        let mut sessions = SessionTally::default();
        sessions.steps.resize_with(plan.steps.len(), Default::default);
        if pick.is_some() {
            sessions.by_visit.resize_with(plan.visits.len(), Default::default);
        }
        Ok(Visits {
            keep_body: plan.needs_body(),
            rng: SmallRng::seed_from_u64(seed ^ (stream.0 as u64).wrapping_mul(0x9e37_79b9)),
            plan,
            stream,
            arrivals: 0,
            pick,
            visitors: Vec::new(),
            free_visitors: Vec::new(),
            live: 0,
            slots: Vec::new(),
            free_slots: Vec::new(),
            thinking: BinaryHeap::new(),
            sessions,
            published: (0, 0),
        })
    }

    /// A visit file's call on slot `idx`: its visitor's own request bytes.
    pub(super) fn own(&self, idx: usize) -> Option<&[u8]> {
        self.slots[idx].own.as_deref().filter(|_| self.plan.render.is_some())
    }

    /// The origin slot `idx` connects to, when it is not the target's.
    pub(super) fn origin(&self, idx: usize) -> Option<&Origin> {
        self.plan.origins.get(self.slots[idx].origin)
    }

    /// How the visits' connections are made: `validation` keeping the answers a check or a
    /// capture reads whole (dropped from the run's figures at the end, see `end_visits`),
    /// stream slots for the plan's largest burst, and whether answers' headers are captured
    /// (a visit file's cookies and captures).
    pub(super) fn connections(&self, validation: &Validation) -> (Validation, usize, bool) {
        let keep_answer = self.keep_body || validation.keep_answer;
        let bursts = self.plan.visits.iter().flat_map(|v| &v.bursts);
        let widest = bursts.map(|b| b.entries.len()).max().unwrap_or(1).max(1);
        (Validation { keep_answer, ..validation.clone() }, widest, self.plan.render.is_some())
    }

    /// Whether every visit this worker may start has ended.
    pub(super) fn done(&self, budget_spent: bool) -> bool {
        budget_spent && self.live == 0
    }

    /// When the next thinking visitor wakes.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        self.thinking.peek().map(|Reverse((at, _))| *at)
    }

    /// A measured visit opened a connection (httperf's connections per session).
    pub(super) fn count_connection(&mut self) {
        self.sessions.connections += 1;
    }

    /// Whether slot `idx` belongs to no visitor now.
    pub(super) fn unheld(&self, idx: usize) -> bool {
        self.visitors[self.slots[idx].visitor].is_none()
    }

    /// The run's visit counters move by what this worker's visits ended since last told.
    pub(super) fn publish(&mut self, control: &crate::Control) {
        let ended = (self.sessions.completed, self.sessions.failed);
        let to = [&control.visits_completed, &control.visits_failed];
        super::event_loop::publish(to, ended, &mut self.published);
    }

    /// The visits' figures, into `tally` at the worker's end: visits still in progress are
    /// unfinished, and answers kept only for the visits' checks go.
    pub(super) fn end_visits(self, tally: &mut crate::result::Tally, keep_answer: bool) {
        let mut sessions = self.sessions;
        sessions.unfinished = self.visitors.iter().flatten().filter(|v| v.measured).count() as u64;
        if !keep_answer {
            // Kept for the visits' checks and captures only, not a verify's answer.
            tally.answer = None;
        }
        tally.sessions = Some(Box::new(sessions));
    }
}

impl Worker {
    fn vs(&mut self) -> &mut Visits {
        self.visits.as_deref_mut().expect("a run of visits")
    }

    fn next_arrival(&self) -> Option<Instant> {
        (!self.budget_spent).then(|| self.schedule.as_ref()?.peek()).flatten()
    }

    /// When the visits next need the loop: the next arrival, or the next visitor done
    /// thinking (`None` without visits: the request loop's dispatch arms its own wake-ups).
    pub(super) fn visits_wake(&self) -> Option<Instant> {
        let thinking = self.visits.as_deref()?.next_wake();
        [self.next_arrival(), thinking].into_iter().flatten().min()
    }

    /// Starts the visits due by `now`: the schedule's, or, for a closed population, as many
    /// as bring its visitors back to `spec.connections` (a visitor that ended one visit starts
    /// its next at once: it is due when the last one ended).
    pub(super) fn arrive(&mut self, now: Instant) {
        if self.schedule.is_none() {
            while !self.budget_spent
                && self.vs().live < self.spec.connections
                && !self.past_end(now)
            {
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
        let vs = self.visits.as_deref_mut().expect("a run of visits");
        let global = vs.stream.0 + vs.arrivals * vs.stream.1;
        vs.arrivals += 1;
        // The visitor's number (`{visitor}`, from 1): its place among this worker's live
        // visitors, interleaved with the other workers', so that no two visitors in a visit at
        // once share one, and a closed population of K numbers itself 1..=K.
        let v = vs.free_visitors.pop().unwrap_or(vs.visitors.len());
        let number = v * vs.stream.1 + vs.stream.0 + 1;
        vs.sessions.top_visitor = vs.sessions.top_visitor.max(number as u64);
        let visitor = Visitor {
            visit: match vs.pick.as_mut() {
                Some(pick) => pick.next() as usize,
                None => global % vs.plan.visits.len(),
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
            carry: vs.plan.render.as_ref().map(|r| Carry::new(r, number)),
        };
        match vs.visitors.get_mut(v) {
            Some(free) => *free = Some(visitor),
            None => vs.visitors.push(Some(visitor)),
        }
        vs.live += 1;
        vs.sessions.started += u64::from(measured);
        self.issue(v, now);
    }

    /// A closed population's visits in progress when the measurement starts are measured
    /// from then on, as wrk counts the requests it completes: a visitor's next visit starts
    /// only when its current one ends, so leaving a warm-up visit out of the window would
    /// leave its visitor out for as long as that visit lasts, and in a window a few visits
    /// long, visits/s would count only the visits begun and ended inside it. Such a visit's
    /// lifetime runs from its due time, as every visit's; its steps count from the first one
    /// due in the window. An open loop's visits are its schedule's, measured by their due time.
    pub(super) fn carry_into_window(&mut self) {
        if self.schedule.is_some() {
            return;
        }
        let vs = self.visits.as_deref_mut().expect("a run of visits");
        for visitor in vs.visitors.iter_mut().flatten().filter(|v| !v.measured) {
            if !self.budget.take() {
                self.budget_spent = true;
                return;
            }
            visitor.measured = true;
            vs.sessions.started += 1;
            // Its connections are the visit's (httperf's connections per session), though
            // opened before the window and so not among the requests' connections opened.
            vs.sessions.connections += visitor.slots.len() as u64;
        }
    }

    /// Visitors whose think time is over start their next burst.
    pub(super) fn wake_thinkers(&mut self, now: Instant) {
        while let Some(&Reverse((at, v))) = self.vs().thinking.peek() {
            if at > now {
                return;
            }
            let vs = self.vs();
            vs.thinking.pop();
            if let Some(visitor) = vs.visitors[v].as_mut() {
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
            let vs = self.visits.as_deref().expect("a run of visits");
            let Some(visitor) = vs.visitors[v].as_ref() else { return };
            let burst = &vs.plan.visits[visitor.visit].bursts[visitor.burst];
            let limit = if visitor.opened_up { burst.entries.len() } else { 1 };
            if visitor.next >= limit {
                return;
            }
            let entry = burst.entries[visitor.next];
            let origin = vs.plan.origins.of(entry);
            if self.spec.protocol.is_h2() {
                if !self.issue_stream(v, origin, entry, now) {
                    return;
                }
                continue;
            }
            let mut own = visitor.slots.iter().copied().filter(|s| vs.slots[*s].origin == origin);
            let held = own.clone().count();
            let slot = match own.find(|s| self.conns[*s].state == State::Idle) {
                Some(s) => s,
                None if held < vs.plan.per_visitor => self.visitor_slot(v, origin),
                None => return,
            };
            if let Err(class) = self.render(v, slot, now) {
                return self.render_failed(v, class, now);
            }
            let (call, due, measured) = self.take_call(v);
            self.start_call(slot, call, entry, now, due, measured);
        }
    }

    /// Visitor `v`'s next call could not be rendered (a capture found nothing): its visit
    /// ends, failed at that call.
    fn render_failed(&mut self, v: usize, class: &str, now: Instant) {
        let visitor = self.vs().visitors[v].as_ref().expect("a live visitor");
        let call = (visitor.burst, visitor.next);
        self.end_visit(v, now, Some((call, class.to_string())));
    }

    /// Visitor `v`'s next call is issued: which it is, when it was due and whether it counts.
    fn take_call(&mut self, v: usize) -> ((usize, usize), Instant, bool) {
        let vs = self.vs();
        let visitor = vs.visitors[v].as_mut().expect("a live visitor");
        let call = (visitor.burst, visitor.next);
        visitor.next += 1;
        visitor.in_flight += 1;
        let (due, measured) = (visitor.ready_at, visitor.measured);
        if call.1 == 0 {
            visitor.step_due = due;
            if let Some(i) = vs.plan.step_index(visitor.visit, call.0).filter(|_| measured) {
                vs.sessions.steps[i].started += 1;
            }
        }
        (call, due, measured)
    }

    /// A visit file's call: visitor `v`'s next request rendered into slot `slot`'s own bytes
    /// (its captured values, its cookies). Other visits send the table's bytes.
    fn render(&mut self, v: usize, slot: usize, now: Instant) -> Result<(), &'static str> {
        let vs = self.vs();
        let Some(render) = &vs.plan.render else { return Ok(()) };
        let visitor = vs.visitors[v].as_ref().expect("a live visitor");
        let call = &vs.plan.visits[visitor.visit].bursts[visitor.burst].calls[visitor.next];
        let carry = visitor.carry.as_ref().expect("a visit file's visitor carries");
        let out = vs.slots[slot].own.get_or_insert_with(Vec::new);
        // Reading the file checked every name against earlier captures, and a capture that
        // finds nothing ends its visit: a name without a value here is that capture's failure.
        carry.render(render, call, now, out).map_err(|_| "capture")
    }

    /// A slot for visitor `v` toward `origin`: one a visit that ended gave back, or a new one
    /// of the worker's.
    fn visitor_slot(&mut self, v: usize, origin: usize) -> usize {
        let idx = match self.vs().free_slots.pop() {
            Some(idx) => idx,
            None => {
                let idx = self.add_slot();
                self.vs().slots.push(Slot::default());
                idx
            }
        };
        let vs = self.vs();
        vs.slots[idx].visitor = v;
        vs.slots[idx].origin = origin;
        vs.visitors[v].as_mut().expect("a live visitor").slots.push(idx);
        self.conns[idx].state = State::Idle;
        idx
    }

    fn start_call(
        &mut self,
        idx: usize,
        call: (usize, usize),
        entry: u32,
        now: Instant,
        due: Instant,
        measured: bool,
    ) {
        self.vs().slots[idx].call = call;
        let conn = &mut self.conns[idx];
        conn.ex.begin(now, due, self.spec.timeout, measured, entry);
        conn.parser.reset(self.spec.table.is_head(entry));
        self.first_call_late(call, due, measured, now);
        self.send_or_connect(idx, now);
    }

    /// Lateness is the schedule's: how late a visit's first call left after the visit was
    /// due. A later call waiting for one of its visitor's connections is the visit's own pace
    /// (it counts in its latency), not the client falling behind.
    fn first_call_late(
        &mut self,
        call: (usize, usize),
        due: Instant,
        measured: bool,
        now: Instant,
    ) {
        if measured && call == (0, 0) && self.schedule.is_some() {
            self.record_late(now, due);
        }
    }

    /// A full answer arrived on slot `idx`: recorded, checked, and the visit goes on.
    pub(super) fn complete_call(&mut self, idx: usize, now: Instant, must_close: bool) {
        if self.past_end(now) {
            return;
        }
        let (v, call) = (self.vs().slots[idx].visitor, self.vs().slots[idx].call);
        // A run's own checks (--expect-status, --expect-contains) fail a call as they fail a
        // request anywhere; here the visit ends with it, counted under `validation`.
        let invalid = self.record_answer(idx, true, must_close, now);
        let status = self.conns[idx].parser.status();
        let verdict = if invalid {
            Err(ErrorClass::Validation.name())
        } else {
            let vs = self.visits.as_deref_mut().expect("a run of visits");
            let conn = &mut self.conns[idx];
            let headers = conn.parser.take_headers();
            let body = conn.ex.check.kept().unwrap_or_default();
            let answer = Response { status, headers: &headers, body };
            let path = vs.slots[idx].own.as_deref().map(carry::request_path);
            let visitor = vs.visitors[v].as_mut().expect("a live visitor");
            judge(&vs.plan, visitor, call, path, &answer, now)
        };
        let measured = self.conns[idx].ex.measured;
        self.count_expected(v, call, status, measured && verdict.is_ok());
        self.answered(v, call, verdict, now);
    }

    /// A measured answer that passed its checks (`passed`) and is not 2xx is counted when its
    /// call's status check names it: an answer the visit expects, such as a login's redirect.
    fn count_expected(&mut self, v: usize, call: (usize, usize), status: u16, passed: bool) {
        let vs = self.vs();
        let visitor = vs.visitors[v].as_ref().expect("a live visitor");
        let call = &vs.plan.visits[visitor.visit].bursts[call.0].calls[call.1];
        let named = |c: &Check| matches!(c, Check::Status(s) if s.contains(&status));
        if passed && !(200..300).contains(&status) && call.checks.iter().any(named) {
            vs.sessions.expected_not_2xx += 1;
        }
    }

    /// Visitor `v`'s call `call` was answered and judged: its visit ends on a broken
    /// verdict, or goes on (the burst's other calls, the next burst after a think time).
    fn answered(&mut self, v: usize, call: (usize, usize), verdict: Verdict, now: Instant) {
        let measure_start = self.spec.measure_start;
        let vs = self.vs();
        let plan = vs.plan.clone();
        let visitor = vs.visitors[v].as_mut().expect("a live visitor");
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
        let in_window = visitor.measured && visitor.step_due >= measure_start;
        if let Some(i) = plan.step_index(visitor.visit, visitor.burst).filter(|_| in_window) {
            let step = &mut vs.sessions.steps[i];
            step.completed += 1;
            step.latency.record(us(now.saturating_duration_since(visitor.step_due)));
        }
        if visitor.burst + 1 == plan.visits[visitor.visit].bursts.len() {
            return self.end_visit(v, now, None);
        }
        let think = burst.think.sample(&mut vs.rng);
        visitor.think += think;
        visitor.burst += 1;
        visitor.next = 0;
        visitor.opened_up = false;
        vs.thinking.push(Reverse((now + think, v)));
    }

    /// The call on slot `idx` failed: counted as a request, and its visit fails.
    pub(super) fn fail_call(
        &mut self,
        idx: usize,
        class: ErrorClass,
        errno: Option<i32>,
        now: Instant,
    ) {
        if self.past_end(now) {
            return;
        }
        let (v, call) = (self.vs().slots[idx].visitor, self.vs().slots[idx].call);
        self.record_failure(idx, class, errno, now);
        self.conns[idx].state = State::Idle;
        self.call_failed(v, call, class, now);
    }

    /// Visitor `v`'s call `call` failed in `class` (recorded by the caller): its visit ends.
    fn call_failed(&mut self, v: usize, call: (usize, usize), class: ErrorClass, now: Instant) {
        if let Some(visitor) = self.vs().visitors[v].as_mut() {
            visitor.in_flight -= 1;
        }
        self.end_visit(v, now, Some((call, class.name().to_string())));
    }

    /// Visit `v` ends at `now`, completed or failed (where and why); its connections close.
    fn end_visit(&mut self, v: usize, now: Instant, failure: Option<((usize, usize), String)>) {
        let visitor = self.vs().visitors[v].take().expect("a live visitor");
        let mut abandoned = 0;
        for &s in &visitor.slots {
            let conn = &mut self.conns[s];
            match conn.h2.as_mut() {
                Some(h2) => {
                    // Its other streams are abandoned with the visit, as other connections'
                    // calls are over HTTP/1.1.
                    abandoned += h2.in_flight() as u64;
                    h2.abandon();
                }
                None => abandoned += u64::from(conn.in_flight()),
            }
            if self.conns[s].state == State::Connecting {
                self.connect_ended();
            }
            self.conns[s].state = State::Idle;
            self.close(s);
            self.vs().free_slots.push(s);
        }
        let measure_start = self.spec.measure_start;
        let vs = self.vs();
        vs.free_visitors.push(v);
        vs.live -= 1;
        if !visitor.measured {
            return;
        }
        let life = us(now.saturating_duration_since(visitor.due));
        vs.sessions.think_us += us(visitor.think);
        vs.sessions.count_replies(visitor.replies);
        let Some(((burst, call), class)) = failure else {
            vs.sessions.completed += 1;
            vs.sessions.lifetime.record(life);
            if let Some(own) = vs.sessions.by_visit.get_mut(visitor.visit) {
                own.record(life);
            }
            vs.sessions.count_completed_at(second_of(measure_start, now));
            return;
        };
        let plan = &vs.plan.visits[visitor.visit];
        vs.sessions.failed += 1;
        vs.sessions.failtime.record(life);
        vs.sessions.abandoned += abandoned;
        let planned: usize = plan.bursts.iter().map(|b| b.entries.len()).sum();
        let issued: usize =
            plan.bursts[..burst].iter().map(|b| b.entries.len()).sum::<usize>() + visitor.next;
        vs.sessions.not_issued += (planned - issued) as u64;
        let step = vs.plan.step_index(visitor.visit, burst);
        if let Some(i) = step.filter(|_| visitor.step_due >= measure_start) {
            *vs.sessions.steps[i].failed.entry(class.clone()).or_insert(0) += 1;
        }
        let at = StepFailure { step: burst as u32 + 1, call: call as u32 + 1, class };
        *vs.sessions.failures.entry(at).or_insert(0) += 1;
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
