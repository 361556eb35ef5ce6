//! Kinematics with position tangents written from the `f64` kinematics (`Kinematics::set_along`)
//! against kinematics recomputed in `DualSVec64<8>` at the seeded position, on every gymnasium
//! model, the reference models with tendons, sites and mocap bodies, and random trees with every
//! kind of joint.

mod common;

use common::{Rng, TreeShape, entry_names, model_file, random_state};
use nalgebra::DVector;
use phyz::Model;
use phyz::dual::DualSVec64;
use phyz::dynamics::{DofRow, Kinematics, forward_kinematics, integrate_position};
use phyz::model::Integrator;
use phyz::{Arithmetic, BatchLanes, Tangents};

type D = DualSVec64<8>;

/// Both are exact: stated before measuring, they agree to 1e-12 of the largest number compared.
const TOL: f64 = 1e-12;

/// Every number of the kinematics (the tendons' Jacobians as their products with each unit
/// velocity), value then tangents.
fn numbers(model: &Model<D>, kin: &Kinematics<D>, lanes: usize) -> Vec<f64> {
    let poses = kin.local.iter().chain(&kin.world).chain(&kin.rooted).flat_map(|p| p.rot.iter().chain(p.pos.iter()));
    let motions = kin.dof_motion.iter().flat_map(|m| m.ang.iter().chain(m.lin.iter()));
    let nv = model.nv();
    let unit = |i: usize| DVector::from_fn(nv, |k, _| D::from_f64(f64::from(k == i)));
    let rows: Vec<D> = (0..model.tendons().len())
        .flat_map(|t| (0..nv).map(move |i| kin.tendons.jacobian(model, t).dot(model, &unit(i))))
        .collect();
    let tendons = kin.tendons.length.iter().chain(rows.iter());
    poses
        .chain(motions)
        .chain(tendons)
        .flat_map(|x| std::iter::once(x.lane(0)).chain((0..lanes).map(|k| x.tangent(0, k))))
        .collect()
}

fn largest_difference(model: &Model<f64>, rng: &mut Rng) -> f64 {
    let state = random_state(model, rng);
    let nv = model.nv();
    let lanes: Model<D> = model.cast();
    let kin = forward_kinematics(model, &state.qpos);
    let mut worst: f64 = 0.0;
    for start in (0..nv).step_by(8) {
        let columns: Vec<usize> = (start..(start + 8).min(nv)).collect();
        let delta = DVector::from_fn(nv, |i, _| {
            let mut x = D::from_f64(0.0);
            if let Some(k) = columns.iter().position(|&c| c == i) {
                x.set_tangent(0, k, 1.0);
            }
            x
        });
        let q = integrate_position(&lanes, &state.qpos.map(D::from_f64), &delta, D::from_f64(1.0));
        let recomputed = forward_kinematics(&lanes, &q);
        let mut written = Kinematics::default();
        written.set_along(&lanes, &kin, &q, &columns);
        let (a, b) = (numbers(&lanes, &recomputed, columns.len()), numbers(&lanes, &written, columns.len()));
        assert_eq!(a.len(), b.len());
        let scale = a.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        worst = worst.max(a.iter().zip(&b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale);
    }
    worst
}

#[test]
fn written_tangents_match_recomputed_kinematics_on_models() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = entry_names(&root.join("tests/reference"));
    names.retain(|n| root.join("tests/reference").join(n).join("onestep_in.csv").exists());
    let mut rng = Rng::new(7);
    let mut failures = Vec::new();
    for name in &names {
        let model = phyz::mjcf::load(model_file(name)).expect("model");
        let error = largest_difference(&model, &mut rng);
        if !(error <= TOL) {
            failures.push(format!("{name}: {error:.1e}"));
        }
    }
    assert!(names.len() >= 20, "{} models", names.len());
    assert!(failures.is_empty(), "written ≠ recomputed: {failures:?}");
}

#[test]
fn written_tangents_match_recomputed_kinematics_on_random_trees() {
    let mut rng = Rng::new(8);
    for n in [1, 2, 3, 6, 10] {
        for _ in 0..4 {
            let model = TreeShape::random(n, &mut rng).model(&mut rng, Integrator::Euler);
            let error = largest_difference(&model, &mut rng);
            assert!(error <= TOL, "tree of {n} bodies: {error:.1e}");
        }
    }
}
