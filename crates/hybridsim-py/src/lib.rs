//! Python bindings of hybridsim: the native module `hybridsim._native` of the `hybridsim`
//! Python package (`crates/hybridsim-py/python/hybridsim`, which wraps it in numpy and pandas
//! types). Install with `pip install ./crates/hybridsim-py` (maturin builds it).
//!
//! Everything a run does is the Rust core's: models are read and validated by
//! [`hybridsim::Model::from_toml`] (errors become `hybridsim.ModelError` with the
//! `file: field: reason` text), runs to a folder are [`hybridsim_io::run_to_folder_with`]
//! (the code path of `hybridsim run`), runs in memory [`hybridsim_io::memory::run_in_memory`]
//! (the same run loop), batches [`hybridsim_io::sweep`]. Long calls release the GIL; a Python
//! object plugged in as a physical substructure ([`PyTransfer`]) takes it back for each of its
//! callbacks, behind the laboratory's compensation and safety layer like any transfer system.

use hybridsim::integrators::TimeIntegrator;
use hybridsim::model::lab::TransferKind;
use hybridsim::output::Recorder;
use hybridsim::physical::transfer::{
    ActuatorCommand, Sample, TransferConnector, TransferRequest, TransferSystem,
};
use hybridsim::physical::TransferError;
use hybridsim::runner::{EndState, Fault};
use hybridsim_io::memory::{MemoryOptions, MemoryRun};
use hybridsim_io::sweep::{self, Override};
use hybridsim_io::LoadedModel;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

create_exception!(
    _native,
    ModelError,
    PyValueError,
    "A model (file, TOML string or dict) that does not validate; the message names the file, \
     the field and the reason (`file: field: reason`), one line per problem."
);
create_exception!(
    _native,
    RunError,
    PyRuntimeError,
    "A run that could not start or write its results (a results folder that is not empty, a \
     file-system error), or a step-by-step simulation that stopped."
);

fn model_err(e: impl std::fmt::Display) -> PyErr {
    ModelError::new_err(e.to_string())
}

fn run_err(e: impl std::fmt::Display) -> PyErr {
    RunError::new_err(e.to_string())
}

/// A Python value (bool, int, float, str, list/tuple, dict) as a TOML value; `what` names it
/// in errors.
fn to_toml(v: &Bound<'_, PyAny>, what: &str) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v
            .extract()
            .map_err(|_| model_err(format!("{what}: an integer beyond 64 bits")))?;
        return Ok(toml::Value::Integer(i));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| model_err(format!("{what}: a key that is not a string")))?;
            let inner = format!("{what}.{k}");
            t.insert(k, to_toml(&x, &inner)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut a = Vec::new();
        for (i, x) in v.try_iter()?.enumerate() {
            a.push(to_toml(&x?, &format!("{what}[{i}]"))?);
        }
        return Ok(toml::Value::Array(a));
    }
    // numpy scalars and other numbers.
    if let Ok(x) = v.extract::<f64>() {
        return Ok(toml::Value::Float(x));
    }
    Err(model_err(format!(
        "{what}: a {} has no TOML form (use bool, int, float, str, list or dict)",
        v.get_type().name()?
    )))
}

/// Overrides from a Python mapping or a sequence of (key, value) pairs.
fn overrides(v: &Bound<'_, PyAny>) -> PyResult<Vec<Override>> {
    let pairs: Vec<(String, Bound<'_, PyAny>)> = if let Ok(d) = v.cast::<PyDict>() {
        d.iter()
            .map(|(k, x)| Ok((k.extract::<String>()?, x)))
            .collect::<PyResult<_>>()?
    } else {
        v.try_iter()?
            .map(|p| p?.extract::<(String, Bound<'_, PyAny>)>())
            .collect::<PyResult<_>>()?
    };
    pairs
        .into_iter()
        .map(|(key, x)| {
            let value = to_toml(&x, &key)?;
            Ok(Override { key, value })
        })
        .collect()
}

/// A validated model, with its text and where its files are read from.
#[pyclass(module = "hybridsim", name = "Model", frozen)]
#[derive(Clone)]
struct PyModel {
    loaded: Arc<LoadedModel>,
}

#[pymethods]
impl PyModel {
    /// Read and validate a model file.
    #[staticmethod]
    fn from_file(path: PathBuf) -> PyResult<Self> {
        if !path.exists() {
            return Err(model_err(format!("{}: no such model file", path.display())));
        }
        let loaded = hybridsim_io::load_model(&path).map_err(model_err)?;
        Ok(Self {
            loaded: Arc::new(loaded),
        })
    }

    /// Validate a model from its TOML text; `name` names it in messages and `base` is the
    /// folder its record files are read from (default: the working folder).
    #[staticmethod]
    #[pyo3(signature = (text, name = "<string>", base = None))]
    fn from_string(text: &str, name: &str, base: Option<PathBuf>) -> PyResult<Self> {
        let base = base.unwrap_or_else(|| PathBuf::from("."));
        let loaded = sweep::load_text(text, name, &base, base.join(name)).map_err(model_err)?;
        Ok(Self {
            loaded: Arc::new(loaded),
        })
    }

    /// Validate a model from a dict of the model file's tables (the TOML it stands for).
    #[staticmethod]
    #[pyo3(signature = (tables, name = "<dict>", base = None))]
    fn from_dict(tables: &Bound<'_, PyDict>, name: &str, base: Option<PathBuf>) -> PyResult<Self> {
        let toml::Value::Table(t) = to_toml(tables.as_any(), "model")? else {
            unreachable!("a dict is a table")
        };
        let text = toml::to_string(&t).map_err(|e| model_err(format!("{name}: {e}")))?;
        Self::from_string(&text, name, base)
    }

    /// This model with overrides by dotted key (`{"lab.seed": 3, "ground_motion.0.pga":
    /// 0.2}`), validated again.
    fn with_overrides(&self, values: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = overrides(values)?;
        let loaded = sweep::variant(&self.loaded, &o).map_err(model_err)?;
        Ok(Self {
            loaded: Arc::new(loaded),
        })
    }

    /// What `hybridsim check` prints: substructures, interface, time steps, modes. Builds the
    /// integrator (a laboratory on the network is checked on its virtual twin) and refuses a
    /// laboratory whose measurement at rest trips the safety layer.
    fn check(&self, py: Python<'_>) -> PyResult<String> {
        let mut model = self.loaded.model.clone();
        py.detach(move || {
            if let Some(config) = model.lab.as_mut() {
                if config.lab.transfer.is_network() {
                    config.lab.link = None;
                    config.lab.transfer = TransferKind::Virtual;
                }
            }
            let source = model.source.clone();
            let sim = hybridsim::Simulation::new(model).map_err(model_err)?;
            for p in sim.integrator.partitions() {
                if let Some(event) = p.lab().and_then(|lab| lab.safety_summary().event) {
                    return Err(model_err(format!(
                        "{source}: physical substructure `{}`: the safety layer tripped at \
                         rest: {event}; a test cannot start from this state",
                        p.state.name
                    )));
                }
            }
            Ok(sim.summary())
        })
    }

    /// The model's TOML text.
    #[getter]
    fn text(&self) -> String {
        self.loaded.text.clone()
    }
    /// The model file (or the name given to a string or dict).
    #[getter]
    fn path(&self) -> PathBuf {
        self.loaded.path.clone()
    }
    /// SHA-256 of the text (hex), as in run.json.
    #[getter]
    fn sha256(&self) -> String {
        self.loaded.sha256.clone()
    }
    /// The title.
    #[getter]
    fn title(&self) -> String {
        self.loaded.model.title.clone()
    }
    /// Plausibility warnings (`file: field: reason`): valid values that are probably not meant.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.loaded
            .model
            .warnings
            .iter()
            .map(|w| w.to_string())
            .collect()
    }
    /// Coarse steps of the analysis.
    #[getter]
    fn n_steps(&self) -> u64 {
        self.loaded.model.analysis.n_steps()
    }
    /// Numerical time step Δt^N (model time unit).
    #[getter]
    fn time_step(&self) -> f64 {
        self.loaded.model.analysis.time_step
    }
    /// Duration (model time unit).
    #[getter]
    fn duration(&self) -> f64 {
        self.loaded.model.analysis.duration
    }
    /// Units: `{"length": …, "force": …, "time": …}`.
    #[getter]
    fn units(&self) -> (String, String, String) {
        let u = &self.loaded.model.units;
        (u.length.clone(), u.force.clone(), u.time.clone())
    }
    /// Names of the physical substructures.
    #[getter]
    fn physical_substructures(&self) -> Vec<String> {
        self.loaded
            .model
            .substructures
            .iter()
            .filter(|s| s.physical)
            .map(|s| s.name.clone())
            .collect()
    }
    fn __repr__(&self) -> String {
        format!(
            "Model({:?}, {} steps of {})",
            self.loaded.path.display().to_string(),
            self.loaded.model.analysis.n_steps(),
            self.loaded.model.analysis.time_step
        )
    }
}

/// The outcome of a run held in memory (wrapped by `hybridsim.Results`).
#[pyclass(module = "hybridsim", name = "RunResult", frozen)]
struct PyRunResult {
    run: MemoryRun,
}

fn f64_bytes<'py>(py: Python<'py>, data: &[f64]) -> Bound<'py, PyBytes> {
    let mut bytes = Vec::with_capacity(data.len() * 8);
    for x in data {
        bytes.extend_from_slice(&x.to_ne_bytes());
    }
    PyBytes::new(py, &bytes)
}

fn end_error(state: &EndState) -> Option<String> {
    match state {
        EndState::Completed => None,
        EndState::Stopped { event, fault } => Some(format!(
            "stopped through the safety layer: {event} (cause: {fault})"
        )),
        EndState::Failed(fault) => Some(fault.to_string()),
    }
}

/// [`end_error`] with the transfer systems' own fault messages (a Python specimen's exception).
fn end_error_with(state: &EndState, integ: &dyn TimeIntegrator) -> Option<String> {
    let mut e = end_error(state)?;
    for p in integ.partitions() {
        if let Some(msg) = p.lab().and_then(|l| l.safety_summary().transfer_fault) {
            e.push_str(&format!("; `{}`: {msg}", p.state.name));
        }
    }
    Some(e)
}

#[pymethods]
impl PyRunResult {
    /// Column headers `name[unit]`.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.run.columns.iter().map(|c| c.header()).collect()
    }
    /// Number of rows.
    #[getter]
    fn n_rows(&self) -> usize {
        self.run.n_rows()
    }
    /// Row-major values as native-endian f64 bytes.
    fn data_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        f64_bytes(py, &self.run.data)
    }
    /// `completed`, `stopped`, `aborted` or `failed`.
    #[getter]
    fn status(&self) -> &'static str {
        self.run.state.status()
    }
    /// Why the run ended early, if it did (with a transfer system's own fault message).
    #[getter]
    fn error(&self) -> Option<String> {
        let mut e = end_error(&self.run.state)?;
        for (name, s) in &self.run.safety {
            if let Some(msg) = &s.transfer_fault {
                e.push_str(&format!("; `{name}`: {msg}"));
            }
        }
        Some(e)
    }
    /// Completed coarse steps.
    #[getter]
    fn steps(&self) -> u64 {
        self.run.steps
    }
    /// Seconds spent in integrator steps.
    #[getter]
    fn step_seconds(&self) -> f64 {
        self.run.step_time.as_secs_f64()
    }
    /// Seconds of the whole run.
    #[getter]
    fn wall_seconds(&self) -> f64 {
        self.run.wall_time.as_secs_f64()
    }
    /// Laboratory records: `[(substructure, headers, bytes), …]`.
    fn lab_tables<'py>(&self, py: Python<'py>) -> Vec<(String, Vec<String>, Bound<'py, PyBytes>)> {
        self.run
            .lab
            .iter()
            .map(|t| {
                (
                    t.substructure.clone(),
                    t.columns.clone(),
                    f64_bytes(py, &t.data),
                )
            })
            .collect()
    }
    /// Safety state per laboratory: `[(substructure, commands_sent, event or None), …]`.
    fn safety(&self) -> Vec<(String, u64, Option<String>)> {
        self.run
            .safety
            .iter()
            .map(|(n, s)| (n.clone(), s.commands_sent, s.event.map(|e| e.to_string())))
            .collect()
    }
}

/// A physical substructure played by a Python object: a transfer system whose commands go to
/// `obj.send(tick, t, d, v, a)` (lists, one entry per actuator, specimen units) and whose
/// measurements come from `obj.receive(tick)` → `(forces, achieved_displacements)` or `None`
/// (no new sample: the safety layer holds the last one and counts the dropout). Optional:
/// `obj.at_rest()` → `(forces, positions)` before the first step (default zeros), and
/// `obj.hold(tick, t)` → the same during holds (default `at_rest`). An exception in a
/// callback is a transfer fault: the safety layer stops the test.
pub struct PyTransfer {
    obj: Py<PyAny>,
    n: usize,
    name: String,
    d: Vec<f64>,
    v: Vec<f64>,
    a: Vec<f64>,
}

impl PyTransfer {
    fn fault(&self, what: &str, e: impl std::fmt::Display) -> TransferError {
        TransferError::new(format!("Python specimen `{}`: {what}: {e}", self.name))
    }

    fn pair(
        &self,
        what: &str,
        r: &Bound<'_, PyAny>,
        force: &mut [f64],
        second: &mut [f64],
    ) -> Result<(), TransferError> {
        let (f, x): (Vec<f64>, Vec<f64>) = r
            .extract()
            .map_err(|e| self.fault(what, format!("expected (forces, displacements): {e}")))?;
        if f.len() != self.n || x.len() != self.n {
            return Err(self.fault(
                what,
                format!(
                    "{} forces and {} displacements for {} actuator(s)",
                    f.len(),
                    x.len(),
                    self.n
                ),
            ));
        }
        force.copy_from_slice(&f);
        second.copy_from_slice(&x);
        Ok(())
    }

    fn at_rest(&self, force: &mut [f64], position: &mut [f64]) -> Result<(), TransferError> {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if !obj.hasattr("at_rest").unwrap_or(false) {
                force.fill(0.0);
                position.fill(0.0);
                return Ok(());
            }
            let r = obj
                .call_method0("at_rest")
                .map_err(|e| self.fault("at_rest", e))?;
            self.pair("at_rest", &r, force, position)
        })
    }
}

impl TransferSystem for PyTransfer {
    fn describe(&self) -> String {
        Python::attach(|py| {
            let t = self.obj.bind(py).get_type();
            format!(
                "Python object `{}` ({} actuator(s))",
                t.name().map(|n| n.to_string()).unwrap_or_default(),
                self.n
            )
        })
    }
    fn is_virtual(&self) -> bool {
        false
    }
    fn n_actuators(&self) -> usize {
        self.n
    }
    fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError> {
        self.at_rest(force, position)
    }
    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError> {
        for (k, c) in cmd.iter().enumerate() {
            self.d[k] = c.d;
            self.v[k] = c.v;
            self.a[k] = c.a;
        }
        Python::attach(|py| {
            self.obj
                .bind(py)
                .call_method1("send", (tick, t_wall, &self.d, &self.v, &self.a))
                .map(|_| ())
                .map_err(|e| self.fault("send", e))
        })
    }
    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        let has_hold = Python::attach(|py| self.obj.bind(py).hasattr("hold").unwrap_or(false));
        if !has_hold {
            self.at_rest(force, position)?;
            return Ok(Sample::Fresh);
        }
        Python::attach(|py| {
            let r = self
                .obj
                .bind(py)
                .call_method1("hold", (tick, t_wall))
                .map_err(|e| self.fault("hold", e))?;
            if r.is_none() {
                return Ok(Sample::Missing);
            }
            self.pair("hold", &r, force, position)
                .map(|_| Sample::Fresh)
        })
    }
    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError> {
        Python::attach(|py| {
            let r = self
                .obj
                .bind(py)
                .call_method1("receive", (tick,))
                .map_err(|e| self.fault("receive", e))?;
            if r.is_none() {
                return Ok(Sample::Missing);
            }
            self.pair("receive", &r, force, achieved)
                .map(|_| Sample::Fresh)
        })
    }
    fn on_trip(&mut self) {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if obj.hasattr("on_trip").unwrap_or(false) {
                let _ = obj.call_method0("on_trip");
            }
        })
    }
}

/// Connects the laboratories of a model to Python objects (by physical substructure name; a
/// single object serves a model with one physical substructure).
struct PyConnector {
    specimens: Vec<(String, Py<PyAny>)>,
}

impl TransferConnector for PyConnector {
    fn connect(&self, request: &TransferRequest) -> Result<Box<dyn TransferSystem>, TransferError> {
        let obj = self
            .specimens
            .iter()
            .find(|(n, _)| *n == request.substructure)
            .or_else(|| (self.specimens.len() == 1).then(|| &self.specimens[0]))
            .ok_or_else(|| {
                TransferError::new(format!(
                    "no Python specimen for physical substructure `{}`",
                    request.substructure
                ))
            })?;
        let n = request.actuators.len();
        Ok(Box::new(PyTransfer {
            obj: Python::attach(|py| obj.1.clone_ref(py)),
            n,
            name: request.substructure.clone(),
            d: vec![0.0; n],
            v: vec![0.0; n],
            a: vec![0.0; n],
        }))
    }
}

/// The model and connector of a run with Python specimens (`specimens`: `{name: object}`):
/// the laboratory's transfer system becomes [`TransferKind::External`].
fn with_specimens(
    loaded: &LoadedModel,
    specimens: Option<&Bound<'_, PyDict>>,
) -> PyResult<(hybridsim::Model, Option<Arc<dyn TransferConnector>>)> {
    let mut model = loaded.model.clone();
    let Some(specimens) = specimens.filter(|d| !d.is_empty()) else {
        return Ok((model, None));
    };
    let source = model.source.clone();
    let Some(lab) = model.lab.as_mut() else {
        return Err(model_err(format!(
            "{source}: lab: a Python specimen needs a [lab] table with the actuators that \
             drive it"
        )));
    };
    lab.lab.transfer = TransferKind::External;
    lab.lab.link = None;
    let list = specimens
        .iter()
        .map(|(k, v)| Ok((k.extract::<String>()?, v.unbind())))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((model, Some(Arc::new(PyConnector { specimens: list }))))
}

/// Run a model in memory (the run loop of `hybridsim run`, rows kept instead of written).
#[pyfunction]
#[pyo3(signature = (model, lab_records = false, specimens = None))]
fn run_memory(
    py: Python<'_>,
    model: &PyModel,
    lab_records: bool,
    specimens: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyRunResult> {
    let (m, connector) = with_specimens(&model.loaded, specimens)?;
    let opts = MemoryOptions {
        lab_records,
        connector,
    };
    let run = py.detach(move || {
        let abort = AtomicBool::new(false);
        hybridsim_io::memory::run_in_memory(&m, &abort, &opts)
    });
    Ok(PyRunResult {
        run: run.map_err(model_err)?,
    })
}

/// Run a model into a results folder: `hybridsim run`'s code path
/// ([`hybridsim_io::run_to_folder_with`]); `specimens` as in [`run_memory`]. Returns
/// `(status, steps, rows, error)`.
#[pyfunction]
#[pyo3(signature = (model, folder, overwrite = false, specimens = None))]
fn run_folder(
    py: Python<'_>,
    model: &PyModel,
    folder: PathBuf,
    overwrite: bool,
    specimens: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, u64, u64, Option<String>)> {
    let (m, connector) = with_specimens(&model.loaded, specimens)?;
    let mut loaded = (*model.loaded).clone();
    loaded.model = m;
    let report = py.detach(move || {
        let opts = hybridsim_io::RunOptions {
            overwrite,
            connector,
            ..Default::default()
        };
        let progress = std::sync::atomic::AtomicU64::new(0);
        let abort = AtomicBool::new(false);
        hybridsim_io::run_to_folder_with(&loaded, &folder, &progress, &abort, &opts)
    });
    let report = report.map_err(|e| match e {
        hybridsim_io::RunError::Model(m) => model_err(m),
        other => run_err(other),
    })?;
    let status = match (&report.status, &report.error) {
        (EndState::Completed, Some(_)) => "failed".to_string(),
        (s, _) => s.status().to_string(),
    };
    let error = match (report.error, end_error(&report.status)) {
        (Some(e), _) => Some(e),
        (None, f) => f,
    };
    Ok((status, report.steps, report.rows, error))
}

/// Read a CSV of numbers with a header line (a results folder's `results.csv`, `lab.csv`)
/// exactly as written: `(headers, n_rows, f64 bytes)`.
#[pyfunction]
fn read_csv<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<(Vec<String>, usize, Bound<'py, PyBytes>)> {
    let text =
        std::fs::read_to_string(&path).map_err(|e| run_err(format!("{}: {e}", path.display())))?;
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_string)
        .collect();
    let mut data = Vec::new();
    let mut rows = 0;
    for (i, line) in lines.filter(|l| !l.is_empty()).enumerate() {
        let before = data.len();
        for x in line.split(',') {
            data.push(
                x.trim().parse::<f64>().map_err(|e| {
                    run_err(format!("{}: line {}: `{x}`: {e}", path.display(), i + 2))
                })?,
            );
        }
        if data.len() - before != header.len() {
            return Err(run_err(format!(
                "{}: line {}: {} values for {} columns",
                path.display(),
                i + 2,
                data.len() - before,
                header.len()
            )));
        }
        rows += 1;
    }
    Ok((header, rows, f64_bytes(py, &data)))
}

/// Run many variants of a model in memory in parallel (rayon, `jobs` threads, all cores by
/// default): `variants` is a list of override mappings. Each variant equals a single run of
/// the overridden model bit for bit.
#[pyfunction]
#[pyo3(signature = (model, variants, jobs = None, lab_records = false))]
fn batch_memory(
    py: Python<'_>,
    model: &PyModel,
    variants: &Bound<'_, PyAny>,
    jobs: Option<usize>,
    lab_records: bool,
) -> PyResult<Vec<PyRunResult>> {
    let list: Vec<Vec<Override>> = variants
        .try_iter()?
        .map(|v| overrides(&v?))
        .collect::<PyResult<_>>()?;
    let base = model.loaded.clone();
    let runs = py.detach(move || -> Result<Vec<MemoryRun>, String> {
        let loaded = sweep::variants_parallel(&base, &list, jobs)?;
        let opts = MemoryOptions {
            lab_records,
            connector: None,
        };
        let abort = AtomicBool::new(false);
        let runs = sweep::parallel_map(loaded.len(), jobs, |i| {
            hybridsim_io::memory::run_in_memory(&loaded[i].model, &abort, &opts)
                .map_err(|e| format!("variant {i}: {e}"))
        })?;
        runs.into_iter().collect()
    });
    Ok(runs
        .map_err(model_err)?
        .into_iter()
        .map(|run| PyRunResult { run })
        .collect())
}

/// Run many variants into `folder/variant-NNNN` (the code path of `hybridsim run`) in
/// parallel and write `folder/summary.csv` (`hybridsim sweep`). Returns the summary rows as
/// `(index, folder, status, steps, rows, wall_seconds, error)`.
#[pyfunction]
#[pyo3(signature = (model, variants, folder, jobs = None, overwrite = false))]
#[allow(clippy::type_complexity)]
fn batch_folder(
    py: Python<'_>,
    model: &PyModel,
    variants: &Bound<'_, PyAny>,
    folder: PathBuf,
    jobs: Option<usize>,
    overwrite: bool,
) -> PyResult<Vec<(usize, PathBuf, String, u64, u64, f64, Option<String>)>> {
    let list: Vec<Vec<Override>> = variants
        .try_iter()?
        .map(|v| overrides(&v?))
        .collect::<PyResult<_>>()?;
    let base = model.loaded.clone();
    let rows = py.detach(move || {
        let opts = hybridsim_io::RunOptions {
            overwrite,
            ..Default::default()
        };
        sweep::run_sweep(&base, &list, &folder, jobs, &opts)
    });
    Ok(rows
        .map_err(run_err)?
        .into_iter()
        .map(|r| {
            (
                r.index,
                r.folder,
                r.status,
                r.steps,
                r.rows,
                r.wall_seconds,
                r.error,
            )
        })
        .collect())
}

struct SimInner {
    integ: Box<dyn TimeIntegrator>,
    recorder: Recorder,
    row: Vec<f64>,
    n_steps: u64,
    divergence: Option<hybridsim::physical::safety::DivergenceMonitor>,
    lab_records: bool,
    lab: Vec<(usize, Vec<f64>)>,
    ended: Option<EndState>,
    /// Online model updating of `[updating]`, applied after every step as in a run.
    updating: Option<hybridsim::online_updating::OnlineUpdating>,
}

impl SimInner {
    fn drain(&mut self) {
        let keep = self.lab_records;
        let lab = &mut self.lab;
        self.integ.for_each_lab(&mut |k, l| {
            l.drain_lab(&mut |r: &[f64]| {
                if keep {
                    if let Some((_, buf)) = lab.iter_mut().find(|(p, _)| *p == k) {
                        buf.extend_from_slice(r);
                    }
                }
            });
        });
    }

    /// The trip policy of the run loop, then the paced ramp-down (or hold).
    fn stop(&mut self, fault: Fault) -> EndState {
        let state = hybridsim::runner::trip(self.integ.as_mut(), fault);
        self.drain();
        if state != EndState::Completed {
            loop {
                let mut more = false;
                self.integ
                    .for_each_lab(&mut |_, lab| more |= lab.ramp_tick());
                self.drain();
                if !more {
                    break;
                }
            }
        }
        self.ended = Some(state.clone());
        state
    }

    fn step(&mut self) -> Result<(), String> {
        if let Some(end) = &self.ended {
            return Err(format!(
                "the simulation has ended ({}){}",
                end.status(),
                end_error(end).map(|e| format!(": {e}")).unwrap_or_default()
            ));
        }
        if self.integ.steps_taken() >= self.n_steps {
            return Err(format!(
                "the analysis is complete ({} steps of [analysis] duration)",
                self.n_steps
            ));
        }
        if let Err(e) = self.integ.step() {
            let end = self.stop(Fault::Step(e));
            return Err(end_error_with(&end, self.integ.as_ref()).unwrap_or_default());
        }
        if let Some(u) = self.updating.as_mut() {
            u.after_step(self.integ.as_mut());
        }
        self.drain();
        if let Some(m) = &self.divergence {
            if let Some(value) = m.observe_force(self.integ.multipliers()) {
                let bound = m.settings().force;
                let end = self.stop(Fault::Divergence { value, bound });
                return Err(end_error(&end).unwrap_or_default());
            }
        }
        Ok(())
    }
}

/// A simulation advanced one coarse step at a time from Python.
#[pyclass(module = "hybridsim", name = "Simulation")]
struct PySimulation {
    inner: Mutex<SimInner>,
    columns: Vec<String>,
}

impl PySimulation {
    fn lock(&self) -> std::sync::MutexGuard<'_, SimInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PySimulation {
    /// Build the integrator of `model` (a laboratory measures its specimen at rest);
    /// `specimens` maps physical substructures to Python objects that play them.
    #[new]
    #[pyo3(signature = (model, specimens = None, lab_records = false))]
    fn new(
        py: Python<'_>,
        model: &PyModel,
        specimens: Option<&Bound<'_, PyDict>>,
        lab_records: bool,
    ) -> PyResult<Self> {
        let (m, connector) = with_specimens(&model.loaded, specimens)?;
        let inner = py.detach(move || -> Result<SimInner, hybridsim::ModelError> {
            let mut integ = hybridsim::integrators::build_with(&m, connector.as_deref())?;
            let updating = hybridsim::online_updating::OnlineUpdating::new(
                &m,
                integ.as_mut(),
                m.analysis.n_steps(),
            )?;
            let recorder = Recorder::new(&m, integ.as_ref());
            let ncol = recorder.n_columns();
            let lab = integ
                .partitions()
                .iter()
                .enumerate()
                .filter(|(_, p)| p.lab().is_some_and(|l| !l.lab_columns().is_empty()))
                .map(|(k, _)| (k, Vec::new()))
                .collect();
            Ok(SimInner {
                integ,
                recorder,
                row: vec![0.0; ncol],
                n_steps: m.analysis.n_steps(),
                divergence: m.lab.as_ref().map(|l| {
                    hybridsim::physical::safety::DivergenceMonitor::new(l.safety.divergence)
                }),
                lab_records,
                lab,
                ended: None,
                updating,
            })
        });
        let inner = inner.map_err(model_err)?;
        let columns = inner.recorder.headers(inner.integ.as_ref());
        let sim = Self {
            inner: Mutex::new(inner),
            columns,
        };
        // A laboratory tripped at rest cannot start.
        let tripped = sim.lock().integ.partitions().iter().find_map(|p| {
            p.lab().and_then(|l| l.safety_summary().event).map(|e| {
                format!(
                    "physical substructure `{}`: the safety layer tripped at rest: {e}",
                    p.state.name
                )
            })
        });
        if let Some(t) = tripped {
            return Err(run_err(t));
        }
        Ok(sim)
    }

    /// Advance `n` coarse steps (default 1) with the GIL released; raises `RunError` when a
    /// step fails or the safety layer stops the test (the laboratories are then safe: tripped,
    /// ramped down or holding).
    #[pyo3(signature = (n = 1))]
    fn step(&self, py: Python<'_>, n: u64) -> PyResult<()> {
        py.detach(|| {
            let mut inner = self.lock();
            for _ in 0..n {
                inner.step()?;
            }
            Ok::<_, String>(())
        })
        .map_err(run_err)
    }

    /// Stop the test as an operator abort would (trip, ramp down or hold).
    fn abort(&self, py: Python<'_>) -> String {
        py.detach(|| {
            let mut inner = self.lock();
            if inner.ended.is_none() {
                inner.stop(Fault::Abort);
            }
            inner
                .ended
                .as_ref()
                .map(|e| e.status())
                .unwrap_or("")
                .to_string()
        })
    }

    /// Current time (model time unit).
    #[getter]
    fn time(&self) -> f64 {
        self.lock().integ.time()
    }
    /// Completed coarse steps.
    #[getter]
    fn steps(&self) -> u64 {
        self.lock().integ.steps_taken()
    }
    /// Coarse steps of the whole analysis.
    #[getter]
    fn n_steps(&self) -> u64 {
        self.lock().n_steps
    }
    /// `running`, or how the simulation ended.
    #[getter]
    fn status(&self) -> String {
        self.lock()
            .ended
            .as_ref()
            .map(|e| e.status().to_string())
            .unwrap_or_else(|| "running".into())
    }
    /// Recorded column headers `name[unit]` (those of `results.csv`).
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }
    /// The current values of every recorded column (one `results.csv` row).
    fn record(&self) -> Vec<f64> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        inner.recorder.record(inner.integ.as_mut(), &mut inner.row);
        inner.row.clone()
    }
    /// The interface multipliers Λ (force the numerical side exerts on the physical side).
    #[getter]
    fn multipliers(&self) -> Vec<f64> {
        self.lock().integ.multipliers().to_vec()
    }
    /// Every multiplier: `(dof, kind, plus, minus)` (`plus`/`minus`: the sides that get `+Λ`
    /// and `−Λ`).
    fn interface(&self) -> Vec<(String, String, String, String)> {
        self.lock()
            .integ
            .multiplier_info()
            .into_iter()
            .map(|i| {
                (
                    format!("{}.{}", i.dof.node, i.dof.dof),
                    i.kind.to_string(),
                    i.plus.clone(),
                    i.minus.clone(),
                )
            })
            .collect()
    }
    /// Names and DOFs of the partitions: `[(name, physical, ["node.dof", …]), …]`.
    fn partitions(&self) -> Vec<(String, bool, Vec<String>)> {
        self.lock()
            .integ
            .partitions()
            .iter()
            .map(|p| {
                (
                    p.state.name.clone(),
                    p.state.physical,
                    p.state
                        .dofs
                        .iter()
                        .map(|d| format!("{}.{}", d.node, d.dof))
                        .collect(),
                )
            })
            .collect()
    }
    /// Displacements of partition `p`'s DOFs (order of `partitions()`).
    fn displacements(&self, p: usize) -> PyResult<Vec<f64>> {
        let inner = self.lock();
        let parts = inner.integ.partitions();
        let part = parts
            .get(p)
            .ok_or_else(|| PyValueError::new_err(format!("no partition {p}")))?;
        let n = part.state.n_dofs();
        Ok(inner.integ.state(p)[..n].to_vec())
    }
    /// Velocities of partition `p`'s DOFs.
    fn velocities(&self, p: usize) -> PyResult<Vec<f64>> {
        let inner = self.lock();
        let parts = inner.integ.partitions();
        let part = parts
            .get(p)
            .ok_or_else(|| PyValueError::new_err(format!("no partition {p}")))?;
        let n = part.state.n_dofs();
        Ok(inner.integ.state(p)[n..2 * n].to_vec())
    }
    /// The integrator's whole state (a checkpoint), to be given back to `set_state`.
    fn get_state(&self) -> Vec<f64> {
        let inner = self.lock();
        let mut out = vec![0.0; inner.integ.state_len()];
        inner.integ.export_state(&mut out);
        out
    }
    /// Restore a state from `get_state` (same model; the laboratories are not moved).
    fn set_state(&self, state: Vec<f64>) -> PyResult<()> {
        let mut inner = self.lock();
        if state.len() != inner.integ.state_len() {
            return Err(PyValueError::new_err(format!(
                "a state of {} values, expected {}",
                state.len(),
                inner.integ.state_len()
            )));
        }
        inner.integ.import_state(&state);
        Ok(())
    }
    /// Hold an external nodal force `value` (model force unit) on DOF `dof` of node `node`
    /// from the next step on, until changed (0 removes it): added to the model's loads and
    /// the seismic load. A DOF shared by several substructures (an interface DOF) needs
    /// `substructure`, the one that carries the force. Raises `ValueError` for an unknown
    /// node, DOF or substructure or a non-finite value, and for a scheme that does not take
    /// external loads.
    #[pyo3(signature = (node, dof, value, substructure = None))]
    fn set_load(
        &self,
        node: i64,
        dof: &str,
        value: f64,
        substructure: Option<&str>,
    ) -> PyResult<()> {
        let mut inner = self.lock();
        let found: Vec<(usize, usize, String)> = inner
            .integ
            .partitions()
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                let i = p
                    .state
                    .dofs
                    .iter()
                    .position(|d| d.node == node && d.dof == dof)?;
                Some((k, i, p.state.name.clone()))
            })
            .filter(|(_, _, name)| substructure.is_none_or(|s| s == name))
            .collect();
        let (k, i) = match found.as_slice() {
            [(k, i, _)] => (*k, *i),
            [] => {
                return Err(PyValueError::new_err(match substructure {
                    Some(s) => format!("set_load: substructure `{s}` has no node {node} dof {dof}"),
                    None => format!("set_load: no substructure has node {node} dof {dof}"),
                }))
            }
            many => {
                let names: Vec<&str> = many.iter().map(|(_, _, n)| n.as_str()).collect();
                return Err(PyValueError::new_err(format!(
                    "set_load: node {node} dof {dof} is an interface DOF of {}: name the \
                     substructure that carries the force (substructure=…)",
                    names.join(" and ")
                )));
            }
        };
        inner
            .integ
            .set_external_load(k, i, value)
            .map_err(|e| PyValueError::new_err(format!("set_load: {e}")))
    }

    /// The external nodal forces held by `set_load`: `[(substructure, "node.dof", value), …]`
    /// (non-zero ones).
    fn loads(&self) -> Vec<(String, String, f64)> {
        let inner = self.lock();
        let mut out = Vec::new();
        for p in inner.integ.partitions() {
            for (d, f) in p.state.dofs.iter().zip(p.state.external_loads()) {
                if *f != 0.0 {
                    out.push((p.state.name.clone(), format!("{}.{}", d.node, d.dof), *f));
                }
            }
        }
        out
    }

    /// Impose the interface forces Λ of the next step. Raises `ValueError` with the reason
    /// for every scheme so far (see `TimeIntegrator::override_multipliers`).
    fn set_multipliers(&self, values: Vec<f64>) -> PyResult<()> {
        let n = self.lock().integ.multipliers().len();
        if !values.is_empty() && values.len() != n {
            return Err(PyValueError::new_err(format!(
                "set_multipliers: {} values, the interface has {n} multipliers",
                values.len()
            )));
        }
        self.lock()
            .integ
            .override_multipliers(&values)
            .map_err(|e| PyValueError::new_err(format!("set_multipliers: {e}")))
    }

    /// Controller-rate laboratory records kept so far (with `lab_records=True`):
    /// `[(partition, bytes), …]`.
    fn lab_bytes<'py>(&self, py: Python<'py>) -> Vec<(usize, Bound<'py, PyBytes>)> {
        self.lock()
            .lab
            .iter()
            .map(|(k, d)| (*k, f64_bytes(py, d)))
            .collect()
    }
}

/// Impose a deformation history on one element of a model through its displacement-driven
/// form ([`hybridsim::elements::ElementDriver`], as `hybridsim cyclic`): `time`, `deformation`
/// and `velocity` samples (node 1 moves, node 2 of a two-node element held). Returns the
/// headers of `hybridsim cyclic`'s results.csv, the row count, the values and the failure
/// (`None` when every sample was driven).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn cyclic<'py>(
    py: Python<'py>,
    model: &PyModel,
    element: &str,
    time: Vec<f64>,
    deformation: Vec<f64>,
    velocity: Vec<f64>,
) -> PyResult<(Vec<String>, usize, Bound<'py, PyBytes>, Option<String>)> {
    let m = &model.loaded.model;
    let source = model.loaded.path.display().to_string();
    if time.len() != deformation.len() || time.len() != velocity.len() || time.is_empty() {
        return Err(PyValueError::new_err(format!(
            "time, deformation and velocity need the same, non-zero length ({}, {}, {})",
            time.len(),
            deformation.len(),
            velocity.len()
        )));
    }
    if time.iter().any(|t| !t.is_finite()) || time.windows(2).any(|w| w[1] <= w[0]) {
        return Err(PyValueError::new_err("time must be finite and increasing"));
    }
    let Some(inst) = m.elements.iter().find(|e| *e.name == *element) else {
        let names: Vec<&str> = m
            .elements
            .iter()
            .filter(|e| e.element.kind() != "mass")
            .map(|e| &*e.name)
            .collect();
        return Err(model_err(format!(
            "{source}: no element named `{element}` (elements: {})",
            names.join(", ")
        )));
    };
    let el = &inst.element;
    let n = el.dofs().len();
    if !matches!(n, 1 | 2) || el.deformation(&vec![0.0; n]).is_none() {
        return Err(model_err(format!(
            "{source}: element `{element}` ({}) has no single deformation: the driver takes \
             one- or two-node elements",
            el.kind()
        )));
    }
    let mut driver = hybridsim::elements::ElementDriver::from_shared(el, &inst.initial_state)
        .map_err(|e| model_err(format!("{source}: element `{element}`: {e}")))?;
    let units = &m.units;
    let dof = el.dofs()[0].dof;
    let mut header = vec![
        format!("time[{}]", units.time),
        format!("deformation.{element}[{}]", units.displacement_unit(&dof)),
        format!("velocity.{element}[{}]", units.velocity_unit(&dof)),
    ];
    for d in el.dofs() {
        header.push(format!(
            "force.{element}.{}.{}[{}]",
            d.node,
            d.dof,
            units.force_unit(&d.dof)
        ));
    }
    for (i, s) in el.state_names().iter().enumerate() {
        let unit = hybridsim::output::unit_of(units, el.state_quantity(i), &dof);
        header.push(format!("state.{element}.{s}[{unit}]"));
    }
    header.push(format!(
        "state.{element}.absorbed_energy[{}]",
        units.energy_unit()
    ));
    header.push(format!(
        "state.{element}.dissipated[{}]",
        units.energy_unit()
    ));
    let (data, rows, failure) = py.detach(|| {
        let mut u = vec![0.0; n];
        let mut v = vec![0.0; n];
        let mut data = Vec::with_capacity(time.len() * header.len());
        let mut rows = 0usize;
        let mut failure = None;
        for k in 0..time.len() {
            u[0] = deformation[k];
            v[0] = velocity[k];
            let dt = if k == 0 { 0.0 } else { time[k] - time[k - 1] };
            if let Err(e) = driver.set_trial(dt, &u, &v) {
                failure = Some(format!("at t = {}: {e}", time[k]));
                break;
            }
            driver.commit();
            data.push(time[k]);
            data.push(driver.deformation().unwrap_or(f64::NAN));
            data.push(el.deformation(&v).unwrap_or(f64::NAN));
            data.extend_from_slice(driver.force());
            data.extend_from_slice(driver.states());
            data.push(driver.work());
            data.push(driver.dissipated_energy());
            rows += 1;
        }
        (data, rows, failure)
    });
    Ok((header, rows, f64_bytes(py, &data), failure))
}

/// `analyze spectral`: the amplification matrix of the model's scheme over Ω = ω_ref Δt
/// ([`hybridsim::analysis::spectral_sweep`]). Returns a dict of lists.
#[pyfunction]
#[pyo3(signature = (model, omegas, mode = 1, omega = None, estimate_ratio = None, delay_ticks = 0))]
fn analyze_spectral<'py>(
    py: Python<'py>,
    model: &PyModel,
    omegas: Vec<f64>,
    mode: usize,
    omega: Option<f64>,
    estimate_ratio: Option<f64>,
    delay_ticks: usize,
) -> PyResult<Bound<'py, PyDict>> {
    use hybridsim::analysis::{FrequencyReference, SpectralOptions};
    let opts = SpectralOptions {
        omegas,
        reference: match omega {
            Some(w) => FrequencyReference::Omega(w),
            None => FrequencyReference::Mode(mode),
        },
        estimate_ratio,
        delay_ticks,
        ..SpectralOptions::default()
    };
    let m = model.loaded.model.clone();
    let r = py
        .detach(move || hybridsim::analysis::spectral_sweep(&m, &opts))
        .map_err(model_err)?;
    let d = PyDict::new(py);
    d.set_item("scheme", &r.scheme)?;
    d.set_item("rho_inf", r.rho_inf)?;
    d.set_item("subcycles", r.subcycles)?;
    d.set_item("reference_omega", r.reference_omega)?;
    d.set_item("reference", &r.reference_label)?;
    d.set_item("mode_omegas", &r.mode_omegas)?;
    let pts = &r.points;
    d.set_item("omega", pts.iter().map(|p| p.omega).collect::<Vec<_>>())?;
    d.set_item("dt", pts.iter().map(|p| p.dt).collect::<Vec<_>>())?;
    d.set_item("rho", pts.iter().map(|p| p.rho).collect::<Vec<_>>())?;
    d.set_item(
        "rho_without_drift",
        pts.iter().map(|p| p.rho_without_drift).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "drift_modes",
        pts.iter().map(|p| p.drift_modes).collect::<Vec<_>>(),
    )?;
    d.set_item("stable", pts.iter().map(|p| p.stable).collect::<Vec<_>>())?;
    let first = |f: fn(&hybridsim::analysis::spectral::ModalRoot) -> f64| {
        pts.iter()
            .map(|p| {
                p.modal
                    .iter()
                    .find(|m| m.mode == mode)
                    .map(f)
                    .unwrap_or(f64::NAN)
            })
            .collect::<Vec<_>>()
    };
    d.set_item("omega_bar", first(|m| m.omega_bar))?;
    d.set_item("zeta_bar", first(|m| m.zeta_bar))?;
    d.set_item("frequency_error", first(|m| m.frequency_error))?;
    Ok(d)
}

/// `analyze convergence`: global error at `until` for `levels` halvings of `dt`
/// ([`hybridsim::analysis::convergence`]); `reference`: `auto`, `exact` or `fine`.
#[pyfunction]
#[pyo3(signature = (model, dt = None, levels = 4, until = None, reference = "auto", fine_factor = 64))]
fn analyze_convergence<'py>(
    py: Python<'py>,
    model: &PyModel,
    dt: Option<f64>,
    levels: usize,
    until: Option<f64>,
    reference: &str,
    fine_factor: usize,
) -> PyResult<Bound<'py, PyDict>> {
    use hybridsim::analysis::{ConvergenceOptions, Reference};
    let m = model.loaded.model.clone();
    let dt0 = dt.unwrap_or(m.analysis.time_step);
    if !(dt0.is_finite() && dt0 > 0.0) || levels < 2 {
        return Err(PyValueError::new_err(
            "dt must be a positive time step and levels at least 2",
        ));
    }
    let mut opts = ConvergenceOptions::halving(dt0, levels, until.unwrap_or(10.0 * dt0));
    opts.reference = match reference {
        "auto" => Reference::Auto,
        "exact" => Reference::Exact,
        "fine" => Reference::Fine,
        other => {
            return Err(PyValueError::new_err(format!(
                "reference `{other}`: expected `auto`, `exact` or `fine`"
            )))
        }
    };
    opts.fine_factor = fine_factor.max(1);
    let r = py
        .detach(move || hybridsim::analysis::convergence(&m, &opts))
        .map_err(model_err)?;
    let d = PyDict::new(py);
    d.set_item("scheme", &r.scheme)?;
    d.set_item("until", r.until)?;
    d.set_item("reference", &r.reference)?;
    d.set_item("dt", r.errors.iter().map(|e| e.0).collect::<Vec<_>>())?;
    d.set_item("error", r.errors.iter().map(|e| e.1).collect::<Vec<_>>())?;
    d.set_item("reference_scale", r.reference_scale)?;
    d.set_item("slopes", &r.slopes)?;
    d.set_item("fitted_slope", r.fitted_slope)?;
    d.set_item("expected_order", r.expected_order)?;
    d.set_item("label", &r.label)?;
    Ok(d)
}

/// `analyze energy`: total mechanical energy of every partition every `every` steps
/// ([`hybridsim::analysis::energy_history`]).
#[pyfunction]
#[pyo3(signature = (model, every = 1))]
fn analyze_energy<'py>(
    py: Python<'py>,
    model: &PyModel,
    every: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let m = model.loaded.model.clone();
    let r = py
        .detach(move || hybridsim::analysis::energy_history(&m, every))
        .map_err(model_err)?;
    let d = PyDict::new(py);
    d.set_item("scheme", &r.scheme)?;
    d.set_item("partitions", &r.partitions)?;
    d.set_item("time", &r.times)?;
    d.set_item("partition_energy", &r.partition_energy)?;
    d.set_item("total", &r.total)?;
    d.set_item("forced", r.forced)?;
    Ok(d)
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ModelError", m.py().get_type::<ModelError>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyModel>()?;
    m.add_class::<PyRunResult>()?;
    m.add_class::<PySimulation>()?;
    m.add_function(wrap_pyfunction!(run_memory, m)?)?;
    m.add_function(wrap_pyfunction!(run_folder, m)?)?;
    m.add_function(wrap_pyfunction!(read_csv, m)?)?;
    m.add_function(wrap_pyfunction!(batch_memory, m)?)?;
    m.add_function(wrap_pyfunction!(batch_folder, m)?)?;
    m.add_function(wrap_pyfunction!(cyclic, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_spectral, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_convergence, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_energy, m)?)?;
    Ok(())
}
