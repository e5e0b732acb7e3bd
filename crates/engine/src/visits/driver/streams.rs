//! Visits over HTTP/2: a visitor holds one connection per origin, as a browser does (RFC 9113
//! section 9.1: "clients SHOULD NOT open more than one HTTP/2 connection to a given host and
//! port pair"), and a burst's calls go out as concurrent streams of it. The connection's
//! [`Session`](crate::h2::Session) frames them and decodes the answers, and the connection's
//! machinery is the request loop's ([`Multiplexed`]); this module only ties its streams to the
//! visitor's calls.
//!
//! How many streams run at once is the server's SETTINGS_MAX_CONCURRENT_STREAMS: a session has
//! a slot for each call of the plan's largest burst, and the ones beyond the server's limit wait
//! in it until a stream ends. Every call is accounted for as over HTTP/1.1: a stream reset or a
//! connection lost (an EOF, a GOAWAY that refused a request twice, a protocol error) fails its
//! call with a class, and the visit ends with it; a request a GOAWAY refused once is sent
//! again on a new connection (RFC 9113 section 6.8 says it was not processed).

use std::io;
use std::time::Instant;

use super::{judge, Slot, VisitWorker};
use crate::exchange::Exchange;
use crate::h2::{Session, StreamState};
use crate::multiplexed::{Failure, Multiplexed};
use crate::ErrorClass;

use loadlab_visit::Response;

/// A visitor's own request over HTTP/2: its header block, its body, and its path.
type Own = (Vec<u8>, Vec<u8>, String);

impl VisitWorker {
    /// A session for a visitor's connection: a stream slot for each call of the largest burst,
    /// each with an exchange made by `exchange` (kept bodies for the checks that read them).
    pub(super) fn session(&self, exchange: impl FnMut() -> Exchange) -> Box<Session> {
        let bursts = self.plan.visits.iter().flat_map(|v| &v.bursts);
        let widest = bursts.map(|b| b.entries.len()).max().unwrap_or(1).max(1);
        let mut session = Session::new(widest, &self.spec.limits, exchange);
        if self.plan.render.is_some() {
            session.capture_headers();
        }
        Box::new(session)
    }

    /// Issues visitor `v`'s next call (request `entry`, toward `origin`) as a stream of its
    /// connection there, opened if it holds none. False when that connection's streams are all
    /// taken: the call waits for one to end.
    pub(super) fn issue_stream(
        &mut self,
        v: usize,
        origin: usize,
        entry: u32,
        now: Instant,
    ) -> bool {
        let visitor = self.visitors[v].as_ref().expect("a live visitor");
        let held = visitor.slots.iter().copied().find(|s| self.slots[*s].origin == origin);
        let idx = match held {
            Some(idx) => idx,
            None => self.new_slot(v, origin),
        };
        let Some(s) = self.slots[idx].conn.h2.as_ref().and_then(|h| h.free_slot()) else {
            return false;
        };
        let own = match self.render_h2(v, now) {
            Ok(own) => own,
            Err(class) => {
                let visitor = self.visitors[v].as_ref().expect("a live visitor");
                let call = (visitor.burst, visitor.next);
                self.end_visit(v, now, Some((call, class.to_string())));
                return false;
            }
        };
        let (call, due, measured) = self.take_call(v);
        if measured && call == (0, 0) && self.schedule.is_some() {
            self.books
                .tally
                .timings
                .late
                .record(crate::exchange::us(now.saturating_duration_since(due)));
        }
        let head = self.spec.table.is_head(entry);
        let slot: &mut Slot = &mut self.slots[idx];
        if slot.calls.len() <= s {
            slot.calls.resize(s + 1, (0, 0));
            slot.paths.resize(s + 1, String::new());
        }
        slot.calls[s] = call;
        let session = slot.conn.h2.as_mut().expect("an HTTP/2 connection");
        session.slots[s].ex.begin(now, due, self.spec.timeout, measured, entry);
        match own {
            Some((block, body, path)) => {
                session.place_own(s, head, block, body);
                slot.paths[s] = path;
            }
            None => session.place(s, head),
        }
        self.pump(idx, now);
        true
    }

    /// A visit file's call over HTTP/2: visitor `v`'s next request as its own header block,
    /// body and path; `None` for other visits, whose requests are the table's.
    fn render_h2(&mut self, v: usize, now: Instant) -> Result<Option<Own>, &'static str> {
        let Some(render) = &self.plan.render else { return Ok(None) };
        let visitor = self.visitors[v].as_ref().expect("a live visitor");
        let call = &self.plan.visits[visitor.visit].bursts[visitor.burst].calls[visitor.next];
        let carry = visitor.carry.as_ref().expect("a visit file's visitor carries");
        let (mut block, mut body) = (Vec::new(), Vec::new());
        // As over HTTP/1.1 (`render`): a name without a value is its capture's failure.
        let path =
            carry.render_h2(render, call, now, &mut block, &mut body).map_err(|_| "capture")?;
        Ok(Some((block, body, path)))
    }
}

impl Multiplexed for VisitWorker {
    /// Counted when a stream waiting for it is.
    fn open_h2(&mut self, idx: usize, now: Instant) -> io::Result<()> {
        let conn = &mut self.slots[idx].conn;
        let session = conn.h2.as_ref().expect("an HTTP/2 connection");
        let mut waiting = session.slots.iter().filter(|s| s.state == StreamState::Pending);
        let measured = waiting.any(|s| s.ex.measured);
        conn.ex.measured = measured;
        self.connect(idx, now, measured)
    }

    /// Written at once.
    fn queued(&mut self, idx: usize, now: Instant) {
        self.flush(idx, now);
    }

    /// Streams the server's limit held back may go now that others ended.
    fn settled(&mut self, idx: usize, now: Instant) {
        if self.slots[idx].conn.stream.is_some() {
            self.pump(idx, now);
        }
    }

    /// The requests a GOAWAY refused go on a new connection, and so do the visitor's calls
    /// that waited for a stream while the GOAWAY allowed none.
    fn reopen(&mut self, idx: usize, now: Instant) {
        self.pump(idx, now);
        let v = self.slots[idx].visitor;
        // Within a burst (its first call issued), not while the visitor thinks.
        let waiting = |visitor: &super::Visitor| visitor.slots.contains(&idx) && visitor.next > 0;
        if self.visitors[v].as_ref().is_some_and(waiting) {
            self.issue(v, now);
        }
    }

    /// Stream slot `s` of connection `idx` was answered whole: recorded, judged, and its
    /// visit goes on.
    fn stream_completed(&mut self, idx: usize, s: usize, now: Instant) {
        let (v, call) = (self.slots[idx].visitor, self.slots[idx].calls[s]);
        if self.past_end(now) || self.visitors[v].is_none() {
            return;
        }
        let invalid = self.record_stream(idx, s, true, now);
        let slot = &mut self.slots[idx];
        let stream = &mut slot.conn.h2.as_mut().expect("an HTTP/2 connection").slots[s];
        let status = stream.status;
        let verdict = if invalid {
            Err(ErrorClass::Validation.name())
        } else {
            let headers = std::mem::take(&mut stream.headers);
            let body = stream.ex.check.kept().unwrap_or_default();
            let answer = Response { status, headers: &headers, body };
            let path = self.plan.render.as_ref().map(|_| slot.paths[s].as_str());
            let visitor = self.visitors[v].as_mut().expect("a live visitor");
            judge(&self.plan, visitor, call, path, &answer, now)
        };
        let measured =
            self.slots[idx].conn.h2.as_ref().expect("an HTTP/2 connection").slots[s].ex.measured;
        self.count_expected(v, call, status, measured && verdict.is_ok());
        self.answered(v, call, verdict, now);
    }

    /// Stream slot `s` of connection `idx` failed: recorded as a request, and its visit
    /// ends.
    fn stream_failed(&mut self, idx: usize, s: usize, failure: Failure, now: Instant) {
        let (v, call) = (self.slots[idx].visitor, self.slots[idx].calls[s]);
        if self.past_end(now) || self.visitors[v].is_none() {
            return;
        }
        self.record_stream_failure(idx, s, failure, now);
        self.call_failed(v, call, failure.class, now);
    }
}
