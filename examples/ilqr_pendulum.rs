//! iLQR swing-up of gymnasium's inverted pendulum (cart-pole) with phyz's exact step Jacobians.
//!
//! The gymnasium model limits the pole's hinge to ±90° (it only balances); the swing-up frees
//! the hinge and starts with the pole hanging down. The cart keeps its ±1 m rail (a joint limit,
//! differentiated like any constraint) and its ±3 control range (gear 100).
//!
//! `cargo run --release --example ilqr_pendulum`

use std::f64::consts::PI;

use nalgebra::{DMatrix, DVector};
use phyz::dual::step_jacobians;
use phyz::mjcf;
use phyz::{Model, State, step};

const STEPS: usize = 200;
const CTRL_LIMIT: f64 = 3.0;

/// The state in tangent coordinates (hinge and slide joints: positions are already tangent).
fn flat(s: &State<f64>) -> DVector<f64> {
    DVector::from_iterator(4, s.qpos.iter().chain(s.qvel.iter()).copied())
}

/// Running cost weights: a little on the cart and its speed, on the pole's angle from upright,
/// and on the control.
fn running_weights() -> (DMatrix<f64>, f64) {
    (DMatrix::from_diagonal(&DVector::from_vec(vec![0.1, 0.1, 0.01, 0.01])), 0.01)
}

/// Final cost weights: upright, still, centred.
fn final_weights() -> DMatrix<f64> {
    DMatrix::from_diagonal(&DVector::from_vec(vec![10.0, 100.0, 10.0, 10.0]))
}

/// The state's deviation from upright (angle wrapped to (−π, π]).
fn error(x: &DVector<f64>) -> DVector<f64> {
    let mut e = x.clone();
    e[1] = (x[1] + PI).rem_euclid(2.0 * PI) - PI;
    e
}

fn cost(xs: &[State<f64>], us: &[f64]) -> f64 {
    let (q, r) = running_weights();
    let running: f64 = xs[..STEPS]
        .iter()
        .zip(us)
        .map(|(x, u)| {
            let e = error(&flat(x));
            0.5 * e.dot(&(&q * &e)) + 0.5 * r * u * u
        })
        .sum();
    let e = error(&flat(&xs[STEPS]));
    running + 0.5 * e.dot(&(final_weights() * &e))
}

fn rollout(model: &Model<f64>, x0: &State<f64>, us: &[f64]) -> Result<Vec<State<f64>>, phyz::StepError> {
    let mut xs = vec![x0.clone()];
    for u in us {
        let next = step(model, &xs[xs.len() - 1], &[*u])?;
        xs.push(next);
    }
    Ok(xs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/models/gymnasium/inverted_pendulum.xml");
    let mut model = mjcf::load(path)?;
    model.edit(|parts| parts.joints.iter_mut().filter(|j| j.name == "hinge").for_each(|j| j.range = None))?;
    let mut x0 = model.default_state();
    x0.qpos[1] = PI;
    let (q, r) = running_weights();
    // A first guess that rocks the cart near the hanging pole's natural period.
    let mut us: Vec<f64> = (0..STEPS).map(|t| (t as f64 * model.timestep * 2.0 * PI / 1.6).sin()).collect();
    let mut xs = rollout(&model, &x0, &us)?;
    let mut current = cost(&xs, &us);
    println!("iLQR swing-up, {STEPS} steps of {} s; initial cost {current:.4}", model.timestep);
    let mut mu = 1e-6;
    for iteration in 1..=60 {
        // Exact A_t, B_t along the current trajectory.
        let jacobians: Vec<_> =
            (0..STEPS).map(|t| step_jacobians(&model, &xs[t], &[us[t]])).collect::<Result<_, _>>()?;
        // Backward pass on the quadratic model of the cost-to-go.
        let mut v_x = final_weights() * error(&flat(&xs[STEPS]));
        let mut v_xx = final_weights();
        let mut gains = vec![(0.0, DVector::zeros(4)); STEPS];
        for t in (0..STEPS).rev() {
            let (a, b) = (&jacobians[t].a, &jacobians[t].b);
            let e = error(&flat(&xs[t]));
            let q_x = &q * &e + a.transpose() * &v_x;
            let q_u = r * us[t] + (b.transpose() * &v_x)[0];
            let q_xx = &q + a.transpose() * &v_xx * a;
            let q_uu = r + (b.transpose() * &v_xx * b)[(0, 0)] + mu;
            let q_ux = b.transpose() * &v_xx * a;
            let (mut k, mut gain) = (-q_u / q_uu, -q_ux.row(0).transpose() / q_uu);
            // A control held at its limit and pushed further stays there: no feedback through it.
            let pushed_out = (us[t] >= CTRL_LIMIT && k > 0.0) || (us[t] <= -CTRL_LIMIT && k < 0.0);
            if pushed_out {
                (k, gain) = (0.0, DVector::zeros(4));
            }
            v_x = &q_x + gain.clone() * (q_uu * k + q_u) + q_ux.row(0).transpose() * k;
            v_xx = &q_xx + &gain * gain.transpose() * q_uu + &gain * &q_ux + q_ux.transpose() * gain.transpose();
            v_xx = (&v_xx + v_xx.transpose()) * 0.5;
            gains[t] = (k, gain);
        }
        // Forward pass with a line search on the feed-forward term; controls clamped.
        let mut accepted = false;
        for alpha in [1.0, 0.5, 0.25, 0.1, 0.05, 0.01] {
            let mut trial_us = Vec::with_capacity(STEPS);
            let mut trial_xs = vec![x0.clone()];
            for t in 0..STEPS {
                let dx = flat(&trial_xs[t]) - flat(&xs[t]);
                let u = (us[t] + alpha * gains[t].0 + gains[t].1.dot(&dx)).clamp(-CTRL_LIMIT, CTRL_LIMIT);
                trial_us.push(u);
                let next = step(&model, &trial_xs[t], &[u])?;
                trial_xs.push(next);
            }
            let trial = cost(&trial_xs, &trial_us);
            if trial < current {
                (xs, us, current) = (trial_xs, trial_us, trial);
                accepted = true;
                break;
            }
        }
        mu = if accepted { (mu / 10.0).max(1e-9) } else { mu * 10.0 };
        let end = &xs[STEPS];
        println!(
            "iteration {iteration:>2}: cost {current:10.4}, final pole angle {:+.4} rad, cart {:+.3} m",
            (end.qpos[1] + PI).rem_euclid(2.0 * PI) - PI,
            end.qpos[0]
        );
        if !accepted && mu > 1e6 {
            break;
        }
    }
    let end = &xs[STEPS];
    println!(
        "swung up: pole {:+.2e} rad from upright, turning at {:+.2e} rad/s, cart at {:+.3} m",
        (end.qpos[1] + PI).rem_euclid(2.0 * PI) - PI,
        end.qvel[1],
        end.qpos[0]
    );
    Ok(())
}
