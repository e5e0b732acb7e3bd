//! Free ports on 127.0.0.1, asked of the kernel rather than guessed.

use std::net::TcpListener;

use crate::error::{IoContext, Result};

/// `n` distinct ports the kernel just handed out on 127.0.0.1. All listeners are held until
/// every port is known, so the kernel cannot hand out one twice; they are closed on return,
/// and another process may take one before the server binds it: the caller retries with new
/// ports when a server reports its address in use.
pub fn free(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").context(|| "binding 127.0.0.1:0"))
        .collect::<Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr().context(|| "reading a bound port")?.port()))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ports_are_distinct_and_unprivileged() {
        let ports = super::free(4).unwrap();
        for (i, p) in ports.iter().enumerate() {
            assert!(*p >= 1024);
            assert!(!ports[i + 1..].contains(p));
        }
    }
}
