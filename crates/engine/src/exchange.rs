//! One request's exchange, whatever carries it (an HTTP/1.1 connection or an HTTP/2 stream):
//! its timeline, its validation, and the one place where its outcome enters the tallies.

use std::time::{Duration, Instant};

use crate::check::{BodyCheck, KeptAnswer, Validation};
use crate::result::Tally;
use crate::ErrorClass;

#[derive(Debug)]
pub(crate) struct Exchange {
    /// When the request was due: its start in the closed loop, its scheduled time in the open
    /// loop (latency measured from here is corrected for coordinated omission).
    pub due: Instant,
    /// The request's start (its connect included, if it needed one).
    pub started: Instant,
    /// When the connection was established; equals `started` on a reused connection.
    pub connected: Instant,
    /// When the last request byte was written.
    pub written: Instant,
    pub first_byte: Option<Instant>,
    /// When the request (or its connect) times out.
    pub deadline: Instant,
    /// Whether the request counts (it started after warm-up and was budgeted).
    pub measured: bool,
    /// Bytes received for the response.
    pub resp_bytes: u64,
    pub check: BodyCheck,
    /// Which request of the run's table it carries (0 when there is one).
    pub entry: u32,
}

/// What recording needs to know of the run.
pub(crate) struct Recording<'a> {
    pub measure_start: Instant,
    pub validation: &'a Validation,
    /// The run follows a schedule: latency from the due time is recorded too.
    pub scheduled: bool,
}

impl Exchange {
    pub fn new(check: BodyCheck, now: Instant) -> Exchange {
        Exchange {
            due: now,
            started: now,
            connected: now,
            written: now,
            first_byte: None,
            deadline: now,
            measured: false,
            resp_bytes: 0,
            check,
            entry: 0,
        }
    }

    /// Starts a new request, the table's `entry`, at `now`, due at `due`.
    pub fn begin(
        &mut self,
        now: Instant,
        due: Instant,
        timeout: Duration,
        measured: bool,
        entry: u32,
    ) {
        self.measured = measured;
        self.entry = entry;
        // A send that goes early (grouped with an earlier one, `Sends::send_by`) counts its
        // latency from its send: from its due time it would read shorter than the server took.
        self.due = due.min(now);
        self.started = now;
        self.connected = now;
        self.written = now;
        self.first_byte = None;
        self.resp_bytes = 0;
        self.deadline = now + timeout;
        self.check.reset();
    }

    /// A complete response with `status` and a body of `body_len` bytes arrived at `now`:
    /// counted as completed, or as a validation failure. `tls` is the connection's handshake
    /// (its time and whether it resumed), given with the first response it carried.
    pub fn record_completion(
        &mut self,
        t: &mut Tally,
        r: &Recording<'_>,
        status: u16,
        body_len: u64,
        tls: Option<(Duration, bool)>,
        now: Instant,
    ) {
        t.status[usize::from(status).min(999)] += 1;
        t.bytes_total += self.resp_bytes;
        t.bytes_body += body_len;
        let second = second_of(r.measure_start, now);
        t.series.at(second).bytes += self.resp_bytes;
        let mut entry = t.entries.get_mut(self.entry as usize);
        if let (Some(e), 1..=5) = (entry.as_deref_mut(), status / 100) {
            e.status_classes[usize::from(status / 100) - 1] += 1;
        }
        let mismatch = self.check.finish(r.validation, status);
        if let (None, Some(body)) = (&t.answer, self.check.kept()) {
            t.answer = Some(Box::new(KeptAnswer { status, body: body.to_vec() }));
        }
        if mismatch.is_some() {
            if let Some(e) = entry {
                e.failed += 1;
            }
            t.count_failure(ErrorClass::Validation, None, second);
            return;
        }
        t.completed += 1;
        t.series.at(second).completed += 1;
        let total = now.saturating_duration_since(self.started);
        let connect = self.connected.saturating_duration_since(self.started);
        let first = self.first_byte.unwrap_or(now);
        t.timings.total.record(us(total));
        t.timings.connect.record(us(connect));
        t.timings.waiting.record(us(first.saturating_duration_since(self.written)));
        t.timings.processing.record(us(total.saturating_sub(connect)));
        if let Some((handshake, resumed)) = tls {
            t.timings.tls.record(us(handshake));
            t.tls_resumed += u64::from(resumed);
        }
        // The latency every output shows: from the due time under a schedule.
        let shown = if r.scheduled {
            let corrected = us(now.saturating_duration_since(self.due));
            t.timings.corrected.record(corrected);
            corrected
        } else {
            us(total)
        };
        t.lengths.record(body_len);
        if let Some(e) = t.entries.get_mut(self.entry as usize) {
            e.completed += 1;
            e.latency.record(shown);
        }
        if let Some(i) = t.intervals.as_deref_mut() {
            let second = second as u32;
            i.latency.record(second, shown);
            if let Some(service) = i.service.as_mut() {
                service.record(second, us(total));
            }
        }
    }

    /// The request failed at `now` in `class`.
    pub fn record_failure(
        &self,
        t: &mut Tally,
        measure_start: Instant,
        class: ErrorClass,
        errno: Option<i32>,
        now: Instant,
    ) {
        t.bytes_total += self.resp_bytes;
        t.count_failure(class, errno, second_of(measure_start, now));
        if let Some(e) = t.entries.get_mut(self.entry as usize) {
            e.failed += 1;
        }
    }
}

/// The per-second bucket an event at `now` belongs to.
#[inline]
pub(crate) fn second_of(measure_start: Instant, now: Instant) -> usize {
    now.saturating_duration_since(measure_start).as_secs() as usize
}

#[inline]
pub(crate) fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verify's run keeps its first answer, failed or not, and only the first: a later one
    /// (a URL list's next request) and a later worker's leave it as it is.
    #[test]
    fn the_first_answer_is_kept_whole_and_only_the_first() {
        let v = Validation { status: vec![(200, 200)], keep_answer: true, ..Default::default() };
        let now = Instant::now();
        let r = Recording { measure_start: now, validation: &v, scheduled: false };
        let mut t = Tally::default();
        let mut ex = Exchange::new(BodyCheck::new(&v), now);
        for (status, body) in [(404, &b"gone"[..]), (200, b"hello")] {
            ex.begin(now, now, Duration::from_secs(1), true, 0);
            ex.check.update(body);
            ex.record_completion(&mut t, &r, status, body.len() as u64, None, now);
        }
        assert_eq!((t.failed, t.completed), (1, 1));
        let first = KeptAnswer { status: 404, body: b"gone".to_vec() };
        assert_eq!(t.answer.as_deref(), Some(&first));
        let mut merged = Tally::default();
        merged.merge(&t);
        let later = Tally {
            answer: Some(Box::new(KeptAnswer { status: 200, body: Vec::new() })),
            ..Tally::default()
        };
        merged.merge(&later);
        assert_eq!(merged.answer.as_deref(), Some(&first));
        // A load keeps nothing.
        let load = Validation::default();
        let r = Recording { measure_start: now, validation: &load, scheduled: false };
        let (mut t, mut ex) = (Tally::default(), Exchange::new(BodyCheck::new(&load), now));
        ex.check.update(b"hello");
        ex.record_completion(&mut t, &r, 200, 5, None, now);
        assert_eq!((t.completed, t.answer.is_none()), (1, true));
    }

    /// An arrival sent before its due time (grouped with an earlier one) counts its latency
    /// from its send: from its due time it would read shorter than the server took. One sent
    /// late counts from its due time, its wait in the client included.
    #[test]
    fn an_early_send_counts_its_latency_from_the_send_a_late_one_from_its_due_time() {
        let v = Validation::default();
        let sent = Instant::now();
        let r = Recording { measure_start: sent, validation: &v, scheduled: true };
        let ms = Duration::from_millis;
        for (due, latency) in [(sent + ms(20), 50_000), (sent - ms(20), 70_000)] {
            let (mut t, mut ex) = (Tally::default(), Exchange::new(BodyCheck::new(&v), sent));
            ex.begin(sent, due, Duration::from_secs(1), true, 0);
            ex.record_completion(&mut t, &r, 200, 0, None, sent + ms(50));
            assert_eq!(t.timings.corrected.max(), latency);
            assert_eq!(t.timings.total.max(), 50_000, "the service time, from the send");
        }
    }
}
