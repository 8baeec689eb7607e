//! Shared by the `controller_*` tests: the quick-start model's lab, an in-process server on a
//! thread over 127.0.0.1, and tiny raw frame clients (UDP and TCP) built on the link's
//! encoder and decoder. Every wait is bounded.

#![allow(dead_code)]

use hybridsim::model::{Model, NoFiles};
use hybridsim::physical::transfer::{ActuatorCommand, TransferSystem};
use hybridsim_net::controller::*;
use hybridsim_net::link::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const QUICKSTART: &str = include_str!("../../../../examples/quickstart.toml");

/// The quick-start model (one actuator `storey1`: 4 ms delay, noisy load cell), with `extra`
/// TOML appended (`[[lab.fault]]` entries).
pub fn model(extra: &str) -> Model {
    let text = format!("{QUICKSTART}\n{extra}");
    Model::from_toml(&text, "quickstart.toml", &NoFiles).expect("quickstart model")
}

/// A fresh in-process twin of the model's lab (what the server serves in each session).
pub fn twin(model: &Model) -> Box<dyn TransferSystem> {
    let (_, _, mut factory) = virtual_twin_of(model, None).expect("twin");
    factory()
}

pub type Notes = Arc<Mutex<Vec<(Note, String)>>>;

/// A server serving on a thread.
pub struct Running {
    pub addr: SocketAddr,
    pub stop: Arc<AtomicBool>,
    pub notes: Notes,
    handle: Option<JoinHandle<Result<ServeReport, ControllerError>>>,
}

impl Running {
    /// The messages of `kind` so far.
    pub fn notes(&self, kind: Note) -> Vec<String> {
        self.notes
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Wait (at most `limit`) for the server to return by itself.
    pub fn join(mut self, limit: Duration) -> ServeReport {
        let handle = self.handle.take().unwrap();
        let deadline = Instant::now() + limit;
        while !handle.is_finished() {
            if Instant::now() > deadline {
                self.stop.store(true, Ordering::SeqCst);
                panic!("the server did not return within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        handle.join().expect("server thread").expect("server")
    }

    /// Set the stop flag and wait for the server (bounded).
    pub fn stop(self) -> ServeReport {
        self.stop.store(true, Ordering::SeqCst);
        self.join(Duration::from_secs(5))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Serve the lab of `model` with `options` on a thread.
pub fn start(model: &Model, options: ControllerOptions) -> Running {
    let (_, actuators, factory) = virtual_twin_of(model, None).expect("twin");
    let notes: Notes = Arc::new(Mutex::new(Vec::new()));
    let sink = notes.clone();
    let mut server = ControllerServer::bind(
        factory,
        actuators,
        options,
        Box::new(move |kind, text| sink.lock().unwrap().push((kind, text.to_string()))),
    )
    .expect("bind");
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || server.serve(&flag));
    Running {
        addr,
        stop,
        notes,
        handle: Some(handle),
    }
}

/// Options with a short idle timeout (a forgotten server ends by itself).
pub fn options(transport: Transport) -> ControllerOptions {
    ControllerOptions {
        transport,
        idle_timeout: Some(Duration::from_secs(10)),
        ..ControllerOptions::default()
    }
}

/// The command of tick `k`: a 1 Hz sine of 10 mm with its rates (dt = 1 ms).
pub fn command(k: u64) -> ActuatorCommand {
    let t = k as f64 * 1e-3;
    let w = 2.0 * std::f64::consts::PI;
    ActuatorCommand {
        d: 0.01 * (w * t).sin(),
        v: 0.01 * w * (w * t).cos(),
        a: -0.01 * w * w * (w * t).sin(),
    }
}

pub const REST: u32 = command_status::REST | command_status::HOLD;

/// A decoded reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub header: FeedbackHeader,
    pub d: f64,
    pub f: f64,
    pub bytes: Vec<u8>,
}

fn decode(bytes: &[u8]) -> Reply {
    let (mut d, mut f) = ([0.0], [0.0]);
    let header = decode_feedback(bytes, &mut d, &mut f).expect("a valid feedback frame");
    Reply {
        header,
        d: d[0],
        f: f[0],
        bytes: bytes.to_vec(),
    }
}

/// Encode a one-actuator command frame.
pub fn frame(sequence: u64, status: u32, cmd: ActuatorCommand) -> Vec<u8> {
    let mut out = vec![0u8; command_len(1)];
    encode_command(
        &CommandHeader {
            sequence,
            time: sequence as f64 * 1e-3,
            status,
        },
        &[cmd],
        &mut out,
    )
    .unwrap();
    out
}

/// A raw UDP client of a one-actuator link.
pub struct Udp {
    pub socket: UdpSocket,
    buf: Vec<u8>,
}

impl Udp {
    pub fn new(server: SocketAddr) -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(server).unwrap();
        Self {
            socket,
            buf: vec![0; 65_536],
        }
    }

    pub fn send_raw(&self, bytes: &[u8]) {
        self.socket.send(bytes).unwrap();
    }

    pub fn send(&self, sequence: u64, status: u32, cmd: ActuatorCommand) {
        self.send_raw(&frame(sequence, status, cmd));
    }

    /// The next reply within `timeout`, if any.
    pub fn recv(&mut self, timeout: Duration) -> Option<Reply> {
        self.socket.set_read_timeout(Some(timeout)).unwrap();
        match self.socket.recv(&mut self.buf) {
            Ok(n) => Some(decode(&self.buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                None
            }
            Err(e) => panic!("udp client: {e}"),
        }
    }

    /// Send and wait (at most 2 s) for the reply.
    pub fn exchange(&mut self, sequence: u64, status: u32, cmd: ActuatorCommand) -> Reply {
        self.send(sequence, status, cmd);
        self.recv(Duration::from_secs(2))
            .unwrap_or_else(|| panic!("no reply to sequence {sequence}"))
    }
}

/// A raw TCP client of a one-actuator link.
pub struct Tcp {
    pub stream: TcpStream,
}

impl Tcp {
    pub fn new(server: SocketAddr) -> Self {
        let stream = TcpStream::connect_timeout(&server, Duration::from_secs(2)).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        Self { stream }
    }

    pub fn send(&mut self, sequence: u64, status: u32, cmd: ActuatorCommand) {
        self.stream
            .write_all(&frame(sequence, status, cmd))
            .unwrap();
    }

    /// The next reply (at most 2 s); `None` when the server closed the connection.
    pub fn recv(&mut self) -> Option<Reply> {
        let mut buf = vec![0u8; feedback_len(1)];
        let mut got = 0;
        while got < buf.len() {
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return None,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("tcp client: {e}"),
            }
        }
        Some(decode(&buf))
    }

    pub fn exchange(&mut self, sequence: u64, status: u32, cmd: ActuatorCommand) -> Reply {
        self.send(sequence, status, cmd);
        self.recv()
            .unwrap_or_else(|| panic!("connection closed at sequence {sequence}"))
    }

    /// Whether the server closed the connection (within 2 s; replies still in flight are
    /// read and discarded).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 256];
        loop {
            match self.stream.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}
