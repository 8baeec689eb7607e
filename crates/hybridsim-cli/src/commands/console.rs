//! The live browser console (`--console [ADDR:PORT]` of `run` and `realtime`) and
//! `hybridsim console RESULTS_DIR`, which serves the same page replaying a finished folder.
//! The console's stop button sets the same flag as Ctrl-C (super::signals): the run loop trips
//! every actuator with `operator_abort`, holds or ramps down, and ends with every completed
//! step on disk.

use anyhow::{anyhow, bail, Result};
use hybridsim::runner::TapSlot;
use hybridsim_console::{Console, ConsoleOptions};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Default address of `--console` without a value.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8640";

/// The console options shared by `run` and `realtime`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConsoleArgs {
    /// Serve a live console of the run in a browser at ADDR:PORT (127.0.0.1:8640 without a
    /// value; port 0 picks a free port; the address is printed). A non-loopback address needs
    /// --console-token.
    #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1, default_missing_value = DEFAULT_ADDR)]
    pub console: Option<String>,
    /// Token the console's stop control requires (header X-Console-Token, or open the page
    /// as http://ADDR:PORT/?token=TOKEN). Required beyond loopback.
    #[arg(long, value_name = "TOKEN", requires = "console")]
    pub console_token: Option<String>,
    /// Seconds the console keeps serving after the run has ended, so that the page shows the
    /// outcome (default 2).
    #[arg(long, value_name = "SECONDS", requires = "console")]
    pub console_linger: Option<f64>,
    /// Wait up to SECONDS for a browser to open the console before the run starts (so that
    /// the page shows the whole test); the run starts anyway when none comes.
    #[arg(long, value_name = "SECONDS", requires = "console")]
    pub console_wait: Option<f64>,
}

/// Parse `ADDR:PORT` (or a bare port, on 127.0.0.1).
pub fn parse_addr(text: &str, option: &str) -> Result<SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        anyhow!(
            "{option}: `{text}` is not ADDR:PORT (e.g. 127.0.0.1:8640, 0.0.0.0:8640, [::1]:0); \
             without an address, put {option} after the model file"
        )
    })
}

fn seconds(value: Option<f64>) -> Result<Duration> {
    match value {
        None => Ok(Duration::from_secs(2)),
        Some(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        Some(s) => bail!("--console-linger: seconds between 0 and 3600, found {s}"),
    }
}

/// A live console of one run.
pub struct Live {
    console: Console,
    linger: Duration,
}

/// The tap of the running console, for runners that take it from here (`realtime`).
static SLOT: Mutex<Option<TapSlot>> = Mutex::new(None);

/// The tap slot of the console started by [`ConsoleArgs::start`], if any (taken once).
pub fn take_slot() -> Option<TapSlot> {
    SLOT.lock().ok().and_then(|mut s| s.take())
}

impl ConsoleArgs {
    /// Start the console when asked for: check the address and token, listen, print the
    /// address, and keep the tap for the runner ([`take_slot`]). `runner` names the command;
    /// `realtime`: the run is paced by the wall clock.
    pub fn start(
        &self,
        loaded: &hybridsim_io::LoadedModel,
        runner: &str,
        realtime: bool,
    ) -> Result<Option<Live>> {
        let Some(text) = &self.console else {
            return Ok(None);
        };
        let addr = parse_addr(text, "--console")?;
        let linger = seconds(self.console_linger)?;
        let meta = hybridsim_console::meta_from_model(
            &loaded.model,
            &loaded.path.display().to_string(),
            runner,
            realtime,
        );
        let stop: hybridsim_console::StopRequest = Arc::new(|| {
            // The same flag as Ctrl-C: the run loop takes the safety path.
            super::signals::stop_flag().store(true, Ordering::SeqCst);
        });
        let (console, slot) = hybridsim_console::live(
            meta,
            ConsoleOptions {
                addr: Some(addr),
                token: self.console_token.clone(),
                stop: Some(stop),
            },
        )
        .map_err(|e| anyhow!("{e}"))?;
        println!("console: http://{}/", console.addr());
        if let Some(wait) = self.console_wait {
            let wait = seconds(Some(wait))
                .map_err(|_| anyhow!("--console-wait: seconds between 0 and 3600, found {wait}"))?;
            println!(
                "console: waiting up to {} s for a browser",
                wait.as_secs_f64()
            );
            if !console.wait_for_browser(wait) {
                println!("console: no browser came; starting the run");
            }
        }
        if let Ok(mut s) = SLOT.lock() {
            *s = Some(slot);
        }
        Ok(Some(Live { console, linger }))
    }
}

impl Live {
    /// The run has ended: show its outcome (from the folder's run.json) and keep serving for
    /// the linger time.
    pub fn finish(self, folder: &Path) {
        // A tap the runner never took (a refused start) must not keep the page waiting.
        drop(take_slot());
        let outcome = std::fs::read_to_string(folder.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map(|r| {
                json!({ "status": r["status"], "safety_event": r["safety_event"],
                        "error": r["error"], "steps": r["steps_completed"] })
            })
            .unwrap_or_else(|| json!({ "status": "ended" }));
        if self.console.stop_requested() {
            println!("console: the test was stopped from the console");
        }
        self.console.finish(Some(outcome), self.linger);
    }
}

/// Arguments of `console`.
#[derive(clap::Args)]
pub struct Args {
    /// A results folder written by `run` or `realtime` (results.csv, lab.csv, run.json).
    pub folder: PathBuf,
    /// Address to serve at (port 0 picks a free port; the address is printed).
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_ADDR)]
    pub console: String,
    /// Replay speed: 1 the test's own pace, 10 ten times faster, 0 at once.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Exit once the whole folder has been replayed and this many seconds have passed
    /// (default: serve until Ctrl-C).
    #[arg(long, value_name = "SECONDS")]
    pub exit_after: Option<f64>,
    /// Token (only needed to listen beyond loopback; a replay has no controls).
    #[arg(long, value_name = "TOKEN")]
    pub console_token: Option<String>,
}

/// Serve the page replaying a finished results folder.
pub fn execute(args: Args) -> Result<ExitCode> {
    if !(args.speed.is_finite() && args.speed >= 0.0) {
        bail!("--speed: a number ≥ 0, found {}", args.speed);
    }
    let addr = parse_addr(&args.console, "--console")?;
    if !args.folder.join("run.json").is_file() {
        bail!(
            "{}: not a results folder (no run.json)",
            args.folder.display()
        );
    }
    let stop = super::signals::stop_flag();
    let console = hybridsim_console::replay(
        &args.folder,
        args.speed,
        ConsoleOptions {
            addr: Some(addr),
            token: args.console_token.clone(),
            stop: None,
        },
    )
    .map_err(|e| anyhow!("{e}"))?;
    println!(
        "console: http://{}/ (replay of {}; Ctrl-C ends it)",
        console.addr(),
        args.folder.display()
    );
    let linger = args.exit_after.map(|s| seconds(Some(s))).transpose()?;
    match linger {
        Some(l) => console.finish(None, l),
        None => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
