//! The rendezvous's messages, after the challenge-response: each a JSON object behind its
//! length (4 bytes, big-endian), bounded so that a broken peer cannot make us allocate without
//! limit. The set is closed: readiness, clocks, start, heartbeat, results, stop, refusal.
//! None of them carries a target or a load: a sweep's start names its step ([`SweepStep`]),
//! which each agent takes only if its own command line defines or derives it.
//!
//! What the stream costs agent 0 is mostly reading it (every agent's histograms, each second),
//! so two choices keep it cheap: the message is externally tagged (`{"seconds": {...}}`),
//! which serde reads straight into its type, where an internally tagged one (`{"t":
//! "seconds", ...}`) is first buffered whole as a tree of generic values, one node per byte
//! of a histogram; and the histograms' bytes travel as base64 text ([`crate::b64`]), 4
//! characters per 3 bytes to decode in one pass, not a JSON number per byte.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

use crate::part::Part;
use crate::stream::Second;

/// The largest message: an agent's measurements of a long run (a few hundred bytes a second
/// of histograms) fit many times over.
pub const MAX_FRAME: usize = 256 << 20;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Msg {
    /// An agent is ready: pre-flight done. `load` is its load, option by option
    /// ([`crate::load`]), for agent 0 to compare with its own.
    /// `weight`: its `--agent-weight`, which agent 0 learns here.
    Ready { index: usize, of: usize, host: String, load: Vec<(String, String)>, weight: u64 },
    /// Agent 0 takes the agent.
    Accepted,
    /// Agent 0 will not run this agent, and why.
    Refused { reason: String },
    /// A clock sample's first leg: agent 0's wall clock, ns since the epoch.
    Ping { t0: u64 },
    /// Its answer: the same `t0` and the agent's clock when it answered.
    Pong { t0: u64, t1: u64 },
    /// The start time by agent 0's clock, and this agent's clock offset from agent 0's (its
    /// clock minus agent 0's), so that the agent starts at `at + offset` by its own.
    /// `weights`: every agent's `--agent-weight`, in index order, from which each takes its
    /// share ([`loadlab_engine::Share::weighted`]).
    /// `step`: a sweep's step, as agent 0 chose it from the merged results.
    Start {
        at: u64,
        offset: i64,
        weights: Vec<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<SweepStep>,
    },
    /// The agent's counters so far, every [`crate::HEARTBEAT_EVERY`]: its requests, and a
    /// run of visits' visits (page views, visits, sessions) completed and failed, which agent
    /// 0's live line counts instead.
    Beat {
        completed: u64,
        failed: u64,
        #[serde(default)]
        visits: (u64, u64),
    },
    /// The seconds measured since the last ones ([`crate::stream`]), before each heartbeat.
    Seconds { seconds: Vec<Second> },
    /// The agent's measurements, at its end, and how late it started by its clock (ns).
    Done { part: Box<Part>, late_ns: u64 },
    /// Agent 0 stops the test: an agent was lost (`lost`), or agent 0's own run was
    /// interrupted (Ctrl-C) or failed. Between a sweep's steps: the sweep is over.
    Stop { reason: String, lost: bool },
    /// Agent 0 has this agent's measurements: its run (a sweep's step) is over, and the
    /// connection stays for the next step's start, if any.
    Over,
}

/// A sweep's step (`loadlab_runner::commands::sweep::NextStep`): its target (0 the URL, 1
/// `--compare`'s), its offered rate, whether bisection added it. An agent runs it only if it
/// is one of the steps its own command line allows at that point, and refuses otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    pub target: usize,
    pub rate: f64,
    pub bisect: bool,
}

/// Sends one message.
pub fn send<W: Write>(out: &mut W, msg: &Msg) -> io::Result<()> {
    let body = serde_json::to_vec(msg).map_err(io::Error::other)?;
    let len = u32::try_from(body.len()).ok().filter(|n| (*n as usize) <= MAX_FRAME);
    let len = len.ok_or_else(|| io::Error::other("message too large"))?;
    let mut frame = len.to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    out.write_all(&frame)?;
    out.flush()
}

/// Reads one message.
pub fn recv<R: Read>(input: &mut R) -> io::Result<Msg> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "message too large"));
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_and_an_oversized_length_is_refused() {
        let mut buf = Vec::new();
        send(&mut buf, &Msg::Start { at: 5, offset: -3, weights: vec![3, 1], step: None }).unwrap();
        let Msg::Start { at, offset, .. } = recv(&mut buf.as_slice()).unwrap() else { panic!() };
        assert_eq!((at, offset), (5, -3));
        // Histograms travel as base64 text, and read back the same.
        let second = Second { second: 3, latency: vec![vec![0, 1, 255]], ..Default::default() };
        let mut buf = Vec::new();
        send(&mut buf, &Msg::Seconds { seconds: vec![second.clone()] }).unwrap();
        assert!(String::from_utf8_lossy(&buf).contains(r#""latency":["AAH/"]"#));
        let Msg::Seconds { seconds } = recv(&mut buf.as_slice()).unwrap() else { panic!() };
        assert_eq!(seconds, [second]);
        let huge = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert_eq!(recv(&mut &huge[..]).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
