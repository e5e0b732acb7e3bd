//! The event loop a worker thread runs, whatever its load: [`EventLoop::run`] turns until the
//! load says the run ended. Each turn it opens the measured window when its time comes,
//! closes the seconds that ended (each gets the CPU used in it and the connections open,
//! and, when asked for, goes to [`crate::live`]'s listeners), sweeps deadlines, lets the load
//! start what is due, waits for events and hands them over. The worker implements the hooks
//! (its pacing's or its visits'): `run` is compiled for it, so a turn costs no dynamic
//! dispatch.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Poll, Token};

use crate::exchange::us;
use crate::result::{Tally, WorkerReport};
use crate::spec::WorkerSpec;
use crate::sys::{CpuTime, ThreadAccount};
use crate::Control;

/// The timer's token; slots use their index.
pub(crate) const TIMER: Token = Token(usize::MAX);

/// The measured second in progress: its index, when it ends, and the thread's account at its
/// start, so that each second gets the CPU used in it. The one clock of the worker's seconds:
/// as it turns, the closed second's CPU and connections go to the per-second series and,
/// when asked for, its counts and histograms to [`crate::live`]'s listeners.
pub(crate) struct Seconds {
    index: usize,
    ends: Instant,
    account: ThreadAccount,
    live: Option<LiveCursor>,
}

impl Seconds {
    /// Seconds from `measure_start`; `live`, worker `worker`'s snapshots are published.
    pub fn new(measure_start: Instant, live: bool, worker: usize) -> Seconds {
        Seconds {
            index: 0,
            ends: measure_start + Duration::from_secs(1),
            account: ThreadAccount::default(),
            live: live.then(|| LiveCursor { worker, ..Default::default() }),
        }
    }
}

/// A worker's place in its per-second snapshots ([`crate::live`]), which the second clock
/// ([`Seconds`], [`EventLoop::turn_second`]) sends as it closes each second.
#[derive(Debug, Default)]
struct LiveCursor {
    worker: usize,
    /// The second in progress at the last snapshot: the next one is that second's.
    second: u32,
    /// Interval histograms already published, of each latency.
    latency: usize,
    service: usize,
    /// Arrivals the schedule gave before measuring began (the warm-up's).
    due_base: u64,
    /// CPU of the seconds closed so far, in microseconds.
    cpu_us: u64,
}

/// The second clock with what it reads and writes, borrowed together.
pub(crate) struct Clocked<'a> {
    pub seconds: &'a mut Seconds,
    pub tally: &'a mut Tally,
    /// Connections open now.
    pub open: usize,
    /// Arrivals the schedule gave so far (none without one).
    pub popped: u64,
    pub control: &'a Control,
}

/// A load on the worker's event loop.
pub(crate) trait EventLoop: Sized {
    fn spec(&self) -> &WorkerSpec;
    fn clocked(&mut self) -> Clocked<'_>;
    fn poll(&mut self) -> &mut Poll;

    /// Before the first turn.
    fn begin(&mut self, _now: Instant) {}
    /// Measuring begins (after the warm-up).
    fn window_opens(&mut self);
    /// Whether the run is over at `now`, and then when it ended.
    fn ended(&mut self, now: Instant) -> Option<Instant>;
    /// Each turn, before the sweep.
    fn each_turn(&mut self, _now: Instant) {}
    /// Fails what is past its deadline.
    fn sweep(&mut self, now: Instant);
    /// Starts what is due by `now`.
    fn drive(&mut self, now: Instant);
    /// How long the loop may wait for events at `now`, its next duty being at `wake`.
    fn wait_for(&mut self, now: Instant, wake: Instant) -> Duration;
    fn on_timer(&mut self);
    fn on_event(&mut self, event: &Event);
    /// After the events of a turn were handled.
    fn after_events(&mut self, _now: Instant) {}
    /// The run's shared counters move by what this worker finished since it last told them.
    fn publish_progress(&mut self);
    /// What the worker measured, once its loop ended at `end_at`, with the CPU its thread used
    /// meanwhile.
    fn report(self, account: ThreadAccount, end_at: Instant) -> WorkerReport;

    /// Runs the event loop until the run ends, then reports.
    fn run(mut self) -> io::Result<WorkerReport> {
        if let Some(cpu) = self.spec().pin {
            // Pinning is best effort: a CPU that vanished since the CLI checked is not fatal.
            let _ = crate::sys::pin_current_thread(cpu);
        }
        let spec = self.spec();
        let tick = (spec.timeout.min(spec.connect_timeout) / 10)
            .clamp(Duration::from_millis(1), Duration::from_millis(100));
        let (measure_start, end) = (spec.measure_start, spec.end);
        let mut events = Events::with_capacity(1024);
        let mut measuring = false;
        let mut account_start = ThreadAccount::thread();
        let mut now = Instant::now();
        self.begin(now);
        let mut next_sweep = now + tick;
        let end_at = loop {
            now = Instant::now();
            if !measuring && now >= measure_start {
                measuring = true;
                account_start = self.start_measuring();
            }
            if let Some(end_at) = self.ended(now) {
                break end_at;
            }
            if measuring && now >= self.clocked().seconds.ends {
                self.turn_second(now);
            }
            self.each_turn(now);
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + tick;
            }
            self.drive(now);
            let mut wake = next_sweep;
            if let Some(end) = end {
                wake = wake.min(end);
            }
            if !measuring {
                wake = wake.min(measure_start);
            }
            let timeout = self.wait_for(now, wake);
            if !self.poll_events(&mut events, timeout)? {
                continue;
            }
            self.after_events(now);
            self.publish_progress();
        };
        self.publish_second(Some(now));
        Ok(self.report(ThreadAccount::thread().since(&account_start), end_at))
    }

    /// Measuring begins: the thread's account from now, the first second opened, and the
    /// arrivals the warm-up took off the schedule set aside for the live counts.
    fn start_measuring(&mut self) -> ThreadAccount {
        let account = ThreadAccount::thread();
        let c = self.clocked();
        if let Some(l) = c.seconds.live.as_mut() {
            l.due_base = c.popped;
        }
        c.seconds.account = account;
        self.open_into_second();
        self.window_opens();
        account
    }

    /// Waits at most `timeout` for events and handles them; false when a signal interrupted
    /// the wait (the loop then turns again at once).
    fn poll_events(&mut self, events: &mut Events, timeout: Duration) -> io::Result<bool> {
        if let Err(e) = self.poll().poll(events, Some(timeout)) {
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        for event in events.iter() {
            if event.token() == TIMER {
                self.on_timer();
            } else {
                self.on_event(event);
            }
        }
        Ok(true)
    }

    /// The second in progress has ended at `now`: it gets the CPU used since it began, the
    /// next one starts with the connections open now, and the live listeners get the closed
    /// one ([`EventLoop::publish_second`]). Once a second, so it costs nothing per request;
    /// the loop wakes at least every sweep tick, so a second's figures move by at most a
    /// tick.
    fn turn_second(&mut self, now: Instant) {
        self.account_second();
        let seconds = self.clocked().seconds;
        let passed = now.saturating_duration_since(seconds.ends).as_secs() as usize + 1;
        seconds.index += passed;
        seconds.ends += Duration::from_secs(passed as u64);
        self.open_into_second();
        self.publish_second(None);
    }

    /// Puts the CPU used since the second in progress began into it.
    fn account_second(&mut self) {
        let now = ThreadAccount::thread();
        let c = self.clocked();
        let used = now.since(&c.seconds.account);
        let bucket = c.tally.series.at(c.seconds.index);
        bucket.cpu_us += us(used.cpu.user + used.cpu.sys);
        bucket.cpu_wait_us += us(used.cpu_wait);
        if let Some(l) = c.seconds.live.as_mut() {
            l.cpu_us += us(used.cpu.user + used.cpu.sys);
        }
        c.seconds.account = now;
    }

    /// The second in progress has had at least the connections open now.
    fn open_into_second(&mut self) {
        let c = self.clocked();
        let bucket = c.tally.series.at(c.seconds.index);
        bucket.open = bucket.open.max(c.open as u64);
    }

    /// [`crate::live`]: the second that just closed (or, at the worker's end at `end`, the
    /// one in progress), its counts so far and the interval histograms closed since the last
    /// snapshot. Called by the second clock ([`EventLoop::turn_second`]) as it closes a
    /// second, the one place where a second ends for the per-second rows and for the stream
    /// alike.
    fn publish_second(&mut self, end: Option<Instant>) {
        let (measure_start, pacing) = (self.spec().measure_start, self.spec().pacing);
        // Without an interval log, a second's histograms are handed to the snapshot and
        // forgotten here: kept, they would grow by about 1 KB a second for the whole run.
        let keep = self.spec().hdr_log;
        let c = self.clocked();
        // At the end, the second in progress has not been accounted: its CPU so far is added.
        let partial = match (end, c.seconds.live.is_some()) {
            (Some(_), true) => CpuTime::thread().since(&c.seconds.account.cpu),
            _ => Default::default(),
        };
        let Some(l) = c.seconds.live.as_mut() else { return };
        // What happened since the last snapshot belongs to the second then in progress: a
        // loop turn late past the second's end (or the run's end at 5.000 s of a 5 s run)
        // does not move it into the next. At the end, the second in progress is closed too:
        // a run of 2.5 s streams its last half second's histogram like any other (an agent's
        // stream and the live endpoint count every request by them).
        let second = match end {
            Some(now) => now.saturating_duration_since(measure_start).as_secs() as u32,
            None => c.seconds.index as u32,
        };
        let close_to = second + u32::from(end.is_some());
        let mut snapshot =
            crate::live::Snapshot { worker: l.worker, second: l.second, ..Default::default() };
        l.second = second;
        if let Some(i) = c.tally.intervals.as_deref_mut() {
            snapshot.latency = closed(&mut i.latency, close_to, &mut l.latency, keep);
            if let Some(s) = i.service.as_mut() {
                snapshot.service = closed(s, close_to, &mut l.service, keep);
            }
        }
        let due = c.popped.saturating_sub(l.due_base);
        snapshot.counts = crate::live::counts(c.tally, due);
        if let Some(b) = c.tally.series.buckets().get(snapshot.second as usize) {
            (snapshot.second_open, snapshot.second_cpu_us, snapshot.second_cpu_wait_us) =
                (b.open, b.cpu_us, b.cpu_wait_us);
        }
        (snapshot.open, snapshot.cpu_us) = (c.open as u64, l.cpu_us + us(partial.total()));
        c.control.live.publish(snapshot, c.tally.latency(pacing));
    }
}

/// The histograms `intervals` closed before `second` since the last snapshot (the first
/// `*published` were given then): copied when `keep` (the interval log has them at the end),
/// else handed over and forgotten.
fn closed(
    intervals: &mut loadlab_stats::interval_log::Intervals,
    second: u32,
    published: &mut usize,
    keep: bool,
) -> Vec<(u32, Vec<u8>)> {
    intervals.advance(second);
    if !keep {
        return intervals.take_done();
    }
    let new = intervals.done().get(*published..).unwrap_or_default().to_vec();
    *published = intervals.done().len();
    new
}

/// Moves a pair of the run's shared counters (completed and failed requests, or visits) by
/// what a worker finished since `published`, which it then holds; nothing when nothing
/// finished.
pub(crate) fn publish(to: [&AtomicU64; 2], done: (u64, u64), published: &mut (u64, u64)) {
    if done != *published {
        to[0].fetch_add(done.0 - published.0, Ordering::Relaxed);
        to[1].fetch_add(done.1 - published.1, Ordering::Relaxed);
        *published = done;
    }
}
