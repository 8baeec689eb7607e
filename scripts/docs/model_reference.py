#!/usr/bin/env python3
"""Write the skeleton of docs/model-reference.md from the parser's key list.

Usage:
  HYBRIDSIM_PRINT_KEYS=1 cargo test -p hybridsim --test model_reference -- --nocapture \
      | python3 scripts/docs/model_reference.py > docs/model-reference.md

Input: the TABLE/PARAM lines the test prints (the keys `hybridsim::config::keys::model_keys`
accepts, element parameters with unit and default). Descriptions, types and defaults of the
schema structs come from their doc comments and serde attributes in
crates/hybridsim/src/config/schema.rs and crates/hybridsim/src/units.rs; examples are the first
value of the key found in examples/*.toml. The document is then edited by hand where needed;
the test `model_reference` keeps its key lists in step with the parser.
"""
import glob, os, re, sys, tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# Struct of each table path (the serde-read ones).
STRUCTS = {
    "": "ModelFile", "units": "Units", "node": "NodeSpec", "substructure.NAME": "SubstructureSpec",
    "substructure.NAME.estimate": "EstimateSpec", "damping": "DampingSpec", "load": "LoadSpec",
    "load.sine": "SineSpec", "ground_motion": "GroundMotionSpec",
    "ground_motion.synthetic": "SyntheticSpec", "imposed_motion": "ImposedMotionSpec",
    "imposed_motion.sine": "SineSpec", "analysis": "AnalysisSpec",
    "analysis.estimator": "EstimatorSpec", "output": "OutputSpec", "lab": "LabSpec",
    "lab.link": "LinkSpec", "lab.fault": "FaultSpec", "lab.setup": "SetupSpec",
    "lab.force_control": "ForceControlSpec", "lab.actuator": "ActuatorSpec",
    "lab.actuator.noise": "NoiseSpec", "lab.actuator.adc": "AdcSpec",
    "lab.actuator.control_error": "ControlErrorSpec", "lab.actuator.capacity": "CapacitySpec",
    "lab.actuator.compensation": "CompensationSpec",
    "lab.actuator.compensation.inverse": "InverseSpec",
    "lab.actuator.compensation.adaptive": "AdaptiveSpec",
    "lab.actuator.compensation.delay": "DelayCompSpec",
    "lab.actuator.compensation.compliance": "ComplianceSpec", "safety": "SafetySpec",
    "safety.limits.NAME": "LimitsSpec", "safety.divergence": "DivergenceSpec",
    "runner": "RunnerSpec", "element.sliding_bearing.friction": "FrictionTable",
}
ARRAYS = {"node", "element", "load", "ground_motion", "imposed_motion", "lab.actuator",
          "lab.fault", "lab.setup", "lab.force_control"}
SHARED = {
    "type": ("string", "required", "—", "The element kind: one of the `element.KIND` tables below."),
    "name": ("string", "required", "—", "Unique element name (results columns, run-time updates)."),
    "substructure": ("string", "required", "—", "The substructure the element belongs to."),
    "split": ("table", "none", "—", "A mass split between substructures (partitioned runs): shares by substructure."),
    "role": ("string", "none", "—", "The element's role in the LLM partitioning (`interface`, …)."),
    "rayleigh": ("bool", "true", "—", "Whether the element's stiffness enters the Rayleigh damping."),
    "initial_state": ("table", "none", "—", "Initial values of the element's internal states, by state name."),
}
UNIT = {"F": "force", "L": "length", "T": "time", "-": "—"}


def parse_structs(path):
    text = open(path).read()
    out = {}
    for m in re.finditer(r"pub struct (\w+) \{(.*?)\n\}", text, re.S):
        fields, doc, attrs = [], [], []
        for line in m.group(2).splitlines():
            s = line.strip()
            if s.startswith("///"):
                doc.append(s[3:].strip())
            elif s.startswith("#["):
                attrs.append(s)
            else:
                f = re.match(r"pub (\w+): (.+),$", s)
                if f:
                    fields.append((f.group(1), f.group(2), " ".join(doc), " ".join(attrs)))
                doc, attrs = [], []
        out[m.group(1)] = fields
    return out


def kind(ty):
    t = ty.replace("Option<", "").rstrip(">")
    table = {"f64": "number", "bool": "bool", "String": "string", "i64": "integer",
             "usize": "integer", "u64": "integer", "u32": "integer", "Vec<f64": "array of numbers",
             "Vec<i64": "array of integers", "Vec<usize": "array of integers",
             "Vec<String": "array of strings", "Vec<Vec<f64": "matrix (array of rows)",
             "Vec<(i64, String)": "array of `[node, \"dof\"]`", "toml::Value": "table (see below)",
             "toml::Table": "table"}
    if t in table:
        return table[t]
    if ty.startswith("Vec<"):
        return "array of tables"
    if t.endswith("Spec") or t in ("Units",):
        return "table (see below)"
    if "BTreeMap" in ty:
        return "tables by name"
    return f"`{t}`"


def default_of(ty, attrs, doc):
    d = re.search(r"[Dd]efault(?:s to|:)? ([^;.)]+)", doc)
    if ty.startswith("Option<"):
        return d.group(1).strip() if d else "none"
    if "default" in attrs:
        if d:
            return d.group(1).strip()
        return {"bool": "false", "f64": "0"}.get(ty, "empty" if ty.startswith("Vec") else "see description")
    return "required"


def unit_of(doc, name):
    if re.search(r"\b(ratio|multiplier|scale|factor|count|number of|seed)\b", doc, re.I):
        return "—"
    for pat, u in [(r"\bin Hz\b|\(Hz\)|frequency", "Hz"), (r"\bin rad\b|\(rad\)", "rad"),
                   (r"\bin g\b|\(g\)", "g"), (r"1/time|\(1/s\)", "1/time"),
                   (r"\bseconds\b|\bin s\b|\(s[,)]|\(time\)|duration|time step|delay|period", "time"),
                   (r"stiffness", "force/length"), (r"velocity", "length/time"),
                   (r"displacement|stroke|length|increment", "length"), (r"\bforce\b", "force"),
                   (r"ratio|fraction|factor|coefficient|count|number", "—")]:
        if re.search(pat, doc, re.I):
            return u
    return "—"


def examples():
    found = {}
    def walk(path, v):
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                walk(path, x)
            return
        if isinstance(v, dict):
            for k, x in v.items():
                p = f"{path}.{k}" if path else k
                found.setdefault(p, x)
                walk(p, x)
    for f in sorted(glob.glob(os.path.join(ROOT, "examples", "*.toml"))):
        try:
            d = tomllib.load(open(f, "rb"))
        except Exception:
            continue
        for k, sub in d.get("substructure", {}).items():
            walk("substructure.NAME", sub)
        for e in d.get("element", []):
            walk(f"element.{e.get('type', '')}", e)
        lab = d.get("lab", {})
        for k, lim in d.get("safety", {}).get("limits", {}).items():
            walk("safety.limits.NAME", lim)
        walk("", {k: v for k, v in d.items() if k not in ("substructure",)})
    return found


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        s = "[" + ", ".join(toml_value(x) for x in v[:4]) + (", …]" if len(v) > 4 else "]")
        return s if len(s) < 60 else s[:57] + "…"
    if isinstance(v, dict):
        return "{ … }"
    return str(v)


def cell(s):
    return s.replace("|", "\\|")


def main():
    tables, params = [], {}
    for line in sys.stdin:
        parts = line.rstrip("\n").split("\t")
        if parts[0] == "TABLE":
            tables.append((parts[1], [k for k in parts[2].split(",") if k]))
        elif parts[0] == "PARAM":
            params.setdefault(parts[1], {})[parts[2]] = (parts[3], parts[4])
    structs = parse_structs(os.path.join(ROOT, "crates/hybridsim/src/config/schema.rs"))
    structs.update(parse_structs(os.path.join(ROOT, "crates/hybridsim/src/units.rs")))
    structs.update(parse_structs(os.path.join(ROOT, "crates/hybridsim/src/elements/sliding_bearing.rs")))
    ex = examples()
    print(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_reference_head.md")).read())
    group = None
    for table, keys in tables:
        top = table.split(".")[0] if table else "top level"
        if top != group:
            group = top
            print(f"\n## {'Top level' if not table else top}\n")
        head = f"[[{table}]]" if table in ARRAYS else f"[{table}]"
        print(f"### `{head}`\n" if table else "### `[]`\n\nKeys at the top level of the file (outside any table).\n")
        print("| key | type | unit | default | description | example |")
        print("|---|---|---|---|---|---|")
        fields = {f[0]: f for f in structs.get(STRUCTS.get(table, ""), [])}
        kind_name = table.split(".", 1)[1] if table.startswith("element.") else None
        for k in keys:
            path = f"{table}.{k}" if table else k
            e = toml_value(ex[path]) if path in ex else "—"
            if table == "element":
                ty, dflt, unit, desc = SHARED.get(k, ("", "", "—", ""))
            elif kind_name in params and k in params[kind_name]:
                u, d = params[kind_name][k]
                unit = " · ".join(UNIT.get(x, x) for x in [u]) if u in UNIT else u.replace("F", "force").replace("L", "length").replace("T", "time")
                ty, dflt = "number", ("required" if d == "None" else d.replace("Some(", "").rstrip(")"))
                desc = "Element parameter (see the element's documentation in `crates/hybridsim/src/elements/`)."
            elif k in ("nodes", "dof") and kind_name:
                ty, dflt, unit = ("array of integers", "required", "—") if k == "nodes" else ("string", "required", "—")
                desc = "One node (to ground) or two nodes." if k == "nodes" else "The DOF name the element acts on."
            elif k in fields:
                _, rty, doc, attrs = fields[k]
                ty, dflt, desc = kind(rty), default_of(rty, attrs, doc), doc
                unit = unit_of(doc, k) if ty in ("number", "array of numbers", "matrix (array of rows)") else "—"
            else:
                ty, dflt, unit, desc = "", "", "—", "See the reader in `crates/hybridsim/src/config/`."
            print(f"| `{k}` | {cell(ty)} | {cell(unit)} | {cell(dflt)} | {cell(desc)} | {cell(e)} |")
        print()


main()
