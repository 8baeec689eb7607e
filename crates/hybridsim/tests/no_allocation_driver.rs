//! The displacement-driven form of an element must not allocate in `set_trial`, `tangent`,
//! `commit` or `revert` (it serves real-time specimens): count heap allocations.
mod common;
use hybridsim::elements::{
    BoucWen, DofRef, Element, ElementDriver, FrictionTable, LeadLaw, LeadRubberBearing, Mostaghel,
    TripleSlidingBearing,
};

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;
use common::counting::count;

#[test]
fn driver_set_trial_tangent_commit_do_not_allocate() {
    let two = vec![DofRef::new(1, "x"), DofRef::new(2, "x")];
    let mut tcsb = TripleSlidingBearing::abbiati_2019(two.clone());
    tcsb.friction = Some(FrictionTable::abbiati_2019_table_5());
    let elements: Vec<Box<dyn Element>> = vec![
        Box::new(Mostaghel::new(two.clone(), 1.66e8, 0.0035, 0.001).unwrap()),
        Box::new(BoucWen::new(two.clone(), 1e7, 3.5, 60.0, 1.0).unwrap()),
        Box::new(tcsb),
        Box::new(LeadRubberBearing::new(two.clone(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3]).unwrap()),
        Box::new(
            LeadRubberBearing::new(two.clone(), [1.02e5, 1.35e6, 2.0, 5.0, 1e-3])
                .unwrap()
                .with_lead(LeadLaw::Rigid, None)
                .unwrap(),
        ),
        Box::new(hybridsim::elements::Spring::new(two.clone(), 1e6)),
    ];
    for e in elements {
        let kind = e.kind();
        let ns = e.n_states();
        let mut dr = ElementDriver::new(e, &vec![0.0; ns]).unwrap();
        let dt = 0.001;
        let mut u = [0.0, 0.0];
        let mut v = [0.0, 0.0];
        let mut sink = 0.0;
        let mut step = |k: usize, dr: &mut ElementDriver| {
            let t = k as f64 * dt;
            u[0] = 0.05 * (2.0 * std::f64::consts::PI * t).sin();
            v[0] = 0.1 * std::f64::consts::PI * (2.0 * std::f64::consts::PI * t).cos();
            dr.set_trial(dt, &u, &v).unwrap();
            sink += dr.tangent()[(0, 0)] + dr.force()[0] + dr.dissipated_energy();
            if k.is_multiple_of(7) {
                dr.revert();
                dr.set_trial(dt, &u, &v).unwrap();
            }
            dr.commit();
        };
        step(1, &mut dr); // warm-up
        let allocs = count(|| {
            for k in 2..2000 {
                step(k, &mut dr);
            }
        });
        println!("{kind}: {allocs} allocations in 2000 driven steps (checksum {sink:.3e})");
        assert_eq!(allocs, 0, "{kind}: the driver allocates");
    }
}
