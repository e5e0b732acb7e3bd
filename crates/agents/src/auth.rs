//! The shared secret (`--token-file FILE` or `LOADLAB_TOKEN`) and the challenge-response that
//! opens every rendezvous connection, before any message is read or sent.
//!
//! Agent 0 sends a random 32-byte challenge; the agent answers with its own challenge and
//! HMAC-SHA256(secret, "member" | both challenges); agent 0 checks it (in constant time:
//! `Mac::verify_slice`) and only then proves the secret back the same way. A connection that
//! fails the check is closed with nothing more sent, so that without the secret nobody learns
//! anything of the test or can say anything to it. Fresh challenges on both sides make a
//! recorded answer useless on another connection.

use std::io::{Read, Write};
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::AgentsError;

const NONCE: usize = 32;
const TAG: usize = 32;
/// The shortest secret accepted: 128 bits, if the bytes are random.
pub const MIN_TOKEN: usize = 16;

/// The shared secret.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// The secret from `file` (its content, surrounding whitespace trimmed) or else from the
    /// environment's `LOADLAB_TOKEN` (`env`).
    pub fn load(file: Option<&Path>, env: Option<String>) -> Result<Token, AgentsError> {
        let (bytes, from) =
            match (file, env) {
                (Some(path), _) => {
                    let text = std::fs::read(path).map_err(|e| {
                        AgentsError::Token(format!("--token-file {}: {e}", path.display()))
                    })?;
                    (text, format!("--token-file {}", path.display()))
                }
                (None, Some(v)) => (v.into_bytes(), "LOADLAB_TOKEN".to_string()),
                (None, None) => return Err(AgentsError::Token(
                    "--agents above 1 needs the shared secret: --token-file FILE or LOADLAB_TOKEN"
                        .into(),
                )),
            };
        Token::new(bytes.trim_ascii().to_vec(), &from)
    }

    /// The secret in `file` as text, checked as [`Token::load`] checks it: what a Kubernetes
    /// Secret carries to the agents, refused now rather than in every pod later.
    pub fn read_text(file: &Path) -> Result<String, AgentsError> {
        let token = Token::load(Some(file), None)?;
        let from = file.display();
        String::from_utf8(token.0)
            .map_err(|_| AgentsError::Token(format!("--token-file {from}: the secret is not text")))
    }

    fn new(bytes: Vec<u8>, from: &str) -> Result<Token, AgentsError> {
        if bytes.len() < MIN_TOKEN {
            return Err(AgentsError::Token(format!(
                "{from}: the secret has {} bytes, fewer than {MIN_TOKEN}",
                bytes.len()
            )));
        }
        Ok(Token(bytes))
    }

    fn mac(&self, role: &[u8], ours: &[u8], theirs: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"loadlab-agents/1 ");
        mac.update(role);
        mac.update(ours);
        mac.update(theirs);
        mac
    }
}

/// Agent 0's side: true when the peer proved the secret (and was told agent 0 knows it too).
/// On false the caller closes the connection without a word.
pub fn challenge<S: Read + Write>(stream: &mut S, token: &Token) -> std::io::Result<bool> {
    let ns = nonce()?;
    stream.write_all(&ns)?;
    let mut answer = [0u8; NONCE + TAG];
    stream.read_exact(&mut answer)?;
    let (nc, tag) = answer.split_at(NONCE);
    if token.mac(b"member", &ns, nc).verify_slice(tag).is_err() {
        return Ok(false);
    }
    stream.write_all(&token.mac(b"coordinator", &ns, nc).finalize().into_bytes())?;
    Ok(true)
}

/// An agent's side: true when agent 0 proved the secret back. An agent 0 that did not accept
/// our proof closes the connection: an error (end of file) here.
pub fn respond<S: Read + Write>(stream: &mut S, token: &Token) -> std::io::Result<bool> {
    let mut ns = [0u8; NONCE];
    stream.read_exact(&mut ns)?;
    let nc = nonce()?;
    let mut answer = nc.to_vec();
    answer.extend_from_slice(&token.mac(b"member", &ns, &nc).finalize().into_bytes());
    stream.write_all(&answer)?;
    let mut tag = [0u8; TAG];
    stream.read_exact(&mut tag)?;
    Ok(token.mac(b"coordinator", &ns, &nc).verify_slice(&tag).is_ok())
}

/// 32 bytes from the kernel's random source.
fn nonce() -> std::io::Result<[u8; NONCE]> {
    let mut n = [0u8; NONCE];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut n)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn token(s: &str) -> Token {
        Token::new(s.as_bytes().to_vec(), "test").unwrap()
    }

    #[test]
    fn a_secret_file_is_read_as_text_checked_as_the_agents_check_it() {
        let dir = std::env::temp_dir().join(format!("loadlab-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, short) = (dir.join("good"), dir.join("short"));
        std::fs::write(&good, "0123456789abcdef0123\n").unwrap();
        std::fs::write(&short, "short\n").unwrap();
        assert_eq!(Token::read_text(&good).unwrap(), "0123456789abcdef0123");
        assert!(matches!(Token::read_text(&short), Err(AgentsError::Token(_))));
        assert!(Token::read_text(&dir.join("absent")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Agent 0 with `ours`, an agent with `theirs`, over loopback: (agent 0 accepted, the agent
    /// accepted agent 0, bytes agent 0 sent after its challenge).
    fn handshake(ours: &str, theirs: &str) -> (bool, bool, usize) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let theirs = token(theirs);
        let agent = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
            respond(&mut s, &theirs).unwrap_or(false)
        });
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let ok = challenge(&mut s, &token(ours)).unwrap();
        let sent_after = if ok { TAG } else { 0 };
        drop(s);
        (ok, agent.join().unwrap(), sent_after)
    }

    #[test]
    fn the_same_secret_is_accepted_both_ways() {
        assert_eq!(handshake("0123456789abcdef!", "0123456789abcdef!"), (true, true, TAG));
    }

    #[test]
    fn a_wrong_secret_is_dropped_with_nothing_sent() {
        let (ok, agent_ok, sent) = handshake("0123456789abcdef!", "0123456789abcdefX");
        assert!(!ok && !agent_ok);
        assert_eq!(sent, 0);
    }

    #[test]
    fn a_short_or_missing_secret_is_refused_naming_where_it_came_from() {
        let e = Token::load(None, Some("short".into())).unwrap_err().to_string();
        assert!(e.contains("LOADLAB_TOKEN") && e.contains("fewer than 16"), "{e}");
        let e = Token::load(None, None).unwrap_err().to_string();
        assert!(e.contains("--token-file"), "{e}");
    }
}
