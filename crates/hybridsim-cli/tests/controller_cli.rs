//! `hybridsim controller` as a process: it prints `listening on ADDR` first, serves the
//! quick-start lab over UDP bit for bit as the in-process virtual twin, exits by itself
//! (`--once`, the idle timeout, SIGTERM), refuses malformed frames on stderr naming the peer
//! and the sequence, listens where the model's `[lab.link]` says, and refuses bad options.
//! Every wait is bounded.

mod common;

use common::{hybridsim, root, scratch};
use hybridsim::physical::transfer::{ActuatorCommand, Sample, TransferSystem};
use hybridsim_net::controller::virtual_twin_of;
use hybridsim_net::link::*;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `hybridsim controller`: its stdout lines arrive on a channel.
struct Controller {
    child: Child,
    lines: mpsc::Receiver<String>,
    addr: SocketAddr,
    header: Vec<String>,
}

impl Controller {
    fn start(args: &[&str]) -> Self {
        let mut child = hybridsim()
            .arg("controller")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a first line within 20 s");
        let addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line: {first}"))
            .parse()
            .unwrap();
        let mut header = vec![first];
        while header.len() < 5 {
            header.push(lines.recv_timeout(Duration::from_secs(5)).unwrap());
        }
        Self {
            child,
            lines,
            addr,
            header,
        }
    }

    /// Wait (bounded) for the exit; status code, the rest of stdout, stderr.
    fn finish(mut self, limit: Duration) -> (i32, String, String) {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the controller did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut out = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            out.push(l);
        }
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), out.join("\n"), err)
    }
}

struct Client {
    socket: UdpSocket,
    buf: [u8; 256],
}

impl Client {
    fn new(addr: SocketAddr) -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        Self {
            socket,
            buf: [0; 256],
        }
    }

    fn send(&self, sequence: u64, status: u32, cmd: ActuatorCommand) {
        let mut out = [0u8; 56];
        let header = CommandHeader {
            sequence,
            time: sequence as f64 * 1e-3,
            status,
        };
        encode_command(&header, &[cmd], &mut out).unwrap();
        self.socket.send(&out).unwrap();
    }

    fn exchange(&mut self, sequence: u64, status: u32, cmd: ActuatorCommand) -> (u32, f64, f64) {
        self.send(sequence, status, cmd);
        let n = self.socket.recv(&mut self.buf).expect("a reply within 2 s");
        let (mut d, mut f) = ([0.0], [0.0]);
        let h = decode_feedback(&self.buf[..n], &mut d, &mut f).unwrap();
        assert_eq!(h.sequence, sequence);
        (h.status, d[0], f[0])
    }
}

fn quickstart_twin() -> Box<dyn TransferSystem> {
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let model =
        hybridsim::model::Model::from_toml(&text, "quickstart.toml", &hybridsim::model::NoFiles)
            .unwrap();
    let (_, _, mut factory) = virtual_twin_of(&model, None).unwrap();
    factory()
}

fn command(k: u64) -> ActuatorCommand {
    let t = k as f64 * 1e-3;
    let w = 2.0 * std::f64::consts::PI * 2.0;
    ActuatorCommand {
        d: 0.005 * (w * t).sin(),
        v: 0.005 * w * (w * t).cos(),
        a: -0.005 * w * w * (w * t).sin(),
    }
}

const REST: u32 = command_status::REST | command_status::HOLD;

#[test]
fn controller_serves_the_quickstart_lab_bit_for_bit_and_exits_after_one_session() {
    let c = Controller::start(&["examples/quickstart.toml", "--once", "--idle-timeout", "20"]);
    assert!(c.addr.ip().is_loopback());
    assert!(c.header[1].contains("transport udp"), "{:?}", c.header);
    assert!(
        c.header[1].contains("1 actuator (storey1)"),
        "{:?}",
        c.header
    );
    assert!(
        c.header[3].contains("faults: none (seed 1)"),
        "{:?}",
        c.header
    );
    let mut twin = quickstart_twin();
    let mut client = Client::new(c.addr);
    let (mut f, mut d) = ([0.0], [0.0]);
    let (status, rd, rf) = client.exchange(0, REST, ActuatorCommand::default());
    twin.measure_at_rest(&mut f, &mut d).unwrap();
    assert_eq!(status, feedback_status::READY);
    assert_eq!(
        (rd.to_bits(), rf.to_bits()),
        (d[0].to_bits(), f[0].to_bits())
    );
    for k in 1..=400u64 {
        let status = if k == 400 {
            command_status::ARMED | command_status::END
        } else {
            command_status::ARMED
        };
        let (s, rd, rf) = client.exchange(k, status, command(k));
        twin.send(k, k as f64 * 1e-3, &[command(k)]).unwrap();
        assert_eq!(twin.receive(k, &mut f, &mut d).unwrap(), Sample::Fresh);
        assert_eq!(s, feedback_status::READY);
        assert_eq!(
            (rd.to_bits(), rf.to_bits()),
            (d[0].to_bits(), f[0].to_bits()),
            "sequence {k}"
        );
    }
    let (code, out, err) = c.finish(Duration::from_secs(10));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("session 1 ended (END; last sequence 400)"),
        "{out}"
    );
    assert!(
        out.contains("frames applied 401, replies sent 401, refused 0"),
        "{out}"
    );
    assert!(err.is_empty(), "{err}");
}

#[test]
fn controller_refuses_bad_frames_on_stderr_and_stops_on_sigterm() {
    let c = Controller::start(&["examples/quickstart.toml", "--drop", "0.5", "--seed", "9"]);
    assert!(c.header[3].contains("drop 0.5; seed 9"), "{:?}", c.header);
    let client = Client::new(c.addr);
    let me = client.socket.local_addr().unwrap();
    client.send(9, command_status::ARMED, command(9));
    let mut bad = [0u8; 56];
    encode_command(
        &CommandHeader {
            sequence: 0,
            time: 0.0,
            status: REST,
        },
        &[ActuatorCommand::default()],
        &mut bad,
    )
    .unwrap();
    bad[4] = 7;
    client.socket.send(&bad).unwrap();
    client.socket.send(&bad[..12]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: a plain kill(2) of our own child.
    unsafe {
        libc::kill(c.child.id() as libc::pid_t, libc::SIGTERM);
    }
    let (code, out, err) = c.finish(Duration::from_secs(10));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("stopped by SIGTERM"), "{out}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].contains(&format!("frame from {me} (sequence 9) refused: no session")));
    assert!(lines[1].contains(&format!("frame from {me} (sequence 0) refused")));
    assert!(lines[1].contains("version 7"), "{err}");
    assert!(lines[2].contains("sequence unknown: 12 bytes"), "{err}");
}

#[test]
fn controller_listens_where_the_model_link_says_and_exits_when_idle() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml"))
        .unwrap()
        .replace("[lab]\n", "[lab]\ntransfer = \"tcp\"\n")
        + &format!("\n[lab.link]\naddress = \"127.0.0.1:{port}\"\ntimeout = 0.05\n");
    let dir = scratch("controller-link");
    let path = dir.join("tcp_lab.toml");
    std::fs::write(&path, text).unwrap();
    let c = Controller::start(&[path.to_str().unwrap(), "--idle-timeout", "0.5"]);
    assert_eq!(c.addr, SocketAddr::from(([127, 0, 0, 1], port)));
    assert!(c.header[1].contains("transport tcp"), "{:?}", c.header);
    let started = Instant::now();
    let (code, out, err) = c.finish(Duration::from_secs(10));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("no frame for 0.5 s: exiting"), "{out}");
}

#[test]
fn controller_refuses_bad_options_and_models_without_a_lab() {
    let out = hybridsim()
        .args(["controller", "examples/quickstart.toml", "--drop", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--drop 2: a probability in [0, 1]"), "{err}");

    let out = hybridsim()
        .args(["controller", "examples/split_mass_v1.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("examples/split_mass_v1.toml: the model has no [lab]"),
        "{err}"
    );

    let out = hybridsim()
        .args([
            "controller",
            "examples/quickstart.toml",
            "--substructure",
            "frame",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no physical substructure `frame`"), "{err}");

    let out = hybridsim()
        .args([
            "controller",
            "examples/quickstart.toml",
            "--address",
            "nowhere",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--address nowhere"), "{err}");
}
