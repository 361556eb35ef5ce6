//! Pushing tangents through one step.

use nalgebra::DVector;
use num_dual::{Dual64, DualSVec64};

use crate::DualError;
use phyz_core::dynamics::{difference_position, integrate_position};
use phyz_core::sim::{ContactState, StepInfo, Workspace, check_input, step_in};
use phyz_core::{Model, Scalar, State};

/// A direction in the inputs of a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Seed {
    /// Position direction in tangent coordinates (`nv` entries): `q(ε) = q ⊕ ε·qpos`.
    pub qpos: DVector<f64>,
    pub qvel: DVector<f64>,
    /// Direction in the activations (`na` entries).
    pub act: DVector<f64>,
    pub ctrl: DVector<f64>,
    /// Direction in the model's parameters, in the order of [`Model::parameters`]; `None`
    /// holds the model fixed.
    pub params: Option<Vec<f64>>,
}

impl Seed {
    /// The zero direction for `model`.
    pub fn zeros(model: &Model<f64>) -> Self {
        Seed {
            qpos: DVector::zeros(model.nv()),
            qvel: DVector::zeros(model.nv()),
            act: DVector::zeros(model.na()),
            ctrl: DVector::zeros(model.nu()),
            params: None,
        }
    }

    pub(crate) fn check(&self, model: &Model<f64>) -> Result<(), DualError> {
        let params = self.params.as_ref().map(|p| (p.len(), model.parameters().len()));
        let dims = [
            ("qpos", model.nv(), self.qpos.len()),
            ("qvel", model.nv(), self.qvel.len()),
            ("act", model.na(), self.act.len()),
            ("ctrl", model.nu(), self.ctrl.len()),
        ];
        for (what, expected, got) in dims.into_iter().chain(params.map(|(got, expected)| ("params", expected, got))) {
            if expected != got {
                return Err(DualError::SeedDimension { what, expected, got });
            }
        }
        Ok(())
    }
}

/// The derivative of a state along a direction, in tangent coordinates (`nv` + `nv` + `na`).
#[derive(Clone, Debug, PartialEq)]
pub struct StateTangent {
    pub qpos: DVector<f64>,
    pub qvel: DVector<f64>,
    pub act: DVector<f64>,
}

/// A real value with the given tangent in each direction.
fn lift<D: Scalar>(value: f64, tangents: impl Iterator<Item = f64>) -> D {
    let mut x = D::from_f64(value);
    for (k, t) in tangents.enumerate() {
        if t != 0.0 {
            x.set_tangent(0, k, t);
        }
    }
    x
}

/// A step's inputs in a dual scalar: the model, the state and the controls.
pub(crate) type Seeded<D> = (Model<D>, State<D>, Vec<D>);

/// The model, state and controls in the dual scalar `D`, seed `k` in tangent direction `k`,
/// after checking the seeds against the model.
pub(crate) fn seeded<D: Scalar>(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    seeds: &[Seed],
) -> Result<Seeded<D>, DualError> {
    if seeds.len() > D::tangent_dim() {
        return Err(DualError::TooManySeeds { seeds: seeds.len(), directions: D::tangent_dim() });
    }
    check_input(model, state, ctrl)?;
    for seed in seeds {
        seed.check(model)?;
    }
    // Contact and limit rows read some parameters as constants: a direction along them would
    // come out without their effect through the constraints, silently — refuse it.
    if model.enabled.constraint && seeds.iter().any(|s| s.params.is_some()) {
        let constants = model.constraint_constants();
        let along = |p: &[f64]| constants.iter().copied().find(|&i| p[i] != 0.0);
        if let Some(index) = seeds.iter().filter_map(|s| s.params.as_deref()).find_map(along) {
            return Err(DualError::ConstantInConstraints { index });
        }
    }
    let model_d: Model<D> = if seeds.iter().any(|s| s.params.is_some()) {
        let values: Vec<D> = model
            .parameters()
            .iter()
            .enumerate()
            .map(|(i, &p)| lift(p, seeds.iter().map(|s| s.params.as_ref().map_or(0.0, |dp| dp[i]))))
            .collect();
        model.with_parameters(&values)?
    } else {
        model.cast()
    };
    let delta = DVector::from_fn(model.nv(), |i, _| lift::<D>(0.0, seeds.iter().map(|s| s.qpos[i])));
    let qpos = integrate_position(&model_d, &state.qpos.map(D::from_f64), &delta, D::one());
    let qvel = DVector::from_fn(model.nv(), |i, _| lift(state.qvel[i], seeds.iter().map(|s| s.qvel[i])));
    let act = DVector::from_fn(model.na(), |i, _| lift(state.act[i], seeds.iter().map(|s| s.act[i])));
    let ctrl_d: Vec<D> = (0..model.nu()).map(|i| lift(ctrl[i], seeds.iter().map(|s| s.ctrl[i]))).collect();
    Ok((model_d, State { qpos, qvel, act, ..state.cast() }, ctrl_d))
}

/// Steps once in the dual scalar `D`, with seed `k` in tangent direction `k`, from the solver
/// preset and warm starts in `contact` (which the step updates), in `workspace` (reused across
/// passes, so that a pass refills its storage instead of allocating it); returns the real next
/// state, the next state's tangent along each seed, and what the constraint solves did.
pub(crate) fn push_forward<D: Scalar>(
    model: &Model<f64>,
    (state, ctrl): (&State<f64>, &[f64]),
    seeds: &[Seed],
    contact: &mut ContactState,
    workspace: &mut Workspace<D>,
) -> Result<(State<f64>, Vec<StateTangent>, StepInfo), DualError> {
    let (model_d, start, ctrl_d) = seeded::<D>(model, state, ctrl, seeds)?;
    step_in(&model_d, &start, &ctrl_d, contact, workspace)?;
    let (next, info) = (&workspace.next, workspace.info.clone());
    let next_real = next.lane(0);
    let dq = difference_position(&model_d, &next.qpos, &next_real.qpos.map(D::from_f64));
    let tangents = (0..seeds.len())
        .map(|k| StateTangent {
            qpos: dq.map(|x| x.tangent(0, k)),
            qvel: next.qvel.map(|x| x.tangent(0, k)),
            act: next.act.map(|x| x.tangent(0, k)),
        })
        .collect();
    Ok((next_real, tangents, info))
}

/// The next state and its directional derivative along `seed` (one `Dual64` pass), from a
/// cold start of the default solver preset.
pub fn jvp(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    seed: &Seed,
) -> Result<(State<f64>, StateTangent), DualError> {
    jvp_with(model, state, ctrl, seed, &mut ContactState::default())
}

/// [`jvp`] from the solver preset and warm starts in `contact`, which the step updates.
pub fn jvp_with(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    seed: &Seed,
    contact: &mut ContactState,
) -> Result<(State<f64>, StateTangent), DualError> {
    let (next, mut tangents, _) =
        push_forward::<Dual64>(model, (state, ctrl), std::slice::from_ref(seed), contact, &mut Workspace::default())?;
    let tangent = tangents.pop().ok_or(DualError::TooManySeeds { seeds: 1, directions: 0 })?;
    Ok((next, tangent))
}

/// The next state and its directional derivatives along up to `N` seeds in one `DualSVec64<N>`
/// pass.
pub fn jvp_lanes<const N: usize>(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    seeds: &[Seed],
) -> Result<(State<f64>, Vec<StateTangent>), DualError> {
    let (next, tangents, _) = push_forward::<DualSVec64<N>>(
        model,
        (state, ctrl),
        seeds,
        &mut ContactState::default(),
        &mut Workspace::default(),
    )?;
    Ok((next, tangents))
}
