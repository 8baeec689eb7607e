use super::*;
use nalgebra::{DMatrix, Vector3};

const X: usize = 0;
const Y: usize = 1;
const Z: usize = 2;
const RX: usize = 3;
const RY: usize = 4;
const RZ: usize = 5;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// A cantilever of `n` 2D elements along global x, fixed at node 0, out-of-plane DOFs fixed.
fn cantilever_2d(n: usize, l: f64, e: f64, i: f64, m: f64) -> FrameModel {
    let mut f = FrameModel::default();
    for k in 0..=n {
        f.nodes
            .push(Vector3::new(l * k as f64 / n as f64, 0.0, 0.0));
        f.fixed.extend([(k, Z), (k, RX), (k, RY)]);
    }
    f.fixed.extend([(0, X), (0, Y), (0, RZ)]);
    for k in 0..n {
        f.elements.push(Box::new(Beam2d {
            nodes: [k, k + 1],
            e,
            area: 0.01,
            i,
            mass_per_length: m,
        }));
    }
    f
}

#[test]
fn cantilever_tip_stiffness_is_the_closed_form() {
    let (l, e, i): (f64, f64, f64) = (3.0, 2.1e11, 8.0e-6);
    for n in [1, 4, 10] {
        let f = cantilever_2d(n, l, e, i, 10.0);
        let s = f.condense(&[(n, Y)]).unwrap();
        assert!(
            rel(s.stiffness[(0, 0)], 3.0 * e * i / l.powi(3)) < 1e-10,
            "n = {n}: {}",
            s.stiffness
        );
        // Tip translation and rotation: K = F⁻¹, F = [[L³/3EI, L²/2EI], [L²/2EI, L/EI]].
        let s = f.condense(&[(n, Y), (n, RZ)]).unwrap();
        let flex = DMatrix::from_row_slice(
            2,
            2,
            &[
                l.powi(3) / (3.0 * e * i),
                l * l / (2.0 * e * i),
                l * l / (2.0 * e * i),
                l / (e * i),
            ],
        );
        let k = flex.try_inverse().unwrap();
        assert!(
            (&s.stiffness - &k).amax() < 1e-8 * k.amax(),
            "{} vs {k}",
            s.stiffness
        );
        // Axial.
        let s = f.condense(&[(n, X)]).unwrap();
        assert!(rel(s.stiffness[(0, 0)], e * 0.01 / l) < 1e-12);
    }
}

#[test]
fn cantilever_first_frequency_converges_to_the_euler_bernoulli_value() {
    let (l, e, i, m): (f64, f64, f64, f64) = (3.0, 2.1e11, 8.0e-6, 50.0);
    let n = 20;
    let f = cantilever_2d(n, l, e, i, m);
    let retained: Vec<(usize, usize)> = (1..=n).map(|k| (k, Y)).collect();
    let s = f.condense(&retained).unwrap();
    // Generalized eigenvalues of (K, M) through M^{-1/2} K M^{-1/2}.
    let chol = s.mass.clone().cholesky().unwrap();
    let linv = chol.l().try_inverse().unwrap();
    let a = &linv * &s.stiffness * linv.transpose();
    let w2 = a.symmetric_eigen().eigenvalues.min();
    let exact = 1.875_104_068_711_961_f64.powi(2) * (e * i / (m * l.powi(4))).sqrt();
    assert!(rel(w2.sqrt(), exact) < 1e-4, "{} vs {exact}", w2.sqrt());
}

#[test]
fn mass_is_conserved_in_rigid_translation() {
    for form in [MassForm::Consistent, MassForm::Lumped] {
        let mut f = cantilever_2d(5, 3.0, 2.1e11, 8.0e-6, 40.0);
        f.mass_form = Some(form);
        f.masses.push((5, X, 7.0));
        let (_, m) = f.assemble().unwrap();
        let mut ones = nalgebra::DVector::zeros(m.nrows());
        for k in 0..6 {
            ones[6 * k] = 1.0;
        }
        let total = (ones.transpose() * &m * &ones)[(0, 0)];
        assert!(rel(total, 40.0 * 3.0 + 7.0) < 1e-12, "{form:?}: {total}");
    }
}

#[test]
fn three_d_cantilever_in_any_orientation() {
    let (l, e, g, a, iy, iz, j): (f64, f64, f64, f64, f64, f64, f64) =
        (2.0, 2.0e11, 8.0e10, 0.02, 3.0e-5, 5.0e-5, 1.0e-5);
    let local = [
        e * a / l,
        3.0 * e * iz / l.powi(3),
        3.0 * e * iy / l.powi(3),
        g * j / l,
        e * iy / l,
        e * iz / l,
    ];
    // Along x with vecxz = Z, then along a skew axis.
    for (axis_dir, vecxz) in [
        (Vector3::new(1.0, 0.0, 0.0), Vector3::z()),
        (
            Vector3::new(1.0, 2.0, -0.5).normalize(),
            Vector3::new(0.3, -0.2, 1.0),
        ),
    ] {
        let n = 3;
        let mut f = FrameModel::default();
        for k in 0..=n {
            f.nodes.push(axis_dir * (l * k as f64 / n as f64));
        }
        f.fixed.extend((0..6).map(|d| (0, d)));
        for k in 0..n {
            f.elements.push(Box::new(Beam3d {
                nodes: [k, k + 1],
                e,
                g,
                area: a,
                iz,
                iy,
                j,
                mass_per_length: 0.0,
                vecxz,
            }));
        }
        let tip: Vec<(usize, usize)> = (0..6).map(|d| (n, d)).collect();
        let s = f.condense(&tip).unwrap();
        // Rotate the tip stiffness into the element's local axes.
        let r = Beam3d {
            nodes: [0, 1],
            e,
            g,
            area: a,
            iz,
            iy,
            j,
            mass_per_length: 0.0,
            vecxz,
        }
        .rotation(&f.nodes)
        .unwrap()
        .1;
        let mut t = DMatrix::zeros(6, 6);
        t.view_mut((0, 0), (3, 3)).copy_from(&r);
        t.view_mut((3, 3), (3, 3)).copy_from(&r);
        let k_local = &t * &s.stiffness * t.transpose();
        // Diagonal tip stiffness with the other tip DOFs free: 1 / flexibility.
        let flex = k_local.clone().try_inverse().unwrap();
        let expected_flex = [
            1.0 / local[0],
            1.0 / local[1],
            1.0 / local[2],
            1.0 / local[3],
            l / (e * iy),
            l / (e * iz),
        ];
        for d in 0..6 {
            assert!(
                rel(flex[(d, d)], expected_flex[d]) < 1e-9,
                "axis {axis_dir:?}, DOF {d}: {} vs {}",
                flex[(d, d)],
                expected_flex[d]
            );
        }
    }
}

#[test]
fn two_bar_truss_vertical_stiffness() {
    // Two bars from (±b, 0) up to the apex (0, h): k = 2 EA sin²θ / L.
    let (b, h, e, a) = (3.0, 4.0, 2.0e11, 1.0e-3);
    let mut f = FrameModel {
        nodes: vec![
            Vector3::new(-b, 0.0, 0.0),
            Vector3::new(b, 0.0, 0.0),
            Vector3::new(0.0, h, 0.0),
        ],
        ..Default::default()
    };
    for node in 0..3 {
        f.fixed
            .extend([(node, Z), (node, RX), (node, RY), (node, RZ)]);
    }
    f.fixed.extend([(0, X), (0, Y), (1, X), (1, Y)]);
    for nodes in [[0, 2], [1, 2]] {
        f.elements.push(Box::new(Truss {
            nodes,
            e,
            area: a,
            mass_per_length: 1.0,
        }));
    }
    let s = f.condense(&[(2, Y)]).unwrap();
    let l = (b * b + h * h).sqrt();
    let sin = h / l;
    assert!(rel(s.stiffness[(0, 0)], 2.0 * e * a * sin * sin / l) < 1e-12);
    // X condensed out: the apex's horizontal DOF is stiff through both bars.
    assert!(s.mass[(0, 0)] > 0.0);
}

#[test]
fn mechanisms_and_bad_geometry_are_errors() {
    // Out-of-plane DOFs of a plane frame left free.
    let mut f = cantilever_2d(2, 3.0, 2.1e11, 8.0e-6, 1.0);
    f.fixed.retain(|&(_, d)| !matches!(d, Z | RX | RY));
    let e = f.condense(&[(2, Y)]).unwrap_err();
    assert!(e.contains("mechanism") && e.contains("fix it"), "{e}");
    let f = cantilever_2d(2, 3.0, 2.1e11, 8.0e-6, 1.0);
    let e = f.condense(&[(0, Y)]).unwrap_err();
    assert!(e.contains("restrained"), "{e}");
    let e = f.condense(&[(2, Y), (2, Y)]).unwrap_err();
    assert!(e.contains("twice"), "{e}");
    let mut f = cantilever_2d(2, 3.0, 2.1e11, 8.0e-6, 1.0);
    f.nodes[2] = f.nodes[1];
    let e = f.condense(&[(1, Y)]).unwrap_err();
    assert!(e.contains("element 1") && e.contains("zero length"), "{e}");
    let mut f = FrameModel {
        nodes: vec![Vector3::zeros(), Vector3::new(0.0, 0.0, 2.0)],
        ..Default::default()
    };
    f.elements.push(Box::new(Beam3d {
        nodes: [0, 1],
        e: 1.0,
        g: 1.0,
        area: 1.0,
        iz: 1.0,
        iy: 1.0,
        j: 1.0,
        mass_per_length: 0.0,
        vecxz: Vector3::z(),
    }));
    let e = f.condense(&[(1, X)]).unwrap_err();
    assert!(e.contains("vecxz"), "{e}");
    let mut f = cantilever_2d(1, 3.0, -1.0, 8.0e-6, 1.0);
    f.mass_form = None;
    let e = f.condense(&[(1, Y)]).unwrap_err();
    assert!(e.contains("E must be positive"), "{e}");
}
