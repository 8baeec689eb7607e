//! A remote site as a transfer system: hybridsim is the *client* of the OpenSees
//! `genericClient` protocol ([`crate::generic_client::protocol`]) and the specimen of a
//! physical substructure lives in another process — OpenSees's `adapter` element or an
//! element server (`hybridsim serve`, OpenFresco's `SimAppElemServer`). This is multi-site
//! hybrid simulation (`lab.transfer = "opensees"`, `docs/multisite.md`).
//!
//! Actuator `k` of the laboratory is basic DOF `k` of the remote element, one to one: the
//! actuators' displacements are sent as the control displacements, the forces come back in the
//! same order. The laboratory's `d = T u` (its actuator coefficients) has already been applied.
//!
//! Every call of the safety layer becomes a fixed sequence of actions:
//!
//! | call | adapter element | element server |
//! |---|---|---|
//! | `measure_at_rest` | 3 (rest position), 10 → [disp, force] | 3 (rest), 10 → force, 5 |
//! | `send(tick)` | 3 (target d) | 3 (d, v, a, t) |
//! | `receive(tick)` | 10 → [disp, force] | 10 → force, 5 |
//! | `hold_sample(tick)` | 3 (last target), 10 | 3 (last target, v = a = 0), 10, 5 |
//! | drop | 99, 99 | 99 |
//!
//! With the adapter element each tick is one analysis step of the remote model: the element
//! takes the target (3) at the start of a step, and at the start of the next one answers the
//! force request (10) with the state of the step just solved — its nodal displacement and the
//! force of its penalty spring `−kb (db − target)`, the remote structure's resisting force. The
//! measured displacement is the remote node's; from an element server it is the commanded one
//! (the server imposes it).
//!
//! What trips the safety layer, and as which event (the message names the peer, the tick and
//! the cause): no reply within `timeout` → `link_timeout`; the connection closed or reset, a
//! failed write → `link_lost`; a reply that is short, of the wrong length or carries NaN or
//! infinite values, a force request without a trial for the tick → `link_protocol`.
//!
//! TCP: `TCP_NODELAY` on, `TCP_QUICKACK` re-armed before and after every `recv` (the OpenSees
//! side leaves Nagle on). UDP (`[lab.link] protocol = "udp"`, element servers only: the adapter
//! element speaks TCP): the `'a'`/`'b'` handshake, then one datagram per vector (split above
//! 9126 bytes). The steady state allocates nothing: the frames are allocated once, waiting uses
//! the socket's timeout, the latency histogram is preallocated.

use crate::generic_client::protocol::{
    self, udp_connect, udp_recv, udp_send, write_full, Action, Frame, Layout, Sizes, UdpReceived,
    MAX_UDP_DATAGRAM,
};
use crate::latency::Latency;
use hybridsim::model::lab::{LinkSettings, RemotePeer, TransferKind};
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferRequest, TransferSystem};
use hybridsim::physical::{EventKind, TransferError};
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

/// How long the connection and the measurement at rest may take at least: the site may
/// still be building its model (nothing is commanded yet, so waiting is safe).
pub const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Tries of the UDP handshake.
const UDP_HANDSHAKE_TRIES: usize = 3;

/// The transport under the site link.
enum Transport {
    Tcp(TcpStream),
    Udp {
        socket: UdpSocket,
        /// One datagram (one byte more than the largest, to see a longer one as such).
        scratch: Vec<u8>,
    },
}

/// Counters of the link, for run.json.
#[derive(Debug, Default, Clone)]
struct Counters {
    frames_sent: u64,
    replies: u64,
    missing_replies: u64,
    malformed: u64,
    stray_datagrams: u64,
}

/// The client end of a remote site ([`TransferSystem`] of `transfer = "opensees"`).
pub struct RemoteSite {
    peer_kind: RemotePeer,
    addr: SocketAddr,
    transport: Transport,
    n: usize,
    sizes: Sizes,
    ctrl: Layout,
    daq: Layout,
    timeout: Duration,
    tx: Frame,
    rx: Frame,
    /// The last target sent (held by `hold_sample`).
    target: Vec<ActuatorCommand>,
    /// Tick of the last trial (3) sent.
    last_trial: Option<u64>,
    /// When that trial was sent.
    trial_at: Instant,
    counters: Counters,
    latency: Latency,
}

/// The name of a peer kind in messages.
fn peer_name(p: RemotePeer) -> &'static str {
    match p {
        RemotePeer::Adapter => "adapter",
        RemotePeer::ElementServer => "element server",
    }
}

/// The size vector hybridsim sends for `n` basic DOFs to `peer`.
///
/// - The adapter element reads only the control displacement (and force) and answers with the
///   measured displacement and force: `(n, 0, 0, 0, 0, n, 0, 0, n, 0, 2n + 1)` — it accepts
///   each of sizes 0, 3, 5, 8 being 0 or `n`.
/// - An element server gets `genericClient`'s sizes `(n, n, n, 0, 1, 0, 0, 0, n, 0, dataSize)`
///   with the smallest `dataSize` that fits a vector and an `n × n` matrix.
pub fn site_sizes(peer: RemotePeer, n: usize) -> Sizes {
    match peer {
        RemotePeer::Adapter => Sizes {
            ctrl: [n, 0, 0, 0, 0],
            daq: [n, 0, 0, n, 0],
            data_size: 2 * n + 1,
        },
        RemotePeer::ElementServer => Sizes::generic_client(n, 1),
    }
}

impl RemoteSite {
    /// Connect to the site of `request` (`transfer = "opensees"`, [`TransferRequest::link`]).
    pub fn connect(request: &TransferRequest) -> Result<Self, TransferError> {
        if request.kind != TransferKind::OpenSees {
            return Err(TransferError::new(format!(
                "a remote site speaks the genericClient protocol (`transfer = \"opensees\"`), \
                 not `{}`",
                request.kind.name()
            )));
        }
        let link = request.link.as_ref().ok_or_else(|| {
            TransferError::new("transfer system `opensees` without [lab.link]".to_string())
        })?;
        Self::open(link, request.actuators.len())
    }

    /// Open the link to the site `settings` describe, for `n` actuators (= basic DOFs).
    pub fn open(settings: &LinkSettings, n: usize) -> Result<Self, TransferError> {
        let peer_kind = settings.peer;
        let what = peer_name(peer_kind);
        let lost = |msg: String| TransferError::of(EventKind::LinkLost, msg);
        if n == 0 {
            return Err(TransferError::new(format!(
                "remote site ({what}): the laboratory has no actuator"
            )));
        }
        if settings.udp && peer_kind == RemotePeer::Adapter {
            return Err(TransferError::new(format!(
                "remote site ({what}) {}: OpenSees's adapter element speaks TCP only; \
                 remove `protocol = \"udp\"` from [lab.link] or use `peer = \"element_server\"`",
                settings.address
            )));
        }
        let addr = settings
            .address
            .to_socket_addrs()
            .map_err(|e| lost(format!("remote site ({what}) `{}`: {e}", settings.address)))?
            .next()
            .ok_or_else(|| {
                lost(format!(
                    "remote site ({what}) `{}` resolves to no address",
                    settings.address
                ))
            })?;
        let timeout = Duration::from_secs_f64(settings.timeout);
        let start = timeout.max(START_TIMEOUT);
        let sizes = site_sizes(peer_kind, n);
        let proto = if settings.udp { "udp" } else { "tcp" };
        let io = |step: &str, e: std::io::Error| {
            lost(format!("remote site ({what}) {proto} {addr}: {step}: {e}"))
        };
        let transport = if settings.udp {
            let bind = settings.bind.clone().unwrap_or_else(|| {
                if addr.ip().is_loopback() {
                    "127.0.0.1:0".into()
                } else {
                    "0.0.0.0:0".into()
                }
            });
            let socket = UdpSocket::bind(&bind).map_err(|e| io(&format!("bind {bind}"), e))?;
            udp_connect(&socket, addr, UDP_HANDSHAKE_TRIES, start).map_err(|e| {
                TransferError::of(
                    if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) {
                        EventKind::LinkTimeout
                    } else {
                        EventKind::LinkLost
                    },
                    format!("remote site ({what}) udp {addr}: handshake: {e}"),
                )
            })?;
            socket
                .send_to(&sizes.encode(), addr)
                .map_err(|e| io("send the sizes", e))?;
            Transport::Udp {
                socket,
                scratch: vec![0; MAX_UDP_DATAGRAM + 1],
            }
        } else {
            let mut stream = connect_tcp(addr, start).map_err(|e| io("connect", e))?;
            stream.set_nodelay(true).map_err(|e| io("TCP_NODELAY", e))?;
            stream
                .set_write_timeout(Some(start))
                .map_err(|e| io("write timeout", e))?;
            write_full(&mut stream, &sizes.encode()).map_err(|e| io("send the sizes", e))?;
            Transport::Tcp(stream)
        };
        Ok(Self {
            peer_kind,
            addr,
            transport,
            n,
            ctrl: sizes.ctrl_layout(),
            daq: sizes.daq_layout(),
            sizes,
            timeout,
            tx: Frame::new(sizes.data_size),
            rx: Frame::new(sizes.data_size),
            target: vec![ActuatorCommand::default(); n],
            last_trial: None,
            trial_at: Instant::now(),
            counters: Counters::default(),
            // 1 µs … 100 s at 3 significant figures: allocated once, here.
            latency: Latency::new(),
        })
    }

    /// The site's address.
    pub fn peer(&self) -> SocketAddr {
        self.addr
    }

    /// The size vector sent to the site.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    fn proto(&self) -> &'static str {
        match self.transport {
            Transport::Tcp(_) => "tcp",
            Transport::Udp { .. } => "udp",
        }
    }

    fn error(&self, kind: EventKind, tick: u64, what: std::fmt::Arguments) -> TransferError {
        TransferError::of(
            kind,
            format!(
                "remote site ({}) {} {} at tick {tick}: {what}",
                peer_name(self.peer_kind),
                self.proto(),
                self.addr
            ),
        )
    }

    /// Write `[0] = action` with the rest of `tx` as it is (the last trial, as
    /// `genericClient` does).
    fn send_action(&mut self, action: Action, tick: u64) -> Result<(), TransferError> {
        self.tx.values_mut()[0] = action.value();
        self.tx.encode();
        let result = match &mut self.transport {
            Transport::Tcp(stream) => write_full(stream, self.tx.bytes()),
            Transport::Udp { socket, .. } => udp_send(socket, self.addr, self.tx.bytes()),
        };
        match result {
            Ok(()) => {
                self.counters.frames_sent += 1;
                Ok(())
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Err(self
                .error(
                    EventKind::LinkTimeout,
                    tick,
                    format_args!(
                        "cannot send action {action}: the site does not read (write timed out)"
                    ),
                )),
            Err(e) => Err(self.error(
                EventKind::LinkLost,
                tick,
                format_args!("cannot send action {action}: {e}"),
            )),
        }
    }

    /// Fill the trial vector from `cmd` and time `t`, and send it (action 3).
    fn send_trial(&mut self, tick: u64, t: f64, hold: bool) -> Result<(), TransferError> {
        let v = self.tx.values_mut();
        for (k, c) in self.target.iter().enumerate() {
            v[self.ctrl.disp.start + k] = c.d;
            if !self.ctrl.vel.is_empty() {
                v[self.ctrl.vel.start + k] = if hold { 0.0 } else { c.v };
            }
            if !self.ctrl.accel.is_empty() {
                v[self.ctrl.accel.start + k] = if hold { 0.0 } else { c.a };
            }
        }
        if !self.ctrl.time.is_empty() {
            v[self.ctrl.time.start] = t;
        }
        self.send_action(Action::SetTrialResponse, tick)?;
        self.last_trial = Some(tick);
        self.trial_at = Instant::now();
        Ok(())
    }

    /// Read one reply vector into `rx`, waiting until `deadline`.
    fn read_reply(&mut self, tick: u64, wait: Duration) -> Result<(), TransferError> {
        let deadline = Instant::now() + wait;
        let expected = self.sizes.frame_bytes();
        let outcome = match &mut self.transport {
            Transport::Tcp(stream) => read_frame(stream, self.rx.bytes_mut(), deadline),
            Transport::Udp { socket, scratch } => loop {
                let wait = deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_micros(1));
                if let Err(e) = socket.set_read_timeout(Some(wait)) {
                    break ReadOutcome::Failed(e);
                }
                match udp_recv(socket, self.addr, self.rx.bytes_mut(), scratch) {
                    Ok(UdpReceived::Complete) => break ReadOutcome::Complete,
                    Ok(UdpReceived::WrongLength { offset, got, .. }) => {
                        break ReadOutcome::WrongLength { offset, got }
                    }
                    Ok(UdpReceived::Stranger(_)) => {
                        self.counters.stray_datagrams += 1;
                        if Instant::now() >= deadline {
                            break ReadOutcome::TimedOut { got: 0 };
                        }
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        break ReadOutcome::TimedOut { got: 0 }
                    }
                    Err(e) => break ReadOutcome::Failed(e),
                }
            },
        };
        let waited = TimeoutText(wait);
        match outcome {
            ReadOutcome::Complete => {
                self.rx.decode();
                Ok(())
            }
            ReadOutcome::TimedOut { got: 0 } => {
                self.counters.missing_replies += 1;
                Err(self.error(
                    EventKind::LinkTimeout,
                    tick,
                    format_args!("no reply to the force request (10) within {waited}"),
                ))
            }
            ReadOutcome::TimedOut { got } => {
                self.counters.malformed += 1;
                Err(self.error(
                    EventKind::LinkProtocol,
                    tick,
                    format_args!(
                        "short reply: {got} of {expected} bytes (dataSize {}) within {waited}",
                        self.sizes.data_size
                    ),
                ))
            }
            ReadOutcome::Closed { got: 0 } => Err(self.error(
                EventKind::LinkLost,
                tick,
                format_args!("the site closed the connection"),
            )),
            ReadOutcome::Closed { got } => {
                self.counters.malformed += 1;
                Err(self.error(
                    EventKind::LinkProtocol,
                    tick,
                    format_args!(
                        "short reply: {got} of {expected} bytes (dataSize {}), then the site \
                         closed the connection",
                        self.sizes.data_size
                    ),
                ))
            }
            ReadOutcome::WrongLength { offset, got } => {
                self.counters.malformed += 1;
                Err(self.error(
                    EventKind::LinkProtocol,
                    tick,
                    format_args!(
                        "reply datagram of {got} bytes at byte {offset} of a {expected}-byte \
                         vector (dataSize {})",
                        self.sizes.data_size
                    ),
                ))
            }
            ReadOutcome::Failed(e) => Err(self.error(
                EventKind::LinkLost,
                tick,
                format_args!("cannot receive: {e}"),
            )),
        }
    }

    /// Ask for the force (10), read the reply into `force` and `position` (+ commit, 5, for an
    /// element server).
    fn request_force(
        &mut self,
        tick: u64,
        wait: Duration,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError> {
        if self.last_trial != Some(tick) {
            self.counters.malformed += 1;
            return Err(self.error(
                EventKind::LinkProtocol,
                tick,
                format_args!(
                    "a force request without a trial for this tick (last trial: {:?})",
                    self.last_trial
                ),
            ));
        }
        self.send_action(Action::GetForce, tick)?;
        self.read_reply(tick, wait)?;
        self.counters.replies += 1;
        self.latency.record(self.trial_at.elapsed());
        let n = self.n;
        let (disp, force_at) = match self.peer_kind {
            RemotePeer::Adapter => (Some(self.daq.disp.start), self.daq.force.start),
            RemotePeer::ElementServer => (None, 0),
        };
        if let Err(e) = self
            .rx
            .check_finite(force_at..force_at + n, "force")
            .and_then(|_| match disp {
                Some(d) => self.rx.check_finite(d..d + n, "displacement"),
                None => Ok(()),
            })
        {
            self.counters.malformed += 1;
            return Err(self.error(
                EventKind::LinkProtocol,
                tick,
                format_args!("bad reply to the force request: {e}"),
            ));
        }
        let values = self.rx.values();
        force.copy_from_slice(&values[force_at..force_at + n]);
        match disp {
            Some(d) => position.copy_from_slice(&values[d..d + n]),
            None => {
                for (p, c) in position.iter_mut().zip(&self.target) {
                    *p = c.d;
                }
            }
        }
        if self.peer_kind == RemotePeer::ElementServer {
            self.send_action(Action::CommitState, tick)?;
        }
        Ok(())
    }
}

/// `Display` of a timeout.
struct TimeoutText(Duration);

impl std::fmt::Display for TimeoutText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the timeout of {} s", self.0.as_secs_f64())
    }
}

/// What reading one frame gave.
enum ReadOutcome {
    Complete,
    /// The deadline passed after `got` bytes.
    TimedOut {
        got: usize,
    },
    /// The peer closed after `got` bytes.
    Closed {
        got: usize,
    },
    /// A datagram of the wrong length.
    WrongLength {
        offset: usize,
        got: usize,
    },
    Failed(std::io::Error),
}

/// Connect over TCP, retrying a refused connection (the site not listening yet) until
/// `window` has passed.
fn connect_tcp(addr: SocketAddr, window: Duration) -> std::io::Result<TcpStream> {
    let deadline = Instant::now() + window;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match TcpStream::connect_timeout(&addr, left.max(Duration::from_millis(10))) {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Read exactly `buf.len()` bytes before `deadline` (the whole frame, however it trickles),
/// re-arming `TCP_QUICKACK` before and after every `recv`.
fn read_frame(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> ReadOutcome {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return ReadOutcome::TimedOut { got };
        }
        if let Err(e) = stream.set_read_timeout(Some(left)) {
            return ReadOutcome::Failed(e);
        }
        protocol::set_quickack(stream);
        let r = stream.read(&mut buf[got..]);
        protocol::set_quickack(stream);
        match r {
            Ok(0) => return ReadOutcome::Closed { got },
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return ReadOutcome::TimedOut { got }
            }
            Err(e) => return ReadOutcome::Failed(e),
        }
    }
    ReadOutcome::Complete
}

impl TransferSystem for RemoteSite {
    fn describe(&self) -> String {
        format!(
            "remote site ({} over {} at {}, {} actuators = basic DOFs)",
            peer_name(self.peer_kind),
            self.proto(),
            self.addr,
            self.n
        )
    }

    fn is_virtual(&self) -> bool {
        false
    }

    fn n_actuators(&self) -> usize {
        self.n
    }

    fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError> {
        for (c, p) in self.target.iter_mut().zip(position.iter()) {
            *c = ActuatorCommand {
                d: *p,
                v: 0.0,
                a: 0.0,
            };
        }
        self.send_trial(0, 0.0, true)?;
        // The site may still be setting up its analysis: the start-up allowance applies.
        let wait = self.timeout.max(START_TIMEOUT);
        self.request_force(0, wait, force, position)
    }

    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError> {
        self.target.copy_from_slice(cmd);
        self.send_trial(tick, t_wall, false)
    }

    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        self.send_trial(tick, t_wall, true)?;
        self.request_force(tick, self.timeout, force, position)?;
        Ok(Sample::Fresh)
    }

    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError> {
        self.request_force(tick, self.timeout, force, achieved)?;
        Ok(Sample::Fresh)
    }

    fn statistics(&self) -> Vec<(String, f64)> {
        let c = &self.counters;
        let mut out = vec![
            ("frames_sent".to_string(), c.frames_sent as f64),
            ("replies".to_string(), c.replies as f64),
            ("missing_replies".to_string(), c.missing_replies as f64),
            ("malformed_replies".to_string(), c.malformed as f64),
            ("stray_datagrams".to_string(), c.stray_datagrams as f64),
            ("timeout_seconds".to_string(), self.timeout.as_secs_f64()),
            ("data_size".to_string(), self.sizes.data_size as f64),
        ];
        self.latency.append_statistics(&mut out);
        out
    }
}

impl Drop for RemoteSite {
    fn drop(&mut self) {
        // End the remote session (best effort). The adapter element ends its process on the
        // first 99; OpenFresco's reference client sends it twice, and so do we.
        if let Transport::Tcp(stream) = &self.transport {
            let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
        }
        let tick = self.last_trial.unwrap_or(0);
        let times = match self.peer_kind {
            RemotePeer::Adapter => 2,
            RemotePeer::ElementServer => 1,
        };
        for _ in 0..times {
            if self.send_action(Action::Die, tick).is_err() {
                break;
            }
        }
        if let Transport::Tcp(stream) = &self.transport {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}
