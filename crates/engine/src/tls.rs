//! TLS for `https://` targets: the rustls client configuration a run shares (trust roots,
//! ALPN, session resumption), the stream that carries HTTP/1.1 through it on the event loop,
//! and the one blocking handshake of the preflight. rustls is sans-I/O: it is fed what the
//! socket gives and asked what to send, so it sits on the same edge-triggered loop as plain
//! TCP.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mio::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};

/// How a run speaks TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any certificate (`--insecure`): for self-signed test servers only.
    pub insecure: bool,
    /// Trust this PEM file's certificates instead of the system's (`--cacert`).
    pub cacert: Option<PathBuf>,
    /// Resume sessions across a run's connections (off: `--no-tls-resume`, a full handshake
    /// for every connection).
    pub resume: bool,
    /// Offer only this version (`--tls-version 1.2` or `1.3`); both when `None`.
    pub version: Option<TlsVersion>,
}

/// What a connection's handshake settled on, as the run reports it (h2load's `TLS Protocol`,
/// `Cipher`, `Server Temp Key` and `Application protocol` lines), named as IANA and OpenSSL
/// name them. Serialized as `bench --format json`'s `tls`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Negotiated {
    /// `TLSv1.3`, `TLSv1.2`.
    pub version: String,
    /// `TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`.
    pub cipher: String,
    /// The key exchange group: `X25519`, `secp256r1`.
    pub group: Option<String>,
    /// The protocol ALPN chose: `http/1.1`, `h2`; `None` when the server chose none.
    pub alpn: Option<String>,
}

impl Negotiated {
    pub(crate) fn of(tls: &ClientConnection) -> Option<Negotiated> {
        let version = match tls.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
            other => format!("{other:?}"),
        };
        let suite = tls.negotiated_cipher_suite()?.suite();
        // rustls names TLS 1.3's suites TLS13_*; IANA (and OpenSSL, h2load, curl) TLS_*.
        let cipher = suite.as_str().map_or_else(
            || format!("{suite:?}"),
            |s| s.strip_prefix("TLS13_").map_or_else(|| s.to_string(), |r| format!("TLS_{r}")),
        );
        let group = tls.negotiated_key_exchange_group().map(|g| {
            let name = g.name();
            name.as_str().map_or_else(|| format!("{name:?}"), str::to_string)
        });
        let alpn = tls.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
        Some(Negotiated { version, cipher, group, alpn })
    }
}

/// A TLS protocol version a run may be held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// A TLS failure, kept as the reason of the `tls` error class (the alert, or why the
/// certificate was refused).
#[derive(Debug)]
pub struct TlsFailure(pub String);

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsFailure {}

fn failure(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TlsFailure(e.to_string()))
}

/// The reason of a TLS failure, when `err` is one.
pub fn reason(err: &io::Error) -> Option<&str> {
    err.get_ref().and_then(|e| e.downcast_ref::<TlsFailure>()).map(|f| f.0.as_str())
}

/// The client configuration every connection of a run shares, so that sessions resume across
/// them. Trust: `cacert`'s certificates, else the system's (`/etc/ssl/certs`).
pub fn client_config(opts: &TlsOptions, h2: bool) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match opts.version {
        None => rustls::DEFAULT_VERSIONS,
        Some(TlsVersion::Tls12) => &[&rustls::version::TLS12],
        Some(TlsVersion::Tls13) => &[&rustls::version::TLS13],
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| e.to_string())?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        match &opts.cacert {
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
                for cert in certs {
                    let cert = cert.map_err(|e| format!("--cacert {}: {e}", path.display()))?;
                    roots.add(cert).map_err(|e| format!("--cacert {}: {e}", path.display()))?;
                }
                if roots.is_empty() {
                    return Err(format!("--cacert {}: no certificate in it", path.display()));
                }
            }
            None => {
                // Certificates the system store holds but webpki cannot use are skipped.
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    // ALPN (RFC 7301) offers only what the run speaks: `--http2` needs h2 (RFC 9113 section
    // 3.2), and a server that does not choose it cannot carry the run.
    config.alpn_protocols = vec![if h2 { b"h2".to_vec() } else { b"http/1.1".to_vec() }];
    if !opts.resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(Arc::new(config))
}

/// The server name to send (SNI) and to verify: the URL's host.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string())
        .map_err(|e| format!("{host}: not a TLS server name: {e}"))
}

/// One handshake, blocking, before any load: a certificate the run cannot trust is said once,
/// with its reason, instead of failing every request.
pub fn preflight(
    addr: SocketAddr,
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
    timeout: Duration,
    h2: bool,
) -> Result<(), String> {
    let mut tcp =
        std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let mut conn = ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(|e| match reason(&e) {
            Some(r) => format!("TLS: {r}"),
            // rustls's own error, as complete_io gives it: "invalid peer certificate: ...".
            None if e.to_string().starts_with("invalid peer certificate") => {
                untrusted(&e.to_string())
            }
            // RFC 7301 section 3.2: the alert a server sends when it has none of the protocols
            // offered.
            None if h2 && e.to_string().contains("NoApplicationProtocol") => {
                format!("TLS: the server does not speak h2 (no ALPN protocol in common: {e})")
            }
            None if e.kind() == io::ErrorKind::WouldBlock
                || e.kind() == io::ErrorKind::TimedOut =>
            {
                format!("TLS: no handshake within {timeout:?}")
            }
            None => format!("TLS: {e}"),
        })?;
    }
    let chosen = conn.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
    conn.send_close_notify();
    let _ = conn.complete_io(&mut tcp);
    match chosen {
        Some(p) if h2 && p != "h2" => Err(format!("TLS: the server chose {p} by ALPN, not h2")),
        None if h2 => Err("TLS: the server did not select h2 by ALPN (no HTTP/2)".into()),
        _ => Ok(()),
    }
}

/// The preflight's words for a certificate the run does not trust: the server was reached
/// and answered, and what to pass (`--cacert FILE` is what [`UNTRUSTED_CA`] stands for, so
/// that a caller who knows the CA can name it).
fn untrusted(reason: &str) -> String {
    format!(
        "TLS: reached the server, but its certificate is not trusted ({reason}): pass \
         {UNTRUSTED_CA}, or --insecure to accept any certificate"
    )
}

/// The flag an untrusted certificate's message names, with FILE for the CA.
pub const UNTRUSTED_CA: &str = "--cacert FILE with the CA that signed it";

/// HTTP/1.1 over TLS on a non-blocking socket (`S`: the connection's TCP stream; the tests'
/// own socket in memory).
#[derive(Debug)]
pub(crate) struct TlsStream<S = TcpStream> {
    pub tcp: S,
    tls: ClientConnection,
    /// An error met after some plaintext was already read: given by the next read.
    pending: Option<io::Error>,
    /// The data ended (close_notify, or the TCP stream's end) after plaintext that a read
    /// returned: the next read gives the end.
    ended: bool,
    /// The socket's last read returned less than rustls offered it: the socket was empty
    /// then, and an edge-triggered event comes for whatever arrives after.
    drained: bool,
}

impl<S: Read + Write> TlsStream<S> {
    pub fn new(
        tcp: S,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<TlsStream<S>> {
        let tls = ClientConnection::new(config, name).map_err(failure)?;
        Ok(TlsStream { tcp, tls, pending: None, ended: false, drained: false })
    }

    /// The handshake is over: application data flows.
    pub fn handshaken(&self) -> bool {
        !self.tls.is_handshaking()
    }

    /// The server chose h2 by ALPN.
    pub fn alpn_h2(&self) -> bool {
        self.tls.alpn_protocol() == Some(b"h2")
    }

    /// What the handshake settled on; `None` before it ends.
    pub fn negotiated(&self) -> Option<Negotiated> {
        Negotiated::of(&self.tls)
    }

    /// The data ended behind what the last read returned: a short read then does not mean
    /// the socket is drained, and the end is for the next read to give. A close_notify ends
    /// the data with the TCP connection still open, so no event would come for it.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The handshake resumed an earlier session.
    pub fn resumed(&self) -> bool {
        self.tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
    }

    /// Sends what rustls holds for the peer, as far as the socket takes it; the rest waits for
    /// the next writable event.
    pub fn flush_tls(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl<S: Read + Write> TlsStream<S> {
    /// An idle keep-alive connection became readable: takes what came. Session tickets
    /// (TLS 1.3 sends them after the handshake) leave it usable; data, the end, an alert or a
    /// broken record do not.
    pub fn idle_ok(&mut self) -> bool {
        loop {
            match self.tls.read_tls(&mut self.tcp) {
                Ok(0) => return false,
                Ok(_) => {
                    if self.tls.process_new_packets().is_err() {
                        return false;
                    }
                    let mut probe = [0u8; 1];
                    match self.tls.reader().read(&mut probe) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        _ => return false,
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
    }
}

impl<S: Read + Write> Read for TlsStream<S> {
    /// Plaintext, as much as `buf` takes: a read shorter than `buf` means the socket and
    /// rustls are both empty, as a short read of a TCP socket does, which is what the worker's
    /// edge-triggered loop relies on to stop reading (no new event comes for bytes already in
    /// the socket). One record's plaintext (16 KB at most, RFC 8446 section 5.1) is not that:
    /// stopping after it stalled every response longer than a record until its timeout. A
    /// socket read shorter than what rustls offered already drained the socket, as a short
    /// TCP read does: asking it again would only cost a `recvfrom` that answers EAGAIN, once
    /// per response. `WouldBlock` when nothing came at all.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if self.ended {
            return Ok(0);
        }
        self.drained = false;
        let mut filled = 0;
        while filled < buf.len() {
            match self.read_record(&mut buf[filled..]) {
                Ok(0) => {
                    self.ended = filled > 0;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if filled == 0 => return Err(e),
                Err(e) => {
                    if e.kind() != io::ErrorKind::WouldBlock {
                        self.pending = Some(e);
                    }
                    break;
                }
            }
        }
        Ok(filled)
    }
}

impl<S: Read + Write> TlsStream<S> {
    /// Plaintext, reading and decrypting records as needed; `WouldBlock` when the socket has
    /// nothing more. The end of the TCP stream reads as the end of the data whether or not a
    /// close_notify came first (many servers close without one): the HTTP parser then says
    /// whether the response was whole.
    fn read_record(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.drained => return Err(e),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            let mut socket = Drain { tcp: &mut self.tcp, short: false };
            let got = self.tls.read_tls(&mut socket)?;
            self.drained = socket.short;
            if let Err(e) = self.tls.process_new_packets() {
                // The alert rustls queued for the peer goes out if it can.
                let _ = self.flush_tls();
                return Err(failure(e));
            }
            // Handshake replies, and the request held back until the handshake ended.
            self.flush_tls()?;
            if got == 0 {
                // EOF: the reader now answers Ok(0) or UnexpectedEof, both the end.
                continue;
            }
        }
    }
}

/// The socket as rustls reads it, noting whether a read came back short of what it was offered.
struct Drain<'a, S> {
    tcp: &'a mut S,
    short: bool,
}

impl<S: Read> Read for Drain<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.tcp.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

impl<S: Read + Write> Write for TlsStream<S> {
    /// Takes plaintext into rustls (held until the handshake ends) and sends what it can.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.tls.writer().write(buf)?;
        self.flush_tls()?;
        if n == 0 && !buf.is_empty() {
            // rustls's buffer is full until the socket takes more.
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_tls()
    }
}

/// `--insecure`: any certificate is accepted; the handshake's signatures are still checked,
/// so the connection is encrypted to whoever holds the certificate's key.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    /// A socket in memory: what the server sent waits in `input`, what the client writes goes
    /// to `output`, and `reads` counts the reads asked of it (each one a `recvfrom`).
    #[derive(Default)]
    struct Socket {
        input: Vec<u8>,
        output: Vec<u8>,
        reads: usize,
    }

    impl Read for Socket {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            if self.input.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.input.len());
            buf[..n].copy_from_slice(&self.input[..n]);
            self.input.drain(..n);
            Ok(n)
        }
    }

    impl Write for Socket {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A client stream handshaken with a rustls server in memory, and that server.
    fn connected() -> (TlsStream<Socket>, rustls::ServerConnection) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(server_config)).unwrap();
        let opts = TlsOptions { insecure: true, resume: true, ..Default::default() };
        let config = client_config(&opts, false).unwrap();
        let name = server_name("localhost").unwrap();
        let mut client = TlsStream::new(Socket::default(), config, name).unwrap();
        let mut buf = [0u8; 64];
        // Each flight one way, then the other; a TLS 1.3 handshake takes two round trips.
        for _ in 0..10 {
            client.flush_tls().unwrap();
            let out = std::mem::take(&mut client.tcp.output);
            server.read_tls(&mut &out[..]).unwrap();
            server.process_new_packets().unwrap();
            while server.wants_write() {
                server.write_tls(&mut client.tcp.input).unwrap();
            }
            // Handshake records, then session tickets: no plaintext, the socket drained.
            let read = client.read(&mut buf);
            assert_eq!(read.unwrap_err().kind(), io::ErrorKind::WouldBlock);
            if client.handshaken() && !server.is_handshaking() && client.tcp.input.is_empty() {
                return (client, server);
            }
        }
        panic!("no handshake after 10 flights");
    }

    /// The server sends `body` as records of application data.
    fn send(server: &mut rustls::ServerConnection, to: &mut Socket, body: &[u8]) {
        server.writer().write_all(body).unwrap();
        while server.wants_write() {
            server.write_tls(&mut to.input).unwrap();
        }
    }

    /// A response the socket holds whole is read with one socket read: the read that came
    /// back short of what rustls offered emptied the socket, as a short TCP read does, and a
    /// second would only be told EAGAIN.
    #[test]
    fn a_response_in_the_socket_costs_one_socket_read() {
        let (mut client, mut server) = connected();
        let response = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nhello, world!";
        let mut buf = vec![0u8; 64 * 1024];
        for _ in 0..3 {
            send(&mut server, &mut client.tcp, response);
            client.tcp.reads = 0;
            let n = client.read(&mut buf).unwrap();
            assert_eq!(&buf[..n], response);
            assert_eq!(client.tcp.reads, 1, "socket reads for one response");
            // Nothing came since: the edge-triggered loop waits for the next event.
            assert_eq!(client.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        }
    }

    /// A response of several records, all in the socket, is read whole by one read: the
    /// socket is read on while it fills what rustls offers (RFC 8446 section 5.1: 16 KB of
    /// plaintext a record at most).
    #[test]
    fn a_response_of_several_records_is_read_whole() {
        let (mut client, mut server) = connected();
        let body: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        send(&mut server, &mut client.tcp, &body);
        let mut buf = vec![0u8; 64 * 1024];
        let n = client.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], &body[..]);
        assert!(client.tcp.input.is_empty());
        assert_eq!(client.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
    }
}
