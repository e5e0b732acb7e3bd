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
    /// `https://`: the connection speaks TLS.
    pub tls: bool,
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
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(EngineError::Config(format!(
                    "{input}: unsupported scheme {other}://, only http:// and https:// are \
                     supported"
                )))
            }
        };
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
        let default_port = if tls { 443 } else { 80 };
        let port = url.port_or_known_default().unwrap_or(default_port);
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let authority = if port == default_port { host.clone() } else { format!("{host}:{port}") };
        Ok(Target { url: input.to_string(), host, port, path, tls, authority, addrs: Vec::new() })
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
        for bad in ["ftp://x/", "127.0.0.1:80/", "http://", "http://:80/"] {
            let e = Target::parse(bad).unwrap_err();
            assert!(matches!(e, EngineError::Config(_)), "{bad}: {e:?}");
        }
        let e = Target::parse("ftp://example.com/").unwrap_err().to_string();
        assert!(e.contains("only http:// and https://"), "{e}");
    }

    #[test]
    fn https_defaults_to_443_and_says_so_in_no_host_header() {
        let t = Target::parse("https://example.com/x").unwrap();
        assert_eq!((t.tls, t.port, t.authority.as_str()), (true, 443, "example.com"));
        let t = Target::parse("https://example.com:8443/").unwrap();
        assert_eq!((t.tls, t.authority.as_str()), (true, "example.com:8443"));
        assert!(!Target::parse("http://example.com/").unwrap().tls);
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
