//! The served substructure (`hybridsim::assembly::ServedSubstructure`) and the server in
//! process: trial/commit semantics (several trials before a commit, each from the committed
//! state), column-major matrices, the DOF mapping and its refusals, a physical substructure
//! behind its lab (one command per step, a second trial at another displacement refused),
//! and the wire answers of one session.

mod serve_support;

use hybridsim::assembly::{ServeError, ServedSubstructure};
use hybridsim::elements::DofRef;
use hybridsim::Model;
use hybridsim_net::generic_client::protocol::{Frame, Sizes};
use hybridsim_net::generic_client::{SessionEnd, Transport};
use serve_support::{served_spring, spawn_server, Client, SPRING_MODEL};
use std::time::Duration;

fn model(text: &str) -> Model {
    Model::from_toml(text, "model.toml", &hybridsim::model::NoFiles)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn bouc_wen_model() -> Model {
    model(&SPRING_MODEL.replace(
        "type = \"spring\"\nname = \"k\"\nnodes = [1, 2]\ndof = \"x\"\nk = 1000.0",
        "type = \"bouc_wen\"\nname = \"k\"\nnodes = [1, 2]\ndof = \"x\"\nA = 1000.0\nbeta = 25.0\ngamma = 25.0",
    ))
}

#[test]
fn spring_force_and_column_major_matrices() {
    let mut s = served_spring();
    assert_eq!(s.dofs(), &[DofRef::new(1, "x"), DofRef::new(2, "x")]);
    s.set_trial(0.01, &[0.003, -0.001], &[0.0, 0.0]).unwrap();
    assert_eq!(s.force(), &[4.0, -4.0]);
    assert_eq!(s.tangent(), &[1000.0, -1000.0, -1000.0, 1000.0]);
    assert_eq!(s.initial_stiffness(), &[1000.0, -1000.0, -1000.0, 1000.0]);
    assert_eq!(s.mass(), &[1.0, 0.0, 0.0, 1.0]);
    assert_eq!(s.damping(), &[0.0; 4]);
    s.drop_mass();
    assert_eq!(s.mass(), &[0.0; 4]);
}

#[test]
fn every_trial_starts_from_the_committed_state() {
    let m = bouc_wen_model();
    let mut a = ServedSubstructure::new(&m, "spring", None).unwrap();
    let mut b = ServedSubstructure::new(&m, "spring", None).unwrap();
    // a: three Newton-like trials before the commit; b: the last one only.
    a.set_trial(0.01, &[0.0, 0.05], &[0.0, 5.0]).unwrap();
    let far = a.force().to_vec();
    a.set_trial(0.01, &[0.0, -0.02], &[0.0, -2.0]).unwrap();
    a.set_trial(0.01, &[0.0, 0.01], &[0.0, 1.0]).unwrap();
    b.set_trial(0.01, &[0.0, 0.01], &[0.0, 1.0]).unwrap();
    assert_eq!(a.force(), b.force());
    assert_ne!(far, a.force());
    a.commit();
    b.commit();
    // After the commit, the hysteretic state moved: a trial back at zero keeps a force.
    a.set_trial(0.02, &[0.0, 0.0], &[0.0, 0.0]).unwrap();
    b.set_trial(0.02, &[0.0, 0.0], &[0.0, 0.0]).unwrap();
    assert_eq!(a.force(), b.force());
    assert!(a.force()[1].abs() > 0.1, "{:?}", a.force());
    assert_eq!(a.commits(), 1);
    // Time going backwards and wrong lengths are refused, the force then NaN.
    let e = a.set_trial(0.001, &[0.0, 0.0], &[0.0, 0.0]).unwrap_err();
    assert!(matches!(e, ServeError::TimeBackwards { .. }), "{e}");
    assert!(a.force().iter().all(|x| x.is_nan()));
    let e = a.set_trial(0.02, &[0.0], &[0.0]).unwrap_err();
    assert!(e.to_string().contains("serves 2 DOFs"), "{e}");
}

#[test]
fn dof_mapping_and_its_refusals() {
    let m = model(SPRING_MODEL);
    // Reordered.
    let mut s = ServedSubstructure::new(
        &m,
        "spring",
        Some(&[DofRef::new(2, "x"), DofRef::new(1, "x")]),
    )
    .unwrap();
    s.set_trial(0.0, &[0.001, 0.0], &[0.0, 0.0]).unwrap();
    assert_eq!(s.force(), &[1.0, -1.0]);
    // An internal (unserved) DOF is refused, naming it.
    let e = ServedSubstructure::new(&m, "spring", Some(&[DofRef::new(2, "x")]))
        .err()
        .unwrap();
    assert!(
        e.contains("node 1 dof x") && e.contains("internal DOFs"),
        "{e}"
    );
    // A DOF not in the substructure, a duplicate, an unknown substructure.
    let e = ServedSubstructure::new(
        &m,
        "spring",
        Some(&[DofRef::new(1, "x"), DofRef::new(2, "y")]),
    )
    .err()
    .unwrap();
    assert!(e.contains("node 2 dof y"), "{e}");
    let e = ServedSubstructure::new(
        &m,
        "spring",
        Some(&[DofRef::new(1, "x"), DofRef::new(1, "x")]),
    )
    .err()
    .unwrap();
    assert!(e.contains("twice"), "{e}");
    let e = ServedSubstructure::new(&m, "deck", None).err().unwrap();
    assert!(
        e.contains("no substructure `deck`") && e.contains("spring"),
        "{e}"
    );
    // A DOF the model fixes may be served (the client drives it).
    let fixed = model(&SPRING_MODEL.replace(
        "id = 1\ndofs = [\"x\"]",
        "id = 1\ndofs = [\"x\"]\nfixed = [\"x\"]",
    ));
    assert_eq!(
        ServedSubstructure::new(&fixed, "spring", None)
            .unwrap()
            .n_dofs(),
        1
    );
    let mut s = ServedSubstructure::new(
        &fixed,
        "spring",
        Some(&[DofRef::new(1, "x"), DofRef::new(2, "x")]),
    )
    .unwrap();
    s.set_trial(0.0, &[0.002, 0.0], &[0.0, 0.0]).unwrap();
    assert_eq!(s.force(), &[2.0, -2.0]);
}

#[test]
fn a_lab_specimen_is_commanded_once_per_step() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/quickstart.toml"
    ))
    .unwrap();
    let m = model(&text);
    let mut s = ServedSubstructure::new(&m, "first_storey", None).unwrap();
    assert!(s.is_physical());
    assert_eq!(s.dofs(), &[DofRef::new(1, "x")]);
    assert!(s.describe().contains("specimen"), "{}", s.describe());
    // Element creation: a trial at rest commands nothing.
    s.set_trial(0.0, &[0.0], &[0.0]).unwrap();
    s.commit();
    // Step 1: the first trial commands; a corrector at the same displacement is answered.
    s.set_trial(0.001, &[1e-5], &[0.01]).unwrap();
    let f1 = s.force()[0];
    assert!(f1.is_finite());
    s.set_trial(0.001, &[1e-5], &[0.012]).unwrap();
    // A second trial that moves the specimen is refused and answered NaN.
    let e = s.set_trial(0.001, &[2e-5], &[0.01]).unwrap_err();
    assert!(matches!(e, ServeError::SecondTrial { step: 2 }), "{e}");
    assert!(e.to_string().contains("cannot be reverted"), "{e}");
    assert!(s.force()[0].is_nan());
    s.set_trial(0.001, &[1e-5], &[0.01]).unwrap();
    s.commit();
    // Step 2 commands again.
    s.set_trial(0.002, &[2e-5], &[0.01]).unwrap();
    assert!(s.force()[0].is_finite());
    // The tangent of a specimen is its initial stiffness (k = 40000 here).
    let kt = s.tangent()[0];
    assert_eq!(kt, s.initial_stiffness()[0]);
    assert!(
        (s.initial_stiffness()[0] - 40000.0).abs() < 1e-9,
        "{:?}",
        s.initial_stiffness()
    );
}

#[test]
fn a_session_in_process_answers_every_get_and_ends_on_99() {
    for transport in [Transport::Tcp, Transport::Udp] {
        let (addr, log, server) = spawn_server(transport, 1, Duration::from_secs(10));
        let mut c = match transport {
            Transport::Tcp => Client::tcp(addr),
            Transport::Udp => Client::udp(addr),
        };
        let sizes = Sizes::generic_client(2, 256);
        c.sizes(&sizes).unwrap();
        let mut f = Frame::new(256);
        let mut r = Frame::new(256);
        let trial = [0.0, 0.002, 0.0, 0.1, 0.0, 0.5, 0.01];
        c.message(&mut f, 3.0, &trial).unwrap();
        for (code, expected) in [
            (10.0, vec![-2.0, 2.0]),
            (12.0, vec![1000.0, -1000.0, -1000.0, 1000.0]),
            (13.0, vec![1000.0, -1000.0, -1000.0, 1000.0]),
            (14.0, vec![0.0; 4]),
            (15.0, vec![1.0, 0.0, 0.0, 1.0]),
            (6.0, vec![-2.0, 2.0]),
            (7.0, vec![0.0, 0.002]),
            (8.0, vec![0.0, 0.1]),
            (9.0, vec![0.0, 0.5]),
            (11.0, vec![0.01]),
        ] {
            c.message(&mut f, code, &trial).unwrap();
            c.recv(&mut r).unwrap();
            assert_eq!(&r.values()[..expected.len()], &expected[..], "code {code}");
            assert!(r.values()[expected.len()..].iter().all(|x| *x == 0.0));
        }
        for code in [1.0, 2.0, 4.0, 5.0] {
            c.message(&mut f, code, &trial).unwrap();
        }
        // An unknown code: reported, no reply; the next get is answered.
        c.message(&mut f, 42.0, &trial).unwrap();
        c.message(&mut f, 10.0, &trial).unwrap();
        c.recv(&mut r).unwrap();
        assert_eq!(&r.values()[..2], &[-2.0, 2.0]);
        c.message(&mut f, 99.0, &[]).unwrap();
        let reports = server.join().unwrap();
        let rep = &reports[0];
        assert_eq!(rep.end, SessionEnd::Die);
        assert_eq!((rep.commits, rep.replies, rep.rejected), (1, 11, 1));
        let lines = log.lock().unwrap();
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains("action code 42")
                && lines[0].contains("message 16")
                && lines[0].contains("after 1 committed steps"),
            "{}",
            lines[0]
        );
    }
}
