#!/usr/bin/env python3
"""A remote site for hybridsim's `transfer = "opensees"` (peer `adapter`), served by OpenSees.

The specimen of a hybridsim physical substructure is modelled here, in OpenSees, and reached
through OpenSees's ``adapter`` element (``SRC/element/adapter/Adapter.cpp``). OpenSees is the
TCP *server* of the genericClient protocol; hybridsim is the client (``RemoteSite`` in
``crates/hybridsim-net/src/remote_site.rs``; see ``docs/multisite.md``).

The model, one basic DOF per hybridsim actuator (actuator k = basic DOF k)::

    node 0 (fixed) --[zeroLength, Elastic k_1]-- node 1 ... node n <-- adapter element (kb)

i.e. ``n`` independent linear springs to the ground, each loaded at its free node by the
adapter element, which acts as a stiff penalty spring ``kb`` pulling the node towards the
displacement hybridsim commands (``ctrlDisp``). Per hybridsim controller tick the client
sends the target (action 3) and, at its next residual evaluation (the next analysis step),
asks for the force (action 10): the reply is the nodal displacement ``db`` and the force
``-kb (db - ctrlDisp)``, which at equilibrium is the springs' resisting force ``k db``. With
``kb >> k`` the node follows the target to a relative error of ``k / (k + kb)``.

Each tick consumes one analysis step, so this script runs ``analyze(1)`` in a loop with the
pseudo-time advancing (``integrator LoadControl 1.0``, a static site) and Newton iterations
(Newton forms the residual after its last update, so the force sent back is that of the
converged state). The loop ends when the client sends 99: the adapter element then ends the
process itself (exit code 255 is OpenSees's ``exit(-1)``: a normal end for this script).

A watchdog (``--max-seconds``, default 600) ends the process whatever happens: the adapter
element never notices a closed connection (its receive loop spins), so a client that dies
without sending 99 would otherwise leave this process running for ever.

The adapter element listens on all interfaces (OpenSees's ``TCP_Socket(port)``; it cannot be
bound to 127.0.0.1): run it on a trusted network or behind a firewall.

Usage::

    python3 scripts/opensees/adapter_site.py --port 8090 --k 4e5 --kb 4e11

Needs: ``pip install openseespy`` (3.7 has the adapter element) and Debian's ``libblas3
liblapack3``.
"""

import argparse
import faulthandler
import sys


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True, help="TCP port the adapter listens on")
    p.add_argument(
        "--k",
        type=float,
        nargs="+",
        required=True,
        help="stiffness of each spring (one per basic DOF = per hybridsim actuator)",
    )
    p.add_argument(
        "--kb",
        type=float,
        default=None,
        help="penalty stiffness of the adapter element (default: 1e6 x the largest k)",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=600.0,
        help="end the process after this many seconds whatever happens (watchdog)",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=10_000_000,
        help="end after this many analysis steps (a bound; the client normally ends it)",
    )
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        p.error(f"--port {args.port}: not a TCP port")
    for k in args.k:
        if not (k > 0 and k < float("inf")):
            p.error(f"--k {k}: a stiffness must be finite and positive")
    if args.kb is None:
        args.kb = 1e6 * max(args.k)
    if not (args.kb > 0 and args.kb < float("inf")):
        p.error(f"--kb {args.kb}: must be finite and positive")
    if not args.max_seconds > 0:
        p.error("--max-seconds must be positive")
    return args


def main(argv):
    args = parse_args(argv)
    # The watchdog is a native thread: it fires even while OpenSees blocks in C holding the
    # interpreter lock.
    faulthandler.dump_traceback_later(args.max_seconds, exit=True)
    try:
        import openseespy.opensees as ops
    except ImportError as e:
        print(f"adapter_site: openseespy is not importable: {e}", file=sys.stderr)
        return 2

    n = len(args.k)
    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(1000, 0.0)
    ops.fix(1000, 1)
    for i, k in enumerate(args.k, start=1):
        ops.node(i, 0.0)
        ops.uniaxialMaterial("Elastic", i, k)
        ops.element("zeroLength", i, 1000, i, "-mat", i, "-dir", 1)
    # One adapter element over every free node, one DOF each: basic DOF i-1 = node i = the
    # hybridsim actuator of index i-1. kb is diagonal.
    kb = [0.0] * (n * n)
    for i in range(n):
        kb[i * n + i] = args.kb
    nodes = list(range(1, n + 1))
    dofs = []
    for _ in nodes:
        dofs += ["-dof", 1]
    print(
        f"adapter_site: {n} spring(s) k = {args.k}, kb = {args.kb:g}, waiting for the client "
        f"on port {args.port}",
        file=sys.stderr,
        flush=True,
    )
    # Blocks until hybridsim connects and sends its sizes.
    ops.element("adapter", n + 1, "-node", *nodes, *dofs, "-stif", *kb, args.port)

    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    ops.test("NormDispIncr", 1e-14, 20)
    ops.algorithm("Newton")
    ops.integrator("LoadControl", 1.0)
    ops.analysis("Static")
    for step in range(args.max_steps):
        if ops.analyze(1) != 0:
            print(f"adapter_site: analysis step {step + 1} failed", file=sys.stderr)
            return 1
    print(f"adapter_site: --max-steps {args.max_steps} reached", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
