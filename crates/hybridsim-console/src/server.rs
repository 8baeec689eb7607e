//! The console's server: one thread accepts connections (std `TcpListener`, HTTP/1.1, one
//! short-lived thread per request), one pump thread reads the snapshot ring every
//! [`UPDATE_PERIOD`] and sends each browser the update as a Server-Sent Event through a
//! bounded queue of its own. A browser that does not read fills its queue and loses updates
//! (counted); one that stays blocked past [`WRITE_TIMEOUT`] is disconnected. Nothing here can
//! slow the run: the run loop only ever touches the ring.
//!
//! Routes: `GET /` (the page), `GET /console.js`, `GET /events` (the event stream: `init`,
//! then `update` messages), `GET /api/state` (the latest update as JSON), `POST
//! /api/stop?step=arm` (answers a one-time code) and `POST /api/stop?step=confirm&code=…`
//! (within [`CONFIRM_WINDOW`] of the arming: requests the safe stop). With a token the two
//! stop requests need the header `X-Console-Token` or `token=` in the query.

use crate::ring::SnapshotReader;
use crate::state::State;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Period of the updates sent to the browsers.
pub const UPDATE_PERIOD: Duration = Duration::from_millis(100);
/// How long a browser may block a write before it is disconnected.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long after arming the stop a confirmation is accepted.
pub const CONFIRM_WINDOW: Duration = Duration::from_secs(15);
/// Updates queued per browser before further ones are dropped.
const CLIENT_QUEUE: usize = 16;
/// Connections served at once; more are answered 503.
const MAX_CONNECTIONS: usize = 32;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const CONSOLE_JS: &str = include_str!("../assets/console.js");

/// What requests the safe stop (the front end's Ctrl-C flag).
pub type StopRequest = Arc<dyn Fn() + Send + Sync>;

/// Options of [`Console::start`].
#[derive(Clone, Default)]
pub struct ConsoleOptions {
    /// Address to listen on (port 0: any free port, see [`Console::addr`]).
    pub addr: Option<SocketAddr>,
    /// Token the stop requests must carry. Required when `addr` is not a loopback address.
    pub token: Option<String>,
    /// The safe stop; `None`: the page offers no controls (a replay).
    pub stop: Option<StopRequest>,
}

/// Errors that keep the console from starting.
#[derive(Debug)]
pub enum ConsoleError {
    /// A non-loopback address without a token.
    TokenRequired(SocketAddr),
    /// The address could not be bound.
    Bind(SocketAddr, std::io::Error),
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsoleError::TokenRequired(a) => write!(
                f,
                "--console {a}: the console listens beyond this machine (not a loopback \
                 address), so its stop control needs a token: add --console-token TOKEN"
            ),
            ConsoleError::Bind(a, e) => write!(f, "--console {a}: cannot listen: {e}"),
        }
    }
}

impl std::error::Error for ConsoleError {}

struct Client {
    tx: SyncSender<Arc<str>>,
    fresh: bool,
}

struct Shared {
    state: Mutex<State>,
    clients: Mutex<Vec<Client>>,
    latest: Mutex<Arc<str>>,
    lost: AtomicU64,
    connections: AtomicUsize,
    shutdown: AtomicBool,
    token: Option<String>,
    stop: Option<StopRequest>,
    armed: Mutex<Option<(u64, Instant)>>,
    stop_requested: AtomicBool,
    dropped: AtomicU64,
    /// The tap is gone and everything it wrote has been sent.
    drained: AtomicBool,
}

/// A running console.
pub struct Console {
    addr: SocketAddr,
    shared: Arc<Shared>,
    pump: Option<std::thread::JoinHandle<()>>,
}

fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

impl Console {
    /// Listen on `opts.addr` (default 127.0.0.1:0) and serve the run whose records `reader`
    /// receives. Refuses a non-loopback address without a token.
    pub fn start(
        reader: SnapshotReader,
        state: State,
        opts: ConsoleOptions,
    ) -> Result<Console, ConsoleError> {
        let addr = opts
            .addr
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        if !is_loopback(&addr) && opts.token.as_deref().is_none_or(str::is_empty) {
            return Err(ConsoleError::TokenRequired(addr));
        }
        let listener = TcpListener::bind(addr).map_err(|e| ConsoleError::Bind(addr, e))?;
        let bound = listener
            .local_addr()
            .map_err(|e| ConsoleError::Bind(addr, e))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            clients: Mutex::new(Vec::new()),
            latest: Mutex::new(Arc::from("{}")),
            lost: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            token: opts.token.filter(|t| !t.is_empty()),
            stop: opts.stop,
            armed: Mutex::new(None),
            stop_requested: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            drained: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("hybridsim-console-accept".into())
            .spawn(move || accept_loop(listener, s))
            .expect("spawn console thread");
        let s = shared.clone();
        let pump = std::thread::Builder::new()
            .name("hybridsim-console-pump".into())
            .spawn(move || pump_loop(reader, s))
            .expect("spawn console thread");
        Ok(Console {
            addr: bound,
            shared,
            pump: Some(pump),
        })
    }

    /// The address it listens on (the port chosen when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Browsers connected to the event stream now.
    pub fn browsers(&self) -> usize {
        self.shared.clients.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Wait until a browser is connected to the event stream, at most `timeout`; returns
    /// whether one is.
    pub fn wait_for_browser(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while self.browsers() == 0 {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Whether a browser confirmed the stop.
    pub fn stop_requested(&self) -> bool {
        self.shared.stop_requested.load(Ordering::SeqCst)
    }

    /// The run has ended: show its outcome (status, event; `None`: keep what the console
    /// knows), send the last records, and keep
    /// serving for `linger` (so that the page shows the end) before returning.
    pub fn finish(mut self, outcome: Option<Value>, linger: Duration) {
        if let Some(outcome) = outcome {
            if let Ok(mut st) = self.shared.state.lock() {
                st.set_outcome(outcome);
            }
        }
        // Everything the tap wrote reaches the browsers first (the tap is dropped when the
        // run ends; a replay ends when the whole folder has been sent).
        while !self.shared.drained.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(linger);
        self.shared.shutdown.store(true, Ordering::SeqCst);
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
    }
}

fn pump_loop(mut reader: SnapshotReader, shared: Arc<Shared>) {
    loop {
        let next = Instant::now() + UPDATE_PERIOD;
        let finished = reader.finished();
        {
            let Ok(mut st) = shared.state.lock() else {
                return;
            };
            if !st.started() {
                if let Some(layout) = reader.layout() {
                    st.set_layout(layout);
                }
            }
            while reader.drain(4096, |f| st.absorb(f)) == 4096 {}
            let dropped = reader.dropped();
            shared.dropped.store(dropped, Ordering::Relaxed);
            let lost = shared.lost.load(Ordering::Relaxed);
            let update: Arc<str> = Arc::from(sse("update", &st.update(dropped, lost)));
            let mut clients = shared.clients.lock().unwrap_or_else(|e| e.into_inner());
            let mut init: Option<Arc<str>> = None;
            clients.retain_mut(|c| {
                let msg = if c.fresh {
                    c.fresh = false;
                    init.get_or_insert_with(|| Arc::from(sse("init", &st.init(dropped, lost))))
                        .clone()
                } else {
                    update.clone()
                };
                match c.tx.try_send(msg) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_)) => {
                        shared.lost.fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    Err(TrySendError::Disconnected(_)) => false,
                }
            });
            if let Ok(mut l) = shared.latest.lock() {
                *l = Arc::from(
                    update
                        .trim_start_matches("event: update\ndata: ")
                        .trim_end(),
                );
            }
        }
        if finished {
            shared.drained.store(true, Ordering::SeqCst);
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

fn sse(event: &str, body: &Value) -> String {
    format!("event: {event}\ndata: {body}\n\n")
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if shared.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            let mut s = stream;
            let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
            let _ = respond(&mut s, 503, "text/plain", b"too many connections\n");
            continue;
        }
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("hybridsim-console-http".into())
            .spawn(move || {
                let _ = handle(stream, &s);
                s.connections.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

struct Request {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    token: Option<String>,
}

fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut r = BufReader::new(stream.take(16 * 1024));
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut token = None;
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "x-console-token" {
                token = Some(v.trim().to_string());
            } else if k == "content-length" {
                length = v.trim().parse().unwrap_or(0).min(4096);
            }
        }
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body)?;
    let (path, q) = target.split_once('?').unwrap_or((&target, ""));
    let body = String::from_utf8_lossy(&body);
    let query = q
        .split('&')
        .chain(body.split('&'))
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect::<Vec<_>>();
    if token.is_none() {
        token = query
            .iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.clone());
    }
    Ok(Request {
        method,
        path: path.to_string(),
        query,
        token,
    })
}

fn respond(s: &mut TcpStream, code: u16, kind: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        _ => "Service Unavailable",
    };
    write!(
        s,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    s.flush()
}

fn respond_json(s: &mut TcpStream, code: u16, v: &Value) -> std::io::Result<()> {
    respond(s, code, "application/json", v.to_string().as_bytes())
}

/// Compare without an early exit (the time does not tell how much of a guess was right).
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= (a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(1)) as usize;
    }
    diff == 0
}

fn one_time_code() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() >> 12
}

fn handle(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let req = read_request(&stream)?;
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/") | ("GET", "/index.html") => respond(
            &mut stream,
            200,
            "text/html; charset=utf-8",
            INDEX_HTML.as_bytes(),
        ),
        ("GET", "/console.js") => respond(
            &mut stream,
            200,
            "text/javascript; charset=utf-8",
            CONSOLE_JS.as_bytes(),
        ),
        ("GET", "/api/state") => {
            let latest = shared.latest.lock().map(|l| l.clone()).unwrap_or_default();
            respond(&mut stream, 200, "application/json", latest.as_bytes())
        }
        ("GET", "/events") => events(stream, shared),
        ("POST", "/api/stop") => stop(&mut stream, shared, &req),
        (_, "/api/stop") => respond(&mut stream, 405, "text/plain", b"POST only\n"),
        _ => respond(&mut stream, 404, "text/plain", b"not found\n"),
    }
}

fn events(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (tx, rx): (SyncSender<Arc<str>>, Receiver<Arc<str>>) = sync_channel(CLIENT_QUEUE);
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
         Connection: keep-alive\r\n\r\nretry: 1000\n\n"
    )?;
    stream.flush()?;
    shared
        .clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Client { tx, fresh: true });
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(msg) => {
                // A write blocked past WRITE_TIMEOUT fails: the browser is dropped.
                stream.write_all(msg.as_bytes())?;
                stream.flush()?;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if shared.shutdown.load(Ordering::SeqCst) {
                    return Ok(());
                }
                stream.write_all(b": keep-alive\n\n")?;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

fn stop(stream: &mut TcpStream, shared: &Shared, req: &Request) -> std::io::Result<()> {
    let Some(request_stop) = &shared.stop else {
        return respond_json(
            stream,
            409,
            &json!({ "error": "a replay: there is no run to stop" }),
        );
    };
    if let Some(token) = &shared.token {
        if !req.token.as_deref().is_some_and(|t| same(t, token)) {
            return respond_json(
                stream,
                403,
                &json!({ "error": "the stop control needs the console token" }),
            );
        }
    }
    let step = req
        .query
        .iter()
        .find(|(k, _)| k == "step")
        .map(|(_, v)| v.as_str());
    let mut armed = shared.armed.lock().unwrap_or_else(|e| e.into_inner());
    match step {
        Some("arm") => {
            let code = one_time_code();
            *armed = Some((code, Instant::now()));
            respond_json(
                stream,
                200,
                &json!({ "armed": true, "code": code.to_string(),
                         "confirm_within_s": CONFIRM_WINDOW.as_secs_f64() }),
            )
        }
        Some("confirm") => {
            let code = req
                .query
                .iter()
                .find(|(k, _)| k == "code")
                .and_then(|(_, v)| v.parse::<u64>().ok());
            match (*armed, code) {
                (Some((c, at)), Some(given)) if c == given && at.elapsed() <= CONFIRM_WINDOW => {
                    *armed = None;
                    shared.stop_requested.store(true, Ordering::SeqCst);
                    request_stop();
                    respond_json(stream, 200, &json!({ "stopping": true }))
                }
                (Some((_, at)), _) if at.elapsed() > CONFIRM_WINDOW => {
                    *armed = None;
                    respond_json(
                        stream,
                        409,
                        &json!({ "error": "the confirmation came too late: arm the stop again" }),
                    )
                }
                _ => respond_json(
                    stream,
                    409,
                    &json!({ "error": "arm the stop first, then confirm it with its code" }),
                ),
            }
        }
        Some("cancel") => {
            *armed = None;
            respond_json(stream, 200, &json!({ "armed": false }))
        }
        _ => respond_json(
            stream,
            400,
            &json!({ "error": "step must be arm, confirm or cancel" }),
        ),
    }
}
