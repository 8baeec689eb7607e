//! The UDP controller link at 4 096 Hz on loopback: a client paces command frames every
//! 1/4096 s (sleeping to each tick's deadline) against `hybridsim controller`'s server (the
//! quick-start lab's virtual twin, in this process on its own thread), and measures the round
//! trip of every frame. Prints the round-trip percentiles (p50, p99, p99.9, max), the replies
//! missing within their tick (losses), the late replies, and how late the client's own sends
//! were (the pacing of a non-real-time thread).
//!
//! `cargo bench -p hybridsim-net --bench controller_link`; `HYBRIDSIM_BENCH_FRAMES` (default
//! 20 000) and `HYBRIDSIM_BENCH_RATE` (Hz, default 4 096) change the run; `--tcp` (after `--`)
//! measures the TCP link instead; `HYBRIDSIM_BENCH_CONTROLLER=HOST:PORT` measures an external
//! controller (`hybridsim controller examples/quickstart.toml --address 127.0.0.1:7400`, the
//! two-process setup; one session per run).

use hdrhistogram::Histogram;
use hybridsim::model::{Model, NoFiles};
use hybridsim::physical::transfer::ActuatorCommand;
use hybridsim_net::controller::{virtual_twin_of, ControllerOptions, ControllerServer, Transport};
use hybridsim_net::link::{
    command_len, command_status, decode_feedback, encode_command, feedback_len, CommandHeader,
};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const QUICKSTART: &str = include_str!("../../../examples/quickstart.toml");

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

enum Link {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

impl Link {
    fn send(&mut self, bytes: &[u8]) {
        match self {
            Link::Udp(s) => {
                s.send(bytes).unwrap();
            }
            Link::Tcp(s) => s.write_all(bytes).unwrap(),
        }
    }

    /// The next reply, waiting at most `timeout`; `false` when none came.
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> bool {
        let timeout = timeout.max(Duration::from_micros(1));
        match self {
            Link::Udp(s) => {
                s.set_read_timeout(Some(timeout)).unwrap();
                s.recv(buf).is_ok()
            }
            Link::Tcp(s) => {
                s.set_read_timeout(Some(timeout)).unwrap();
                s.read_exact(buf).is_ok()
            }
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; anything else but `--tcp` is ignored.
    let tcp = std::env::args().any(|a| a == "--tcp");
    let frames: u64 = env_or("HYBRIDSIM_BENCH_FRAMES", 20_000);
    let rate: f64 = env_or("HYBRIDSIM_BENCH_RATE", 4096.0);
    let tick = Duration::from_secs_f64(1.0 / rate);

    // An external controller (`hybridsim controller examples/quickstart.toml --address
    // 127.0.0.1:7400` in another terminal: the two-process setup), or one on a thread here.
    let external: Option<std::net::SocketAddr> = std::env::var("HYBRIDSIM_BENCH_CONTROLLER")
        .ok()
        .map(|a| a.parse().expect("HYBRIDSIM_BENCH_CONTROLLER: host:port"));
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, handle) = match external {
        Some(addr) => (addr, None),
        None => {
            let model = Model::from_toml(QUICKSTART, "quickstart.toml", &NoFiles).unwrap();
            let (_, actuators, factory) = virtual_twin_of(&model, None).unwrap();
            let transport = if tcp { Transport::Tcp } else { Transport::Udp };
            let mut server = ControllerServer::bind(
                factory,
                actuators,
                ControllerOptions {
                    transport,
                    idle_timeout: Some(Duration::from_secs(10)),
                    ..ControllerOptions::default()
                },
                Box::new(|_, text| eprintln!("controller: {text}")),
            )
            .unwrap();
            let addr = server.local_addr();
            let flag = stop.clone();
            (addr, Some(std::thread::spawn(move || server.serve(&flag))))
        }
    };

    let mut link = if tcp {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        Link::Tcp(s)
    } else {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(addr).unwrap();
        Link::Udp(s)
    };
    let mut out = vec![0u8; command_len(1)];
    let mut buf = vec![0u8; feedback_len(1)];
    let (mut d, mut f) = ([0.0], [0.0]);
    let mut rtt = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
    let mut lateness = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
    let (mut lost, mut late, mut stale_echo) = (0u64, 0u64, 0u64);
    let mut first = Duration::ZERO;

    let start = Instant::now();
    for k in 0..=frames {
        let deadline = start + tick * k as u32;
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        let sent = Instant::now();
        lateness
            .record((sent - deadline).as_nanos().max(1) as u64)
            .unwrap();
        let t = k as f64 / rate;
        let w = 2.0 * std::f64::consts::PI;
        let cmd = ActuatorCommand {
            d: 0.01 * (w * t).sin(),
            v: 0.01 * w * (w * t).cos(),
            a: -0.01 * w * w * (w * t).sin(),
        };
        let status = if k == 0 {
            command_status::REST | command_status::HOLD
        } else if k == frames {
            command_status::ARMED | command_status::END
        } else {
            command_status::ARMED
        };
        encode_command(
            &CommandHeader {
                sequence: k,
                time: t,
                status,
            },
            &[cmd],
            &mut out,
        )
        .unwrap();
        link.send(&out);
        // Wait for this frame's reply for one tick after it was sent (late replies of
        // earlier frames are read and counted on the way). A client behind its schedule
        // (a late wake-up on a loaded machine) sends at once: its lateness is reported
        // apart, it is not a loss of the link.
        let next = sent + tick;
        let mut answered = false;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            if wait.is_zero() && k > 0 {
                break;
            }
            let wait = if k == 0 { Duration::from_secs(2) } else { wait };
            if !link.recv(&mut buf, wait) {
                break;
            }
            let arrived = Instant::now();
            let h = decode_feedback(&buf, &mut d, &mut f).expect("a valid reply");
            if h.sequence != k {
                stale_echo += 1;
                continue;
            }
            if k == 0 {
                // The measurement at rest begins the session (a fresh twin): apart.
                first = arrived - sent;
                answered = true;
            } else if arrived > next {
                late += 1;
            } else {
                rtt.record((arrived - sent).as_nanos().max(1) as u64)
                    .unwrap();
                answered = true;
            }
            break;
        }
        if !answered {
            lost += 1;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    let report = handle.map(|h| h.join().unwrap().unwrap());

    let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e3;
    println!(
        "controller link over {} on loopback at {rate} Hz: {} frames in {elapsed:.2} s",
        if tcp { "TCP" } else { "UDP" },
        frames + 1
    );
    println!(
        "round trip (µs, frames 1 on): p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1} ({} replies within their tick)",
        us(&rtt, 0.5),
        us(&rtt, 0.99),
        us(&rtt, 0.999),
        rtt.max() as f64 / 1e3,
        rtt.len()
    );
    println!(
        "first frame (the measurement at rest, a session's start): {:.1} µs",
        first.as_secs_f64() * 1e6
    );
    println!(
        "losses (no reply within the tick): {lost} of {} ({:.4} %); of them late replies {late}, \
         stale echoes read later {stale_echo}",
        frames + 1,
        100.0 * lost as f64 / (frames + 1) as f64
    );
    println!(
        "client send lateness (µs, sleep to deadline): p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}",
        us(&lateness, 0.5),
        us(&lateness, 0.99),
        us(&lateness, 0.999),
        lateness.max() as f64 / 1e3
    );
    match report {
        Some(r) => println!("server (in this process): {}", r.statistics.describe()),
        None => println!("server: the external controller at {addr}"),
    }
}
