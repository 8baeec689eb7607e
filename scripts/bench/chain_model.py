"""The shear chains of the issue-20 benchmarks, written by one function.

`chain(n, ...)` returns the text of a model file: a shear chain of n storeys (n DOFs, one `x`
DOF a node, storey springs 4e4 kN/m, storey masses 50 t, a seeded synthetic ground motion).

  - `physical=False` (start-up and per-step benchmarks, `startup_chain.py`): every storey
    numerical, Rayleigh damping α = 0.05 /s, β = 1e-3 s, MG-α ρ∞ = 1 (the trapezoidal rule).
  - `physical=True` (real-time benchmarks, `startup_chain.py --pg-alpha`, `realtime_sweep.py`,
    `soak_4096.py`): storey 1 (spring, dashpot 60 kN·s/m, half of a 60 t mass) is the physical
    substructure on the virtual lab (an actuator with a 4 ms delay, first-order delay
    compensation, force noise, `[safety]` limits), the other storeys are numerical with
    dashpots of 60 kN·s/m; PG-α ρ∞ = 0.9 with `subcycles` controller ticks per step.

Imported by the scripts of this folder; not a command.
"""


def _inline(entry):
    """A `[[table]]` entry (`key = value` lines) as an inline table."""
    return "{" + ",".join(x.replace(" = ", "=", 1) for x in entry.split("\n")) + "}"


def chain(n, *, duration, time_step, every, physical=False, subcycles=4, max_overruns=None,
          title=None):
    """Model text of a shear chain of `n` storeys (see the module docs).

    Nodes and elements are written as root arrays of inline tables (`node = [{ … }, …]`):
    the same model as `[[node]]`/`[[element]]` tables in about 75 % of the bytes, so that
    the N = 10^5 chain (15 MB) stays under the 16 MiB model-file bound."""
    nodes = [f'id = {i}\ndofs = ["x"]' for i in range(1, n + 1)]
    elements = []
    tables = []
    if physical:
        tables.append("[substructure.frame]")
        tables.append(
            "[substructure.first_storey]\nphysical = true\n"
            'estimate = { dofs = [[1, "x"]], stiffness = [[40000.0]], damping = [[60.0]] }'
        )
        elements.append(
            'type = "mass"\nname = "m1"\nnode = 1\nmass = 60.0\n'
            "split = { frame = 0.5, first_storey = 0.5 }"
        )
        elements.append(
            'type = "spring"\nname = "column1"\nnodes = [1]\ndof = "x"\n'
            'k = 40000.0\nsubstructure = "first_storey"'
        )
        elements.append(
            'type = "dashpot"\nname = "column1_damping"\nnodes = [1]\ndof = "x"\n'
            'c = 60.0\nsubstructure = "first_storey"'
        )
        for i in range(2, n + 1):
            elements.append(
                f'type = "spring"\nname = "column{i}"\nnodes = [{i - 1}, {i}]\n'
                f'dof = "x"\nk = 40000.0\nsubstructure = "frame"'
            )
            elements.append(
                f'type = "dashpot"\nname = "damper{i}"\nnodes = [{i - 1}, {i}]\n'
                f'dof = "x"\nc = 60.0\nsubstructure = "frame"'
            )
            elements.append(
                f'type = "mass"\nname = "m{i}"\nnode = {i}\nmass = 50.0\n'
                'substructure = "frame"'
            )
    else:
        elements.append('type = "mass"\nname = "m1"\nnode = 1\nmass = 50.0')
        elements.append('type = "spring"\nname = "column1"\nnodes = [1]\ndof = "x"\nk = 40000.0')
        for i in range(2, n + 1):
            elements.append(
                f'type = "spring"\nname = "column{i}"\nnodes = [{i - 1}, {i}]\n'
                f'dof = "x"\nk = 40000.0'
            )
            elements.append(f'type = "mass"\nname = "m{i}"\nnode = {i}\nmass = 50.0')
        tables.append("[damping]\nalpha = 0.05\nbeta = 0.001")
    out = [
        f'title = "{title or f"Shear chain of {n} storeys"}"',
        "node = [\n" + ",\n".join(_inline(x) for x in nodes) + "\n]",
        "element = [\n" + ",\n".join(_inline(x) for x in elements) + "\n]",
        '[units]\nlength = "m"\nforce = "kN"\ntime = "s"',
    ]
    out.extend(tables)
    out.append(
        '[[ground_motion]]\ndirection = "x"\n'
        f"synthetic = {{ seed = 2026, duration = {duration:.3f}, pga = 0.1 }}"
    )
    if physical:
        out.append(
            '[analysis]\nintegrator = "pg-alpha"\nrho_inf = 0.9\n'
            f"time_step = {time_step!r}\nsubcycles = {subcycles}\nduration = {duration:.3f}"
        )
    else:
        out.append(
            '[analysis]\nintegrator = "mg-alpha"\nrho_inf = 1.0\n'
            f"time_step = {time_step!r}\nduration = {duration:.3f}"
        )
    out.append(f"[output]\nevery = {every}")
    if physical:
        out.append('[lab]\nregime = "real-time"\ntime_scale = 1.0\nseed = 2027')
        out.append(
            '[[lab.actuator]]\nname = "storey1"\ndofs = [[1, "x"]]\n'
            "capacity = { stroke = 0.3, velocity = 2.5, force = 6000.0 }\n"
            'dynamics = { kind = "delay", delay = 0.004 }\nnoise = { force_rms = 0.5 }\n'
            "compensation = { delay = { order = 1, estimate = 0.004 } }"
        )
        out.append(
            '[safety]\non_trip = "hold"'
            + (f"\nmax_overruns = {max_overruns}" if max_overruns is not None else "")
        )
        out.append(
            "[safety.actuator.storey1]\ndisplacement = 0.25\nvelocity = 2.0\nforce = 5000.0\n"
            "increment = 0.002"
        )
        out.append("[safety.divergence]\ndisplacement = 0.2\nforce = 20000.0")
    return "\n\n".join(out) + "\n"


def opensees_build(ops, n, steps, dt, record=None, factor_once=False):
    """Build the same chain in openseespy: `n` storeys of 4e4 N/m and 50 kg over a fixed base,
    Rayleigh damping (0.05, 0.001 on the initial stiffness), the base acceleration `record`
    (default: `steps + 1` zeros), Newmark average acceleration with the `Linear` algorithm
    (`-factorOnce` with `factor_once`)."""
    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(0, 0.0)
    ops.fix(0, 1)
    ops.uniaxialMaterial("Elastic", 1, 4.0e4)
    for i in range(1, n + 1):
        ops.node(i, 0.0)
        ops.mass(i, 50.0)
        ops.element("zeroLength", i, i - 1, i, "-mat", 1, "-dir", 1)
    ops.rayleigh(0.05, 0.0, 0.001, 0.0)
    values = record if record is not None else [0.0] * (steps + 1)
    ops.timeSeries("Path", 1, "-dt", dt, "-values", *values)
    ops.pattern("UniformExcitation", 1, 1, "-accel", 1)
    ops.constraints("Plain")
    ops.numberer("RCM")
    ops.system("BandGeneral")
    ops.algorithm("Linear", *(["-factorOnce"] if factor_once else []))
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
