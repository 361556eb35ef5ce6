//! The constraint stage of a step: gather contacts and limits, assemble the problem in `S`,
//! solve it, and turn the impulses into accelerations.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::FixedState;
use nalgebra::{DMatrix, DVector};

use super::batch_solver::BatchSolver;
use super::gather::{Gather, Key, StageInput, constrained, gather};
use super::weights::InverseWeights;
use crate::contact::differentiable::{merged, zones_on_all};
use crate::contact::newton::impulses;
use crate::contact::noslip;
use crate::contact::{
    ContactError, ContactProblem, ContactRow, JointSpace, Method, NewtonWorkspace, Solution, SolverConfig, Source,
    Units, Warm, solve_scalar_in,
};
use crate::dynamics::integrator::Rates;
use crate::dynamics::{Kinematics, MassFactor, Smooth};
use crate::error::StepError;
use crate::math::{SparseRows, copy_vector, zero_vector};
use crate::model::{Model, Point, State};
use crate::scalar::{Inputs, Scalar};

/// What the constraint stages of a step did (over all batch lanes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepInfo {
    /// Contacts and limits in the last solve, summed over the batch lanes.
    pub contacts: usize,
    pub limits: usize,
    /// Largest iteration count and residual over the step's solves (one per RK4 stage and lane).
    pub iterations: usize,
    pub residual: f64,
    /// Every solve of the step converged.
    pub converged: bool,
    /// Every solve of the step has a derivative: a Newton solve that converged, or a Gauss-Seidel
    /// pass, differentiated at its sweeps' fixed point whether or not it reached it
    /// (`contact::fixed_point`; its distance from it is `residual`); and MuJoCo's no-slip pass,
    /// where the model asks for it, stopped on its tolerance in every island, not its budget
    /// (its derivative is its fixed point's, `contact::noslip`).
    pub differentiable: bool,
    /// Impulses of the last solve, row by row, one lane after another (zero on the rows of a
    /// constraint absent from a lane).
    pub impulses: Vec<f64>,
}

/// The solver preset, the contact buffer's capacity and the warm-start cache a simulator keeps
/// between steps.
#[derive(Clone, Debug, Default)]
pub struct ContactState {
    pub config: SolverConfig,
    /// Contact slots a step may fill ([`ContactBuffer`]); `None`: as many as the batch needs.
    /// More contacts than slots is an error ([`StepError::ContactOverflow`]), not a lost contact.
    pub capacity: Option<usize>,
    /// One cache per batch lane.
    warm: Vec<LaneWarm>,
    /// The model's inverse weights per batch lane, with the parameters (real parts of every
    /// lane) they were computed from: recomputed whenever a parameter changes.
    weights: Option<LaneWeights>,
    /// Whether solves keep their solutions in a log, or take them from one.
    logging: Logging,
    /// Lane solves run (not given by a log).
    solves: u64,
}

/// The solutions of a run of solves, in order, each with its batch lanes' solutions: what
/// [`ContactState::replay`] gives back to the same solves taken again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolveLog(Vec<Vec<Solution>>);

impl SolveLog {
    /// The number of solves logged.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A [`ContactState`]'s solve count and log position before a step.
#[derive(Clone, Copy, Debug)]
pub(super) struct Progress {
    solves: u64,
    logged: usize,
}

/// What the solves do with a [`SolveLog`].
#[derive(Clone, Debug, Default)]
enum Logging {
    #[default]
    Off,
    /// Each solve's solutions are appended.
    Keep(SolveLog),
    /// Each solve takes the next solutions (at the index) instead of iterating.
    Replay(SolveLog, usize),
}

impl ContactState {
    pub fn new(config: SolverConfig) -> Self {
        ContactState { config, capacity: None, warm: Vec::new(), weights: None, logging: Logging::Off, solves: 0 }
    }

    /// From now on, every solve appends its solutions to a fresh log, until
    /// [`ContactState::take_solutions`]. A step taken again from the same start with that log
    /// ([`ContactState::replay`]) then needs no solver iteration: a reverse sweep replays its
    /// steps so.
    pub fn keep_solutions(&mut self) {
        self.logging = Logging::Keep(SolveLog::default());
    }

    /// The log kept since [`ContactState::keep_solutions`], or the one being replayed (empty if
    /// neither); solves stop logging or replaying.
    pub fn take_solutions(&mut self) -> SolveLog {
        match std::mem::take(&mut self.logging) {
            Logging::Keep(log) | Logging::Replay(log, _) => log,
            Logging::Off => SolveLog::default(),
        }
    }

    /// The next solves take their solutions from `log`, in order, and run no iteration: the
    /// solves of a step taken again from the very start it was logged at, whose problems are
    /// the logged ones (bit for bit: the derivative rules are built at these solutions). A
    /// solve left without a logged solution, or given one of another size, is an error.
    pub fn replay(&mut self, log: SolveLog) {
        self.logging = Logging::Replay(log, 0);
    }

    /// True when a replay has given every solution of its log (and when nothing replays).
    pub fn replay_used_up(&self) -> bool {
        match &self.logging {
            Logging::Replay(log, next) => *next == log.len(),
            _ => true,
        }
    }

    /// The lane solves this state has run (a replayed solve runs none).
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// The warm starts the next step will use, to take that step again later from the same
    /// start (a rollout's backward sweep replays its steps from such checkpoints).
    pub fn checkpoint(&self) -> WarmCheckpoint {
        WarmCheckpoint { last: self.warm.iter().map(|lane| lane.last.clone()).collect() }
    }

    /// Puts back the warm starts of a [`ContactState::checkpoint`].
    pub fn resume(&mut self, checkpoint: &WarmCheckpoint) {
        self.warm.resize_with(checkpoint.last.len(), LaneWarm::default);
        for (lane, last) in self.warm.iter_mut().zip(&checkpoint.last) {
            lane.last.clone_from(last);
            lane.pending.clear();
        }
    }

    /// How far the solve count and the log have come, to put back if a step fails.
    pub(super) fn progress(&self) -> Progress {
        let logged = match &self.logging {
            Logging::Keep(log) => log.len(),
            Logging::Replay(_, next) => *next,
            Logging::Off => 0,
        };
        Progress { solves: self.solves, logged }
    }

    pub(super) fn restore_progress(&mut self, progress: Progress) {
        self.solves = progress.solves;
        match &mut self.logging {
            Logging::Keep(log) => log.0.truncate(progress.logged),
            Logging::Replay(_, next) => *next = progress.logged,
            Logging::Off => {}
        }
    }

    /// Closes a step that succeeded: its solutions become the ones the next step starts from
    /// (the cache holds the last step's constraints, not every one ever seen; the last
    /// acceleration stays until a solve replaces it).
    pub(super) fn end_step(&mut self) {
        for lane in &mut self.warm {
            if !lane.pending.has_acceleration && lane.last.has_acceleration {
                copy_vector(&mut lane.pending.acceleration, &lane.last.acceleration);
                lane.pending.has_acceleration = true;
            }
            std::mem::swap(&mut lane.last, &mut lane.pending);
            lane.pending.clear();
            // Room in the next step's layer for as much as this step recorded: a step like it
            // then allocates nothing.
            let Solutions { acceleration, impulses, .. } = &mut lane.pending;
            if acceleration.len() != lane.last.acceleration.len() {
                zero_vector(acceleration, lane.last.acceleration.len());
            }
            impulses.reserve(lane.last.impulses.len());
        }
    }

    /// Drops what a failed step's solves recorded: the cache is as the step found it.
    pub(super) fn abandon_step(&mut self) {
        self.warm.iter_mut().for_each(|lane| lane.pending.clear());
    }

    /// The inverse weights a step of `model` from `state` needs, written into `out`; `false`
    /// (and nothing written) when nothing can be constrained.
    pub(super) fn weights_for_step<S: Scalar>(
        &mut self,
        model: &Model<S>,
        state: &State<S>,
        out: (&mut InverseWeights<S>, &mut Inputs<S>),
    ) -> Result<bool, StepError> {
        if !constrained(model) {
            return Ok(false);
        }
        let lanes = state.qpos.iter().chain(state.qvel.iter()).map(|x| x.lanes()).max().unwrap_or(1);
        self.weights(model, lanes, out)?;
        Ok(true)
    }

    /// The model's inverse weights, one value per batch lane: computed in `S` when a number they
    /// read carries a derivative (they depend on the masses), unless `out` already holds them
    /// for the same numbers (`from`); else from each
    /// lane's `f64` weights, computed once per set of those numbers.
    fn weights<S: Scalar>(
        &mut self,
        model: &Model<S>,
        lanes: usize,
        (out, from): (&mut InverseWeights<S>, &mut Inputs<S>),
    ) -> Result<(), StepError> {
        let inputs = || InverseWeights::inputs(model);
        let differentiated = inputs().any(|p| !p.is_constant());
        if differentiated {
            if !from.unchanged(inputs()) {
                *out = InverseWeights::new(model)?;
                from.keep(inputs());
            }
            return Ok(());
        }
        from.forget();
        let lane_major = || (0..lanes).flat_map(move |l| inputs().map(move |p| p.lane(l)));
        let known = matches!(&self.weights, Some((known, weights)) if weights.len() == lanes && lane_major().eq(known.iter().copied()));
        if !known {
            let weights = (0..lanes).map(|l| InverseWeights::new(&model.lane(l))).collect::<Result<Vec<_>, _>>()?;
            self.weights = Some((lane_major().collect(), weights));
        }
        if let Some((_, weights)) = &self.weights {
            InverseWeights::lift_into(weights, out);
        }
        Ok(())
    }
}

/// A [`ContactState`]'s warm starts between two steps: each lane's last step's solutions.
#[derive(Clone, Debug, Default)]
pub struct WarmCheckpoint {
    last: Vec<Solutions>,
}

/// What a lane's next solve starts from: the last completed step's solutions, and those the
/// step under way has recorded so far (its later stages read them first). A failed step drops
/// its own; nothing is copied to make that possible.
#[derive(Debug, Default)]
pub(super) struct LaneWarm {
    last: Solutions,
    pending: Solutions,
}

impl Clone for LaneWarm {
    fn clone(&self) -> Self {
        LaneWarm { last: self.last.clone(), pending: self.pending.clone() }
    }

    fn clone_from(&mut self, source: &Self) {
        self.last.clone_from(&source.last);
        self.pending.clone_from(&source.pending);
    }
}

/// One lane's recorded solutions: the last solve's acceleration (Newton, as MuJoCo's
/// `qacc_warmstart`) and each constraint's impulses (the Gauss-Seidel pass).
#[derive(Default)]
pub(super) struct Solutions {
    /// Storage kept when absent (`has_acceleration` false), so that steady steps allocate
    /// nothing.
    acceleration: DVector<f64>,
    has_acceleration: bool,
    /// Each constraint's impulses (hashed by a fast, fixed-seed hasher: the map is read and
    /// written for every constraint of every step).
    impulses: HashMap<Key, [f64; 6], FixedState>,
}

/// What is recorded, not the storage kept for it.
impl std::fmt::Debug for Solutions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let acceleration = self.has_acceleration.then_some(&self.acceleration);
        f.debug_struct("Solutions").field("acceleration", &acceleration).field("impulses", &self.impulses).finish()
    }
}

impl Solutions {
    /// Nothing recorded, the storage kept.
    fn clear(&mut self) {
        self.has_acceleration = false;
        self.impulses.clear();
    }
}

impl Clone for Solutions {
    /// A copy with room for as many impulses as this cache has held (an emptied map's storage
    /// too), so that the copy's steps do not grow it again.
    fn clone(&self) -> Self {
        let mut impulses = HashMap::with_capacity_and_hasher(self.impulses.capacity(), FixedState::default());
        impulses.extend(self.impulses.iter().map(|(&key, &w)| (key, w)));
        Solutions { acceleration: self.acceleration.clone(), has_acceleration: self.has_acceleration, impulses }
    }

    /// A copy in this value's storage (a checkpoint resumed so allocates nothing).
    fn clone_from(&mut self, source: &Self) {
        copy_vector(&mut self.acceleration, &source.acceleration);
        self.has_acceleration = source.has_acceleration;
        self.impulses.clone_from(&source.impulses);
    }
}

impl LaneWarm {
    /// The most recent acceleration recorded.
    fn acceleration(&self) -> Option<&DVector<f64>> {
        [&self.pending, &self.last].into_iter().find(|s| s.has_acceleration).map(|s| &s.acceleration)
    }

    /// The most recent impulses recorded for `key`.
    fn impulses(&self, key: &Key) -> Option<&[f64; 6]> {
        self.pending.impulses.get(key).or_else(|| self.last.impulses.get(key))
    }
}

impl ContactState {
    /// Each lane's warm start for the gathered constraints at velocity `v`, written into `warm`.
    fn warm_starts<S: Scalar>(
        &mut self,
        gather: &Gather<S>,
        v: &DVector<S>,
        dt: S,
        lanes: usize,
        warm: &mut Vec<Warm>,
    ) {
        self.warm.resize_with(lanes, LaneWarm::default);
        warm.resize_with(lanes, Warm::default);
        let rows = gather.row_count();
        if self.warm.iter().any(|cache| cache.acceleration().is_some()) {
            S::prefetch(v.iter().copied().chain([dt]));
        }
        for (lane, (cache, start)) in self.warm.iter().zip(warm.iter_mut()).enumerate() {
            let impulses = start.impulses.get_or_insert_with(|| DVector::zeros(rows));
            zero_vector(impulses, rows);
            let mut at = 0;
            for g in &gather.list {
                if let Some(w) = gather.keys(g)[lane].and_then(|key| cache.impulses(&key)) {
                    impulses.rows_mut(at, g.kind.dim()).copy_from_slice(&w[..g.kind.dim()]);
                }
                at += g.kind.dim();
            }
            match cache.acceleration() {
                Some(a) => {
                    let velocity = start.velocity.get_or_insert_with(|| DVector::zeros(a.len()));
                    zero_vector(velocity, a.len());
                    velocity.zip_zip_apply(v, a, |x, v, a| *x = v.lane(lane) + a * dt.lane(lane));
                }
                None => start.velocity = None,
            }
        }
    }

    /// Keeps each lane's solution for the next solve.
    fn record<S: Scalar>(&mut self, gather: &Gather<S>, solutions: &[Solution], v: &DVector<S>, dt: S) {
        S::prefetch(v.iter().copied().chain([dt]));
        for (lane, solution) in solutions.iter().enumerate() {
            let cache = &mut self.warm[lane].pending;
            zero_vector(&mut cache.acceleration, v.len());
            let velocity = solution.final_velocity();
            cache.acceleration.zip_zip_apply(velocity, v, |a, x, v| *a = (x - v.lane(lane)) / dt.lane(lane));
            cache.has_acceleration = true;
            let mut at = 0;
            for g in &gather.list {
                let dim = g.kind.dim();
                if let Some(key) = gather.keys(g)[lane] {
                    let mut w = [0.0; 6];
                    w[..dim].copy_from_slice(&solution.final_impulses().as_slice()[at..at + dim]);
                    cache.impulses.insert(key, w);
                }
                at += dim;
            }
        }
    }
}

/// Inverse weights of each batch lane, with the numbers they read (lane after lane) they came
/// from.
type LaneWeights = (Vec<f64>, Vec<InverseWeights<f64>>);

/// The problem of the gathered constraints at velocity `v`, written into `evaluation.problem`:
/// the joint-space data from the smooth stages (the bare mass matrix and the undamped free
/// motion where `split`, as MuJoCo solves), then each constraint's row in `S` from its
/// material, depth and pre-step velocity, whose values carry every tangent into the targets,
/// regularizer and friction.
fn assemble<S: Scalar>(
    evaluation: &mut Evaluation<S>,
    model: &Model<S>,
    v: &DVector<S>,
    split: bool,
    config: &SolverConfig,
) -> Result<(), StepError> {
    let Evaluation { smooth, bare, gather, problem, rows, bodies, pre_step, .. } = evaluation;
    let dt = model.timestep;
    let joint = &mut problem.joint;
    if split {
        bare.factorize_tree(model, &smooth.mass, None)?;
        copy_vector(&mut joint.free, &smooth.force);
        bare.solve_in_place(&mut joint.free);
        smooth.mass.to_dense(&mut joint.mass);
    } else {
        copy_vector(&mut joint.free, &smooth.acceleration);
        smooth.factored_into(&mut joint.mass);
    }
    joint.free *= dt;
    joint.free += v;
    joint.jacobian.copy_from(gather.jacobian());
    debug_assert_eq!(joint.jacobian.nrows(), gather.row_count(), "a row outside the list");
    joint.jacobian.mul_into(v, pre_step);
    let impratio = S::from_f64(model.contact.impratio);
    rows.clear();
    let mut at = 0;
    for g in &gather.list {
        let (depth, v_n) = (g.depth, pre_step[at]);
        let row = match g.tie {
            Some((norm, _)) => ContactRow::bilateral(&g.material, depth, norm, v_n, dt),
            None => ContactRow::from_material(g.kind, &g.material, depth, v_n, dt, config),
        };
        rows.push(ContactRow { inverse_weight: Some(g.inverse_weight), impratio, ..row });
        at += g.kind.dim();
    }
    bodies.clear();
    bodies.extend(gather.list.iter().map(|g| g.bodies));
    problem.set_rows(Some(pre_step), rows, Some(bodies), config);
    problem.present.clear();
    problem.present.extend(gather.list.iter().map(|g| g.present));
    // A tie's rows target the violation's true acceleration: MuJoCo 4 subtracts `J̇ v` from
    // their reference, which the velocity target takes over the step.
    let mut at = 0;
    for g in &gather.list {
        if let Some((_, velocity_product)) = g.tie {
            problem.target[at] -= dt * velocity_product;
        }
        at += g.kind.dim();
    }
    Ok(())
}

/// What stays fixed over a step's acceleration evaluations: the model, the controls, and the
/// model's inverse weights (`None` when nothing can be constrained).
#[derive(Clone, Copy)]
pub(crate) struct StepInputs<'a, S: Scalar> {
    pub model: &'a Model<S>,
    pub ctrl: &'a [S],
    pub weights: Option<&'a InverseWeights<S>>,
}

/// One acceleration evaluation's storage: the smooth stages' outputs and the constraint
/// stage's.
#[derive(Clone, Debug)]
pub(crate) struct Evaluation<S: Scalar> {
    smooth: Smooth<S>,
    /// The factor of the bare mass matrix where it differs from the smooth stages' (see
    /// [`acceleration`]).
    bare: MassFactor<S>,
    /// The gathered constraints, and the problem they make with its rows' numbers, the bodies
    /// each acts between and the pre-step velocity `J v`.
    gather: Gather<S>,
    problem: ContactProblem<S>,
    rows: Vec<ContactRow<S>>,
    bodies: Vec<[Option<usize>; 2]>,
    pre_step: DVector<S>,
    /// Each lane's warm start, the solve's storage, its post-step velocity and each lane's
    /// solution.
    warm: Vec<Warm>,
    newton: NewtonWorkspace,
    velocity: DVector<S>,
    solutions: Vec<Solution>,
    /// The joint-space impulse of a split solve.
    impulse: DVector<S>,
    /// The impulses MuJoCo's no-slip pass left, and whether it ran in the last solve.
    noslip_impulses: DVector<S>,
    noslip_ran: bool,
    /// The solve a batch scalar supplies for all its lanes, if it does.
    pub(super) solver: Option<Arc<dyn BatchSolver<S>>>,
}

impl<S: Scalar> Evaluation<S> {
    /// Takes what the model and the state fix for a step: once per step, before its
    /// evaluations.
    pub(super) fn prepare(&mut self, model: &Model<S>, state: &State<S>) {
        self.smooth.prepare(model, state);
    }

    /// Has the constraint stage record how each contact's and tie's rows push on the bodies
    /// ([`Gather::wrenches`]).
    pub(super) fn record_wrenches(&mut self) {
        self.gather.record_wrenches = true;
    }

    /// The last evaluation's kinematics and gathered constraints.
    pub(super) fn kinematics(&self) -> &Kinematics<S> {
        &self.smooth.kin
    }
    pub(super) fn gather(&self) -> &Gather<S> {
        &self.gather
    }

    /// The last solve's impulses on every gathered row, in `S`: each lane's from its own
    /// zones, with the tangents of the solved velocity (exact, as the velocity's). None
    /// without gathered constraints.
    pub(super) fn impulses(&self) -> DVector<S> {
        if self.gather.list.is_empty() || self.solutions.is_empty() {
            return DVector::zeros(0);
        }
        if self.noslip_ran {
            return self.noslip_impulses.clone();
        }
        // The solve leaves the velocity change; the impulses read the velocity.
        let x = &self.velocity + &self.problem.joint.free;
        merged(self.solutions.len(), |l| {
            impulses(&self.problem, &x, &zones_on_all(&self.problem, l, &self.solutions[l]), l)
        })
    }
}

impl<S: Scalar> Default for Evaluation<S> {
    fn default() -> Self {
        let joint = JointSpace { mass: DMatrix::zeros(0, 0), jacobian: SparseRows::default(), free: DVector::zeros(0) };
        Evaluation {
            smooth: Smooth::default(),
            bare: MassFactor::default(),
            gather: Gather::default(),
            problem: ContactProblem::from_rows(joint, None, &[], None, &SolverConfig::default()),
            rows: Vec::new(),
            bodies: Vec::new(),
            pre_step: DVector::zeros(0),
            warm: Vec::new(),
            newton: NewtonWorkspace::default(),
            velocity: DVector::zeros(0),
            solutions: Vec::new(),
            impulse: DVector::zeros(0),
            noslip_impulses: DVector::zeros(0),
            noslip_ran: false,
            solver: None,
        }
    }
}

/// The rates at `point`: the acceleration with the constraint impulses of a step of
/// `model.timestep` folded in (the smooth acceleration when nothing is active; the constraint
/// solve finds the post-step velocity `x`, and the acceleration is `a_smooth + (x − x₀)/dt`),
/// taken through `M − h·∂f/∂v` for the implicit integrators, and the activations' rates.
pub(crate) fn acceleration<S: Scalar>(
    step: &StepInputs<'_, S>,
    (point, extra_diagonal): (Point<'_, S>, Option<&DVector<S>>),
    evaluation: &mut Evaluation<S>,
    state: &mut ContactState,
    info: &mut StepInfo,
    rates: &mut Rates<S>,
) -> Result<(), StepError> {
    forward_acceleration(step, (point, extra_diagonal), evaluation, state, info, rates)?;
    evaluation.smooth.integrate_implicitly(step.model, point, step.ctrl, &mut rates.qacc)
}

/// [`acceleration`] before the implicit integrators' correction: MuJoCo's `qacc` and
/// `act_dot` of `mj_forward` at `point` (without an extra diagonal), which the
/// acceleration-stage sensors read.
pub(super) fn forward_acceleration<S: Scalar>(
    step: &StepInputs<'_, S>,
    (point, extra_diagonal): (Point<'_, S>, Option<&DVector<S>>),
    evaluation: &mut Evaluation<S>,
    state: &mut ContactState,
    info: &mut StepInfo,
    rates: &mut Rates<S>,
) -> Result<(), StepError> {
    let StepInputs { model, ctrl, weights } = *step;
    // MuJoCo's order: the mass matrix and its factorization first, shared by the smooth
    // acceleration and the constraint solve.
    let smooth = &mut evaluation.smooth;
    smooth.with_mass(model, point, ctrl, extra_diagonal)?;
    copy_vector(&mut rates.act_rate, &smooth.act_rate);
    copy_vector(&mut rates.qacc, &smooth.acceleration);
    if let Some(weights) = weights {
        constrained_acceleration(step, weights, (point, extra_diagonal), evaluation, state, info, &mut rates.qacc)?;
    }
    Ok(())
}

/// [`acceleration`]'s constraint stage: the smooth acceleration in `out` becomes the one with
/// the constraint impulses folded in.
fn constrained_acceleration<S: Scalar>(
    step: &StepInputs<'_, S>,
    weights: &InverseWeights<S>,
    (point, extra_diagonal): (Point<'_, S>, Option<&DVector<S>>),
    evaluation: &mut Evaluation<S>,
    state: &mut ContactState,
    info: &mut StepInfo,
    out: &mut DVector<S>,
) -> Result<(), StepError> {
    let model = step.model;
    let (q, v) = (point.qpos, point.qvel);
    let smooth = &mut evaluation.smooth;
    let lanes = q.iter().chain(v.iter()).map(|x| x.lanes()).max().unwrap_or(1);
    let input = StageInput { model, kin: &smooth.kin, q, v, lanes, weights };
    gather(&input, state.capacity, &state.config, &mut evaluation.gather)?;
    if evaluation.gather.list.is_empty() {
        (info.contacts, info.limits) = (0, 0);
        info.impulses.clear();
        return Ok(());
    }
    // phyz solves in the metric the integrator uses (with Euler's implicit damping); MuJoCo
    // solves with the bare mass matrix and the undamped free motion, then integrates the
    // constraint force with the damped one — reproduced under compatibility.
    let split = extra_diagonal.is_some() && state.config.mujoco_compat;
    let config = state.config;
    assemble(evaluation, model, v, split, &config)?;
    let dt = model.timestep;
    let Evaluation {
        smooth,
        bare,
        gather,
        problem,
        warm,
        newton,
        velocity,
        solutions,
        impulse,
        solver,
        noslip_impulses,
        noslip_ran,
        ..
    } = evaluation;
    let inertia = weights.mean_inertia.lane(0);
    problem.units = Units { scale: 1.0 / (inertia * model.nv().max(1) as f64), timestep: dt.lane(0) };
    state.warm_starts(gather, v, dt, lanes, warm);
    let source = match &mut state.logging {
        Logging::Replay(log, next) => {
            let given = log.0.get(*next).ok_or(ContactError::Replay("no logged solution left"))?;
            *next += 1;
            Source::Given(given)
        }
        _ => {
            state.solves += lanes as u64;
            Source::Solve(warm)
        }
    };
    match (solver, source) {
        (Some(solver), Source::Solve(warm)) => {
            let mass = if split { &*bare } else { &smooth.factor };
            solver.solve(problem, mass, &config, warm, velocity, solutions)?;
        }
        _ => solve_scalar_in(problem, &config, source, newton, velocity, solutions)?,
    }
    let noslip = model.contact.noslip;
    let slipless = noslip.iterations > 0 && config.mujoco_compat;
    if slipless {
        let trees = &model.tree().dof_root;
        noslip::pass(problem, &noslip, trees, config.method, solutions, velocity, noslip_impulses)?;
    } else {
        // A replayed log may carry a pass this solve does not run.
        solutions.iter_mut().for_each(|s| s.noslip = None);
    }
    *noslip_ran = slipless;
    if let Logging::Keep(log) = &mut state.logging {
        log.0.push(solutions.clone());
    }
    state.record(gather, solutions, v, dt);
    info.record(gather, solutions, config.method);
    // The velocity change the impulses make, folded into the acceleration.
    *velocity -= &problem.joint.free;
    if split {
        zero_vector(impulse, model.nv());
        impulse.gemv(S::one(), &problem.joint.mass, velocity, S::zero());
        smooth.factor.solve_in_place(impulse);
        out.axpy(S::one() / dt, impulse, S::one());
    } else {
        out.axpy(S::one() / dt, velocity, S::one());
    }
    Ok(())
}

impl StepInfo {
    /// Back to the report of a step that has solved nothing yet (keeping the impulses'
    /// storage).
    pub(super) fn reset(&mut self) {
        let impulses = std::mem::take(&mut self.impulses);
        *self = StepInfo { converged: true, differentiable: true, impulses, ..StepInfo::default() };
        self.impulses.clear();
    }

    /// Folds one solve (all lanes) into the step's report.
    fn record<S: Scalar>(&mut self, gather: &Gather<S>, solutions: &[Solution], method: Method) {
        self.impulses.clear();
        for solution in solutions {
            self.iterations = self.iterations.max(solution.iterations);
            self.residual = self.residual.max(solution.residual);
            self.converged &= solution.converged;
            // A pass of warm-up sweeps alone never solved its friction: no fixed point is near.
            self.differentiable &=
                solution.converged || (method == Method::GaussSeidel && solution.residual.is_finite());
            // The no-slip pass's derivative is its fixed point's: near only where it stopped on
            // its tolerance.
            self.differentiable &= solution.noslip.as_ref().is_none_or(|pass| pass.converged);
            self.impulses.extend(solution.final_impulses().iter());
        }
        // A pyramid's contact counts once, by its first edge; friction losses are neither.
        let count = |contact: bool| -> usize {
            let keys = gather.list.iter().flat_map(|g| gather.keys(g).iter().flatten());
            keys.filter(|key| match key {
                Key::Contact { edge, .. } => contact && *edge == 0,
                Key::JointLimit { .. } | Key::TendonLimit { .. } => !contact,
                Key::FrictionLoss { .. } | Key::TendonFriction { .. } | Key::Equality { .. } => false,
            })
            .count()
        };
        self.contacts = count(true);
        self.limits = count(false);
    }
}
