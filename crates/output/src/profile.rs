//! Profiles as `loadlab profile`, `stack sample --profile` and `bench --profile` print them: each tier's top
//! functions (self and total share of its samples), as text or JSON.

use std::io::{self, Write};

use loadlab_report::profile::{functions, ENOUGH_SAMPLES};
use loadlab_runner::commands::bench::profiled::BenchProfiles;
use loadlab_store::ProfileRecord;

/// Functions listed per tier unless the user asks for another number (`loadlab profile --top`).
pub const TOP: usize = 15;

/// Each tier's `top` functions as JSON objects (`tier`, `samples`, `lost`, `interval_us`,
/// `enough`, `functions`).
pub fn tiers_json(profiles: &[ProfileRecord], top: usize) -> Vec<serde_json::Value> {
    profiles
        .iter()
        .map(|p| {
            let mut f = functions(&p.folded);
            f.truncate(top);
            serde_json::json!({
                "tier": p.tier, "samples": p.samples, "lost": p.lost,
                "interval_us": p.interval_us,
                "enough": p.samples >= ENOUGH_SAMPLES,
                "functions": f,
            })
        })
        .collect()
}

/// `bench --profile`'s profiles: the instance, its stack, what became of the profiling (as a
/// profiled cell's `profile` knob says it) and each tier's [`TOP`] functions (none when perf
/// could not record).
pub fn bench_json(profiles: &BenchProfiles) -> serde_json::Value {
    let tiers = profiles.tiers.as_deref().map_or_else(|_| Vec::new(), |t| tiers_json(t, TOP));
    serde_json::json!({
        "instance": profiles.instance, "stack": profiles.stack, "profile": profiles.said(),
        "tiers": tiers,
    })
}

/// Each tier's `top` functions as a table under a line with its samples, saying so when they
/// are too few to say much.
pub fn write_tiers(out: &mut dyn Write, profiles: &[ProfileRecord], top: usize) -> io::Result<()> {
    for p in profiles {
        let few = match p.samples < ENOUGH_SAMPLES {
            true => format!(": under {ENOUGH_SAMPLES} samples, too few to say much"),
            false => String::new(),
        };
        writeln!(
            out,
            "{}: {} samples every {:.1} ms of CPU, {} lost{few}",
            p.tier,
            p.samples,
            p.interval_us as f64 / 1000.0,
            p.lost
        )?;
        writeln!(out, "  {:>6} {:>6}  function", "self%", "total%")?;
        let pct = |n: u64| 100.0 * n as f64 / p.samples.max(1) as f64;
        let mut f = functions(&p.folded);
        f.truncate(top);
        for f in f {
            writeln!(
                out,
                "  {:>6.1} {:>6.1}  {}",
                pct(f.self_samples),
                pct(f.total_samples),
                f.function
            )?;
        }
    }
    Ok(())
}
