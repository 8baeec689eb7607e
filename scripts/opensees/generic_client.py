#!/usr/bin/env python3
"""One-DOF openseespy model for the ``hybridsim serve`` tests (issue 11).

Node 1 is fixed, node 2 carries mass 1 and a sine load; the spring between them is either a
native element (``--element native``: ``zeroLength`` with an ``Elastic`` or ``BoucWen``
material) or a ``genericClient`` element connected to ``hybridsim serve`` (``--element
client``: ``element('genericClient', 1, '-node', 1, 2, '-dof', 1, '-dof', 1, '-server', PORT,
'127.0.0.1')``, ``-udp`` with ``--udp``). The last line on stdout is JSON: the displacement of
node 2 after every step, the seconds spent in ``analyze`` and the step count.

Bouc-Wen mapping (as in reference.py): hybridsim's ``bouc_wen`` (A, beta, gamma, n) is
``uniaxialMaterial BoucWen tag 0.0 A n gamma*A^(n-1) beta*A^(n-1) 1.0 0 0 0``.

``--lab``: instead, the physical substructure ``first_storey`` of ``examples/quickstart.toml``
served with its virtual lab: node 1 alone (mass 60, sine load 20 kN), ``genericClient`` on
``-node 1 -dof 1``, dt = 1 ms (the lab's controller period), 100 steps; with ``newmark`` the
analysis is expected to fail at step 1 (Newton's second trial is refused by the server).

``--served-mass``: the client model puts no mass on node 2 (the server's mass matrix, code 15,
carries it); by default node 2 has ``mass 1`` in the OpenSees model and the server is run with
``--no-mass``.

Usage: generic_client.py --element native|client [--port P] [--udp] --material elastic|boucwen
       --integrator newmark|explicit [--steps N] [--dt DT]
"""

import argparse
import json
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--element", choices=["native", "client"], required=True)
    p.add_argument("--port", type=int, default=8090)
    p.add_argument("--udp", action="store_true")
    p.add_argument("--served-mass", action="store_true")
    p.add_argument("--material", choices=["elastic", "boucwen"], default="elastic")
    p.add_argument("--k", type=float, default=1000.0)
    p.add_argument("--bw", type=float, nargs=4, default=[1000.0, 25.0, 25.0, 1.0],
                   metavar=("A", "BETA", "GAMMA", "N"))
    p.add_argument("--integrator", choices=["newmark", "explicit"], default="newmark")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--force", type=float, default=15.0)
    p.add_argument("--lab", action="store_true")
    p.add_argument("--period", type=float, default=0.5)
    a = p.parse_args()

    import openseespy.opensees as ops

    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    if a.lab:
        return lab(a, ops)
    ops.node(1, 0.0)
    ops.node(2, 0.0)
    ops.fix(1, 1)
    if not (a.element == "client" and a.served_mass):
        ops.mass(2, 1.0)
    if a.element == "native":
        if a.material == "elastic":
            ops.uniaxialMaterial("Elastic", 1, a.k)
        else:
            A, beta, gamma, n = a.bw
            ops.uniaxialMaterial("BoucWen", 1, 0.0, A, n, gamma * A ** (n - 1),
                                 beta * A ** (n - 1), 1.0, 0.0, 0.0, 0.0)
        ops.element("zeroLength", 1, 1, 2, "-mat", 1, "-dir", 1)
    else:
        args = ["genericClient", 1, "-node", 1, 2, "-dof", 1, "-dof", 1,
                "-server", a.port, "127.0.0.1"]
        if a.udp:
            args.append("-udp")
        ops.element(*args)
    ops.timeSeries("Trig", 1, 0.0, 1.0e6, a.period)
    ops.pattern("Plain", 1, 1)
    ops.load(2, a.force)
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    if a.integrator == "newmark":
        ops.test("NormDispIncr", 1.0e-12, 50, 0)
        ops.algorithm("Newton")
        ops.integrator("Newmark", 0.5, 0.25)
    else:
        ops.algorithm("Linear")
        ops.integrator("NewmarkExplicit", 0.5)
    ops.analysis("Transient")
    disp = []
    t0 = time.perf_counter()
    for k in range(a.steps):
        if ops.analyze(1, a.dt) != 0:
            print(f"analyze failed at step {k + 1}", file=sys.stderr)
            break
        disp.append(ops.nodeDisp(2, 1))
    seconds = time.perf_counter() - t0
    ops.wipe()
    print(json.dumps({"disp": disp, "seconds": seconds, "steps": len(disp)}))


def lab(a, ops):
    ops.node(1, 0.0)
    ops.mass(1, 60.0)
    args = ["genericClient", 1, "-node", 1, "-dof", 1, "-server", a.port, "127.0.0.1"]
    if a.udp:
        args.append("-udp")
    ops.element(*args)
    ops.timeSeries("Trig", 1, 0.0, 1.0e6, a.period)
    ops.pattern("Plain", 1, 1)
    ops.load(1, 20.0)
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    if a.integrator == "newmark":
        ops.test("NormDispIncr", 1.0e-10, 10, 0)
        ops.algorithm("Newton")
        ops.integrator("Newmark", 0.5, 0.25)
    else:
        ops.algorithm("Linear")
        ops.integrator("NewmarkExplicit", 0.5)
    ops.analysis("Transient")
    disp = []
    t0 = time.perf_counter()
    for k in range(a.steps):
        if ops.analyze(1, a.dt) != 0:
            print(f"analyze failed at step {k + 1}", file=sys.stderr)
            break
        disp.append(ops.nodeDisp(1, 1))
    seconds = time.perf_counter() - t0
    ops.wipe()
    print(json.dumps({"disp": disp, "seconds": seconds, "steps": len(disp)}))


if __name__ == "__main__":
    main()
