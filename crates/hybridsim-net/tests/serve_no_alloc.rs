//! The server allocates nothing per message in steady state: with a counting global
//! allocator, 500 steps of the NewmarkExplicit pattern (3, 14, 10, 14, 3, 5) and of a Newton
//! iteration pattern (3, 10, 14, 13, 14, 5) after the handshake leave the allocation count
//! unchanged (client and server both in this process, over loopback TCP and UDP).

mod serve_support;

use hybridsim_net::generic_client::protocol::{Frame, Sizes};
use hybridsim_net::generic_client::{SessionEnd, Transport};
use serve_support::{spawn_server, Client};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn steps(c: &mut Client, f: &mut Frame, r: &mut Frame, n: usize, t: &mut f64) {
    for k in 0..n {
        *t += 0.01;
        let trial = [0.0, 1e-3 * (k as f64).sin(), 0.0, 0.1, 0.0, 0.0, *t];
        let explicit = k % 2 == 0;
        let pattern: &[f64] = if explicit {
            &[3.0, 14.0, 10.0, 14.0, 3.0, 5.0]
        } else {
            &[3.0, 10.0, 14.0, 13.0, 14.0, 5.0]
        };
        for code in pattern {
            c.message(f, *code, &trial).unwrap();
            if *code >= 6.0 {
                c.recv(r).unwrap();
                assert!(r.values()[0].is_finite());
            }
        }
    }
}

#[test]
fn steady_state_messages_do_not_allocate() {
    // The counter sees allocations (the test can fail).
    let n0 = ALLOCATIONS.load(Ordering::SeqCst);
    std::hint::black_box(vec![1u8; 64]);
    assert!(ALLOCATIONS.load(Ordering::SeqCst) > n0);
    for transport in [Transport::Tcp, Transport::Udp] {
        let (addr, log, server) = spawn_server(transport, 1, Duration::from_secs(10));
        let mut c = match transport {
            Transport::Tcp => Client::tcp(addr),
            Transport::Udp => Client::udp(addr),
        };
        let sizes = Sizes::generic_client(2, 256);
        c.sizes(&sizes).unwrap();
        let mut f = Frame::new(256);
        let mut r = Frame::new(256);
        let mut t = 0.0;
        // Warm-up: the server sizes its buffers at the handshake and first messages.
        steps(&mut c, &mut f, &mut r, 20, &mut t);
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        steps(&mut c, &mut f, &mut r, 500, &mut t);
        let after = ALLOCATIONS.load(Ordering::SeqCst);
        c.message(&mut f, 99.0, &[]).unwrap();
        let reports = server.join().unwrap();
        assert_eq!(reports[0].end, SessionEnd::Die);
        assert_eq!(reports[0].commits, 520);
        assert!(log.lock().unwrap().is_empty());
        assert_eq!(
            after - before,
            0,
            "{transport:?}: {} allocations in 3000 steady-state messages",
            after - before
        );
    }
}
