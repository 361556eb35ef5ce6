//! Checking derivatives against central finite differences: the independent method a user can
//! run on their own model, objective and parameters.

use nalgebra::DVector;

use crate::DualError;
use crate::jacobian::step_jacobians_lanes;
use crate::rollout::{Objective, RolloutDirection, rollout_gradient};
use phyz_core::contact::SolverConfig;
use phyz_core::dynamics::{difference_position, integrate_position};
use phyz_core::sim::{ContactState, step_with};
use phyz_core::{Model, State};

/// The worst disagreement a check found, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    /// `|exact − fd| / max(|exact|, |fd|, floor)`, the worst over what was checked.
    pub worst: f64,
    /// What it was measured on (a direction, a Jacobian column).
    pub at: String,
}

impl CheckReport {
    fn new() -> Self {
        CheckReport { worst: 0.0, at: "nothing checked".into() }
    }

    /// Keeps `error` if it is the worst so far; a non-finite error is the worst there is.
    fn record(&mut self, error: f64, at: impl FnOnce() -> String) {
        let error = if error.is_nan() { f64::INFINITY } else { error };
        if error > self.worst || self.at == "nothing checked" {
            self.worst = error;
            self.at = at();
        }
    }

    /// The relative error of one number, with `floor` as the smallest scale.
    fn relative(exact: f64, fd: f64, floor: f64) -> f64 {
        (exact - fd).abs() / exact.abs().max(fd.abs()).max(floor)
    }
}

/// A small deterministic generator for check directions (no dependency for a test aid).
struct Directions(u64);

impl Directions {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn vector(&mut self, n: usize) -> DVector<f64> {
        DVector::from_fn(n, |_, _| self.uniform())
    }
}

/// The inputs of a rollout: model, initial state, controls.
type Inputs = (Model<f64>, State<f64>, Vec<Vec<f64>>);

/// The inputs of a rollout moved by `eps` along `d`.
fn moved(
    model: &Model<f64>,
    start: &State<f64>,
    controls: &[Vec<f64>],
    params: &[usize],
    d: &RolloutDirection,
    eps: f64,
) -> Result<Inputs, DualError> {
    let mut values = model.parameters();
    for (&i, &v) in params.iter().zip(d.dparams.iter()) {
        values[i] += eps * v;
    }
    let model = model.with_parameters(&values)?;
    let qpos = integrate_position(&model, &start.qpos, &d.dq0, eps);
    let state = State { qpos, qvel: &start.qvel + &d.dv0 * eps, act: &start.act + &d.dact0 * eps, ..start.clone() };
    let controls = controls
        .iter()
        .zip(&d.du)
        .map(|(u, du)| u.iter().zip(du.iter()).map(|(u, du)| u + eps * du).collect())
        .collect();
    Ok((model, state, controls))
}

/// The objective of a plain `f64` rollout from a cold start of `config`; an unconverged contact
/// solve is an error naming the step.
pub fn rollout_value(
    model: &Model<f64>,
    start: &State<f64>,
    controls: &[Vec<f64>],
    objective: &impl Objective,
    config: SolverConfig,
) -> Result<f64, DualError> {
    let mut contact = ContactState::new(config);
    let mut state = start.clone();
    let mut value = 0.0;
    for (t, ctrl) in controls.iter().enumerate() {
        value += objective.running(t, &state, ctrl).value;
        let at_step = |e: DualError| DualError::AtStep { step: t, source: Box::new(e) };
        let (next, info) = step_with(model, &state, ctrl, &mut contact).map_err(|e| at_step(e.into()))?;
        // An unconverged solve is no reference to compare a derivative with.
        if !info.converged {
            return Err(at_step(DualError::Unconverged { residual: info.residual }));
        }
        state = next;
    }
    Ok(value + objective.terminal(&state).value)
}

/// Checks [`rollout_gradient`] against central differences (step `h`) of the objective along
/// `count` random directions in the initial state, the controls and the parameters at `params`.
/// Both start from a cold cache of `config`.
#[allow(clippy::too_many_arguments)]
pub fn check_rollout_gradient(
    model: &Model<f64>,
    start: &State<f64>,
    controls: &[Vec<f64>],
    params: &[usize],
    objective: &impl Objective,
    config: SolverConfig,
    count: usize,
    h: f64,
) -> Result<CheckReport, DualError> {
    let gradient = rollout_gradient(model, start, controls, params, objective, &mut ContactState::new(config))?;
    let mut directions = Directions(0x9e37_79b9_7f4a_7c15);
    let mut report = CheckReport::new();
    for k in 0..count {
        let d = RolloutDirection {
            dq0: directions.vector(model.nv()),
            dv0: directions.vector(model.nv()),
            dact0: directions.vector(model.na()),
            du: controls.iter().map(|_| directions.vector(model.nu())).collect(),
            dparams: directions.vector(params.len()),
        };
        let value = |eps: f64| -> Result<f64, DualError> {
            let (model, state, controls) = moved(model, start, controls, params, &d, eps)?;
            rollout_value(&model, &state, &controls, objective, config)
        };
        let fd = (value(h)? - value(-h)?) / (2.0 * h);
        let exact = d.dot(&gradient);
        report.record(CheckReport::relative(exact, fd, 1e-9), || {
            format!("random direction {k} (gradient {exact:.9e}, differences {fd:.9e})")
        });
    }
    Ok(report)
}

/// Checks the step Jacobians `A` and `B` column by column against central differences (step
/// `h`) of the step from a cold cache of `config`. A column's error is the largest entry's,
/// relative to the column's size.
pub fn check_step_jacobians(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    config: SolverConfig,
    h: f64,
) -> Result<CheckReport, DualError> {
    let (nv, nu) = (model.nv(), model.nu());
    let n = 2 * nv + model.na();
    let jac = step_jacobians_lanes::<8>(model, state, ctrl, &[], &mut ContactState::new(config))?;
    let step = |s: &State<f64>, u: &[f64]| -> Result<DVector<f64>, DualError> {
        let next = step_with(model, s, u, &mut ContactState::new(config))?.0;
        // The next state in tangent coordinates around the exact step's.
        let dq = difference_position(model, &next.qpos, &jac.next.qpos);
        let (dv, dact) = (&next.qvel - &jac.next.qvel, &next.act - &jac.next.act);
        Ok(DVector::from_iterator(n, dq.iter().chain(dv.iter()).chain(dact.iter()).copied()))
    };
    let mut report = CheckReport::new();
    let names = |c: usize| match c {
        c if c < nv => format!("A column {c} (qpos tangent {c})"),
        c if c < 2 * nv => format!("A column {c} (qvel {})", c - nv),
        c if c < n => format!("A column {c} (act {})", c - 2 * nv),
        c => format!("B column {} (ctrl {})", c - n, c - n),
    };
    for c in 0..n + nu {
        let (mut plus, mut minus) = (state.clone(), state.clone());
        let (mut up, mut um) = (ctrl.to_vec(), ctrl.to_vec());
        match c {
            c if c < nv => {
                let mut e = DVector::zeros(nv);
                e[c] = 1.0;
                plus.qpos = integrate_position(model, &state.qpos, &e, h);
                minus.qpos = integrate_position(model, &state.qpos, &e, -h);
            }
            c if c < 2 * nv => {
                plus.qvel[c - nv] += h;
                minus.qvel[c - nv] -= h;
            }
            c if c < n => {
                plus.act[c - 2 * nv] += h;
                minus.act[c - 2 * nv] -= h;
            }
            c => {
                up[c - n] += h;
                um[c - n] -= h;
            }
        }
        let fd = (step(&plus, &up)? - step(&minus, &um)?) / (2.0 * h);
        let exact = if c < n { jac.a.column(c).into_owned() } else { jac.b.column(c - n).into_owned() };
        // nalgebra's `amax` skips NaN: a non-finite entry is reported as such.
        let finite = exact.iter().chain(fd.iter()).all(|x| x.is_finite());
        let scale = exact.amax().max(fd.amax()).max(1e-9);
        let error = if finite { (&exact - &fd).amax() / scale } else { f64::INFINITY };
        report.record(error, || names(c));
    }
    Ok(report)
}
