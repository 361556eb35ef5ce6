//! Checking burn's gradients through a batched rollout against independent derivatives of the
//! same steps: the engine run on num-dual numbers (forward-mode tangents) and central
//! differences of `f64` rollouts. The check a user can run on their own model
//! (`examples/gradcheck.rs`); the tests run it too.

use burn::tensor::{Device, Tensor};
use nalgebra::DVector;
use phyz_core::sim::{ContactState, step_with};
use phyz_core::{Model, Scalar, State};
use phyz_dual::Dual64;

use crate::host::write;
use crate::{BurnError, Simulation};

/// A rollout to differentiate: starts and controls lane after lane, the parameters with their
/// rows (1: shared by the lanes, else one per lane), and the objective's weights.
#[derive(Clone, Debug)]
pub struct RolloutCase {
    pub qpos: Vec<f64>,
    pub qvel: Vec<f64>,
    /// One `[batch, nu]` block per step.
    pub ctrl: Vec<Vec<f64>>,
    pub params: Option<(Vec<f64>, usize)>,
    /// The objective `Σ wq ⊙ q_T + ½ Σ wv ⊙ v_T²`, summed over the lanes.
    pub wq: Vec<f64>,
    pub wv: Vec<f64>,
}

/// A direction through a case's inputs, laid out as they are.
#[derive(Clone, Debug)]
pub struct Direction {
    pub qpos: Vec<f64>,
    pub qvel: Vec<f64>,
    pub ctrl: Vec<Vec<f64>>,
    pub params: Vec<f64>,
}

/// The objective and burn's gradients of it, laid out as the inputs, with each lane's
/// contact and limit counts summed over the steps.
#[derive(Clone, Debug)]
pub struct BurnGradient {
    pub value: f64,
    pub qpos: Vec<f64>,
    pub qvel: Vec<f64>,
    pub ctrl: Vec<Vec<f64>>,
    pub params: Vec<f64>,
    pub contacts: Vec<usize>,
    pub limits: Vec<usize>,
}

impl RolloutCase {
    pub fn batch(&self, model: &Model<f64>) -> usize {
        self.qpos.len() / model.nq().max(1)
    }

    /// The case's batch, its numbers checked against the model and the simulation's parameters.
    fn check(&self, sim: &Simulation) -> Result<usize, BurnError> {
        let model = sim.model();
        let batch = self.batch(model);
        let shape = |what: &'static str, got: usize, rows: usize, cols: usize| {
            if got == rows * cols {
                Ok(())
            } else {
                Err(BurnError::Shape { what, expected: vec![rows, cols], got: vec![got] })
            }
        };
        shape("qpos", self.qpos.len(), batch, model.nq())?;
        shape("qvel", self.qvel.len(), batch, model.nv())?;
        shape("wq", self.wq.len(), batch, model.nq())?;
        shape("wv", self.wv.len(), batch, model.nv())?;
        for u in &self.ctrl {
            shape("ctrl", u.len(), batch, model.nu())?;
        }
        if let Some((values, rows)) = &self.params {
            if *rows != 1 && *rows != batch {
                return Err(BurnError::Batch { expected: batch, got: *rows });
            }
            shape("params", values.len(), *rows, sim.parameter_indices().len())?;
        }
        Ok(batch)
    }

    /// `d` checked to be laid out as this case's inputs.
    fn check_direction(&self, sim: &Simulation, d: &Direction) -> Result<usize, BurnError> {
        let batch = self.check(sim)?;
        let params = self.params.as_ref().map_or(0, |(v, _)| v.len());
        let lengths = [
            ("direction qpos", d.qpos.len(), self.qpos.len()),
            ("direction qvel", d.qvel.len(), self.qvel.len()),
            ("direction params", d.params.len(), params),
            ("direction steps", d.ctrl.len(), self.ctrl.len()),
        ];
        for (what, got, expected) in lengths {
            if got != expected {
                return Err(BurnError::Shape { what, expected: vec![expected], got: vec![got] });
            }
        }
        if let Some((du, u)) = d.ctrl.iter().zip(&self.ctrl).find(|(du, u)| du.len() != u.len()) {
            return Err(BurnError::Shape { what: "direction ctrl", expected: vec![u.len()], got: vec![du.len()] });
        }
        Ok(batch)
    }

    /// The objective and its gradients by burn's backward through `sim`'s step operation.
    pub fn burn_gradient(&self, sim: &Simulation, device: &Device) -> Result<BurnGradient, BurnError> {
        let model = sim.model();
        let batch = self.check(sim)?;
        let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
        let start = sim
            .state(write(self.qpos.clone(), batch, nq, device), write(self.qvel.clone(), batch, nv, device))?
            .require_grad();
        let controls: Vec<Tensor<2>> =
            self.ctrl.iter().map(|u| write(u.clone(), batch, nu, device).require_grad()).collect();
        let params =
            self.params.as_ref().map(|(v, rows)| write(v.clone(), *rows, v.len() / rows, device).require_grad());
        let (mut state, mut contacts, mut limits) = (start.clone(), vec![0; batch], vec![0; batch]);
        for u in &controls {
            state = match &params {
                Some(p) => sim.step_with(&state, u, p)?,
                None => sim.step(&state, u)?,
            };
            for (l, info) in state.info().iter().enumerate() {
                contacts[l] += info.contacts;
                limits[l] += info.limits;
            }
        }
        let wq = write(self.wq.clone(), batch, nq, device);
        let wv = write(self.wv.clone(), batch, nv, device);
        let objective = (state.qpos * wq).sum() + (state.qvel.powi_scalar(2) * wv).sum().mul_scalar(0.5);
        let value = read_all(&objective.clone().reshape([1, 1]))[0];
        let grads = objective.backward();
        let grad = |t: &Tensor<2>| {
            t.grad(&grads).map(|g| read_all(&g)).unwrap_or_else(|| vec![0.0; t.dims().iter().product()])
        };
        Ok(BurnGradient {
            value,
            qpos: grad(&start.qpos),
            qvel: grad(&start.qvel),
            ctrl: controls.iter().map(grad).collect(),
            params: params.as_ref().map(grad).unwrap_or_default(),
            contacts,
            limits,
        })
    }

    /// The objective and its derivative along `d`, by the engine on `Dual64`: each lane stepped
    /// alone, with the simulation's preset and its own warm starts.
    pub fn dual_derivative(&self, sim: &Simulation, d: &Direction) -> Result<(f64, f64), BurnError> {
        let mut sum = (0.0, 0.0);
        for l in 0..self.check_direction(sim, d)? {
            let x = self.lane_objective(sim, l, Dual64::new, d)?;
            sum = (sum.0 + x.re, sum.1 + x.eps);
        }
        Ok(sum)
    }

    /// The objective's central difference along `d` with step `h`, from `f64` rollouts.
    pub fn central_difference(&self, sim: &Simulation, d: &Direction, h: f64) -> Result<f64, BurnError> {
        let mut sum = 0.0;
        for l in 0..self.check_direction(sim, d)? {
            let plus = self.lane_objective(sim, l, |x, dx| x + h * dx, d)?;
            let minus = self.lane_objective(sim, l, |x, dx| x - h * dx, d)?;
            sum += (plus - minus) / (2.0 * h);
        }
        Ok(sum)
    }

    /// Lane `l`'s objective in the scalar `S`, each input `x` with its direction `dx` made a
    /// number by `lift`.
    fn lane_objective<S: Scalar>(
        &self,
        sim: &Simulation,
        l: usize,
        lift: impl Fn(f64, f64) -> S,
        d: &Direction,
    ) -> Result<S, BurnError> {
        let model = sim.model();
        let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
        let mut all: Vec<S> = model.parameters().into_iter().map(|x| lift(x, 0.0)).collect();
        if let Some((values, rows)) = &self.params {
            let p = values.len() / rows;
            let row = if *rows == 1 { 0 } else { l };
            for (k, &i) in sim.parameter_indices().iter().enumerate() {
                all[i] = lift(values[row * p + k], d.params[row * p + k]);
            }
        }
        let lane_model: Model<S> = model.with_parameters(&all)?;
        let q = DVector::from_fn(nq, |i, _| lift(self.qpos[l * nq + i], d.qpos[l * nq + i]));
        let v = DVector::from_fn(nv, |i, _| lift(self.qvel[l * nv + i], d.qvel[l * nv + i]));
        let mut state: State<S> = lane_model.state(q, v);
        let mut contact = ContactState::new(sim.config());
        for (u, du) in self.ctrl.iter().zip(&d.ctrl) {
            let u: Vec<S> = (0..nu).map(|i| lift(u[l * nu + i], du[l * nu + i])).collect();
            state = step_with(&lane_model, &state, &u, &mut contact)
                .map_err(|source| BurnError::Step { lane: l, source })?
                .0;
        }
        let mut objective = S::zero();
        for i in 0..nq {
            objective += state.qpos[i] * S::from_f64(self.wq[l * nq + i]);
        }
        for i in 0..nv {
            objective += state.qvel[i] * state.qvel[i] * S::from_f64(0.5 * self.wv[l * nv + i]);
        }
        Ok(objective)
    }
}

impl BurnGradient {
    /// `⟨g, d⟩` and its componentwise scale `Σ |gᵢ| |dᵢ|`, the scale errors are relative to.
    pub fn along(&self, d: &Direction) -> (f64, f64) {
        let mut pairs: Vec<(&[f64], &[f64])> = vec![(&self.qpos, &d.qpos), (&self.qvel, &d.qvel)];
        pairs.extend(self.ctrl.iter().zip(&d.ctrl).map(|(g, d)| (g.as_slice(), d.as_slice())));
        pairs.push((&self.params, &d.params));
        pairs
            .iter()
            .flat_map(|(g, d)| g.iter().zip(d.iter()))
            .fold((0.0, 0.0), |(s, a), (g, d)| (s + g * d, a + (g * d).abs()))
    }
}

fn read_all(t: &Tensor<2>) -> Vec<f64> {
    t.to_data().try_to_vec::<f64>().unwrap_or_default()
}
