//! The request, encoded once into the exact bytes every connection sends, and the HTTP version
//! it is encoded for ([`Protocol`]).

use crate::{EngineError, Target};

/// The HTTP version a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, one request at a time on each connection.
    Http1,
    /// HTTP/2 (`--http2`): ALPN h2 over TLS, prior knowledge (h2c) over TCP, with up to
    /// `streams` requests in flight on each connection (h2load's `-m`).
    Http2 { streams: usize },
    /// HTTP/3 (`--http3`): QUIC with ALPN h3, over https:// only (QUIC carries TLS 1.3), with
    /// up to `streams` requests in flight on each connection, as HTTP/2's.
    Http3 { streams: usize },
}

impl Protocol {
    /// Requests one connection carries at once.
    pub fn streams(self) -> usize {
        match self {
            Protocol::Http1 => 1,
            Protocol::Http2 { streams } | Protocol::Http3 { streams } => streams,
        }
    }

    pub fn is_h2(self) -> bool {
        matches!(self, Protocol::Http2 { .. })
    }

    pub fn is_h3(self) -> bool {
        matches!(self, Protocol::Http3 { .. })
    }

    /// The name ALPN gives it (RFC 7301; RFC 9114 section 3.1 for h3), as every output says
    /// it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::Http2 { .. } => "h2",
            Protocol::Http3 { .. } => "h3",
        }
    }
}

/// What to send, before encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    pub method: String,
    /// Extra header fields; one named like a default (Host, User-Agent, Accept) replaces it.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec { method: "GET".into(), headers: Vec::new(), body: Vec::new() }
    }
}

impl RequestSpec {
    /// Whether the response carries no body whatever its headers say (RFC 9110 section 9.3.2).
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    /// Parses a `Name: value` header as given to `-H`.
    pub fn parse_header(raw: &str) -> Result<(String, String), EngineError> {
        let (name, value) = raw.split_once(':').ok_or_else(|| {
            EngineError::Config(format!("invalid header {raw:?}: expected \"Name: value\""))
        })?;
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(EngineError::Config(format!("invalid header name in {raw:?}")));
        }
        let value = value.trim();
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(EngineError::Config(format!("invalid header value in {raw:?}")));
        }
        Ok((name.to_string(), value.to_string()))
    }

    /// Encodes the request line, headers and body. `keepalive: false` asks the server to close
    /// after the response, so each request uses a new connection (ab without -k).
    pub fn encode(&self, target: &Target, keepalive: bool) -> Result<Vec<u8>, EngineError> {
        self.encode_to(target, &target.path, keepalive)
    }

    /// [`RequestSpec::encode`] for another path (and query) of the target: one request of a
    /// mix or of a replayed log.
    pub fn encode_to(
        &self,
        target: &Target,
        path: &str,
        keepalive: bool,
    ) -> Result<Vec<u8>, EngineError> {
        self.check_method()?;
        let user_has = |name: &str| self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let mut out = Vec::with_capacity(128 + path.len() + self.body.len());
        out.extend_from_slice(format!("{} {path} HTTP/1.1\r\n", self.method).as_bytes());
        let defaults = [
            ("Host", target.authority.as_str()),
            ("User-Agent", concat!("loadlab/", env!("CARGO_PKG_VERSION"))),
            ("Accept", "*/*"),
        ];
        for (name, value) in defaults {
            if !user_has(name) {
                push_header(&mut out, name, value);
            }
        }
        if !keepalive && !user_has("Connection") {
            push_header(&mut out, "Connection", "close");
        }
        for (name, value) in &self.headers {
            push_header(&mut out, name, value);
        }
        if !self.body.is_empty() && !user_has("Content-Length") {
            push_header(&mut out, "Content-Length", &self.body.len().to_string());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        Ok(out)
    }
}

impl RequestSpec {
    /// The request's HTTP/2 header fields to `path` (and query) of the target, in order (RFC
    /// 9113 section 8.3: the pseudo-header fields first, names in lower case, `Host` carried as
    /// `:authority`), checked against what HTTP/2 forbids; [`crate::h2::Requests`] encodes them.
    pub fn h2_fields(
        &self,
        target: &Target,
        path: &str,
    ) -> Result<Vec<crate::h2::request::Field>, EngineError> {
        self.check_method()?;
        let user = |name: &str| {
            self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
        };
        let scheme = if target.tls { "https" } else { "http" };
        let authority = user("host").map_or(target.authority.as_str(), String::as_str);
        let mut fields = Vec::with_capacity(6 + self.headers.len());
        let mut put = |name: &str, value: &str| fields.push((name.to_string(), value.to_string()));
        put(":method", &self.method);
        put(":scheme", scheme);
        put(":authority", authority);
        put(":path", path);
        let agent = concat!("loadlab/", env!("CARGO_PKG_VERSION"));
        for (name, value) in [("user-agent", agent), ("accept", "*/*")] {
            if user(name).is_none() {
                put(name, value);
            }
        }
        for (name, value) in &self.headers {
            let name = name.to_ascii_lowercase();
            // Connection-specific fields have no place in HTTP/2 (RFC 9113 section 8.2.2).
            let banned = ["connection", "keep-alive", "proxy-connection", "transfer-encoding"];
            if banned.contains(&name.as_str()) || name == "upgrade" {
                return Err(EngineError::Config(format!(
                    "header {name} is not allowed in HTTP/2 (RFC 9113 section 8.2.2)"
                )));
            }
            if name == "te" && !value.eq_ignore_ascii_case("trailers") {
                return Err(EngineError::Config(
                    "header te may only be \"trailers\" in HTTP/2 (RFC 9113 section 8.2.2)".into(),
                ));
            }
            if name != "host" {
                put(&name, value);
            }
        }
        if !self.body.is_empty() && user("content-length").is_none() {
            put("content-length", &self.body.len().to_string());
        }
        Ok(fields)
    }
}

impl RequestSpec {
    fn check_method(&self) -> Result<(), EngineError> {
        if self.method.is_empty() || !self.method.bytes().all(is_token_byte) {
            return Err(EngineError::Config(format!("invalid method {:?}", self.method)));
        }
        Ok(())
    }

    /// Whether `method` is a method name (an RFC 9110 token).
    pub fn is_method(method: &str) -> bool {
        !method.is_empty() && method.bytes().all(is_token_byte)
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// RFC 9110 section 5.6.2 token characters.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8080/hello.txt?a=1").unwrap()
    }

    #[test]
    fn default_get() {
        let bytes = RequestSpec::default().encode(&target(), true).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(
            text,
            format!(
                "GET /hello.txt?a=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: loadlab/{}\r\n\
                 Accept: */*\r\n\r\n",
                env!("CARGO_PKG_VERSION")
            )
        );
    }

    #[test]
    fn post_with_body_headers_and_close() {
        let spec = RequestSpec {
            method: "POST".into(),
            headers: vec![
                RequestSpec::parse_header("host: example.test").unwrap(),
                RequestSpec::parse_header("X-A:  b c ").unwrap(),
            ],
            body: b"{}".to_vec(),
        };
        let text = String::from_utf8(spec.encode(&target(), false).unwrap()).unwrap();
        assert!(text.starts_with("POST /hello.txt?a=1 HTTP/1.1\r\n"), "{text}");
        assert!(!text.contains("Host: 127.0.0.1"), "{text}");
        assert!(text.contains("host: example.test\r\n"));
        assert!(text.contains("X-A: b c\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("Content-Length: 2\r\n\r\n{}"), "{text}");
    }

    #[test]
    fn rejects_bad_headers_and_methods() {
        assert!(RequestSpec::parse_header("no colon").is_err());
        assert!(RequestSpec::parse_header("Bad Name: x").is_err());
        assert!(RequestSpec::parse_header("X: a\r\nInjected: 1").is_err());
        let spec = RequestSpec { method: "GE T".into(), ..RequestSpec::default() };
        assert!(spec.encode(&target(), true).is_err());
    }
}
