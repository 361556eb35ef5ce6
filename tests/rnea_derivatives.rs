//! Analytical derivatives of inverse dynamics (`RneaDerivatives`) against forward-mode tangents
//! (`Dual64` pushed through kinematics and RNEA, one column at a time), on every gymnasium model
//! and on random trees with every kind of joint, at random states and accelerations.

mod common;

use common::{Rng, TreeShape, random_state, random_vector};
use nalgebra::{DMatrix, DVector};
use phyz::Model;
use phyz::dual::Dual64;
use phyz::dynamics::{RneaDerivatives, forward_kinematics, integrate_position, inverse_dynamics};
use phyz::model::Integrator;

/// Both are exact: they differ by rounding alone. Stated before measuring: 1e-10 of the largest
/// entry of the two matrices (one of them can be zero: a lone hinge's `∂τ/∂q̇`).
const TOL: f64 = 1e-10;

/// `∂τ/∂q` and `∂τ/∂q̇` by forward mode: one `Dual64` evaluation of kinematics and RNEA per
/// column, the position moved in tangent coordinates (`q ⊕ ε e_c`).
fn dual_columns(model: &Model<f64>, q: &DVector<f64>, v: &DVector<f64>, a: &DVector<f64>) -> [DMatrix<f64>; 2] {
    let nv = model.nv();
    let model_d: Model<Dual64> = model.cast();
    let lift = |x: &DVector<f64>| x.map(Dual64::from);
    let mut out = [DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv)];
    for c in 0..nv {
        let unit = DVector::from_fn(nv, |i, _| Dual64::new(0.0, if i == c { 1.0 } else { 0.0 }));
        let q_moved = integrate_position(&model_d, &lift(q), &unit, Dual64::from(1.0));
        let kin = forward_kinematics(&model_d, &q_moved);
        let tau = inverse_dynamics(&model_d, &kin, &lift(v), &lift(a));
        out[0].set_column(c, &tau.map(|x| x.eps));
        let kin = forward_kinematics(&model_d, &lift(q));
        let tau = inverse_dynamics(&model_d, &kin, &(lift(v) + unit), &lift(a));
        out[1].set_column(c, &tau.map(|x| x.eps));
    }
    out
}

/// The largest relative difference between the analytical and the forward-mode matrices, and the
/// check that the analytical `τ` is RNEA's.
fn compare(model: &Model<f64>, rng: &mut Rng) -> f64 {
    let state = random_state(model, rng);
    let qacc = random_vector(model.nv(), rng, 2.0);
    let kin = forward_kinematics(model, &state.qpos);
    let mut derivatives = RneaDerivatives::default();
    derivatives.compute(model, &kin, &state.qvel, &qacc);
    let tau = inverse_dynamics(model, &kin, &state.qvel, &qacc);
    assert!((&derivatives.tau - &tau).amax() <= 1e-12 * tau.amax().max(1.0), "τ is RNEA's");
    // Some columns of the velocity derivative alone (as the implicit integrators ask): the same
    // numbers, and zero elsewhere.
    let some: Vec<usize> = (0..model.nv()).filter(|c| c % 3 != 1).collect();
    let mut part = RneaDerivatives::default();
    part.velocity_columns(model, &kin, &state.qvel, some.iter().copied());
    for c in 0..model.nv() {
        let expected =
            if some.contains(&c) { derivatives.dv.column(c).into_owned() } else { DVector::zeros(model.nv()) };
        let scale = derivatives.dv.amax().max(1.0);
        assert!((part.dv.column(c) - expected).amax() <= 1e-12 * scale, "velocity column {c}");
    }
    let [dq, dv] = dual_columns(model, &state.qpos, &state.qvel, &qacc);
    let scale = dq.amax().max(dv.amax()).max(f64::MIN_POSITIVE);
    (&derivatives.dq - &dq).amax().max((&derivatives.dv - &dv).amax()) / scale
}

#[test]
fn analytical_rnea_derivatives_match_forward_tangents_on_every_gymnasium_model() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).expect("gymnasium models").map(|e| e.expect("entry").path()).collect();
    files.retain(|f| f.extension().is_some_and(|e| e == "xml"));
    files.sort();
    assert!(files.len() >= 10, "{} gymnasium models", files.len());
    let mut rng = Rng::new(29);
    let mut failures = Vec::new();
    for file in &files {
        let model = phyz::mjcf::load(file).expect("model loads");
        let error = compare(&model, &mut rng);
        eprintln!("{:>28}: {error:.1e}", file.file_stem().and_then(|s| s.to_str()).unwrap_or("?"));
        if !(error <= TOL) {
            failures.push(format!("{}: {error:.1e}", file.display()));
        }
    }
    assert!(failures.is_empty(), "analytical ≠ forward tangents: {failures:?}");
}

#[test]
fn analytical_rnea_derivatives_match_forward_tangents_on_random_trees() {
    let mut rng = Rng::new(2018);
    for n in [1, 2, 3, 5, 8, 12] {
        for _ in 0..4 {
            let model = TreeShape::random(n, &mut rng).model(&mut rng, Integrator::Euler);
            let error = compare(&model, &mut rng);
            assert!(error <= TOL, "tree of {n} bodies: {error:.1e}");
        }
    }
}
