//! How long a plan will take, before it runs: load time from each cell's stop condition, plus
//! a fixed cost per cell and per stack instance. Counted closed-loop cells need a guess of the
//! server's speed; [`expected_rps`] gives a deliberately low one, so estimates err long.

use std::time::Duration;

use loadlab_engine::Stop;
use loadlab_lab::catalog::Tier;

use crate::plan::{Cell, Plan, Point};

/// Bringing a stack instance up, verifying it and tearing it down. Measured on a 2-core
/// machine: 0.1 s (nginx) to 3.5 s (Apache with MariaDB, cold); WordPress stacks 0.7-2 s.
pub const STACK_UP: Duration = Duration::from_secs(3);
/// Verifying an external target: a request per workload.
pub const EXTERNAL_VERIFY: Duration = Duration::from_millis(200);
/// Per cell beyond its load: starting the workers, merging results, committing to the store
/// (at most 50 ms by requirement), the sampler's last reading.
pub const CELL_OVERHEAD: Duration = Duration::from_millis(250);

/// A plan's expected duration and where it goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub total: Duration,
    /// Warm-up and measured load, summed over cells.
    pub load: Duration,
    /// How many times a stack comes up or an external target is verified (stacks times
    /// repetitions).
    pub stack_ups: usize,
    /// Of those, the lab's stack instances (the rest are external targets, which the lab does
    /// not start).
    pub lab_ups: usize,
    /// The external targets (each verified once per repetition).
    pub external_targets: usize,
    pub cells: usize,
}

impl Plan {
    pub fn estimate(&self) -> Estimate {
        let load: Duration = self.cells.iter().map(|c| c.load.warmup + run_time(c)).sum();
        let stack_ups = self.instances().count();
        // An external target is only verified: a few requests, no start.
        let lab_ups = self.instances().filter(|g| g[0].stack.lab_stack().is_some()).count();
        let total = load
            + CELL_OVERHEAD * self.cells.len() as u32
            + STACK_UP * lab_ups as u32
            + EXTERNAL_VERIFY * (stack_ups - lab_ups) as u32;
        let mut external: Vec<usize> = self
            .cells
            .iter()
            .filter(|c| c.stack.lab_stack().is_none())
            .map(|c| c.stack_index)
            .collect();
        external.sort_unstable();
        external.dedup();
        let external_targets = external.len();
        Estimate { total, load, stack_ups, lab_ups, external_targets, cells: self.cells.len() }
    }
}

impl Estimate {
    /// Where the cells run, for the plan's line: `2 stack instances and 1 external target`
    /// (the lab starts the instances; it starts nothing for an external target).
    pub fn places(&self) -> String {
        let counted = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        match (self.lab_ups, self.external_targets) {
            (labs, 0) => counted(labs, "stack instance"),
            (0, ext) => counted(ext, "external target"),
            (labs, ext) => format!(
                "{} and {}",
                counted(labs, "stack instance"),
                counted(ext, "external target")
            ),
        }
    }
}

/// How long the measured part of a cell lasts.
fn run_time(cell: &Cell) -> Duration {
    let n = match cell.load.stop {
        Stop::Duration(d) => return d,
        Stop::Count(n) => n as f64,
    };
    let secs = match cell.load.point {
        // A schedule-driven load lasts as long as its schedule, whatever the server does
        // (the timeout bounds the last arrivals' tail).
        Point::Open { rate } | Point::Sessions { rate, .. } => n / rate,
        Point::Closed { .. } => n / expected_rps(cell),
    };
    Duration::from_secs_f64(secs)
}

/// A low guess of the requests per second a closed-loop cell achieves on a 2-core machine,
/// from runs of the lab's stacks there (about a third of what they measured, so estimates err
/// long): a static file's rate falls with its size, a PHP page's with its work.
pub fn expected_rps(cell: &Cell) -> f64 {
    let lab = cell.stack.lab_stack();
    let cached = lab.is_some_and(|l| l.stack.http_tiers.first() == Some(&Tier::Varnish));
    let opcache = lab.is_some_and(|l| l.knobs.opcache_on());
    let base = match cell.workload.name() {
        "hello.txt" | "robots.txt" | "20k.bin" => 10_000.0,
        "100k.bin" => 5_000.0,
        "1m.bin" => 800.0,
        "hello.php" => 5_000.0,
        "phpinfo.php" | "complex.php" => 800.0,
        "country.php" => 400.0,
        "wordpress" if cached => 5_000.0,
        // Measured 18 req/s without OPcache and 99 with it at -c 25.
        "wordpress" if opcache => 40.0,
        "wordpress" => 8.0,
        _ => 200.0,
    };
    // One connection waits out every round trip; a new connection per request pays the
    // handshake each time, which only shows beside cheap requests (not beside a page that
    // takes 50 ms of PHP).
    let concurrency = match cell.load.point {
        Point::Closed { concurrency: 1 } => 0.5,
        _ => 1.0,
    };
    let keepalive = if cell.load.connection.keepalive || base < 1_000.0 { 1.0 } else { 0.5 };
    base * concurrency * keepalive
}
