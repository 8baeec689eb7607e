//! The files of online model updating (issue 14): `updating.csv`, one row per update, and the
//! `updating` section of run.json ([`hybridsim::online_updating::OnlineUpdating`]).

use hybridsim::online_updating::{OnlineUpdating, UpdatingSummary};
use serde_json::{json, Value};
use std::path::Path;

/// The `updating` section of run.json: the identified element, where its kinematics came
/// from, the receivers, the final estimate and σ of every parameter, the number of updates
/// and of applications, the end state and, if it froze or tripped, why and when.
pub fn updating_json(s: &UpdatingSummary) -> Value {
    let finite = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    json!({
        "identified": s.identified,
        "source": s.source,
        "displacement": s.displacement,
        "velocity": "state",
        "receivers": s.receivers,
        "parameters": s.parameters.iter().map(|(name, value, sd)| json!({
            "name": name, "estimate": finite(*value), "sd": finite(*sd),
        })).collect::<Vec<_>>(),
        "period": s.period,
        "updates": s.updates,
        "applied": s.applied,
        "latency_steps": 1,
        "state": s.state.name(),
        "frozen": s.frozen.as_ref().map(|(why, t)| json!({"reason": why, "time": finite(*t)})),
        "tripped": s.tripped.as_ref().map(|(why, t)| json!({"reason": why, "time": finite(*t)})),
        "apply_error": s.apply_error,
        "records_dropped": s.dropped,
        "task_fault": s.task_fault.map(|(why, t)| json!({"reason": why, "time": finite(t)})),
        "misses": s.misses,
        "refactorize": match &s.refactorization {
            None => json!("never"),
            Some(r) => json!({
                "mode": "on_update",
                "swaps": r.swaps,
                "unchanged": r.unchanged,
                "misses": r.misses,
                "late_dropped": r.late,
                "builds": r.builds,
                "build_seconds_mean": if r.builds > 0 { json!(r.build_seconds / r.builds as f64) } else { Value::Null },
                "build_seconds_longest": r.longest_build_seconds,
                "off": r.off.as_ref().map(|(why, t)| json!({"reason": why, "time": finite(*t)})),
            }),
        },
        "file": "updating.csv",
    })
}

/// Write `updating.csv` into `folder`; the error names the file.
pub fn write_updating_csv(folder: &Path, updating: &OnlineUpdating) -> Result<(), String> {
    let path = folder.join("updating.csv");
    std::fs::write(&path, updating.csv()).map_err(|e| format!("{}: {e}", path.display()))
}
