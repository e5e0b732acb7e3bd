//! Response validation (`--expect-*`): status sets, body digests and substrings, checked as the
//! body streams past, without storing it; and the one verdict on a whole answer
//! ([`Validation::verify`]) that every verify gives, the lab's on its stacks and the runner's
//! on external targets and custom workloads, so a wrong answer reads the same from either.

use memchr::memmem;
use sha2::{Digest, Sha256};

/// The largest body a verify reads whole, kept by the load ([`Validation::keep_answer`]) or read
/// by the blocking client ([`crate::client`]): the biggest page a verifier fetches is a few MB.
pub const MAX_BODY: usize = 64 << 20;

/// What a valid response looks like. Empty means every complete response is valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validation {
    /// Inclusive ranges of accepted status codes.
    pub status: Vec<(u16, u16)>,
    pub body_sha256: Option<[u8; 32]>,
    pub body_contains: Option<Vec<u8>>,
    /// Verify only: every string a whole answer must hold, and then never `<?php` (markers
    /// are what only executed PHP produces, so source served as text is told apart). The
    /// load looks for one substring per response ([`Validation::body_contains`]); a verify,
    /// which reads one answer whole, for each of these.
    pub markers: Vec<Vec<u8>>,
    /// Verify only: the product the answer's `Server` header must name at its start
    /// (`nginx`, `Apache`), compared without regard to case.
    pub server: Option<String>,
    /// Verify only: the load keeps the first answer it judges whole (its body up to
    /// [`MAX_BODY`]) in [`crate::result::Tally::answer`], so the answer is
    /// given to [`Validation::verify`] as the lab's client gives it one. Never for load: the
    /// body is copied as it arrives.
    pub keep_answer: bool,
}

/// One whole answer, as a verify judges it: from the lab's blocking client, or kept by the load
/// from a run of one request ([`Validation::keep_answer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer<'a> {
    pub status: u16,
    /// Its `Server` header, if it had one.
    pub server: Option<&'a str>,
    pub body: &'a [u8],
}

/// The first answer a run of [`Validation::keep_answer`] judged, its headers aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why a complete response failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    Status,
    Sha256,
    Contains,
}

impl Validation {
    /// Parses `--expect-status`: codes, ranges and classes, comma separated
    /// (`200`, `200,304`, `200-299`, `2xx`).
    pub fn parse_status(spec: &str) -> Result<Vec<(u16, u16)>, String> {
        spec.split(',')
            .map(str::trim)
            .map(|part| {
                let code = |s: &str| {
                    s.parse::<u16>()
                        .ok()
                        .filter(|c| (100..=999).contains(c))
                        .ok_or_else(|| format!("invalid status code {s:?} in {spec:?}"))
                };
                if let Some(class) = part.strip_suffix("xx").or_else(|| part.strip_suffix("XX")) {
                    let d = code(&format!("{class}00"))?;
                    Ok((d, d + 99))
                } else if let Some((a, b)) = part.split_once('-') {
                    let (a, b) = (code(a.trim())?, code(b.trim())?);
                    if a > b {
                        return Err(format!("empty status range {part:?}"));
                    }
                    Ok((a, b))
                } else {
                    let c = code(part)?;
                    Ok((c, c))
                }
            })
            .collect()
    }

    /// Parses a 64-digit hex SHA-256.
    pub fn parse_sha256(hex: &str) -> Result<[u8; 32], String> {
        let hex = hex.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{hex:?} is not a SHA-256 (64 hex digits)"));
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    /// Whether the load checks nothing ([`Validation::markers`] and [`Validation::server`]
    /// are a verify's alone).
    pub fn is_empty(&self) -> bool {
        self.status.is_empty() && self.body_sha256.is_none() && self.body_contains.is_none()
    }

    /// Whether `code` is an accepted status.
    pub fn status_ok(&self, code: u16) -> bool {
        self.status.is_empty() || self.status.iter().any(|(a, b)| (*a..=*b).contains(&code))
    }

    /// The accepted statuses as `--expect-status` spells them: `200`, `2xx`, `200-204`.
    pub fn expected_status(&self) -> String {
        let parts: Vec<String> = self
            .status
            .iter()
            .map(|&(a, b)| match (a, b) {
                (a, b) if a == b => a.to_string(),
                (a, b) if a % 100 == 0 && b == a + 99 => format!("{}xx", a / 100),
                (a, b) => format!("{a}-{b}"),
            })
            .collect();
        parts.join(",")
    }

    /// What was wrong with an answer of `status` and `bytes` body bytes that failed this
    /// validation. `mismatch` is known when the whole answer was judged ([`Validation::verify`]);
    /// a load's tally counts failures, not their reasons, so without it the body checks it
    /// could have failed are named together.
    pub fn explain(&self, mismatch: Option<Mismatch>, status: u16, bytes: u64) -> String {
        if mismatch == Some(Mismatch::Status) || (mismatch.is_none() && !self.status_ok(status)) {
            return format!("status {status}, expected {}", self.expected_status());
        }
        let body = format!("the body ({bytes} bytes, status {status})");
        let lacks = |text: &Vec<u8>| format!("lacks {:?}", String::from_utf8_lossy(text));
        let sha = "has another SHA-256 than expected";
        match (mismatch, &self.body_contains, self.body_sha256.is_some()) {
            (Some(Mismatch::Contains), Some(text), _) | (None, Some(text), false) => {
                format!("{body} {}", lacks(text))
            }
            (Some(Mismatch::Sha256), _, _) | (None, None, true) => format!("{body} {sha}"),
            (None, Some(text), true) => format!("{body} {} or {sha}", lacks(text)),
            _ => format!("{body} failed its check"),
        }
    }

    /// Whether `answer` is the one expected, judged whole: its status, the server that sent
    /// it, then the check each response of the load meets ([`BodyCheck`]), then every
    /// marker. What it was (`status 200, 13 body bytes, Server nginx/1.22`), or what was
    /// wrong with it. The lab's verify and the runner's give their answers to this function
    /// alone, so the same wrong answer reads the same whichever found it.
    pub fn verify(&self, answer: &Answer<'_>) -> Result<String, String> {
        let Answer { status, server, body } = *answer;
        if !self.status_ok(status) {
            // A wrong status is said first, with how the body starts.
            self.judge(status, body)?;
        }
        if let Some(name) = &self.server {
            let (name_bytes, n) = (name.as_bytes(), name.len());
            let named = server.is_some_and(|s| {
                s.len() >= n && s.as_bytes()[..n].eq_ignore_ascii_case(name_bytes)
            });
            if !named {
                return Err(format!("not from {name}: Server {:?}", server.unwrap_or_default()));
            }
        }
        if !self.markers.is_empty() && memmem::find(body, b"<?php").is_some() {
            return Err("PHP source was served instead of being executed".into());
        }
        self.judge(status, body)?;
        if let Some(marker) = self.markers.iter().find(|m| memmem::find(body, m).is_none()) {
            return Err(format!(
                "the body ({} bytes, status {status}) lacks {:?}",
                body.len(),
                String::from_utf8_lossy(marker)
            ));
        }
        let server = server.map_or(String::new(), |s| format!(", Server {s}"));
        Ok(format!("status {status}, {} body bytes{server}", body.len()))
    }

    /// Judges a whole answer already read by the check the load streams each body through, so
    /// that a verify and the cells after it accept the same answers. A wrong status says how
    /// the body starts (an error page names its server); a wrong digest, the one received.
    fn judge(&self, status: u16, body: &[u8]) -> Result<(), String> {
        let mut check = BodyCheck::new(&Validation { keep_answer: false, ..self.clone() });
        check.update(body);
        let Some(mismatch) = check.finish(self, status) else { return Ok(()) };
        let bytes = body.len() as u64;
        Err(match mismatch {
            Mismatch::Status => {
                let start = String::from_utf8_lossy(&body[..body.len().min(200)]);
                let explained = self.explain(Some(mismatch), status, bytes);
                format!("{explained} (body starts {start:?})")
            }
            Mismatch::Sha256 => {
                let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
                let expected = self.body_sha256.as_ref().map_or(String::new(), |d| hex(d));
                format!(
                    "the body ({bytes} bytes, status {status}) has SHA-256 {}, expected {expected}",
                    hex(&Sha256::digest(body))
                )
            }
            Mismatch::Contains => self.explain(Some(mismatch), status, bytes),
        })
    }
}

/// Per-connection validation state for the response being read. Reset per request; never
/// allocates after construction.
#[derive(Debug, Clone)]
pub struct BodyCheck {
    sha: Option<Sha256>,
    finder: Option<memmem::Finder<'static>>,
    found: bool,
    /// The last `pattern.len() - 1` body bytes, so a match across two reads is seen.
    tail: Vec<u8>,
    /// [`Validation::keep_answer`]: the body so far, up to [`MAX_BODY`].
    kept: Option<Vec<u8>>,
}

impl BodyCheck {
    pub fn new(v: &Validation) -> Self {
        let finder = v.body_contains.as_ref().map(|p| memmem::Finder::new(p).into_owned());
        let cap = v.body_contains.as_ref().map_or(0, |p| 2 * p.len());
        BodyCheck {
            sha: v.body_sha256.map(|_| Sha256::new()),
            finder,
            found: false,
            tail: Vec::with_capacity(cap),
            kept: v.keep_answer.then(Vec::new),
        }
    }

    pub fn reset(&mut self) {
        if let Some(sha) = self.sha.as_mut() {
            Digest::reset(sha);
        }
        self.found = false;
        self.tail.clear();
        if let Some(kept) = self.kept.as_mut() {
            kept.clear();
        }
    }

    /// Whether body bytes need to be seen at all.
    pub fn wants_body(&self) -> bool {
        self.sha.is_some() || self.finder.is_some() || self.kept.is_some()
    }

    /// [`Validation::keep_answer`]: the body of the response just read.
    pub fn kept(&self) -> Option<&[u8]> {
        self.kept.as_deref()
    }

    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        if let Some(kept) = self.kept.as_mut() {
            let room = MAX_BODY.saturating_sub(kept.len());
            kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        if let Some(sha) = self.sha.as_mut() {
            sha.update(bytes);
        }
        let Some(finder) = self.finder.as_ref() else { return };
        if self.found {
            return;
        }
        let keep = finder.needle().len().saturating_sub(1);
        // A match that straddles the previous read: search the kept tail plus the first
        // `keep` bytes of this one.
        let head = &bytes[..bytes.len().min(keep)];
        self.tail.extend_from_slice(head);
        if finder.find(&self.tail).is_some() || finder.find(bytes).is_some() {
            self.found = true;
            return;
        }
        let start = self.tail.len().saturating_sub(keep);
        if bytes.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            self.tail.drain(..start);
        }
    }

    /// The verdict on a complete response.
    pub fn finish(&mut self, v: &Validation, status: u16) -> Option<Mismatch> {
        if !v.status_ok(status) {
            return Some(Mismatch::Status);
        }
        if let (Some(sha), Some(expected)) = (self.sha.as_mut(), v.body_sha256.as_ref()) {
            if sha.finalize_reset().as_slice() != expected {
                return Some(Mismatch::Sha256);
            }
        }
        if self.finder.is_some() && !self.found {
            return Some(Mismatch::Contains);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_specs() {
        assert_eq!(Validation::parse_status("200").unwrap(), vec![(200, 200)]);
        assert_eq!(Validation::parse_status("2xx, 304").unwrap(), vec![(200, 299), (304, 304)]);
        assert_eq!(Validation::parse_status("200-204").unwrap(), vec![(200, 204)]);
        for bad in ["", "abc", "99", "1000", "300-200", "9xx9"] {
            assert!(Validation::parse_status(bad).is_err(), "{bad}");
        }
    }

    fn check(v: &Validation, status: u16, pieces: &[&[u8]]) -> Option<Mismatch> {
        let mut c = BodyCheck::new(v);
        c.reset();
        for p in pieces {
            c.update(p);
        }
        c.finish(v, status)
    }

    #[test]
    fn sha256_streams() {
        // sha256("hello, world!")
        let v = Validation {
            body_sha256: Some(
                Validation::parse_sha256(
                    "68e656b251e67e8358bef8483ab0d51c6619f3e7a1a9f0e75838d41ff368f728",
                )
                .unwrap(),
            ),
            ..Default::default()
        };
        assert_eq!(check(&v, 200, &[b"hello, ", b"world!"]), None);
        assert_eq!(check(&v, 200, &[b"hello, world?"]), Some(Mismatch::Sha256));
        assert!(Validation::parse_sha256("abc").is_err());
    }

    #[test]
    fn contains_across_reads() {
        let v = Validation { body_contains: Some(b"needle".to_vec()), ..Default::default() };
        assert_eq!(check(&v, 200, &[b"hay", b"ne", b"e", b"dle", b"hay"]), None);
        assert_eq!(check(&v, 200, &[b"haystack nee", b"dle"]), None);
        assert_eq!(check(&v, 200, &[b"needl", b"x", b"eedle"]), Some(Mismatch::Contains));
        assert_eq!(check(&v, 200, &[]), Some(Mismatch::Contains));
    }

    #[test]
    fn a_whole_answer_is_judged_as_the_load_judges_it() {
        let v = Validation {
            status: vec![(200, 200)],
            body_contains: Some(b"welcome".to_vec()),
            ..Default::default()
        };
        assert_eq!(v.judge(200, b"you are welcome here"), Ok(()));
        let e = v.judge(404, b"<h1>Not Found</h1>").unwrap_err();
        assert_eq!(e, "status 404, expected 200 (body starts \"<h1>Not Found</h1>\")");
        let e = v.judge(200, b"hello").unwrap_err();
        assert_eq!(e, "the body (5 bytes, status 200) lacks \"welcome\"");
        let digest = "68e656b251e67e8358bef8483ab0d51c6619f3e7a1a9f0e75838d41ff368f728";
        let v = Validation {
            body_sha256: Some(Validation::parse_sha256(digest).unwrap()),
            ..Default::default()
        };
        assert_eq!(v.judge(200, b"hello, world!"), Ok(()));
        let e = v.judge(200, b"").unwrap_err();
        assert!(e.starts_with("the body (0 bytes, status 200) has SHA-256 e3b0c442"), "{e}");
        assert!(e.ends_with(&format!("expected {digest}")), "{e}");
    }

    #[test]
    fn a_verify_judges_status_server_the_loads_check_and_every_marker() {
        let v = Validation {
            status: vec![(200, 200)],
            body_contains: Some(b"<html".to_vec()),
            markers: vec![b"<html".to_vec(), b"done".to_vec()],
            server: Some("nginx".into()),
            ..Default::default()
        };
        let answer = |status, server, body| Answer { status, server, body };
        let good = answer(200, Some("NGINX/1.22"), &b"<html>all done</html>"[..]);
        assert_eq!(v.verify(&good), Ok("status 200, 21 body bytes, Server NGINX/1.22".into()));
        // The status first, then who answered, then PHP source, then the body's checks; the
        // load looks for the first marker only, a verify for each.
        let wrong: [(u16, Option<&str>, &[u8], &str); 7] = [
            (500, Some("Apache"), b"<?php", "status 500, expected 200 (body starts \"<?php\")"),
            (200, Some("Apache/2.4"), b"<html>done", "not from nginx: Server \"Apache/2.4\""),
            (200, Some("ngin"), b"<html>done", "not from nginx: Server \"ngin\""),
            (200, None, b"<html>done", "not from nginx: Server \"\""),
            (
                200,
                Some("nginx"),
                b"<?php echo '<html>done';",
                "PHP source was served instead of being executed",
            ),
            (200, Some("nginx"), b"done", "the body (4 bytes, status 200) lacks \"<html\""),
            (200, Some("nginx"), b"<html>half", "the body (10 bytes, status 200) lacks \"done\""),
        ];
        for (status, server, body, why) in wrong {
            assert_eq!(v.verify(&answer(status, server, body)), Err(why.to_string()));
        }
        // No server asked for: any, or none, is fine; `<?php` is only refused beside markers.
        let any = Validation { status: vec![(200, 200)], ..Default::default() };
        assert_eq!(any.verify(&answer(200, None, b"<?php")), Ok("status 200, 5 body bytes".into()));
    }

    #[test]
    fn a_kept_answer_is_the_body_as_it_streamed_past() {
        let v = Validation { keep_answer: true, ..Default::default() };
        let mut c = BodyCheck::new(&v);
        assert!(c.wants_body());
        c.update(b"hello, ");
        c.update(b"world!");
        assert_eq!(c.kept(), Some(&b"hello, world!"[..]));
        c.reset();
        assert_eq!(c.kept(), Some(&b""[..]));
        let load = BodyCheck::new(&Validation::default());
        assert!(!load.wants_body() && load.kept().is_none());
    }

    #[test]
    fn a_tallied_failure_names_every_check_it_could_have_failed() {
        let v = Validation {
            status: vec![(200, 299), (304, 304)],
            body_contains: Some(b"ok".to_vec()),
            body_sha256: Some([0; 32]),
            ..Default::default()
        };
        assert_eq!(v.explain(None, 500, 3), "status 500, expected 2xx,304");
        let e = v.explain(None, 200, 3);
        assert_eq!(
            e,
            "the body (3 bytes, status 200) lacks \"ok\" or has another SHA-256 than expected"
        );
    }

    #[test]
    fn status_checked_first() {
        let v = Validation { status: vec![(200, 299)], ..Default::default() };
        assert_eq!(check(&v, 204, &[]), None);
        assert_eq!(check(&v, 500, &[]), Some(Mismatch::Status));
    }
}
