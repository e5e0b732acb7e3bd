//! The values of flags that are more than a number (levels and shapes, rate lists, a ramp,
//! SLO thresholds), parsed into what the runner takes, with the one-line message a command
//! line shows for a bad one.

use loadlab_engine::{Level, Shape};

use crate::judge::slo::{Slo, SloError};

/// `--slo THRESHOLDS`, checked before anything runs.
pub fn slo(s: &str) -> Result<Slo, String> {
    s.parse().map_err(|e: SloError| e.to_string())
}

/// `sweep --slo`: thresholds, or a bare duration as a p99 bound (what the flag took before it took
/// thresholds).
pub fn sweep_slo(s: &str) -> Result<Slo, String> {
    match loadlab_load::parse_duration(s) {
        Ok(d) => slo(&format!("p99<={}us", d.as_micros())),
        Err(_) => slo(s),
    }
}

/// `--rate`, `--conn-rate`: a level, a ramp `A..B` or stages `30s:0..1000,2m:1000`.
pub fn level(s: &str) -> Result<Level, String> {
    Level::parse(s).map_err(|e| e.to_string())
}

/// `-c`: a whole number of connections, a ramp `0..100` or stages `30s:0..100,1m:100`.
pub fn connections(s: &str) -> Result<Level, String> {
    match level(s)? {
        Level::Fixed(n) if n.fract() != 0.0 => {
            Err(format!("{s:?}: connections are a whole number"))
        }
        level => Ok(level),
    }
}

/// `--stages`: stages only, each `DURATION:LEVEL` or `DURATION:FROM..TO`.
pub fn stages(s: &str) -> Result<Level, String> {
    Shape::parse_stages(s).map(Level::Stages).map_err(|e| e.to_string())
}

/// `sweep --ramp FROM..TO`, rising.
pub fn ramp(s: &str) -> Result<(f64, f64), String> {
    match level(s)? {
        Level::Ramp(from, to) if to > from => Ok((from, to)),
        _ => Err(format!("{s:?}: a ramp is FROM..TO, rising (e.g. 0..2000)")),
    }
}

/// A parsed `--rates` value (one value to clap, not many).
#[derive(Debug, Clone)]
pub struct RateList(pub Vec<f64>);

/// `--rates`: `100..2000:100` (the suite files' sweep syntax, one parser for both) or
/// `100,200,400`, into ascending, distinct rates.
pub fn rates(s: &str) -> Result<RateList, String> {
    let mut rates = if s.contains("..") {
        loadlab_suite::parse_sweep(s)?
    } else {
        s.split(',')
            .map(|x| {
                x.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .ok_or_else(|| format!("invalid rate {x:?} in {s:?}"))
            })
            .collect::<Result<Vec<f64>, String>>()?
    };
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    Ok(RateList(rates))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_lists() {
        assert_eq!(rates("100..500:100").unwrap().0, vec![100.0, 200.0, 300.0, 400.0, 500.0]);
        assert_eq!(rates("400,100,200,100").unwrap().0, vec![100.0, 200.0, 400.0]);
        assert_eq!(rates("10..15:10").unwrap().0, vec![10.0]);
        for bad in ["", "a", "100..50:10", "0,100", "1..2", "1..1000000:1"] {
            assert!(rates(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn connections_are_whole_and_ramps_rise() {
        assert!(connections("2.5").is_err());
        assert!(matches!(connections("0..100"), Ok(Level::Ramp(..))));
        assert_eq!(ramp("0..2000"), Ok((0.0, 2000.0)));
        assert!(ramp("2000..0").is_err());
    }
}
