//! The target URL: parsed, checked and resolved once, before the run.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::EngineError;

/// Where requests go: the parts of an `http://` URL that the engine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// The host as written in the URL, brackets kept for IPv6 literals (`[::1]`).
    pub host: String,
    pub port: u16,
    /// Path and query, as sent in the request line.
    pub path: String,
    /// The value of the Host header: the host, plus the port when it is not 80.
    pub authority: String,
    /// Addresses the host resolved to; empty until [`Target::resolve`].
    pub addrs: Vec<SocketAddr>,
}

impl Target {
    /// Parses and checks a URL without resolving it.
    pub fn parse(input: &str) -> Result<Target, EngineError> {
        if !input.contains("://") {
            return Err(EngineError::Config(format!(
                "invalid URL {input:?}: it must start with http:// (for example http://127.0.0.1:8080/)"
            )));
        }
        let url = url::Url::parse(input)
            .map_err(|e| EngineError::Config(format!("invalid URL {input:?}: {e}")))?;
        match url.scheme() {
            "http" => {}
            "https" => {
                return Err(EngineError::Config(format!(
                    "{input}: https:// is not supported yet (TLS comes in a later version); \
                     use an http:// URL"
                )))
            }
            other => {
                return Err(EngineError::Config(format!(
                    "{input}: unsupported scheme {other}://, only http:// is supported"
                )))
            }
        }
        let host = match url.host_str() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => return Err(EngineError::Config(format!("invalid URL {input:?}: no host"))),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EngineError::Config(format!(
                "{input}: credentials in the URL are not supported; send an Authorization header \
                 with -H"
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let authority = if port == 80 { host.clone() } else { format!("{host}:{port}") };
        Ok(Target { url: input.to_string(), host, port, path, authority, addrs: Vec::new() })
    }

    /// Resolves the host once; the run then connects to the first address.
    pub fn resolve(&mut self) -> Result<(), EngineError> {
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = (bare, self.port)
            .to_socket_addrs()
            .map_err(|e| EngineError::Unreachable {
                target: self.authority.clone(),
                reason: format!("cannot resolve {bare}: {e}"),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(EngineError::Unreachable {
                target: self.authority.clone(),
                reason: format!("{bare} resolved to no address"),
            });
        }
        self.addrs = addrs;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_literals() {
        let t = Target::parse("http://localhost:8080/a/b?x=1#frag").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("localhost", 8080, "/a/b?x=1"));
        assert_eq!(t.authority, "localhost:8080");
        let t = Target::parse("http://127.0.0.1").unwrap();
        assert_eq!((t.port, t.path.as_str(), t.authority.as_str()), (80, "/", "127.0.0.1"));
        let t = Target::parse("http://[::1]:9000/x").unwrap();
        assert_eq!((t.host.as_str(), t.authority.as_str()), ("[::1]", "[::1]:9000"));
    }

    #[test]
    fn rejects_what_it_cannot_serve() {
        for bad in ["https://127.0.0.1/", "ftp://x/", "127.0.0.1:80/", "http://", "http://:80/"] {
            let e = Target::parse(bad).unwrap_err();
            assert!(matches!(e, EngineError::Config(_)), "{bad}: {e:?}");
        }
        let e = Target::parse("https://example.com/").unwrap_err().to_string();
        assert!(e.contains("not supported yet"), "{e}");
    }

    #[test]
    fn resolves_literals_without_dns() {
        let mut t = Target::parse("http://[::1]:9000/").unwrap();
        t.resolve().unwrap();
        assert_eq!(t.addrs, vec!["[::1]:9000".parse().unwrap()]);
        let mut t = Target::parse("http://127.0.0.1:1/").unwrap();
        t.resolve().unwrap();
        assert_eq!(t.addrs, vec!["127.0.0.1:1".parse().unwrap()]);
    }
}
