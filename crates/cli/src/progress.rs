//! The live progress line on a terminal: elapsed time, completed, current rate, errors. The
//! counting is loadlab-runner's (`bench::live`); this prints it.

use std::io::{IsTerminal, Write};

use loadlab_runner::commands::bench::live::{EngineMeasure, Show, Shows, Tally};
use loadlab_stats::format::count;

/// The progress line on stderr.
struct Line;

impl Show for Line {
    fn show(&mut self, label: &str, t: &Tally) {
        let phase = if t.warming { " (warm-up)" } else { "" };
        eprint!(
            "\r\x1b[2K{label}{:6.1}s{phase}  completed {}  {}  errors {}",
            t.elapsed.as_secs_f64(),
            count(t.completed as f64),
            t.rate_text(),
            count(t.failed as f64)
        );
        let _ = std::io::stderr().flush();
    }

    fn clear(&mut self) {
        eprint!("\r\x1b[2K");
    }
}

/// The engine with the process's one control (Ctrl-C), and the progress line unless `quiet`
/// or stderr is not a terminal.
pub fn measure(quiet: bool) -> anyhow::Result<EngineMeasure> {
    let line = || -> Box<dyn Show> { Box::new(Line) };
    let shows = (!quiet && std::io::stderr().is_terminal()).then(|| Box::new(line) as Shows);
    Ok(EngineMeasure::new(crate::signals::control()?, shows))
}
