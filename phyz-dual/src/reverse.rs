//! Reverse mode: vector-Jacobian products of a step, by the engine running on a tape ([`Var`]).
//!
//! The step is recorded once, its contact solve as one implicit block; one backward sweep then
//! gives the cotangents of the state, the controls and every chosen parameter together, so the
//! cost does not grow with their number (forward mode pays one tangent direction per input).

use nalgebra::DVector;

use crate::DualError;
use crate::forward::StateTangent;
use crate::parameter::check_differentiable;
use phyz_core::dynamics::{difference_position, integrate_position};
use phyz_core::sim::{ContactState, StepInfo, Workspace, check_input, step_in};
use phyz_core::{Model, Recording, State, Var};

/// The cotangents a step's vector-Jacobian product gives for the cotangent `ȳ` of the next state:
/// `Aᵀȳ`, `Bᵀȳ` and `Pᵀȳ` (see [`crate::StepJacobians`]), without forming `A`, `B` or `P`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepVjp {
    /// With respect to the state the step starts from, in tangent coordinates.
    pub state: StateTangent,
    pub ctrl: DVector<f64>,
    /// With respect to the chosen parameters, in their order.
    pub params: DVector<f64>,
    /// The state the step reaches.
    pub next: State<f64>,
    /// What the step's constraint solves did.
    pub info: StepInfo,
}

/// The vector-Jacobian product of one step from `state` under `ctrl`, for the cotangent
/// `cotangent` of the next state (tangent coordinates, as the step Jacobians'), with respect to
/// the state, the controls and the parameters at `params` (positions in
/// [`Model::parameters`]). The solve starts from the preset and warm starts in `contact`, which
/// the step updates. A contact solve that did not converge is an error: it has no derivative.
pub fn vjp(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    params: &[usize],
    cotangent: &StateTangent,
    contact: &mut ContactState,
) -> Result<StepVjp, DualError> {
    let mut tape = Taped::new(model, params)?;
    let step = tape.record(state, ctrl, contact)?;
    let (state_bar, ctrl_bar) = tape.pull(&step, cotangent)?;
    let params_bar = tape.parameter_adjoints();
    Ok(StepVjp { state: state_bar, ctrl: ctrl_bar, params: params_bar, next: step.next, info: step.info })
}

/// A tape for recording steps of one model, its chosen parameters recorded once at the start so
/// that every step recorded after them (the tape rewound to that point in between) shares them.
pub(crate) struct Taped<'m> {
    model: &'m Model<f64>,
    tape: Recording,
    /// The model on the tape: the chosen parameters are variables, the rest constants.
    recorded: Model<Var>,
    params: Vec<Var>,
    /// The tape's length after the parameters: each step is recorded from here.
    start: usize,
    workspace: Workspace<Var>,
}

/// One recorded step: its inputs and outputs on the tape, and what it reached.
pub(crate) struct RecordedStep {
    /// The inputs: position (tangent coordinates), velocity, activations, controls.
    inputs: [Vec<Var>; 4],
    /// The outputs: the next position (tangent coordinates at `next`), velocity, activations.
    outputs: [Vec<Var>; 3],
    pub(crate) next: State<f64>,
    pub(crate) info: StepInfo,
}

impl<'m> Taped<'m> {
    /// Starts this thread's tape with the parameters at `params` as its first variables.
    pub(crate) fn new(model: &'m Model<f64>, params: &[usize]) -> Result<Self, DualError> {
        check_differentiable(model, params)?;
        let tape = Recording::start();
        let mut values: Vec<Var> = model.parameters().into_iter().map(Var::constant).collect();
        let mut vars = Vec::with_capacity(params.len());
        for &i in params {
            // A parameter chosen twice is one variable.
            if !values[i].is_recorded() {
                values[i] = tape.input(values[i].value());
            }
            vars.push(values[i]);
        }
        let recorded = if params.is_empty() { model.cast() } else { model.with_parameters(&values)? };
        let start = tape.len();
        Ok(Taped { model, tape, recorded, params: vars, start, workspace: Workspace::default() })
    }

    /// Records one step from `state` under `ctrl` (the tape rewound to the parameters first).
    pub(crate) fn record(
        &mut self,
        state: &State<f64>,
        ctrl: &[f64],
        contact: &mut ContactState,
    ) -> Result<RecordedStep, DualError> {
        check_input(self.model, state, ctrl)?;
        self.tape.truncate(self.start);
        let tape = &self.tape;
        let inputs = |values: &mut dyn Iterator<Item = f64>| values.map(|x| tape.input(x)).collect::<Vec<Var>>();
        let delta = inputs(&mut (0..self.model.nv()).map(|_| 0.0));
        let qvel = inputs(&mut state.qvel.iter().copied());
        let act = inputs(&mut state.act.iter().copied());
        let controls = inputs(&mut ctrl.iter().copied());
        let model = &self.recorded;
        let qpos = integrate_position(
            model,
            &state.qpos.map(Var::constant),
            &DVector::from_column_slice(&delta),
            Var::constant(1.0),
        );
        let start = State {
            qpos,
            qvel: DVector::from_column_slice(&qvel),
            act: DVector::from_column_slice(&act),
            ..state.cast()
        };
        step_in(model, &start, &controls, contact, &mut self.workspace)?;
        let (next, info) = (&self.workspace.next, self.workspace.info.clone());
        if !info.converged {
            return Err(DualError::Unconverged { residual: info.residual });
        }
        let next_real = next.lane(0);
        let dq = difference_position(model, &next.qpos, &next_real.qpos.map(Var::constant));
        Ok(RecordedStep {
            inputs: [delta, qvel, act, controls],
            outputs: [dq.as_slice().to_vec(), next.qvel.as_slice().to_vec(), next.act.as_slice().to_vec()],
            next: next_real,
            info,
        })
    }

    /// One backward sweep of the last recorded step for the next state's cotangent: the
    /// cotangents of its state and controls; the parameters' are read with
    /// [`Taped::parameter_adjoints`] until the next sweep.
    pub(crate) fn pull(
        &self,
        step: &RecordedStep,
        cotangent: &StateTangent,
    ) -> Result<(StateTangent, DVector<f64>), DualError> {
        let bars = [&cotangent.qpos, &cotangent.qvel, &cotangent.act];
        for ((what, outputs), bar) in
            ["cotangent qpos", "cotangent qvel", "cotangent act"].into_iter().zip(&step.outputs).zip(bars)
        {
            if outputs.len() != bar.len() {
                return Err(DualError::SeedDimension { what, expected: outputs.len(), got: bar.len() });
            }
        }
        let seeds =
            step.outputs.iter().zip(bars).flat_map(|(outputs, bar)| outputs.iter().copied().zip(bar.iter().copied()));
        self.tape.backward(seeds);
        let adjoints = |vars: &[Var]| DVector::from_iterator(vars.len(), vars.iter().map(|&v| self.tape.adjoint(v)));
        let [delta, qvel, act, ctrl] = &step.inputs;
        Ok((StateTangent { qpos: adjoints(delta), qvel: adjoints(qvel), act: adjoints(act) }, adjoints(ctrl)))
    }

    /// The chosen parameters' cotangents from the last sweep.
    pub(crate) fn parameter_adjoints(&self) -> DVector<f64> {
        DVector::from_iterator(self.params.len(), self.params.iter().map(|&v| self.tape.adjoint(v)))
    }
}
