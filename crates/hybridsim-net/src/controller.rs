//! `hybridsim controller`: the virtual laboratory served on the controller link, so that a
//! test's two halves run as two processes exactly as with a real controller.
//!
//! A [`ControllerServer`] answers the command frames of [`crate::link`] (UDP by default, or
//! TCP) with the feedback frames of a [`TransferSystem`] — the laboratory's
//! [`LabControl::virtual_twin`](hybridsim::physical::LabControl::virtual_twin), built from the
//! model by [`virtual_twin_of`]. Per command frame (sequence `s`, time `t`, status, targets):
//!
//! - `REST|HOLD` (sequence 0, the first frame of a session): `measure_at_rest` at the frame's
//!   target displacements; the reply carries the measured position and force;
//! - `HOLD`: `hold_sample(s, t, …)` (a fresh measurement without a command);
//! - otherwise `send(s, t, targets)` then `receive(s, …)`.
//!
//! The reply echoes `s`, carries the controller time (seconds of wall clock since the session's
//! first frame) and `READY`; `READY|STALE` when the twin had no new sample; `INTERLOCK` from
//! the first error of the twin on (it is never called again in that session). A repeated
//! sequence (a duplicated datagram) is answered again from the cache of the last reply and
//! never re-applied to the lab; an older one (a reordered datagram) is not applied and not
//! answered. A malformed frame — wrong size, magic, version or actuator count, undefined
//! status bits, a non-finite number — is refused with a message naming the peer and the
//! sequence: no reply on UDP, the connection closed on TCP. `END` ends the session after its
//! reply.
//!
//! Sessions: a UDP session belongs to the peer address of its first frame, which must be the
//! measurement at rest; a measurement at rest from another peer takes the lab over (the old
//! session is abandoned, with a message). A TCP session is one connection (one at a time;
//! others wait in the backlog). Every session has a fresh twin (a fresh specimen).
//!
//! Faults ([`Faults`], all drawn from counter-based functions of `(seed, sequence)`, so a run
//! is reproducible whatever the timing): added latency and uniform jitter (replies wait in a
//! preallocated delay queue while the server keeps receiving), dropped and duplicated replies,
//! a frozen sensor (the replies repeat the last measurement while the lab keeps moving), a
//! disconnect (no more replies; TCP closes the connection) and an interlock. Their times are
//! test time, the `tick·Δt^C` each command frame carries: a fault hits the same tick whatever
//! the pacing.
//!
//! Steady state allocates nothing per frame: the frame buffers, the measurement slices, the
//! reply cache and the delay queue are sized when the server starts; messages are formatted
//! only when something is refused or happens.

use crate::link::{
    command_len, command_status, decode_command, encode_feedback, feedback_len, feedback_status,
    FeedbackHeader, FrameError, COMMAND_MAGIC, HEADER_BYTES, MAX_ACTUATORS, VERSION,
};
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferSystem};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Builds a fresh virtual twin for every session.
pub type TwinFactory = Box<dyn FnMut() -> Box<dyn TransferSystem> + Send>;

/// Where the server's messages go: [`Note::Info`] for the operator (sessions beginning and
/// ending), [`Note::Warning`] for faults and events, [`Note::Refused`] for every refused
/// frame (one message each).
pub type NoteSink = Box<dyn FnMut(Note, &str) + Send>;

/// Kind of a server message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// A session began or ended.
    Info,
    /// An injected fault acted, the twin failed, a frame came out of order, a session was
    /// abandoned.
    Warning,
    /// A frame was refused (malformed, unexpected); it was not applied and not answered.
    Refused,
}

/// Transport of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One datagram per frame; replies go to the sender's address.
    Udp,
    /// Frames back to back on one connection.
    Tcp,
}

impl Transport {
    /// `udp` or `tcp`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Udp => "udp",
            Self::Tcp => "tcp",
        }
    }
}

/// Injected faults of the served link. Times are test time: the wall-clock time `tick·Δt^C`
/// the runner puts in every command frame, so that a fault hits the same tick whatever the
/// pacing (a lock-step run as fast as possible included); probabilities are per reply, drawn
/// from `(seed, sequence)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Seed of every random draw.
    pub seed: u64,
    /// Every reply waits this long (s).
    pub latency: f64,
    /// Plus a uniform extra delay in `[0, jitter]` (s).
    pub jitter: f64,
    /// Latency and jitter act from this test time on (`None`: from the start).
    pub latency_after: Option<f64>,
    /// Probability that a reply is not sent.
    pub drop: f64,
    /// Probability that a reply is sent twice.
    pub duplicate: f64,
    /// From this test time on, the replies repeat the last measurement (a frozen
    /// sensor) while the lab keeps moving.
    pub freeze_after: Option<f64>,
    /// From this test time on, no more replies (TCP: the connection is closed).
    pub disconnect_after: Option<f64>,
    /// From this test time on, every reply carries `INTERLOCK` and the lab holds.
    pub interlock_after: Option<f64>,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            seed: 1,
            latency: 0.0,
            jitter: 0.0,
            latency_after: None,
            drop: 0.0,
            duplicate: 0.0,
            freeze_after: None,
            disconnect_after: None,
            interlock_after: None,
        }
    }
}

impl Faults {
    /// Check every value (finite, non-negative, probabilities in [0, 1]).
    pub fn validate(&self) -> Result<(), String> {
        let times = [
            ("latency", Some(self.latency)),
            ("jitter", Some(self.jitter)),
            ("latency-after", self.latency_after),
            ("freeze-after", self.freeze_after),
            ("disconnect-after", self.disconnect_after),
            ("interlock-after", self.interlock_after),
        ];
        for (name, value) in times {
            if let Some(x) = value {
                if !x.is_finite() || x < 0.0 {
                    return Err(format!(
                        "--{name} {x}: a time in seconds, finite and not negative"
                    ));
                }
                if x > 1.0e6 {
                    return Err(format!("--{name} {x}: more than 10^6 s"));
                }
            }
        }
        for (name, p) in [("drop", self.drop), ("duplicate", self.duplicate)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("--{name} {p}: a probability in [0, 1]"));
            }
        }
        Ok(())
    }

    /// Whether any fault is injected.
    pub fn any(&self) -> bool {
        self.delays()
            || self.drop > 0.0
            || self.duplicate > 0.0
            || self.freeze_after.is_some()
            || self.disconnect_after.is_some()
            || self.interlock_after.is_some()
    }

    fn delays(&self) -> bool {
        self.latency > 0.0 || self.jitter > 0.0
    }

    /// One line for the operator: `none`, or every injected fault and the seed.
    pub fn describe(&self) -> String {
        if !self.any() {
            return "none".into();
        }
        let mut parts = Vec::new();
        if self.latency > 0.0 {
            parts.push(format!("latency {} s", self.latency));
        }
        if self.jitter > 0.0 {
            parts.push(format!("jitter up to {} s", self.jitter));
        }
        if let (true, Some(t)) = (self.delays(), self.latency_after) {
            parts.push(format!("delays from {t} s"));
        }
        if self.drop > 0.0 {
            parts.push(format!("drop {}", self.drop));
        }
        if self.duplicate > 0.0 {
            parts.push(format!("duplicate {}", self.duplicate));
        }
        if let Some(t) = self.freeze_after {
            parts.push(format!("sensor frozen after {t} s"));
        }
        if let Some(t) = self.disconnect_after {
            parts.push(format!("disconnect after {t} s"));
        }
        if let Some(t) = self.interlock_after {
            parts.push(format!("interlock after {t} s"));
        }
        format!("{}; seed {}", parts.join(", "), self.seed)
    }

    /// Uniform draw in [0, 1) for `(seed, sequence, channel)`.
    fn uniform(&self, sequence: u64, channel: u64) -> f64 {
        let h = mix(self.seed ^ mix(sequence.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ mix(channel)));
        (h >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// SplitMix64 finalizer.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const CHANNEL_DROP: u64 = 1;
const CHANNEL_DUPLICATE: u64 = 2;
const CHANNEL_JITTER: u64 = 3;

/// How the server listens and how long it lives.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerOptions {
    /// UDP or TCP.
    pub transport: Transport,
    /// Address to listen on (port 0: a free port).
    pub address: SocketAddr,
    /// Serve one session, then return.
    pub once: bool,
    /// Return when no frame came for this long (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Injected faults.
    pub faults: Faults,
    /// Replies that may wait in the delay queue at once (latency and jitter); a reply that
    /// finds it full is dropped and counted.
    pub delay_capacity: usize,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            transport: Transport::Udp,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            once: false,
            idle_timeout: Some(Duration::from_secs(30)),
            faults: Faults::default(),
            delay_capacity: 16_384,
        }
    }
}

/// Counts of what the server did (also in the closing message).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStatistics {
    /// Sessions begun.
    pub sessions: u64,
    /// Command frames applied (or answered with `INTERLOCK`).
    pub frames: u64,
    /// Feedback frames sent (duplicates and repeats included).
    pub replies: u64,
    /// Frames refused with a message.
    pub refused: u64,
    /// Repeated sequences answered again from the cache.
    pub repeated: u64,
    /// Older sequences (reordered) neither applied nor answered.
    pub out_of_order: u64,
    /// Frames of a disconnected session, ignored.
    pub ignored: u64,
    /// Replies dropped by `drop`.
    pub dropped: u64,
    /// Replies sent twice by `duplicate`.
    pub duplicated: u64,
    /// Replies dropped because the delay queue was full.
    pub queue_full: u64,
    /// Replies marked `STALE` (the twin had no new sample).
    pub stale: u64,
    /// Replies marked `INTERLOCK`.
    pub interlocked: u64,
}

impl ServerStatistics {
    /// One line for the operator.
    pub fn describe(&self) -> String {
        format!(
            "sessions {}, frames applied {}, replies sent {}, refused {}, repeated from the \
             cache {}, out of order {}, ignored after a disconnect {}, dropped {}, duplicated \
             {}, lost to a full delay queue {}, stale {}, interlocked {}",
            self.sessions,
            self.frames,
            self.replies,
            self.refused,
            self.repeated,
            self.out_of_order,
            self.ignored,
            self.dropped,
            self.duplicated,
            self.queue_full,
            self.stale,
            self.interlocked
        )
    }
}

/// Why [`ControllerServer::serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// With `once`: the session ended (`END`, a disconnect, the peer closed, a refused TCP
    /// frame).
    SessionEnded,
    /// No frame for the idle timeout; `in_session` when a session was under way (its runner
    /// went away without `END`).
    IdleTimeout {
        /// A session was under way.
        in_session: bool,
    },
    /// The stop flag was set (Ctrl-C, SIGTERM).
    Stopped,
}

/// What [`ControllerServer::serve`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeReport {
    /// Why it returned.
    pub ending: Ending,
    /// What it did.
    pub statistics: ServerStatistics,
}

/// A failure that stops the server (never a peer's mistake: those are refused frames).
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// The address cannot be bound.
    #[error("cannot listen on {address} ({transport}): {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// `udp` or `tcp`.
        transport: &'static str,
        /// Why.
        source: io::Error,
    },
    /// The lab or the options cannot be served.
    #[error("{0}")]
    Setup(String),
    /// The socket failed.
    #[error("socket on {address}: {source}")]
    Socket {
        /// The local address.
        address: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// The physical substructure `substructure` of `model` (the only one with a `[lab]` when
/// `None`): its name, its actuators' names and a factory of fresh virtual twins of its lab
/// ([`hybridsim::physical::LabControl::virtual_twin`]).
pub fn virtual_twin_of(
    model: &hybridsim::model::Model,
    substructure: Option<&str>,
) -> Result<(String, Vec<String>, TwinFactory), String> {
    if model.lab.is_none() {
        return Err(
            "the model has no [lab]: there is no laboratory to serve (add a [lab] with its \
             actuators)"
                .into(),
        );
    }
    let partitions =
        hybridsim::assembly::build_partitions(model, hybridsim::assembly::Grouping::Partitioned)
            .map_err(|e| e.to_string())?;
    let mut labs: Vec<(String, hybridsim::physical::PhysicalPort)> = Vec::new();
    for mut p in partitions {
        if let Some(port) = p.physical.take() {
            if port.lab().is_some() {
                labs.push((p.state.name.clone(), port));
            }
        }
    }
    let names: Vec<String> = labs.iter().map(|(n, _)| format!("`{n}`")).collect();
    let index = match substructure {
        Some(wanted) => labs.iter().position(|(n, _)| n == wanted).ok_or_else(|| {
            format!(
                "no physical substructure `{wanted}` with a laboratory (the model has {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )
        })?,
        None => match labs.len() {
            0 => return Err("the model has no physical substructure with a laboratory".into()),
            1 => 0,
            _ => {
                return Err(format!(
                    "the model has {} physical substructures ({}): choose one with \
                     --substructure NAME",
                    labs.len(),
                    names.join(", ")
                ))
            }
        },
    };
    let (name, port) = labs.swap_remove(index);
    let lab = port.lab().expect("checked above");
    let actuators = lab.transfer_request().actuators;
    let factory: TwinFactory = Box::new(move || port.lab().expect("checked above").virtual_twin());
    Ok((name, actuators, factory))
}

// ---------------------------------------------------------------------------------------------
// The delay queue.

/// Replies waiting for their due time: preallocated slots, a min-heap of due times.
struct DelayQueue {
    len: usize,
    bytes: Vec<u8>,
    dest: Vec<Option<SocketAddr>>,
    free: Vec<usize>,
    heap: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    order: u64,
}

impl DelayQueue {
    fn new(capacity: usize, len: usize) -> Self {
        Self {
            len,
            bytes: vec![0; capacity * len],
            dest: vec![None; capacity],
            free: (0..capacity).rev().collect(),
            heap: BinaryHeap::with_capacity(capacity),
            order: 0,
        }
    }

    fn push(&mut self, due: Instant, dest: Option<SocketAddr>, frame: &[u8]) -> bool {
        let Some(slot) = self.free.pop() else {
            return false;
        };
        self.bytes[slot * self.len..(slot + 1) * self.len].copy_from_slice(frame);
        self.dest[slot] = dest;
        self.order += 1;
        self.heap.push(Reverse((due, self.order, slot)));
        true
    }

    fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((due, _, _))| *due)
    }

    /// The next slot due at `now`, if any (release it with [`DelayQueue::release`]).
    fn pop_due(&mut self, now: Instant) -> Option<usize> {
        match self.heap.peek() {
            Some(Reverse((due, _, _))) if *due <= now => {
                let Reverse((_, _, slot)) = self.heap.pop().expect("peeked");
                Some(slot)
            }
            _ => None,
        }
    }

    fn frame(&self, slot: usize) -> &[u8] {
        &self.bytes[slot * self.len..(slot + 1) * self.len]
    }

    fn release(&mut self, slot: usize) {
        self.free.push(slot);
    }

    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn clear(&mut self) {
        while let Some(Reverse((_, _, slot))) = self.heap.pop() {
            self.free.push(slot);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One session: the twin, the measurement and the reply cache.

/// What to do with a valid command frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Send the new reply (in the cache); `end`: the session ends after it.
    Reply { end: bool },
    /// A repeated sequence: send the cached reply again.
    Repeat,
    /// An older sequence: nothing.
    Ignore,
    /// The injected disconnect acted: no reply, the session is over.
    Disconnect,
}

struct Session {
    factory: TwinFactory,
    twin: Box<dyn TransferSystem>,
    fresh: bool,
    n: usize,
    faults: Faults,
    start: Instant,
    number: u64,
    last_sequence: Option<u64>,
    interlocked: bool,
    interlock_noted: bool,
    frozen: bool,
    disconnected: bool,
    /// Test time of the last frame applied (the fault schedule's clock).
    test_time: f64,
    cmd: Vec<ActuatorCommand>,
    position: Vec<f64>,
    force: Vec<f64>,
    reply_d: Vec<f64>,
    reply_f: Vec<f64>,
    cache: Vec<u8>,
}

impl Session {
    fn new(mut factory: TwinFactory, n: usize, faults: Faults) -> Self {
        let twin = factory();
        Self {
            factory,
            twin,
            fresh: true,
            n,
            faults,
            start: Instant::now(),
            number: 0,
            last_sequence: None,
            interlocked: false,
            interlock_noted: false,
            frozen: false,
            disconnected: false,
            test_time: 0.0,
            cmd: vec![ActuatorCommand::default(); n],
            position: vec![0.0; n],
            force: vec![0.0; n],
            reply_d: vec![0.0; n],
            reply_f: vec![0.0; n],
            cache: vec![0; feedback_len(n)],
        }
    }

    /// Begin a session at `now` with a fresh twin (the first session uses the twin built at
    /// start).
    fn begin(&mut self, now: Instant) {
        if !self.fresh {
            self.twin = (self.factory)();
        }
        self.fresh = false;
        self.start = now;
        self.number += 1;
        self.last_sequence = None;
        self.interlocked = false;
        self.interlock_noted = false;
        self.frozen = false;
        self.disconnected = false;
        self.test_time = 0.0;
        for x in self
            .position
            .iter_mut()
            .chain(&mut self.force)
            .chain(&mut self.reply_d)
            .chain(&mut self.reply_f)
        {
            *x = 0.0;
        }
    }

    fn elapsed(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.start).as_secs_f64()
    }

    /// Apply the frame in `self.cmd` with `header` (decoded) and build the reply in the cache.
    fn frame(
        &mut self,
        header: &crate::link::CommandHeader,
        now: Instant,
        peer: &SocketAddr,
        notes: &mut NoteSink,
        stats: &mut ServerStatistics,
    ) -> Verdict {
        let s = header.sequence;
        if let Some(last) = self.last_sequence {
            if s == last {
                stats.repeated += 1;
                return Verdict::Repeat;
            }
            if s < last {
                stats.out_of_order += 1;
                notes(
                    Note::Warning,
                    &format!(
                        "frame from {peer} (sequence {s}) after sequence {last}: out of order, \
                         not applied, not answered"
                    ),
                );
                return Verdict::Ignore;
            }
        }
        self.last_sequence = Some(s);
        // Replies carry the controller's clock; faults follow the test time of the frame.
        let clock = self.elapsed(now);
        let time = header.time;
        self.test_time = time;
        if let Some(at) = self.faults.disconnect_after {
            if time >= at {
                self.disconnected = true;
                notes(
                    Note::Warning,
                    &format!(
                        "injected disconnect at test time {time:.6} s (sequence {s} from \
                         {peer}): no more replies in this session"
                    ),
                );
                return Verdict::Disconnect;
            }
        }
        stats.frames += 1;
        if let Some(at) = self.faults.interlock_after {
            if time >= at && !self.interlocked {
                self.interlocked = true;
                self.interlock_noted = true;
                notes(
                    Note::Warning,
                    &format!(
                        "injected interlock at test time {time:.6} s (sequence {s} from \
                         {peer}): every reply carries INTERLOCK, the lab holds"
                    ),
                );
            }
        }
        let mut status = feedback_status::READY;
        if !self.interlocked {
            let rest = command_status::REST | command_status::HOLD;
            let twin = &mut self.twin;
            let (cmd, position, force) = (&self.cmd, &mut self.position, &mut self.force);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                if header.status & rest == rest {
                    for (p, c) in position.iter_mut().zip(cmd) {
                        *p = c.d;
                    }
                    twin.measure_at_rest(force, position)
                        .map(|()| Sample::Fresh)
                } else if header.status & command_status::HOLD != 0 {
                    twin.hold_sample(s, header.time, force, position)
                } else {
                    twin.send(s, header.time, cmd)?;
                    twin.receive(s, force, position)
                }
            }));
            match outcome {
                Ok(Ok(Sample::Fresh)) => {
                    // A frame cannot carry a non-finite number: a real controller's own
                    // limits would trip, so does this one.
                    let bad = (0..self.n)
                        .find(|&k| !self.position[k].is_finite() || !self.force[k].is_finite());
                    if let Some(k) = bad {
                        self.interlocked = true;
                        notes(
                            Note::Warning,
                            &format!(
                                "the virtual lab measured displacement {} and force {} on \
                                 actuator {k} at sequence {s} (from {peer}): a frame cannot \
                                 carry them; INTERLOCK from now on",
                                self.position[k], self.force[k]
                            ),
                        );
                    }
                }
                Ok(Ok(Sample::Missing)) => {
                    status |= feedback_status::STALE;
                    stats.stale += 1;
                }
                Ok(Err(e)) => {
                    self.interlocked = true;
                    notes(
                        Note::Warning,
                        &format!(
                            "the virtual lab failed at sequence {s} (from {peer}): {e}; \
                             INTERLOCK from now on"
                        ),
                    );
                }
                Err(panic) => {
                    self.interlocked = true;
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".into());
                    notes(
                        Note::Warning,
                        &format!(
                            "the virtual lab panicked at sequence {s} (from {peer}): {what}; \
                             INTERLOCK from now on"
                        ),
                    );
                }
            }
        }
        if self.interlocked {
            status = feedback_status::INTERLOCK;
            stats.interlocked += 1;
        }
        if let Some(at) = self.faults.freeze_after {
            if time >= at && !self.frozen {
                self.frozen = true;
                notes(
                    Note::Warning,
                    &format!(
                        "injected frozen sensor at test time {time:.6} s (sequence {s} \
                         from {peer}): the replies repeat the last measurement"
                    ),
                );
            }
        }
        if !self.frozen && !self.interlocked {
            self.reply_d.copy_from_slice(&self.position);
            self.reply_f.copy_from_slice(&self.force);
        }
        encode_feedback(
            &FeedbackHeader {
                sequence: s,
                time: clock,
                status,
            },
            &self.reply_d,
            &self.reply_f,
            &mut self.cache,
        )
        .expect("actuator count checked at start");
        Verdict::Reply {
            end: header.status & command_status::END != 0,
        }
    }
}

/// Sequence of a raw frame, for messages (`None` when it is too short to carry one).
fn raw_sequence(bytes: &[u8]) -> Option<u64> {
    let b: [u8; 8] = bytes.get(8..16)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

fn frame_label(bytes: &[u8]) -> String {
    match raw_sequence(bytes) {
        Some(s) => format!("sequence {s}"),
        None => format!("sequence unknown: {} bytes", bytes.len()),
    }
}

fn is_rest(header: &crate::link::CommandHeader) -> bool {
    let rest = command_status::REST | command_status::HOLD;
    header.sequence == 0 && header.status & rest == rest
}

/// A REST bit without HOLD or off sequence 0 is a protocol error.
fn rest_misuse(header: &crate::link::CommandHeader) -> Option<&'static str> {
    if header.status & command_status::REST != 0 && !is_rest(header) {
        Some("REST is only valid with HOLD in the first frame (sequence 0)")
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// The server.

enum Listener {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

/// The controller-link server of one virtual laboratory.
pub struct ControllerServer {
    options: ControllerOptions,
    listener: Listener,
    local: SocketAddr,
    actuators: Vec<String>,
    session: Session,
    queue: DelayQueue,
    notes: NoteSink,
    stats: ServerStatistics,
    rx: Vec<u8>,
    last_activity: Instant,
}

/// Sends one reply: to the address (UDP), or on the connection (TCP, `None`).
type SendReply<'a> = dyn FnMut(&[u8], Option<SocketAddr>) -> io::Result<()> + 'a;

/// Longest wait between two checks of the stop flag and the idle timeout.
const POLL: Duration = Duration::from_millis(50);
/// Step of the nonblocking receive loop while replies wait in the delay queue.
const QUEUE_STEP: Duration = Duration::from_micros(100);
/// Step of the nonblocking accept loop of the TCP listener.
const ACCEPT_STEP: Duration = Duration::from_millis(1);
/// A TCP peer that does not read its replies for this long loses the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

impl ControllerServer {
    /// Bind `options.address` and prepare to serve the twins of `factory` (one per session)
    /// for the actuators `actuators` (in command order). Messages go to `notes`.
    pub fn bind(
        mut factory: TwinFactory,
        actuators: Vec<String>,
        options: ControllerOptions,
        notes: NoteSink,
    ) -> Result<Self, ControllerError> {
        options.faults.validate().map_err(ControllerError::Setup)?;
        let n = actuators.len();
        if n == 0 || n > MAX_ACTUATORS {
            return Err(ControllerError::Setup(format!(
                "{n} actuators: the controller link carries 1 to {MAX_ACTUATORS}"
            )));
        }
        let probe = factory();
        if probe.n_actuators() != n {
            return Err(ControllerError::Setup(format!(
                "the virtual lab has {} actuators, {n} names were given",
                probe.n_actuators()
            )));
        }
        drop(probe);
        let address = options.address;
        let bind_error = |source| ControllerError::Bind {
            address,
            transport: options.transport.name(),
            source,
        };
        let (listener, local) = match options.transport {
            Transport::Udp => {
                let socket = UdpSocket::bind(address).map_err(bind_error)?;
                let local = socket.local_addr().map_err(bind_error)?;
                socket.set_read_timeout(Some(POLL)).map_err(bind_error)?;
                (Listener::Udp(socket), local)
            }
            Transport::Tcp => {
                let listener = TcpListener::bind(address).map_err(bind_error)?;
                let local = listener.local_addr().map_err(bind_error)?;
                listener.set_nonblocking(true).map_err(bind_error)?;
                (Listener::Tcp(listener), local)
            }
        };
        let capacity = if options.faults.delays() {
            options.delay_capacity.max(1)
        } else {
            1
        };
        Ok(Self {
            queue: DelayQueue::new(capacity, feedback_len(n)),
            session: Session::new(factory, n, options.faults.clone()),
            options,
            listener,
            local,
            actuators,
            notes,
            stats: ServerStatistics::default(),
            rx: vec![0; 65_536],
            last_activity: Instant::now(),
        })
    }

    /// The bound address (the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The actuators served, in command order.
    pub fn actuators(&self) -> &[String] {
        &self.actuators
    }

    /// What is served (the twin's description: actuators, dynamics, specimen).
    pub fn describe(&self) -> String {
        self.session.twin.describe()
    }

    /// The options.
    pub fn options(&self) -> &ControllerOptions {
        &self.options
    }

    /// Serve until `once` ends a session, the idle timeout passes or `stop` is set.
    pub fn serve(&mut self, stop: &AtomicBool) -> Result<ServeReport, ControllerError> {
        self.last_activity = Instant::now();
        let ending = match self.options.transport {
            Transport::Udp => self.serve_udp(stop)?,
            Transport::Tcp => self.serve_tcp(stop)?,
        };
        match ending {
            Ending::IdleTimeout { in_session } => (self.notes)(
                Note::Info,
                &format!(
                    "no frame for {} s: exiting{}",
                    self.options.idle_timeout.map_or(0.0, |d| d.as_secs_f64()),
                    if in_session {
                        " (a session was under way: its runner went away without END)"
                    } else {
                        ""
                    }
                ),
            ),
            Ending::Stopped => (self.notes)(Note::Info, "stopped"),
            Ending::SessionEnded => {}
        }
        Ok(ServeReport {
            ending,
            statistics: self.stats.clone(),
        })
    }

    /// Nothing to read on a non-blocking socket: sleep until the next delayed reply is due
    /// (at most [`QUEUE_STEP`]).
    fn wait_for_queue(&self) {
        let wait = self
            .queue
            .next_due()
            .map_or(QUEUE_STEP, |d| d.saturating_duration_since(Instant::now()))
            .min(QUEUE_STEP);
        std::thread::sleep(wait);
    }

    fn idle(&self, now: Instant) -> bool {
        self.options
            .idle_timeout
            .is_some_and(|t| now.saturating_duration_since(self.last_activity) >= t)
    }

    fn socket_error(&self, source: io::Error) -> ControllerError {
        ControllerError::Socket {
            address: self.local,
            source,
        }
    }

    /// Queue or send the cached reply to `dest` (`None`: the TCP stream), with the delay and
    /// the drop/duplicate decisions of the faults (`decide`: a new reply, not a repeat).
    fn dispatch(
        &mut self,
        sequence: u64,
        decide: bool,
        now: Instant,
        dest: Option<SocketAddr>,
        out: &mut SendReply<'_>,
    ) -> io::Result<()> {
        let f = &self.session.faults;
        let mut copies = 1;
        if decide {
            if f.drop > 0.0 && f.uniform(sequence, CHANNEL_DROP) < f.drop {
                self.stats.dropped += 1;
                return Ok(());
            }
            if f.duplicate > 0.0 && f.uniform(sequence, CHANNEL_DUPLICATE) < f.duplicate {
                self.stats.duplicated += 1;
                copies = 2;
            }
        }
        if f.delays() && f.latency_after.is_none_or(|t| self.session.test_time >= t) {
            let delay = f.latency + f.jitter * f.uniform(sequence, CHANNEL_JITTER);
            let due = now + Duration::from_secs_f64(delay);
            for _ in 0..copies {
                if !self.queue.push(due, dest, &self.session.cache) {
                    self.stats.queue_full += 1;
                    if self.stats.queue_full == 1 {
                        (self.notes)(
                            Note::Warning,
                            &format!(
                                "the delay queue is full ({} replies waiting): replies are \
                                 dropped",
                                self.options.delay_capacity
                            ),
                        );
                    }
                }
            }
            return Ok(());
        }
        for _ in 0..copies {
            out(&self.session.cache, dest)?;
            self.stats.replies += 1;
        }
        Ok(())
    }

    /// Send the replies due at `now`.
    fn flush_due(&mut self, now: Instant, out: &mut SendReply<'_>) -> io::Result<()> {
        while let Some(slot) = self.queue.pop_due(now) {
            let result = out(self.queue.frame(slot), self.queue.dest[slot]);
            self.queue.release(slot);
            result?;
            self.stats.replies += 1;
        }
        Ok(())
    }

    fn begin_session(&mut self, now: Instant, peer: &SocketAddr) {
        self.session.begin(now);
        self.stats.sessions += 1;
        let number = self.session.number;
        (self.notes)(
            Note::Info,
            &format!("session {number}: {peer} (measurement at rest)"),
        );
    }

    fn end_note(&mut self, how: &str) {
        let number = self.session.number;
        let last = self
            .session
            .last_sequence
            .map_or("none".to_string(), |s| s.to_string());
        (self.notes)(
            Note::Info,
            &format!("session {number} ended ({how}; last sequence {last})"),
        );
    }

    // -----------------------------------------------------------------------------------------
    // UDP

    fn serve_udp(&mut self, stop: &AtomicBool) -> Result<Ending, ControllerError> {
        let Listener::Udp(socket) = &self.listener else {
            unreachable!("udp transport")
        };
        let socket = socket.try_clone().map_err(|e| self.socket_error(e))?;
        let n = self.session.n;
        // The peer of the session under way, the peer of the last one.
        let mut active: Option<SocketAddr> = None;
        let mut last_peer: Option<SocketAddr> = None;
        let mut finished = false;
        let mut nonblocking = false;
        // A reply that cannot be sent (the peer's port closed, its network unreachable) is
        // that peer's loss, not the server's end: kept here and reported as a warning.
        let failed: std::cell::Cell<Option<(SocketAddr, io::Error)>> = Default::default();
        let mut send = |bytes: &[u8], dest: Option<SocketAddr>| -> io::Result<()> {
            let dest = dest.expect("udp replies have an address");
            if let Err(e) = socket.send_to(bytes, dest) {
                failed.set(Some((dest, e)));
            }
            Ok(())
        };
        let report_failed = |notes: &mut NoteSink| {
            if let Some((dest, e)) = failed.take() {
                notes(
                    Note::Warning,
                    &format!("cannot send a reply to {dest}: {e}"),
                );
            }
        };
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(Ending::Stopped);
            }
            let now = Instant::now();
            self.flush_due(now, &mut send)
                .map_err(|e| self.socket_error(e))?;
            report_failed(&mut self.notes);
            if finished && self.queue.is_empty() {
                return Ok(Ending::SessionEnded);
            }
            if self.idle(now) {
                return Ok(Ending::IdleTimeout {
                    in_session: active.is_some(),
                });
            }
            // Blocking receive (woken by a frame, or every POLL) while no reply waits; a
            // nonblocking receive stepped by short sleeps while one does.
            let want_nonblocking = !self.queue.is_empty();
            if want_nonblocking != nonblocking {
                socket
                    .set_nonblocking(want_nonblocking)
                    .map_err(|e| self.socket_error(e))?;
                nonblocking = want_nonblocking;
            }
            let (len, peer) = match socket.recv_from(&mut self.rx) {
                Ok(x) => x,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionRefused
                    ) =>
                {
                    if nonblocking {
                        self.wait_for_queue();
                    }
                    continue;
                }
                Err(e) => return Err(self.socket_error(e)),
            };
            let now = Instant::now();
            self.last_activity = now;
            if finished {
                // Once: the session is over, only the waiting replies go out.
                continue;
            }
            // The header first (a frame for another actuator count is named as such, not
            // as a frame of the wrong size), then the whole frame.
            let problem = if len >= HEADER_BYTES {
                header_problem(&self.rx[..HEADER_BYTES], n)
            } else {
                None
            };
            let decoded = match problem {
                Some(why) => Err(why),
                None => decode_command(&self.rx[..len], &mut self.session.cmd[..n])
                    .map_err(|e| e.to_string()),
            };
            let header = match decoded {
                Ok(h) => h,
                Err(why) => {
                    let label = frame_label(&self.rx[..len]);
                    self.refuse_labelled(&peer, &label, &why);
                    continue;
                }
            };
            if let Some(why) = rest_misuse(&header) {
                let label = frame_label(&self.rx[..len]);
                self.refuse_labelled(&peer, &label, why);
                continue;
            }
            let rest = is_rest(&header);
            match active {
                Some(p) if p == peer => {}
                Some(p) if rest => {
                    let last = self.session.last_sequence.unwrap_or(0);
                    (self.notes)(
                        Note::Warning,
                        &format!(
                            "a new session from {peer} takes the lab over: the session with {p} \
                             (last sequence {last}) is abandoned"
                        ),
                    );
                    self.queue.clear();
                    self.begin_session(now, &peer);
                    active = Some(peer);
                }
                Some(p) => {
                    let label = frame_label(&self.rx[..len]);
                    self.refuse_labelled(
                        &peer,
                        &label,
                        &format!("a session with {p} is under way"),
                    );
                    continue;
                }
                None if rest => {
                    self.begin_session(now, &peer);
                    active = Some(peer);
                }
                None => {
                    let from_last = last_peer == Some(peer);
                    if from_last && self.session.disconnected {
                        self.stats.ignored += 1;
                    } else if from_last && self.session.last_sequence == Some(header.sequence) {
                        // A duplicate of the last frame of the ended session (its END).
                        self.stats.repeated += 1;
                        self.dispatch(header.sequence, false, now, Some(peer), &mut send)
                            .map_err(|e| self.socket_error(e))?;
                    } else if from_last
                        && self
                            .session
                            .last_sequence
                            .is_some_and(|l| header.sequence < l)
                    {
                        self.stats.out_of_order += 1;
                    } else {
                        let label = frame_label(&self.rx[..len]);
                        self.refuse_labelled(
                            &peer,
                            &label,
                            "no session under way: a session begins with the measurement at \
                             rest (status REST|HOLD, sequence 0)",
                        );
                    }
                    continue;
                }
            }
            let verdict = self
                .session
                .frame(&header, now, &peer, &mut self.notes, &mut self.stats);
            match verdict {
                Verdict::Reply { end } => {
                    self.dispatch(header.sequence, true, now, Some(peer), &mut send)
                        .map_err(|e| self.socket_error(e))?;
                    if end {
                        self.end_note("END");
                        last_peer = active.take();
                        finished = self.options.once;
                    }
                }
                Verdict::Repeat => {
                    self.dispatch(header.sequence, false, now, Some(peer), &mut send)
                        .map_err(|e| self.socket_error(e))?;
                }
                Verdict::Ignore => {}
                Verdict::Disconnect => {
                    self.queue.clear();
                    self.end_note("injected disconnect");
                    last_peer = active.take();
                    if self.options.once {
                        return Ok(Ending::SessionEnded);
                    }
                }
            }
        }
    }

    fn refuse_labelled(&mut self, peer: &SocketAddr, label: &str, why: &str) {
        self.stats.refused += 1;
        (self.notes)(
            Note::Refused,
            &format!("frame from {peer} ({label}) refused: {why}"),
        );
    }

    // -----------------------------------------------------------------------------------------
    // TCP

    fn serve_tcp(&mut self, stop: &AtomicBool) -> Result<Ending, ControllerError> {
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(Ending::Stopped);
            }
            if self.idle(Instant::now()) {
                return Ok(Ending::IdleTimeout { in_session: false });
            }
            let Listener::Tcp(listener) = &self.listener else {
                unreachable!("tcp transport")
            };
            match listener.accept() {
                Ok((stream, peer)) => {
                    self.last_activity = Instant::now();
                    match self.serve_connection(stream, peer, stop)? {
                        Some(ending) => return Ok(ending),
                        None if self.options.once && self.stats.sessions > 0 => {
                            return Ok(Ending::SessionEnded)
                        }
                        None => {}
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    std::thread::sleep(ACCEPT_STEP);
                }
                Err(e) => return Err(self.socket_error(e)),
            }
        }
    }

    /// Serve one connection; `Some(ending)` when the server must return (stop, idle).
    fn serve_connection(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        stop: &AtomicBool,
    ) -> Result<Option<Ending>, ControllerError> {
        let n = self.session.n;
        let len = command_len(n);
        let setup = (|| {
            stream.set_nonblocking(false)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(POLL))?;
            stream.set_write_timeout(Some(WRITE_TIMEOUT))
        })();
        if let Err(e) = setup {
            (self.notes)(
                Note::Warning,
                &format!("connection from {peer}: cannot configure the socket: {e}"),
            );
            return Ok(None);
        }
        let mut stream = stream;
        let mut filled = 0usize;
        let mut started = false;
        let mut nonblocking = false;
        let writer = match stream.try_clone() {
            Ok(w) => w,
            Err(e) => {
                (self.notes)(Note::Warning, &format!("connection from {peer}: {e}"));
                return Ok(None);
            }
        };
        let mut send = |bytes: &[u8], _: Option<SocketAddr>| write_frame(&writer, bytes);
        let result: Option<Ending> = 'conn: loop {
            if stop.load(Ordering::Relaxed) {
                break 'conn Some(Ending::Stopped);
            }
            let now = Instant::now();
            if let Err(e) = self.flush_due(now, &mut send) {
                (self.notes)(
                    Note::Warning,
                    &format!("connection from {peer}: cannot send a reply: {e}; closed"),
                );
                break 'conn None;
            }
            if self.idle(now) {
                break 'conn Some(Ending::IdleTimeout {
                    in_session: started,
                });
            }
            let want_nonblocking = !self.queue.is_empty();
            if want_nonblocking != nonblocking {
                if let Err(e) = stream.set_nonblocking(want_nonblocking) {
                    (self.notes)(Note::Warning, &format!("connection from {peer}: {e}"));
                    break 'conn None;
                }
                nonblocking = want_nonblocking;
            }
            // Read the header, then the rest of the frame (its length known from n).
            let need = if filled < HEADER_BYTES {
                HEADER_BYTES
            } else {
                len
            };
            match stream.read(&mut self.rx[filled..need]) {
                Ok(0) => {
                    if filled > 0 {
                        let label = frame_label(&self.rx[..filled]);
                        self.refuse_labelled(
                            &peer,
                            &label,
                            &format!(
                                "the connection closed in the middle of a frame ({filled} of \
                                 {len} bytes)"
                            ),
                        );
                    } else if started {
                        (self.notes)(
                            Note::Warning,
                            &format!(
                                "{peer} closed the connection without END (last sequence {})",
                                self.session
                                    .last_sequence
                                    .map_or("none".to_string(), |s| s.to_string())
                            ),
                        );
                    }
                    break 'conn None;
                }
                Ok(k) => {
                    filled += k;
                    self.last_activity = Instant::now();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if nonblocking {
                        self.wait_for_queue();
                    }
                    continue;
                }
                Err(e) => {
                    (self.notes)(
                        Note::Warning,
                        &format!("connection from {peer}: {e}; closed"),
                    );
                    break 'conn None;
                }
            }
            if filled == HEADER_BYTES {
                if let Some(why) = header_problem(&self.rx[..HEADER_BYTES], n) {
                    let label = frame_label(&self.rx[..HEADER_BYTES]);
                    self.refuse_labelled(&peer, &label, &format!("{why}; connection closed"));
                    break 'conn None;
                }
            }
            if filled < len {
                continue;
            }
            filled = 0;
            let now = Instant::now();
            let header = match decode_command(&self.rx[..len], &mut self.session.cmd[..n]) {
                Ok(h) => h,
                Err(e) => {
                    let label = frame_label(&self.rx[..len]);
                    self.refuse_labelled(&peer, &label, &format!("{e}; connection closed"));
                    break 'conn None;
                }
            };
            if let Some(why) = rest_misuse(&header) {
                let label = frame_label(&self.rx[..len]);
                self.refuse_labelled(&peer, &label, &format!("{why}; connection closed"));
                break 'conn None;
            }
            if !started {
                if !is_rest(&header) {
                    let label = frame_label(&self.rx[..len]);
                    self.refuse_labelled(
                        &peer,
                        &label,
                        "a session begins with the measurement at rest (status REST|HOLD, \
                         sequence 0); connection closed",
                    );
                    break 'conn None;
                }
                started = true;
                self.begin_session(now, &peer);
            }
            match self
                .session
                .frame(&header, now, &peer, &mut self.notes, &mut self.stats)
            {
                Verdict::Reply { end } => {
                    if let Err(e) = self.dispatch(header.sequence, true, now, None, &mut send) {
                        (self.notes)(
                            Note::Warning,
                            &format!("connection from {peer}: cannot send a reply: {e}; closed"),
                        );
                        break 'conn None;
                    }
                    if end {
                        self.end_note("END");
                        // The waiting replies go out before the connection closes.
                        while let Some(due) = self.queue.next_due() {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            std::thread::sleep(due.saturating_duration_since(Instant::now()));
                            if self.flush_due(Instant::now(), &mut send).is_err() {
                                break;
                            }
                        }
                        break 'conn None;
                    }
                }
                Verdict::Repeat => {
                    if let Err(e) = self.dispatch(header.sequence, false, now, None, &mut send) {
                        (self.notes)(
                            Note::Warning,
                            &format!("connection from {peer}: cannot send a reply: {e}; closed"),
                        );
                        break 'conn None;
                    }
                }
                Verdict::Ignore => {}
                Verdict::Disconnect => {
                    self.end_note("injected disconnect: connection closed");
                    break 'conn None;
                }
            }
        };
        self.queue.clear();
        let _ = stream.shutdown(std::net::Shutdown::Both);
        Ok(result)
    }
}

/// What is wrong with a TCP frame's header before its body is read (magic, version, count):
/// the body's length depends on the count, so a wrong one cannot be skipped.
fn header_problem(header: &[u8], n: usize) -> Option<String> {
    let magic: [u8; 4] = header[0..4].try_into().expect("4 bytes");
    if magic != COMMAND_MAGIC {
        return Some(
            FrameError::Magic {
                kind: "command",
                expected: "HSC1",
                found: magic,
            }
            .to_string(),
        );
    }
    let version = u16::from_le_bytes([header[4], header[5]]);
    if version != VERSION {
        return Some(
            FrameError::Version {
                kind: "command",
                found: version,
            }
            .to_string(),
        );
    }
    let count = u16::from_le_bytes([header[6], header[7]]) as usize;
    if count != n {
        return Some(
            FrameError::Actuators {
                kind: "command",
                expected: n,
                found: count,
            }
            .to_string(),
        );
    }
    None
}

/// Write a whole frame on a stream that may be nonblocking (short waits on a full buffer,
/// up to [`WRITE_TIMEOUT`]).
fn write_frame(mut stream: &TcpStream, bytes: &[u8]) -> io::Result<()> {
    let mut sent = 0;
    let deadline = Instant::now() + WRITE_TIMEOUT;
    while sent < bytes.len() {
        match stream.write(&bytes[sent..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(k) => sent += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
