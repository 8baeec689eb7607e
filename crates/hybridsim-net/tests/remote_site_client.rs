//! The client end of a remote site (`transfer = "opensees"`, [`RemoteSite`]) against scripted
//! sites on 127.0.0.1: an adapter-like TCP server (OpenSees's `adapter` element) and an
//! element server (`hybridsim serve`, OpenFresco's `SimAppElemServer`) over TCP and UDP.
//! Exact values and the exact sequence of actions on the wire; every fault the safety layer
//! must hear of, each as its own event kind with the peer and the tick in the message: no
//! reply within the timeout, a closed connection, a short reply (then closed, or then silent),
//! NaN in a reply, a force request without a trial; a refused connection. The steady state
//! allocates nothing.
//!
//! Every site thread stops by itself (a read timeout, a bounded number of frames).

#[path = "../../hybridsim/tests/common/counting.rs"]
mod counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

use hybridsim::model::lab::{LinkMode, LinkSettings, RemotePeer, TransferKind};
use hybridsim::physical::transfer::{
    ActuatorCommand, Sample, TransferConnector, TransferRequest, TransferSystem,
};
use hybridsim::physical::{EventKind, TransferError};
use hybridsim_net::generic_client::protocol::{
    udp_accept, udp_recv, udp_send, Action, Frame, Sizes, MAX_UDP_DATAGRAM, SIZES_BYTES,
};
use hybridsim_net::remote_site::site_sizes;
use hybridsim_net::{NetConnector, RemoteSite};
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const N: usize = 2;
/// Force per unit displacement of the scripted sites.
const K: f64 = 2.0;
/// The scripted adapter's node lags the target by this fraction (its penalty spring).
const LAG: f64 = 1e-3;

/// What a scripted site does wrong, at the force request of `tick` (counted from 0 = the
/// measurement at rest).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    /// No reply (then wait for the client to go away).
    Silent(u64),
    /// Close the connection instead of replying.
    Close(u64),
    /// Send a third of a reply, then close.
    ShortThenClose(u64),
    /// Send a third of a reply, then stay silent.
    ShortThenSilent(u64),
    /// A NaN force in the reply.
    NanForce(u64),
    /// A NaN displacement in the reply (adapter).
    NanDisp(u64),
}

/// What the site saw: the sizes and every action with its control values.
#[derive(Debug, Default)]
struct Seen {
    sizes: Option<Sizes>,
    actions: Vec<i32>,
    /// The trials (3): control vector from index 1 to the end of the control layout.
    trials: Vec<Vec<f64>>,
}

/// The reply of a site to the force request, from the last trial.
fn reply(peer: RemotePeer, sizes: &Sizes, trial: &Frame, out: &mut Frame, fault: Fault, at: u64) {
    let ctrl = sizes.ctrl_layout();
    let daq = sizes.daq_layout();
    let v = out.values_mut();
    v.iter_mut().for_each(|x| *x = 0.0);
    for k in 0..N {
        let d = trial.values()[ctrl.disp.start + k];
        match peer {
            RemotePeer::Adapter => {
                let db = d * (1.0 - LAG);
                v[daq.disp.start + k] = db;
                v[daq.force.start + k] = K * db + k as f64;
            }
            RemotePeer::ElementServer => v[k] = K * d + k as f64,
        }
    }
    let force_at = match peer {
        RemotePeer::Adapter => daq.force.start,
        RemotePeer::ElementServer => 0,
    };
    match fault {
        Fault::NanForce(t) if t == at => v[force_at + 1] = f64::NAN,
        Fault::NanDisp(t) if t == at => v[daq.disp.start] = f64::NAN,
        _ => {}
    }
    out.encode();
}

/// A scripted TCP site of kind `peer`; returns its address and the thread (which returns
/// what it saw).
fn tcp_site(peer: RemotePeer, fault: Fault) -> (String, JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let handle = std::thread::spawn(move || {
        let mut seen = Seen::default();
        listener.set_nonblocking(false).unwrap();
        let Ok((mut stream, _)) = listener.accept() else {
            return seen;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let mut b = [0u8; SIZES_BYTES];
        if stream.read_exact(&mut b).is_err() {
            return seen;
        }
        let sizes = Sizes::decode(&b).unwrap();
        seen.sizes = Some(sizes);
        let mut rx = Frame::new(sizes.data_size);
        let mut trial = Frame::new(sizes.data_size);
        let mut tx = Frame::new(sizes.data_size);
        let mut requests = 0u64;
        for _ in 0..100_000 {
            if stream.read_exact(rx.bytes_mut()).is_err() {
                break;
            }
            rx.decode();
            let code = rx.values()[0] as i32;
            seen.actions.push(code);
            match Action::from_code(code) {
                Some(Action::SetTrialResponse) => {
                    trial.values_mut().copy_from_slice(rx.values());
                    let end = sizes.ctrl_layout().end();
                    seen.trials.push(rx.values()[1..end].to_vec());
                }
                Some(Action::GetForce) => {
                    let at = requests;
                    requests += 1;
                    match fault {
                        Fault::Silent(t) if t == at => continue,
                        Fault::Close(t) if t == at => break,
                        Fault::ShortThenClose(t) | Fault::ShortThenSilent(t) if t == at => {
                            reply(peer, &sizes, &trial, &mut tx, fault, at);
                            let third = tx.bytes().len() / 3;
                            let _ = stream.write_all(&tx.bytes()[..third]);
                            if matches!(fault, Fault::ShortThenClose(_)) {
                                break;
                            }
                            continue;
                        }
                        _ => {}
                    }
                    reply(peer, &sizes, &trial, &mut tx, fault, at);
                    if stream.write_all(tx.bytes()).is_err() {
                        break;
                    }
                }
                Some(Action::Die) if peer == RemotePeer::ElementServer => break,
                _ => {}
            }
        }
        seen
    });
    (addr, handle)
}

/// A scripted UDP element server; returns its address and the thread.
fn udp_site(fault: Fault) -> (String, JoinHandle<Seen>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap().to_string();
    let handle = std::thread::spawn(move || {
        let mut seen = Seen::default();
        socket
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let Ok(client) = udp_accept(&socket) else {
            return seen;
        };
        let mut b = [0u8; 64];
        let Ok((got, _)) = socket.recv_from(&mut b) else {
            return seen;
        };
        let sizes = Sizes::decode(&b[..got]).unwrap();
        seen.sizes = Some(sizes);
        let mut rx = Frame::new(sizes.data_size);
        let mut trial = Frame::new(sizes.data_size);
        let mut tx = Frame::new(sizes.data_size);
        let mut scratch = vec![0u8; MAX_UDP_DATAGRAM + 1];
        let mut requests = 0u64;
        for _ in 0..100_000 {
            match udp_recv(&socket, client, rx.bytes_mut(), &mut scratch) {
                Ok(hybridsim_net::generic_client::protocol::UdpReceived::Complete) => {}
                _ => break,
            }
            rx.decode();
            let code = rx.values()[0] as i32;
            seen.actions.push(code);
            match Action::from_code(code) {
                Some(Action::SetTrialResponse) => {
                    trial.values_mut().copy_from_slice(rx.values());
                    let end = sizes.ctrl_layout().end();
                    seen.trials.push(rx.values()[1..end].to_vec());
                }
                Some(Action::GetForce) => {
                    let at = requests;
                    requests += 1;
                    match fault {
                        Fault::Silent(t) if t == at => continue,
                        Fault::ShortThenSilent(t) if t == at => {
                            let _ = socket.send_to(&[0u8; 5], client);
                            continue;
                        }
                        _ => {}
                    }
                    reply(
                        RemotePeer::ElementServer,
                        &sizes,
                        &trial,
                        &mut tx,
                        fault,
                        at,
                    );
                    let _ = udp_send(&socket, client, tx.bytes());
                }
                Some(Action::Die) => break,
                _ => {}
            }
        }
        seen
    });
    (addr, handle)
}

fn settings(address: String, peer: RemotePeer, udp: bool, timeout: f64) -> LinkSettings {
    LinkSettings {
        address,
        bind: None,
        timeout,
        mode: LinkMode::LockStep,
        max_lag: 2,
        udp,
        peer,
    }
}

fn command(tick: u64) -> Vec<ActuatorCommand> {
    let x = tick as f64 * 1e-3;
    vec![
        ActuatorCommand {
            d: x,
            v: 0.5 + x,
            a: -1.0 - x,
        },
        ActuatorCommand {
            d: -2.0 * x,
            v: -0.25,
            a: 3.0,
        },
    ]
}

/// The site's expected reply to target `d` of actuator `k`: (position, force).
fn expected(peer: RemotePeer, k: usize, d: f64) -> (f64, f64) {
    match peer {
        RemotePeer::Adapter => {
            let db = d * (1.0 - LAG);
            (db, K * db + k as f64)
        }
        RemotePeer::ElementServer => (d, K * d + k as f64),
    }
}

/// Measure at rest (rest position `rest`), two hold samples, then `ticks` exchanges, checking
/// every value; returns the first error.
fn drive(site: &mut RemoteSite, peer: RemotePeer, ticks: u64) -> Result<(), TransferError> {
    let rest = [0.004, -0.001];
    let (mut f, mut x) = ([0.0; N], rest);
    site.measure_at_rest(&mut f, &mut x)?;
    for k in 0..N {
        assert_eq!(
            (x[k], f[k]),
            expected(peer, k, rest[k]),
            "at rest, actuator {k}"
        );
    }
    for tick in 1..=2 {
        let s = site.hold_sample(tick, tick as f64 * 1e-3, &mut f, &mut x)?;
        assert_eq!(s, Sample::Fresh);
        for k in 0..N {
            assert_eq!((x[k], f[k]), expected(peer, k, rest[k]), "hold {tick}");
        }
    }
    for tick in 3..3 + ticks {
        let cmd = command(tick);
        site.send(tick, tick as f64 * 1e-3, &cmd)?;
        let s = site.receive(tick, &mut f, &mut x)?;
        assert_eq!(s, Sample::Fresh);
        for k in 0..N {
            assert_eq!((x[k], f[k]), expected(peer, k, cmd[k].d), "tick {tick}");
        }
    }
    Ok(())
}

fn statistic(site: &RemoteSite, name: &str) -> f64 {
    site.statistics()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
        .1
}

#[test]
fn adapter_over_tcp_exact_values_and_actions() {
    let (addr, site_thread) = tcp_site(RemotePeer::Adapter, Fault::None);
    let mut site = RemoteSite::open(&settings(addr.clone(), RemotePeer::Adapter, false, 1.0), N)
        .expect("connect");
    assert!(site.describe().contains("adapter") && site.describe().contains(&addr));
    drive(&mut site, RemotePeer::Adapter, 10).unwrap();
    // 1 (rest) + 2 (hold) + 10 exchanges of 3 and 10, then 99 twice.
    assert_eq!(statistic(&site, "frames_sent"), 26.0);
    assert_eq!(statistic(&site, "replies"), 13.0);
    assert_eq!(statistic(&site, "missing_replies"), 0.0);
    assert!(statistic(&site, "latency_p50_ms") > 0.0);
    assert!(statistic(&site, "latency_max_ms") < 1000.0);
    drop(site);
    let seen = site_thread.join().unwrap();
    // The adapter element's sizes: ctrl disp, daq disp and force, nothing else.
    assert_eq!(
        seen.sizes.unwrap().to_ints(),
        [2, 0, 0, 0, 0, 2, 0, 0, 2, 0, 5]
    );
    let mut want = vec![];
    for _ in 0..13 {
        want.extend([3, 10]);
    }
    want.extend([99, 99]);
    assert_eq!(seen.actions, want);
    // The trial carries the target displacement only (rest, hold, hold, then the commands).
    assert_eq!(seen.trials[0], vec![0.004, -0.001]);
    assert_eq!(seen.trials[2], vec![0.004, -0.001]);
    let c = command(3);
    assert_eq!(seen.trials[3], vec![c[0].d, c[1].d]);
}

#[test]
fn element_server_over_tcp_exact_values_trial_commit() {
    let peer = RemotePeer::ElementServer;
    let (addr, site_thread) = tcp_site(peer, Fault::None);
    let mut site = RemoteSite::open(&settings(addr, peer, false, 1.0), N).expect("connect");
    drive(&mut site, peer, 10).unwrap();
    assert_eq!(statistic(&site, "replies"), 13.0);
    drop(site);
    let seen = site_thread.join().unwrap();
    // genericClient's sizes, dataSize 3nb + 2 = 8.
    assert_eq!(
        seen.sizes.unwrap().to_ints(),
        [2, 2, 2, 0, 1, 0, 0, 0, 2, 0, 8]
    );
    let mut want = vec![];
    for _ in 0..13 {
        want.extend([3, 10, 5]);
    }
    want.push(99);
    assert_eq!(seen.actions, want);
    // Trial: d, v, a, t. At rest and on hold v = a = 0; a command carries its rates and the
    // tick's wall time.
    assert_eq!(seen.trials[0], vec![0.004, -0.001, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(seen.trials[1][6], 1e-3);
    let c = command(3);
    assert_eq!(
        seen.trials[3],
        vec![c[0].d, c[1].d, c[0].v, c[1].v, c[0].a, c[1].a, 3e-3]
    );
}

#[test]
fn element_server_over_udp_exact_values() {
    let peer = RemotePeer::ElementServer;
    let (addr, site_thread) = udp_site(Fault::None);
    let mut site = RemoteSite::open(&settings(addr, peer, true, 1.0), N).expect("connect");
    assert!(site.describe().contains("udp"));
    drive(&mut site, peer, 20).unwrap();
    drop(site);
    let seen = site_thread.join().unwrap();
    assert_eq!(seen.actions.len(), 23 * 3 + 1);
    assert_eq!(*seen.actions.last().unwrap(), 99);
}

#[test]
fn the_adapter_over_udp_is_refused_with_a_reason() {
    let e = RemoteSite::open(
        &settings("127.0.0.1:9".into(), RemotePeer::Adapter, true, 1.0),
        N,
    )
    .err()
    .expect("refused");
    assert!(e.message.contains("TCP only"), "{}", e.message);
}

/// Run `drive` against a faulty site; returns the error and how long it took.
fn fail_with(peer: RemotePeer, udp: bool, fault: Fault, timeout: f64) -> (TransferError, f64) {
    let (addr, site_thread) = if udp {
        udp_site(fault)
    } else {
        tcp_site(peer, fault)
    };
    let mut site = RemoteSite::open(&settings(addr.clone(), peer, udp, timeout), N).unwrap();
    let start = Instant::now();
    let e = drive(&mut site, peer, 20).expect_err("the fault must surface");
    let took = start.elapsed().as_secs_f64();
    assert!(e.message.contains(&addr), "names the peer: {}", e.message);
    drop(site);
    let _ = site_thread.join();
    (e, took)
}

#[test]
fn a_missing_reply_is_a_link_timeout_naming_peer_and_tick() {
    for (peer, udp) in [
        (RemotePeer::Adapter, false),
        (RemotePeer::ElementServer, false),
        (RemotePeer::ElementServer, true),
    ] {
        // Request 5 = tick 5 (rest = 0, holds 1 and 2, exchanges from 3).
        let (e, took) = fail_with(peer, udp, Fault::Silent(5), 0.2);
        assert_eq!(e.kind, EventKind::LinkTimeout, "{}", e.message);
        assert!(e.message.contains("at tick 5"), "{}", e.message);
        assert!(e.message.contains("0.2 s"), "{}", e.message);
        assert!((0.15..2.0).contains(&took), "bounded: {took} s");
    }
}

#[test]
fn a_closed_connection_is_link_lost() {
    for peer in [RemotePeer::Adapter, RemotePeer::ElementServer] {
        let (e, took) = fail_with(peer, false, Fault::Close(4), 2.0);
        assert_eq!(e.kind, EventKind::LinkLost, "{}", e.message);
        assert!(e.message.contains("at tick 4"), "{}", e.message);
        assert!(e.message.contains("closed"), "{}", e.message);
        assert!(took < 1.5, "no wait for the timeout: {took} s");
    }
}

#[test]
fn a_short_reply_is_a_protocol_fault() {
    let (e, _) = fail_with(RemotePeer::Adapter, false, Fault::ShortThenClose(3), 2.0);
    assert_eq!(e.kind, EventKind::LinkProtocol, "{}", e.message);
    assert!(
        e.message.contains("short reply: 13 of 40 bytes") && e.message.contains("closed"),
        "{}",
        e.message
    );
    let (e, took) = fail_with(RemotePeer::Adapter, false, Fault::ShortThenSilent(3), 0.2);
    assert_eq!(e.kind, EventKind::LinkProtocol, "{}", e.message);
    assert!(e.message.contains("at tick 3"), "{}", e.message);
    assert!(took < 2.0, "bounded: {took} s");
    // UDP: a datagram of the wrong length.
    let (e, _) = fail_with(
        RemotePeer::ElementServer,
        true,
        Fault::ShortThenSilent(3),
        1.0,
    );
    assert_eq!(e.kind, EventKind::LinkProtocol, "{}", e.message);
    assert!(e.message.contains("datagram of 5 bytes"), "{}", e.message);
}

#[test]
fn nan_in_a_reply_is_a_protocol_fault() {
    let (e, _) = fail_with(RemotePeer::Adapter, false, Fault::NanForce(6), 1.0);
    assert_eq!(e.kind, EventKind::LinkProtocol, "{}", e.message);
    assert!(
        e.message.contains("at tick 6") && e.message.contains("force[1] is not finite"),
        "{}",
        e.message
    );
    let (e, _) = fail_with(RemotePeer::Adapter, false, Fault::NanDisp(0), 1.0);
    assert!(e.message.contains("displacement[0]"), "{}", e.message);
    let (e, _) = fail_with(RemotePeer::ElementServer, true, Fault::NanForce(7), 1.0);
    assert_eq!(e.kind, EventKind::LinkProtocol, "{}", e.message);
}

#[test]
fn a_force_request_without_a_trial_is_refused() {
    let (addr, site_thread) = tcp_site(RemotePeer::Adapter, Fault::None);
    let mut site = RemoteSite::open(&settings(addr, RemotePeer::Adapter, false, 1.0), N).unwrap();
    let (mut f, mut x) = ([0.0; N], [0.0; N]);
    site.measure_at_rest(&mut f, &mut x).unwrap();
    let e = site.receive(1, &mut f, &mut x).unwrap_err();
    assert_eq!(e.kind, EventKind::LinkProtocol);
    assert!(e.message.contains("without a trial"), "{}", e.message);
    drop(site);
    site_thread.join().unwrap();
}

#[test]
fn a_refused_connection_is_link_lost() {
    // A port with no listener (bound, then released).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let e = RemoteSite::open(
        &settings(format!("127.0.0.1:{port}"), RemotePeer::Adapter, false, 0.1),
        N,
    )
    .err()
    .expect("nobody listens");
    assert_eq!(e.kind, EventKind::LinkLost, "{}", e.message);
    assert!(e.message.contains(&port.to_string()), "{}", e.message);
    // Refused connections are retried for the start-up allowance, no longer.
    let took = start.elapsed();
    assert!(took < hybridsim_net::remote_site::START_TIMEOUT + Duration::from_secs(2));
}

#[test]
fn the_connector_builds_a_remote_site() {
    let (addr, site_thread) = tcp_site(RemotePeer::ElementServer, Fault::None);
    let request = TransferRequest {
        substructure: "specimen".into(),
        kind: TransferKind::OpenSees,
        link: Some(settings(addr, RemotePeer::ElementServer, false, 1.0)),
        actuators: vec!["a".into(), "b".into()],
        dt_c: 1e-3,
    };
    let mut t = NetConnector.connect(&request).expect("connect");
    assert_eq!(t.n_actuators(), 2);
    assert!(!t.is_virtual());
    assert!(t.describe().contains("element server"), "{}", t.describe());
    let (mut f, mut x) = ([0.0; N], [0.5, 0.25]);
    t.measure_at_rest(&mut f, &mut x).unwrap();
    assert_eq!(f, [1.0, 1.5]);
    drop(t);
    site_thread.join().unwrap();
}

#[test]
fn sizes_for_each_peer() {
    assert_eq!(
        site_sizes(RemotePeer::Adapter, 3).to_ints(),
        [3, 0, 0, 0, 0, 3, 0, 0, 3, 0, 7]
    );
    let s = site_sizes(RemotePeer::ElementServer, 4);
    assert_eq!(s.to_ints(), [4, 4, 4, 0, 1, 0, 0, 0, 4, 0, 16]);
    assert_eq!(s.basic_dofs().unwrap(), 4);
}

#[test]
fn the_steady_state_allocates_nothing() {
    for (peer, udp) in [
        (RemotePeer::Adapter, false),
        (RemotePeer::ElementServer, false),
        (RemotePeer::ElementServer, true),
    ] {
        let (addr, site_thread) = if udp {
            udp_site(Fault::None)
        } else {
            tcp_site(peer, Fault::None)
        };
        let mut site = RemoteSite::open(&settings(addr, peer, udp, 2.0), N).unwrap();
        let (mut f, mut x) = ([0.0; N], [0.0; N]);
        site.measure_at_rest(&mut f, &mut x).unwrap();
        // Warm up (first latency records, socket options).
        for tick in 1..=5 {
            site.send(tick, 0.0, &command(tick)).unwrap();
            site.receive(tick, &mut f, &mut x).unwrap();
        }
        let cmds: Vec<Vec<ActuatorCommand>> = (0..200).map(command).collect();
        let allocations = counting::count(|| {
            for (i, cmd) in cmds.iter().enumerate() {
                let tick = 6 + i as u64;
                site.send(tick, tick as f64 * 1e-3, cmd).unwrap();
                site.receive(tick, &mut f, &mut x).unwrap();
            }
            site.hold_sample(206, 0.206, &mut f, &mut x).unwrap();
        });
        assert_eq!(
            allocations, 0,
            "{peer:?} udp={udp}: the steady state allocated"
        );
        drop(site);
        site_thread.join().unwrap();
    }
}
