//! The runner's end of the real-time controller link: a [`TransferSystem`] that sends one
//! command frame per controller tick to a controller over UDP or TCP and reads its feedback
//! frames (`docs/controller-link.md`; frames in [`crate::link`]).
//!
//! Every call of the safety layer becomes one frame:
//!
//! | call | frame |
//! |---|---|
//! | `measure_at_rest` | sequence 0, `HOLD | REST | STARTING`, targets = the expected rest position |
//! | `hold_sample(tick)` | sequence `tick`, `HOLD | STARTING`, targets = the last target sent |
//! | `send(tick)` | sequence `tick`, `ARMED` (after a trip `TRIPPED | RAMPING`), the targets |
//! | drop | `END | HOLD` (best effort, no reply awaited) |
//!
//! and the reply is read in one of two modes ([`LinkMode`]):
//!
//! - **lock-step**: the reply echoing the frame's sequence is awaited up to `timeout`; older
//!   echoes (late or duplicated replies) are counted and skipped. Both ends then move tick by
//!   tick, and a test over the link gives the same bits as the same test in-process.
//! - **streaming**: the newest reply already received is taken without waiting; no new reply
//!   is a missing sample (the safety layer holds the last good one up to `dropout_ticks`), a
//!   reply trailing its command by more than `max_lag` ticks is stale (missing too), and no
//!   reply at all for `timeout` is a timeout.
//!
//! What trips the safety layer, and as which event (run.json names it, and the message names
//! the peer, the tick and the cause): no reply within `timeout` → `link_timeout`; a reply
//! echoing a command never sent, a malformed frame, a tick that does not increase →
//! `link_protocol`; a closed connection or an unreachable port → `link_lost`; the
//! controller's INTERLOCK bit → `controller_interlock`. A reply with the STALE bit is a missing
//! sample.
//!
//! The steady state allocates nothing: frames are encoded into and decoded from preallocated
//! buffers, the latency histogram is preallocated, and waiting uses the socket's timeout.

use crate::latency::Latency;
use crate::link::{
    command_len, command_status, decode_feedback, encode_command, feedback_len, feedback_status,
    CommandHeader, FeedbackHeader, MAX_ACTUATORS,
};
use hybridsim::model::lab::{LinkMode, LinkSettings, TransferKind};
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferRequest, TransferSystem};
use hybridsim::physical::{EventKind, TransferError};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

/// Slots of the ring of send instants (streaming replies may trail by up to `max_lag`).
const SEND_RING: usize = 1024;

/// The transport under the link.
enum Transport {
    Udp(UdpSocket),
    Tcp {
        stream: TcpStream,
        /// Bytes received and not yet decoded.
        pending: Vec<u8>,
        filled: usize,
    },
}

/// Counters of the link, for run.json.
#[derive(Debug, Default, Clone)]
struct Counters {
    frames_sent: u64,
    replies: u64,
    late_replies: u64,
    stale_replies: u64,
    missing_replies: u64,
    malformed: u64,
}

/// The runner's end of the controller link.
pub struct ControllerLink {
    kind: TransferKind,
    peer: SocketAddr,
    transport: Transport,
    n: usize,
    mode: LinkMode,
    timeout: Duration,
    max_lag: u64,
    tx: Vec<u8>,
    rx: Vec<u8>,
    commands: Vec<ActuatorCommand>,
    displacement: Vec<f64>,
    force: Vec<f64>,
    /// Sequence of the last frame sent.
    last_sent: Option<u64>,
    /// Sequence echoed by the newest reply.
    last_echo: Option<u64>,
    /// When each recent sequence was sent (slot `sequence % SEND_RING`).
    sent_at: Vec<(u64, Instant)>,
    /// When the newest reply came.
    last_reply_at: Instant,
    /// The newest reply has been handed out already (streaming).
    consumed: bool,
    newest_status: u32,
    tripped: bool,
    counters: Counters,
    latency: Latency,
}

impl ControllerLink {
    /// Connect to the controller of `request` (`udp` or `tcp`; [`TransferRequest::link`]).
    pub fn connect(request: &TransferRequest) -> Result<Self, TransferError> {
        let link = request.link.as_ref().ok_or_else(|| {
            TransferError::new(format!(
                "transfer system `{}` without [lab.link]",
                request.kind.name()
            ))
        })?;
        Self::open(request.kind, link, request.actuators.len())
    }

    /// Open the link of `kind` (`Udp` or `Tcp`) with `settings` for `n` actuators.
    pub fn open(
        kind: TransferKind,
        settings: &LinkSettings,
        n: usize,
    ) -> Result<Self, TransferError> {
        let lost = |what: String| TransferError::of(EventKind::LinkLost, what);
        if n == 0 || n > MAX_ACTUATORS {
            return Err(TransferError::new(format!(
                "controller link: {n} actuators (a frame carries 1 to {MAX_ACTUATORS})"
            )));
        }
        let peer = settings
            .address
            .to_socket_addrs()
            .map_err(|e| lost(format!("controller address `{}`: {e}", settings.address)))?
            .next()
            .ok_or_else(|| {
                lost(format!(
                    "controller address `{}` resolves to nothing",
                    settings.address
                ))
            })?;
        let io = |what: &str, e: std::io::Error| {
            lost(format!(
                "controller link {} {peer}: {what}: {e}",
                kind.name()
            ))
        };
        let transport = match kind {
            TransferKind::Udp => {
                let bind = settings.bind.clone().unwrap_or_else(|| {
                    if peer.ip().is_loopback() {
                        "127.0.0.1:0".into()
                    } else {
                        "0.0.0.0:0".into()
                    }
                });
                let socket = UdpSocket::bind(&bind).map_err(|e| io(&format!("bind {bind}"), e))?;
                socket.connect(peer).map_err(|e| io("connect", e))?;
                Transport::Udp(socket)
            }
            TransferKind::Tcp => {
                let stream = TcpStream::connect_timeout(
                    &peer,
                    Duration::from_secs_f64(settings.timeout.max(0.5)),
                )
                .map_err(|e| io("connect", e))?;
                stream.set_nodelay(true).map_err(|e| io("TCP_NODELAY", e))?;
                Transport::Tcp {
                    stream,
                    pending: vec![0; 4 * feedback_len(n)],
                    filled: 0,
                }
            }
            other => {
                return Err(TransferError::new(format!(
                    "the controller link speaks `udp` or `tcp`, not `{}`",
                    other.name()
                )))
            }
        };
        let now = Instant::now();
        Ok(Self {
            kind,
            peer,
            transport,
            n,
            mode: settings.mode,
            timeout: Duration::from_secs_f64(settings.timeout),
            max_lag: settings.max_lag,
            tx: vec![0; command_len(n)],
            rx: vec![0; feedback_len(n) + 64],
            commands: vec![ActuatorCommand::default(); n],
            displacement: vec![0.0; n],
            force: vec![0.0; n],
            last_sent: None,
            last_echo: None,
            sent_at: vec![(u64::MAX, now); SEND_RING],
            last_reply_at: now,
            consumed: true,
            newest_status: 0,
            tripped: false,
            counters: Counters::default(),
            // 1 µs … 100 s at 3 significant figures: allocated once, here.
            latency: Latency::new(),
        })
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn error(&self, kind: EventKind, tick: u64, what: std::fmt::Arguments) -> TransferError {
        TransferError::of(
            kind,
            format!(
                "controller link {} {} at tick {tick}: {what}",
                self.name(),
                self.peer
            ),
        )
    }

    /// Encode and send the frame of `sequence` with `status` and the targets in
    /// `self.commands`.
    fn send_frame(&mut self, sequence: u64, t_wall: f64, status: u32) -> Result<(), TransferError> {
        if let Some(last) = self.last_sent {
            if sequence <= last {
                return Err(self.error(
                    EventKind::LinkProtocol,
                    sequence,
                    format_args!("the tick does not increase (last frame sent: {last})"),
                ));
            }
        }
        let header = CommandHeader {
            sequence,
            time: t_wall,
            status,
        };
        if let Err(e) = encode_command(&header, &self.commands, &mut self.tx) {
            return Err(self.error(
                EventKind::LinkProtocol,
                sequence,
                format_args!("cannot encode the command: {e}"),
            ));
        }
        let sent_at = Instant::now();
        let result = match &mut self.transport {
            Transport::Udp(socket) => socket.send(&self.tx).map(|_| ()),
            Transport::Tcp { stream, .. } => stream.write_all(&self.tx),
        };
        if let Err(e) = result {
            return Err(self.error(
                EventKind::LinkLost,
                sequence,
                format_args!("cannot send: {e}"),
            ));
        }
        self.last_sent = Some(sequence);
        self.sent_at[(sequence % SEND_RING as u64) as usize] = (sequence, sent_at);
        self.counters.frames_sent += 1;
        Ok(())
    }

    fn status_word(&self) -> u32 {
        if self.tripped {
            command_status::TRIPPED | command_status::RAMPING
        } else {
            command_status::ARMED
        }
    }

    /// Receive one frame, waiting until `deadline` at most (`None`: do not wait). Returns
    /// `Ok(false)` when nothing came in time.
    fn receive_frame(
        &mut self,
        tick: u64,
        deadline: Option<Instant>,
    ) -> Result<bool, TransferError> {
        let len = feedback_len(self.n);
        let wait = |deadline: Option<Instant>| -> Option<Duration> {
            deadline.map(|d| {
                d.saturating_duration_since(Instant::now())
                    .max(Duration::from_micros(1))
            })
        };
        match &mut self.transport {
            Transport::Udp(socket) => {
                let result = match wait(deadline) {
                    None => socket
                        .set_nonblocking(true)
                        .and_then(|_| socket.recv(&mut self.rx)),
                    Some(w) => socket
                        .set_nonblocking(false)
                        .and_then(|_| socket.set_read_timeout(Some(w)))
                        .and_then(|_| socket.recv(&mut self.rx)),
                };
                match result {
                    Ok(got) => {
                        if got != len {
                            self.counters.malformed += 1;
                            return Err(self.error(
                                EventKind::LinkProtocol,
                                tick,
                                format_args!(
                                    "feedback datagram of {got} bytes, expected {len} ({} actuators)",
                                    self.n
                                ),
                            ));
                        }
                        Ok(true)
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        Ok(false)
                    }
                    Err(e) => Err(self.error(
                        EventKind::LinkLost,
                        tick,
                        format_args!("cannot receive: {e}"),
                    )),
                }
            }
            Transport::Tcp {
                stream,
                pending,
                filled,
            } => loop {
                if *filled >= len {
                    self.rx[..len].copy_from_slice(&pending[..len]);
                    pending.copy_within(len..*filled, 0);
                    *filled -= len;
                    return Ok(true);
                }
                let result = match wait(deadline) {
                    None => stream
                        .set_nonblocking(true)
                        .and_then(|_| stream.read(&mut pending[*filled..])),
                    Some(w) => stream
                        .set_nonblocking(false)
                        .and_then(|_| stream.set_read_timeout(Some(w)))
                        .and_then(|_| stream.read(&mut pending[*filled..])),
                };
                match result {
                    Ok(0) => {
                        let peer = self.peer;
                        return Err(TransferError::of(
                            EventKind::LinkLost,
                            format!(
                                "controller link tcp {peer} at tick {tick}: the controller closed \
                                 the connection"
                            ),
                        ));
                    }
                    Ok(got) => *filled += got,
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        return Ok(false)
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        let peer = self.peer;
                        return Err(TransferError::of(
                            EventKind::LinkLost,
                            format!(
                                "controller link tcp {peer} at tick {tick}: cannot receive: {e}"
                            ),
                        ));
                    }
                }
                if deadline.is_some_and(|d| Instant::now() >= d) && *filled < len {
                    return Ok(false);
                }
            },
        }
    }

    /// Decode the frame in `rx` into the reply buffers; returns its header.
    fn decode(&mut self, tick: u64) -> Result<FeedbackHeader, TransferError> {
        let len = feedback_len(self.n);
        match decode_feedback(&self.rx[..len], &mut self.displacement, &mut self.force) {
            Ok(h) => Ok(h),
            Err(e) => {
                self.counters.malformed += 1;
                Err(self.error(
                    EventKind::LinkProtocol,
                    tick,
                    format_args!("malformed feedback: {e}"),
                ))
            }
        }
    }

    /// Account for a decoded reply: echo sanity, latency, interlock.
    fn accept(&mut self, tick: u64, h: &FeedbackHeader) -> Result<(), TransferError> {
        let sent = self.last_sent.unwrap_or(0);
        if self.last_sent.is_none() || h.sequence > sent {
            self.counters.malformed += 1;
            return Err(self.error(
                EventKind::LinkProtocol,
                tick,
                format_args!(
                    "a reply echoes sequence {}, which was never sent (last sent: {sent})",
                    h.sequence
                ),
            ));
        }
        self.counters.replies += 1;
        let (seq, at) = self.sent_at[(h.sequence % SEND_RING as u64) as usize];
        if seq == h.sequence {
            self.latency.record(at.elapsed());
        }
        if h.status & feedback_status::INTERLOCK != 0 {
            return Err(self.error(
                EventKind::ControllerInterlock,
                tick,
                format_args!(
                    "the controller reports an interlock (reply to {})",
                    h.sequence
                ),
            ));
        }
        Ok(())
    }

    /// Lock-step: wait for the reply echoing `sequence`.
    fn await_echo(&mut self, sequence: u64) -> Result<(), TransferError> {
        let (_, sent) = self.sent_at[(sequence % SEND_RING as u64) as usize];
        let deadline = sent + self.timeout;
        loop {
            if !self.receive_frame(sequence, Some(deadline))? {
                self.counters.missing_replies += 1;
                return Err(self.error(
                    EventKind::LinkTimeout,
                    sequence,
                    format_args!(
                        "no reply within the timeout of {} s",
                        self.timeout.as_secs_f64()
                    ),
                ));
            }
            let h = self.decode(sequence)?;
            self.accept(sequence, &h)?;
            if h.sequence == sequence {
                self.newest_status = h.status;
                self.last_echo = Some(h.sequence);
                self.last_reply_at = Instant::now();
                return Ok(());
            }
            // An older echo: a late or duplicated reply.
            self.counters.late_replies += 1;
        }
    }

    /// Streaming: take every reply already received; `Ok(true)` when a new, recent one is
    /// in the buffers.
    fn take_newest(&mut self, tick: u64) -> Result<bool, TransferError> {
        let mut fresh = false;
        let mut scratch_d = [0.0f64; MAX_ACTUATORS];
        let mut scratch_f = [0.0f64; MAX_ACTUATORS];
        while self.receive_frame(tick, None)? {
            // Keep the newest reply's values: decode into scratch first.
            let len = feedback_len(self.n);
            let h = match decode_feedback(
                &self.rx[..len],
                &mut scratch_d[..self.n],
                &mut scratch_f[..self.n],
            ) {
                Ok(h) => h,
                Err(e) => {
                    self.counters.malformed += 1;
                    return Err(self.error(
                        EventKind::LinkProtocol,
                        tick,
                        format_args!("malformed feedback: {e}"),
                    ));
                }
            };
            self.accept(tick, &h)?;
            if self.last_echo.is_some_and(|e| h.sequence <= e) {
                self.counters.late_replies += 1;
                continue;
            }
            self.last_echo = Some(h.sequence);
            self.last_reply_at = Instant::now();
            self.newest_status = h.status;
            self.displacement.copy_from_slice(&scratch_d[..self.n]);
            self.force.copy_from_slice(&scratch_f[..self.n]);
            fresh = true;
        }
        if fresh {
            self.consumed = false;
        }
        if self.last_reply_at.elapsed() > self.timeout {
            self.counters.missing_replies += 1;
            return Err(self.error(
                EventKind::LinkTimeout,
                tick,
                format_args!(
                    "no reply for longer than the timeout of {} s",
                    self.timeout.as_secs_f64()
                ),
            ));
        }
        if self.consumed {
            self.counters.missing_replies += 1;
            return Ok(false);
        }
        let echo = self.last_echo.unwrap_or(0);
        if echo + self.max_lag < tick {
            self.counters.stale_replies += 1;
            self.consumed = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// The reply to `tick` into `force` and `position` (both modes).
    fn read_reply(
        &mut self,
        tick: u64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        match self.mode {
            LinkMode::LockStep => self.await_echo(tick)?,
            LinkMode::Streaming => {
                if !self.take_newest(tick)? {
                    return Ok(Sample::Missing);
                }
                self.consumed = true;
            }
        }
        if self.newest_status & feedback_status::STALE != 0 {
            self.counters.stale_replies += 1;
            return Ok(Sample::Missing);
        }
        force.copy_from_slice(&self.force);
        position.copy_from_slice(&self.displacement);
        Ok(Sample::Fresh)
    }
}

impl TransferSystem for ControllerLink {
    fn describe(&self) -> String {
        format!(
            "controller link ({} to {}, {} actuators, {})",
            self.name(),
            self.peer,
            self.n,
            match self.mode {
                LinkMode::LockStep => "lock-step".to_string(),
                LinkMode::Streaming => format!("streaming, max lag {} ticks", self.max_lag),
            }
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
        for (c, p) in self.commands.iter_mut().zip(position.iter()) {
            *c = ActuatorCommand {
                d: *p,
                v: 0.0,
                a: 0.0,
            };
        }
        let status = command_status::HOLD | command_status::REST | command_status::STARTING;
        self.send_frame(0, 0.0, status)?;
        // At rest the reply is always awaited, whatever the mode.
        self.await_echo(0)?;
        if self.newest_status & feedback_status::STALE != 0 {
            return Err(self.error(
                EventKind::TransferFault,
                0,
                format_args!("the controller has no measurement at rest (STALE)"),
            ));
        }
        force.copy_from_slice(&self.force);
        position.copy_from_slice(&self.displacement);
        Ok(())
    }

    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError> {
        self.commands.copy_from_slice(cmd);
        let status = self.status_word();
        self.send_frame(tick, t_wall, status)
    }

    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        let status = command_status::HOLD | command_status::STARTING | self.status_word();
        self.send_frame(tick, t_wall, status)?;
        self.read_reply(tick, force, position)
    }

    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError> {
        if self.last_sent != Some(tick) {
            return Err(self.error(
                EventKind::LinkProtocol,
                tick,
                format_args!(
                    "no command was sent for this tick (last: {:?})",
                    self.last_sent
                ),
            ));
        }
        self.read_reply(tick, force, achieved)
    }

    fn statistics(&self) -> Vec<(String, f64)> {
        let c = &self.counters;
        let mut out = vec![
            ("frames_sent".to_string(), c.frames_sent as f64),
            ("replies".to_string(), c.replies as f64),
            ("late_replies".to_string(), c.late_replies as f64),
            ("stale_replies".to_string(), c.stale_replies as f64),
            ("missing_replies".to_string(), c.missing_replies as f64),
            ("malformed_replies".to_string(), c.malformed as f64),
            ("timeout_seconds".to_string(), self.timeout.as_secs_f64()),
        ];
        self.latency.append_statistics(&mut out);
        out
    }

    fn on_trip(&mut self) {
        self.tripped = true;
    }
}

impl Drop for ControllerLink {
    fn drop(&mut self) {
        // Tell the controller the test is over (best effort; nobody waits for the reply).
        if self.last_sent.is_some() {
            let next = self.last_sent.map_or(1, |s| s + 1);
            let status = command_status::END | command_status::HOLD | self.status_word();
            let _ = self.send_frame(next, 0.0, status);
        }
    }
}
