//! `[[element]]`: each element built from its table by its kind's builder in the registry,
//! placed in a substructure (or split among several), with its role, Rayleigh flag and
//! initial states; then the checks on what the elements cover.

use super::{ElementContext, ElementRegistry};
use crate::elements::{DofRef, ElementRef, Mass};
use crate::error::{Diagnostics, ModelError};
use crate::model::imposed_motion::MassShare;
use crate::model::{ElementInstance, ElementName, NameTable, Node, Role, Substructure};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Keys every element may have, read here; the rest of the table goes to the kind's builder.
pub(super) const SHARED_KEYS: &[&str] = &[
    "type",
    "name",
    "substructure",
    "split",
    "role",
    "rayleigh",
    "initial_state",
];

/// The elements placed in their substructures (a split mass once per substructure) and, in the
/// LLM mode, the explicit distributions of masses among element partitions.
pub(super) fn elements(
    tables: impl Iterator<Item = Result<toml::Table, ModelError>>,
    count: usize,
    llm: bool,
    substructures: &[Substructure],
    ctx: &ElementContext,
    registry: &ElementRegistry,
    diag: &mut Diagnostics,
) -> Result<(Vec<ElementInstance>, Vec<MassShare>), ModelError> {
    let mut reader = Reader {
        llm,
        substructures,
        ctx,
        registry,
        given: GivenNames::with_capacity(count),
        names: NameTable::with_capacity(count),
        pending: std::sync::Arc::new(NameTable::default()),
        elements: Vec::new(),
        mass_shares: Vec::new(),
    };
    if count == 0 {
        diag.push("element", "the model has no elements");
    }
    reader.elements.reserve(count);
    for (i, table) in tables.enumerate() {
        reader.element(i, table?, diag);
    }
    let Reader {
        given,
        mut names,
        mut elements,
        mass_shares,
        ..
    } = reader;
    drop(given);
    names.shrink_to_fit();
    let names = std::sync::Arc::new(names);
    for (i, e) in elements.iter_mut().enumerate() {
        let index = u32::try_from(i).expect("fewer than 2³² elements");
        e.name = ElementName::in_table(&names, index);
    }
    Ok((elements, mass_shares))
}

/// The names given so far (or defaulted), to find one used twice: their texts in one table
/// and an index by hash (issue 20: a set of `String`s was a heap block a name while the
/// elements were read).
struct GivenNames {
    texts: NameTable,
    /// The first name of each hash.
    first: HashMap<u64, u32>,
    /// Further names whose hash is already in `first` (different texts, rarely any).
    more: Vec<(u64, u32)>,
}

impl GivenNames {
    fn with_capacity(count: usize) -> Self {
        Self {
            texts: NameTable::with_capacity(count),
            first: HashMap::with_capacity(count),
            more: Vec::new(),
        }
    }

    /// Add `name`; false when it was given before.
    fn insert(&mut self, name: &str) -> bool {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        name.hash(&mut hasher);
        let hash = hasher.finish();
        let Some(&first) = self.first.get(&hash) else {
            let index = self.texts.push(name);
            self.first.insert(hash, index);
            return true;
        };
        let texts = &self.texts;
        let seen = texts.get(first) == name
            || self
                .more
                .iter()
                .any(|&(h, j)| h == hash && texts.get(j) == name);
        if !seen {
            let index = self.texts.push(name);
            self.more.push((hash, index));
        }
        !seen
    }
}

/// What the element tables are read against, and what they give so far.
struct Reader<'a> {
    llm: bool,
    substructures: &'a [Substructure],
    ctx: &'a ElementContext<'a>,
    registry: &'a ElementRegistry,
    /// Names given so far.
    given: GivenNames,
    /// The names of the instances, in their order.
    names: NameTable,
    /// The table the instances' names point to until `names` is complete.
    pending: std::sync::Arc<NameTable>,
    elements: Vec<ElementInstance>,
    mass_shares: Vec<MassShare>,
}

impl Reader<'_> {
    /// `element[i]`.
    fn element(&mut self, i: usize, mut table: toml::Table, diag: &mut Diagnostics) {
        let f = format!("element[{i}]");
        let mut shared = BTreeMap::new();
        for k in SHARED_KEYS {
            if let Some(v) = table.remove(*k) {
                shared.insert(*k, v);
            }
        }
        let kind = match shared.get("type") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => {
                diag.push(format!("{f}.type"), "must be a string");
                return;
            }
            None => {
                diag.push(
                    format!("{f}.type"),
                    format!("is missing (one of: {})", self.registry.kinds().join(", ")),
                );
                return;
            }
        };
        let name = match shared.get("name") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => {
                diag.push(format!("{f}.name"), "must be a string");
                return;
            }
            None => format!("{kind}{i}"),
        };
        if !self.given.insert(&name) {
            diag.push(
                format!("{f}.name"),
                format!("element name `{name}` is used twice"),
            );
        }
        let Some(builder) = self.registry.get(&kind) else {
            diag.push(
                format!("{f}.type"),
                format!(
                    "unknown element type `{kind}` (known: {})",
                    self.registry.kinds().join(", ")
                ),
            );
            return;
        };
        let before = diag.len();
        let Some(element) = builder(self.ctx, table, diag, &f) else {
            if diag.len() == before {
                diag.push(&f, "could not be built");
            }
            return;
        };
        if self.llm && kind == "mass" {
            self.mass_shares
                .extend(take_llm_split(&mut shared, &name, &f, diag));
        }
        let Some(members) = self.members(&kind, &shared, &f, diag) else {
            return;
        };
        let role = match shared.get("role") {
            None => None,
            Some(toml::Value::String(r)) if r == "numerical" => Some(Role::Numerical),
            Some(toml::Value::String(r)) if r == "specimen" => Some(Role::Specimen),
            Some(other) => {
                diag.push(
                    format!("{f}.role"),
                    format!("must be \"numerical\" or \"specimen\", found {other}"),
                );
                return;
            }
        };
        let rayleigh = match shared.get("rayleigh") {
            None => element.rayleigh_by_default(),
            Some(toml::Value::Boolean(b)) => *b,
            Some(_) => {
                diag.push(format!("{f}.rayleigh"), "must be true or false");
                return;
            }
        };
        let Some(initial_state) =
            initial_state(shared.get("initial_state"), &element, &kind, &f, diag)
        else {
            return;
        };
        let split = members.len() > 1;
        for (sub, fraction) in members {
            let substructure = &self.substructures[sub];
            let physical = substructure.physical;
            let role = role_in(substructure, role, &element, &f, diag);
            if physical && role == Role::Specimen && rayleigh && shared.contains_key("rayleigh") {
                diag.push(
                    format!("{f}.rayleigh"),
                    "Rayleigh damping cannot be applied to a physical specimen: its damping is measured",
                );
            }
            let (element, index) = if split {
                let Some(m) = element_as_mass(&element) else {
                    continue;
                };
                let e: ElementRef = Arc::new(m.scaled(fraction));
                (e, self.names.push(&format!("{name}@{}", substructure.name)))
            } else {
                (element.clone(), self.names.push(&name))
            };
            self.elements.push(ElementInstance {
                name: ElementName::pending(&self.pending, index),
                element,
                substructure: u32::try_from(sub).expect("a substructure index fits 32 bits"),
                role,
                rayleigh: rayleigh && !(physical && role == Role::Specimen),
                initial_state: initial_state.clone().into(),
            });
        }
    }

    /// The substructures of an element with its fraction in each: the one named by
    /// `substructure`, those of a mass's `split`, or the only one.
    fn members(
        &self,
        kind: &str,
        shared: &BTreeMap<&str, toml::Value>,
        f: &str,
        diag: &mut Diagnostics,
    ) -> Option<Vec<(usize, f64)>> {
        let substructures = self.substructures;
        match (shared.get("substructure"), shared.get("split")) {
            (Some(_), Some(_)) => {
                diag.push(
                    format!("{f}.split"),
                    "give either `substructure` or `split`, not both",
                );
                None
            }
            (Some(toml::Value::String(s)), None) => {
                match substructures.iter().position(|x| x.name == *s) {
                    Some(k) => Some(vec![(k, 1.0)]),
                    None => {
                        diag.push(
                            format!("{f}.substructure"),
                            format!(
                                "unknown substructure `{s}` (defined: {})",
                                substructures
                                    .iter()
                                    .map(|x| x.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                        None
                    }
                }
            }
            (Some(_), None) => {
                diag.push(format!("{f}.substructure"), "must be a string");
                None
            }
            (None, Some(toml::Value::Table(t))) => {
                if kind != "mass" {
                    diag.push(format!("{f}.split"), "only `mass` elements can be split");
                    return None;
                }
                split(t, substructures, f, diag)
            }
            (None, Some(_)) => {
                diag.push(
                    format!("{f}.split"),
                    "must be a table `{ substructure = fraction, … }`",
                );
                None
            }
            (None, None) => {
                if substructures.len() == 1 || (self.llm && kind == "mass") {
                    Some(vec![(0, 1.0)])
                } else {
                    diag.push(
                        format!("{f}.substructure"),
                        "is required when the model has more than one substructure",
                    );
                    None
                }
            }
        }
    }
}

/// A mass's `split = { substructure = fraction, … }`: fractions in (0, 1] adding up to 1.
fn split(
    t: &toml::Table,
    substructures: &[Substructure],
    f: &str,
    diag: &mut Diagnostics,
) -> Option<Vec<(usize, f64)>> {
    let mut members = Vec::new();
    let mut total = 0.0;
    let mut ok = true;
    for (s, x) in t {
        let x = match x {
            toml::Value::Float(x) => *x,
            toml::Value::Integer(x) => *x as f64,
            _ => {
                diag.push(format!("{f}.split.{s}"), "must be a number");
                ok = false;
                continue;
            }
        };
        if !(x.is_finite() && x > 0.0 && x <= 1.0) {
            diag.push(
                format!("{f}.split.{s}"),
                format!("fraction must be in (0, 1], found {x}"),
            );
            ok = false;
        }
        match substructures.iter().position(|y| y.name == *s) {
            Some(k) => members.push((k, x)),
            None => {
                diag.push(
                    format!("{f}.split.{s}"),
                    format!("unknown substructure `{s}`"),
                );
                ok = false;
            }
        }
        total += x;
    }
    if ok && (total - 1.0).abs() > 1e-9 {
        diag.push(
            format!("{f}.split"),
            format!("fractions must add up to 1, they add up to {total}"),
        );
        ok = false;
    }
    ok.then_some(members)
}

/// `initial_state`: one finite number per element state (zeros when absent).
fn initial_state(
    value: Option<&toml::Value>,
    element: &ElementRef,
    kind: &str,
    f: &str,
    diag: &mut Diagnostics,
) -> Option<Vec<f64>> {
    match value {
        None => Some(vec![0.0; element.n_states()]),
        Some(toml::Value::Array(a)) => {
            let v: Vec<f64> = a
                .iter()
                .filter_map(|x| match x {
                    toml::Value::Float(x) => Some(*x),
                    toml::Value::Integer(x) => Some(*x as f64),
                    _ => None,
                })
                .collect();
            if v.len() != a.len()
                || v.len() != element.n_states()
                || v.iter().any(|x| !x.is_finite())
            {
                diag.push(
                    format!("{f}.initial_state"),
                    format!(
                        "must be {} finite numbers ({} element states: {})",
                        element.n_states(),
                        kind,
                        element.state_names().join(", ")
                    ),
                );
                return None;
            }
            Some(v)
        }
        Some(_) => {
            diag.push(format!("{f}.initial_state"), "must be an array of numbers");
            None
        }
    }
}

/// The role of an element in `substructure`: always numerical in a numerical substructure;
/// in a physical one as given, else numerical for a pure mass and specimen otherwise.
fn role_in(
    substructure: &Substructure,
    given: Option<Role>,
    element: &ElementRef,
    f: &str,
    diag: &mut Diagnostics,
) -> Role {
    match (substructure.physical, given) {
        (false, Some(Role::Specimen)) => {
            diag.push(
                format!("{f}.role"),
                format!(
                    "`specimen` is only meaningful in a physical substructure; `{}` is numerical",
                    substructure.name
                ),
            );
            Role::Numerical
        }
        (false, _) => Role::Numerical,
        (true, Some(r)) => r,
        (true, None) => {
            if element.mass().is_some()
                && element
                    .linear_stiffness()
                    .map(|k| k.amax() == 0.0)
                    .unwrap_or(false)
            {
                Role::Numerical
            } else {
                Role::Specimen
            }
        }
    }
}

/// The lumped mass of an element with a mass matrix (its diagonal), to be split.
fn element_as_mass(e: &ElementRef) -> Option<Mass> {
    let m = e.mass()?;
    let dofs = e.dofs().to_vec();
    let values = (0..dofs.len()).map(|i| m[(i, i)]).collect();
    Some(Mass::new(dofs, values))
}

/// In the LLM mode a `mass` element's `split` distributes it among *elements* (or
/// substructures): take it out of the shared keys and keep it for the assembly.
fn take_llm_split(
    shared: &mut BTreeMap<&str, toml::Value>,
    name: &str,
    field: &str,
    diag: &mut Diagnostics,
) -> Option<MassShare> {
    let value = shared.remove("split")?;
    let f = format!("{field}.split");
    let toml::Value::Table(t) = value else {
        diag.push(&f, "must be a table `{ element = fraction, … }`");
        return None;
    };
    let mut shares = Vec::new();
    let mut total = 0.0;
    for (k, v) in &t {
        let x = match v {
            toml::Value::Float(x) => *x,
            toml::Value::Integer(x) => *x as f64,
            _ => {
                diag.push(format!("{f}.{k}"), "must be a number");
                return None;
            }
        };
        if !(x.is_finite() && x > 0.0 && x <= 1.0) {
            diag.push(
                format!("{f}.{k}"),
                format!("fraction must be in (0, 1], found {x}"),
            );
            return None;
        }
        total += x;
        shares.push((k.clone(), x));
    }
    if (total - 1.0).abs() > 1e-9 {
        diag.push(
            &f,
            format!("fractions must add up to 1, they add up to {total}"),
        );
        return None;
    }
    Some(MassShare {
        mass: name.to_string(),
        field: f,
        shares,
    })
}

/// What the elements cover (checked once every element could be built; `node_ids`: the ids of
/// the nodes as written, in file order): every free node DOF
/// is acted on by an element; every substructure has elements, a physical one a specimen, and
/// its estimate only its own DOFs.
pub(super) fn check_coverage(
    node_ids: &[i64],
    nodes: &[Node],
    elements: &[ElementInstance],
    substructures: &[Substructure],
    diag: &mut Diagnostics,
) {
    // Every DOF some element acts on, once (a set: a scan of every element per free DOF is
    // O(N²) on a chain of N storeys).
    let acted_on: std::collections::HashSet<&DofRef> =
        elements.iter().flat_map(|e| e.element.dofs()).collect();
    let spec_index: std::collections::HashMap<i64, usize> = node_ids
        .iter()
        .enumerate()
        .rev()
        .map(|(i, id)| (*id, i))
        .collect();
    for n in nodes {
        let i = spec_index.get(&n.id).copied().unwrap_or_default();
        for d in n.dofs.iter() {
            if d.fixed {
                continue;
            }
            let dr = DofRef::new(n.id, d.name.as_str());
            if !acted_on.contains(&dr) {
                diag.push(
                    format!("node[{i}].dofs"),
                    format!("{dr} is free but no element acts on it (fix it or remove it)"),
                );
            }
        }
    }
    for (k, s) in substructures.iter().enumerate() {
        let members: Vec<&ElementInstance> = elements
            .iter()
            .filter(|e| e.substructure as usize == k)
            .collect();
        if members.is_empty() {
            diag.push(format!("substructure.{}", s.name), "has no elements");
            continue;
        }
        if s.physical && !members.iter().any(|e| e.role == Role::Specimen) {
            diag.push(
                format!("substructure.{}", s.name),
                "is physical but has no specimen element (set role = \"specimen\" on the tested elements)",
            );
        }
        if let Some(est) = &s.estimate {
            for d in &est.dofs {
                if !members.iter().any(|e| e.element.dofs().contains(d)) {
                    diag.push(
                        format!("substructure.{}.estimate.dofs", s.name),
                        format!("{d} is not a DOF of this substructure"),
                    );
                }
            }
        }
    }
}
