//! An HTTP/3 connection on an event loop: its QUIC connection's datagrams read as they come,
//! its timers fired when due, its handshake timed, its requests sent as streams and what they
//! queued transmitted once a turn, and its streams' deadlines. A stream's outcome goes through
//! [`Multiplexed`]'s accounting, as an HTTP/2 stream's does: the slot's connection is QUIC
//! instead of TCP and TLS, and everything above the connection is shared.
//!
//! QUIC runs its own timers (loss detection and probes, RFC 9002 section 6; acknowledgement
//! delay, RFC 9000 section 13.2; the idle timeout, section 10.1) in the client: the loop asks
//! each connection when it is next due ([`OverQuic::quic_wake`]) so that its wait ends then,
//! and fires those due each turn ([`OverQuic::quic_timers`]).

use std::time::Instant;

use mio::event::Event;

use crate::conn::State;
use crate::h2::{Reason, StreamState};
use crate::multiplexed::{Failure, Multiplexed};
use crate::ErrorClass;

/// The QUIC path of a loop whose slots are multiplexed: compiled into the worker for every
/// such loop, so that no call on the hot path goes through a vtable.
pub(crate) trait OverQuic: Multiplexed {
    /// Gets slot `idx`'s waiting requests moving over HTTP/3: sends them on new streams if
    /// its connection is up, or opens one (not while it rests after the client ran out of
    /// descriptors).
    fn pump_h3(&mut self, idx: usize, now: Instant) {
        let p = self.parts(idx);
        let conn = p.conn;
        let Some(h3) = conn.h3.as_deref_mut() else { return };
        let Some(quic) = h3.quic.as_mut() else {
            if h3.streams.pending() && !matches!(conn.state, State::Backoff(_)) {
                if let Err(e) = self.open_h2(idx, now) {
                    self.fail_h2_io(idx, &e, now);
                }
                // The Initial goes out with the turn's transmits.
                self.queued(idx, now);
            }
            return;
        };
        if conn.state != State::Reading {
            return;
        }
        let table = &p.spec.table;
        let (sent, bytes) = h3.streams.send(&mut quic.conn, |entry| table.h3(entry), now);
        self.count_sent(idx, sent, bytes, now);
        self.queued(idx, now);
        // A request the server's stream credit refused ended at once.
        self.settle(idx, None, now);
    }

    /// Sends what slot `idx`'s QUIC connection has queued, as far as the socket takes it; the
    /// rest waits for the next writable event.
    fn transmit(&mut self, idx: usize, now: Instant) {
        let Some(quic) = self.conn(idx).h3.as_deref_mut().and_then(|h| h.quic.as_mut()) else {
            return;
        };
        if let Err(e) = quic.transmit(now) {
            self.fail_h2_io(idx, &e, now);
        }
    }

    /// An event on slot `idx`'s UDP socket: the datagrams that came are handed to its
    /// connection, and what they brought (the handshake's end, answers, the connection's
    /// loss) is settled; what is held for a full socket buffer goes on a writable one.
    fn on_h3_event(&mut self, idx: usize, event: &Event, now: Instant) {
        let p = self.parts(idx);
        let Some(quic) = p.conn.h3.as_deref_mut().and_then(|h| h.quic.as_mut()) else {
            // An event left over from a connection already closed.
            return;
        };
        if event.is_readable() || event.is_error() {
            // The loop's read buffer holds any datagram (64 KiB against QUIC's 65,527 bytes).
            if let Err(e) = quic.receive(&mut p.books.buf, now) {
                return self.fail_h2_io(idx, &e, now);
            }
        }
        self.after_quic(idx, now);
        self.queued(idx, now);
    }

    /// What slot `idx`'s QUIC connection said since it was last asked: its handshake's end
    /// (timed as TLS's: from the connection's start to its 1-RTT keys), answers and resets
    /// read into their streams, or its loss, which fails what it carried.
    fn after_quic(&mut self, idx: usize, now: Instant) {
        let p = self.parts(idx);
        let conn = p.conn;
        let Some(h3) = conn.h3.as_deref_mut() else { return };
        let Some(quic) = h3.quic.as_mut() else { return };
        let lost = h3.streams.on_events(&mut quic.conn, now);
        if lost {
            if conn.state == State::Connecting {
                self.connect_ended();
            }
            // Closing a connection already lost sends nothing more.
            self.close(idx);
            self.conn(idx).state = State::Idle;
            self.settle(idx, None, now);
            return;
        }
        if conn.state == State::Connecting && !quic.conn.is_handshaking() {
            conn.state = State::Reading;
            conn.tls_done = Some(now);
            self.connect_ended();
            self.pump_h3(idx, now);
            return;
        }
        self.settle(idx, None, now);
    }

    /// Fires the QUIC timers due by `now` on slots `0..slots`, and settles what they ended
    /// (a connection idle too long, a handshake given up).
    fn quic_timers(&mut self, slots: usize, now: Instant) {
        for idx in 0..slots {
            let Some(quic) = self.conn(idx).h3.as_deref_mut().and_then(|h| h.quic.as_mut()) else {
                continue;
            };
            if quic.timeout().is_some_and(|t| t <= now) {
                quic.on_timeout(now);
                self.after_quic(idx, now);
                self.queued(idx, now);
            }
        }
    }

    /// The earliest QUIC timer of slots `0..slots`: the loop's wait ends by then.
    fn quic_wake(&mut self, slots: usize) -> Option<Instant> {
        (0..slots)
            .filter_map(|idx| self.conn(idx).h3.as_deref_mut()?.quic.as_mut()?.timeout())
            .min()
    }

    /// Fails what slot `idx` holds past its deadline: its handshake, or its streams (an open
    /// one is reset with H3_REQUEST_CANCELLED).
    fn sweep_h3(&mut self, idx: usize, now: Instant) {
        let conn = self.conn(idx);
        if conn.state == State::Connecting && now >= conn.ex.deadline {
            let reason =
                Reason { what: "QUIC: no handshake within the connect timeout", code: None };
            let failure =
                Failure { reason: Some(reason), ..Failure::of(ErrorClass::ConnectTimeout) };
            return self.fail_h2(idx, failure, true, now);
        }
        let Some(h3) = conn.h3.as_deref() else { return };
        for s in 0..h3.streams.slots.len() {
            let h3 = self.conn(idx).h3.as_deref_mut().expect("an HTTP/3 connection");
            let slot = &h3.streams.slots[s];
            if matches!(slot.state, StreamState::Free | StreamState::Ended)
                || now < slot.ex.deadline
            {
                continue;
            }
            h3.streams.cancel(h3.quic.as_mut().map(|q| &mut q.conn), s);
            self.stream_failed(idx, s, Failure::of(ErrorClass::ClientTimeout), now);
            self.queued(idx, now);
        }
    }
}

impl<T: Multiplexed + ?Sized> OverQuic for T {}

#[cfg(test)]
mod tests;
