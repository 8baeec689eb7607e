//! `hybridsim serve MODEL --substructure NAME`: serve one substructure of a model file to an
//! OpenSees `genericClient` element (TCP, or UDP with `--udp`), as OpenFresco's
//! `startSimAppElemServer` does. The first line on stdout is `listening on ADDRESS:PORT`
//! (flushed), then the mapping of the client's basic DOFs to the model's DOFs; problems with
//! the client's messages go to stderr, one line each, naming the client, the message and the
//! committed steps. See `docs/serve.md`.

use anyhow::{bail, Context, Result};
use hybridsim::assembly::ServedSubstructure;
use hybridsim::elements::DofRef;
use hybridsim_net::generic_client::{ServeFailure, ServeOptions, Server, SessionEnd, Transport};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `serve`.
#[derive(clap::Args)]
pub struct Args {
    /// The model file (TOML) holding the substructure.
    pub model: PathBuf,
    /// Name of the substructure to serve (its `[substructure.NAME]`).
    #[arg(short, long)]
    pub substructure: String,
    /// The client's basic DOFs in order, as `node:dof` (e.g. `1:x,2:x`). Default: the
    /// substructure's free DOFs by node id then the node's DOF order. A DOF the model fixes
    /// may be listed (the client then drives it).
    #[arg(long, value_delimiter = ',')]
    pub dofs: Vec<String>,
    /// Port (0: any free port, printed on the first line).
    #[arg(short, long, default_value_t = 8090)]
    pub port: u16,
    /// IPv4 address to listen on (the OpenSees client speaks IPv4 only).
    #[arg(long, default_value = "127.0.0.1")]
    pub address: Ipv4Addr,
    /// Serve over UDP (the client's `-udp` option) instead of TCP.
    #[arg(long)]
    pub udp: bool,
    /// Answer the client's mass request (code 15) with zeros: its own model carries the
    /// masses (the model file needs a mass on every free DOF of the substructure).
    #[arg(long)]
    pub no_mass: bool,
    /// Exit after one session (one client, until it sends 99 or closes).
    #[arg(long)]
    pub once: bool,
    /// Seconds without a message (or without a client) after which a session, or the wait
    /// for one, ends.
    #[arg(long, default_value_t = 300.0)]
    pub idle_timeout: f64,
}

fn parse_dofs(model: &hybridsim::Model, list: &[String]) -> Result<Vec<DofRef>> {
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let (node, dof) = s.split_once(':').with_context(|| {
            format!("--dofs entry {} `{s}`: expected node:dof, e.g. 2:x", i + 1)
        })?;
        let node: i64 = node.trim().parse().with_context(|| {
            format!(
                "--dofs entry {} `{s}`: the node `{node}` is not an integer id",
                i + 1
            )
        })?;
        let dof = dof.trim();
        let Some(n) = model.node(node) else {
            bail!("--dofs entry {} `{s}`: the model has no node {node}", i + 1);
        };
        if n.position(dof).is_none() {
            bail!(
                "--dofs entry {} `{s}`: node {node} has no DOF `{dof}` (it has {})",
                i + 1,
                n.dofs
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        out.push(DofRef::new(node, dof));
    }
    Ok(out)
}

/// Serve until the session (`--once`) or the idle timeout ends.
pub fn execute(args: Args) -> Result<ExitCode> {
    let loaded = super::load(&args.model)?;
    let model = loaded.model;
    if !args.idle_timeout.is_finite() || args.idle_timeout <= 0.0 || args.idle_timeout > 1e7 {
        bail!(
            "--idle-timeout must be > 0 and finite, found {}",
            args.idle_timeout
        );
    }
    let dofs = if args.dofs.is_empty() {
        None
    } else {
        Some(parse_dofs(&model, &args.dofs)?)
    };
    let build = || {
        let mut s = ServedSubstructure::new(&model, &args.substructure, dofs.as_deref())
            .map_err(|e| anyhow::anyhow!("{}: {e}", args.model.display()))?;
        if args.no_mass {
            s.drop_mass();
        }
        anyhow::Ok(s)
    };
    let mut served = build()?;
    let options = ServeOptions {
        transport: if args.udp {
            Transport::Udp
        } else {
            Transport::Tcp
        },
        idle_timeout: Duration::from_secs_f64(args.idle_timeout),
    };
    let addr = SocketAddr::from((args.address, args.port));
    let mut server = Server::bind(addr, options)
        .with_context(|| format!("binding {addr} ({})", if args.udp { "udp" } else { "tcp" }))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", server.local_addr())?;
    writeln!(
        out,
        "serving {} over {}; {} basic DOF{}:",
        served.describe(),
        if args.udp { "UDP" } else { "TCP" },
        served.n_dofs(),
        if served.n_dofs() == 1 { "" } else { "s" }
    )?;
    if args.no_mass {
        writeln!(out, "  mass requests (15) answered with zeros (--no-mass)")?;
    }
    for (i, d) in served.dofs().iter().enumerate() {
        writeln!(
            out,
            "  basic DOF {} -> node {} dof {}",
            i + 1,
            d.node,
            d.dof
        )?;
    }
    out.flush()?;
    let mut clean = true;
    let mut log = |line: &str| eprintln!("serve: {line}");
    loop {
        let report = match server.serve_one(&mut served, &mut log) {
            Ok(r) => r,
            Err(ServeFailure::NoClient(d)) => {
                writeln!(out, "no client within {} s: stopping", d.as_secs_f64())?;
                out.flush()?;
                return Ok(if args.once {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                });
            }
            Err(e) => return Err(e).context("serving"),
        };
        let ended = match &report.end {
            SessionEnd::Die => "the client's 99".to_string(),
            SessionEnd::Shutdown => "the client's 98".to_string(),
            SessionEnd::Eof => "the client closing the connection".to_string(),
            SessionEnd::IdleTimeout => "the idle timeout".to_string(),
            SessionEnd::Unreadable(why) => format!("an unreadable stream ({why})"),
        };
        writeln!(
            out,
            "session with {}: {} messages, {} replies, {} committed steps, {} rejected; ended by {ended}",
            report.peer, report.messages, report.replies, report.commits, report.rejected
        )?;
        out.flush()?;
        clean &= report.rejected == 0
            && matches!(
                report.end,
                SessionEnd::Die | SessionEnd::Eof | SessionEnd::Shutdown
            );
        if args.once {
            break;
        }
        served = build()?;
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
