//! The controller server allocates nothing per frame in steady state: a counting allocator
//! counts the allocations of the server's thread, which must not grow over thousands of
//! frames — plain, and with latency, jitter and duplicated replies going through the delay
//! queue; over UDP and TCP.

mod controller_common;

use controller_common::*;
use hybridsim::physical::transfer::ActuatorCommand;
use hybridsim_net::controller::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Counting;

thread_local! {
    /// The counter of this thread's allocations, when counted (one per test: tests run side
    /// by side).
    static COUNTER: Cell<Option<&'static AtomicU64>> = const { Cell::new(None) };
}

fn count() {
    if let Some(c) = COUNTER.with(|c| c.get()) {
        c.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

enum Client {
    Udp(Udp),
    Tcp(Tcp),
}

impl Client {
    /// Send and wait for the reply of `sequence` (skipping duplicates of earlier ones).
    fn exchange(&mut self, sequence: u64, status: u32, cmd: ActuatorCommand) {
        match self {
            Client::Udp(c) => {
                c.send(sequence, status, cmd);
                loop {
                    let r = c.recv(Duration::from_secs(2)).expect("a reply");
                    if r.header.sequence == sequence {
                        return;
                    }
                }
            }
            Client::Tcp(c) => {
                c.send(sequence, status, cmd);
                loop {
                    let r = c.recv().expect("a reply");
                    if r.header.sequence == sequence {
                        return;
                    }
                }
            }
        }
    }
}

/// Allocations of the server thread after 200 frames, and after 3 000 more.
fn allocations(transport: Transport, faults: Faults) -> (u64, u64) {
    let m = model("");
    let (_, actuators, factory) = virtual_twin_of(&m, None).unwrap();
    let unexpected: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let mut server = ControllerServer::bind(
        factory,
        actuators,
        ControllerOptions {
            faults,
            ..options(transport)
        },
        Box::new(move |kind, _| {
            if kind != Note::Info {
                unexpected.fetch_add(1, Ordering::SeqCst);
            }
        }),
    )
    .unwrap();
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let counter: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let handle = std::thread::spawn(move || {
        COUNTER.with(|c| c.set(Some(counter)));
        let report = server.serve(&flag);
        COUNTER.with(|c| c.set(None));
        report
    });
    let mut client = match transport {
        Transport::Udp => Client::Udp(Udp::new(addr)),
        Transport::Tcp => Client::Tcp(Tcp::new(addr)),
    };
    client.exchange(0, REST, ActuatorCommand::default());
    for k in 1..=200 {
        client.exchange(k, command_status_armed(), command(k));
    }
    let warm = counter.load(Ordering::SeqCst);
    for k in 201..=3200 {
        client.exchange(k, command_status_armed(), command(k));
    }
    let after = counter.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    handle.join().unwrap().unwrap();
    assert_eq!(
        unexpected.load(Ordering::SeqCst),
        0,
        "no warning, nothing refused"
    );
    (warm, after)
}

fn command_status_armed() -> u32 {
    hybridsim_net::link::command_status::ARMED
}

fn queued() -> Faults {
    Faults {
        latency: 0.000_2,
        jitter: 0.000_1,
        duplicate: 0.2,
        ..Faults::default()
    }
}

#[test]
fn udp_steady_state_allocates_nothing_per_frame() {
    let (warm, after) = allocations(Transport::Udp, Faults::default());
    println!(
        "udp: {warm} allocations in the first 201 frames (session start), {after} after 3 000 more"
    );
    assert_eq!(after, warm);
    let (warm, after) = allocations(Transport::Udp, queued());
    println!("udp with the delay queue: {warm}, then {after}");
    assert_eq!(after, warm);
}

#[test]
fn tcp_steady_state_allocates_nothing_per_frame() {
    let (warm, after) = allocations(Transport::Tcp, Faults::default());
    println!("tcp: {warm}, then {after}");
    assert_eq!(after, warm);
    let (warm, after) = allocations(Transport::Tcp, queued());
    println!("tcp with the delay queue: {warm}, then {after}");
    assert_eq!(after, warm);
}
