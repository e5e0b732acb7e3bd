//! What every loop that holds connection slots (the request loop's `worker`, the visits'
//! `visits::driver`) gives the connection machinery ([`Slots`]): a slot's connection with the
//! loop's buffer, tallies and counters, borrowed together ([`Parts`]). On it stand the
//! HTTP/1.1 path ([`Plain`](crate::plain::Plain)) and the HTTP/2 one
//! ([`Multiplexed`](crate::multiplexed::Multiplexed)); opening and closing a socket, and its
//! TLS handshake, are here, common to both.

use std::time::{Duration, Instant};

use crate::check::Validation;
use crate::conn::Conn;
use crate::exchange::second_of;
use crate::result::Tally;
use crate::table::Table;

/// Slot `idx`'s connection and the parts of its loop that the machinery works with,
/// borrowed together.
pub(crate) struct Parts<'a> {
    pub conn: &'a mut Conn,
    /// The loop's one read buffer, shared by its connections.
    pub buf: &'a mut [u8],
    pub tally: &'a mut Tally,
    pub table: &'a Table,
    /// A visit file's call: the visitor's own request bytes, sent instead of the table's.
    pub own: Option<&'a [u8]>,
    pub validation: &'a Validation,
    pub measure_start: Instant,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub keepalive: bool,
    /// Responses carry the kernel's arrival stamp, and the events being handled were taken
    /// after a sleep that ignored them (see `worker::HARVEST`): a read's time is its stamp's.
    pub stamped: bool,
    pub harvesting: bool,
    /// The Server header of the first answer, and what the first TLS handshake settled on.
    pub server: &'a mut Option<String>,
    pub negotiated: &'a mut Option<crate::tls::Negotiated>,
    /// When the loop last recorded an outcome.
    pub last_event: &'a mut Instant,
    /// Sockets open now, and the most open at once.
    pub open: &'a mut usize,
    pub peak_open: &'a mut usize,
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
        p.tally.sent += sent;
        p.tally.bytes_sent += bytes;
        p.tally.series.at(second_of(p.measure_start, now)).sent += sent;
    }

    /// Slot `idx` started connecting at `now` (`Conn::connect`): its deadline is the connect
    /// timeout, its socket is counted open and, `measured`, among the connections opened.
    fn opened(&mut self, idx: usize, measured: bool, now: Instant) {
        let p = self.parts(idx);
        let conn = p.conn;
        conn.ex.deadline = now + p.connect_timeout.min(p.timeout);
        conn.opened = now;
        conn.replies_on_socket = 0;
        *p.open += 1;
        *p.peak_open = (*p.peak_open).max(*p.open);
        if measured {
            p.tally.connections_opened += 1;
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
        if names && p.negotiated.is_none() {
            *p.negotiated = p.conn.negotiated();
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
        if p.conn.retire(p.tally) {
            *p.open -= 1;
        }
    }
}
