//! What a command shows while it runs on a terminal: the live view (loadlab-tui) when stdout
//! and stderr are both terminals, else the progress line on stderr (elapsed time, completed,
//! current rate, errors), and nothing with -q. The counting is loadlab-runner's
//! (`bench::live`); this chooses how it is shown, and holds what the command would have
//! printed while the view had the terminal ([`Said`]).

use std::io::{IsTerminal, Write};

use anyhow::Context;
use loadlab_runner::commands::bench::flags::RequestFlags;
use loadlab_tui::Out;

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

/// [`measure`], with the live view of `title` instead, unless -q, `--no-tui`, or stdout or
/// stderr is not a terminal; without the view, the progress line only when `line`.
pub fn watch(
    title: &str,
    flags: &RequestFlags,
    line: bool,
) -> anyhow::Result<(EngineMeasure, Said)> {
    let terminals = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    if flags.quiet || flags.no_tui || !terminals {
        return Ok((measure(flags.quiet || !line)?, Said(None)));
    }
    let control = crate::signals::control()?;
    let stopping = control.clone();
    let stop = Box::new(move || crate::signals::interrupt(&stopping));
    match loadlab_tui::View::open(title, stop) {
        Ok(view) => Ok((EngineMeasure::new(control, Some(view.shows())), Said(Some(view)))),
        // A terminal that refuses raw mode or the alternate screen still gets the line.
        Err(e) => {
            eprintln!("loadlab: note: no live view ({e}): the progress line instead");
            Ok((measure(!line)?, Said(None)))
        }
    }
}

/// Where a command's lines go while it runs: printed at once, or with the live view on,
/// shown there and printed, in their order, once it has closed ([`Said::close`], or the drop
/// of a command that ends early with an error).
pub struct Said(Option<loadlab_tui::View>);

impl Drop for Said {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// A writer of whole lines into [`Said::out`] (a suite's progress lines).
pub struct SaidLines<'a>(pub &'a Said, pub Vec<u8>);

impl Write for SaidLines<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        while let Some(end) = self.1.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.1.drain(..=end).collect();
            self.0.out(String::from_utf8_lossy(&line[..end]).as_ref())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Said {
    /// Lines printed at once.
    pub fn none() -> Said {
        Said(None)
    }

    /// A line for stderr.
    pub fn err(&self, line: &str) {
        match &self.0 {
            Some(view) => view.line(Out::Stderr, line),
            None => eprintln!("{line}"),
        }
    }

    /// A line for stdout.
    pub fn out(&self, line: &str) -> std::io::Result<()> {
        match &self.0 {
            Some(view) => {
                view.line(Out::Stdout, line);
                Ok(())
            }
            None => {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{line}")?;
                out.flush()
            }
        }
    }

    /// The view, when it is on.
    pub fn view(&self) -> Option<&loadlab_tui::View> {
        self.0.as_ref()
    }

    /// Closes the view, if on, and prints what it held.
    pub fn close(&mut self) -> anyhow::Result<()> {
        let Some(view) = self.0.take() else { return Ok(()) };
        for (to, line) in view.close().context("closing the live view")? {
            match to {
                Out::Stdout => outln!("{line}")?,
                Out::Stderr => eprintln!("{line}"),
            }
        }
        Ok(())
    }
}
