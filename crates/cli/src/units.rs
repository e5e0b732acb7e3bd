//! Parsing and printing of durations, sizes and rates for people.

use std::time::Duration;

/// Parses `10s`, `1m`, `500ms`, `1h 30m`; a bare number means seconds (as wrk's `-d 10`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("invalid duration {s:?} ({e}); use e.g. 10s, 1m, 500ms"))
}

/// A latency in microseconds, in the unit that keeps three significant digits readable.
pub fn us(v: f64) -> String {
    if v < 1_000.0 {
        format!("{v:.0}µs")
    } else if v < 1_000_000.0 {
        format!("{:.2}ms", v / 1e3)
    } else {
        format!("{:.2}s", v / 1e6)
    }
}

/// A byte count with a binary unit.
pub fn bytes(v: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

/// An integer with thousands separators.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn printing() {
        assert_eq!(us(512.0), "512µs");
        assert_eq!(us(1_234.0), "1.23ms");
        assert_eq!(us(2_500_000.0), "2.50s");
        assert_eq!(bytes(13.0), "13 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(12), "12");
    }
}
