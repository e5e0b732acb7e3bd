//! Numbers for people: one formatter for every output (the terminal tables, `bench`'s text, the
//! HTML report), so a figure reads the same wherever it is printed.

/// A repetition as people count it: the store numbers them from 0, `loadlab run`'s progress
/// and every report from 1.
pub fn repetition(stored: u32) -> u32 {
    stored + 1
}

/// A count or rate: thousands separated, whole above 100, three significant digits below
/// (`12,345`, `2,000`, `37.5`, `0.812`).
pub fn count(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x.abs() >= 100.0 || x.fract() == 0.0 {
        return thousands(x.round() as i64);
    }
    significant(x, 3)
}

/// `x` with `digits` significant digits and no exponent (`0.0123`, `45.3`).
pub fn significant(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    // The leading group has 1 to 3 digits, every later one exactly 3.
    let head = match digits.len() % 3 {
        0 => 3.min(digits.len()),
        r => r,
    };
    out.push_str(&digits[..head]);
    for group in digits.as_bytes()[head..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(group).unwrap_or_default());
    }
    out
}

/// One request of a URL list as tables name it, `GET /cart?id=3`, cut after 40 characters
/// with `…` so a long query does not push every column aside (JSON and CSV keep it whole).
pub fn request(method: &str, path: &str) -> String {
    let request = format!("{method} {path}");
    match request.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &request[..at]),
        None => request,
    }
}

/// A duration given in microseconds, in the unit that keeps three significant digits readable:
/// `812 µs`, `45.3 ms`, `1.23 s`.
pub fn micros(us: f64) -> String {
    if !us.is_finite() {
        return "—".to_owned();
    }
    if us.abs() < 1_000.0 {
        format!("{} µs", significant(us, 3))
    } else if us.abs() < 1_000_000.0 {
        format!("{} ms", significant(us / 1_000.0, 3))
    } else {
        format!("{} s", significant(us / 1_000_000.0, 3))
    }
}

/// A bit rate given in Mbit/s (10^6 bit/s), as links are rated: `47.3 Mbit/s`, `9.52 Gbit/s`.
pub fn mbps(mbit_per_s: f64) -> String {
    if mbit_per_s.abs() >= 1_000.0 {
        format!("{} Gbit/s", significant(mbit_per_s / 1_000.0, 3))
    } else {
        format!("{} Mbit/s", significant(mbit_per_s, 3))
    }
}

/// A size in bytes with a binary unit: `512 B`, `20.0 KiB`, `48.2 MiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n.abs() < 1024.0 {
        return format!("{} B", n.round());
    }
    let mut v = n / 1024.0;
    let mut unit = 0;
    while v.abs() >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A signed change in percent: `+6.2%`, `-17.2%`.
pub fn delta(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
}

/// A share in percent without sign: `2%`, `0.4%`.
pub fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p != 0.0 && p.abs() < 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A p-value as benchstat prints it: three decimals, `p=0.000` meaning below 0.0005.
pub fn p_value(p: f64) -> String {
    format!("p={p:.3}")
}

/// A ratio with three significant digits: `1.82×`, `85.9×`, `412×`.
pub fn ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{}×", count(r))
    } else if r >= 10.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// A ratio's interval with three significant digits: `1.61–1.68`, `73.4–85.9`.
pub fn ratio_bounds(lo: f64, hi: f64) -> String {
    format!("{}–{}", significant(lo, 3), significant(hi, 3))
}

/// A time as `2025-06-15 14:13:20 UTC`, without a time-zone database: the report may be read
/// anywhere, and UTC is unambiguous.
pub fn utc(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days: the proleptic Gregorian date of a day count.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// A duration in seconds as `4 min 12 s` or `38.2 s`.
pub fn seconds(s: f64) -> String {
    if s >= 60.0 {
        format!("{} min {} s", (s / 60.0).floor(), (s % 60.0).round())
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_durations_read_naturally() {
        assert_eq!(count(12_345.4), "12,345");
        assert_eq!(count(2000.0), "2,000");
        assert_eq!(count(-1_234_567.0), "-1,234,567");
        assert_eq!(count(123_456.0), "123,456");
        assert_eq!(count(0.0), "0");
        assert_eq!(mbps(47.31), "47.3 Mbit/s");
        assert_eq!(mbps(9520.0), "9.52 Gbit/s");
        assert_eq!(count(37.54), "37.5");
        assert_eq!(count(0.8123), "0.812");
        assert_eq!(micros(812.0), "812 µs");
        assert_eq!(micros(45_311.0), "45.3 ms");
        assert_eq!(micros(1_234_000.0), "1.23 s");
        assert_eq!(micros(f64::NAN), "—");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(20_480.0), "20.0 KiB");
        assert_eq!(bytes(50_000_000.0), "47.7 MiB");
    }

    #[test]
    fn changes_ratios_and_p_values() {
        assert_eq!(delta(0.0616), "+6.2%");
        assert_eq!(delta(-0.172), "-17.2%");
        assert_eq!(percent(0.004), "0.4%");
        assert_eq!(percent(0.02), "2%");
        assert_eq!(p_value(0.00216), "p=0.002");
        assert_eq!(ratio(1.8234), "1.82×");
        assert_eq!(ratio(85.912), "85.9×");
        assert_eq!(ratio(412.3), "412×");
    }

    #[test]
    fn times_in_utc() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(UNIX_EPOCH + Duration::from_secs(1_750_000_000)), "2025-06-15 15:06:40 UTC");
        assert_eq!(utc(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29 00:00:00 UTC");
        assert_eq!(seconds(252.0), "4 min 12 s");
        assert_eq!(seconds(38.24), "38.2 s");
    }
}
