//! The OpenSees `genericClient` wire protocol (OpenFresco's "remote test" protocol), both
//! sides: action codes, the 11-int size vector, the layout of the fixed-size vectors, and the
//! framing over a TCP stream or UDP datagrams.
//!
//! What travels (see `docs/serve.md`):
//!
//! 1. **Sizes**: once, right after the connection, the client sends 11 native-endian `i32`
//!    (44 bytes, no reply): the control sizes (disp, vel, accel, force, time), the
//!    data-acquisition sizes (same order) and `dataSize` ([`Sizes`]).
//! 2. **Vectors**: every later message in both directions is exactly `dataSize` native-endian
//!    `f64` (no header, no length, no sequence number). Client → server: `[0]` is the action
//!    code ([`Action`]), then the control vectors in the order disp, vel, accel, force, time
//!    ([`Sizes::ctrl_layout`]). Server → client (only for the "get" codes 6–15): a vector or a
//!    column-major matrix from index 0, zero-padded ([`fill_reply`]).
//!
//! Over TCP the stream is read in exact frames with `TCP_QUICKACK` re-armed before and after
//! every `recv` ([`read_full`]): the OpenSees client leaves Nagle on and writes two messages
//! before reading, which otherwise stalls every step by the peer's delayed ACK (~40 ms).
//! Over UDP the client opens with one byte `'a'` answered by `'b'` ([`udp_accept`],
//! [`udp_connect`]); a vector longer than [`MAX_UDP_DATAGRAM`] bytes travels as consecutive
//! datagrams of at most that size ([`udp_send`], [`udp_recv`]).
//!
//! Endianness is never negotiated by the OpenSees client: values are sent in the host's byte
//! order (little-endian on x86-64 and arm64), and so are they here.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::ops::Range;
use std::time::Duration;

/// Number of `i32` in the size vector.
pub const SIZES_LEN: usize = 11;
/// Bytes of the size vector.
pub const SIZES_BYTES: usize = SIZES_LEN * 4;
/// Largest `dataSize` accepted (values per vector): a bound against absurd allocations.
pub const MAX_DATA_SIZE: usize = 1 << 20;
/// Largest datagram of the OpenSees UDP channel (`Socket.h`, `MAX_UDP_DATAGRAM`).
pub const MAX_UDP_DATAGRAM: usize = 9126;
/// The UDP client's opening byte.
pub const UDP_HELLO: u8 = b'a';
/// The UDP server's answer to [`UDP_HELLO`].
pub const UDP_WELCOME: u8 = b'b';
/// The default `dataSize` of `genericClient` (its `-dataSize` option).
pub const GENERIC_CLIENT_DATA_SIZE: usize = 256;

/// The action code in `[0]` of a client → server vector (`OF_RemoteTest_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Action {
    /// Open the remote test (never sent by `genericClient`; no reply).
    Open = 1,
    /// Set up (never sent by `genericClient`; no reply).
    Setup = 2,
    /// The trial response follows in the control vectors (no reply).
    SetTrialResponse = 3,
    /// Execute (never sent by `genericClient`; no reply).
    Execute = 4,
    /// Commit the last trial (no reply).
    CommitState = 5,
    /// Reply with the data-acquisition vector ([`Sizes::daq_layout`]).
    GetDaqResponse = 6,
    /// Reply with the displacements.
    GetDisp = 7,
    /// Reply with the velocities.
    GetVel = 8,
    /// Reply with the accelerations.
    GetAccel = 9,
    /// Reply with the resisting forces.
    GetForce = 10,
    /// Reply with the time.
    GetTime = 11,
    /// Reply with the initial stiffness (column-major).
    GetInitialStiff = 12,
    /// Reply with the tangent stiffness (column-major).
    GetTangentStiff = 13,
    /// Reply with the damping matrix (column-major).
    GetDamp = 14,
    /// Reply with the mass matrix (column-major).
    GetMass = 15,
    /// Shut the server down (OpenFresco lab servers; no reply).
    Shutdown = 98,
    /// End of the session: the client is going away (no reply).
    Die = 99,
}

impl Action {
    /// Every action, in code order.
    pub const ALL: [Action; 17] = [
        Action::Open,
        Action::Setup,
        Action::SetTrialResponse,
        Action::Execute,
        Action::CommitState,
        Action::GetDaqResponse,
        Action::GetDisp,
        Action::GetVel,
        Action::GetAccel,
        Action::GetForce,
        Action::GetTime,
        Action::GetInitialStiff,
        Action::GetTangentStiff,
        Action::GetDamp,
        Action::GetMass,
        Action::Shutdown,
        Action::Die,
    ];

    /// The action of an integer code, if it is one.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.iter().copied().find(|a| *a as i32 == code)
    }

    /// The action in `[0]` of a received vector: a finite whole number that is a known code.
    pub fn from_value(value: f64) -> Result<Self, ProtocolError> {
        if !value.is_finite() || value.fract() != 0.0 || value.abs() > i32::MAX as f64 {
            return Err(ProtocolError::BadAction(value));
        }
        Self::from_code(value as i32).ok_or(ProtocolError::BadAction(value))
    }

    /// The integer code.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The code as it travels in `[0]`.
    pub fn value(self) -> f64 {
        self as i32 as f64
    }

    /// Whether the server answers this action with a vector (codes 6–15).
    pub fn expects_reply(self) -> bool {
        (6..=15).contains(&self.code())
    }

    /// Whether the reply is an `nb × nb` matrix (codes 12–15).
    pub fn is_matrix(self) -> bool {
        (12..=15).contains(&self.code())
    }

    /// The OpenFresco name of the action.
    pub fn name(self) -> &'static str {
        match self {
            Action::Open => "open",
            Action::Setup => "setup",
            Action::SetTrialResponse => "setTrialResponse",
            Action::Execute => "execute",
            Action::CommitState => "commitState",
            Action::GetDaqResponse => "getDaqResponse",
            Action::GetDisp => "getDisp",
            Action::GetVel => "getVel",
            Action::GetAccel => "getAccel",
            Action::GetForce => "getForce",
            Action::GetTime => "getTime",
            Action::GetInitialStiff => "getInitialStiff",
            Action::GetTangentStiff => "getTangentStiff",
            Action::GetDamp => "getDamp",
            Action::GetMass => "getMass",
            Action::Shutdown => "shutdown",
            Action::Die => "die",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.code(), self.name())
    }
}

/// Why a size vector, an action or a frame was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// A size is negative.
    #[error("size {field} (index {index}) is negative: {value}")]
    NegativeSize {
        /// Index in the size vector.
        index: usize,
        /// Its meaning.
        field: &'static str,
        /// The value.
        value: i32,
    },
    /// `dataSize` is 0 or beyond [`MAX_DATA_SIZE`].
    #[error("dataSize {0} is out of range (1 to {max})", max = MAX_DATA_SIZE)]
    DataSize(i64),
    /// The control or data-acquisition vectors do not fit in `dataSize`.
    #[error("the {what} vectors need {needed} values, more than dataSize {data_size}")]
    DoesNotFit {
        /// `control` or `data-acquisition`.
        what: &'static str,
        /// Values needed.
        needed: usize,
        /// `dataSize`.
        data_size: usize,
    },
    /// A size is neither 0 nor the number of basic DOFs.
    #[error("size {field} (index {index}) is {value}: it must be 0 or nb = {nb}")]
    Inconsistent {
        /// Index in the size vector.
        index: usize,
        /// Its meaning.
        field: &'static str,
        /// The value.
        value: usize,
        /// The number of basic DOFs.
        nb: usize,
    },
    /// The time size is neither 0 nor 1.
    #[error("size {field} (index {index}) is {value}: a time has 0 or 1 value")]
    TimeSize {
        /// Index in the size vector.
        index: usize,
        /// Its meaning.
        field: &'static str,
        /// The value.
        value: usize,
    },
    /// The number of basic DOFs cannot be told from the sizes (no displacement size).
    #[error("the sizes carry no displacement size: the number of basic DOFs is unknown")]
    NoDofs,
    /// The size vector is not 44 bytes.
    #[error("the size vector has {0} bytes, expected {SIZES_BYTES}")]
    SizesLength(usize),
    /// `[0]` is not a known action code.
    #[error("action code {0} is not a known code (1-15, 98, 99)")]
    BadAction(f64),
    /// A frame is shorter than `dataSize` values.
    #[error("frame truncated: {got} of {expected} bytes")]
    Truncated {
        /// Bytes expected.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// A received value is NaN or infinite.
    #[error("{what}[{index}] is not finite ({value})")]
    NonFinite {
        /// Which vector.
        what: &'static str,
        /// Index in that vector.
        index: usize,
        /// The value.
        value: f64,
    },
}

/// Meaning of the size-vector entries (`OF_Resp_*`: disp, vel, accel, force, time).
pub const SIZE_FIELDS: [&str; SIZES_LEN] = [
    "ctrl disp",
    "ctrl vel",
    "ctrl accel",
    "ctrl force",
    "ctrl time",
    "daq disp",
    "daq vel",
    "daq accel",
    "daq force",
    "daq time",
    "dataSize",
];

/// Index of a response quantity in the control and data-acquisition sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resp {
    /// Displacement.
    Disp = 0,
    /// Velocity.
    Vel = 1,
    /// Acceleration.
    Accel = 2,
    /// Force.
    Force = 3,
    /// Time.
    Time = 4,
}

/// The size vector: how many values of each quantity the control vector (client → server)
/// and the data-acquisition vector (server → client) carry, and the fixed vector length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Control sizes: disp, vel, accel, force, time.
    pub ctrl: [usize; 5],
    /// Data-acquisition sizes: disp, vel, accel, force, time.
    pub daq: [usize; 5],
    /// Values per vector in both directions.
    pub data_size: usize,
}

/// Where each quantity sits in a vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Displacements.
    pub disp: Range<usize>,
    /// Velocities.
    pub vel: Range<usize>,
    /// Accelerations.
    pub accel: Range<usize>,
    /// Forces.
    pub force: Range<usize>,
    /// Time (0 or 1 value).
    pub time: Range<usize>,
}

impl Layout {
    fn from(start: usize, s: &[usize; 5]) -> Self {
        let mut at = start;
        let mut next = |n: usize| {
            let r = at..at + n;
            at += n;
            r
        };
        Self {
            disp: next(s[0]),
            vel: next(s[1]),
            accel: next(s[2]),
            force: next(s[3]),
            time: next(s[4]),
        }
    }

    /// One past the last index used.
    pub fn end(&self) -> usize {
        self.time.end
    }
}

impl Sizes {
    /// The sizes `genericClient` sends for `nb` basic DOFs and its `-dataSize` option
    /// (`dataSize = max(user, 1 + 3nb + 1, nb²)`).
    pub fn generic_client(nb: usize, user_data_size: usize) -> Self {
        Self {
            ctrl: [nb, nb, nb, 0, 1],
            daq: [0, 0, 0, nb, 0],
            data_size: user_data_size.max(3 * nb + 2).max(nb * nb),
        }
    }

    /// Validate eleven integers as received: none negative, `dataSize` in range, the
    /// vectors fit. The number of basic DOFs is checked separately ([`Sizes::basic_dofs`]).
    pub fn from_ints(v: [i32; SIZES_LEN]) -> Result<Self, ProtocolError> {
        for (index, value) in v.iter().enumerate() {
            if *value < 0 {
                return Err(ProtocolError::NegativeSize {
                    index,
                    field: SIZE_FIELDS[index],
                    value: *value,
                });
            }
        }
        let data_size = v[10] as usize;
        if data_size == 0 || data_size > MAX_DATA_SIZE {
            return Err(ProtocolError::DataSize(v[10] as i64));
        }
        let mut ctrl = [0; 5];
        let mut daq = [0; 5];
        for i in 0..5 {
            ctrl[i] = v[i] as usize;
            daq[i] = v[5 + i] as usize;
        }
        let sizes = Self {
            ctrl,
            daq,
            data_size,
        };
        let needed = 1 + ctrl.iter().sum::<usize>();
        if needed > data_size {
            return Err(ProtocolError::DoesNotFit {
                what: "control",
                needed,
                data_size,
            });
        }
        let needed = daq.iter().sum::<usize>();
        if needed > data_size {
            return Err(ProtocolError::DoesNotFit {
                what: "data-acquisition",
                needed,
                data_size,
            });
        }
        Ok(sizes)
    }

    /// The eleven integers.
    pub fn to_ints(&self) -> [i32; SIZES_LEN] {
        let mut v = [0i32; SIZES_LEN];
        for i in 0..5 {
            v[i] = self.ctrl[i] as i32;
            v[5 + i] = self.daq[i] as i32;
        }
        v[10] = self.data_size as i32;
        v
    }

    /// Decode the 44 bytes of the wire (host byte order) and validate ([`Sizes::from_ints`]).
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtocolError> {
        if bytes.len() != SIZES_BYTES {
            return Err(ProtocolError::SizesLength(bytes.len()));
        }
        let mut v = [0i32; SIZES_LEN];
        for (x, c) in v.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = i32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        }
        Self::from_ints(v)
    }

    /// The 44 bytes of the wire (host byte order).
    pub fn encode(&self) -> [u8; SIZES_BYTES] {
        let mut out = [0u8; SIZES_BYTES];
        for (c, x) in out.chunks_exact_mut(4).zip(self.to_ints()) {
            c.copy_from_slice(&x.to_ne_bytes());
        }
        out
    }

    /// The number of basic DOFs `nb` the sizes describe: the control displacement size (the
    /// one every client sends), with every other non-zero vector size equal to it, times of
    /// 0 or 1 value, and room for an `nb × nb` matrix reply.
    pub fn basic_dofs(&self) -> Result<usize, ProtocolError> {
        let nb = self.ctrl[Resp::Disp as usize];
        if nb == 0 {
            return Err(ProtocolError::NoDofs);
        }
        for (index, value) in self.ctrl.iter().chain(&self.daq).enumerate() {
            let is_time = index == 4 || index == 9;
            if is_time {
                if *value > 1 {
                    return Err(ProtocolError::TimeSize {
                        index,
                        field: SIZE_FIELDS[index],
                        value: *value,
                    });
                }
            } else if *value != 0 && *value != nb {
                return Err(ProtocolError::Inconsistent {
                    index,
                    field: SIZE_FIELDS[index],
                    value: *value,
                    nb,
                });
            }
        }
        if nb * nb > self.data_size {
            return Err(ProtocolError::DoesNotFit {
                what: "matrix reply",
                needed: nb * nb,
                data_size: self.data_size,
            });
        }
        Ok(nb)
    }

    /// Where disp, vel, accel, force and time sit in a client → server vector (from index 1,
    /// after the action code), for any sizes — not only `genericClient`'s.
    pub fn ctrl_layout(&self) -> Layout {
        Layout::from(1, &self.ctrl)
    }

    /// Where they sit in the data-acquisition reply (code 6), from index 0.
    pub fn daq_layout(&self) -> Layout {
        Layout::from(0, &self.daq)
    }

    /// Bytes of one vector on the wire.
    pub fn frame_bytes(&self) -> usize {
        self.data_size * 8
    }
}

/// One vector of `dataSize` values and its wire bytes, both allocated once.
#[derive(Debug, Clone)]
pub struct Frame {
    values: Vec<f64>,
    bytes: Vec<u8>,
}

impl Frame {
    /// A zero vector of `data_size` values.
    pub fn new(data_size: usize) -> Self {
        Self {
            values: vec![0.0; data_size],
            bytes: vec![0; data_size * 8],
        }
    }

    /// The values.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The values, to fill before [`Frame::encode`].
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }

    /// The wire bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The wire bytes, to receive into before [`Frame::decode`].
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// Values from the bytes (host byte order).
    pub fn decode(&mut self) {
        for (x, c) in self.values.iter_mut().zip(self.bytes.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            *x = f64::from_ne_bytes(b);
        }
    }

    /// Bytes from the values (host byte order).
    pub fn encode(&mut self) {
        for (c, x) in self.bytes.chunks_exact_mut(8).zip(&self.values) {
            c.copy_from_slice(&x.to_ne_bytes());
        }
    }

    /// The action in `[0]`.
    pub fn action(&self) -> Result<Action, ProtocolError> {
        Action::from_value(self.values[0])
    }

    /// The first non-finite value in `range`, as an error naming `what`.
    pub fn check_finite(
        &self,
        range: Range<usize>,
        what: &'static str,
    ) -> Result<(), ProtocolError> {
        let start = range.start;
        match self.values[range].iter().position(|x| !x.is_finite()) {
            Some(i) => Err(ProtocolError::NonFinite {
                what,
                index: i,
                value: self.values[start + i],
            }),
            None => Ok(()),
        }
    }
}

/// Write `data` at the start of `out` and zero the rest (a reply vector).
pub fn fill_reply(out: &mut [f64], data: &[f64]) {
    let n = data.len().min(out.len());
    out[..n].copy_from_slice(&data[..n]);
    out[n..].iter_mut().for_each(|x| *x = 0.0);
}

/// Fill `out` with NaN over its first `n` values and zeros after (the reply of a server that
/// cannot answer: the client keeps running and the analysis sees NaN).
pub fn fill_nan(out: &mut [f64], n: usize) {
    let n = n.min(out.len());
    out[..n].iter_mut().for_each(|x| *x = f64::NAN);
    out[n..].iter_mut().for_each(|x| *x = 0.0);
}

/// Re-arm `TCP_QUICKACK` on a TCP socket (Linux; a no-op elsewhere). The option is not
/// sticky: the kernel drops back to delayed ACKs, so set it around every `recv`.
#[cfg(target_os = "linux")]
pub fn set_quickack(socket: &impl std::os::fd::AsRawFd) {
    let one: libc::c_int = 1;
    // SAFETY: a valid descriptor owned by the caller, a c_int option of the right size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Re-arm `TCP_QUICKACK` (a no-op on this platform).
#[cfg(not(target_os = "linux"))]
pub fn set_quickack<T>(_socket: &T) {}

/// Read until `buf` is full or the peer closes, re-arming `TCP_QUICKACK` before and after
/// every `recv`. Returns the bytes read: `buf.len()`, or fewer at end of stream (0 = the
/// peer closed between frames). Timeouts and other errors are returned as they are.
#[cfg(target_os = "linux")]
pub fn read_full(stream: &mut std::net::TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        set_quickack(stream);
        let r = stream.read(&mut buf[got..]);
        set_quickack(stream);
        match r {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Read until `buf` is full or the peer closes (see the Linux version).
#[cfg(not(target_os = "linux"))]
pub fn read_full(stream: &mut std::net::TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Write a whole buffer to a TCP stream (the other direction of [`read_full`]).
pub fn write_full(stream: &mut std::net::TcpStream, buf: &[u8]) -> io::Result<()> {
    stream.write_all(buf)
}

/// Server side of the UDP opening: wait for the client's `'a'` and answer `'b'` to its
/// address. Returns the client's address. A datagram that is not the single byte `'a'` is
/// an error (`InvalidData`) naming what came, so the caller can report it and wait again.
pub fn udp_accept(socket: &UdpSocket) -> io::Result<SocketAddr> {
    let mut b = [0u8; 16];
    let (n, peer) = socket.recv_from(&mut b)?;
    if n != 1 || b[0] != UDP_HELLO {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{peer}: bad UDP handshake: expected the single byte 'a', received {n} byte(s) starting {:?}",
                &b[..n.min(4)]
            ),
        ));
    }
    socket.send_to(&[UDP_WELCOME], peer)?;
    Ok(peer)
}

/// Client side of the UDP opening: send `'a'` to `server` up to `tries` times, each waiting
/// `wait` for the `'b'`. Leaves the socket's read timeout at `wait`.
pub fn udp_connect(
    socket: &UdpSocket,
    server: SocketAddr,
    tries: usize,
    wait: Duration,
) -> io::Result<()> {
    socket.set_read_timeout(Some(wait))?;
    let mut b = [0u8; 16];
    for _ in 0..tries.max(1) {
        socket.send_to(&[UDP_HELLO], server)?;
        match socket.recv_from(&mut b) {
            Ok((1, from)) if from == server && b[0] == UDP_WELCOME => return Ok(()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{server}: no UDP handshake answer after {tries} tries"),
    ))
}

/// Send `bytes` to `peer` as datagrams of at most [`MAX_UDP_DATAGRAM`] bytes.
pub fn udp_send(socket: &UdpSocket, peer: SocketAddr, bytes: &[u8]) -> io::Result<()> {
    for chunk in bytes.chunks(MAX_UDP_DATAGRAM) {
        socket.send_to(chunk, peer)?;
    }
    Ok(())
}

/// What [`udp_recv`] received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpReceived {
    /// `buf` is full: every datagram came from the peer with the expected length.
    Complete,
    /// A datagram of the wrong length (`got` bytes where `expected` were due, at `offset`
    /// in the vector); the vector is unusable.
    WrongLength {
        /// Offset of the datagram in the vector.
        offset: usize,
        /// Expected length.
        expected: usize,
        /// Received length (`expected + 1` means longer).
        got: usize,
    },
    /// A datagram from another address (ignored; `buf` is not complete).
    Stranger(SocketAddr),
}

/// Receive one vector of `buf.len()` bytes from `peer` as consecutive datagrams of at most
/// [`MAX_UDP_DATAGRAM`] bytes. `scratch` must hold at least `MAX_UDP_DATAGRAM + 1` bytes
/// (so that a longer datagram is seen as such, not silently cut). Timeouts are returned as
/// errors.
pub fn udp_recv(
    socket: &UdpSocket,
    peer: SocketAddr,
    buf: &mut [u8],
    scratch: &mut [u8],
) -> io::Result<UdpReceived> {
    assert!(scratch.len() > MAX_UDP_DATAGRAM);
    let mut offset = 0;
    while offset < buf.len() {
        let expected = (buf.len() - offset).min(MAX_UDP_DATAGRAM);
        let (n, from) = socket.recv_from(&mut scratch[..MAX_UDP_DATAGRAM + 1])?;
        if from != peer {
            return Ok(UdpReceived::Stranger(from));
        }
        if n != expected {
            return Ok(UdpReceived::WrongLength {
                offset,
                expected,
                got: n,
            });
        }
        buf[offset..offset + n].copy_from_slice(&scratch[..n]);
        offset += n;
    }
    Ok(UdpReceived::Complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_client_sizes_round_trip() {
        let s = Sizes::generic_client(2, GENERIC_CLIENT_DATA_SIZE);
        assert_eq!(s.to_ints(), [2, 2, 2, 0, 1, 0, 0, 0, 2, 0, 256]);
        assert_eq!(Sizes::decode(&s.encode()).unwrap(), s);
        assert_eq!(s.basic_dofs().unwrap(), 2);
        let l = s.ctrl_layout();
        assert_eq!((l.disp, l.vel, l.accel, l.time), (1..3, 3..5, 5..7, 7..8));
        assert_eq!(s.daq_layout().force, 0..2);
        // dataSize grows for large nb.
        assert_eq!(Sizes::generic_client(20, 10).data_size, 400);
        assert_eq!(Sizes::generic_client(2, 1).data_size, 8);
    }

    #[test]
    fn expelement_layout_is_derived_from_the_sizes() {
        // OpenFresco's ExpElement `-server`: daq disp/vel/accel/force/time = nb each.
        let s = Sizes::from_ints([3, 3, 3, 0, 1, 3, 3, 3, 3, 1, 64]).unwrap();
        assert_eq!(s.basic_dofs().unwrap(), 3);
        let d = s.daq_layout();
        assert_eq!((d.disp, d.force, d.time), (0..3, 9..12, 12..13));
    }

    #[test]
    fn bad_sizes_are_refused_with_the_field() {
        let e = Sizes::from_ints([2, -1, 2, 0, 1, 0, 0, 0, 2, 0, 256]).unwrap_err();
        assert!(e.to_string().contains("ctrl vel"), "{e}");
        assert!(matches!(
            Sizes::from_ints([2, 2, 2, 0, 1, 0, 0, 0, 2, 0, 1 << 21]),
            Err(ProtocolError::DataSize(_))
        ));
        assert!(matches!(
            Sizes::from_ints([2, 2, 2, 0, 1, 0, 0, 0, 2, 0, 0]),
            Err(ProtocolError::DataSize(0))
        ));
        assert!(matches!(
            Sizes::from_ints([2, 2, 2, 0, 1, 0, 0, 0, 2, 0, 6]),
            Err(ProtocolError::DoesNotFit { .. })
        ));
        let s = Sizes::from_ints([2, 3, 2, 0, 1, 0, 0, 0, 2, 0, 256]).unwrap();
        let e = s.basic_dofs().unwrap_err();
        assert!(e.to_string().contains("ctrl vel") && e.to_string().contains("nb = 2"));
        let s = Sizes::from_ints([2, 2, 2, 0, 2, 0, 0, 0, 2, 0, 256]).unwrap();
        assert!(matches!(
            s.basic_dofs(),
            Err(ProtocolError::TimeSize { .. })
        ));
        let s = Sizes::from_ints([0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 8]).unwrap();
        assert_eq!(s.basic_dofs(), Err(ProtocolError::NoDofs));
        let s = Sizes::from_ints([4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 8]).unwrap();
        assert!(matches!(
            s.basic_dofs(),
            Err(ProtocolError::DoesNotFit { .. })
        ));
        assert_eq!(Sizes::decode(&[0; 40]), Err(ProtocolError::SizesLength(40)));
    }

    #[test]
    fn actions() {
        for a in Action::ALL {
            assert_eq!(Action::from_code(a.code()), Some(a));
            assert_eq!(Action::from_value(a.value()), Ok(a));
        }
        assert_eq!(Action::from_code(0), None);
        assert_eq!(Action::from_code(16), None);
        assert!(Action::from_value(f64::NAN).is_err());
        assert!(Action::from_value(3.5).is_err());
        assert!(Action::from_value(1e300).is_err());
        assert!(Action::GetForce.expects_reply());
        assert!(!Action::SetTrialResponse.expects_reply());
        assert!(!Action::Die.expects_reply());
        assert!(Action::GetMass.is_matrix() && !Action::GetForce.is_matrix());
    }

    #[test]
    fn frames_encode_and_decode() {
        let mut f = Frame::new(4);
        f.values_mut().copy_from_slice(&[3.0, 1.5, -2.0, f64::NAN]);
        f.encode();
        let mut g = Frame::new(4);
        g.bytes_mut().copy_from_slice(f.bytes());
        g.decode();
        assert_eq!(g.action(), Ok(Action::SetTrialResponse));
        assert_eq!(&g.values()[..3], &[3.0, 1.5, -2.0]);
        assert!(g.check_finite(0..3, "x").is_ok());
        assert!(matches!(
            g.check_finite(1..4, "disp"),
            Err(ProtocolError::NonFinite { index: 2, .. })
        ));
        let mut out = [7.0; 5];
        fill_reply(&mut out, &[1.0, 2.0]);
        assert_eq!(out, [1.0, 2.0, 0.0, 0.0, 0.0]);
        fill_nan(&mut out, 2);
        assert!(out[0].is_nan() && out[1].is_nan() && out[2] == 0.0);
    }
}
