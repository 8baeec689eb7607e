//! The frames of the real-time controller link (byte by byte in `docs/controller-link.md`).
//!
//! Once per controller tick the runner sends a **command frame** (sequence number, test time,
//! status word, and per actuator the target displacement, velocity and acceleration in
//! specimen units and wall-clock rates) and the controller answers with a **feedback frame**
//! (the echoed sequence number, its clock, its status and interlock word, and per actuator
//! the measured displacement and force). Both are fixed-size for a given number of actuators,
//! little-endian, with a four-byte magic and a version, so that a lab can implement the other
//! end in Simulink Real-Time UDP blocks, LabVIEW or a PLC.
//!
//! Encoding writes into a caller's buffer and decoding reads into the caller's slices: nothing
//! allocates, so both can run in a real-time step. Decoding checks everything a peer could get
//! wrong — the size, the magic, the version, the actuator count, the reserved word and every
//! number (non-finite values are refused) — and says which field is wrong.

use hybridsim::physical::transfer::ActuatorCommand;

/// Magic of a command frame (runner → controller): `HSC1`.
pub const COMMAND_MAGIC: [u8; 4] = *b"HSC1";
/// Magic of a feedback frame (controller → runner): `HSF1`.
pub const FEEDBACK_MAGIC: [u8; 4] = *b"HSF1";
/// Version of both frames.
pub const VERSION: u16 = 1;
/// Bytes of the header common to both frames.
pub const HEADER_BYTES: usize = 32;
/// Bytes per actuator in a command frame (displacement, velocity, acceleration).
pub const COMMAND_BYTES_PER_ACTUATOR: usize = 24;
/// Bytes per actuator in a feedback frame (displacement, force).
pub const FEEDBACK_BYTES_PER_ACTUATOR: usize = 16;
/// Most actuators in one frame (a 1 500-byte Ethernet MTU carries 56 command entries).
pub const MAX_ACTUATORS: usize = 56;

/// Bits of the runner's status word in a command frame.
pub mod command_status {
    /// The safety layer is armed (test commands).
    pub const ARMED: u32 = 1 << 0;
    /// The safety layer has tripped (the command is a hold or a ramp-down command).
    pub const TRIPPED: u32 = 1 << 1;
    /// The command belongs to the paced ramp-down.
    pub const RAMPING: u32 = 1 << 2;
    /// The command belongs to the bumpless start (hold, approach, settling).
    pub const STARTING: u32 = 1 << 3;
    /// The last frame of the test: the controller may hold and close.
    pub const END: u32 = 1 << 4;
    /// Hold the present position and ignore the targets; answer with a fresh measurement
    /// (the measurement at rest and the hold of the bumpless start, which read the actuators
    /// without commanding them).
    pub const HOLD: u32 = 1 << 5;
    /// Measure at rest (with HOLD; the first frame of a test, sequence 0): the targets carry
    /// the position the runner expects the actuators to rest at.
    pub const REST: u32 = 1 << 6;
    /// Every defined bit.
    pub const ALL: u32 = ARMED | TRIPPED | RAMPING | STARTING | END | HOLD | REST;
}

/// Bits of the controller's status and interlock word in a feedback frame.
pub mod feedback_status {
    /// The controller follows the commands (servo loop closed, hydraulics on).
    pub const READY: u32 = 1 << 0;
    /// An interlock of the controller has tripped (its own limits, an emergency stop): the
    /// runner's safety layer trips too.
    pub const INTERLOCK: u32 = 1 << 1;
    /// The measurement is not new (the controller repeated its last sample).
    pub const STALE: u32 = 1 << 2;
    /// Every defined bit.
    pub const ALL: u32 = READY | INTERLOCK | STALE;
}

/// The header fields of a command frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommandHeader {
    /// Controller tick of the command (strictly increasing over a test).
    pub sequence: u64,
    /// Test wall-clock time of the tick (s).
    pub time: f64,
    /// [`command_status`] bits.
    pub status: u32,
}

/// The header fields of a feedback frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedbackHeader {
    /// The sequence number of the command this answers.
    pub sequence: u64,
    /// The controller's own clock (s).
    pub time: f64,
    /// [`feedback_status`] bits.
    pub status: u32,
}

/// What is wrong with a received frame.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    /// The frame has the wrong length for the configured number of actuators.
    #[error("{kind} frame of {found} bytes, expected {expected} ({actuators} actuators)")]
    Size {
        /// `command` or `feedback`.
        kind: &'static str,
        /// Bytes expected.
        expected: usize,
        /// Bytes received.
        found: usize,
        /// Actuators configured.
        actuators: usize,
    },
    /// The first four bytes are not the frame's magic.
    #[error("{kind} frame with magic {found:02x?}, expected {expected:?}")]
    Magic {
        /// `command` or `feedback`.
        kind: &'static str,
        /// Expected magic (ASCII).
        expected: &'static str,
        /// Bytes received.
        found: [u8; 4],
    },
    /// A version this build does not speak.
    #[error("{kind} frame of version {found}, this build speaks version {VERSION}")]
    Version {
        /// `command` or `feedback`.
        kind: &'static str,
        /// Version received.
        found: u16,
    },
    /// The frame's actuator count differs from the configured one.
    #[error("{kind} frame for {found} actuators, the test has {expected}")]
    Actuators {
        /// `command` or `feedback`.
        kind: &'static str,
        /// Configured.
        expected: usize,
        /// In the frame.
        found: usize,
    },
    /// The reserved word is not zero, or the status word has undefined bits.
    #[error("{kind} frame: {field} is {value:#x}, undefined bits set")]
    Reserved {
        /// `command` or `feedback`.
        kind: &'static str,
        /// `status` or `reserved`.
        field: &'static str,
        /// The value.
        value: u32,
    },
    /// A number is NaN or infinite.
    #[error("{kind} frame: {field} of {} is {value}", actuator.map_or("the frame".to_string(), |a| format!("actuator {a}")))]
    NonFinite {
        /// `command` or `feedback`.
        kind: &'static str,
        /// The field.
        field: &'static str,
        /// Actuator index (`None`: a header field).
        actuator: Option<usize>,
        /// The value.
        value: f64,
    },
    /// More actuators than a frame carries ([`MAX_ACTUATORS`]).
    #[error("{0} actuators, at most {MAX_ACTUATORS} fit in a frame")]
    TooManyActuators(usize),
}

/// Length of a command frame for `n` actuators.
pub fn command_len(n: usize) -> usize {
    HEADER_BYTES + COMMAND_BYTES_PER_ACTUATOR * n
}

/// Length of a feedback frame for `n` actuators.
pub fn feedback_len(n: usize) -> usize {
    HEADER_BYTES + FEEDBACK_BYTES_PER_ACTUATOR * n
}

fn put_header(out: &mut [u8], magic: [u8; 4], n: usize, sequence: u64, time: f64, status: u32) {
    out[0..4].copy_from_slice(&magic);
    out[4..6].copy_from_slice(&VERSION.to_le_bytes());
    out[6..8].copy_from_slice(&(n as u16).to_le_bytes());
    out[8..16].copy_from_slice(&sequence.to_le_bytes());
    out[16..24].copy_from_slice(&time.to_le_bytes());
    out[24..28].copy_from_slice(&status.to_le_bytes());
    out[28..32].copy_from_slice(&0u32.to_le_bytes());
}

fn f64_at(bytes: &[u8], at: usize) -> f64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    f64::from_le_bytes(b)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Check size, magic, version, count, reserved and status bits and the header numbers; return
/// `(sequence, time, status)`.
fn get_header(
    bytes: &[u8],
    kind: &'static str,
    magic: [u8; 4],
    n: usize,
    len: usize,
    defined_status: u32,
) -> Result<(u64, f64, u32), FrameError> {
    if n > MAX_ACTUATORS {
        return Err(FrameError::TooManyActuators(n));
    }
    if bytes.len() != len {
        return Err(FrameError::Size {
            kind,
            expected: len,
            found: bytes.len(),
            actuators: n,
        });
    }
    let mut m = [0u8; 4];
    m.copy_from_slice(&bytes[0..4]);
    if m != magic {
        return Err(FrameError::Magic {
            kind,
            expected: if magic == COMMAND_MAGIC {
                "HSC1"
            } else {
                "HSF1"
            },
            found: m,
        });
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != VERSION {
        return Err(FrameError::Version {
            kind,
            found: version,
        });
    }
    let count = u16::from_le_bytes([bytes[6], bytes[7]]) as usize;
    if count != n {
        return Err(FrameError::Actuators {
            kind,
            expected: n,
            found: count,
        });
    }
    let mut s = [0u8; 8];
    s.copy_from_slice(&bytes[8..16]);
    let sequence = u64::from_le_bytes(s);
    let time = f64_at(bytes, 16);
    if !time.is_finite() {
        return Err(FrameError::NonFinite {
            kind,
            field: "time",
            actuator: None,
            value: time,
        });
    }
    let status = u32_at(bytes, 24);
    if status & !defined_status != 0 {
        return Err(FrameError::Reserved {
            kind,
            field: "status",
            value: status,
        });
    }
    let reserved = u32_at(bytes, 28);
    if reserved != 0 {
        return Err(FrameError::Reserved {
            kind,
            field: "reserved",
            value: reserved,
        });
    }
    Ok((sequence, time, status))
}

/// Write the command frame of `header` and `commands` into `out` (exactly
/// [`command_len`]`(commands.len())` bytes). Allocation-free.
pub fn encode_command(
    header: &CommandHeader,
    commands: &[ActuatorCommand],
    out: &mut [u8],
) -> Result<(), FrameError> {
    let n = commands.len();
    if n > MAX_ACTUATORS {
        return Err(FrameError::TooManyActuators(n));
    }
    assert_eq!(out.len(), command_len(n), "command frame buffer length");
    put_header(
        out,
        COMMAND_MAGIC,
        n,
        header.sequence,
        header.time,
        header.status,
    );
    for (k, c) in commands.iter().enumerate() {
        let o = HEADER_BYTES + COMMAND_BYTES_PER_ACTUATOR * k;
        out[o..o + 8].copy_from_slice(&c.d.to_le_bytes());
        out[o + 8..o + 16].copy_from_slice(&c.v.to_le_bytes());
        out[o + 16..o + 24].copy_from_slice(&c.a.to_le_bytes());
    }
    Ok(())
}

/// Read a command frame for `commands.len()` actuators into `commands`. Allocation-free.
pub fn decode_command(
    bytes: &[u8],
    commands: &mut [ActuatorCommand],
) -> Result<CommandHeader, FrameError> {
    let n = commands.len();
    let (sequence, time, status) = get_header(
        bytes,
        "command",
        COMMAND_MAGIC,
        n,
        command_len(n.min(MAX_ACTUATORS)),
        command_status::ALL,
    )?;
    for (k, c) in commands.iter_mut().enumerate() {
        let o = HEADER_BYTES + COMMAND_BYTES_PER_ACTUATOR * k;
        for (field, at) in [
            ("displacement", o),
            ("velocity", o + 8),
            ("acceleration", o + 16),
        ] {
            let x = f64_at(bytes, at);
            if !x.is_finite() {
                return Err(FrameError::NonFinite {
                    kind: "command",
                    field,
                    actuator: Some(k),
                    value: x,
                });
            }
        }
        *c = ActuatorCommand {
            d: f64_at(bytes, o),
            v: f64_at(bytes, o + 8),
            a: f64_at(bytes, o + 16),
        };
    }
    Ok(CommandHeader {
        sequence,
        time,
        status,
    })
}

/// Write the feedback frame of `header`, `displacement` and `force` (one per actuator) into
/// `out` (exactly [`feedback_len`] bytes). Allocation-free.
pub fn encode_feedback(
    header: &FeedbackHeader,
    displacement: &[f64],
    force: &[f64],
    out: &mut [u8],
) -> Result<(), FrameError> {
    let n = displacement.len();
    if n > MAX_ACTUATORS {
        return Err(FrameError::TooManyActuators(n));
    }
    assert_eq!(force.len(), n, "one force per actuator");
    assert_eq!(out.len(), feedback_len(n), "feedback frame buffer length");
    put_header(
        out,
        FEEDBACK_MAGIC,
        n,
        header.sequence,
        header.time,
        header.status,
    );
    for k in 0..n {
        let o = HEADER_BYTES + FEEDBACK_BYTES_PER_ACTUATOR * k;
        out[o..o + 8].copy_from_slice(&displacement[k].to_le_bytes());
        out[o + 8..o + 16].copy_from_slice(&force[k].to_le_bytes());
    }
    Ok(())
}

/// Read a feedback frame for `displacement.len()` actuators into `displacement` and `force`.
/// Allocation-free. A NaN measurement is refused here, naming the actuator (the safety layer
/// would refuse it too, but the frame is where the peer is named).
pub fn decode_feedback(
    bytes: &[u8],
    displacement: &mut [f64],
    force: &mut [f64],
) -> Result<FeedbackHeader, FrameError> {
    let n = displacement.len();
    assert_eq!(force.len(), n, "one force per actuator");
    let (sequence, time, status) = get_header(
        bytes,
        "feedback",
        FEEDBACK_MAGIC,
        n,
        feedback_len(n.min(MAX_ACTUATORS)),
        feedback_status::ALL,
    )?;
    for k in 0..n {
        let o = HEADER_BYTES + FEEDBACK_BYTES_PER_ACTUATOR * k;
        for (field, at) in [("displacement", o), ("force", o + 8)] {
            let x = f64_at(bytes, at);
            if !x.is_finite() {
                return Err(FrameError::NonFinite {
                    kind: "feedback",
                    field,
                    actuator: Some(k),
                    value: x,
                });
            }
        }
        displacement[k] = f64_at(bytes, o);
        force[k] = f64_at(bytes, o + 8);
    }
    Ok(FeedbackHeader {
        sequence,
        time,
        status,
    })
}
