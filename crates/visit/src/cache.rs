//! What a browser's cache does with a page's resource on a repeat view (RFC 9111), decided
//! once from the headers of the resource's answer at discovery: reuse it unasked while it is
//! fresh (section 4.2), ask again with its validators when it is not (section 4.3.1:
//! `If-None-Match` from `ETag`, `If-Modified-Since` from `Last-Modified`, as browsers send
//! both), or fetch it whole when it may not be stored or carries no validator.
//!
//! A browser is a private cache: `s-maxage` (shared caches' only) is ignored. Heuristic
//! freshness (section 4.2.2, a share of the time since `Last-Modified`), which browsers may
//! apply to a resource with no explicit lifetime, is not: such a resource is revalidated, a
//! question a repeat view then really asks of the server.

use std::time::{Duration, SystemTime};

/// What a repeat view does with one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reuse {
    /// Fresh: not requested at all.
    Fresh,
    /// Stale with validators: a conditional GET with these header fields (a 304 answers it).
    Revalidate(Vec<(String, String)>),
    /// Not storable (`no-store`) or no validator: fetched whole again.
    Fetch,
}

impl Reuse {
    /// A word for the output: `fresh`, `revalidated` or `fetched`.
    pub fn name(&self) -> &'static str {
        match self {
            Reuse::Fresh => "fresh",
            Reuse::Revalidate(_) => "revalidated",
            Reuse::Fetch => "fetched",
        }
    }
}

/// What a repeat view coming at most `within` after the resource's answer does with it, from
/// the answer's header `fields` (names in any case).
pub fn reuse(fields: &[(String, String)], within: Duration) -> Reuse {
    let field = |name: &str| {
        fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
    };
    let directives: Vec<String> = fields
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cache-control"))
        .flat_map(|(_, v)| v.split(','))
        .map(|d| d.trim().to_ascii_lowercase())
        .collect();
    if directives.iter().any(|d| d == "no-store") {
        return Reuse::Fetch;
    }
    let no_cache = directives.iter().any(|d| d == "no-cache" || d.starts_with("no-cache="));
    if !no_cache && lifetime(&directives, field("expires"), field("date")) > within {
        return Reuse::Fresh;
    }
    let mut ask = Vec::new();
    if let Some(etag) = field("etag") {
        ask.push(("If-None-Match".to_string(), etag.to_string()));
    }
    if let Some(modified) = field("last-modified") {
        ask.push(("If-Modified-Since".to_string(), modified.to_string()));
    }
    if ask.is_empty() {
        Reuse::Fetch
    } else {
        Reuse::Revalidate(ask)
    }
}

/// The freshness lifetime (RFC 9111 section 4.2.1): `max-age`, else `Expires` minus `Date`;
/// zero when neither says, and for an `Expires` that is not a valid date (section 5.3: it
/// means already expired).
fn lifetime(directives: &[String], expires: Option<&str>, date: Option<&str>) -> Duration {
    let max_age = directives.iter().find_map(|d| d.strip_prefix("max-age="));
    if let Some(secs) = max_age {
        return Duration::from_secs(secs.trim_matches('"').parse().unwrap_or(0));
    }
    let at = |v: Option<&str>| v.and_then(|v| httpdate::parse_http_date(v).ok());
    match (at(expires), at(date).or_else(|| expires.map(|_| SystemTime::now()))) {
        (Some(expires), Some(date)) => expires.duration_since(date).unwrap_or_default(),
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn max_age_beyond_the_repeat_is_fresh_and_within_it_is_revalidated() {
        let long = fields(&[("Cache-Control", "public, max-age=3600"), ("ETag", "\"a1\"")]);
        assert_eq!(reuse(&long, MINUTE), Reuse::Fresh);
        let short = fields(&[("cache-control", "max-age=30"), ("ETag", "\"a1\"")]);
        let ask = vec![("If-None-Match".to_string(), "\"a1\"".to_string())];
        assert_eq!(reuse(&short, MINUTE), Reuse::Revalidate(ask));
    }

    #[test]
    fn expires_counts_from_the_answers_date_and_a_bad_one_is_expired() {
        let date = "Thu, 26 Nov 2026 18:00:00 GMT";
        let later = fields(&[("Date", date), ("Expires", "Thu, 26 Nov 2026 19:00:00 GMT")]);
        assert_eq!(reuse(&later, MINUTE), Reuse::Fresh);
        let bad = fields(&[("Date", date), ("Expires", "0"), ("Last-Modified", date)]);
        let ask = vec![("If-Modified-Since".to_string(), date.to_string())];
        assert_eq!(reuse(&bad, MINUTE), Reuse::Revalidate(ask));
        // max-age wins over Expires (RFC 9111 section 5.3).
        let both = fields(&[("Cache-Control", "max-age=0"), ("Date", date), ("Expires", date)]);
        assert_eq!(reuse(&both, Duration::ZERO), Reuse::Fetch);
    }

    #[test]
    fn no_store_fetches_and_no_cache_revalidates_whatever_the_lifetime() {
        let etag = ("ETag", "W/\"x\"");
        let no_store = fields(&[("Cache-Control", "no-store, max-age=3600"), etag]);
        assert_eq!(reuse(&no_store, MINUTE), Reuse::Fetch);
        let no_cache =
            fields(&[("Cache-Control", "max-age=3600"), ("Cache-Control", "no-cache"), etag]);
        assert_eq!(reuse(&no_cache, MINUTE).name(), "revalidated");
        assert_eq!(reuse(&fields(&[]), MINUTE), Reuse::Fetch);
    }
}
