//! The three dynamics algorithms agree with each other on random trees: ABA (forward), CRBA
//! with the tree LDLᵀ (mass matrix) and RNEA (inverse).

mod common;

use common::{Rng, TreeShape, max_abs, random_state, random_vector};
use nalgebra::DVector;
use phyz::dynamics::{MassFactor, bias_forces, forward_dynamics, forward_kinematics, inverse_dynamics, mass_matrix};
use phyz::model::Integrator;
use proptest::prelude::*;

/// Relative tolerance stated by the foundation issue.
const TOL: f64 = 1e-10;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn aba_crba_rnea_agree(n in 1usize..=12, seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let model = TreeShape::random(n, &mut rng).model(&mut rng, Integrator::Euler);
        let state = random_state(&model, &mut rng);
        let tau = random_vector(model.nv(), &mut rng, 5.0);

        let kin = forward_kinematics(&model, &state.qpos);
        let qacc = forward_dynamics(&model, &kin, &state.qvel, &tau, None).expect("non-singular");
        let m = mass_matrix(&model, &kin);
        let c = bias_forces(&model, &kin, &state.qvel);

        // M is symmetric.
        prop_assert!(max_abs((&m - m.transpose()).as_slice()) <= TOL * max_abs(m.as_slice()));

        // M·ABA(q, v, τ) = τ − C(q, v), to within what a backward-stable solve leaves: relative
        // to |M|·|qacc| too, which a random tree with two axes almost in line makes 1e5 times
        // |M·qacc| (the products cancel; found by proptest at n = 3, cond(M) 6e6).
        let lhs = &m * &qacc;
        let rhs = &tau - &c;
        let scale = max_abs(tau.as_slice()) + max_abs(c.as_slice()) + (m.abs() * qacc.abs()).amax();
        let err = max_abs((&lhs - &rhs).as_slice());
        prop_assert!(err <= TOL * scale, "M·qacc vs τ − C: {err:e} (scale {scale:e})");

        // RNEA(q, v, ABA(q, v, τ)) = τ
        let back = inverse_dynamics(&model, &kin, &state.qvel, &qacc);
        let err = max_abs((&back - &tau).as_slice());
        prop_assert!(err <= TOL * scale, "RNEA(ABA) vs τ: {err:e} (scale {scale:e})");

        // The tree LDLᵀ solve solves the same system (its residual is as small as ABA's), and
        // gives ABA's answer to within what the system's conditioning allows: two backward-
        // stable solves of M a = b differ by up to cond(M) times their residuals (random trees
        // can put two axes almost in line, and cond(M) then reaches 1e12).
        let factor = MassFactor::new(&model, &m).expect("positive definite");
        let via_ldl: DVector<f64> = factor.solve(&rhs);
        let residual = max_abs((&m * &via_ldl - &rhs).as_slice());
        prop_assert!(residual <= TOL * scale, "M·LDLᵀ(b) vs b: {residual:e} (scale {scale:e})");
        let cond = if m.is_empty() { 1.0 } else {
            let eigen = m.symmetric_eigenvalues();
            eigen.max() / eigen.min()
        };
        let err = max_abs((&via_ldl - &qacc).as_slice());
        let acc_scale = max_abs(qacc.as_slice()).max(1.0);
        prop_assert!(err <= TOL * cond.max(1.0) * acc_scale, "LDLᵀ vs ABA: {err:e} (cond(M) {cond:e})");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The link-frame passes agree with RNEA's rooted frame, free joints' world-axis translations
    /// included: each link's velocity and velocity-product acceleration are RNEA's (at no
    /// acceleration, gravity taken out) seen from the link, and the generalized forces of forces
    /// applied to links do the same work as those forces (`τ·q̇ = Σ f_i·v_i`).
    #[test]
    fn link_frame_passes_agree_with_rnea(n in 1usize..=8, seed in any::<u64>()) {
        use phyz::dynamics::kinematics::{link_bias_accelerations, link_velocities};
        use phyz::dynamics::{RootedLinks, add_link_forces, place_inertias, rnea};
        use phyz::math::{Force, Motion};
        let mut rng = Rng::new(seed);
        let model = TreeShape::random(n, &mut rng).model(&mut rng, Integrator::Euler);
        let state = random_state(&model, &mut rng);
        let kin = forward_kinematics(&model, &state.qpos);
        let velocity = link_velocities(&model, &kin, &state.qvel);
        let mut bias = Vec::new();
        link_bias_accelerations(&model, &kin, &velocity, &state.qvel, &mut bias);
        let (mut inertia, mut rooted, mut tau) = (Vec::new(), RootedLinks::default(), DVector::zeros(model.nv()));
        place_inertias(&model, &kin, &mut inertia);
        rnea(&model, &kin, &inertia, (&state.qvel, None), &mut rooted, &mut tau);
        let gravity = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
        let scale = 1.0 + max_abs(state.qvel.as_slice()).powi(2);
        for (i, pose) in kin.rooted.iter().enumerate() {
            let v = pose.motion_to_parent(&velocity[i]).to_vector() - rooted.velocity[i].to_vector();
            let a = pose.motion_to_parent(&bias[i]).to_vector() - (rooted.acceleration[i] - gravity).to_vector();
            prop_assert!(v.amax() <= TOL * scale && a.amax() <= TOL * scale, "link {i}: {v} {a}");
        }
        let forces: Vec<Force<f64>> =
            velocity.iter().map(|_| Force::new(rng.vector(2.0), rng.vector(2.0))).collect();
        let power = velocity.iter().zip(&forces).map(|(v, f)| v.dot(f)).sum::<f64>();
        let (mut spent, mut tau) = (forces.clone(), DVector::zeros(model.nv()));
        add_link_forces(&model, &kin, &mut spent, &mut tau);
        let err = (tau.dot(&state.qvel) - power).abs();
        prop_assert!(err <= TOL * scale * forces.len() as f64, "τ·q̇ {} vs Σ f·v {power}", tau.dot(&state.qvel));
    }
}

/// Kinematics filled by `update` alone read the links' inertias, as `forward_kinematics`'s do:
/// the mass matrix, bias forces and kinetic energy from either agree exactly, and after the
/// model's masses and offsets change (`Model::edit`) the same kinematics take the new ones.
#[test]
fn kinematics_by_update_carry_the_inertias() {
    use phyz::dynamics::Kinematics;
    use phyz::dynamics::energy::kinetic_energy;
    let mut rng = Rng::new(11);
    let mut model = TreeShape::random(6, &mut rng).model(&mut rng, Integrator::Euler);
    let state = random_state(&model, &mut rng);
    let mut kin = Kinematics::default();
    kin.update(&model, &state.qpos);
    let reference = forward_kinematics(&model, &state.qpos);
    assert_eq!(mass_matrix(&model, &kin), mass_matrix(&model, &reference));
    assert_eq!(bias_forces(&model, &kin, &state.qvel), bias_forces(&model, &reference, &state.qvel));
    let energy = kinetic_energy(&model, &kin, &state.qvel);
    assert!(energy > 0.0 && energy == kinetic_energy(&model, &reference, &state.qvel), "{energy}");
    model
        .edit(|parts| {
            for body in parts.bodies.iter_mut().skip(1) {
                body.mass *= 3.0;
                body.pos.x += 0.1;
            }
        })
        .expect("valid masses");
    kin.update(&model, &state.qpos);
    let fresh = forward_kinematics(&model, &state.qpos);
    assert_eq!(mass_matrix(&model, &kin), mass_matrix(&model, &fresh));
    assert_eq!(kin.world, fresh.world, "the new offsets are taken too");
}
