//! 10⁵ fuzzed datagrams against the UDP controller server and 1 000 fuzzed frames against the
//! TCP one: wrong sizes, bad magic or version, NaN and infinities, unknown status bits, a
//! non-zero reserved word, truncated frames, another actuator count, a misplaced REST bit.
//! Every one is refused with exactly one message naming the peer, none is answered or applied,
//! and the server keeps answering valid frames (a valid frame after every 16 fuzzed ones, with
//! a bounded wait, shows it neither crashed nor hung).

mod controller_common;

use controller_common::*;
use hybridsim::physical::transfer::ActuatorCommand;
use hybridsim_net::controller::*;
use hybridsim_net::link::{command_len, command_status};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// SplitMix64: the fuzzer's own reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const BAD_NUMBERS: [f64; 3] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

/// A malformed one-actuator command frame of kind `kind` (0..=9), and the kind's name. Every
/// one is invalid: refused whatever the session state.
fn fuzzed(rng: &mut Rng, kind: u64, sequence: u64) -> (Vec<u8>, &'static str) {
    let valid = frame(sequence, command_status::ARMED, command(sequence));
    let len = command_len(1);
    match kind {
        0 => {
            // Wrong size: random bytes of any other length (some with a valid prefix).
            let mut n = rng.below(200) as usize;
            if n == len {
                n += 1 + rng.below(8) as usize;
            }
            let mut b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            if rng.below(2) == 0 {
                let k = n.min(len);
                b[..k].copy_from_slice(&valid[..k]);
            }
            (b, "size")
        }
        1 => {
            let mut b = valid;
            let i = rng.below(4) as usize;
            b[i] ^= 1 + rng.below(255) as u8;
            (b, "magic")
        }
        2 => {
            let mut b = valid;
            let v = 2 + rng.below(u16::MAX as u64 - 1) as u16;
            b[4..6].copy_from_slice(&v.to_le_bytes());
            (b, "version")
        }
        3 => {
            // A non-finite number in the time or any target.
            let mut b = valid;
            let at = [16, 32, 40, 48][rng.below(4) as usize];
            let x = BAD_NUMBERS[rng.below(3) as usize];
            b[at..at + 8].copy_from_slice(&x.to_le_bytes());
            (b, "non-finite")
        }
        4 => {
            let mut b = valid;
            let bit = 7 + rng.below(25) as u32;
            let status = command_status::ARMED | (1u32 << bit) | (rng.next() as u32 & !0x7f);
            b[24..28].copy_from_slice(&status.to_le_bytes());
            (b, "status")
        }
        5 => {
            let mut b = valid;
            let r = 1 + rng.below(u32::MAX as u64 - 1) as u32;
            b[28..32].copy_from_slice(&r.to_le_bytes());
            (b, "reserved")
        }
        6 => {
            // Truncated.
            let n = rng.below(len as u64) as usize;
            (valid[..n].to_vec(), "truncated")
        }
        7 => {
            // Another actuator count, with the size of that count or of one actuator.
            let n = [0u16, 2, 3, 56, 57, 1000, u16::MAX][rng.below(7) as usize];
            let size = if rng.below(2) == 0 {
                command_len((n as usize).min(60))
            } else {
                len
            };
            let mut b = vec![0u8; size];
            let k = size.min(len);
            b[..k].copy_from_slice(&valid[..k]);
            b[6..8].copy_from_slice(&n.to_le_bytes());
            (b, "count")
        }
        8 => {
            // REST off sequence 0, or without HOLD.
            let status = if rng.below(2) == 0 {
                command_status::REST | command_status::HOLD
            } else {
                command_status::REST
            };
            let s = if status & command_status::HOLD != 0 {
                sequence.max(1)
            } else {
                sequence
            };
            (frame(s, status, ActuatorCommand::default()), "rest")
        }
        _ => {
            // A header of a feedback frame sent as a command.
            let mut b = valid;
            b[2] = b'F';
            (b, "feedback magic")
        }
    }
}

const KINDS: u64 = 10;

#[test]
fn a_hundred_thousand_fuzzed_datagrams_are_each_refused_with_a_message() {
    let m = model("");
    let (_, actuators, factory) = virtual_twin_of(&m, None).unwrap();
    let refused = Arc::new(AtomicU64::new(0));
    let unnamed = Arc::new(Mutex::new(Vec::<String>::new()));
    let peer: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let (r, u, p) = (refused.clone(), unnamed.clone(), peer.clone());
    let mut server = ControllerServer::bind(
        factory,
        actuators,
        options(Transport::Udp),
        Box::new(move |kind, text| {
            if kind == Note::Refused {
                r.fetch_add(1, Ordering::SeqCst);
                let me = p.lock().unwrap().clone().unwrap_or_default();
                if !text.contains(&me) || !text.contains("refused: ") {
                    u.lock().unwrap().push(text.to_string());
                }
            }
        }),
    )
    .unwrap();
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || server.serve(&flag));

    let mut client = Udp::new(addr);
    *peer.lock().unwrap() = Some(client.socket.local_addr().unwrap().to_string());
    let mut rng = Rng(0x5EED_F00D);
    let started = Instant::now();
    // Fuzzed datagrams before the session too (refused: no session under way).
    let total = 100_000u64;
    let mut per_kind = [0u64; KINDS as usize];
    let mut sequence = 0u64;
    let mut sent = 0u64;
    while sent < total {
        for _ in 0..16 {
            if sent == total {
                break;
            }
            let kind = rng.below(KINDS);
            let (bytes, _) = fuzzed(&mut rng, kind, sequence + 1);
            client.send_raw(&bytes);
            per_kind[kind as usize] += 1;
            sent += 1;
        }
        // A valid frame: answered, in order, within the bound.
        let status = if sequence == 0 {
            REST
        } else {
            command_status::ARMED
        };
        let reply = client.exchange(sequence, status, command(sequence));
        assert_eq!(reply.header.sequence, sequence);
        assert_eq!(
            reply.header.status,
            hybridsim_net::link::feedback_status::READY
        );
        sequence += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    let report = handle.join().unwrap().unwrap();
    println!(
        "{total} fuzzed datagrams in {elapsed:.2} s, per kind {per_kind:?}, {} refused",
        refused.load(Ordering::SeqCst)
    );
    assert!(per_kind.iter().all(|&n| n > 5_000));
    assert_eq!(
        refused.load(Ordering::SeqCst),
        total,
        "one message per datagram"
    );
    assert_eq!(report.statistics.refused, total);
    assert_eq!(
        report.statistics.frames, sequence,
        "only the valid frames applied"
    );
    let unnamed = unnamed.lock().unwrap();
    assert!(
        unnamed.is_empty(),
        "messages without the peer: {:?}",
        &unnamed[..3.min(unnamed.len())]
    );
}

fn tcp_case(addr: SocketAddr, bytes: &[u8], after_rest: bool, half_close: bool) {
    let mut client = Tcp::new(addr);
    if after_rest {
        client.exchange(0, REST, ActuatorCommand::default());
    }
    client.stream.write_all(bytes).unwrap();
    if half_close {
        client.stream.shutdown(std::net::Shutdown::Write).unwrap();
    }
    assert!(client.closed(), "the server closes the connection");
}

#[test]
fn a_thousand_fuzzed_tcp_frames_each_close_their_connection_with_a_message() {
    let m = model("");
    let server = start(&m, options(Transport::Tcp));
    let mut rng = Rng(0xC0FF_EE00);
    let cases = 1000;
    let started = Instant::now();
    let mut expected = 0usize;
    for i in 0..cases {
        // TCP frames are delimited by their header: a wrong size is a truncated frame (the
        // peer half-closes) or a header with another count.
        let kind = [1, 2, 3, 4, 5, 6, 7, 8, 9][rng.below(9) as usize];
        let (bytes, _) = fuzzed(&mut rng, kind, 1 + i as u64);
        let truncated = bytes.len() < command_len(1);
        let after_rest = rng.below(2) == 0;
        tcp_case(server.addr, &bytes, after_rest, truncated);
        expected += 1;
        // A truncated frame of 0 bytes is a clean close between frames: refused only when
        // something had arrived.
        if truncated && bytes.is_empty() {
            expected -= 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let refused = server.notes(Note::Refused);
    println!(
        "{cases} fuzzed TCP frames in {elapsed:.2} s, {} refused",
        refused.len()
    );
    assert_eq!(refused.len(), expected, "one message per malformed frame");
    assert!(refused
        .iter()
        .all(|m| m.contains("127.0.0.1:") && m.contains("refused")));
    // Still serving.
    let mut client = Tcp::new(server.addr);
    client.exchange(0, REST, ActuatorCommand::default());
    let report = server.stop();
    assert_eq!(report.statistics.refused as usize, expected);
}
