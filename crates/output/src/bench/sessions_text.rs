//! `--format text`'s section for visits (`--wsesslog`): how many visits began, completed and
//! failed, their rate, their lifetime percentiles, and where the failed ones failed.

use std::io::{self, Write};

use loadlab_runner::bench::sessions::Sessions;
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
