//! A visitor's cookie jar: RFC 6265's storage model (section 5.3) cut to what one visitor of one
//! site needs. The `cookie` crate parses each Set-Cookie (section 5.2); the jar keeps them and
//! says which go back with a request (section 5.4).
//!
//! Why not `cookie_store`: every visitor here talks to one origin, the run's target, so there
//! is no domain tree to keep and no public-suffix list to consult (it brings one); the jar is a
//! short list searched by name and path, one per visitor, and dropped with its visit. A
//! `Domain` attribute that does not domain-match the target is ignored, as section 5.3 step 6
//! says for a cookie a host may not set.

use std::time::{Duration, Instant};

use cookie::{Cookie, Expiration};

/// The cookies one visitor holds for the run's target.
#[derive(Debug, Clone)]
pub struct Jar {
    host: String,
    https: bool,
    cookies: Vec<Stored>,
}

#[derive(Debug, Clone)]
struct Stored {
    name: String,
    value: String,
    path: String,
    secure: bool,
    expires: Option<Instant>,
}

impl Jar {
    /// An empty jar for a visitor of `host` (over TLS when `https`).
    pub fn new(host: &str, https: bool) -> Jar {
        Jar { host: host.to_ascii_lowercase(), https, cookies: Vec::new() }
    }

    /// Takes one Set-Cookie field of the answer to a request for `request_path`, at `now`.
    pub fn store(&mut self, set_cookie: &str, request_path: &str, now: Instant) {
        let Ok(c) = Cookie::parse(set_cookie) else { return };
        if let Some(domain) = c.domain() {
            let domain = domain.trim_start_matches('.').to_ascii_lowercase();
            let matches = self.host == domain || self.host.ends_with(&format!(".{domain}"));
            if !matches {
                return;
            }
        }
        let path = match c.path() {
            Some(p) if p.starts_with('/') => p.to_string(),
            _ => default_path(request_path),
        };
        // Max-Age wins over Expires (section 5.3 step 3); a date in the past deletes.
        let expires = match (c.max_age(), c.expires()) {
            (Some(age), _) => {
                let secs = age.whole_seconds();
                Some(if secs <= 0 { now } else { now + Duration::from_secs(secs as u64) })
            }
            (None, Some(Expiration::DateTime(at))) => {
                let left = at - cookie::time::OffsetDateTime::now_utc();
                Some(now + Duration::try_from(left).unwrap_or(Duration::ZERO))
            }
            _ => None,
        };
        self.cookies.retain(|s| !(s.name == c.name() && s.path == path));
        if expires.is_some_and(|at| at <= now) {
            return;
        }
        let secure = c.secure().unwrap_or(false);
        self.cookies.push(Stored {
            name: c.name().to_string(),
            value: c.value().to_string(),
            path,
            secure,
            expires,
        });
    }

    /// The Cookie field's value for a request of `path` at `now` (section 5.4): longer paths
    /// first, then the order they were stored in; `None` when no cookie goes.
    pub fn header(&self, path: &str, now: Instant) -> Option<String> {
        let path = path.split(['?', '#']).next().unwrap_or("/");
        let mut sent: Vec<&Stored> = self
            .cookies
            .iter()
            .filter(|s| s.expires.is_none_or(|at| at > now))
            .filter(|s| !s.secure || self.https)
            .filter(|s| path_matches(path, &s.path))
            .collect();
        if sent.is_empty() {
            return None;
        }
        sent.sort_by_key(|s| std::cmp::Reverse(s.path.len()));
        let pairs: Vec<String> = sent.iter().map(|s| format!("{}={}", s.name, s.value)).collect();
        Some(pairs.join("; "))
    }

    /// Whether the jar holds a live cookie of this name.
    pub fn has(&self, name: &str, now: Instant) -> bool {
        self.cookies.iter().any(|s| s.name == name && s.expires.is_none_or(|at| at > now))
    }
}

/// The default-path of a request's path (section 5.1.4): up to its last `/`, or `/`.
fn default_path(request_path: &str) -> String {
    let path = request_path.split(['?', '#']).next().unwrap_or("");
    match path.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => path[..i].to_string(),
    }
}

/// Path-match (section 5.1.4).
fn path_matches(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request[cookie.len()..].starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_go_back_by_path_and_expire() {
        let now = Instant::now();
        let mut jar = Jar::new("127.0.0.1", false);
        jar.store("sid=1; Path=/", "/login", now);
        jar.store("admin=2; Path=/wp-admin", "/login", now);
        jar.store("short=3; Max-Age=1", "/a/b", now);
        jar.store("tls=4; Secure", "/", now);
        jar.store("other=5; Domain=example.com", "/", now);
        assert_eq!(jar.header("/", now).as_deref(), Some("sid=1"));
        assert_eq!(jar.header("/wp-admin/index.php", now).as_deref(), Some("admin=2; sid=1"));
        assert_eq!(jar.header("/wp-administrator", now).as_deref(), Some("sid=1"));
        // Default path of /a/b is /a.
        assert_eq!(jar.header("/a/x?q=1", now).as_deref(), Some("short=3; sid=1"));
        let later = now + Duration::from_secs(2);
        assert_eq!(jar.header("/a/x", later).as_deref(), Some("sid=1"));
        // Replaced, then deleted by a date in the past.
        jar.store("sid=9; Path=/", "/", now);
        assert_eq!(jar.header("/", now).as_deref(), Some("sid=9"));
        jar.store("sid=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "/", now);
        assert_eq!(jar.header("/", now), None);
        assert!(!jar.has("sid", now));
    }
}
