//! The controller-link frames: round trips to the bit, every malformed field refused with its
//! name, and 10⁵ fuzzed frames of each kind decoded without a panic — each either refused or
//! the exact bytes of a valid frame (decoding then encoding gives the input back).

use hybridsim::physical::transfer::ActuatorCommand;
use hybridsim_net::link::*;

fn commands() -> Vec<ActuatorCommand> {
    vec![
        ActuatorCommand {
            d: 0.0123,
            v: -0.5,
            a: 3.25,
        },
        ActuatorCommand {
            d: -0.0,
            v: 5e-324,
            a: -1.7976931348623157e308,
        },
    ]
}

fn command_frame() -> Vec<u8> {
    let c = commands();
    let mut out = vec![0u8; command_len(c.len())];
    encode_command(
        &CommandHeader {
            sequence: 0x0102_0304_0506_0708,
            time: 1.5,
            status: command_status::ARMED | command_status::STARTING,
        },
        &c,
        &mut out,
    )
    .unwrap();
    out
}

fn feedback_frame() -> Vec<u8> {
    let mut out = vec![0u8; feedback_len(2)];
    encode_feedback(
        &FeedbackHeader {
            sequence: 42,
            time: 0.042,
            status: feedback_status::READY,
        },
        &[0.012, -0.003],
        &[150.0, -2.5e3],
        &mut out,
    )
    .unwrap();
    out
}

#[test]
fn frames_have_the_documented_layout_and_round_trip_to_the_bit() {
    let bytes = command_frame();
    assert_eq!(bytes.len(), 32 + 24 * 2);
    assert_eq!(&bytes[0..4], b"HSC1");
    assert_eq!(&bytes[4..6], &[1, 0]);
    assert_eq!(&bytes[6..8], &[2, 0]);
    assert_eq!(&bytes[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(&bytes[16..24], &1.5f64.to_le_bytes());
    assert_eq!(&bytes[24..28], &[0b1001, 0, 0, 0]);
    assert_eq!(&bytes[28..32], &[0, 0, 0, 0]);
    assert_eq!(&bytes[32..40], &0.0123f64.to_le_bytes());
    let mut c = vec![ActuatorCommand::default(); 2];
    let h = decode_command(&bytes, &mut c).unwrap();
    assert_eq!(h.sequence, 0x0102_0304_0506_0708);
    assert_eq!(h.time, 1.5);
    for (a, b) in c.iter().zip(commands()) {
        assert_eq!(a.d.to_bits(), b.d.to_bits());
        assert_eq!(a.v.to_bits(), b.v.to_bits());
        assert_eq!(a.a.to_bits(), b.a.to_bits());
    }

    let bytes = feedback_frame();
    assert_eq!(bytes.len(), 32 + 16 * 2);
    assert_eq!(&bytes[0..4], b"HSF1");
    let (mut x, mut f) = ([0.0; 2], [0.0; 2]);
    let h = decode_feedback(&bytes, &mut x, &mut f).unwrap();
    assert_eq!((h.sequence, h.time, h.status), (42, 0.042, 1));
    assert_eq!((x, f), ([0.012, -0.003], [150.0, -2.5e3]));
}

#[test]
fn every_malformed_field_is_refused_with_its_name() {
    let good = command_frame();
    let mut c = vec![ActuatorCommand::default(); 2];
    let err = |bytes: &[u8], c: &mut [ActuatorCommand]| decode_command(bytes, c).unwrap_err();

    let e = err(&good[..good.len() - 1], &mut c);
    assert!(
        matches!(
            e,
            FrameError::Size {
                found: 79,
                expected: 80,
                ..
            }
        ),
        "{e}"
    );
    let mut b = good.clone();
    b[0] = b'X';
    assert!(matches!(err(&b, &mut c), FrameError::Magic { .. }));
    let mut b = good.clone();
    b[4] = 2;
    assert!(matches!(
        err(&b, &mut c),
        FrameError::Version { found: 2, .. }
    ));
    let mut b = good.clone();
    b[6] = 3;
    assert!(matches!(
        err(&b, &mut c),
        FrameError::Actuators {
            found: 3,
            expected: 2,
            ..
        }
    ));
    let mut b = good.clone();
    b[27] = 0x80;
    assert!(matches!(
        err(&b, &mut c),
        FrameError::Reserved {
            field: "status",
            ..
        }
    ));
    let mut b = good.clone();
    b[29] = 1;
    assert!(matches!(
        err(&b, &mut c),
        FrameError::Reserved {
            field: "reserved",
            ..
        }
    ));
    let mut b = good.clone();
    b[16..24].copy_from_slice(&f64::INFINITY.to_le_bytes());
    assert!(matches!(
        err(&b, &mut c),
        FrameError::NonFinite {
            field: "time",
            actuator: None,
            ..
        }
    ));
    let mut b = good.clone();
    b[32 + 24 + 8..32 + 24 + 16].copy_from_slice(&f64::NAN.to_le_bytes());
    let e = err(&b, &mut c);
    assert!(
        matches!(
            e,
            FrameError::NonFinite {
                field: "velocity",
                actuator: Some(1),
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "command frame: velocity of actuator 1 is NaN"
    );
    // A feedback frame is not a command frame.
    assert!(matches!(
        err(&feedback_frame(), &mut c),
        FrameError::Size { .. }
    ));

    let good = feedback_frame();
    let (mut x, mut f) = ([0.0; 2], [0.0; 2]);
    let mut b = good.clone();
    b[32 + 16 + 8..32 + 16 + 16].copy_from_slice(&f64::NAN.to_le_bytes());
    let e = decode_feedback(&b, &mut x, &mut f).unwrap_err();
    assert_eq!(e.to_string(), "feedback frame: force of actuator 1 is NaN");
    let too_many = vec![0.0; MAX_ACTUATORS + 1];
    let mut out = vec![0u8; feedback_len(MAX_ACTUATORS + 1)];
    assert!(matches!(
        encode_feedback(
            &FeedbackHeader {
                sequence: 0,
                time: 0.0,
                status: 0
            },
            &too_many,
            &too_many,
            &mut out
        ),
        Err(FrameError::TooManyActuators(57))
    ));
}

/// SplitMix64: a seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A mutation of `good`: flipped bytes, a special number written at an 8-byte slot, a
/// truncation or an extension, a different count or magic, or garbage.
fn mutate(good: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = good.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(7) {
            0 | 1 if b.is_empty() => b.push(rng.next() as u8),
            0 => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            2 if b.len() >= 8 => {
                let specials = [f64::NAN, f64::INFINITY, -f64::INFINITY, -0.0, 5e-324, 1e308];
                let at = rng.below(b.len() / 8) * 8;
                let x = specials[rng.below(specials.len())];
                b[at..at + 8].copy_from_slice(&x.to_le_bytes());
            }
            3 => b.truncate(rng.below(b.len() + 1)),
            4 => {
                let extra = rng.below(64);
                for _ in 0..extra {
                    b.push(rng.next() as u8);
                }
            }
            5 if b.len() >= 8 => {
                let n = rng.below(70) as u16;
                b[6..8].copy_from_slice(&n.to_le_bytes());
            }
            _ => {
                let len = rng.below(200);
                b = (0..len).map(|_| rng.next() as u8).collect();
            }
        }
    }
    b
}

#[test]
fn fuzzed_frames_never_panic_and_are_refused_or_exactly_valid() {
    const CASES: usize = 100_000;
    let mut rng = Rng(0x11_2026_1126);
    let (good_c, good_f) = (command_frame(), feedback_frame());
    let (mut refused, mut accepted) = (0usize, 0usize);
    let mut c = vec![ActuatorCommand::default(); 2];
    let (mut x, mut f) = ([0.0; 2], [0.0; 2]);
    for _ in 0..CASES {
        let b = mutate(&good_c, &mut rng);
        match decode_command(&b, &mut c) {
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
            Ok(h) => {
                let mut again = vec![0u8; command_len(2)];
                encode_command(&h, &c, &mut again).unwrap();
                assert_eq!(again, b, "an accepted command frame is exactly a valid one");
                accepted += 1;
            }
        }
        let b = mutate(&good_f, &mut rng);
        match decode_feedback(&b, &mut x, &mut f) {
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
            Ok(h) => {
                let mut again = vec![0u8; feedback_len(2)];
                encode_feedback(&h, &x, &f, &mut again).unwrap();
                assert_eq!(
                    again, b,
                    "an accepted feedback frame is exactly a valid one"
                );
                accepted += 1;
            }
        }
    }
    println!(
        "{} fuzzed frames: {refused} refused, {accepted} accepted",
        2 * CASES
    );
    assert_eq!(refused + accepted, 2 * CASES);
    assert!(
        refused > CASES,
        "the mutations must mostly break the frames"
    );
}

#[test]
fn the_example_of_the_document_is_what_the_encoder_writes() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/controller-link.md"
    ))
    .unwrap();
    let example = doc.split("## Example").nth(1).expect("the Example section");
    let block = example.split("```").nth(1).expect("the example block");
    let hex: Vec<u8> = block
        .lines()
        .flat_map(|l| {
            l.split("   ")
                .next()
                .unwrap_or("")
                .split_whitespace()
                .map(|h| u8::from_str_radix(h, 16).unwrap_or_else(|_| panic!("not hex: {h}")))
        })
        .collect();
    let mut out = vec![0u8; command_len(1)];
    encode_command(
        &CommandHeader {
            sequence: 1000,
            time: 1.0,
            status: command_status::ARMED,
        },
        &[ActuatorCommand {
            d: 0.0123,
            v: 0.5,
            a: 0.0,
        }],
        &mut out,
    )
    .unwrap();
    assert_eq!(hex, out);
}
