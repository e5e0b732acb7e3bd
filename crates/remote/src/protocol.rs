//! What a session says, one JSON object a line: the remote loadlab's events on its stdout,
//! and the local side's heartbeat on its stdin. Everything that crosses the ssh session is
//! here, so both ends read and write it alike.
//!
//! Remote to local, in order: `{"event":"up","instance":{...}}` once the stack is verified
//! (the instance as `stack up --json` prints it: `id`, `url`, `pids`, `checks`...), then
//! any number of `{"event":"sample","sample":{...}}` (one per interval, as `stack sample
//! --json` gives them), then `{"event":"down","id":...}` when the stack is gone. A failure
//! prints no event: the remote loadlab's error is on its stderr and its exit code is
//! ssh's.
//!
//! Local to remote: a line `heartbeat` every [`HEARTBEAT_EVERY`]. The remote takes its
//! stack down at EOF or when none came for [`HEARTBEAT_TIMEOUT`]: a cut path delivers
//! neither data nor EOF, and TCP alone would notice only after minutes.
//!
//! A profiled cell ([`Order`]): the line `profile start` has the remote record its tiers'
//! stacks where their processes are, and say `{"event":"profiling"}` once perf records;
//! `profile stop` has it stop, fold each tier's stacks and say `{"event":"profiles",
//! "profiles":{"tiers":[...],"refused":...}}` (as the lab's profiler gives them). Every
//! line the local side writes counts as a heartbeat.

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How often the local side says it is there.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// How long the remote waits for a heartbeat before it takes the stack down: five missed.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);
/// The heartbeat line.
pub const HEARTBEAT: &[u8] = b"heartbeat\n";

/// One line of the remote's stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// `loadlab remote hello`: what the remote binary is and where it runs.
    Hello(Hello),
    /// The stack is up and verified.
    Up { instance: Value },
    /// One sampling interval of its tiers and machine.
    Sample { sample: Value },
    /// The stack is down: no process, run directory or namespace of it is left.
    Down { id: String },
    /// Its tiers' stacks are being recorded, from now until `profile stop`.
    Profiling,
    /// The stacks recorded since `profile start`, or why there are none.
    Profiles { profiles: Value },
}

/// What the local side asks of the remote beside the heartbeat, one line each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Start recording the tiers' stacks.
    StartProfile,
    /// Stop, and send what was recorded.
    StopProfile,
}

impl Order {
    const LINES: [(Order, &'static str); 2] =
        [(Order::StartProfile, "profile start"), (Order::StopProfile, "profile stop")];

    /// The line, newline included.
    pub fn line(self) -> String {
        let (_, words) = Order::LINES.iter().find(|(o, _)| *o == self).expect("every order");
        format!("{words}\n")
    }

    /// The order a line is, if it is one (a heartbeat is none).
    pub fn parse(line: &[u8]) -> Option<Order> {
        let line = std::str::from_utf8(line).ok()?.trim_end();
        Order::LINES.iter().find(|(_, words)| *words == line).map(|(o, _)| *o)
    }
}

/// What a loadlab binary is and what it runs on: to tell whether the remote's loadlab is
/// this one, and whether this one can run there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub version: String,
    /// `uname -m`'s name (`x86_64`, `aarch64`).
    pub arch: String,
    /// `2.36`; `None` where there is no glibc (musl).
    pub glibc: Option<String>,
}

impl Event {
    /// The line, newline included.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("events serialise");
        line.push('\n');
        line
    }

    /// One line read back; what is not an event is an error that quotes it.
    pub fn parse(line: &str) -> Result<Event, String> {
        serde_json::from_str(line.trim_end())
            .map_err(|e| format!("not a loadlab event ({e}): {:?}", shorten(line)))
    }

    /// `id` and `url` of an `Up` event's instance.
    pub fn id_and_url(&self) -> Option<(&str, &str)> {
        match self {
            Event::Up { instance } => Some((instance["id"].as_str()?, instance["url"].as_str()?)),
            _ => None,
        }
    }
}

fn shorten(line: &str) -> String {
    line.trim_end().chars().take(200).collect()
}

/// The remote side's view of the heartbeat: a thread reads stdin to EOF and notes when the
/// last line came, and keeps the [`Order`]s among the lines for [`Watch::orders`].
#[derive(Clone)]
pub struct Watch {
    last: Arc<Mutex<Instant>>,
    eof: Arc<AtomicBool>,
    timeout: Duration,
    orders: Arc<Mutex<Vec<Order>>>,
}

impl Watch {
    /// Watches this process's stdin.
    pub fn stdin() -> Watch {
        Watch::reading(std::io::BufReader::new(std::io::stdin()), HEARTBEAT_TIMEOUT)
    }

    /// Watches `input` (any line counts as a heartbeat).
    pub fn reading(input: impl BufRead + Send + 'static, timeout: Duration) -> Watch {
        let watch = Watch {
            last: Arc::new(Mutex::new(Instant::now())),
            eof: Arc::new(AtomicBool::new(false)),
            timeout,
            orders: Arc::default(),
        };
        let seen = watch.clone();
        std::thread::spawn(move || {
            for line in input.split(b'\n') {
                let Ok(line) = line else { break };
                *seen.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
                if let Some(order) = Order::parse(&line) {
                    seen.orders.lock().unwrap_or_else(PoisonError::into_inner).push(order);
                }
            }
            seen.eof.store(true, Ordering::Relaxed);
        });
        watch
    }

    /// Whether the local side is still there: no EOF, and a line within the timeout.
    pub fn alive(&self) -> bool {
        let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
        !self.eof.load(Ordering::Relaxed) && last.elapsed() < self.timeout
    }

    /// The orders that came since the last call, in order.
    pub fn orders(&self) -> Vec<Order> {
        std::mem::take(&mut *self.orders.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Why it is not, for the remote's stderr.
    pub fn why_gone(&self) -> &'static str {
        if self.eof.load(Ordering::Relaxed) {
            "the session closed its input"
        } else {
            "no heartbeat came"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};
    use std::sync::mpsc;

    #[test]
    fn events_are_one_line_each_and_read_back() {
        let up = Event::Up {
            instance: serde_json::json!({"id": "nginx-1", "url": "http://10.215.0.2:8080/"}),
        };
        let line = up.line();
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.starts_with(r#"{"event":"up","instance":"#), "{line}");
        assert_eq!(Event::parse(&line).unwrap(), up);
        assert_eq!(up.id_and_url(), Some(("nginx-1", "http://10.215.0.2:8080/")));
        let hello = Event::Hello(Hello {
            version: "0.1.0".into(),
            arch: "x86_64".into(),
            glibc: Some("2.36".into()),
        });
        assert_eq!(Event::parse(&hello.line()).unwrap(), hello);
        let down = Event::Down { id: "nginx-1".into() };
        assert_eq!(down.line(), "{\"event\":\"down\",\"id\":\"nginx-1\"}\n");
    }

    #[test]
    fn what_is_not_an_event_is_quoted_in_the_error() {
        let e = Event::parse("Welcome to Debian!\n").unwrap_err();
        assert!(e.contains("\"Welcome to Debian!\""), "{e}");
        assert!(Event::parse(r#"{"event":"launch"}"#).is_err());
    }

    /// A reader fed by a channel: the test decides when lines come and when EOF does.
    struct Fed(mpsc::Receiver<Vec<u8>>, Vec<u8>);

    impl Read for Fed {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1.is_empty() {
                match self.0.recv() {
                    Ok(bytes) => self.1 = bytes,
                    Err(_) => return Ok(0),
                }
            }
            let n = buf.len().min(self.1.len());
            buf[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }

    fn fed(timeout: Duration) -> (mpsc::Sender<Vec<u8>>, Watch) {
        let (tx, rx) = mpsc::channel();
        (tx, Watch::reading(BufReader::new(Fed(rx, Vec::new())), timeout))
    }

    fn until(limit: Duration, what: impl Fn() -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if what() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        what()
    }

    #[test]
    fn heartbeats_keep_it_alive_and_silence_ends_it() {
        let (tx, watch) = fed(Duration::from_millis(300));
        for _ in 0..6 {
            tx.send(HEARTBEAT.to_vec()).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            assert!(watch.alive(), "heartbeats every 100 ms within a 300 ms timeout");
        }
        assert!(until(Duration::from_secs(5), || !watch.alive()), "silence ends it");
        assert_eq!(watch.why_gone(), "no heartbeat came");
        drop(tx);
    }

    /// Orders are lines beside the heartbeat: each kept once, in order, and a heartbeat too
    /// (three orders 600 ms apart keep a watch of 1 s alive for 1.8 s).
    #[test]
    fn orders_come_through_in_order_and_keep_it_alive() {
        assert_eq!(Order::parse(HEARTBEAT), None);
        let lines = [Order::StartProfile.line(), Order::StopProfile.line()];
        assert_eq!(lines, ["profile start\n", "profile stop\n"]);
        for line in &lines {
            assert_eq!(Order::parse(line.as_bytes()).map(|o| o.line()).as_ref(), Some(line));
        }
        let (tx, watch) = fed(Duration::from_secs(1));
        for order in [Order::StartProfile, Order::StopProfile, Order::StartProfile] {
            std::thread::sleep(Duration::from_millis(600));
            tx.send(order.line().into_bytes()).unwrap();
            let seen = std::sync::Mutex::new(Vec::new());
            assert!(until(Duration::from_secs(5), || {
                let mut seen = seen.lock().unwrap();
                seen.extend(watch.orders());
                !seen.is_empty()
            }));
            assert_eq!(seen.into_inner().unwrap(), [order], "the order, once");
            assert!(watch.alive(), "an order is a heartbeat too");
        }
        let profiling = Event::Profiling;
        assert_eq!(profiling.line(), "{\"event\":\"profiling\"}\n");
        assert_eq!(Event::parse(&profiling.line()).unwrap(), profiling);
        drop(tx);
    }

    #[test]
    fn eof_ends_it_at_once() {
        let (tx, watch) = fed(Duration::from_secs(60));
        tx.send(HEARTBEAT.to_vec()).unwrap();
        assert!(watch.alive());
        drop(tx);
        assert!(until(Duration::from_secs(5), || !watch.alive()), "EOF well before 60 s");
        assert_eq!(watch.why_gone(), "the session closed its input");
    }
}
