//! Reverse mode: vector-Jacobian products of a step, by the engine running on a tape ([`Var`]).
//!
//! The step is recorded once, its contact solve as one implicit block; one backward sweep then
//! gives the cotangents of the state, the controls and every chosen parameter together, so the
//! cost does not grow with their number (forward mode pays one tangent direction per input).

use nalgebra::{DMatrix, DVector};

use crate::DualError;
use crate::forward::StateTangent;
use crate::jacobian::StepJacobians;
use crate::parameter::check_differentiable;
use phyz_core::dynamics::{difference_position, integrate_position};
use phyz_core::scalar::tape::ROWS;
use phyz_core::scalar::{Frozen, RowAdjoints};
use phyz_core::sim::{ContactState, StepInfo, Workspace, check_input, step_in};
use phyz_core::{AutodiffHooks, Model, Recording, State, Var};
use rayon::prelude::*;

/// The cotangents a step's vector-Jacobian product gives for the cotangent `ȳ` of the next state:
/// `Aᵀȳ`, `Bᵀȳ` and `Pᵀȳ` (see [`crate::StepJacobians`]), without forming `A`, `B` or `P`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepVjp {
    /// With respect to the state the step starts from, its positions in the coordinates asked
    /// for ([`Coordinates::Tangent`] unless [`vjp_in`] says otherwise).
    pub state: StateTangent,
    pub ctrl: DVector<f64>,
    /// With respect to the chosen parameters, in their order.
    pub params: DVector<f64>,
    /// The state the step reaches.
    pub next: State<f64>,
    /// What the step's constraint solves did.
    pub info: StepInfo,
}

/// The coordinates a step's positions are differentiated in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Coordinates {
    /// `q ⊕ δ`: `nv` numbers, MuJoCo's convention, in which quaternions stay unit.
    #[default]
    Tangent,
    /// The `nq` numbers as stored, quaternions' four included: what a tensor of positions is
    /// differentiated in (a loss on raw positions, a gradient for each stored number).
    Stored,
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
    vjp_in(Coordinates::Tangent, model, state, ctrl, params, cotangent, contact)
}

/// [`vjp`] with the positions in `coordinates`: under [`Coordinates::Stored`] the position
/// parts of `cotangent` and of the result have `nq` entries. A `contact` replaying a
/// [`phyz_core::sim::SolveLog`] kept when the step was first taken makes the step's solves
/// run no iteration.
pub fn vjp_in(
    coordinates: Coordinates,
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    params: &[usize],
    cotangent: &StateTangent,
    contact: &mut ContactState,
) -> Result<StepVjp, DualError> {
    StepVjps::new(model, params)?.at(coordinates, state, ctrl, cotangent, contact)
}

/// [`vjp_in`] for many steps of one model: the model is put on the tape's scalar once, and the
/// step's storage is reused from one product to the next.
pub struct StepVjps<'m>(Taped<'m>);

impl<'m> StepVjps<'m> {
    /// Products with respect to the state, the controls and the parameters at `params`.
    pub fn new(model: &'m Model<f64>, params: &[usize]) -> Result<Self, DualError> {
        Ok(StepVjps(Taped::new(model, params)?))
    }

    /// The product of the step from `state` under `ctrl` (see [`vjp_in`]).
    pub fn at(
        &mut self,
        coordinates: Coordinates,
        state: &State<f64>,
        ctrl: &[f64],
        cotangent: &StateTangent,
        contact: &mut ContactState,
    ) -> Result<StepVjp, DualError> {
        let step = self.0.record(coordinates, state, ctrl, contact)?;
        let (state_bar, ctrl_bar, params_bar) = self.0.pull(&step, cotangent)?;
        Ok(StepVjp { state: state_bar, ctrl: ctrl_bar, params: params_bar, next: step.next, info: step.info })
    }
}

/// Exact step Jacobians by reverse mode: the step recorded once, then one backward sweep per
/// [`ROWS`] rows of the Jacobian (`2nv + na` rows), whatever the number of its columns (the
/// state, the controls and the parameters at `params`). The same Jacobians as
/// [`crate::step_jacobians_lanes`], cheaper where the columns outnumber the rows; the solve
/// starts from the preset and warm starts in `contact`, which the step updates. For many
/// states of one model (an iLQR sweep), [`ReverseJacobians`] keeps the model on the tape.
pub fn step_jacobians_reverse(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    params: &[usize],
    contact: &mut ContactState,
) -> Result<StepJacobians, DualError> {
    ReverseJacobians::new(model, params)?.at(state, ctrl, contact)
}

/// [`step_jacobians_reverse`] for many states of one model: the model is put on the tape's
/// scalar once, and the step's storage is reused from one evaluation to the next.
pub struct ReverseJacobians<'m>(Taped<'m>);

impl<'m> ReverseJacobians<'m> {
    /// Jacobians with respect to the state, the controls and the parameters at `params`.
    pub fn new(model: &'m Model<f64>, params: &[usize]) -> Result<Self, DualError> {
        Ok(ReverseJacobians(Taped::new(model, params)?))
    }

    /// The Jacobians of the step from `state` under `ctrl` (see [`step_jacobians_reverse`]).
    pub fn at(
        &mut self,
        state: &State<f64>,
        ctrl: &[f64],
        contact: &mut ContactState,
    ) -> Result<StepJacobians, DualError> {
        let RecordedStep { tape, inputs, outputs, next, info } =
            self.0.record(Coordinates::Tangent, state, ctrl, contact)?;
        let outputs: Vec<Var> = outputs.concat();
        let inputs: Vec<Var> = inputs.concat().into_iter().chain(self.0.params.iter().copied()).collect();
        // The sweeps only read the tape: they share the machine's threads, each with its own
        // rows of adjoints.
        let tape = tape.freeze();
        let chunks: Vec<&[Var]> = outputs.chunks(ROWS).collect();
        let sweep = |rows: &&[Var]| {
            SWEEPS.with(|storage| {
                let storage = &mut *storage.borrow_mut();
                tape.backward_rows(rows, storage);
                inputs.iter().map(|&input| tape.adjoint_rows(storage, input)).collect::<Vec<_>>()
            })
        };
        // Handing sweeps to other threads costs tens of microseconds: worth it for long tapes.
        let rows: Vec<Vec<[f64; ROWS]>> = if tape.len() * chunks.len() >= PARALLEL_NODES {
            chunks.par_iter().map(sweep).collect()
        } else {
            chunks.iter().map(sweep).collect()
        };
        tape.release();
        let jac = DMatrix::from_fn(outputs.len(), inputs.len(), |i, j| rows[i / ROWS][j][i % ROWS]);
        let (n, nu, np) = (outputs.len(), ctrl.len(), self.0.params.len());
        Ok(StepJacobians {
            a: jac.columns(0, n).into_owned(),
            b: jac.columns(n, nu).into_owned(),
            p: jac.columns(n + nu, np).into_owned(),
            next,
            info,
        })
    }
}

/// Nodes times sweeps above which a Jacobian's sweeps run on several threads (a sweep takes
/// about 5 µs per thousand nodes, handing work to other threads tens of microseconds).
const PARALLEL_NODES: usize = 20_000;

thread_local! {
    /// Each thread's storage of row sweeps, kept from one Jacobian to the next.
    static SWEEPS: std::cell::RefCell<RowAdjoints> = std::cell::RefCell::new(RowAdjoints::default());
}

/// Steps of one model recorded on this thread's tape, one recording per step. Every recording
/// begins with the same prefix — the chosen parameters and what they alone fix — so that the
/// model on the tape's scalar, built once, and the inverse weights, computed once, refer to
/// them in each.
pub(crate) struct Taped<'m> {
    model: &'m Model<f64>,
    /// The model on the tape: the chosen parameters are variables, the rest constants.
    recorded: Model<Var>,
    /// The chosen parameters' variables (one per position asked for, repeated positions
    /// sharing theirs).
    params: Vec<Var>,
    /// The tape of the parameters and what they alone fix (the inverse weights, when they
    /// depend on them): every step's recording begins with it.
    prefix: Frozen,
    workspace: Workspace<Var>,
}

/// One recorded step: its recording, its inputs and outputs on the tape, and what it reached.
pub(crate) struct RecordedStep {
    pub(crate) tape: Recording,
    /// The inputs: position (in the coordinates recorded), velocity, activations, controls.
    inputs: [Vec<Var>; 4],
    /// The outputs: the next position (tangent coordinates at `next`, or stored), velocity,
    /// activations.
    outputs: [Vec<Var>; 3],
    pub(crate) next: State<f64>,
    pub(crate) info: StepInfo,
}

impl<'m> Taped<'m> {
    /// The model with the parameters at `params` as variables.
    pub(crate) fn new(model: &'m Model<f64>, params: &[usize]) -> Result<Self, DualError> {
        check_differentiable(model, params)?;
        let tape = Recording::try_start().ok_or(DualError::AlreadyRecording)?;
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
        // The model's constants were computed with its parameters, in the prefix.
        Ok(Taped { model, recorded, params: vars, prefix: tape.freeze(), workspace: Workspace::default() })
    }

    /// Records one step from `state` under `ctrl`, its positions in `coordinates`.
    pub(crate) fn record(
        &mut self,
        coordinates: Coordinates,
        state: &State<f64>,
        ctrl: &[f64],
        contact: &mut ContactState,
    ) -> Result<RecordedStep, DualError> {
        check_input(self.model, state, ctrl)?;
        let tape = Recording::try_start_with(&self.prefix).ok_or(DualError::AlreadyRecording)?;
        let inputs = |values: &mut dyn Iterator<Item = f64>| values.map(|x| tape.input(x)).collect::<Vec<Var>>();
        let model = &self.recorded;
        let (position, qpos) = match coordinates {
            Coordinates::Tangent => {
                let delta = inputs(&mut (0..self.model.nv()).map(|_| 0.0));
                // `q ⊕ δ` at `δ = 0` renormalizes quaternions, a few ulps away from `q`: the
                // position is `q` itself, with the derivative of `q ⊕ δ`, so that the step
                // replays the `f64` one bit for bit.
                let q = state.qpos.map(Var::constant);
                let moved = integrate_position(model, &q, &DVector::from_column_slice(&delta), Var::constant(1.0));
                (delta, q.zip_map(&moved, |q, moved| q + (moved - moved.detach())))
            }
            Coordinates::Stored => {
                let q = inputs(&mut state.qpos.iter().copied());
                let qpos = DVector::from_column_slice(&q);
                (q, qpos)
            }
        };
        let qvel = inputs(&mut state.qvel.iter().copied());
        let act = inputs(&mut state.act.iter().copied());
        let controls = inputs(&mut ctrl.iter().copied());
        let start = State {
            qpos,
            qvel: DVector::from_column_slice(&qvel),
            act: DVector::from_column_slice(&act),
            ..state.cast()
        };
        step_in(model, &start, &controls, contact, &mut self.workspace)?;
        let (next, info) = (&self.workspace.next, self.workspace.info.clone());
        if !info.differentiable {
            return Err(DualError::Unconverged { residual: info.residual });
        }
        let next_real = next.lane(0);
        let next_position = match coordinates {
            Coordinates::Tangent => {
                difference_position(model, &next.qpos, &next_real.qpos.map(Var::constant)).as_slice().to_vec()
            }
            Coordinates::Stored => next.qpos.as_slice().to_vec(),
        };
        Ok(RecordedStep {
            tape,
            inputs: [position, qvel, act, controls],
            outputs: [next_position, next.qvel.as_slice().to_vec(), next.act.as_slice().to_vec()],
            next: next_real,
            info,
        })
    }

    /// One backward sweep of a recorded step for the next state's cotangent: the cotangents of
    /// its state, its controls and the chosen parameters.
    pub(crate) fn pull(
        &self,
        step: &RecordedStep,
        cotangent: &StateTangent,
    ) -> Result<(StateTangent, DVector<f64>, DVector<f64>), DualError> {
        let bars = [&cotangent.qpos, &cotangent.qvel, &cotangent.act];
        let names = ["cotangent qpos", "cotangent qvel", "cotangent act"];
        for ((what, outputs), bar) in names.into_iter().zip(&step.outputs).zip(bars) {
            if outputs.len() != bar.len() {
                return Err(DualError::SeedDimension { what, expected: outputs.len(), got: bar.len() });
            }
        }
        let seeds =
            step.outputs.iter().zip(bars).flat_map(|(outputs, bar)| outputs.iter().copied().zip(bar.iter().copied()));
        step.tape.backward(seeds);
        let adjoints = |vars: &[Var]| DVector::from_iterator(vars.len(), vars.iter().map(|&v| step.tape.adjoint(v)));
        let [delta, qvel, act, ctrl] = &step.inputs;
        let state = StateTangent { qpos: adjoints(delta), qvel: adjoints(qvel), act: adjoints(act) };
        Ok((state, adjoints(ctrl), adjoints(&self.params)))
    }
}
