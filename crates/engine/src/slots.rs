//! What the worker's loop, which holds the connection slots whatever its load (requests or
//! visits), gives the connection machinery ([`Slots`]): a slot's connection with the loop's
//! buffer, tallies and counters, borrowed together ([`Parts`]). On it stand the
//! HTTP/1.1 path ([`Plain`](crate::plain::Plain)) and the HTTP/2 one
//! ([`Multiplexed`](crate::multiplexed::Multiplexed)); opening and closing a socket, and its
//! TLS handshake, are here, common to both.

use std::time::Instant;

use crate::conn::Conn;
use crate::exchange::second_of;
use crate::result::Tally;
use crate::schedule::Schedule;
use crate::spec::WorkerSpec;

/// What a loop keeps beside its slots and shares between them.
#[derive(Debug)]
pub(crate) struct Books {
    /// The loop's one read buffer: connections share it, so memory does not grow with their
    /// number; a head that spans reads is kept by the connection's parser.
    pub buf: Box<[u8]>,
    pub tally: Tally,
    /// The Server header of the first answer, and what the first TLS handshake settled on.
    pub server: Option<String>,
    pub negotiated: Option<crate::tls::Negotiated>,
    /// When the loop last recorded an outcome.
    pub last_event: Instant,
    /// Sockets open now, and the most open at once.
    pub open: usize,
    pub peak_open: usize,
}

impl Books {
    pub fn new(tally: Tally, buffer: usize, measure_start: Instant) -> Books {
        Books {
            buf: vec![0u8; buffer].into_boxed_slice(),
            tally,
            server: None,
            negotiated: None,
            last_event: measure_start,
            open: 0,
            peak_open: 0,
        }
    }

    /// A scheduled arrival due at `due` left the schedule: offered in its second when it falls
    /// in the measured window (from `measure_start`), whatever its load (a request, a session,
    /// a visit), so that every load's rows say what the shape offered.
    pub fn arrival_due(&mut self, measure_start: Instant, due: Instant) {
        if due >= measure_start {
            self.tally.series.at(second_of(measure_start, due)).due += 1;
        }
    }

    /// The arrivals of `schedule` due in the measured window (`measure_start` to `until`)
    /// that never went out: the schedule was not kept, and the report must say by how much.
    /// Each is offered in its second.
    pub fn never_sent(&mut self, schedule: &mut Schedule, measure_start: Instant, until: Instant) {
        let series = &mut self.tally.series;
        self.tally.not_sent += schedule.drain_before(measure_start, until, |due| {
            series.at(second_of(measure_start, due)).due += 1
        });
    }
}

/// Slot `idx`'s connection and the parts of its loop that the machinery works with,
/// borrowed together.
pub(crate) struct Parts<'a> {
    pub conn: &'a mut Conn,
    pub books: &'a mut Books,
    pub spec: &'a WorkerSpec,
    /// A visit file's call: the visitor's own request bytes, sent instead of the table's.
    pub own: Option<&'a [u8]>,
    /// Responses carry the kernel's arrival stamp, and the events being handled were taken
    /// after a sleep that ignored them (see `worker::HARVEST`): a read's time is its stamp's.
    pub stamped: bool,
    pub harvesting: bool,
}

/// A loop's connection slots.
pub(crate) trait Slots {
    fn parts(&mut self, idx: usize) -> Parts<'_>;

    /// A connect in progress ended, either way.
    fn connect_ended(&mut self) {}

    /// Whether slot `idx`'s TLS handshake is the run's (`tls` of the result): its target's.
    fn names_tls(&self, _idx: usize) -> bool {
        true
    }

    fn conn(&mut self, idx: usize) -> &mut Conn {
        self.parts(idx).conn
    }

    /// Measured requests of slot `idx` whose last byte was written (HTTP/1.1) or queued
    /// (HTTP/2) at `now`, and their bytes: in the totals and in `now`'s second.
    fn count_sent(&mut self, idx: usize, sent: u64, bytes: u64, now: Instant) {
        let p = self.parts(idx);
        p.books.tally.sent += sent;
        p.books.tally.bytes_sent += bytes;
        p.books.tally.series.at(second_of(p.spec.measure_start, now)).sent += sent;
    }

    /// Slot `idx` started connecting at `now` (`Conn::connect`): its deadline is the connect
    /// timeout, its socket is counted open and, `measured`, among the connections opened.
    fn opened(&mut self, idx: usize, measured: bool, now: Instant) {
        let p = self.parts(idx);
        let conn = p.conn;
        conn.ex.deadline = now + p.spec.connect_timeout.min(p.spec.timeout);
        conn.opened = now;
        conn.replies_on_socket = 0;
        p.books.open += 1;
        p.books.peak_open = (p.books.peak_open).max(p.books.open);
        if measured {
            p.books.tally.connections_opened += 1;
        }
    }

    /// The first time a TLS connection's handshake is seen over (`true` then): its end is the
    /// handshake's time, recorded with the connection's first answer, and what it settled on
    /// is the run's when it is the first of its target.
    fn note_handshake(&mut self, idx: usize, now: Instant) -> bool {
        let names = self.names_tls(idx);
        let p = self.parts(idx);
        if !p.conn.note_handshake(now) {
            return false;
        }
        if names && p.books.negotiated.is_none() {
            p.books.negotiated = p.conn.negotiated();
        }
        true
    }

    /// Closes slot `idx`'s socket, if it has one, recording how long it lived.
    fn close(&mut self, idx: usize) {
        let p = self.parts(idx);
        if let Some(h2) = p.conn.h2.as_mut() {
            // A GOAWAY binds only its connection: the next takes streams again.
            h2.disconnected();
        }
        if p.conn.retire(&mut p.books.tally) {
            p.books.open -= 1;
        }
    }
}
