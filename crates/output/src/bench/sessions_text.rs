//! `--format text`'s section for visits (`--wsesslog`, `--view`, `--visits`): how many visits
//! began, completed and failed, their rate, their lifetime percentiles, and where the failed
//! ones failed; for a visit file, a table of its steps.

use std::io::{self, Write};

use loadlab_runner::commands::bench::sessions::{Sessions, Visits};
use loadlab_stats::format::{count, micros as us};

/// The visits' lines, after the requests' latency; nothing for other runs.
pub fn write(s: Option<&Sessions>, out: &mut dyn Write) -> io::Result<()> {
    let Some(s) = s else { return Ok(()) };
    let n = |x: u64| count(x as f64);
    writeln!(
        out,
        "  Sessions     {} begun, {} completed, {} failed{}; {:.2} completed/s, {:.2} \
         connections each",
        n(s.started),
        n(s.completed),
        n(s.failed),
        if s.unfinished > 0 { format!(", {} unfinished", n(s.unfinished)) } else { String::new() },
        s.rate_per_s,
        s.connections_per_session
    )?;
    if s.completed > 0 {
        let l = &s.lifetime_us;
        writeln!(
            out,
            "  Lifetime     p50 {} p90 {} p99 {} max {} (from a session's due time to its last \
             answer, think included: {:.1} s of think in all, in no request's latency)",
            us(l.p50 as f64),
            us(l.p90 as f64),
            us(l.p99 as f64),
            us(l.max as f64),
            s.think_s
        )?;
    }
    for f in &s.failures {
        writeln!(out, "  failed at step {} call {}: {} x {}", f.step, f.call, f.class, n(f.count))?;
    }
    if s.abandoned + s.not_issued > 0 {
        writeln!(
            out,
            "  failed sessions left {} calls in flight (abandoned) and {} never issued",
            n(s.abandoned),
            n(s.not_issued)
        )?;
    }
    writeln!(out)
}

/// A visit file's steps, one row each: how many began, completed and failed (by class), and
/// their latency from each step's due time; nothing for other runs.
pub fn steps(v: Option<&Visits>, out: &mut dyn Write) -> io::Result<()> {
    let Some(v) = v else { return Ok(()) };
    let n = |x: u64| count(x as f64);
    let width = v.steps.iter().map(|s| s.step.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "  {:<width$}  {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}  failed by class",
        "Step", "begun", "done", "failed", "p50", "p99", "max"
    )?;
    for s in &v.steps {
        let failed: u64 = s.failed.values().sum();
        let classes: Vec<String> = s.failed.iter().map(|(c, k)| format!("{c} {}", n(*k))).collect();
        let l = &s.latency_us;
        let lat = |x: u64| if l.count > 0 { us(x as f64) } else { "-".to_string() };
        writeln!(
            out,
            "  {:<width$}  {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}  {}",
            s.step,
            n(s.started),
            n(s.completed),
            n(failed),
            lat(l.p50),
            lat(l.p99),
            lat(l.max),
            classes.join(", ")
        )?;
    }
    writeln!(
        out,
        "  (a step's latency runs from its due time, the visit's arrival or the previous step's \
         last answer plus think, to its last answer; think time is in none)"
    )?;
    writeln!(out)
}
