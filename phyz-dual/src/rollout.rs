//! The gradient of a rollout objective, by reverse mode (one forward rollout with checkpoints, one
//! backward sweep of step vector-Jacobian products), and its forward-mode counterpart.

use nalgebra::DVector;
use num_dual::DualSVec64;

use crate::DualError;
use crate::forward::{Seed, StateTangent, push_forward};
use crate::parameter::{check_differentiable, check_positions};
use crate::reverse::{Coordinates, Taped};
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_core::{Model, State};

/// A cost term's value and its gradients: with respect to the state in tangent coordinates
/// (`dq`, `dv`: `nv` each, as the step Jacobians) and, for a running cost, the control.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    pub value: f64,
    pub dq: DVector<f64>,
    pub dv: DVector<f64>,
    pub du: DVector<f64>,
}

impl Cost {
    /// Zero cost with zero gradients, for a model of `nv` degrees of freedom and `nu` controls
    /// (the running cost of an objective that only looks at the final state, say).
    pub fn zeros(nv: usize, nu: usize) -> Self {
        Cost { value: 0.0, dq: DVector::zeros(nv), dv: DVector::zeros(nv), du: DVector::zeros(nu) }
    }
}

/// A rollout objective `J = Σ_t running(t, x_t, u_t) + terminal(x_T)`, each term with its own
/// gradients.
pub trait Objective {
    /// The cost of step `t`, taken at the state it starts from and its control.
    fn running(&self, t: usize, state: &State<f64>, ctrl: &[f64]) -> Cost;
    /// The cost of the final state (its `du` is ignored).
    fn terminal(&self, state: &State<f64>) -> Cost;
}

/// An [`Objective`] from two closures.
pub struct CostFunctions<R, T> {
    pub running: R,
    pub terminal: T,
}

impl<R, T> Objective for CostFunctions<R, T>
where
    R: Fn(usize, &State<f64>, &[f64]) -> Cost,
    T: Fn(&State<f64>) -> Cost,
{
    fn running(&self, t: usize, state: &State<f64>, ctrl: &[f64]) -> Cost {
        (self.running)(t, state, ctrl)
    }
    fn terminal(&self, state: &State<f64>) -> Cost {
        (self.terminal)(state)
    }
}

/// A rollout and the gradient of its objective.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutGradient {
    /// The objective's value.
    pub value: f64,
    /// With respect to the initial position (tangent coordinates, `nv`), velocity and
    /// activations.
    pub dq0: DVector<f64>,
    pub dv0: DVector<f64>,
    pub dact0: DVector<f64>,
    /// With respect to each step's control.
    pub du: Vec<DVector<f64>>,
    /// With respect to the chosen parameters, in their order.
    pub dparams: DVector<f64>,
    /// The states visited, the initial one first.
    pub states: Vec<State<f64>>,
}

impl Cost {
    /// Checks the gradients' sizes against a model of `nv` degrees of freedom and `nu` controls.
    fn check(&self, nv: usize, nu: usize) -> Result<(), DualError> {
        for (what, expected, got) in
            [("cost dq", nv, self.dq.len()), ("cost dv", nv, self.dv.len()), ("cost du", nu, self.du.len())]
        {
            if expected != got {
                return Err(DualError::SeedDimension { what, expected, got });
            }
        }
        Ok(())
    }
}

/// Wraps a failure at step `step` of a rollout.
fn at_step(step: usize) -> impl Fn(DualError) -> DualError {
    move |e| DualError::AtStep { step, source: Box::new(e) }
}

/// Rolls out `controls` (one row per step) from `start` and returns the objective and its exact
/// gradient with respect to the initial state, every control and the parameters at `params`
/// (positions in [`Model::parameters`]; see [`crate::differentiable_parameters`]). The contact
/// solves start from `contact` (preset and warm starts) and leave it as the rollout does. A step
/// whose contact solve did not converge, or whose Hessian is singular, makes the call an error
/// naming the step; `contact` is then left as the rollout left it, at the failing step when the
/// forward pass finds it, at the end when only the backward sweep can (a singular Hessian, a
/// preset without derivatives).
///
/// Reverse mode: the rollout runs in `f64`, keeping each step's state, warm starts and contact
/// solutions as a checkpoint; the backward sweep then records each step again on the tape, from
/// its checkpoint and with its solutions given (no solver iteration runs backward), and pulls the adjoint `λ_t = ∂J/∂x_t` back through it (one vector-Jacobian product per step).
/// Its cost is a few forward rollouts whatever the number of parameters, and its memory one
/// step's tape besides the checkpoints.
pub fn rollout_gradient(
    model: &Model<f64>,
    start: &State<f64>,
    controls: &[Vec<f64>],
    params: &[usize],
    objective: &impl Objective,
    contact: &mut ContactState,
) -> Result<RolloutGradient, DualError> {
    let (nv, nu) = (model.nv(), model.nu());
    // Checked before the rollout is spent on them.
    check_differentiable(model, params)?;
    let mut replay = contact.clone();
    let mut states = vec![start.clone()];
    let mut checkpoints = Vec::with_capacity(controls.len());
    let mut logs = Vec::with_capacity(controls.len());
    let mut workspace = Workspace::default();
    for (t, ctrl) in controls.iter().enumerate() {
        checkpoints.push(contact.checkpoint());
        contact.keep_solutions();
        let stepped = step_in(model, &states[t], ctrl, contact, &mut workspace);
        logs.push(contact.take_solutions());
        stepped.map_err(|e| at_step(t)(e.into()))?;
        if !workspace.info.differentiable {
            return Err(at_step(t)(DualError::Unconverged { residual: workspace.info.residual }));
        }
        states.push(workspace.next.clone());
    }
    let terminal = objective.terminal(&states[controls.len()]);
    // The terminal cost's `du` is ignored; its state gradients must fit.
    Cost { du: DVector::zeros(nu), ..terminal.clone() }.check(nv, nu)?;
    let mut value = terminal.value;
    // The adjoint: λ_t = ∂J/∂x_t in tangent coordinates; costs do not read the activations.
    let state_cost =
        |cost: &Cost| StateTangent { qpos: cost.dq.clone(), qvel: cost.dv.clone(), act: DVector::zeros(model.na()) };
    let mut lambda = state_cost(&terminal);
    let mut du = vec![DVector::zeros(nu); controls.len()];
    let mut dparams = DVector::zeros(params.len());
    let mut tape = Taped::new(model, params)?;
    for t in (0..controls.len()).rev() {
        let cost = objective.running(t, &states[t], &controls[t]);
        cost.check(nv, nu).map_err(at_step(t))?;
        value += cost.value;
        // From the step's own start and solutions: the backward runs no solver iteration.
        replay.resume(&checkpoints[t]);
        replay.replay(std::mem::take(&mut logs[t]));
        let step = tape.record(Coordinates::Tangent, &states[t], &controls[t], &mut replay).map_err(at_step(t))?;
        replay.take_solutions();
        let (state_bar, ctrl_bar, params_bar) = tape.pull(&step, &lambda).map_err(at_step(t))?;
        dparams += params_bar;
        du[t] = &cost.du + ctrl_bar;
        lambda = StateTangent { qpos: &cost.dq + state_bar.qpos, qvel: &cost.dv + state_bar.qvel, act: state_bar.act };
    }
    Ok(RolloutGradient { value, dq0: lambda.qpos, dv0: lambda.qvel, dact0: lambda.act, du, dparams, states })
}

/// A direction in a rollout's inputs: the initial state (tangent coordinates), every step's
/// control, and the parameters at the `params` positions given alongside.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutDirection {
    pub dq0: DVector<f64>,
    pub dv0: DVector<f64>,
    pub dact0: DVector<f64>,
    pub du: Vec<DVector<f64>>,
    pub dparams: DVector<f64>,
}

impl RolloutDirection {
    /// The gradient's inner product with this direction: the directional derivative it
    /// predicts.
    pub fn dot(&self, gradient: &RolloutGradient) -> f64 {
        self.dq0.dot(&gradient.dq0)
            + self.dv0.dot(&gradient.dv0)
            + self.dact0.dot(&gradient.dact0)
            + self.du.iter().zip(&gradient.du).map(|(d, g)| d.dot(g)).sum::<f64>()
            + self.dparams.dot(&gradient.dparams)
    }
}

/// A rollout with directions carried forward through it.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutTangents {
    /// The objective and its derivative along each direction.
    pub value: f64,
    pub derivatives: Vec<f64>,
    /// The final state's derivative along each direction (tangent coordinates): the columns of
    /// `∂x_T/∂(inputs)` for unit directions.
    pub final_tangents: Vec<StateTangent>,
    /// The states visited, the initial one first.
    pub states: Vec<State<f64>>,
}

/// The objective, its directional derivatives along up to `N` directions and the final state's,
/// by carrying the directions forward through the whole rollout in one `DualSVec64<N>` pass per
/// step — the forward-mode counterpart of [`rollout_gradient`] (an independent check of it, and
/// the cheaper way when the directions are fewer than the outputs).
pub fn rollout_directional<const N: usize>(
    model: &Model<f64>,
    start: &State<f64>,
    controls: &[Vec<f64>],
    params: &[usize],
    directions: &[RolloutDirection],
    objective: &impl Objective,
    contact: &mut ContactState,
) -> Result<RolloutTangents, DualError> {
    if directions.len() > N {
        return Err(DualError::TooManySeeds { seeds: directions.len(), directions: N });
    }
    check_positions(model, params)?;
    let (nv, nu) = (model.nv(), model.nu());
    for d in directions {
        let sizes = [
            ("direction dq0", nv, d.dq0.len()),
            ("direction dv0", nv, d.dv0.len()),
            ("direction dact0", model.na(), d.dact0.len()),
            ("direction du (steps)", controls.len(), d.du.len()),
            ("direction dparams", params.len(), d.dparams.len()),
        ];
        let controls_fit = d.du.iter().map(|u| ("direction du", nu, u.len()));
        if let Some((what, expected, got)) = sizes.into_iter().chain(controls_fit).find(|(_, e, g)| e != g) {
            return Err(DualError::SeedDimension { what, expected, got });
        }
    }
    let count = model.parameters().len();
    let seed_params = |d: &RolloutDirection| {
        (!params.is_empty()).then(|| {
            let mut p = vec![0.0; count];
            for (&i, &v) in params.iter().zip(d.dparams.iter()) {
                p[i] += v;
            }
            p
        })
    };
    // The tangent of the current state along each direction.
    let mut tangents: Vec<StateTangent> = directions
        .iter()
        .map(|d| StateTangent { qpos: d.dq0.clone(), qvel: d.dv0.clone(), act: d.dact0.clone() })
        .collect();
    let mut states = vec![start.clone()];
    let mut workspace = Workspace::default();
    let (mut value, mut derivative) = (0.0, vec![0.0; directions.len()]);
    // Adds a cost term's value and its derivative along each direction.
    let mut add = |cost: &Cost, tangents: &[StateTangent], du: Option<usize>| {
        Cost { du: DVector::zeros(nu), ..cost.clone() }.check(nv, nu)?;
        if du.is_some() {
            cost.check(nv, nu)?;
        }
        value += cost.value;
        for (k, tangent) in tangents.iter().enumerate() {
            let control = du.map_or(0.0, |t| cost.du.dot(&directions[k].du[t]));
            derivative[k] += cost.dq.dot(&tangent.qpos) + cost.dv.dot(&tangent.qvel) + control;
        }
        Ok::<(), DualError>(())
    };
    for (t, ctrl) in controls.iter().enumerate() {
        let state = &states[t];
        add(&objective.running(t, state, ctrl), &tangents, Some(t)).map_err(at_step(t))?;
        let seeds: Vec<Seed> = directions
            .iter()
            .zip(&tangents)
            .map(|(d, tangent)| Seed {
                qpos: tangent.qpos.clone(),
                qvel: tangent.qvel.clone(),
                act: tangent.act.clone(),
                ctrl: d.du[t].clone(),
                params: seed_params(d),
            })
            .collect();
        let (next, moved, info) =
            push_forward::<DualSVec64<N>>(model, (state, ctrl), &seeds, contact, &mut workspace).map_err(at_step(t))?;
        if !info.differentiable {
            return Err(at_step(t)(DualError::Unconverged { residual: info.residual }));
        }
        tangents = moved;
        states.push(next);
    }
    add(&objective.terminal(&states[controls.len()]), &tangents, None)?;
    Ok(RolloutTangents { value, derivatives: derivative, final_tangents: tangents, states })
}
