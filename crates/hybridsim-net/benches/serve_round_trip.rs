//! Round trip per step of `hybridsim serve` on loopback (criterion; `cargo bench -p
//! hybridsim-net --bench serve_round_trip`, add `-- --quick` for a short run): a Rust client
//! sends one step of OpenSees's `NewmarkExplicit` + `Linear` pattern — `3, 14, 10, 14, 3, 5`,
//! only 14 and 10 answered — to the in-process server serving a spring substructure, over
//! TCP (client with Nagle on as OpenSees, server re-arming `TCP_QUICKACK`) and UDP.
#[path = "../tests/serve_support/mod.rs"]
mod serve_support;

use criterion::{criterion_group, criterion_main, Criterion};
use hybridsim_net::generic_client::protocol::{Frame, Sizes, GENERIC_CLIENT_DATA_SIZE};
use hybridsim_net::generic_client::Transport;
use serve_support::{spawn_server, Client};
use std::hint::black_box;
use std::time::Duration;

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("serve_step_newmark_explicit");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, transport) in [("tcp_quickack", Transport::Tcp), ("udp", Transport::Udp)] {
        let (addr, log, server) = spawn_server(transport, 1, Duration::from_secs(120));
        let mut client = match transport {
            Transport::Tcp => Client::tcp(addr),
            Transport::Udp => Client::udp(addr),
        };
        let sizes = Sizes::generic_client(2, GENERIC_CLIENT_DATA_SIZE);
        client.sizes(&sizes).unwrap();
        let mut f = Frame::new(sizes.data_size);
        let mut r = Frame::new(sizes.data_size);
        let mut t = 0.0f64;
        group.bench_function(name, |b| {
            b.iter(|| {
                t += 0.01;
                let d = [0.0, 1e-3 * t.sin()];
                let trial = [d[0], d[1], 0.0, 0.0, 0.0, 0.0, t];
                client.message(&mut f, 3.0, &trial).unwrap();
                client.message(&mut f, 14.0, &trial).unwrap();
                client.recv(&mut r).unwrap();
                client.message(&mut f, 10.0, &trial).unwrap();
                client.recv(&mut r).unwrap();
                black_box(r.values()[0]);
                client.message(&mut f, 14.0, &trial).unwrap();
                client.recv(&mut r).unwrap();
                client.message(&mut f, 3.0, &trial).unwrap();
                client.message(&mut f, 5.0, &trial).unwrap();
            })
        });
        client.message(&mut f, 99.0, &[]).unwrap();
        let reports = server.join().unwrap();
        assert!(log.lock().unwrap().is_empty(), "{:?}", log.lock().unwrap());
        eprintln!(
            "{name}: {} messages, {} committed steps",
            reports[0].messages, reports[0].commits
        );
    }
    group.finish();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
