//! The runner's end of the controller link against scripted controllers on 127.0.0.1: exact
//! round trips over UDP and TCP, late and duplicated replies skipped, and every fault the
//! safety layer must hear of, each as its own event kind with the peer and the tick in the
//! message: a reply missing past the timeout, an echo of a command never sent, a malformed
//! reply, a controller interlock, a closed connection. Streaming mode: missing and stale
//! samples. The steady state allocates nothing.
//!
//! Every peer thread stops by itself (a read timeout, a bounded number of frames).

#[path = "../../hybridsim/tests/common/counting.rs"]
mod counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

use hybridsim::model::lab::{LinkMode, LinkSettings, TransferKind};
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferSystem};
use hybridsim::physical::EventKind;
use hybridsim_net::link::*;
use hybridsim_net::ControllerLink;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::time::{Duration, Instant};

const N: usize = 2;

/// What a scripted controller does with the command frame of `sequence`: the replies to
/// send (echo, status, force factor), possibly none.
type Script = Box<dyn FnMut(u64, u32) -> Vec<Reply> + Send>;

#[derive(Clone, Copy)]
enum Reply {
    /// A reply echoing `echo`, with status bits, measuring displacement = command and force =
    /// 2 × command.
    Echo { echo: u64, status: u32 },
    /// A datagram/frame of the wrong length.
    Short,
    /// A reply whose force is NaN.
    NanForce { echo: u64 },
    /// Close the connection (TCP) / stop (UDP).
    Close,
}

fn echo(sequence: u64) -> Vec<Reply> {
    vec![Reply::Echo {
        echo: sequence,
        status: feedback_status::READY,
    }]
}

fn reply_bytes(r: Reply, cmd: &[ActuatorCommand]) -> Option<Vec<u8>> {
    let d: Vec<f64> = cmd.iter().map(|c| c.d).collect();
    let mut f: Vec<f64> = cmd.iter().map(|c| 2.0 * c.d).collect();
    let (echo, status) = match r {
        Reply::Echo { echo, status } => (echo, status),
        Reply::NanForce { echo } => {
            f[0] = f64::NAN;
            (echo, feedback_status::READY)
        }
        Reply::Short => return Some(vec![0u8; 7]),
        Reply::Close => return None,
    };
    let mut out = vec![0u8; feedback_len(N)];
    let header = FeedbackHeader {
        sequence: echo,
        time: 0.0,
        status,
    };
    // NaN cannot be encoded by the checked encoder: write it by hand after encoding.
    let nan = f[0].is_nan();
    if nan {
        f[0] = 0.0;
    }
    encode_feedback(&header, &d, &f, &mut out).unwrap();
    if nan {
        out[HEADER_BYTES + 8..HEADER_BYTES + 16].copy_from_slice(&f64::NAN.to_le_bytes());
    }
    Some(out)
}

/// A UDP controller on 127.0.0.1 that follows `script`; returns its address.
fn udp_peer(mut script: Script) -> String {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let addr = socket.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut cmd = vec![ActuatorCommand::default(); N];
        while let Ok((got, from)) = socket.recv_from(&mut buf) {
            let Ok(h) = decode_command(&buf[..got], &mut cmd) else {
                continue;
            };
            if h.status & command_status::END != 0 {
                return;
            }
            for r in script(h.sequence, h.status) {
                match reply_bytes(r, &cmd) {
                    Some(bytes) => {
                        let _ = socket.send_to(&bytes, from);
                    }
                    None => return,
                }
            }
        }
    });
    addr
}

/// A TCP controller on 127.0.0.1 that follows `script`; returns its address.
fn tcp_peer(mut script: Script) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let mut buf = vec![0u8; command_len(N)];
        let mut cmd = vec![ActuatorCommand::default(); N];
        while stream.read_exact(&mut buf).is_ok() {
            let Ok(h) = decode_command(&buf, &mut cmd) else {
                return;
            };
            if h.status & command_status::END != 0 {
                return;
            }
            for r in script(h.sequence, h.status) {
                match reply_bytes(r, &cmd) {
                    Some(bytes) => {
                        if stream.write_all(&bytes).is_err() {
                            return;
                        }
                    }
                    None => return,
                }
            }
        }
    });
    addr
}

fn settings(address: String, mode: LinkMode, timeout: f64) -> LinkSettings {
    LinkSettings {
        address,
        bind: None,
        timeout,
        mode,
        max_lag: 2,
        udp: false,
        peer: hybridsim::model::lab::RemotePeer::Adapter,
    }
}

fn command(x: f64) -> Vec<ActuatorCommand> {
    vec![
        ActuatorCommand {
            d: x,
            v: 0.5,
            a: 0.0,
        },
        ActuatorCommand {
            d: -x,
            v: -0.5,
            a: 0.0,
        },
    ]
}

fn link(kind: TransferKind, address: String, mode: LinkMode, timeout: f64) -> ControllerLink {
    ControllerLink::open(kind, &settings(address, mode, timeout), N).unwrap()
}

/// Measure at rest, then `ticks` exchanges; returns the first error.
fn drive(
    link: &mut ControllerLink,
    ticks: u64,
) -> Result<Vec<Sample>, hybridsim::physical::TransferError> {
    let (mut f, mut x) = ([0.0; N], [0.0; N]);
    link.measure_at_rest(&mut f, &mut x)?;
    let mut samples = Vec::new();
    for tick in 1..=ticks {
        let cmd = command(tick as f64 * 1e-3);
        link.send(tick, tick as f64 * 1e-3, &cmd)?;
        let s = link.receive(tick, &mut f, &mut x)?;
        if s == Sample::Fresh {
            assert_eq!(x, [cmd[0].d, cmd[1].d], "tick {tick}: displacement");
            assert_eq!(f, [2.0 * cmd[0].d, 2.0 * cmd[1].d], "tick {tick}: force");
        }
        samples.push(s);
    }
    Ok(samples)
}

fn statistic(link: &ControllerLink, name: &str) -> f64 {
    link.statistics()
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
        .1
}

#[test]
fn lock_step_round_trips_are_exact_over_udp_and_tcp() {
    for kind in [TransferKind::Udp, TransferKind::Tcp] {
        let peer = match kind {
            TransferKind::Udp => udp_peer(Box::new(|s, _| echo(s))),
            _ => tcp_peer(Box::new(|s, _| echo(s))),
        };
        let mut l = link(kind, peer, LinkMode::LockStep, 2.0);
        let samples = drive(&mut l, 200).unwrap();
        assert!(samples.iter().all(|s| *s == Sample::Fresh), "{kind:?}");
        assert_eq!(statistic(&l, "frames_sent"), 201.0);
        assert_eq!(statistic(&l, "replies"), 201.0);
        assert_eq!(statistic(&l, "missing_replies"), 0.0);
        assert!(statistic(&l, "latency_p50_ms") > 0.0);
    }
}

#[test]
fn the_measurement_at_rest_sends_the_expected_rest_position_with_rest_and_hold() {
    let (tx, rx) = std::sync::mpsc::channel();
    let peer = udp_peer(Box::new(move |s, status| {
        let _ = tx.send((s, status));
        echo(s)
    }));
    let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 2.0);
    let (mut f, mut x) = ([0.0; N], [0.25, -0.5]);
    l.measure_at_rest(&mut f, &mut x).unwrap();
    // The scripted controller measures what it was sent: the rest position comes back.
    assert_eq!(x, [0.25, -0.5]);
    assert_eq!(f, [0.5, -1.0]);
    let (s, status) = rx.recv().unwrap();
    assert_eq!(s, 0);
    let rest = command_status::REST | command_status::HOLD;
    assert_eq!(status & rest, rest);
    let (mut f, mut x) = ([0.0; N], [0.0; N]);
    assert_eq!(
        l.hold_sample(1, 0.001, &mut f, &mut x).unwrap(),
        Sample::Fresh
    );
    let (s, status) = rx.recv().unwrap();
    assert_eq!(
        (s, status & command_status::HOLD),
        (1, command_status::HOLD)
    );
    assert_eq!(status & command_status::REST, 0);
}

#[test]
fn late_and_duplicated_replies_are_skipped_in_lock_step() {
    // Each reply is preceded by a duplicate of the previous one.
    let peer = udp_peer(Box::new(|s, _| {
        let mut out = Vec::new();
        if s > 0 {
            out.push(Reply::Echo {
                echo: s - 1,
                status: feedback_status::READY,
            });
        }
        out.extend(echo(s));
        out
    }));
    let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 2.0);
    drive(&mut l, 50).unwrap();
    assert_eq!(statistic(&l, "late_replies"), 50.0);
}

#[test]
fn a_reply_missing_past_the_timeout_is_a_link_timeout_naming_peer_and_tick() {
    for kind in [TransferKind::Udp, TransferKind::Tcp] {
        let script: Script = Box::new(|s, _| if s <= 5 { echo(s) } else { Vec::new() });
        let peer = match kind {
            TransferKind::Udp => udp_peer(script),
            _ => tcp_peer(script),
        };
        let mut l = link(kind, peer.clone(), LinkMode::LockStep, 0.05);
        let t0 = Instant::now();
        let e = drive(&mut l, 10).unwrap_err();
        assert_eq!(e.kind, EventKind::LinkTimeout, "{kind:?}: {e}");
        assert!(e.message.contains(&peer), "{e}");
        assert!(e.message.contains("tick 6"), "{e}");
        assert!(e.message.contains("0.05 s"), "{e}");
        // Bounded: the timeout, not a hang.
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}

#[test]
fn an_echo_of_a_command_never_sent_is_a_protocol_fault() {
    let peer = udp_peer(Box::new(|s, _| {
        vec![Reply::Echo {
            echo: if s == 3 { 99 } else { s },
            status: feedback_status::READY,
        }]
    }));
    let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 1.0);
    let e = drive(&mut l, 10).unwrap_err();
    assert_eq!(e.kind, EventKind::LinkProtocol, "{e}");
    assert!(
        e.message.contains("99") && e.message.contains("never sent"),
        "{e}"
    );
}

#[test]
fn malformed_replies_are_protocol_faults() {
    for bad in [Reply::Short, Reply::NanForce { echo: 4 }] {
        let peer = udp_peer(Box::new(
            move |s, _| if s == 4 { vec![bad] } else { echo(s) },
        ));
        let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 1.0);
        let e = drive(&mut l, 10).unwrap_err();
        assert_eq!(e.kind, EventKind::LinkProtocol, "{e}");
        assert!(e.message.contains("tick 4"), "{e}");
        assert_eq!(statistic(&l, "malformed_replies"), 1.0);
    }
}

#[test]
fn a_controller_interlock_trips() {
    let peer = udp_peer(Box::new(|s, _| {
        vec![Reply::Echo {
            echo: s,
            status: if s >= 7 {
                feedback_status::INTERLOCK
            } else {
                feedback_status::READY
            },
        }]
    }));
    let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 1.0);
    let e = drive(&mut l, 10).unwrap_err();
    assert_eq!(e.kind, EventKind::ControllerInterlock, "{e}");
    assert!(e.message.contains("tick 7"), "{e}");
}

#[test]
fn a_closed_connection_is_a_lost_link() {
    let peer = tcp_peer(Box::new(
        |s, _| if s == 5 { vec![Reply::Close] } else { echo(s) },
    ));
    let mut l = link(TransferKind::Tcp, peer, LinkMode::LockStep, 1.0);
    let e = drive(&mut l, 10).unwrap_err();
    assert_eq!(e.kind, EventKind::LinkLost, "{e}");
    assert!(e.message.contains("closed"), "{e}");
}

#[test]
fn a_stale_reply_is_a_missing_sample() {
    let peer = udp_peer(Box::new(|s, _| {
        vec![Reply::Echo {
            echo: s,
            status: if s == 3 {
                feedback_status::READY | feedback_status::STALE
            } else {
                feedback_status::READY
            },
        }]
    }));
    let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 1.0);
    let samples = drive(&mut l, 5).unwrap();
    assert_eq!(samples[2], Sample::Missing);
    assert_eq!(samples.iter().filter(|s| **s == Sample::Missing).count(), 1);
}

#[test]
fn streaming_takes_the_newest_reply_and_counts_missing_and_stale_ones() {
    // The controller answers only every third command: the ticks in between find no new
    // reply (missing samples); nothing waits.
    let peer = udp_peer(Box::new(
        |s, _| if s % 3 == 0 { echo(s) } else { Vec::new() },
    ));
    let mut l = link(TransferKind::Udp, peer, LinkMode::Streaming, 1.0);
    let (mut f, mut x) = ([0.0; N], [0.0; N]);
    // At rest the reply is awaited whatever the mode: answer it.
    let e = l.measure_at_rest(&mut f, &mut x);
    assert!(e.is_ok(), "{e:?}");
    let mut fresh = 0;
    for tick in 1..=30u64 {
        l.send(tick, 0.0, &command(tick as f64)).unwrap();
        // Give the reply time to arrive on ticks the controller answers.
        if tick % 3 == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        if l.receive(tick, &mut f, &mut x).unwrap() == Sample::Fresh {
            fresh += 1;
            assert_eq!(
                x[0], tick as f64,
                "the newest reply is the one of this tick"
            );
        }
    }
    assert_eq!(fresh, 10);
    assert_eq!(statistic(&l, "missing_replies"), 20.0);
}

#[test]
fn streaming_without_any_reply_for_the_timeout_is_a_link_timeout() {
    let peer = udp_peer(Box::new(|s, _| if s == 0 { echo(s) } else { Vec::new() }));
    let mut l = link(TransferKind::Udp, peer, LinkMode::Streaming, 0.05);
    let (mut f, mut x) = ([0.0; N], [0.0; N]);
    l.measure_at_rest(&mut f, &mut x).unwrap();
    let t0 = Instant::now();
    let mut tick = 0;
    let e = loop {
        tick += 1;
        l.send(tick, 0.0, &command(0.0)).unwrap();
        match l.receive(tick, &mut f, &mut x) {
            Ok(s) => assert_eq!(s, Sample::Missing),
            Err(e) => break e,
        }
        std::thread::sleep(Duration::from_millis(5));
        assert!(t0.elapsed() < Duration::from_secs(2), "no timeout");
    };
    assert_eq!(e.kind, EventKind::LinkTimeout, "{e}");
}

#[test]
fn a_tick_that_does_not_increase_is_refused_before_sending() {
    let peer = udp_peer(Box::new(|s, _| echo(s)));
    let mut l = link(TransferKind::Udp, peer, LinkMode::LockStep, 1.0);
    drive(&mut l, 3).unwrap();
    let e = l.send(3, 0.0, &command(0.0)).unwrap_err();
    assert_eq!(e.kind, EventKind::LinkProtocol);
    assert_eq!(statistic(&l, "frames_sent"), 4.0);
}

#[test]
fn the_steady_state_of_the_link_allocates_nothing() {
    for kind in [TransferKind::Udp, TransferKind::Tcp] {
        let peer = match kind {
            TransferKind::Udp => udp_peer(Box::new(|s, _| echo(s))),
            _ => tcp_peer(Box::new(|s, _| echo(s))),
        };
        let mut l = link(kind, peer, LinkMode::LockStep, 2.0);
        drive(&mut l, 5).unwrap();
        let cmd = command(0.01);
        let (mut f, mut x) = ([0.0; N], [0.0; N]);
        let mut result = Ok(Sample::Fresh);
        let allocations = counting::count(|| {
            for tick in 6..200 {
                if let Err(e) = l.send(tick, 0.0, &cmd) {
                    result = Err(e);
                    return;
                }
                result = l.receive(tick, &mut f, &mut x);
                if result.is_err() {
                    return;
                }
            }
        });
        result.unwrap();
        assert_eq!(allocations, 0, "{kind:?}");
    }
}
