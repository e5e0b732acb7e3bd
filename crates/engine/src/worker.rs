//! One worker thread: an event loop (epoll through mio) that owns its connections, its read
//! buffer and its recorders. Nothing here is shared with other workers except the request
//! budget, taken in chunks, and relaxed progress counters, published once per loop turn.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Poll, Token};

use crate::check::{BodyCheck, Validation};
use crate::conn::{Conn, State};
use crate::http::{Limits, Parser, Progress};
use crate::pacing::Budget;
use crate::result::{Tally, WorkerReport};
use crate::sys::CpuTime;
use crate::{Control, ErrorClass};

/// Size of the worker's single read buffer. Connections share it, so memory does not grow
/// with the connection count; a head that spans reads is kept by the connection's parser.
const READ_BUFFER: usize = 64 * 1024;

/// How long a slot rests after the client ran out of descriptors or ports.
const BACKOFF: Duration = Duration::from_millis(10);

/// What a worker needs to know, fixed for the run.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSpec {
    pub addr: SocketAddr,
    pub request: Arc<[u8]>,
    pub head_request: bool,
    pub keepalive: bool,
    pub connections: usize,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub validation: Validation,
    pub limits: Limits,
    pub pin: Option<usize>,
    /// When measuring starts (after warm-up); common to all workers.
    pub measure_start: Instant,
    /// When a timed run ends; `None` for a counted run.
    pub end: Option<Instant>,
}

pub(crate) struct Worker {
    spec: WorkerSpec,
    poll: Poll,
    conns: Vec<Conn>,
    /// Bytes received for each slot's current response, by slot.
    resp_bytes: Vec<u64>,
    /// Slots whose next request must start on the next loop turn (after a failure), so that a
    /// failure never recurses into the next attempt.
    restart: Vec<usize>,
    buf: Box<[u8]>,
    budget: Budget,
    budget_spent: bool,
    tally: Tally,
    server: Option<String>,
    open: usize,
    peak_open: usize,
    measuring: bool,
    last_event: Instant,
    control: Arc<Control>,
}

impl Worker {
    pub fn new(spec: WorkerSpec, budget: Budget, control: Arc<Control>) -> io::Result<Worker> {
        let now = Instant::now();
        let conns = (0..spec.connections)
            .map(|_| {
                let mut parser = Parser::new(spec.limits);
                parser.capture_server();
                Conn::new(parser, BodyCheck::new(&spec.validation), now)
            })
            .collect();
        let mut tally = Tally::default();
        if let Some(end) = spec.end {
            tally.series = loadlab_stats::Series::with_capacity(
                end.saturating_duration_since(spec.measure_start).as_secs() as usize + 2,
            );
        }
        Ok(Worker {
            poll: Poll::new()?,
            resp_bytes: vec![0; spec.connections],
            restart: Vec::with_capacity(spec.connections),
            conns,
            buf: vec![0u8; READ_BUFFER].into_boxed_slice(),
            budget,
            budget_spent: false,
            tally,
            server: None,
            open: 0,
            peak_open: 0,
            measuring: false,
            last_event: spec.measure_start,
            spec,
            control,
        })
    }

    /// Runs the event loop until the run ends, then reports.
    pub fn run(mut self) -> io::Result<WorkerReport> {
        if let Some(cpu) = self.spec.pin {
            // Pinning is best effort: a CPU that vanished since the CLI checked is not fatal.
            let _ = crate::sys::pin_current_thread(cpu);
        }
        let tick = (self.spec.timeout.min(self.spec.connect_timeout) / 10)
            .clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut events = Events::with_capacity(1024);
        let mut draining = Vec::with_capacity(self.conns.len());
        let mut cpu_start = CpuTime::thread();
        let mut published = (0u64, 0u64);
        let mut now = Instant::now();
        self.measuring = now >= self.spec.measure_start;
        for idx in 0..self.conns.len() {
            self.start_request(idx, now);
        }
        let mut next_sweep = now + tick;
        let end_at = loop {
            now = Instant::now();
            if !self.measuring && now >= self.spec.measure_start {
                self.measuring = true;
                cpu_start = CpuTime::thread();
            }
            if self.control.stop.load(Ordering::Relaxed) {
                break now;
            }
            if let Some(end) = self.spec.end {
                if now >= end {
                    break end;
                }
            }
            if self.budget_spent
                && !self.conns.iter().any(Conn::in_flight)
                && self.restart.is_empty()
            {
                break self.last_event;
            }
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + tick;
            }
            // Failed slots start again here, outside the code that saw them fail.
            std::mem::swap(&mut self.restart, &mut draining);
            for idx in draining.drain(..) {
                self.start_request(idx, now);
            }

            let mut wake = next_sweep;
            if let Some(end) = self.spec.end {
                wake = wake.min(end);
            }
            if !self.measuring {
                wake = wake.min(self.spec.measure_start);
            }
            let timeout = if self.restart.is_empty() {
                wake.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            for event in events.iter() {
                self.on_event(event);
            }
            let done = (self.tally.completed, self.tally.failed);
            if done != published {
                self.control.completed.fetch_add(done.0 - published.0, Ordering::Relaxed);
                self.control.failed.fetch_add(done.1 - published.1, Ordering::Relaxed);
                published = done;
            }
        };
        let cpu = CpuTime::thread().since(&cpu_start);
        self.tally.unfinished =
            self.conns.iter().filter(|c| c.measured && c.in_flight()).count() as u64;
        let measure_start = self.spec.measure_start;
        Ok(WorkerReport {
            cpu,
            wall: end_at.saturating_duration_since(measure_start),
            last_event: self.last_event.saturating_duration_since(measure_start),
            peak_open: self.peak_open,
            server: self.server.take(),
            tally: self.tally,
        })
    }

    /// Starts the next request on slot `idx`, on its open connection or a new one.
    fn start_request(&mut self, idx: usize, now: Instant) {
        let measured = now >= self.spec.measure_start;
        if measured && !self.budget.take() {
            self.budget_spent = true;
            self.idle(idx);
            return;
        }
        let conn = &mut self.conns[idx];
        conn.measured = measured;
        conn.started = now;
        conn.connected = now;
        conn.first_byte = None;
        conn.deadline = now + self.spec.timeout;
        conn.parser.reset(self.spec.head_request);
        conn.check.reset();
        self.resp_bytes[idx] = 0;
        if conn.stream.is_some() {
            conn.state = State::Writing { sent: 0 };
            self.write(idx, now);
            return;
        }
        match conn.connect(self.poll.registry(), Token(idx), self.spec.addr, None) {
            Ok(()) => {
                conn.deadline = now + self.spec.connect_timeout.min(self.spec.timeout);
                self.open += 1;
                self.peak_open = self.peak_open.max(self.open);
                if measured {
                    self.tally.connections_opened += 1;
                }
            }
            Err(e) => self.fail(idx, ErrorClass::from_io(&e), e.raw_os_error(), now),
        }
    }

    fn on_event(&mut self, event: &Event) {
        let idx = event.token().0;
        let now = Instant::now();
        if self.conns[idx].state == State::Connecting {
            match self.conns[idx].finish_connect() {
                Ok(true) => {
                    let conn = &mut self.conns[idx];
                    conn.connected = now;
                    conn.deadline = conn.started + self.spec.timeout;
                    conn.state = State::Writing { sent: 0 };
                }
                Ok(false) => return,
                Err(e) => return self.fail(idx, ErrorClass::from_io(&e), e.raw_os_error(), now),
            }
        }
        if matches!(self.conns[idx].state, State::Writing { .. }) {
            self.write(idx, now);
        }
        let readable = event.is_readable() || event.is_read_closed() || event.is_error();
        if self.conns[idx].state == State::Reading && readable {
            // A short read drains the socket unless the peer also closed or failed: the
            // edge-triggered event for a FIN or RST that came with the data is already
            // consumed, so keep reading until EOF or the error shows.
            let must_drain = event.is_read_closed() || event.is_error();
            self.read(idx, now, must_drain);
        }
    }

    fn write(&mut self, idx: usize, now: Instant) {
        let conn = &mut self.conns[idx];
        match conn.write_request(&self.spec.request) {
            Ok(true) => {
                conn.written = now;
                conn.state = State::Reading;
            }
            Ok(false) => {}
            Err(e) => self.fail(idx, ErrorClass::from_io(&e), e.raw_os_error(), now),
        }
    }

    fn read(&mut self, idx: usize, now: Instant, must_drain: bool) {
        loop {
            let conn = &mut self.conns[idx];
            let Some(stream) = conn.stream.as_mut() else { return };
            let n = match stream.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail(idx, ErrorClass::from_io(&e), e.raw_os_error(), now),
            };
            if n == 0 {
                return match conn.parser.on_eof() {
                    Ok(()) => self.complete(idx, now, true),
                    Err(e) => self.fail(idx, e.class(), None, now),
                };
            }
            conn.first_byte.get_or_insert(now);
            let check = &mut conn.check;
            match conn.parser.feed(&self.buf[..n], &mut |b| check.update(b)) {
                Ok(Progress::Partial) => {
                    self.resp_bytes[idx] += n as u64;
                    if n < self.buf.len() && !must_drain {
                        return;
                    }
                }
                Ok(Progress::Complete { consumed }) => {
                    self.resp_bytes[idx] += consumed as u64;
                    // Bytes after the response were never asked for (no pipelining): the
                    // connection's framing can no longer be trusted, so it is not reused.
                    return self.complete(idx, now, consumed < n);
                }
                Err(e) => {
                    self.resp_bytes[idx] += n as u64;
                    return self.fail(idx, e.class(), None, now);
                }
            }
        }
    }

    /// Whether a timed run is over: what ends after that is left unfinished, so that no
    /// request is counted beyond the measured window.
    fn past_end(&self, now: Instant) -> bool {
        self.spec.end.is_some_and(|end| now >= end)
    }

    /// A full response arrived on slot `idx`.
    fn complete(&mut self, idx: usize, now: Instant, must_close: bool) {
        if self.past_end(now) {
            return;
        }
        let conn = &mut self.conns[idx];
        if self.server.is_none() {
            self.server = conn.parser.take_server();
        }
        if conn.measured {
            let t = &mut self.tally;
            let status = conn.parser.status();
            t.status[usize::from(status).min(999)] += 1;
            let bytes = self.resp_bytes[idx];
            t.bytes_total += bytes;
            t.bytes_body += conn.parser.body_len();
            let second = now.saturating_duration_since(self.spec.measure_start).as_secs() as usize;
            let bucket = t.series.at(second);
            bucket.bytes += bytes;
            if conn.check.finish(&self.spec.validation, status).is_none() {
                t.completed += 1;
                bucket.completed += 1;
                let us = |d: Duration| d.as_micros() as u64;
                let total = now.saturating_duration_since(conn.started);
                let connect = conn.connected.saturating_duration_since(conn.started);
                let first = conn.first_byte.unwrap_or(now);
                t.timings.total.record(us(total));
                t.timings.connect.record(us(connect));
                t.timings.waiting.record(us(first.saturating_duration_since(conn.written)));
                t.timings.processing.record(us(total.saturating_sub(connect)));
                t.lengths.record(conn.parser.body_len());
            } else {
                t.failed += 1;
                bucket.failed += 1;
                t.errors.add(ErrorClass::Validation, None);
            }
            self.last_event = now;
        }
        conn.state = State::Idle;
        if must_close || !self.spec.keepalive || !conn.parser.keep_alive() {
            self.close(idx);
        } else if conn.measured {
            self.tally.keepalive += 1;
        }
        self.start_request(idx, now);
    }

    /// The request on slot `idx` failed; its next one starts on the next loop turn.
    fn fail(&mut self, idx: usize, class: ErrorClass, errno: Option<i32>, now: Instant) {
        if self.past_end(now) {
            return;
        }
        let conn = &mut self.conns[idx];
        if conn.measured {
            let t = &mut self.tally;
            t.failed += 1;
            t.errors.add(class, errno);
            t.bytes_total += self.resp_bytes[idx];
            let second = now.saturating_duration_since(self.spec.measure_start).as_secs() as usize;
            t.series.at(second).failed += 1;
            self.last_event = now;
        }
        self.close(idx);
        if matches!(class, ErrorClass::FdUnavail | ErrorClass::AddrUnavail) {
            self.conns[idx].state = State::Backoff(now + BACKOFF);
        } else {
            self.conns[idx].state = State::Idle;
            self.restart.push(idx);
        }
    }

    /// Fails requests past their deadline and wakes slots whose backoff is over.
    fn sweep(&mut self, now: Instant) {
        for idx in 0..self.conns.len() {
            match self.conns[idx].state {
                State::Connecting if now >= self.conns[idx].deadline => {
                    self.fail(idx, ErrorClass::ConnectTimeout, None, now)
                }
                State::Writing { .. } | State::Reading if now >= self.conns[idx].deadline => {
                    self.fail(idx, ErrorClass::ClientTimeout, None, now)
                }
                State::Backoff(at) if now >= at => {
                    self.conns[idx].state = State::Idle;
                    self.restart.push(idx);
                }
                _ => {}
            }
        }
    }

    fn idle(&mut self, idx: usize) {
        self.close(idx);
        self.conns[idx].state = State::Idle;
    }

    fn close(&mut self, idx: usize) {
        if self.conns[idx].stream.is_some() {
            self.conns[idx].close();
            self.open -= 1;
        }
    }
}
