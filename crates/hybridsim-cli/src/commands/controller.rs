//! `hybridsim controller MODEL`: serve the model's laboratory — its virtual twin: actuators,
//! sensors, specimen and `[[lab.fault]]` — on the controller link (`docs/controller-link.md`),
//! so that `hybridsim run` with `lab.transfer = "udp"` (or `"tcp"`) tests it from another
//! process exactly as it would a real controller. Options inject link faults (latency,
//! jitter, dropped and duplicated replies, a frozen sensor, a disconnect, an interlock), all
//! drawn from `--seed`.
//!
//! The first line on stdout is `listening on ADDR` (flushed: scripts and tests read the port
//! from it). Sessions beginning and ending go to stdout; refused frames, injected faults and
//! failures of the virtual lab to stderr, one line each. The process ends with `--once` after
//! one session, after `--idle-timeout` seconds without a frame, or on Ctrl-C/SIGTERM/SIGHUP.

use anyhow::{bail, Result};
use hybridsim::model::lab::TransferKind;
use hybridsim_net::controller::{
    virtual_twin_of, ControllerOptions, ControllerServer, Ending, Faults, Note, Transport,
};
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `controller`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML) with a `[lab]`.
    pub model: PathBuf,
    /// The physical substructure to serve (needed when the model has several).
    #[arg(long, value_name = "NAME")]
    pub substructure: Option<String>,
    /// Serve over TCP (default: UDP, or TCP when the model says `lab.transfer = "tcp"`).
    #[arg(long, conflicts_with = "udp")]
    pub tcp: bool,
    /// Serve over UDP even when the model says `lab.transfer = "tcp"`.
    #[arg(long)]
    pub udp: bool,
    /// Address to listen on, `host:port` (port 0: a free port). Default: 127.0.0.1 with the
    /// port of the model's `[lab.link] address`, or a free port.
    #[arg(long, value_name = "ADDR")]
    pub address: Option<String>,
    /// Serve one session (until END, a disconnect or the peer closing), then exit.
    #[arg(long)]
    pub once: bool,
    /// Exit when no frame came for this long, in seconds (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub idle_timeout: f64,
    /// Seed of every injected-fault draw (printed; the same seed gives the same faults).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Delay every reply by this long (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub latency: f64,
    /// Plus a uniform extra delay in [0, SECONDS].
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub jitter: f64,
    /// Latency and jitter act from this test time on (seconds; default: from the start).
    #[arg(long, value_name = "SECONDS")]
    pub latency_after: Option<f64>,
    /// Drop each reply with probability P.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub drop: f64,
    /// Send each reply twice with probability P.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub duplicate: f64,
    /// From this test time on (the wall-clock time `tick·Δt^C` of the frames) (seconds since the session's first frame) the replies
    /// repeat the last measurement while the lab keeps moving (a frozen sensor).
    #[arg(long, value_name = "SECONDS")]
    pub freeze_after: Option<f64>,
    /// From this test time on (the wall-clock time `tick·Δt^C` of the frames), no more replies (TCP: the connection is closed).
    #[arg(long, value_name = "SECONDS")]
    pub disconnect_after: Option<f64>,
    /// From this test time on (the wall-clock time `tick·Δt^C` of the frames), every reply carries INTERLOCK and the lab holds.
    #[arg(long, value_name = "SECONDS")]
    pub interlock_after: Option<f64>,
}

fn resolve(address: &str) -> Result<SocketAddr> {
    match address.to_socket_addrs() {
        Ok(mut addrs) => match addrs.next() {
            Some(a) => Ok(a),
            None => bail!("--address {address}: no such address"),
        },
        Err(e) => bail!("--address {address}: {e} (expected host:port, e.g. 127.0.0.1:7400)"),
    }
}

/// Serve until `--once`, the idle timeout or a signal.
pub fn execute(args: Args) -> Result<ExitCode> {
    let loaded = super::load(&args.model)?;
    let model = &loaded.model;
    let file = args.model.display().to_string();
    let lab = model.lab.as_ref().map(|c| &c.lab);
    let transport = if args.tcp {
        Transport::Tcp
    } else if args.udp {
        Transport::Udp
    } else if lab.is_some_and(|l| l.transfer == TransferKind::Tcp) {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    // The port the runner will reach, from the model's link, on the loopback address.
    let link_port = lab
        .filter(|l| matches!(l.transfer, TransferKind::Udp | TransferKind::Tcp))
        .and_then(|l| l.link.as_ref())
        .and_then(|link| link.address.rsplit_once(':'))
        .and_then(|(_, port)| port.parse::<u16>().ok());
    let address = match &args.address {
        Some(a) => resolve(a)?,
        None => SocketAddr::from(([127, 0, 0, 1], link_port.unwrap_or(0))),
    };
    if !(args.idle_timeout.is_finite() && args.idle_timeout >= 0.0) {
        bail!(
            "--idle-timeout {}: seconds, finite and not negative (0: never)",
            args.idle_timeout
        );
    }
    let faults = Faults {
        seed: args.seed,
        latency: args.latency,
        jitter: args.jitter,
        latency_after: args.latency_after,
        drop: args.drop,
        duplicate: args.duplicate,
        freeze_after: args.freeze_after,
        disconnect_after: args.disconnect_after,
        interlock_after: args.interlock_after,
    };
    faults.validate().map_err(anyhow::Error::msg)?;
    let (name, actuators, factory) = virtual_twin_of(model, args.substructure.as_deref())
        .map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
    let options = ControllerOptions {
        transport,
        address,
        once: args.once,
        idle_timeout: (args.idle_timeout > 0.0).then(|| Duration::from_secs_f64(args.idle_timeout)),
        faults,
        ..ControllerOptions::default()
    };
    let stop = super::signals::stop_flag();
    let notes = Box::new(|kind: Note, text: &str| match kind {
        Note::Info => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        }
        Note::Warning => eprintln!("warning: {text}"),
        Note::Refused => eprintln!("{text}"),
    });
    let mut server = ControllerServer::bind(factory, actuators, options, notes)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.local_addr())?;
        let o = server.options();
        writeln!(
            out,
            "transport {}; physical substructure `{name}` of {file}: {} actuator{} ({})",
            o.transport.name(),
            server.actuators().len(),
            if server.actuators().len() == 1 {
                ""
            } else {
                "s"
            },
            server.actuators().join(", ")
        )?;
        writeln!(out, "serving {}", server.describe())?;
        writeln!(
            out,
            "faults: {}",
            if o.faults.any() {
                o.faults.describe()
            } else {
                format!("none (seed {})", o.faults.seed)
            }
        )?;
        writeln!(
            out,
            "{}; {}; Ctrl-C stops",
            o.idle_timeout
                .map_or("no idle timeout".to_string(), |d| format!(
                    "exits after {} s without a frame",
                    d.as_secs_f64()
                )),
            if o.once {
                "one session"
            } else {
                "one session after another"
            }
        )?;
        out.flush()?;
    }
    let report = server.serve(stop)?;
    println!("served: {}", report.statistics.describe());
    Ok(match report.ending {
        Ending::SessionEnded | Ending::IdleTimeout { in_session: false } => ExitCode::SUCCESS,
        Ending::Stopped => {
            if let Some(signal) = super::signals::received() {
                println!("stopped by {signal}");
            }
            ExitCode::SUCCESS
        }
        Ending::IdleTimeout { in_session: true } => ExitCode::from(1),
    })
}
