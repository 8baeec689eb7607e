//! Per-tick pacing of the network transfer systems driven by the paced single-step runner
//! ([`crate::sequential`]).
//!
//! The threaded PG-α runner owns the loop of physical substeps, so it sleeps to each
//! controller tick before commanding, and it hands every laboratory a clock for the bumpless
//! start before the integrator's consistent start ([`hybridsim::physical::LabControl::set_tick_clock`]).
//! A scheme built by [`hybridsim::integrators::build_with`] commands its laboratories inside
//! [`hybridsim::integrators::TimeIntegrator::step`] (ss commands per coarse step) and runs its
//! bumpless start inside the build. The runner reaches those commands through the one place it
//! controls: the [`TransferConnector`] that connects every network laboratory before the
//! build. [`PacingConnector`] wraps each transfer system it connects in a [`PacedTransfer`],
//! which sleeps ([`crate::clock::sleep_until_with`]) before every command it sends:
//!
//! - before the test clock starts (the hold at rest and the bumpless start), one command per
//!   controller tick from the first one ([`TickPacer`]);
//! - once the runner has started the test clock at `start` ([`PaceClock::start`]), the k-th
//!   command of the test no earlier than `start + k·Δt^C`: with ss commands per coarse step,
//!   each one goes out on its own tick; a late command goes at once, as a late substep of the
//!   threaded runner does (the runner counts the deadline misses).
//!
//! The virtual lab is not on the network and is not wrapped: its clock is the tick count, and
//! the runner releases each coarse step on its first tick.

use crate::clock::{now_ns, sleep_until_with, TickPacer};
use hybridsim::physical::transfer::{
    ActuatorCommand, Sample, TransferConnector, TransferRequest, TransferSystem,
};
use hybridsim::physical::TransferError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The test clock shared by the runner and its paced transfer systems.
#[derive(Debug)]
pub struct PaceClock {
    /// Start of the test on the monotonic clock (ns); 0 before it.
    start_ns: AtomicU64,
    dtc_ns: u64,
    spin_ns: u64,
}

impl PaceClock {
    /// A clock of controller ticks of `dtc_ns`, spinning the last `spin_ns` of each wait.
    pub fn new(dtc_ns: u64, spin_ns: u64) -> Self {
        Self {
            start_ns: AtomicU64::new(0),
            dtc_ns: dtc_ns.max(1),
            spin_ns,
        }
    }

    /// The test clock starts at `start_ns` (monotonic ns): test command k is due at
    /// `start_ns + k·Δt^C`.
    pub fn start(&self, start_ns: u64) {
        self.start_ns.store(start_ns.max(1), Ordering::Release);
    }
}

/// A [`TransferConnector`] whose transfer systems are paced by a [`PaceClock`].
pub struct PacingConnector {
    inner: Arc<dyn TransferConnector>,
    clock: Arc<PaceClock>,
}

impl PacingConnector {
    /// Wrap `inner`'s transfer systems.
    pub fn new(inner: Arc<dyn TransferConnector>, clock: Arc<PaceClock>) -> Self {
        Self { inner, clock }
    }
}

impl TransferConnector for PacingConnector {
    fn connect(&self, request: &TransferRequest) -> Result<Box<dyn TransferSystem>, TransferError> {
        let inner = self.inner.connect(request)?;
        Ok(Box::new(PacedTransfer::new(inner, self.clock.clone())))
    }
}

/// A transfer system that sleeps to each command's controller tick before sending it (see
/// the module documentation). Allocation-free.
pub struct PacedTransfer {
    inner: Box<dyn TransferSystem>,
    clock: Arc<PaceClock>,
    /// The schedule before the test clock starts (from the first command).
    before: Option<TickPacer>,
    /// Commands sent since the test clock started.
    sent: u64,
}

impl PacedTransfer {
    /// Pace `inner` by `clock`.
    pub fn new(inner: Box<dyn TransferSystem>, clock: Arc<PaceClock>) -> Self {
        Self {
            inner,
            clock,
            before: None,
            sent: 0,
        }
    }

    fn pace(&mut self) {
        let c = &self.clock;
        let start = c.start_ns.load(Ordering::Acquire);
        if start == 0 {
            let (dtc, spin) = (c.dtc_ns, c.spin_ns);
            self.before
                .get_or_insert_with(|| TickPacer::new(now_ns(), dtc).with_spin(spin))
                .wait();
        } else {
            sleep_until_with(start + self.sent * c.dtc_ns, c.spin_ns);
            self.sent += 1;
        }
    }
}

impl TransferSystem for PacedTransfer {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn is_virtual(&self) -> bool {
        self.inner.is_virtual()
    }
    fn n_actuators(&self) -> usize {
        self.inner.n_actuators()
    }
    fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError> {
        self.inner.measure_at_rest(force, position)
    }
    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError> {
        self.pace();
        self.inner.send(tick, t_wall, cmd)
    }
    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        if self.clock.start_ns.load(Ordering::Acquire) == 0 {
            self.pace();
        }
        self.inner.hold_sample(tick, t_wall, force, position)
    }
    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError> {
        self.inner.receive(tick, force, achieved)
    }
    fn potential_energy(&self) -> Option<f64> {
        self.inner.potential_energy()
    }
    fn seeds(&self) -> Vec<(String, u64)> {
        self.inner.seeds()
    }
    fn statistics(&self) -> Vec<(String, f64)> {
        self.inner.statistics()
    }
    fn on_trip(&mut self) {
        self.inner.on_trip()
    }
    fn noise_free(&self, force: &mut [f64], achieved: &mut [f64]) -> bool {
        self.inner.noise_free(force, achieved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transfer system that notes when each command was sent.
    struct Stamps(Arc<std::sync::Mutex<Vec<u64>>>);

    impl TransferSystem for Stamps {
        fn describe(&self) -> String {
            "stamps".into()
        }
        fn is_virtual(&self) -> bool {
            false
        }
        fn n_actuators(&self) -> usize {
            1
        }
        fn measure_at_rest(&mut self, _: &mut [f64], _: &mut [f64]) -> Result<(), TransferError> {
            Ok(())
        }
        fn send(&mut self, _: u64, _: f64, _: &[ActuatorCommand]) -> Result<(), TransferError> {
            self.0.lock().unwrap().push(now_ns());
            Ok(())
        }
        fn hold_sample(
            &mut self,
            _: u64,
            _: f64,
            _: &mut [f64],
            _: &mut [f64],
        ) -> Result<Sample, TransferError> {
            Ok(Sample::Fresh)
        }
        fn receive(
            &mut self,
            _: u64,
            _: &mut [f64],
            _: &mut [f64],
        ) -> Result<Sample, TransferError> {
            Ok(Sample::Fresh)
        }
    }

    /// Before the test clock starts, commands go one tick apart; after, command k goes no
    /// earlier than `start + k·Δt^C` even when sent back to back (ss commands of one step),
    /// and a late command is not held back further. Only lower bounds on wall time are
    /// asserted: a loaded machine makes waits longer, never shorter.
    #[test]
    fn commands_go_out_on_their_controller_ticks() {
        let dtc = 2_000_000;
        let clock = Arc::new(PaceClock::new(dtc, 20_000));
        let stamps = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut t = PacedTransfer::new(Box::new(Stamps(stamps.clone())), clock.clone());
        let cmd = [ActuatorCommand::default()];
        for k in 0..5 {
            t.send(k, 0.0, &cmd).unwrap();
        }
        let start = now_ns() + 3 * dtc;
        clock.start(start);
        for k in 0..10 {
            t.send(5 + k, 0.0, &cmd).unwrap();
        }
        let s = stamps.lock().unwrap().clone();
        // Each on its own tick of the grid (a late one moves to the next tick to come).
        assert!(s[4] - s[0] >= 3 * dtc, "{} ns for 5 commands", s[4] - s[0]);
        for (k, at) in s[5..].iter().enumerate() {
            assert!(*at >= start + k as u64 * dtc, "command {k} early");
        }
        // A late command goes at once: fall 5 ticks behind, the next one is not delayed.
        std::thread::sleep(std::time::Duration::from_nanos(5 * dtc));
        let t0 = now_ns();
        t.send(99, 0.0, &cmd).unwrap();
        assert!(now_ns() - t0 < dtc, "a late command waited");
    }
}
