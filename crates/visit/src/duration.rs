//! Durations as visit files write them: `200ms`, `2s`, `1.5s`, `1m`, or a bare number of
//! seconds as httperf's `think=2.0`.

use std::time::Duration;

/// Parses a duration; `None` when the text is not one or is negative.
pub(crate) fn parse(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number.trim().parse().ok()?;
    let secs = value * scale;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::parse;
    use std::time::Duration;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(parse("200ms"), Some(Duration::from_millis(200)));
        assert_eq!(parse("2.0"), Some(Duration::from_secs(2)));
        assert_eq!(parse("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse("1m"), Some(Duration::from_secs(60)));
        assert_eq!(parse("-1"), None);
        assert_eq!(parse("soon"), None);
    }
}
