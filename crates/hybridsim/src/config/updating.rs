//! `[updating]`: online model updating with an unscented Kalman filter (Abbiati et al. 2020,
//! §2.1). Every problem is reported at `updating.KEY`.
//!
//! ```toml
//! [updating]
//! identify = "pier_tested"           # the identified element (one- or two-node)
//! parameters = ["A"]                 # its parameters to identify
//! prior_mean = [1.5e7]               # default: the element's own values
//! prior_sd = [5e6]
//! parameter_noise_sd = [0.0]         # random walk per update, default 0
//! state_noise_sd = 10.0              # model states, initial and per update
//! measurement_sd = 2e3               # measured interface force
//! bounds = [[1e6, 1e8]]              # default: [mean/100, mean·100] for positive means
//! receivers = ["pier_numerical"]     # numerical elements that receive the estimates
//! period = 1                         # coarse steps between updates
//! substeps = 10                      # Runge–Kutta substeps of the model per update
//! sigma_points = "paper"             # or "scaled" with alpha, beta, kappa (1, 2, 0)
//! freeze_above_pga = 4.905           # model acceleration units; optional
//! freeze_at_bound = false
//! refactorize = "never"              # or "on_update": rebuild D^N (and H) for new values
//! ```

use crate::error::Diagnostics;
use crate::model::updating::{Refactorize, UpdatingConfig};
use crate::model::{ElementInstance, Role};
use crate::updating::{ElementModel, IdentificationSettings, SigmaPoints};

pub(super) const KEYS: &[&str] = &[
    "identify",
    "parameters",
    "prior_mean",
    "prior_sd",
    "parameter_noise_sd",
    "state_noise_sd",
    "measurement_sd",
    "bounds",
    "receivers",
    "period",
    "substeps",
    "sigma_points",
    "alpha",
    "beta",
    "kappa",
    "freeze_above_pga",
    "freeze_at_bound",
    "refactorize",
];

fn field(key: &str) -> String {
    format!("updating.{key}")
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Float(x) => Some(*x),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

fn read_number(t: &toml::Table, key: &str, diag: &mut Diagnostics) -> Option<Option<f64>> {
    match t.get(key) {
        None => Some(None),
        Some(v) => match number(v).filter(|x| x.is_finite()) {
            Some(x) => Some(Some(x)),
            None => {
                diag.push(field(key), format!("must be a finite number, found {v}"));
                None
            }
        },
    }
}

fn read_numbers(t: &toml::Table, key: &str, diag: &mut Diagnostics) -> Option<Option<Vec<f64>>> {
    let Some(v) = t.get(key) else {
        return Some(None);
    };
    let parsed: Option<Vec<f64>> = v.as_array().and_then(|a| {
        a.iter()
            .map(|x| number(x).filter(|x| x.is_finite()))
            .collect()
    });
    match parsed {
        Some(p) => Some(Some(p)),
        None => {
            diag.push(
                field(key),
                format!("must be an array of finite numbers, found {v}"),
            );
            None
        }
    }
}

fn read_strings(t: &toml::Table, key: &str, diag: &mut Diagnostics) -> Option<Vec<String>> {
    let v = t.get(key)?;
    let parsed: Option<Vec<String>> = v
        .as_array()
        .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect());
    if parsed.is_none() {
        diag.push(
            field(key),
            format!("must be an array of strings, found {v}"),
        );
    }
    parsed
}

fn read_count(t: &toml::Table, key: &str, default: i64, max: i64, diag: &mut Diagnostics) -> i64 {
    match t.get(key) {
        None => default,
        Some(toml::Value::Integer(i)) if (1..=max).contains(i) => *i,
        Some(v) => {
            diag.push(
                field(key),
                format!("must be an integer in 1..={max}, found {v}"),
            );
            default
        }
    }
}

/// `[updating]` against the validated elements.
pub(super) fn updating(
    value: Option<&toml::Value>,
    elements: &[ElementInstance],
    diag: &mut Diagnostics,
) -> Option<UpdatingConfig> {
    let value = value?;
    let Some(t) = value.as_table() else {
        diag.push("updating", "must be a table `[updating]`");
        return None;
    };
    let before = diag.len();
    for k in t.keys() {
        if !KEYS.contains(&k.as_str()) {
            diag.push(
                field(k),
                format!("unknown key (known: {})", KEYS.join(", ")),
            );
        }
    }
    let find = |name: &str| elements.iter().position(|e| *e.name == *name);
    // The identified element and its parameters.
    let identify = match t.get("identify") {
        Some(toml::Value::String(s)) => match find(s) {
            Some(i) => Some(i),
            None => {
                diag.push(field("identify"), format!("no element is named `{s}`"));
                None
            }
        },
        Some(v) => {
            diag.push(
                field("identify"),
                format!("must be an element name, found {v}"),
            );
            None
        }
        None => {
            diag.push(
                field("identify"),
                "is missing (the identified element's name)",
            );
            None
        }
    };
    let parameters = match read_strings(t, "parameters", diag) {
        Some(p) if !p.is_empty() => Some(p),
        Some(_) => {
            diag.push(field("parameters"), "must name at least one parameter");
            None
        }
        None => {
            if !t.contains_key("parameters") {
                diag.push(
                    field("parameters"),
                    "is missing (the parameters to identify)",
                );
            }
            None
        }
    };
    let (Some(identify), Some(parameters)) = (identify, parameters) else {
        return None;
    };
    let element = &elements[identify].element;
    let names: Vec<&str> = parameters.iter().map(String::as_str).collect();
    if let Err(e) = ElementModel::new(element.clone_box(), &names, 1) {
        diag.push(field("parameters"), e);
        return None;
    }
    let np = parameters.len();
    let own: Vec<f64> = {
        let all = element.parameters();
        names
            .iter()
            .map(|n| all.iter().find(|(k, _)| k == n).map_or(f64::NAN, |p| p.1))
            .collect()
    };
    let len_check = |key: &str, v: &[f64], diag: &mut Diagnostics| -> bool {
        if v.len() != np {
            diag.push(
                field(key),
                format!("has {} entries for {np} parameters", v.len()),
            );
            return false;
        }
        true
    };
    let prior_mean = match read_numbers(t, "prior_mean", diag) {
        Some(Some(v)) if len_check("prior_mean", &v, diag) => v,
        Some(None) => own.clone(),
        _ => return None,
    };
    let prior_sd = match read_numbers(t, "prior_sd", diag) {
        Some(Some(v)) if len_check("prior_sd", &v, diag) => v,
        Some(None) => {
            diag.push(
                field("prior_sd"),
                "is missing (one standard deviation per parameter)",
            );
            return None;
        }
        _ => return None,
    };
    if let Some(i) = prior_sd.iter().position(|&x| x <= 0.0) {
        diag.push(
            field("prior_sd"),
            format!("must be > 0, found {} for `{}`", prior_sd[i], names[i]),
        );
    }
    let parameter_noise_sd = match read_numbers(t, "parameter_noise_sd", diag) {
        Some(Some(v)) if len_check("parameter_noise_sd", &v, diag) => v,
        Some(None) => vec![0.0; np],
        _ => return None,
    };
    if let Some(i) = parameter_noise_sd.iter().position(|&x| x < 0.0) {
        diag.push(
            field("parameter_noise_sd"),
            format!(
                "must be ≥ 0, found {} for `{}`",
                parameter_noise_sd[i], names[i]
            ),
        );
    }
    let positive = |key: &str, required: bool, diag: &mut Diagnostics| -> Option<f64> {
        match read_number(t, key, diag)? {
            Some(x) if x > 0.0 => Some(x),
            Some(x) => {
                diag.push(field(key), format!("must be > 0, found {x}"));
                None
            }
            None => {
                if required {
                    diag.push(field(key), "is missing");
                }
                None
            }
        }
    };
    let state_noise_sd = positive("state_noise_sd", true, diag);
    let measurement_sd = positive("measurement_sd", true, diag);
    let freeze_above_pga = positive("freeze_above_pga", false, diag);
    let bounds = match t.get("bounds") {
        None => {
            let mut b = Vec::with_capacity(np);
            for (i, &m) in prior_mean.iter().enumerate() {
                if m > 0.0 {
                    b.push((m / 100.0, m * 100.0));
                } else {
                    diag.push(
                        field("bounds"),
                        format!(
                            "is needed for `{}` (its prior mean {m} is not positive)",
                            names[i]
                        ),
                    );
                }
            }
            b
        }
        Some(v) => {
            let parsed: Option<Vec<(f64, f64)>> = v.as_array().and_then(|a| {
                a.iter()
                    .map(|p| {
                        let p = p.as_array()?;
                        match p.as_slice() {
                            [lo, hi] => Some((number(lo)?, number(hi)?)),
                            _ => None,
                        }
                    })
                    .collect()
            });
            match parsed {
                Some(b) if b.len() == np => b,
                Some(b) => {
                    diag.push(
                        field("bounds"),
                        format!("has {} pairs for {np} parameters", b.len()),
                    );
                    Vec::new()
                }
                None => {
                    diag.push(
                        field("bounds"),
                        format!("must be an array of [lower, upper] pairs, found {v}"),
                    );
                    Vec::new()
                }
            }
        }
    };
    for (i, &(lo, hi)) in bounds.iter().enumerate() {
        let m = prior_mean[i];
        if !(lo.is_finite() && hi.is_finite() && lo < hi && lo <= m && m <= hi) {
            diag.push(
                field("bounds"),
                format!(
                    "[{lo}, {hi}] of `{}` must be finite, increasing and contain the prior mean {m}",
                    names[i]
                ),
            );
            continue;
        }
        // The element must accept every value inside the bounds (checked at both ends).
        let mut probe = element.clone_box();
        for x in [lo, hi] {
            if let Err(e) = probe.set_parameter(names[i], x) {
                diag.push(
                    field("bounds"),
                    format!("`{}` = {x} is refused by the element: {e}", names[i]),
                );
            }
        }
    }
    let receivers = match read_strings(t, "receivers", diag) {
        None => Vec::new(),
        Some(list) => {
            let mut out = Vec::new();
            for name in list {
                let Some(i) = find(&name) else {
                    diag.push(field("receivers"), format!("no element is named `{name}`"));
                    continue;
                };
                if i == identify {
                    diag.push(
                        field("receivers"),
                        format!("`{name}` is the identified element itself"),
                    );
                    continue;
                }
                if elements[i].role != Role::Numerical {
                    diag.push(
                        field("receivers"),
                        format!("`{name}` is a specimen element; only numerical elements receive estimates"),
                    );
                    continue;
                }
                let mut probe = elements[i].element.clone_box();
                for (j, p) in names.iter().enumerate() {
                    if let Err(e) = probe.set_parameter(p, prior_mean[j]) {
                        diag.push(field("receivers"), format!("`{name}`: {e}"));
                    }
                }
                if out.contains(&i) {
                    diag.push(field("receivers"), format!("`{name}` is listed twice"));
                }
                out.push(i);
            }
            out
        }
    };
    let period = read_count(t, "period", 1, 1_000_000, diag) as u64;
    let substeps = read_count(t, "substeps", 10, 10_000, diag) as usize;
    let sigma_points = match t.get("sigma_points") {
        None => Some("paper"),
        Some(toml::Value::String(s)) if s == "paper" || s == "scaled" => Some(s.as_str()),
        Some(v) => {
            diag.push(
                field("sigma_points"),
                format!("must be \"paper\" (L + kappa = 3) or \"scaled\", found {v}"),
            );
            None
        }
    };
    let alpha = read_number(t, "alpha", diag).flatten();
    let beta = read_number(t, "beta", diag).flatten();
    let kappa = read_number(t, "kappa", diag).flatten();
    let sigma_points = match sigma_points {
        Some("scaled") => {
            let alpha = alpha.unwrap_or(1.0);
            if !(alpha > 0.0 && alpha <= 1.0) {
                diag.push(field("alpha"), format!("must be in (0, 1], found {alpha}"));
            }
            SigmaPoints::Scaled {
                alpha,
                beta: beta.unwrap_or(2.0),
                kappa: kappa.unwrap_or(0.0),
            }
        }
        _ => {
            for (k, v) in [("alpha", alpha), ("beta", beta), ("kappa", kappa)] {
                if v.is_some() {
                    diag.push(field(k), "applies to `sigma_points = \"scaled\"` only");
                }
            }
            SigmaPoints::Paper
        }
    };
    let freeze_at_bound = match t.get("freeze_at_bound") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(v) => {
            diag.push(
                field("freeze_at_bound"),
                format!("must be true or false, found {v}"),
            );
            false
        }
    };
    let refactorize = match t.get("refactorize") {
        None => Refactorize::Never,
        Some(toml::Value::String(s)) if s == "never" => Refactorize::Never,
        Some(toml::Value::String(s)) if s == "on_update" => Refactorize::OnUpdate,
        Some(v) => {
            diag.push(
                field("refactorize"),
                format!(
                    "must be \"never\" (keep D and H) or \"on_update\" (rebuild them when an \
                     estimate changes a receiver's tangent), found {v}"
                ),
            );
            Refactorize::Never
        }
    };
    if refactorize == Refactorize::OnUpdate && receivers.is_empty() {
        diag.push(
            field("refactorize"),
            "\"on_update\" needs `receivers` (nothing would change the matrices)",
        );
    }
    if diag.len() != before {
        return None;
    }
    let (Some(state_noise_sd), Some(measurement_sd)) = (state_noise_sd, measurement_sd) else {
        return None;
    };
    let settings = IdentificationSettings {
        prior_mean,
        prior_sd,
        parameter_noise_sd,
        state_noise_sd,
        measurement_sd,
        bounds,
        sigma_points,
    };
    // The filter itself (e.g. the scaling's L + λ > 0 for this state length).
    let model = ElementModel::new(element.clone_box(), &names, substeps).ok()?;
    if let Err(e) = crate::updating::Identification::new(model, &settings) {
        diag.push("updating", e);
        return None;
    }
    Some(UpdatingConfig {
        identify,
        parameters,
        settings,
        receivers,
        period,
        substeps,
        freeze_above_pga,
        freeze_at_bound,
        refactorize,
    })
}
