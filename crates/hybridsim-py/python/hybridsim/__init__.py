"""hybridsim from Python: hybrid simulation models, runs, batch studies and step-by-step
co-simulation, on the Rust core of the ``hybridsim`` command-line tool.

Quick start::

    import hybridsim
    model = hybridsim.load("examples/quickstart.toml")
    print(model.check())                       # what `hybridsim check` prints
    res = hybridsim.run(model)                 # in memory; run(model, folder=...) writes a results folder
    df = res.to_dataframe()                    # columns `name[unit]`, as results.csv
    noise = hybridsim.batch(model, [{"lab.seed": s} for s in range(100)])   # parallel, Rust side

Errors in a model (file, string or dict) raise :class:`ModelError`, whose message keeps the
``file: field: reason`` text of the command-line tool.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native
from ._native import Model, ModelError, RunError
from .binary import read_binary

__version__ = _native.__version__

__all__ = [
    "Model",
    "ModelError",
    "RunError",
    "Results",
    "Simulation",
    "load",
    "run",
    "batch",
    "sweep",
    "grid",
    "read_results",
    "read_binary",
    "cyclic",
    "analyze",
]

PathLike = Union[str, "os.PathLike[str]"]


def load(source: Union[PathLike, Mapping[str, Any], Model], *, name: Optional[str] = None,
         base: Optional[PathLike] = None) -> Model:
    """A validated model from a file path, a TOML string or a dict of tables.

    A ``str`` is a TOML text when it holds a newline or an ``=`` sign, otherwise a path.
    ``name`` names a string or dict in messages; ``base`` is the folder its record files are
    read from (default: the working folder).
    """
    if isinstance(source, Model):
        return source
    if isinstance(source, Mapping):
        return Model.from_dict(dict(source), name or "<dict>", None if base is None else str(base))
    if isinstance(source, str) and ("\n" in source or "=" in source):
        return Model.from_string(source, name or "<string>", None if base is None else str(base))
    return Model.from_file(os.fspath(source))


def _split_header(h: str) -> tuple[str, str]:
    if h.endswith("]") and "[" in h:
        i = h.rindex("[")
        return h[:i], h[i + 1:-1]
    return h, ""


class Results:
    """The recorded channels of a run: ``data`` (rows × columns, numpy), ``columns``
    (``name[unit]``, the headers of results.csv), ``names`` and ``units``; for a run to a
    folder also ``folder`` and ``run_json`` (run.json as a dict)."""

    def __init__(self, columns: Sequence[str], data: np.ndarray, *, status: str = "completed",
                 steps: int = 0, error: Optional[str] = None, folder: Optional[Path] = None,
                 run_json: Optional[dict] = None, lab: Optional[dict] = None,
                 wall_seconds: Optional[float] = None):
        self.columns = list(columns)
        self.names = [_split_header(c)[0] for c in self.columns]
        self.units = [_split_header(c)[1] for c in self.columns]
        self.data = data
        self.status = status
        self.steps = steps
        self.error = error
        self.folder = folder
        self.run_json = run_json
        self.lab = lab or {}
        self.wall_seconds = wall_seconds

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def time(self) -> np.ndarray:
        return self["time"]

    def __getitem__(self, name: str) -> np.ndarray:
        """One column by name (``u.1.x``) or header (``u.1.x[m]``)."""
        if name in self.names:
            return self.data[:, self.names.index(name)]
        if name in self.columns:
            return self.data[:, self.columns.index(name)]
        raise KeyError(f"no column `{name}` (columns: {', '.join(self.names[:8])}, …)")

    def unit(self, name: str) -> str:
        return self.units[self.names.index(name)]

    def to_dataframe(self):
        """A pandas DataFrame with the columns ``name[unit]`` of results.csv."""
        import pandas as pd

        return pd.DataFrame(self.data, columns=self.columns)

    def lab_dataframe(self, substructure: Optional[str] = None):
        """The controller-rate laboratory records (lab.csv) as a DataFrame."""
        import pandas as pd

        if not self.lab:
            raise KeyError("no laboratory records (run with lab_records=True, or a folder run with a [lab])")
        key = substructure or next(iter(self.lab))
        cols, data = self.lab[key]
        return pd.DataFrame(data, columns=cols)

    def __repr__(self) -> str:
        where = f", folder={str(self.folder)!r}" if self.folder else ""
        return (f"Results({self.status}, {self.steps} steps, {self.data.shape[0]} rows × "
                f"{self.data.shape[1]} columns{where})")


def _from_native(r: "_native.RunResult") -> Results:
    data = np.frombuffer(r.data_bytes(), dtype=np.float64).reshape(r.n_rows, len(r.columns))
    lab = {}
    for name, cols, raw in r.lab_tables():
        lab[name] = (cols, np.frombuffer(raw, dtype=np.float64).reshape(-1, len(cols)))
    return Results(r.columns, data, status=r.status, steps=r.steps, error=r.error, lab=lab,
                   wall_seconds=r.wall_seconds)


def _read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    header, rows, raw = _native.read_csv(str(path))
    return header, np.frombuffer(raw, dtype=np.float64).reshape(rows, len(header))


def read_results(folder: PathLike) -> Results:
    """A results folder (of ``hybridsim run``, ``realtime`` or :func:`run`): results.csv (or
    results.bin of ``[output] format = "binary"``, :func:`read_binary`) read exactly, run.json
    as a dict, lab.csv when there is one."""
    folder = Path(folder)
    if not (folder / "results.csv").is_file() and (folder / "results.bin").is_file():
        cols, data, _ = read_binary(folder / "results.bin")
    else:
        cols, data = _read_csv(folder / "results.csv")
    info = json.loads((folder / "run.json").read_text())
    lab = {}
    for p in sorted(folder.glob("lab*.csv")):
        key = p.stem[4:] if p.stem.startswith("lab.") else "lab"
        lab[key] = _read_csv(p)
    return Results(cols, data, status=info.get("status", ""), steps=info.get("steps_completed", 0),
                   error=info.get("error"), folder=folder, run_json=info, lab=lab,
                   wall_seconds=info.get("timing", {}).get("wall_seconds"))


def run(model: Union[Model, PathLike, Mapping[str, Any]], folder: Optional[PathLike] = None, *,
        overwrite: bool = False, lab_records: bool = False,
        specimens: Optional[Mapping[str, Any]] = None, specimen: Any = None) -> Results:
    """Run a model to its end (or to the safety layer's stop).

    Without ``folder`` the run stays in memory (the run loop of ``hybridsim run``, the same
    numbers); with it, the results folder is written by ``hybridsim run``'s own code path
    (results.csv, run.json, lab.csv, model.toml; a non-empty folder is refused unless
    ``overwrite``) and read back. ``specimen`` (or ``specimens={name: obj}``) plays the physical
    substructure (see :class:`Simulation`; run.json then names the transfer system
    ``external``). The GIL is released during the run.
    """
    model = load(model)
    specimens = _specimens(specimen, specimens)
    if folder is None:
        return _from_native(_native.run_memory(model, lab_records, specimens))
    _native.run_folder(model, os.fspath(folder), overwrite, specimens)
    return read_results(folder)


def _specimens(specimen: Any, specimens: Optional[Mapping[str, Any]]) -> Optional[dict]:
    if specimen is not None and specimens:
        raise ValueError("give `specimen` or `specimens`, not both")
    if specimen is not None:
        return {"": specimen}
    return dict(specimens) if specimens else None


def grid(**values: Iterable[Any]) -> list[dict[str, Any]]:
    """Every combination of the given values, as override dicts (the first key varies slowest).
    Dotted keys go through ``**{"lab.seed": range(10)}``."""
    out: list[dict[str, Any]] = [{}]
    for key, vals in values.items():
        out = [{**o, key: v} for o in out for v in vals]
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _clean(variants: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in dict(var).items()} for var in variants]


def batch(model: Union[Model, PathLike, Mapping[str, Any]], variants: Iterable[Mapping[str, Any]],
          *, jobs: Optional[int] = None, folder: Optional[PathLike] = None,
          overwrite: bool = False, lab_records: bool = False) -> list[Results]:
    """Run many variants of ``model`` in parallel on ``jobs`` threads (all cores by default),
    Rust side: each variant is a dict of overrides by dotted key (``{"lab.seed": 3}``,
    ``{"ground_motion.0.pga": 0.2}``, ``{"ground_motion.0.record": "other.AT2"}``). Every
    variant equals a single :func:`run` of ``model.with_overrides(variant)`` bit for bit.

    With ``folder``, each variant is written to ``folder/variant-NNNN`` and the table
    ``folder/summary.csv`` is written (``hybridsim sweep``); the results are read back.
    """
    model = load(model)
    variants = _clean(variants)
    if folder is None:
        return [_from_native(r) for r in _native.batch_memory(model, variants, jobs, lab_records)]
    rows = _native.batch_folder(model, variants, os.fspath(folder), jobs, overwrite)
    return [read_results(r[1]) for r in rows]


def sweep(model: Union[Model, PathLike, Mapping[str, Any]], folder: PathLike,
          variants: Iterable[Mapping[str, Any]], *, jobs: Optional[int] = None,
          overwrite: bool = False):
    """``hybridsim sweep`` from Python: one results folder per variant and
    ``folder/summary.csv``; returns the summary as a pandas DataFrame."""
    import pandas as pd

    model = load(model)
    _native.batch_folder(model, _clean(variants), os.fspath(folder), jobs, overwrite)
    return pd.read_csv(Path(folder) / "summary.csv")


class Simulation:
    """A simulation advanced one coarse step at a time.

    ``step(n)`` releases the GIL while it runs. ``specimen`` (a model with one physical
    substructure) or ``specimens={name: obj}`` plugs Python objects in as the physical
    substructures' transfer systems, behind the laboratory's compensation and safety layer
    (``[lab]`` and ``[safety]`` of the model apply; every command is checked before it
    reaches the object). The object implements::

        send(tick, t, d, v, a)  # one command per controller tick: lists, one value per actuator
        receive(tick)           # -> (forces, achieved_displacements), or None for no new sample
        at_rest()               # optional: -> (forces, positions) before the first step (zeros)
        hold(tick, t)           # optional: a sample while the command is held (at_rest())
        on_trip()               # optional: the safety layer tripped

    An exception raised in a callback is a transfer fault: the test stops through the
    safety layer and ``step`` raises :class:`RunError`.
    """

    def __init__(self, model: Union[Model, PathLike, Mapping[str, Any]], *, specimen: Any = None,
                 specimens: Optional[Mapping[str, Any]] = None, lab_records: bool = False):
        self.model = load(model)
        self._sim = _native.Simulation(self.model, _specimens(specimen, specimens), lab_records)
        self.columns = self._sim.columns
        self.names = [_split_header(c)[0] for c in self.columns]

    def step(self, n: int = 1) -> None:
        """Advance ``n`` coarse steps."""
        self._sim.step(n)

    def run(self) -> Results:
        """Step to the end, recording a row per step (every step, whatever ``[output] every``)."""
        rows = [self._sim.record()]
        while self._sim.steps < self._sim.n_steps:
            self._sim.step(1)
            rows.append(self._sim.record())
        return Results(self.columns, np.array(rows), status="completed", steps=self._sim.steps)

    def abort(self) -> str:
        """Stop the test as the operator would (trip, then ramp down or hold)."""
        return self._sim.abort()

    @property
    def time(self) -> float:
        return self._sim.time

    @property
    def steps(self) -> int:
        return self._sim.steps

    @property
    def n_steps(self) -> int:
        return self._sim.n_steps

    @property
    def status(self) -> str:
        return self._sim.status

    @property
    def multipliers(self) -> np.ndarray:
        """Interface multipliers Λ (the force the numerical side exerts on the physical side)."""
        return np.array(self._sim.multipliers)

    def interface(self) -> list[dict[str, str]]:
        """Each multiplier: ``dof``, ``kind``, and the sides that get ``+Λ`` and ``−Λ``."""
        return [dict(dof=d, kind=k, plus=p, minus=m) for d, k, p, m in self._sim.interface()]

    def partitions(self) -> list[dict[str, Any]]:
        return [dict(name=n, physical=ph, dofs=d) for n, ph, d in self._sim.partitions()]

    def _partition(self, p: Union[int, str]) -> int:
        if isinstance(p, int):
            return p
        names = [x[0] for x in self._sim.partitions()]
        if p not in names:
            raise KeyError(f"no substructure `{p}` (have {', '.join(names)})")
        return names.index(p)

    def displacements(self, partition: Union[int, str]) -> np.ndarray:
        return np.array(self._sim.displacements(self._partition(partition)))

    def velocities(self, partition: Union[int, str]) -> np.ndarray:
        return np.array(self._sim.velocities(self._partition(partition)))

    def record(self) -> np.ndarray:
        """The current row of every recorded column."""
        return np.array(self._sim.record())

    def values(self) -> dict[str, float]:
        """The current value of every recorded column, by name."""
        return dict(zip(self.names, self._sim.record()))

    def __getitem__(self, name: str) -> float:
        return self.values()[name]

    def set_load(self, node: int, dof: str, value: float, *, substructure: Optional[str] = None) -> None:
        """Hold an external nodal force ``value`` (model force unit) on ``node``/``dof`` from
        the next step on, until changed (``0`` removes it), added to the model's loads and
        the ground motion's seismic load. An interface DOF (one shared by several
        substructures) needs ``substructure``, the side that carries the force. Raises
        ``ValueError`` for an unknown node, DOF or substructure, a non-finite value, or a
        scheme that does not take external loads (PG-α, MG-α, LLM and LSRT2 do)."""
        self._sim.set_load(int(node), str(dof), float(value), substructure)

    def loads(self) -> list[dict[str, Any]]:
        """The external forces held by :meth:`set_load`: ``substructure``, ``dof`` (``"node.dof"``), ``value``."""
        return [dict(substructure=s, dof=d, value=v) for s, d, v in self._sim.loads()]

    def set_multipliers(self, values: Sequence[float]) -> None:
        """Impose the interface forces Λ of the next step. No scheme allows it so far: the
        partitioned ones compute Λ from the interface compatibility condition every step
        (imposing it would break the coupling; use :meth:`set_load`), the monolithic ones
        have none. Raises ``ValueError`` saying which."""
        self._sim.set_multipliers([float(x) for x in values])

    def get_state(self) -> np.ndarray:
        """The integrator's whole state (a checkpoint)."""
        return np.array(self._sim.get_state())

    def set_state(self, state: Sequence[float]) -> None:
        """Restore a checkpoint of :meth:`get_state`."""
        self._sim.set_state([float(x) for x in state])


def cyclic(model: Union[Model, PathLike, Mapping[str, Any]], element: str, *,
           deformation: Optional[Sequence[float]] = None, time: Optional[Sequence[float]] = None,
           velocity: Optional[Sequence[float]] = None, amplitude: Optional[float] = None,
           frequency: float = 0.5, cycles: int = 3, history: str = "sine",
           dt: Optional[float] = None) -> Results:
    """Drive one element of a model through a deformation history with its displacement-driven
    form (``hybridsim cyclic``): device characterization. Either ``time`` and ``deformation``
    samples (``velocity`` defaults to their numerical derivative), or ``amplitude`` with
    ``history="sine"`` (``A sin 2πft``) or ``"ramp"`` (``A (t f / cycles) sin 2πft``) over
    ``cycles`` cycles of ``frequency``, sampled every ``dt`` (default 1/400 of a cycle).
    The columns are those of ``hybridsim cyclic``'s results.csv."""
    model = load(model)
    if deformation is not None:
        if time is None:
            raise ValueError("`deformation` needs `time`")
        t = np.asarray(time, dtype=np.float64)
        d = np.asarray(deformation, dtype=np.float64)
        v = np.gradient(d, t) if velocity is None else np.asarray(velocity, dtype=np.float64)
    else:
        if amplitude is None or not amplitude > 0:
            raise ValueError("give `amplitude` > 0 (or `time` and `deformation`)")
        if not frequency > 0 or cycles < 1:
            raise ValueError("`frequency` must be > 0 and `cycles` ≥ 1")
        duration = cycles / frequency
        step = dt if dt is not None else 1.0 / (400.0 * frequency)
        n = max(1, int(round(duration / step)))
        t = np.linspace(0.0, duration, n + 1)
        w = 2.0 * np.pi * frequency
        if history == "sine":
            d = amplitude * np.sin(w * t)
            v = amplitude * w * np.cos(w * t)
        elif history == "ramp":
            g = amplitude * frequency / cycles
            d = g * t * np.sin(w * t)
            v = g * (np.sin(w * t) + w * t * np.cos(w * t))
        else:
            raise ValueError(f"history `{history}`: expected `sine` or `ramp`")
    header, rows, raw, failure = _native.cyclic(model, element, t.tolist(), d.tolist(), v.tolist())
    data = np.frombuffer(raw, dtype=np.float64).reshape(rows, len(header))
    return Results(header, data, status="completed" if failure is None else "failed",
                   steps=max(rows - 1, 0), error=failure)


def analyze(model: Union[Model, PathLike, Mapping[str, Any]], kind: str, **options: Any) -> dict:
    """Algorithm analysis of the model's scheme (``hybridsim analyze``), as a dict of lists.

    - ``"spectral"``: spectral radius ``rho``, ``omega_bar``, ``zeta_bar``, ``frequency_error``
      over Ω = ω Δt; options ``omega_min`` (1e-2), ``omega_max`` (1e3), ``points`` (61) or
      ``omegas``, ``mode`` (1) or ``omega``, ``estimate_ratio``, ``delay_ticks``.
    - ``"convergence"``: global error for halving steps and the fitted slope; options ``dt``,
      ``levels`` (4), ``until``, ``reference`` (``auto``, ``exact``, ``fine``), ``fine_factor``.
    - ``"energy"``: energy of every partition and the total; option ``every`` (1).
    """
    model = load(model)
    if kind == "spectral":
        omegas = options.pop("omegas", None)
        lo, hi, n = options.pop("omega_min", 1e-2), options.pop("omega_max", 1e3), options.pop("points", 61)
        if omegas is None:
            omegas = np.exp(np.linspace(np.log(lo), np.log(hi), n)).tolist() if n > 1 else [lo]
        return _native.analyze_spectral(model, [float(x) for x in omegas], **options)
    if kind == "convergence":
        return _native.analyze_convergence(model, **options)
    if kind == "energy":
        return _native.analyze_energy(model, **options)
    raise ValueError(f"analysis `{kind}`: expected `spectral`, `convergence` or `energy`")
