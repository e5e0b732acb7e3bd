//! In-process HTTP/1.1 test servers on std::net (one thread per connection): [`TestServer`]
//! answers as its [`Behaviour`] says, from well-formed to hostile, and counts what it received.

mod request;
mod respond;

pub use request::Request;
pub use respond::{NO_BODY_ADVERTISED_LEN, VARYING_LENGTHS};

use std::collections::HashMap;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Requests a [`TestServer`] keeps for [`TestServer::received`]: enough for any test here,
/// bounded so that a long run cannot grow the test's memory without end.
pub const MAX_LOGGED: usize = 200_000;

/// How a [`TestServer`] answers each request it has read in full.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// A normal keep-alive response framed by Content-Length.
    Fixed { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// `Transfer-Encoding: chunked`, one chunk per entry (empty entries are skipped, since a
    /// zero-size chunk would end the body), with optional chunk extensions and trailer fields.
    Chunked { chunks: Vec<Vec<u8>>, extensions: bool, trailers: bool },
    /// 200 with neither Content-Length nor Transfer-Encoding: the body ends when the
    /// connection does (RFC 9112 §6.3, rule 8).
    CloseDelimited { body: Vec<u8> },
    /// An `HTTP/1.0 200 OK` with Content-Length, then the connection closes.
    Http10 { body: Vec<u8> },
    /// Waits `delay` before answering each request like `Fixed` 200.
    Slow { delay: Duration, body: Vec<u8> },
    /// Declares `Content-Length: declared`, sends only `sent` body bytes, then closes.
    Truncated { declared: usize, sent: usize },
    /// Reads the request, then aborts the connection (SO_LINGER 0) so the client sees a RST.
    Reset,
    /// Reads the request, answers with bytes that are not HTTP, then closes.
    Garbage,
    /// Reads requests and never answers; connections stay open until the server is dropped.
    Silent,
    /// A chunked response that never ends, until the client goes away or the server drops.
    EndlessChunked,
    /// A response that has no body: `status` (e.g. 204, 304) without one, and for HEAD
    /// requests a 200 advertising [`NO_BODY_ADVERTISED_LEN`] bytes that are not sent.
    NoBody { status: u16 },
    /// Two Content-Length fields with different values (RFC 9112 §6.3 rule 5: unrecoverable).
    ConflictingLength,
    /// An interim `100 Continue` before the final 200.
    Interim,
    /// 200s whose body length cycles through [`VARYING_LENGTHS`].
    Varying,
    /// Cycles through these status codes, one per request (shared across connections).
    StatusCycle(Vec<u16>),
    /// A server that stalls: in the middle of every `period` (counted from the server's start)
    /// lies a window of length `pause` during which no response goes out; a request read
    /// inside it is answered, like `Fixed` 200, when the window ends. A garbage collector or
    /// a stalled disk, as coordinated-omission tests need.
    Freeze { period: Duration, pause: Duration, body: Vec<u8> },
    /// A server of known capacity: responses (`Fixed` 200) leave at most `per_second` times a
    /// second across all connections, one every 1/`per_second` s; requests beyond that wait
    /// their turn. Time the server spends idle is not saved up, so it never bursts.
    Capacity { per_second: f64, body: Vec<u8> },
    /// A site with a login (visits' tests): `/login` sets the cookie `sid=sN` (N the request's
    /// index) and puts the token `tN` in its body (`name="token" value="tN"`); `/private`
    /// answers 200 `secret` only to a request carrying that cookie and its token, in an
    /// `X-Token` header or a `token=` form field, else 403; any other path 200 `page`.
    Login,
}

impl Behaviour {
    /// A keep-alive `200 OK` with this body.
    pub fn ok(body: impl Into<Vec<u8>>) -> Behaviour {
        Behaviour::Fixed { status: 200, headers: Vec::new(), body: body.into() }
    }
}

/// A server on 127.0.0.1 (OS-chosen port) that stops when dropped: the accept loop and every
/// connection thread are woken and joined, so no test leaves threads or sockets behind.
pub struct TestServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Kept only to wake the accept loop on drop if the self-connect fails.
    listener: TcpListener,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    behaviour: Behaviour,
    shutdown: AtomicBool,
    requests: AtomicU64,
    connections: AtomicU64,
    last_request: Mutex<Option<Request>>,
    /// Every request read in full, with when its last byte arrived, up to [`MAX_LOGGED`].
    log: Mutex<Vec<(Instant, Request)>>,
    /// The peer address of every accepted connection, in order.
    peers: Mutex<Vec<IpAddr>>,
    clock: respond::Clock,
    live: Mutex<Live>,
}

/// Connections still open: a clone of each stream, so drop can shut it down and wake a thread
/// blocked in read or write, and the threads to join.
#[derive(Default)]
struct Live {
    next_id: u64,
    streams: HashMap<u64, TcpStream>,
    threads: Vec<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(behaviour: Behaviour) -> TestServer {
        TestServer::start_on("127.0.0.1:0", behaviour).expect("bind 127.0.0.1:0")
    }

    /// Like [`TestServer::start`], on another local address (such as `[::1]:0`); Err when it
    /// cannot be bound, e.g. where IPv6 is disabled.
    pub fn start_on(bind: &str, behaviour: Behaviour) -> std::io::Result<TestServer> {
        let listener = TcpListener::bind(bind)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            behaviour,
            shutdown: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            last_request: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            peers: Mutex::new(Vec::new()),
            clock: respond::Clock::new(),
            live: Mutex::new(Live::default()),
        });
        let accept_listener = listener.try_clone().expect("clone listener");
        let accept_shared = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name(format!("test-server-{}", addr.port()))
            .spawn(move || accept_loop(&accept_listener, &accept_shared))
            .expect("spawn accept thread");
        Ok(TestServer { addr, shared, listener, accept: Some(accept) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (`127.0.0.1:PORT`, or `[::1]:PORT` and the like) followed by `path` (a
    /// leading `/` is added if missing).
    pub fn url(&self, path: &str) -> String {
        let slash = if path.starts_with('/') { "" } else { "/" };
        format!("http://{}{slash}{path}", self.addr)
    }

    /// Requests read in full so far (counted before the answer, whatever the behaviour).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// The source address of each connection accepted so far (the client's bound address).
    pub fn peers(&self) -> Vec<IpAddr> {
        lock(&self.shared.peers).clone()
    }

    /// The most recent request read in full, to check what the client sent.
    pub fn last_request(&self) -> Option<Request> {
        lock(&self.shared.last_request).clone()
    }

    /// Every request read in full so far (up to [`MAX_LOGGED`]), in the order they arrived,
    /// with when each arrived: which paths a mix asked for and when a replay sent them.
    pub fn received(&self) -> Vec<(Instant, Request)> {
        lock(&self.shared.log).clone()
    }

    /// How many requests asked for each target (path and query) so far.
    pub fn targets(&self) -> HashMap<String, u64> {
        let mut counts = HashMap::new();
        for (_, r) in lock(&self.shared.log).iter() {
            *counts.entry(r.target.clone()).or_insert(0) += 1;
        }
        counts
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        // accept() has no timeout, so a connection of our own wakes it; should that fail,
        // shutting the listening socket down makes a blocked accept return EINVAL on Linux.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_err() {
            let _ = socket2::SockRef::from(&self.listener).shutdown(Shutdown::Both);
        }
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        // The accept loop has ended, so nothing registers after this take.
        let live = std::mem::take(&mut *lock(&self.shared.live));
        for stream in live.streams.values() {
            // Wakes a thread blocked in read (it sees EOF) or in write (EPIPE).
            let _ = stream.shutdown(Shutdown::Both);
        }
        for thread in live.threads {
            let _ = thread.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.shutdown.load(Ordering::SeqCst) {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(_) => {
                // EMFILE and the like: back off instead of spinning, then look at the flag.
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if shared.shutdown.load(Ordering::SeqCst) {
            break;
        }
        lock(&shared.peers).push(peer.ip());
        shared.connections.fetch_add(1, Ordering::SeqCst);
        // Separate writes then leave as separate segments, so clients meet split responses.
        let _ = stream.set_nodelay(true);
        let Ok(clone) = stream.try_clone() else { continue };
        let mut live = lock(&shared.live);
        live.threads.retain(|t| !t.is_finished());
        let id = live.next_id;
        live.next_id += 1;
        live.streams.insert(id, clone);
        let conn_shared = Arc::clone(shared);
        let spawned = thread::Builder::new().name(format!("test-conn-{id}")).spawn(move || {
            serve_connection(&conn_shared, stream);
            lock(&conn_shared.live).streams.remove(&id);
        });
        match spawned {
            Ok(handle) => live.threads.push(handle),
            Err(_) => drop(live.streams.remove(&id)),
        }
    }
}

fn serve_connection(shared: &Shared, mut stream: TcpStream) {
    let mut reader = request::RequestReader::default();
    while !shared.shutdown.load(Ordering::SeqCst) {
        let request = match reader.read(&mut stream) {
            Ok(Some(request)) => request,
            Ok(None) | Err(_) => return,
        };
        let arrived = Instant::now();
        let index = shared.requests.fetch_add(1, Ordering::SeqCst);
        *lock(&shared.last_request) = Some(request.clone());
        {
            let mut log = lock(&shared.log);
            if log.len() < MAX_LOGGED {
                log.push((arrived, request.clone()));
            }
        }
        let answered = respond::answer(
            &shared.behaviour,
            &request,
            index,
            &mut stream,
            &shared.shutdown,
            &shared.clock,
        );
        match answered {
            Ok(respond::After::Hold) => {}
            Ok(respond::After::KeepAlive) if !request.wants_close() => {}
            Ok(respond::After::KeepAlive | respond::After::Close) => {
                close_gracefully(&stream);
                return;
            }
            Ok(respond::After::Reset) => {
                // SO_LINGER with a zero timeout makes close() send RST and drop unsent data.
                let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                return;
            }
            Err(_) => return,
        }
    }
}

/// Closes after a response without losing it: Linux answers a close() that leaves unread bytes
/// in the receive queue with RST (RFC 2525 §2.17), which can destroy data the client has not
/// read yet. So half-close, then drain until the client closes too (bounded by a timeout).
fn close_gracefully(stream: &TcpStream) {
    use std::io::Read;
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut sink = [0u8; 4096];
    for _ in 0..256 {
        match (&*stream).read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on: connecting to it is refused.
///
/// The port stays bound, by a socket that never listens, until the test process exits: a
/// port merely bound and released could be handed by the kernel to a test server of another
/// test running at the same time, and then the connection would not be refused. The socket
/// does not set SO_REUSEADDR, so no other socket can bind the port while it is held.
pub fn closed_port() -> u16 {
    static HELD: Mutex<Vec<socket2::Socket>> = Mutex::new(Vec::new());
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("TCP socket");
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    socket.bind(&any_port.into()).expect("bind 127.0.0.1:0");
    let port =
        socket.local_addr().expect("local_addr").as_socket().expect("an inet address").port();
    lock(&HELD).push(socket);
    port
}

/// A panicking connection thread must not take every later assertion down with it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
