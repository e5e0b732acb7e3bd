//! Parsing of durations as people write them; printing numbers is `loadlab_stats::format`'s.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Parses `10s`, `1m`, `500ms`, `1h 30m`; a bare number means seconds (as wrk's `-d 10`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    // The flag takes values that start with '-' so that this, not "unexpected argument", is
    // what `-d -5s` is told.
    if let Some(rest) = s.strip_prefix('-') {
        return Err(if rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            format!("{s:?}: a duration cannot be negative; use e.g. 10s, 1m, 500ms")
        } else {
            format!("{s:?} is a flag where a duration should be; use e.g. 10s, 1m, 500ms")
        });
    }
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("invalid duration {s:?} ({e}); use e.g. 10s, 1m, 500ms"))
}

/// `d` as a flag's `[default: ...]` shows it and [`parse_duration`] reads it back (`30s`):
/// clap keeps a default's text for the life of the program, so each is made once.
pub(crate) fn text(d: Duration) -> &'static str {
    static TEXTS: Mutex<Vec<(Duration, &'static str)>> = Mutex::new(Vec::new());
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, text)) = texts.iter().find(|(of, _)| *of == d) {
        return text;
    }
    let text: &'static str = Box::leak(humantime::format_duration(d).to_string().into_boxed_str());
    texts.push((d, text));
    text
}

/// A duration as a suite file writes it (`timeout = "30s"`), read by [`parse_duration`].
pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
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
        assert!(parse_duration("-5s").unwrap_err().contains("cannot be negative"));
        assert!(parse_duration("-n").unwrap_err().contains("a flag where a duration should be"));
    }

    #[test]
    fn a_default_reads_back_as_itself() {
        for d in [Duration::ZERO, Duration::from_secs(30), Duration::from_millis(1500)] {
            assert_eq!(parse_duration(text(d)).unwrap(), d);
            assert!(std::ptr::eq(text(d), text(d)), "made once");
        }
        assert_eq!(text(Duration::from_secs(30)), "30s");
    }
}
