//! Shared by the `serve_*` tests and the `serve_round_trip` benchmark: a served spring model,
//! an in-process server on a thread and a minimal Rust `genericClient` over TCP or UDP.
#![allow(dead_code)]

use hybridsim::assembly::ServedSubstructure;
use hybridsim_net::generic_client::protocol::{self, Frame, Sizes, MAX_UDP_DATAGRAM};
use hybridsim_net::generic_client::{ServeOptions, Server, SessionReport, Transport};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A spring k = 1000 between nodes 1 and 2 (both free, unit masses), substructure `spring`.
pub const SPRING_MODEL: &str = r#"
title = "served spring"
[units]
length = "m"
force = "N"
time = "s"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
[substructure.spring]
[[element]]
type = "spring"
name = "k"
nodes = [1, 2]
dof = "x"
k = 1000.0
substructure = "spring"
[[element]]
type = "mass"
name = "m1"
node = 1
mass = 1.0
substructure = "spring"
[[element]]
type = "mass"
name = "m2"
node = 2
mass = 1.0
substructure = "spring"
[analysis]
integrator = "mg-alpha"
rho_inf = 1.0
time_step = 0.01
duration = 1.0
"#;

/// The spring substructure, served over its two DOFs.
pub fn served_spring() -> ServedSubstructure {
    let model =
        hybridsim::Model::from_toml(SPRING_MODEL, "spring.toml", &hybridsim::model::NoFiles)
            .expect("valid model");
    ServedSubstructure::new(&model, "spring", None).expect("servable")
}

/// Log lines of a server thread.
pub type Log = Arc<Mutex<Vec<String>>>;

/// Start a server on 127.0.0.1:0 serving `sessions` sessions (a fresh spring each) on a
/// thread; returns its address, the log and the handle giving the reports.
pub fn spawn_server(
    transport: Transport,
    sessions: usize,
    idle: Duration,
) -> (SocketAddr, Log, JoinHandle<Vec<SessionReport>>) {
    let mut server = Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        ServeOptions {
            transport,
            idle_timeout: idle,
        },
    )
    .expect("bind");
    let addr = server.local_addr();
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    let handle = std::thread::spawn(move || {
        let mut reports = Vec::new();
        let mut sink = |l: &str| log2.lock().unwrap().push(l.to_string());
        for _ in 0..sessions {
            let mut served = served_spring();
            match server.serve_one(&mut served, &mut sink) {
                Ok(r) => reports.push(r),
                Err(e) => panic!("server: {e}"),
            }
        }
        reports
    });
    (addr, log, handle)
}

/// A minimal client of the protocol (the OpenSees side), Nagle left on as OpenSees does.
pub enum Client {
    /// TCP stream.
    Tcp(TcpStream),
    /// UDP socket, server address, receive scratch.
    Udp(UdpSocket, SocketAddr, Vec<u8>),
}

impl Client {
    /// Connect over TCP.
    pub fn tcp(addr: SocketAddr) -> Self {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        Client::Tcp(s)
    }

    /// Open over UDP (the 'a'/'b' handshake).
    pub fn udp(addr: SocketAddr) -> Self {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        protocol::udp_connect(&s, addr, 3, Duration::from_secs(2)).expect("udp handshake");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client::Udp(s, addr, vec![0; MAX_UDP_DATAGRAM + 1])
    }

    /// Send raw bytes (one datagram over UDP).
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Client::Tcp(s) => s.write_all(bytes),
            Client::Udp(s, a, _) => s.send_to(bytes, *a).map(|_| ()),
        }
    }

    /// Send the size vector.
    pub fn sizes(&mut self, sizes: &Sizes) -> io::Result<()> {
        self.raw(&sizes.encode())
    }

    /// Send a vector (split over UDP datagrams as OpenSees does).
    pub fn send(&mut self, frame: &mut Frame) -> io::Result<()> {
        frame.encode();
        match self {
            Client::Tcp(s) => s.write_all(frame.bytes()),
            Client::Udp(s, a, _) => protocol::udp_send(s, *a, frame.bytes()),
        }
    }

    /// Receive a reply vector.
    pub fn recv(&mut self, frame: &mut Frame) -> io::Result<()> {
        match self {
            Client::Tcp(s) => {
                let n = protocol::read_full(s, frame.bytes_mut())?;
                if n != frame.bytes().len() {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short reply"));
                }
            }
            Client::Udp(s, a, scratch) => {
                match protocol::udp_recv(s, *a, frame.bytes_mut(), scratch)? {
                    protocol::UdpReceived::Complete => {}
                    other => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{other:?}"),
                        ))
                    }
                }
            }
        }
        frame.decode();
        Ok(())
    }

    /// Send `[code, payload…]` (payload after index 0, rest zero).
    pub fn message(&mut self, frame: &mut Frame, code: f64, payload: &[f64]) -> io::Result<()> {
        let v = frame.values_mut();
        v.iter_mut().for_each(|x| *x = 0.0);
        v[0] = code;
        v[1..1 + payload.len()].copy_from_slice(payload);
        self.send(frame)
    }
}
