//! burn's gradients through batched rollouts against phyz-dual's forward-mode tangents: the
//! engine run on num-dual numbers, an independent derivative of the same steps.
//!
//! Tolerance, set before measuring: 1e-9 relative to `Σ |gᵢ| |dᵢ|` (the directional
//! derivative's componentwise scale). The two differ by num-dual's rounding (its division
//! multiplies by the reciprocal), which a contact rollout carries at about 1e-13.

mod common;

use burn::tensor::Tensor;
use common::{Rng, device, gymnasium, hopper_lanes, tensor, values};
use nalgebra::DVector;
use phyz_burn::Simulation;
use phyz_core::sim::{ContactState, step_with};
use phyz_core::{Model, State};
use phyz_dual::{Dual64, Parameter};

const STEPS: usize = 15;

/// A direction through a rollout's inputs, lane after lane.
struct Direction {
    qpos: Vec<f64>,
    qvel: Vec<f64>,
    ctrl: Vec<Vec<f64>>,
    params: Vec<f64>,
}

/// A rollout's inputs: starts and controls lane after lane, and the parameters with their rows
/// (1: shared, else one row per lane).
struct Inputs<'a> {
    qpos: &'a [f64],
    qvel: &'a [f64],
    ctrl: &'a [Vec<f64>],
    params: Option<(&'a [f64], usize)>,
}

/// The loss every test differentiates: `Σ wq ⊙ q_T + ½ Σ wv ⊙ v_T²` over the lanes.
struct Loss {
    wq: Vec<f64>,
    wv: Vec<f64>,
}

/// What burn's backward gives for a rollout: the loss and the gradients of its inputs.
struct BurnGradient {
    loss: f64,
    qpos: Vec<f64>,
    qvel: Vec<f64>,
    ctrl: Vec<Vec<f64>>,
    params: Vec<f64>,
    contacts: Vec<usize>,
    limits: Vec<usize>,
}

fn burn_rollout(sim: &Simulation, inputs: &Inputs, loss: &Loss) -> BurnGradient {
    let Inputs { qpos, qvel, ctrl, params } = *inputs;
    let device = device();
    let model = sim.model();
    let batch = qpos.len() / model.nq();
    let start = sim
        .state(tensor(qpos.to_vec(), batch, model.nq(), &device), tensor(qvel.to_vec(), batch, model.nv(), &device))
        .expect("valid state")
        .require_grad();
    let controls: Vec<Tensor<2>> =
        ctrl.iter().map(|u| tensor(u.clone(), batch, model.nu(), &device).require_grad()).collect();
    let p = params.map(|(v, rows)| tensor(v.to_vec(), rows, v.len() / rows, &device).require_grad());
    let mut state = start.clone();
    let (mut contacts, mut limits) = (vec![0; batch], vec![0; batch]);
    for u in &controls {
        state = match &p {
            Some(p) => sim.step_with(&state, u, p),
            None => sim.step(&state, u),
        }
        .expect("steps");
        for (l, info) in state.info().iter().enumerate() {
            contacts[l] += info.contacts;
            limits[l] += info.limits;
        }
    }
    let wq = tensor(loss.wq.clone(), batch, model.nq(), &device);
    let wv = tensor(loss.wv.clone(), batch, model.nv(), &device);
    let total = (state.qpos.clone() * wq).sum() + (state.qvel.clone().powi_scalar(2) * wv).sum().mul_scalar(0.5);
    let value = values(&total.clone().reshape([1, 1]))[0];
    let grads = total.backward();
    let grad = |t: &Tensor<2>| values(&t.grad(&grads).expect("a gradient"));
    BurnGradient {
        loss: value,
        qpos: grad(&start.qpos),
        qvel: grad(&start.qvel),
        ctrl: controls.iter().map(grad).collect(),
        params: p.as_ref().map(grad).unwrap_or_default(),
        contacts,
        limits,
    }
}

/// The loss and its derivative along `d`, by the engine on `Dual64` (each lane stepped alone,
/// with the same preset and its own warm starts).
fn dual_derivative(sim: &Simulation, chosen: &[usize], inputs: &Inputs, loss: &Loss, d: &Direction) -> (f64, f64) {
    let Inputs { qpos, qvel, ctrl, params } = *inputs;
    let model = sim.model();
    let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
    let batch = qpos.len() / nq;
    let dual = |x: f64, dx: f64| Dual64::new(x, dx);
    let (mut value, mut derivative) = (0.0, 0.0);
    for l in 0..batch {
        let mut all: Vec<Dual64> = model.parameters().into_iter().map(|x| dual(x, 0.0)).collect();
        if let Some((v, rows)) = params {
            let p = v.len() / rows;
            let row = if rows == 1 { 0 } else { l };
            for (k, &i) in chosen.iter().enumerate() {
                all[i] = dual(v[row * p + k], d.params[row * p + k]);
            }
        }
        let lane_model: Model<Dual64> = model.with_parameters(&all).expect("parameters");
        let q = DVector::from_fn(nq, |i, _| dual(qpos[l * nq + i], d.qpos[l * nq + i]));
        let v = DVector::from_fn(nv, |i, _| dual(qvel[l * nv + i], d.qvel[l * nv + i]));
        let mut state: State<Dual64> = lane_model.state(q, v);
        let mut contact = ContactState::new(phyz_core::contact::SolverConfig::default());
        for (u, du) in ctrl.iter().zip(&d.ctrl) {
            let u: Vec<Dual64> = (0..nu).map(|i| dual(u[l * nu + i], du[l * nu + i])).collect();
            state = step_with(&lane_model, &state, &u, &mut contact).expect("dual step").0;
        }
        for i in 0..nq {
            let x = state.qpos[i] * loss.wq[l * nq + i];
            value += x.re;
            derivative += x.eps;
        }
        for i in 0..nv {
            let x = state.qvel[i] * state.qvel[i] * (0.5 * loss.wv[l * nv + i]);
            value += x.re;
            derivative += x.eps;
        }
    }
    (value, derivative)
}

/// `⟨g, d⟩` and its componentwise scale `Σ |gᵢ| |dᵢ|`.
fn dot(g: &BurnGradient, d: &Direction) -> (f64, f64) {
    let pairs = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x * y, (x * y).abs())).collect::<Vec<_>>();
    let mut all = pairs(&g.qpos, &d.qpos);
    all.extend(pairs(&g.qvel, &d.qvel));
    for (gu, du) in g.ctrl.iter().zip(&d.ctrl) {
        all.extend(pairs(gu, du));
    }
    all.extend(pairs(&g.params, &d.params));
    all.iter().fold((0.0, 0.0), |(s, a), (x, y)| (s + x, a + y))
}

fn check(sim: &Simulation, chosen: &[usize], params: Option<(&[f64], usize)>, seed: u64) -> f64 {
    let model = sim.model();
    let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
    let mut rng = Rng(seed);
    let (qpos, qvel) = hopper_lanes(sim);
    let batch = qpos.len() / nq;
    let ctrl: Vec<Vec<f64>> = (0..STEPS).map(|_| rng.vec(batch * nu, 0.4)).collect();
    let loss = Loss { wq: rng.vec(batch * nq, 1.0), wv: rng.vec(batch * nv, 1.0) };
    let inputs = Inputs { qpos: &qpos, qvel: &qvel, ctrl: &ctrl, params };
    let g = burn_rollout(sim, &inputs, &loss);
    // The lanes' contact sets differ: one on the floor, one in the air, one at a limit.
    assert!(
        g.contacts[0] > 0 && g.contacts[1] == 0 && g.contacts[2] == 0 && g.limits[2] > 0,
        "contacts {:?} limits {:?}",
        g.contacts,
        g.limits
    );
    let mut worst = 0.0f64;
    for _ in 0..4 {
        let d = Direction {
            qpos: rng.vec(qpos.len(), 1.0),
            qvel: rng.vec(qvel.len(), 1.0),
            ctrl: (0..STEPS).map(|_| rng.vec(batch * nu, 1.0)).collect(),
            params: params.map(|(v, _)| rng.vec(v.len(), 1.0)).unwrap_or_default(),
        };
        let (value, exact) = dual_derivative(sim, chosen, &inputs, &loss, &d);
        assert!((value - g.loss).abs() <= 1e-12 * value.abs().max(1.0), "loss {value} vs {}", g.loss);
        let (ours, scale) = dot(&g, &d);
        let error = (ours - exact).abs() / scale;
        worst = worst.max(error);
        assert!(error <= 1e-9, "burn {ours} vs dual {exact} (relative {error:e})");
    }
    worst
}

/// A mass, and the foot's friction and contact damping: parameters of the smooth dynamics and of
/// the contact rows.
fn hopper_parameters() -> Vec<Parameter> {
    vec![
        Parameter::BodyMass("torso".into()),
        Parameter::GeomFriction("foot_geom".into()),
        Parameter::GeomSolref("foot_geom".into(), 1),
    ]
}

#[test]
fn gradients_equal_forward_tangents_through_contact_and_limits() {
    let sim = Simulation::new(gymnasium("hopper"));
    let worst = check(&sim, &[], None, 11);
    println!("state and controls: worst relative error {worst:e}");
}

#[test]
fn gradients_of_shared_parameters_equal_forward_tangents() {
    let base = Simulation::new(gymnasium("hopper"));
    let chosen = Parameter::indices(&hopper_parameters(), base.model()).expect("named parameters");
    let sim = base.with_parameter_indices(&chosen).expect("differentiable");
    let values: Vec<f64> = chosen.iter().map(|&i| base.model().parameters()[i] * 1.1).collect();
    let worst = check(&sim, &chosen, Some((&values, 1)), 12);
    println!("shared parameters: worst relative error {worst:e}");
}

#[test]
fn gradients_of_per_lane_parameters_equal_forward_tangents() {
    let base = Simulation::new(gymnasium("hopper"));
    let chosen = Parameter::indices(&hopper_parameters(), base.model()).expect("named parameters");
    let sim = base.with_parameters(&hopper_parameters()).expect("differentiable");
    let own: Vec<f64> = chosen.iter().map(|&i| base.model().parameters()[i]).collect();
    let values: Vec<f64> = (0..3).flat_map(|l| own.iter().map(move |v| v * (0.9 + 0.1 * l as f64))).collect();
    let worst = check(&sim, &chosen, Some((&values, 3)), 13);
    println!("per-lane parameters: worst relative error {worst:e}");
}

/// Each lane's gradient is its own: a lane stepped in a batch gets, bit for bit, the gradient it
/// gets stepped alone.
#[test]
fn each_lane_gets_its_own_gradient() {
    let sim = Simulation::new(gymnasium("hopper"));
    let (nq, nv, nu) = (sim.model().nq(), sim.model().nv(), sim.model().nu());
    let mut rng = Rng(5);
    let (qpos, qvel) = hopper_lanes(&sim);
    let ctrl: Vec<Vec<f64>> = (0..STEPS).map(|_| rng.vec(3 * nu, 0.4)).collect();
    let loss = Loss { wq: rng.vec(3 * nq, 1.0), wv: rng.vec(3 * nv, 1.0) };
    let batch = burn_rollout(&sim, &Inputs { qpos: &qpos, qvel: &qvel, ctrl: &ctrl, params: None }, &loss);
    for l in 0..3 {
        let lane = |v: &[f64], n: usize| v[l * n..(l + 1) * n].to_vec();
        let one = Loss { wq: lane(&loss.wq, nq), wv: lane(&loss.wv, nv) };
        let ctrl_l: Vec<Vec<f64>> = ctrl.iter().map(|u| lane(u, nu)).collect();
        let (qpos_l, qvel_l) = (lane(&qpos, nq), lane(&qvel, nv));
        let alone = burn_rollout(&sim, &Inputs { qpos: &qpos_l, qvel: &qvel_l, ctrl: &ctrl_l, params: None }, &one);
        assert_eq!(alone.qpos, lane(&batch.qpos, nq), "lane {l}");
        assert_eq!(alone.qvel, lane(&batch.qvel, nv), "lane {l}");
        for (a, b) in alone.ctrl.iter().zip(&batch.ctrl) {
            assert_eq!(*a, lane(b, nu), "lane {l}");
        }
    }
}
