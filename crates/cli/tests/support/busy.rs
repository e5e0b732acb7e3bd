//! How busy the whole machine was over a span, from /proc/stat's first line: tests whose
//! judgement by design says nothing on a full machine (the path rule under 90% busy) check it
//! only below that, and say so as a visible skip above.

/// The machine is this busy or more: the path rule of docs/trust.md judges nothing.
pub const FULL: f64 = 0.9;

/// The machine's CPU time so far, busy and in all (the first line of /proc/stat).
pub fn cpu_times() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap())
        .collect();
    let idle = fields[3] + fields[4];
    let total: u64 = fields.iter().take(8).sum();
    (total - idle, total)
}

/// The share of the machine's CPU time that was busy since `before`.
pub fn busy_since(before: (u64, u64)) -> f64 {
    let now = cpu_times();
    (now.0 - before.0) as f64 / (now.1 - before.1).max(1) as f64
}
