//! Every key a model file may hold, listed from the schema types, so that the model-file
//! reference (`docs/model-reference.md`) can be checked against the parser.
//!
//! The tables read by `serde` with `deny_unknown_fields` list their keys through the error
//! `serde` reports for an unknown key (the list it expects), so a field added to a struct of
//! [`super::schema`] appears here without further work. Element kinds list `nodes`, `dof` and
//! their declared parameters (`Declared::PARAMETERS` of `elements::declare`); tables read
//! by hand list the constants their readers check against.

use super::schema::*;
use crate::elements::declare::Declared;
use crate::elements::{
    BoucWen, CubicSpring, Dashpot, ElastomericBearing, FrictionTable, LeadRubberBearing, Mostaghel,
    MrDamper, Spring, Steel01, Steel02, TripleSlidingBearing, ViscousDamper,
};
use serde::de::DeserializeOwned;

/// The keys of a `deny_unknown_fields` table type, in declaration order, read from the error
/// that `serde` reports for an unknown key (`expected one of `a`, `b`, …`).
pub fn struct_keys<T: DeserializeOwned>() -> Vec<String> {
    let mut t = toml::Table::new();
    t.insert("\u{1}not-a-key".into(), toml::Value::Integer(0));
    let Err(e) = toml::Value::Table(t).try_into::<T>() else {
        return Vec::new();
    };
    let msg = e.to_string();
    let Some(i) = msg.find("expected") else {
        return Vec::new();
    };
    msg[i..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn declared<E: Declared>() -> Vec<String> {
    ["nodes", "dof"]
        .into_iter()
        .map(str::to_string)
        .chain(E::PARAMETERS.iter().map(|p| p.name.to_string()))
        .collect()
}

/// A declared element kind's parameters: `(key, unit, default)` (unit in the model's base
/// quantities `F`, `L`, `T`; `None`: required).
pub type ParameterRow = (&'static str, &'static str, Option<f64>);

fn rows<E: Declared>() -> Vec<ParameterRow> {
    E::PARAMETERS
        .iter()
        .map(|p| (p.name, p.unit, p.default))
        .collect()
}

/// The parameters of every declared element kind, by kind name (for the model-file reference).
pub fn element_parameters() -> Vec<(&'static str, Vec<ParameterRow>)> {
    vec![
        ("spring", rows::<Spring>()),
        ("dashpot", rows::<Dashpot>()),
        ("cubic_spring", rows::<CubicSpring>()),
        ("bouc_wen", rows::<BoucWen>()),
        ("mostaghel", rows::<Mostaghel>()),
        ("sliding_bearing", rows::<TripleSlidingBearing>()),
        ("lead_rubber", rows::<LeadRubberBearing>()),
        ("mr_damper", rows::<MrDamper>()),
        ("viscous_damper", rows::<ViscousDamper>()),
        ("steel01", rows::<Steel01>()),
        ("steel02", rows::<Steel02>()),
        ("elastomeric_bearing", rows::<ElastomericBearing>()),
    ]
}

/// Every table of a model file and the keys the parser accepts in it: `(table, keys)`.
///
/// Table names are dotted paths as in error messages, with `NAME` for a name the user chooses
/// and `element.KIND` for the kind-specific keys of `[[element]]` with `type = "KIND"` (beside
/// the keys every element shares, listed under `element`). The hand-read tables of an actuator
/// are `lab.actuator.controller`, `lab.actuator.signals`, `lab.actuator.dynamics.KIND` (a
/// stand-alone `dynamics` table) and `lab.actuator.block.KIND` (a block of a chain).
pub fn model_keys() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |table: &str, keys: Vec<String>| out.push((table.to_string(), keys));
    add("", struct_keys::<ModelFile>());
    add("units", struct_keys::<crate::units::Units>());
    add("node", struct_keys::<NodeSpec>());
    add(
        "element",
        super::elements::SHARED_KEYS
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    add("element.mass", super::registry::mass_keys());
    add("element.linear", super::registry::linear_keys());
    for (table, keys) in super::frame::frame_keys() {
        add(table, keys);
    }
    add("element.spring", declared::<Spring>());
    add("element.dashpot", declared::<Dashpot>());
    add("element.cubic_spring", declared::<CubicSpring>());
    add("element.bouc_wen", declared::<BoucWen>());
    add("element.mostaghel", declared::<Mostaghel>());
    let mut sliding = declared::<TripleSlidingBearing>();
    sliding.push("friction".into());
    add("element.sliding_bearing", sliding);
    add(
        "element.sliding_bearing.friction",
        struct_keys::<FrictionTable>(),
    );
    let mut lrb = declared::<LeadRubberBearing>();
    lrb.extend(["lead".into(), "lead_stiffness".into()]);
    add("element.lead_rubber", lrb);
    let mut mr = declared::<MrDamper>();
    mr.push("voltage_points".into());
    add("element.mr_damper", mr);
    add("element.viscous_damper", declared::<ViscousDamper>());
    add("element.steel01", declared::<Steel01>());
    add("element.steel02", declared::<Steel02>());
    add(
        "element.elastomeric_bearing",
        declared::<ElastomericBearing>(),
    );
    add("substructure.NAME", struct_keys::<SubstructureSpec>());
    add("substructure.NAME.estimate", struct_keys::<EstimateSpec>());
    add("damping", struct_keys::<DampingSpec>());
    add("load", struct_keys::<LoadSpec>());
    add("load.sine", struct_keys::<SineSpec>());
    add("ground_motion", struct_keys::<GroundMotionSpec>());
    add("ground_motion.synthetic", struct_keys::<SyntheticSpec>());
    add("imposed_motion", struct_keys::<ImposedMotionSpec>());
    add("imposed_motion.sine", struct_keys::<SineSpec>());
    add("analysis", struct_keys::<AnalysisSpec>());
    add("analysis.estimator", struct_keys::<EstimatorSpec>());
    add("output", struct_keys::<OutputSpec>());
    add("lab", struct_keys::<LabSpec>());
    add("lab.link", struct_keys::<LinkSpec>());
    add("lab.fault", struct_keys::<FaultSpec>());
    add("lab.setup", struct_keys::<SetupSpec>());
    add("lab.degradation", struct_keys::<DegradationSpec>());
    add("lab.force_control", struct_keys::<ForceControlSpec>());
    add("lab.actuator", struct_keys::<ActuatorSpec>());
    add("lab.actuator.noise", struct_keys::<NoiseSpec>());
    add("lab.actuator.adc", struct_keys::<AdcSpec>());
    add(
        "lab.actuator.control_error",
        struct_keys::<ControlErrorSpec>(),
    );
    add("lab.actuator.capacity", struct_keys::<CapacitySpec>());
    add(
        "lab.actuator.compensation",
        struct_keys::<CompensationSpec>(),
    );
    add(
        "lab.actuator.compensation.inverse",
        struct_keys::<InverseSpec>(),
    );
    add(
        "lab.actuator.compensation.adaptive",
        struct_keys::<AdaptiveSpec>(),
    );
    add(
        "lab.actuator.compensation.delay",
        struct_keys::<DelayCompSpec>(),
    );
    add(
        "lab.actuator.compensation.compliance",
        struct_keys::<ComplianceSpec>(),
    );
    // The hand-read sub-tables of an actuator: the parser checks them against the same lists.
    let strings = |keys: &[&str]| keys.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    add(
        "lab.actuator.controller",
        strings(super::lab::CONTROLLER_KEYS),
    );
    add("lab.actuator.signals", strings(super::lab::SIGNALS_KEYS));
    for kind in super::lab::LEGACY_KINDS {
        if let Some(keys) = super::lab::dynamics_keys(kind) {
            add(&format!("lab.actuator.dynamics.{kind}"), strings(keys));
        }
    }
    for kind in super::lab::BLOCK_KINDS {
        if let Some((params, linear)) = super::lab::block_keys(kind) {
            let mut keys = vec!["kind".to_string()];
            keys.extend(strings(params));
            if linear {
                keys.extend(strings(super::lab::LINEAR_BLOCK_KEYS));
            }
            add(&format!("lab.actuator.block.{kind}"), keys);
        }
    }
    add("safety", struct_keys::<SafetySpec>());
    add("safety.limits.NAME", struct_keys::<LimitsSpec>());
    add("safety.divergence", struct_keys::<DivergenceSpec>());
    add("runner", struct_keys::<RunnerSpec>());
    add(
        "updating",
        super::updating::KEYS
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    out
}
