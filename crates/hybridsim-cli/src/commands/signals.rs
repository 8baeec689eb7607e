//! SIGINT, SIGTERM and SIGHUP stop a run through the safety layer: the handler only sets a
//! flag, which the run loop checks before every step (`hybridsim::runner`), trips every
//! actuator and ends the run with every completed step on disk and a run.json that says so.
//! A closed SSH session (SIGHUP) or a service stop (SIGTERM) is handled like Ctrl-C.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

extern "C" fn on_signal(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Install the handlers (once) and return the stop flag they set.
pub fn stop_flag() -> &'static AtomicBool {
    INSTALL.call_once(|| {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler is async-signal-safe: it only stores two atomics.
            unsafe {
                libc::signal(
                    signal,
                    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
                );
            }
        }
    });
    &STOP
}

/// The name of the signal that stopped the run, if one did.
pub fn received() -> Option<&'static str> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}
