//! `hybridsim controller`'s server, in process on a thread over 127.0.0.1, driven by raw frame
//! clients: the served twin answers bit for bit what the same virtual lab gives in process;
//! every injected fault does what it says; repeated and reordered frames are never re-applied;
//! malformed frames are refused with a message naming the peer and the sequence; the server
//! always ends by itself (once, idle timeout, stop flag).

mod controller_common;

use controller_common::*;
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferSystem};
use hybridsim_net::controller::*;
use hybridsim_net::link::{command_status, encode_command, feedback_status, CommandHeader};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

const READY: u32 = feedback_status::READY;
const HOLD: u32 = command_status::HOLD;
const END: u32 = command_status::END;
const ARMED: u32 = command_status::ARMED;

/// What the in-process twin gives for the frame `(k, status, cmd)`: `(displacement, force)`.
fn apply(twin: &mut dyn TransferSystem, k: u64, status: u32, cmd: ActuatorCommand) -> (f64, f64) {
    let (mut f, mut d) = ([0.0], [cmd.d]);
    let t = k as f64 * 1e-3;
    if status & REST == REST {
        twin.measure_at_rest(&mut f, &mut d).unwrap();
    } else if status & HOLD != 0 {
        assert_eq!(
            twin.hold_sample(k, t, &mut f, &mut d).unwrap(),
            Sample::Fresh
        );
    } else {
        twin.send(k, t, &[cmd]).unwrap();
        assert_eq!(twin.receive(k, &mut f, &mut d).unwrap(), Sample::Fresh);
    }
    (d[0], f[0])
}

/// The frames of a short test: the measurement at rest, 20 holds, 1 500 commands, END.
fn script() -> Vec<(u64, u32, ActuatorCommand)> {
    let mut frames = vec![(0, REST, ActuatorCommand::default())];
    for k in 1..=20 {
        frames.push((
            k,
            HOLD | command_status::STARTING,
            ActuatorCommand::default(),
        ));
    }
    for k in 21..=1520 {
        frames.push((k, ARMED, command(k)));
    }
    frames.push((1521, ARMED | END, command(1521)));
    frames
}

fn assert_same(k: u64, served: &Reply, expected: (f64, f64)) {
    assert_eq!(served.header.sequence, k);
    assert_eq!(served.header.status, READY, "status of sequence {k}");
    assert_eq!(
        (served.d.to_bits(), served.f.to_bits()),
        (expected.0.to_bits(), expected.1.to_bits()),
        "sequence {k}: served ({}, {}), in process ({}, {})",
        served.d,
        served.f,
        expected.0,
        expected.1
    );
}

#[test]
fn udp_served_twin_is_bit_identical_to_the_in_process_virtual_lab() {
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            once: true,
            ..options(Transport::Udp)
        },
    );
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let mut previous_time = -1.0;
    let mut forces_differ = false;
    for (k, status, cmd) in script() {
        let reply = client.exchange(k, status, cmd);
        let expected = apply(reference.as_mut(), k, status, cmd);
        assert_same(k, &reply, expected);
        assert!(
            reply.header.time >= previous_time,
            "controller time goes on"
        );
        forces_differ |= reply.f != 0.0;
        previous_time = reply.header.time;
    }
    assert!(forces_differ, "the specimen answered with forces");
    let report = server.join(Duration::from_secs(5));
    assert_eq!(report.ending, Ending::SessionEnded);
    assert_eq!(report.statistics.sessions, 1);
    assert_eq!(report.statistics.frames, script().len() as u64);
    assert_eq!(report.statistics.replies, script().len() as u64);
    assert_eq!(report.statistics.refused, 0);
}

#[test]
fn tcp_served_twin_is_bit_identical_to_the_in_process_virtual_lab() {
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            once: true,
            ..options(Transport::Tcp)
        },
    );
    let mut reference = twin(&m);
    let mut client = Tcp::new(server.addr);
    for (k, status, cmd) in script() {
        let reply = client.exchange(k, status, cmd);
        assert_same(k, &reply, apply(reference.as_mut(), k, status, cmd));
    }
    assert!(
        client.closed(),
        "the server closes the connection after END"
    );
    let report = server.join(Duration::from_secs(5));
    assert_eq!(report.ending, Ending::SessionEnded);
    assert_eq!(report.statistics.frames, script().len() as u64);
}

#[test]
fn repeated_frames_are_answered_from_the_cache_and_reordered_ones_never_applied() {
    let m = model("");
    let server = start(&m, options(Transport::Udp));
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let first = client.exchange(0, REST, ActuatorCommand::default());
    assert_same(
        0,
        &first,
        apply(reference.as_mut(), 0, REST, ActuatorCommand::default()),
    );
    for k in 1..=100u64 {
        let reply = client.exchange(k, ARMED, command(k));
        assert_same(k, &reply, apply(reference.as_mut(), k, ARMED, command(k)));
        if k % 10 == 0 {
            // A duplicated datagram: the same bytes again, the lab not moved twice.
            let again = client.exchange(k, ARMED, command(k));
            assert_eq!(
                again.bytes, reply.bytes,
                "sequence {k} answered from the cache"
            );
        }
        if k == 50 {
            // A datagram overtaken by later ones: neither applied nor answered.
            client.send(45, ARMED, command(45));
            assert!(client.recv(Duration::from_millis(150)).is_none());
        }
    }
    let report = server.stop();
    assert_eq!(report.statistics.repeated, 10);
    assert_eq!(report.statistics.out_of_order, 1);
    assert_eq!(report.statistics.frames, 101, "each sequence applied once");
}

/// Stream `n` frames in bursts of 25 and count the replies per sequence (each burst's replies
/// collected until 30 ms pass without one).
fn stream_counts(server: &Running, n: u64) -> BTreeMap<u64, (u32, Vec<u8>)> {
    let mut client = Udp::new(server.addr);
    let mut counts: BTreeMap<u64, (u32, Vec<u8>)> = BTreeMap::new();
    client.send(0, REST, ActuatorCommand::default());
    let mut k = 1;
    loop {
        while let Some(r) = client.recv(Duration::from_millis(30)) {
            let e = counts
                .entry(r.header.sequence)
                .or_insert((0, r.bytes.clone()));
            e.0 += 1;
            assert_eq!(e.1, r.bytes, "a duplicate is the same frame");
        }
        if k > n {
            break;
        }
        for _ in 0..25 {
            if k <= n {
                client.send(k, ARMED, command(k));
                k += 1;
            }
        }
    }
    counts
}

#[test]
fn dropped_and_duplicated_replies_follow_their_probabilities_and_the_seed() {
    let n = 2000u64;
    let faults = |seed| Faults {
        seed,
        drop: 0.2,
        duplicate: 0.1,
        ..Faults::default()
    };
    let m = model("");
    let mut runs = Vec::new();
    for seed in [7, 7, 8] {
        let server = start(
            &m,
            ControllerOptions {
                faults: faults(seed),
                ..options(Transport::Udp)
            },
        );
        let counts = stream_counts(&server, n);
        let report = server.stop();
        let answered = counts.len() as u64;
        let missing = n + 1 - answered;
        let doubled = counts.values().filter(|(c, _)| *c == 2).count() as u64;
        assert!(counts.values().all(|(c, _)| *c <= 2));
        assert_eq!(
            report.statistics.dropped, missing,
            "every missing reply was dropped"
        );
        assert_eq!(report.statistics.duplicated, doubled);
        assert_eq!(
            report.statistics.frames,
            n + 1,
            "dropped replies were still applied"
        );
        // 4 standard deviations.
        let p = 0.2;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (missing as f64 - n as f64 * p).abs() < 4.0 * sd,
            "{missing} of {n} replies dropped with P = 0.2"
        );
        let kept = answered as f64;
        let sd = (kept * 0.1 * 0.9).sqrt();
        assert!(
            (doubled as f64 - kept * 0.1).abs() < 4.0 * sd,
            "{doubled} of {answered} replies duplicated with P = 0.1"
        );
        let pattern: Vec<(u64, u32)> = counts.iter().map(|(s, (c, _))| (*s, *c)).collect();
        runs.push(pattern);
    }
    assert_eq!(
        runs[0], runs[1],
        "the same seed drops and duplicates the same replies"
    );
    assert_ne!(runs[0], runs[2], "another seed, other replies");
}

#[test]
fn latency_and_jitter_delay_every_reply_while_the_server_keeps_receiving() {
    let latency = 0.02;
    let jitter = 0.005;
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            faults: Faults {
                latency,
                jitter,
                ..Faults::default()
            },
            ..options(Transport::Udp)
        },
    );
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let sent = Instant::now();
    let rest = client.exchange(0, REST, ActuatorCommand::default());
    assert!(sent.elapsed().as_secs_f64() >= latency);
    assert_same(
        0,
        &rest,
        apply(reference.as_mut(), 0, REST, ActuatorCommand::default()),
    );
    // 20 frames back to back: a server that slept through each delay would need 20 × 20 ms.
    let mut sent_at = Vec::new();
    let start = Instant::now();
    for k in 1..=20u64 {
        sent_at.push(Instant::now());
        client.send(k, ARMED, command(k));
    }
    let mut delays = Vec::new();
    let mut replies = BTreeMap::new();
    while replies.len() < 20 {
        let r = client
            .recv(Duration::from_secs(2))
            .expect("every delayed reply arrives");
        let k = r.header.sequence;
        delays.push(sent_at[(k - 1) as usize].elapsed().as_secs_f64());
        replies.insert(k, r);
    }
    let total = start.elapsed().as_secs_f64();
    for (k, r) in &replies {
        assert_same(*k, r, apply(reference.as_mut(), *k, ARMED, command(*k)));
    }
    let min = delays.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = delays.iter().cloned().fold(0.0, f64::max);
    assert!(
        min >= latency,
        "every reply waited the latency: shortest {min} s"
    );
    assert!(
        max - min > 0.001,
        "jitter spreads the delays: {min}..{max} s"
    );
    assert!(
        total < 10.0 * latency,
        "the delayed replies waited side by side ({total} s for 20)"
    );
    server.stop();
}

/// Frames at about 1 ms of wall clock each until controller time `until`.
/// The test time of the frame `r` answers (the faults' clock): `sequence × 1 ms`.
fn test_time(r: &Reply) -> f64 {
    r.header.sequence as f64 * 1e-3
}

fn paced(
    client: &mut Udp,
    reference: &mut dyn TransferSystem,
    until: f64,
) -> Vec<(Reply, (f64, f64))> {
    let mut out = Vec::new();
    let rest = client.exchange(0, REST, ActuatorCommand::default());
    out.push((rest, apply(reference, 0, REST, ActuatorCommand::default())));
    let mut k = 1;
    // Frames carry the test time `sequence × 1 ms` (controller_common), the faults' clock.
    while (k - 1) as f64 * 1e-3 < until {
        std::thread::sleep(Duration::from_millis(1));
        let r = client.exchange(k, ARMED, command(k));
        let e = apply(reference, k, ARMED, command(k));
        out.push((r, e));
        k += 1;
    }
    out
}

#[test]
fn a_frozen_sensor_repeats_the_last_measurement_while_the_lab_moves() {
    let at = 0.05;
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            faults: Faults {
                freeze_after: Some(at),
                ..Faults::default()
            },
            ..options(Transport::Udp)
        },
    );
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let replies = paced(&mut client, reference.as_mut(), 0.12);
    let split = replies
        .iter()
        .position(|(r, _)| test_time(r) >= at)
        .unwrap();
    assert!(split > 5);
    for (r, e) in &replies[..split] {
        assert_same(r.header.sequence, r, *e);
    }
    let last = &replies[split - 1].0;
    let mut moved = false;
    for (r, e) in &replies[split..] {
        assert_eq!(r.header.status, READY, "a frozen sensor does not say so");
        assert_eq!(
            (r.d.to_bits(), r.f.to_bits()),
            (last.d.to_bits(), last.f.to_bits())
        );
        moved |= e.0 != last.d;
    }
    assert!(moved, "the lab moved while the sensor was frozen");
    assert_eq!(server.notes(Note::Warning).len(), 1);
    assert!(server.notes(Note::Warning)[0].contains("frozen sensor"));
    server.stop();
}

#[test]
fn an_injected_interlock_is_on_every_later_reply() {
    let at = 0.04;
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            faults: Faults {
                interlock_after: Some(at),
                ..Faults::default()
            },
            ..options(Transport::Udp)
        },
    );
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let replies = paced(&mut client, reference.as_mut(), 0.08);
    let split = replies
        .iter()
        .position(|(r, _)| test_time(r) >= at)
        .unwrap();
    for (r, e) in &replies[..split] {
        assert_same(r.header.sequence, r, *e);
    }
    for (r, _) in &replies[split..] {
        assert_eq!(r.header.status, feedback_status::INTERLOCK);
    }
    let warnings = server.notes(Note::Warning);
    assert!(warnings[0].contains("injected interlock"), "{warnings:?}");
    let report = server.stop();
    assert_eq!(
        report.statistics.interlocked,
        (replies.len() - split) as u64
    );
}

#[test]
fn udp_disconnect_stops_the_replies_and_once_ends_the_server() {
    let at = 0.03;
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            once: true,
            faults: Faults {
                disconnect_after: Some(at),
                ..Faults::default()
            },
            ..options(Transport::Udp)
        },
    );
    let mut client = Udp::new(server.addr);
    client.exchange(0, REST, ActuatorCommand::default());
    let t0 = Instant::now();
    let mut k = 1;
    let mut answered_after = None;
    loop {
        std::thread::sleep(Duration::from_millis(1));
        client.send(k, ARMED, command(k));
        match client.recv(Duration::from_millis(300)) {
            Some(r) => {
                assert!(test_time(&r) < at);
                answered_after = Some(t0.elapsed());
            }
            None => break,
        }
        k += 1;
        assert!(k < 10_000);
    }
    assert!(answered_after.is_some());
    let report = server.join(Duration::from_secs(5));
    assert_eq!(report.ending, Ending::SessionEnded);
}

#[test]
fn udp_disconnect_ignores_the_session_and_a_new_one_starts_fresh() {
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            faults: Faults {
                disconnect_after: Some(0.02),
                ..Faults::default()
            },
            ..options(Transport::Udp)
        },
    );
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let first = paced(&mut client, reference.as_mut(), 0.015);
    std::thread::sleep(Duration::from_millis(30));
    for k in 1000..1010 {
        client.send(k, ARMED, command(k));
        assert!(client.recv(Duration::from_millis(20)).is_none());
    }
    // A new session (the same peer, a new measurement at rest): a fresh twin again.
    let again = client.exchange(0, REST, ActuatorCommand::default());
    assert_eq!(
        again.bytes[32..],
        first[0].0.bytes[32..],
        "a fresh specimen"
    );
    let warnings = server.notes(Note::Warning);
    assert!(warnings[0].contains("injected disconnect"), "{warnings:?}");
    let report = server.stop();
    assert!(report.statistics.ignored >= 9, "{:?}", report.statistics);
    assert_eq!(report.statistics.sessions, 2);
}

#[test]
fn tcp_disconnect_closes_the_connection() {
    let m = model("");
    let server = start(
        &m,
        ControllerOptions {
            once: true,
            faults: Faults {
                disconnect_after: Some(0.03),
                ..Faults::default()
            },
            ..options(Transport::Tcp)
        },
    );
    let mut client = Tcp::new(server.addr);
    client.exchange(0, REST, ActuatorCommand::default());
    let mut k = 1;
    loop {
        std::thread::sleep(Duration::from_millis(1));
        client.send(k, ARMED, command(k));
        match client.recv() {
            Some(r) => assert!(test_time(&r) < 0.03),
            None => break,
        }
        k += 1;
        assert!(k < 10_000, "never disconnected");
    }
    let report = server.join(Duration::from_secs(5));
    assert_eq!(report.ending, Ending::SessionEnded);
}

#[test]
fn a_failing_virtual_lab_turns_into_an_interlock_and_a_missing_sample_into_stale() {
    let fault = |kind: &str| {
        format!("[[lab.fault]]\nactuator = \"storey1\"\nat = 0.05\nkind = \"{kind}\"\n")
    };
    for (kind, expect) in [
        ("panic", "panicked"),
        ("nan_force", "cannot carry"),
        ("dropout", ""),
    ] {
        let m = model(&fault(kind));
        let server = start(&m, options(Transport::Udp));
        let mut client = Udp::new(server.addr);
        let rest = client.exchange(0, REST, ActuatorCommand::default());
        assert_eq!(rest.header.status, READY);
        let mut last = rest;
        for k in 1..=100u64 {
            let r = client.exchange(k, ARMED, command(k));
            // The lab's faults act at the frames' test time k·1 ms.
            if k < 50 {
                assert_eq!(r.header.status, READY, "{kind} at {k}");
            } else if kind == "dropout" {
                assert_eq!(r.header.status, READY | feedback_status::STALE);
                assert_eq!((r.d, r.f), (last.d, last.f), "a stale reply repeats");
            } else {
                assert_eq!(r.header.status, feedback_status::INTERLOCK, "{kind} at {k}");
                if k > 50 {
                    assert_eq!((r.d, r.f), (last.d, last.f));
                }
            }
            last = r;
        }
        let warnings = server.notes(Note::Warning);
        if expect.is_empty() {
            assert!(warnings.is_empty(), "{warnings:?}");
        } else {
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].contains(expect), "{warnings:?}");
            assert!(warnings[0].contains("sequence 50"), "{warnings:?}");
        }
        server.stop();
    }
}

/// A one-actuator frame with its fields overridden.
fn raw(sequence: u64, status: u32, d: f64) -> Vec<u8> {
    frame(
        sequence,
        status,
        ActuatorCommand {
            d,
            ..ActuatorCommand::default()
        },
    )
}

#[test]
fn malformed_udp_frames_are_refused_with_the_peer_and_the_sequence() {
    let m = model("");
    let server = start(&m, options(Transport::Udp));
    let mut client = Udp::new(server.addr);
    let me = client.socket.local_addr().unwrap().to_string();
    let mut refused = 0;
    let mut check = |client: &mut Udp, bytes: Vec<u8>, words: &[&str]| {
        client.send_raw(&bytes);
        assert!(
            client.recv(Duration::from_millis(100)).is_none(),
            "no reply to a refused frame"
        );
        refused += 1;
        let notes = server.notes(Note::Refused);
        assert_eq!(notes.len(), refused, "{notes:?}");
        let last = notes.last().unwrap();
        assert!(last.contains(&me), "names the peer: {last}");
        for w in words {
            assert!(last.contains(w), "`{w}` in: {last}");
        }
    };
    check(
        &mut client,
        raw(5, ARMED, 0.0),
        &["sequence 5", "no session under way"],
    );
    client.exchange(0, REST, ActuatorCommand::default());
    let mut long = raw(701, ARMED, 0.0);
    long.push(0);
    check(&mut client, long, &["sequence 701", "57 bytes"]);
    check(
        &mut client,
        raw(702, ARMED, 0.0)[..20].to_vec(),
        &["sequence 702", "20 bytes"],
    );
    check(
        &mut client,
        raw(703, ARMED, 0.0)[..10].to_vec(),
        &["sequence unknown: 10 bytes"],
    );
    check(&mut client, Vec::new(), &["sequence unknown: 0 bytes"]);
    let mut magic = raw(704, ARMED, 0.0);
    magic[0] = b'X';
    check(&mut client, magic, &["sequence 704", "magic"]);
    let mut version = raw(705, ARMED, 0.0);
    version[4] = 2;
    check(&mut client, version, &["sequence 705", "version 2"]);
    let mut two = vec![0u8; 32 + 48];
    encode_command(
        &CommandHeader {
            sequence: 706,
            time: 0.0,
            status: ARMED,
        },
        &[ActuatorCommand::default(); 2],
        &mut two,
    )
    .unwrap();
    check(&mut client, two, &["sequence 706", "2 actuators", "has 1"]);
    check(
        &mut client,
        raw(707, ARMED, f64::NAN),
        &["sequence 707", "NaN"],
    );
    check(
        &mut client,
        raw(708, ARMED, f64::INFINITY),
        &["sequence 708", "inf"],
    );
    check(
        &mut client,
        raw(709, 1 << 9, 0.0),
        &["sequence 709", "status"],
    );
    check(
        &mut client,
        raw(710, REST | HOLD, 0.0),
        &["sequence 710", "REST"],
    );
    let mut reserved = raw(711, ARMED, 0.0);
    reserved[28] = 1;
    check(&mut client, reserved, &["sequence 711", "reserved"]);
    // Another peer while the session is under way.
    let mut other = Udp::new(server.addr);
    let other_addr = other.socket.local_addr().unwrap().to_string();
    other.send(712, ARMED, command(712));
    assert!(other.recv(Duration::from_millis(100)).is_none());
    let notes = server.notes(Note::Refused);
    assert!(notes.last().unwrap().contains(&other_addr));
    assert!(notes.last().unwrap().contains("is under way"));
    // The session goes on.
    let r = client.exchange(1, ARMED, command(1));
    assert_eq!(r.header.status, READY);
    let report = server.stop();
    assert_eq!(report.statistics.refused as usize, refused + 1);
}

#[test]
fn a_measurement_at_rest_from_another_peer_takes_the_lab_over() {
    let m = model("");
    let server = start(&m, options(Transport::Udp));
    let mut a = Udp::new(server.addr);
    let first = a.exchange(0, REST, ActuatorCommand::default());
    a.exchange(1, ARMED, command(1));
    let mut b = Udp::new(server.addr);
    let again = b.exchange(0, REST, ActuatorCommand::default());
    assert_eq!(again.bytes[32..], first.bytes[32..], "a fresh twin");
    b.exchange(1, ARMED, command(1));
    a.send(2, ARMED, command(2));
    assert!(a.recv(Duration::from_millis(100)).is_none());
    let warnings = server.notes(Note::Warning);
    assert!(warnings[0].contains("takes the lab over"), "{warnings:?}");
    server.stop();
}

#[test]
fn after_end_a_late_duplicate_is_answered_and_a_new_session_starts_fresh() {
    let m = model("");
    let server = start(&m, options(Transport::Udp));
    let mut reference = twin(&m);
    let mut client = Udp::new(server.addr);
    let mut first = Vec::new();
    for (k, status, cmd) in script().into_iter().take(200) {
        let status = if k == 199 { status | END } else { status };
        let r = client.exchange(k, status, cmd);
        assert_same(k, &r, apply(reference.as_mut(), k, status, cmd));
        first.push(r);
    }
    let end = first.last().unwrap().clone();
    let late = client.exchange(199, ARMED | END, command(199));
    assert_eq!(
        late.bytes, end.bytes,
        "a duplicated END is answered from the cache"
    );
    let mut reference = twin(&m);
    for (k, status, cmd) in script().into_iter().take(50) {
        let r = client.exchange(k, status, cmd);
        assert_same(k, &r, apply(reference.as_mut(), k, status, cmd));
    }
    let info = server.notes(Note::Info);
    assert!(
        info[1].contains("session 1 ended (END; last sequence 199)"),
        "{info:?}"
    );
    assert!(info[2].starts_with("session 2: 127.0.0.1:"), "{info:?}");
    let report = server.stop();
    assert_eq!(report.statistics.sessions, 2);
    assert_eq!(report.statistics.repeated, 1);
}

#[test]
fn malformed_tcp_frames_close_the_connection_with_a_message() {
    let m = model("");
    let server = start(&m, options(Transport::Tcp));
    let cases: Vec<(Vec<u8>, bool, &[&str])> = vec![
        (
            {
                let mut b = raw(0, REST, 0.0);
                b[1] = b'X';
                b
            },
            false,
            &["magic"],
        ),
        (
            {
                let mut b = raw(0, REST, 0.0);
                b[6] = 3;
                b
            },
            false,
            &["3 actuators", "has 1"],
        ),
        (raw(0, REST, f64::NAN), false, &["sequence 0", "NaN"]),
        (
            raw(4, ARMED, 0.0),
            false,
            &["sequence 4", "measurement at rest"],
        ),
        (raw(6, ARMED, 0.0), true, &["sequence 6", "20 of 56 bytes"]),
        (raw(7, 1 << 12, 0.0), true, &["sequence 7", "status"]),
    ];
    for (i, (bytes, after_rest, words)) in cases.into_iter().enumerate() {
        let mut client = Tcp::new(server.addr);
        if after_rest {
            client.exchange(0, REST, ActuatorCommand::default());
        }
        if words.iter().any(|w| w.contains("of 56 bytes")) {
            client.stream.write_all(&bytes[..20]).unwrap();
            client.stream.shutdown(std::net::Shutdown::Write).unwrap();
        } else {
            client.stream.write_all(&bytes).unwrap();
        }
        assert!(
            client.closed(),
            "case {i}: the server closed the connection"
        );
        let deadline = Instant::now() + Duration::from_secs(2);
        while server.notes(Note::Refused).len() <= i && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let notes = server.notes(Note::Refused);
        assert_eq!(notes.len(), i + 1, "{notes:?}");
        for w in words {
            assert!(notes[i].contains(w), "`{w}` in: {}", notes[i]);
        }
        assert!(notes[i].contains("127.0.0.1:"));
    }
    // The server still serves.
    let mut client = Tcp::new(server.addr);
    assert_eq!(
        client
            .exchange(0, REST, ActuatorCommand::default())
            .header
            .status,
        READY
    );
    server.stop();
}

#[test]
fn the_server_ends_by_itself_when_idle_and_on_the_stop_flag() {
    let m = model("");
    for transport in [Transport::Udp, Transport::Tcp] {
        let started = Instant::now();
        let server = start(
            &m,
            ControllerOptions {
                idle_timeout: Some(Duration::from_millis(200)),
                ..options(transport)
            },
        );
        let report = server.join(Duration::from_secs(5));
        assert_eq!(report.ending, Ending::IdleTimeout { in_session: false });
        assert!(started.elapsed() >= Duration::from_millis(200));

        let server = start(&m, options(transport));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(server.stop().ending, Ending::Stopped);
    }
    // A session whose runner went away.
    let server = start(
        &m,
        ControllerOptions {
            idle_timeout: Some(Duration::from_millis(200)),
            ..options(Transport::Udp)
        },
    );
    let mut client = Udp::new(server.addr);
    client.exchange(0, REST, ActuatorCommand::default());
    let report = server.join(Duration::from_secs(5));
    assert_eq!(report.ending, Ending::IdleTimeout { in_session: true });
}

#[test]
fn bad_options_and_labs_are_refused_at_start() {
    let m = model("");
    let (_, actuators, factory) = virtual_twin_of(&m, None).unwrap();
    let bad = ControllerOptions {
        faults: Faults {
            drop: 1.5,
            ..Faults::default()
        },
        ..ControllerOptions::default()
    };
    let err = ControllerServer::bind(factory, actuators, bad, Box::new(|_, _| {}))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("--drop 1.5"), "{err}");
    let err = virtual_twin_of(&m, Some("frame")).err().unwrap();
    assert!(err.contains("no physical substructure `frame`"), "{err}");
    let text = QUICKSTART.split("\n[lab]").next().unwrap();
    let no_lab =
        hybridsim::model::Model::from_toml(text, "x.toml", &hybridsim::model::NoFiles).unwrap();
    let err = virtual_twin_of(&no_lab, None).err().unwrap();
    assert!(err.contains("no [lab]"), "{err}");
}
