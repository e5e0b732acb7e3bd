//! Visits over HTTP/2: a visitor holds one connection per origin, as a browser does (RFC 9113
//! section 9.1: "clients SHOULD NOT open more than one HTTP/2 connection to a given host and
//! port pair"), and a burst's calls go out as concurrent streams of it. The connection's
//! [`Session`](crate::h2::Session) frames them and decodes the answers, and the connection's
//! machinery is the worker's ([`Multiplexed`](crate::multiplexed::Multiplexed)); this module
//! only ties its streams to the visitor's calls.
//!
//! How many streams run at once is the server's SETTINGS_MAX_CONCURRENT_STREAMS: a session has
//! a slot for each call of the plan's largest burst, and the ones beyond the server's limit wait
//! in it until a stream ends. Every call is accounted for as over HTTP/1.1: a stream reset or a
//! connection lost (an EOF, a GOAWAY that refused a request twice, a protocol error) fails its
//! call with a class, and the visit ends with it; a request a GOAWAY refused once is sent
//! again on a new connection (RFC 9113 section 6.8 says it was not processed).

use std::io;
use std::time::Instant;

use super::{judge, Worker};
use crate::h2::StreamState;
use crate::multiplexed::{Failure, Multiplexed};
use crate::ErrorClass;

use loadlab_visit::Response;

/// A visitor's own request over HTTP/2: its header block, its body, and its path.
type Own = (Vec<u8>, Vec<u8>, String);

impl Worker {
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
        let vs = self.vs();
        let visitor = vs.visitors[v].as_ref().expect("a live visitor");
        let held = visitor.slots.iter().copied().find(|s| vs.slots[*s].origin == origin);
        let idx = match held {
            Some(idx) => idx,
            None => self.visitor_slot(v, origin),
        };
        let Some(s) = self.conns[idx].h2.as_ref().and_then(|h| h.free_slot()) else {
            return false;
        };
        let own = match self.render_h2(v, now) {
            Ok(own) => own,
            Err(class) => {
                self.render_failed(v, class, now);
                return false;
            }
        };
        let (call, due, measured) = self.take_call(v);
        self.first_call_late(call, due, measured, now);
        let head = self.spec.table.is_head(entry);
        let slot = &mut self.vs().slots[idx];
        if slot.calls.len() <= s {
            slot.calls.resize(s + 1, (0, 0));
            slot.paths.resize(s + 1, String::new());
        }
        slot.calls[s] = call;
        let vs = self.visits.as_deref_mut().expect("a run of visits");
        let session = self.conns[idx].h2.as_mut().expect("an HTTP/2 connection");
        session.slots[s].ex.begin(now, due, self.spec.timeout, measured, entry);
        match own {
            Some((block, body, path)) => {
                session.place_own(s, head, block, body);
                vs.slots[idx].paths[s] = path;
            }
            None => session.place(s, head),
        }
        self.pump(idx, now);
        true
    }

    /// A visit file's call over HTTP/2: visitor `v`'s next request as its own header block,
    /// body and path; `None` for other visits, whose requests are the table's.
    fn render_h2(&mut self, v: usize, now: Instant) -> Result<Option<Own>, &'static str> {
        let vs = self.vs();
        let Some(render) = &vs.plan.render else { return Ok(None) };
        let visitor = vs.visitors[v].as_ref().expect("a live visitor");
        let call = &vs.plan.visits[visitor.visit].bursts[visitor.burst].calls[visitor.next];
        let carry = visitor.carry.as_ref().expect("a visit file's visitor carries");
        let (mut block, mut body) = (Vec::new(), Vec::new());
        // As over HTTP/1.1 (`render`): a name without a value is its capture's failure.
        let path =
            carry.render_h2(render, call, now, &mut block, &mut body).map_err(|_| "capture")?;
        Ok(Some((block, body, path)))
    }

    /// Opens slot `idx`'s connection, counted when a stream waiting for it is.
    pub(in crate::worker) fn open_visit_h2(&mut self, idx: usize, now: Instant) -> io::Result<()> {
        let conn = &mut self.conns[idx];
        let session = conn.h2.as_ref().expect("an HTTP/2 connection");
        let mut waiting = session.slots.iter().filter(|s| s.state == StreamState::Pending);
        conn.ex.measured = waiting.any(|s| s.ex.measured);
        self.open_connection(idx, now)
    }

    /// Streams the server's limit held back may go now that others ended.
    pub(in crate::worker) fn visit_streams_settled(&mut self, idx: usize, now: Instant) {
        if self.conns[idx].stream.is_some() {
            self.pump(idx, now);
        }
    }

    /// The requests a GOAWAY refused go on a new connection, and so do the visitor's calls
    /// that waited for a stream while the GOAWAY allowed none.
    pub(in crate::worker) fn reopen_visit(&mut self, idx: usize, now: Instant) {
        self.pump(idx, now);
        let vs = self.vs();
        let v = vs.slots[idx].visitor;
        // Within a burst (its first call issued), not while the visitor thinks.
        let waiting = |visitor: &super::Visitor| visitor.slots.contains(&idx) && visitor.next > 0;
        if vs.visitors[v].as_ref().is_some_and(waiting) {
            self.issue(v, now);
        }
    }

    /// Stream slot `s` of connection `idx` was answered whole: recorded, judged, and its
    /// visit goes on.
    pub(in crate::worker) fn visit_stream_completed(&mut self, idx: usize, s: usize, now: Instant) {
        let vs = self.vs();
        let (v, call) = (vs.slots[idx].visitor, vs.slots[idx].calls[s]);
        if self.past_end(now) || self.vs().visitors[v].is_none() {
            return;
        }
        let invalid = self.record_stream(idx, s, true, now);
        let vs = self.visits.as_deref_mut().expect("a run of visits");
        let stream = &mut self.conns[idx].h2.as_mut().expect("an HTTP/2 connection").slots[s];
        let (status, measured) = (stream.status, stream.ex.measured);
        let verdict = if invalid {
            Err(ErrorClass::Validation.name())
        } else {
            let headers = std::mem::take(&mut stream.headers);
            let body = stream.ex.check.kept().unwrap_or_default();
            let answer = Response { status, headers: &headers, body };
            let path = vs.plan.render.as_ref().map(|_| vs.slots[idx].paths[s].as_str());
            let visitor = vs.visitors[v].as_mut().expect("a live visitor");
            judge(&vs.plan, visitor, call, path, &answer, now)
        };
        self.count_expected(v, call, status, measured && verdict.is_ok());
        self.answered(v, call, verdict, now);
    }

    /// Stream slot `s` of connection `idx` failed: recorded as a request, and its visit
    /// ends.
    pub(in crate::worker) fn visit_stream_failed(
        &mut self,
        idx: usize,
        s: usize,
        failure: Failure,
        now: Instant,
    ) {
        let vs = self.vs();
        let (v, call) = (vs.slots[idx].visitor, vs.slots[idx].calls[s]);
        if self.past_end(now) || self.vs().visitors[v].is_none() {
            return;
        }
        self.record_stream_failure(idx, s, failure, now);
        self.call_failed(v, call, failure.class, now);
    }
}
