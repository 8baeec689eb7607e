//! The `genericClient` server: accepts one OpenSees `genericClient` element (TCP, or UDP as
//! with `-udp`), reads its sizes and answers its messages from a [`Served`] substructure.
//!
//! Per message (see [`protocol`]): `3` stores the trial displacement,
//! velocity, acceleration and time and imposes them; `5` commits; `10`, `12`–`15` reply with
//! the force and the matrices; `6`–`9`, `11` with the data-acquisition vector, the trial
//! vectors and the time; `1`, `2`, `4` are no-ops; `99` or the end of the stream ends the
//! session. A message that cannot be used (an unknown code, NaN in a trial, a trial the
//! substructure refuses, a datagram of the wrong length) is reported on the log, one line
//! naming the peer, the message number, the committed steps and the cause, and the session
//! goes on: a "get" after a refused trial is answered with NaN, so the client keeps running
//! and its analysis sees the failure. The connection is closed only when the stream can no
//! longer be read in frames (a truncated frame at the end of the stream, a size vector that
//! gives no frame length) or after the idle timeout: the OpenSees client never handles the
//! end of a stream (it spins), so the server never ends a session the client still uses.
//!
//! Steady state allocates nothing: the frames, the trial vectors and the replies are sized at
//! the handshake.

use super::protocol::{
    self, fill_nan, fill_reply, Action, Frame, ProtocolError, Sizes, UdpReceived, MAX_UDP_DATAGRAM,
    SIZES_BYTES,
};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// What a server serves: the trial/commit interface over `n_dofs` basic DOFs. Matrices are
/// column-major `n × n`.
pub trait Served {
    /// Number of basic DOFs served.
    fn n_dofs(&self) -> usize;
    /// Impose a trial at time `t` (the stored vectors are over the basic DOFs). On error,
    /// `force` must answer NaN until the next successful trial.
    fn set_trial(&mut self, t: f64, d: &[f64], v: &[f64], a: &[f64]) -> Result<(), String>;
    /// Commit the last trial.
    fn commit(&mut self) -> Result<(), String>;
    /// Resisting force at the trial.
    fn force(&mut self) -> &[f64];
    /// Initial stiffness.
    fn initial_stiffness(&mut self) -> &[f64];
    /// Tangent stiffness at the trial.
    fn tangent(&mut self) -> &[f64];
    /// Damping.
    fn damping(&mut self) -> &[f64];
    /// Mass.
    fn mass(&mut self) -> &[f64];
    /// Steps committed.
    fn commits(&self) -> u64;
}

impl Served for hybridsim::assembly::ServedSubstructure {
    fn n_dofs(&self) -> usize {
        hybridsim::assembly::ServedSubstructure::n_dofs(self)
    }
    fn set_trial(&mut self, t: f64, d: &[f64], v: &[f64], _a: &[f64]) -> Result<(), String> {
        hybridsim::assembly::ServedSubstructure::set_trial(self, t, d, v).map_err(|e| e.to_string())
    }
    fn commit(&mut self) -> Result<(), String> {
        hybridsim::assembly::ServedSubstructure::commit(self);
        Ok(())
    }
    fn force(&mut self) -> &[f64] {
        hybridsim::assembly::ServedSubstructure::force(self)
    }
    fn initial_stiffness(&mut self) -> &[f64] {
        hybridsim::assembly::ServedSubstructure::initial_stiffness(self)
    }
    fn tangent(&mut self) -> &[f64] {
        hybridsim::assembly::ServedSubstructure::tangent(self)
    }
    fn damping(&mut self) -> &[f64] {
        hybridsim::assembly::ServedSubstructure::damping(self)
    }
    fn mass(&mut self) -> &[f64] {
        hybridsim::assembly::ServedSubstructure::mass(self)
    }
    fn commits(&self) -> u64 {
        hybridsim::assembly::ServedSubstructure::commits(self)
    }
}

/// TCP (the `genericClient` default) or UDP (`-udp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One TCP connection per session.
    Tcp,
    /// Datagrams after the `'a'`/`'b'` opening.
    Udp,
}

/// Server settings.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// TCP or UDP.
    pub transport: Transport,
    /// A session (or the wait for one) with no message for this long ends.
    pub idle_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            transport: Transport::Tcp,
            idle_timeout: Duration::from_secs(300),
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEnd {
    /// The client sent 99 (its element was destroyed).
    Die,
    /// The client sent 98 (shutdown).
    Shutdown,
    /// The stream ended between frames (a client gone without 99).
    Eof,
    /// No message within the idle timeout.
    IdleTimeout,
    /// The stream could not be read in frames any more (the reason).
    Unreadable(String),
}

/// What happened in a session.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// The client's address.
    pub peer: SocketAddr,
    /// Its sizes, when they could be read.
    pub sizes: Option<Sizes>,
    /// How it ended.
    pub end: SessionEnd,
    /// Messages received (the size vector and the handshake not counted).
    pub messages: u64,
    /// Messages reported as unusable (one log line each), handshake problems included.
    pub rejected: u64,
    /// Replies sent.
    pub replies: u64,
    /// Count per action code 0..=99 (index = code).
    pub counts: Vec<u64>,
    /// Steps committed in the session.
    pub commits: u64,
}

/// Why a server could not start or wait for a session.
#[derive(Debug, thiserror::Error)]
pub enum ServeFailure {
    /// A socket error.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Nobody connected within the idle timeout.
    #[error("no client within {0:?}")]
    NoClient(Duration),
}

enum Socket {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

/// A bound `genericClient` server (see the module docs).
pub struct Server {
    socket: Socket,
    options: ServeOptions,
    addr: SocketAddr,
}

enum Conn {
    Tcp(TcpStream),
    Udp {
        socket: UdpSocket,
        peer: SocketAddr,
        scratch: Vec<u8>,
    },
}

enum Received {
    Full,
    /// End of stream after `got` bytes (0: between frames).
    Eof(usize),
    /// A datagram that cannot be used; the next one may be.
    Bad(String),
    Idle,
}

/// The peer is gone (a reset, a broken pipe, a refused datagram).
fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionRefused
    )
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Conn {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Received> {
        match self {
            Conn::Tcp(s) => match protocol::read_full(s, buf) {
                Ok(n) if n == buf.len() => Ok(Received::Full),
                Ok(n) => Ok(Received::Eof(n)),
                Err(e) if is_timeout(&e) => Ok(Received::Idle),
                Err(e) if gone(&e) => Ok(Received::Eof(0)),
                Err(e) => Err(e),
            },
            Conn::Udp {
                socket,
                peer,
                scratch,
            } => match protocol::udp_recv(socket, *peer, buf, scratch) {
                Ok(UdpReceived::Complete) => Ok(Received::Full),
                Ok(UdpReceived::WrongLength {
                    offset,
                    expected,
                    got,
                }) => Ok(Received::Bad(format!(
                    "datagram of {}{} bytes where {expected} were due (at byte {offset} of the vector)",
                    if got > expected { "more than " } else { "" },
                    if got > expected { expected } else { got }
                ))),
                Ok(UdpReceived::Stranger(from)) => Ok(Received::Bad(format!(
                    "datagram from {from}, not from the session's client (ignored)"
                ))),
                Err(e) if is_timeout(&e) => Ok(Received::Idle),
                // An earlier reply bounced (ICMP port unreachable): the client is gone.
                Err(e) if gone(&e) => Ok(Received::Eof(0)),
                Err(e) => Err(e),
            },
        }
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => protocol::write_full(s, bytes),
            Conn::Udp { socket, peer, .. } => protocol::udp_send(socket, *peer, bytes),
        }
    }
}

impl Server {
    /// Bind `addr` (IPv4: the OpenSees client cannot reach IPv6).
    pub fn bind(addr: SocketAddr, options: ServeOptions) -> io::Result<Self> {
        let socket = match options.transport {
            Transport::Tcp => Socket::Tcp(TcpListener::bind(addr)?),
            Transport::Udp => Socket::Udp(UdpSocket::bind(addr)?),
        };
        let addr = match &socket {
            Socket::Tcp(l) => l.local_addr()?,
            Socket::Udp(u) => u.local_addr()?,
        };
        Ok(Self {
            socket,
            options,
            addr,
        })
    }

    /// The bound address (with the chosen port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Wait (up to the idle timeout) for one client and serve it until the session ends.
    /// Problems are reported through `log`, one line each.
    pub fn serve_one(
        &mut self,
        served: &mut dyn Served,
        log: &mut dyn FnMut(&str),
    ) -> Result<SessionReport, ServeFailure> {
        let idle = self.options.idle_timeout;
        let mut rejected_handshakes = 0;
        let mut conn = match &self.socket {
            Socket::Tcp(listener) => {
                let stream = accept_within(listener, idle)?;
                stream.set_nonblocking(false)?;
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(idle))?;
                stream.set_write_timeout(Some(idle))?;
                Conn::Tcp(stream)
            }
            Socket::Udp(socket) => {
                let deadline = Instant::now() + idle;
                let socket = socket.try_clone()?;
                let peer = loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(ServeFailure::NoClient(idle));
                    }
                    socket.set_read_timeout(Some(left))?;
                    match protocol::udp_accept(&socket) {
                        Ok(peer) => break peer,
                        Err(e) if is_timeout(&e) => return Err(ServeFailure::NoClient(idle)),
                        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                            rejected_handshakes += 1;
                            log(&e.to_string());
                        }
                        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                        Err(e) => return Err(e.into()),
                    }
                };
                socket.set_read_timeout(Some(idle))?;
                Conn::Udp {
                    socket,
                    peer,
                    scratch: vec![0; MAX_UDP_DATAGRAM + 1],
                }
            }
        };
        let peer = match &conn {
            Conn::Tcp(s) => s.peer_addr()?,
            Conn::Udp { peer, .. } => *peer,
        };
        let mut session = Session::new(peer, log);
        session.report.rejected += rejected_handshakes;
        session.run(&mut conn, served)?;
        Ok(session.report)
    }
}

fn accept_within(listener: &TcpListener, idle: Duration) -> Result<TcpStream, ServeFailure> {
    let deadline = Instant::now() + idle;
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((s, _)) => return Ok(s),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(ServeFailure::NoClient(idle));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

struct Session<'l> {
    log: &'l mut dyn FnMut(&str),
    report: SessionReport,
}

impl<'l> Session<'l> {
    fn new(peer: SocketAddr, log: &'l mut dyn FnMut(&str)) -> Self {
        Self {
            log,
            report: SessionReport {
                peer,
                sizes: None,
                end: SessionEnd::Eof,
                messages: 0,
                rejected: 0,
                replies: 0,
                counts: vec![0; 100],
                commits: 0,
            },
        }
    }

    /// Report one unusable message.
    fn reject(&mut self, commits: u64, cause: &dyn std::fmt::Display) {
        self.report.rejected += 1;
        let line = format!(
            "{}: message {} (after {} committed steps): {cause}",
            self.report.peer, self.report.messages, commits
        );
        (self.log)(&line);
    }

    fn end(&mut self, end: SessionEnd, commits: u64) {
        let line = match &end {
            SessionEnd::Die | SessionEnd::Shutdown | SessionEnd::Eof => None,
            SessionEnd::IdleTimeout => {
                Some("no message within the idle timeout: session closed".to_string())
            }
            SessionEnd::Unreadable(why) => Some(format!("{why}: session closed")),
        };
        if let Some(l) = line {
            self.reject(commits, &l);
        }
        self.report.end = end;
        self.report.commits = commits;
    }

    fn run(&mut self, conn: &mut Conn, served: &mut dyn Served) -> io::Result<()> {
        // The size vector.
        let mut sb = [0u8; SIZES_BYTES];
        let sizes = loop {
            match conn.recv(&mut sb)? {
                Received::Full => {}
                Received::Eof(got) => {
                    let end = if got == 0 {
                        SessionEnd::Eof
                    } else {
                        SessionEnd::Unreadable(format!(
                            "size vector truncated: {got} of {SIZES_BYTES} bytes, then the stream ended"
                        ))
                    };
                    self.end(end, 0);
                    return Ok(());
                }
                Received::Idle => {
                    self.end(SessionEnd::IdleTimeout, 0);
                    return Ok(());
                }
                Received::Bad(why) => {
                    self.reject(0, &format!("size vector: {why}"));
                    continue;
                }
            }
            match Sizes::decode(&sb) {
                Ok(s) => break s,
                Err(e) => {
                    // Without a valid dataSize no frame can be read.
                    self.end(
                        SessionEnd::Unreadable(format!("size vector refused: {e}")),
                        0,
                    );
                    return Ok(());
                }
            }
        };
        self.report.sizes = Some(sizes);
        let n = served.n_dofs();
        let usable = match sizes.basic_dofs() {
            Ok(nb) if nb == n => true,
            Ok(nb) => {
                self.reject(
                    0,
                    &format!(
                        "the client has {nb} basic DOFs, the served substructure {n}: every reply will be NaN (check -dof against the DOF mapping)"
                    ),
                );
                false
            }
            Err(e) => {
                self.reject(
                    0,
                    &format!(
                        "size vector {:?} refused: {e}; every reply will be NaN",
                        sizes.to_ints()
                    ),
                );
                false
            }
        };
        let nb = sizes.ctrl[0];
        let ctrl = sizes.ctrl_layout();
        let daq = sizes.daq_layout();
        let mut inp = Frame::new(sizes.data_size);
        let mut out = Frame::new(sizes.data_size);
        let mut d = vec![0.0; nb];
        let mut v = vec![0.0; nb];
        let mut a = vec![0.0; nb];
        let mut t = 0.0;
        // Whether the last trial was refused (gets answer NaN until the next good one).
        let mut bad_trial = false;
        let nan_n = if usable { n } else { nb.max(1) };
        loop {
            let commits = served.commits();
            match conn.recv(inp.bytes_mut())? {
                Received::Full => {}
                Received::Eof(0) => {
                    self.end(SessionEnd::Eof, commits);
                    return Ok(());
                }
                Received::Eof(got) => {
                    self.report.messages += 1;
                    self.end(
                        SessionEnd::Unreadable(
                            format!(
                                "{}",
                                ProtocolError::Truncated {
                                    expected: sizes.frame_bytes(),
                                    got
                                }
                            ) + ", then the stream ended",
                        ),
                        commits,
                    );
                    return Ok(());
                }
                Received::Idle => {
                    self.end(SessionEnd::IdleTimeout, commits);
                    return Ok(());
                }
                Received::Bad(why) => {
                    self.report.messages += 1;
                    self.reject(commits, &why);
                    continue;
                }
            }
            self.report.messages += 1;
            inp.decode();
            let action = match inp.action() {
                Ok(a) => a,
                Err(e) => {
                    self.reject(commits, &format!("{e}; no reply"));
                    continue;
                }
            };
            self.report.counts[action.code() as usize] += 1;
            let mut reply = true;
            let out_v = out.values_mut();
            match action {
                Action::Open | Action::Setup | Action::Execute => reply = false,
                Action::Die => {
                    self.end(SessionEnd::Die, commits);
                    return Ok(());
                }
                Action::Shutdown => {
                    self.end(SessionEnd::Shutdown, commits);
                    return Ok(());
                }
                Action::SetTrialResponse => {
                    reply = false;
                    let checks = [
                        (ctrl.disp.clone(), "displacement"),
                        (ctrl.vel.clone(), "velocity"),
                        (ctrl.accel.clone(), "acceleration"),
                        (ctrl.time.clone(), "time"),
                    ];
                    if let Some(e) = checks
                        .into_iter()
                        .find_map(|(r, w)| inp.check_finite(r, w).err())
                    {
                        bad_trial = true;
                        self.reject(commits, &format!("trial refused: {e}"));
                        continue;
                    }
                    let x = inp.values();
                    d.copy_from_slice(&x[ctrl.disp.clone()]);
                    copy_or_zero(&mut v, &x[ctrl.vel.clone()]);
                    copy_or_zero(&mut a, &x[ctrl.accel.clone()]);
                    if let Some(tt) = x.get(ctrl.time.clone()).and_then(|s| s.first()) {
                        t = *tt;
                    }
                    if !usable {
                        continue;
                    }
                    match served.set_trial(t, &d, &v, &a) {
                        Ok(()) => bad_trial = false,
                        Err(e) => {
                            bad_trial = true;
                            self.reject(commits, &format!("trial at t = {t} refused: {e}"));
                        }
                    }
                }
                Action::CommitState => {
                    reply = false;
                    if usable {
                        if bad_trial {
                            self.reject(
                                commits,
                                &"commit of a refused trial: the committed state is kept",
                            );
                        } else if let Err(e) = served.commit() {
                            self.reject(commits, &format!("commit refused: {e}"));
                        }
                    }
                }
                _ if !usable => fill_nan(
                    out_v,
                    if action.is_matrix() {
                        nan_n * nan_n
                    } else {
                        nan_n
                    },
                ),
                Action::GetForce => {
                    if bad_trial {
                        fill_nan(out_v, n)
                    } else {
                        fill_reply(out_v, served.force())
                    }
                }
                Action::GetInitialStiff => fill_reply(out_v, served.initial_stiffness()),
                Action::GetTangentStiff => {
                    if bad_trial {
                        fill_nan(out_v, n * n)
                    } else {
                        fill_reply(out_v, served.tangent())
                    }
                }
                Action::GetDamp => fill_reply(out_v, served.damping()),
                Action::GetMass => fill_reply(out_v, served.mass()),
                Action::GetDisp => fill_reply(out_v, &d),
                Action::GetVel => fill_reply(out_v, &v),
                Action::GetAccel => fill_reply(out_v, &a),
                Action::GetTime => fill_reply(out_v, &[t]),
                Action::GetDaqResponse => {
                    out_v.iter_mut().for_each(|x| *x = 0.0);
                    put(out_v, daq.disp.clone(), &d);
                    put(out_v, daq.vel.clone(), &v);
                    put(out_v, daq.accel.clone(), &a);
                    if bad_trial {
                        out_v[daq.force.clone()]
                            .iter_mut()
                            .for_each(|x| *x = f64::NAN);
                    } else {
                        put(out_v, daq.force.clone(), served.force());
                    }
                    put(out_v, daq.time.clone(), &[t]);
                }
            }
            if reply {
                out.encode();
                match conn.send(out.bytes()) {
                    Ok(()) => self.report.replies += 1,
                    Err(e) if gone(&e) || is_timeout(&e) => {
                        self.end(
                            SessionEnd::Unreadable(format!(
                                "the reply to {action} could not be sent ({e})"
                            )),
                            commits,
                        );
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

fn copy_or_zero(dst: &mut [f64], src: &[f64]) {
    if src.len() == dst.len() {
        dst.copy_from_slice(src);
    } else {
        dst.iter_mut().for_each(|x| *x = 0.0);
    }
}

fn put(out: &mut [f64], range: std::ops::Range<usize>, src: &[f64]) {
    let n = range.len().min(src.len());
    out[range.start..range.start + n].copy_from_slice(&src[..n]);
}
