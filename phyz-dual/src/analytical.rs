//! Step Jacobians by stages: the heavy stages differentiated analytically in `f64`, the light
//! ones by forward tangents through that stage alone.
//!
//! Forward mode pushes tangents through the whole step, so each direction pays kinematics, the
//! mass matrix, its factor, RNEA and the solve again. Here the step is taken once in `f64`, and
//! its derivative is assembled stage by stage:
//!
//! - the kinematics' tangents written from the `f64` kinematics (`Kinematics::set_along`);
//! - the applied forces (actuators, passive forces, activation rates) by `DualSVec64<8>` tangents
//!   through those forces only, eight columns per pass;
//! - inverse dynamics by its analytical derivatives ([`RneaDerivatives`]);
//! - the acceleration by the implicit function theorem on `K·q̈ = f(q, v, act, u) − C(q, v)`,
//!   `K = M + h·B` (Euler's implicit damping), with the step's own factor of `K`:
//!   `dq̈ = K⁻¹ (∂f − ∂RNEA(q, v, q̈) − h ∂B·q̈)`, no new factorization;
//! - the integration (`q ⊕ h v'`, the activations) by tangents through it alone.
//!
//! Where constraint rows act, the solve is differentiated by the implicit function theorem at the
//! step's own solution, the metric `K` held constant with its change folded into the free
//! velocity: under Newton's rule as linear algebra over every column at once, the rows' part
//! from the rows gathered again in the tangent scalar (`sim::constraint_force_tangent`); under
//! the Gauss-Seidel sweeps' fixed-point rule by the constraint stage in the tangent scalar, the
//! step's solve replayed (`sim::constraint_stage`).
//!
//! It covers the semi-implicit Euler step; other integrators are refused, as are MuJoCo's split
//! constraint solve under Euler's implicit damping and its no-slip pass (`mujoco_compat`).

use nalgebra::{DMatrix, DVector};
use num_dual::DualSVec64;

use crate::DualError;
use crate::jacobian::StepJacobians;
use phyz_core::contact::{ContactError, Method, Sensitivity};
use phyz_core::dynamics::actuation::integrate_activations;
use phyz_core::dynamics::integrator::euler_damping;
use phyz_core::dynamics::{RneaDerivatives, difference_position, integrate_position};
use phyz_core::model::{Integrator, JointKind, Point};
use phyz_core::scalar::ImplicitRule;
use phyz_core::sim::{
    ContactState, Data, SolveLog, StepError, WarmCheckpoint, Workspace, constraint_force_tangent, constraint_stage,
    step_in,
};
use phyz_core::{Arithmetic, Model, State, Tangents};

/// Columns per forward pass.
const LANES: usize = 8;
type Lanes = DualSVec64<LANES>;

/// Step Jacobians `A`, `B` of one model at many states, by stages (see the module's notes). The
/// model is cast to the tangent scalar once, and the steps' workspaces are kept from one state
/// to the next (the matrices themselves are made anew each time).
pub struct AnalyticalJacobians {
    model: Model<f64>,
    lanes: Model<Lanes>,
    workspace: Workspace<f64>,
    /// The passes' storage: the smooth stages and the constraint rows in the tangent scalar,
    /// and the solver state the Gauss-Seidel route's replayed solves run in.
    tangents: Workspace<Lanes>,
    contact: ContactState,
    rnea: RneaDerivatives<f64>,
    /// The passes' columns and the Newton rule's right-hand sides, kept from call to call (see
    /// [`Columns::shape`]).
    columns: Columns,
    dg: Vec<f64>,
    /// The solve's mass matrix, dense (its velocity columns enter `dg`).
    metric: DMatrix<f64>,
}

/// How the passes take the constraint stage.
enum Constraints<'a> {
    /// No constraint row acts: `dq̈ = K⁻¹ · forcing`.
    Off,
    /// The Newton rule `H` at the step's solution (its factorized Hessian): each pass leaves
    /// the tangents of the rows' term `−Jᵀ f(J x − target)` at the step's velocity, and after
    /// the passes `dx = −H⁻¹ dg` is solved for every column in one sweep (see
    /// [`AnalyticalJacobians::solved_columns`]); the rows are gathered under the preset of
    /// the solver state given.
    Newton(Sensitivity, &'a ContactState),
    /// Another method (Gauss-Seidel sweeps, with their own fixed-point rule): the constraint
    /// stage in the tangent scalar, its solve replayed from the solver's warm starts before the
    /// step (`sim::constraint_stage`).
    Replayed(&'a WarmCheckpoint),
}

/// What every pass of one evaluation reads: the state and controls, and how the constraint
/// stage is taken.
struct Pass<'a> {
    state: &'a State<f64>,
    ctrl: &'a [f64],
    constraints: Constraints<'a>,
}

/// The columns the passes fill (`nv` rows each unless said): the forcing `K dq̈_s`, the rows'
/// term of the Newton rule, the acceleration's and the activation rates' (`na` rows).
struct Columns {
    forcing: DMatrix<f64>,
    rows: DMatrix<f64>,
    dqacc: DMatrix<f64>,
    drate: DMatrix<f64>,
}

impl Columns {
    fn empty() -> Self {
        Columns {
            forcing: DMatrix::zeros(0, 0),
            rows: DMatrix::zeros(0, 0),
            dqacc: DMatrix::zeros(0, 0),
            drate: DMatrix::zeros(0, 0),
        }
    }

    /// `columns` columns of `nv` rows (`na` for the rates). Storage of that shape is kept as it
    /// is: the passes write every column of `forcing`, `dqacc` and `drate` before it is read,
    /// and the Newton rule reads `rows` only in the position's and velocity's columns, which its
    /// passes write.
    fn shape(&mut self, nv: usize, na: usize, columns: usize) {
        if self.forcing.shape() != (nv, columns) || self.drate.shape() != (na, columns) {
            *self = Columns {
                forcing: DMatrix::zeros(nv, columns),
                rows: DMatrix::zeros(nv, columns),
                dqacc: DMatrix::zeros(nv, columns),
                drate: DMatrix::zeros(na, columns),
            };
        }
    }
}

impl AnalyticalJacobians {
    /// Refuses a model that is not stepped with semi-implicit Euler.
    pub fn new(model: &Model<f64>) -> Result<Self, DualError> {
        if model.integrator != Integrator::Euler {
            return Err(DualError::NotAnalytical { what: "integrators other than Euler" });
        }
        Ok(AnalyticalJacobians {
            model: model.clone(),
            lanes: model.cast(),
            workspace: Workspace::default(),
            tangents: Workspace::default(),
            contact: ContactState::default(),
            rnea: RneaDerivatives::default(),
            columns: Columns::empty(),
            dg: Vec::new(),
            metric: DMatrix::zeros(0, 0),
        })
    }

    /// The Jacobians of the step from `state` under `ctrl`, from the solver preset and warm
    /// starts in `contact` (left as the step leaves them, its solve log off). Under
    /// `mujoco_compat`, a state where constraint rows act is refused with Euler's implicit
    /// damping (MuJoCo's split solve) or MuJoCo's no-slip pass: neither is covered.
    pub fn at(
        &mut self,
        state: &State<f64>,
        ctrl: &[f64],
        contact: &mut ContactState,
    ) -> Result<StepJacobians, DualError> {
        let model = &self.model;
        // Only a replayed stage needs the warm starts before the step, and the step's solves.
        let before = (contact.config.method != Method::Newton).then(|| contact.checkpoint());
        if before.is_some() {
            contact.keep_solutions();
        }
        let stepped = step_in(model, state, ctrl, contact, &mut self.workspace);
        let mut log = contact.take_solutions();
        stepped?;
        if before.is_some() {
            // The replays' solver: the preset as the step left it, the warm starts as the step
            // found them (put back at each pass).
            self.contact.clone_from(contact);
        }
        let contact: &ContactState = contact;
        let data = &self.workspace.data;
        let constrained = data.constraint_jacobian().nrows() > 0;
        // Euler's implicit damping `h·B(v)` at the step's velocity.
        let mut extra = DVector::zeros(0);
        let damped = euler_damping(model, &state.qvel, &mut extra);
        if constrained && contact.config.mujoco_compat {
            if damped {
                return Err(DualError::NotAnalytical {
                    what: "MuJoCo's split constraint solve under Euler's implicit damping (mujoco_compat)",
                });
            }
            // The pass keeps the soft solve's normal impulses, whose tangents the constant
            // metric (see `pass`) gives only at the final velocity.
            if model.contact.noslip.iterations > 0 {
                return Err(DualError::NotAnalytical { what: "MuJoCo's no-slip pass (mujoco_compat)" });
            }
        }
        let constraints = constraints(data, contact, before.as_ref())?;
        self.rnea.compute(model, data.kinematics(), &state.qvel, data.qacc());
        let (nv, na, nu) = (model.nv(), model.na(), model.nu());
        let columns = 2 * nv + na + nu;
        let mut out = std::mem::replace(&mut self.columns, Columns::empty());
        out.shape(nv, na, columns);
        let smooth = self.tangents.data.smooth_mut();
        smooth.prepare(&self.lanes, &state.cast());
        if matches!(constraints, Constraints::Replayed(_)) {
            // The constraint stage's metric `K = M + h·B`, held constant (see `pass`).
            smooth.mass.set_constant(&data.smooth().mass);
            smooth.set_extra_diagonal(damped.then(|| extra.map(Lanes::from_f64)).as_ref());
        }
        let pass = Pass { state, ctrl, constraints };
        for (start, end) in passes(nv, columns) {
            let seeds = Seeds { start, count: end - start, nv, na };
            self.pass(&pass, seeds, &mut log, &mut out)?;
        }
        if let Constraints::Newton(rule, _) = &pass.constraints {
            self.solved_columns(rule, &mut out);
        }
        let n = 2 * nv + na;
        let (mut a, mut b) = (DMatrix::zeros(n, n), DMatrix::zeros(n, nu));
        self.integration(state, &out, (&mut a, &mut b));
        self.columns = out;
        Ok(StepJacobians {
            a,
            b,
            p: DMatrix::zeros(n, 0),
            next: self.workspace.next.clone(),
            info: self.workspace.info.clone(),
        })
    }

    /// One forward pass over the columns of `seeds`, into `out`: the forcing `K dq̈_s` (see
    /// below), the activation rates', and either the Newton rule's rows' term or the
    /// acceleration's (no constraint row, or the constraint stage with the step's solves
    /// replayed from `log`).
    ///
    /// The step's acceleration `a` solves `h K(q, v)(a − a_s) = Jᵀλ` (impulses `λ`) with `K a_s = f − C`,
    /// `K = M + h·B`. Differentiating `K a` whole: `K da = ∂f − ∂RNEA(q, v, a) − h ∂B·a + (the
    /// constraint force's change)`, RNEA being linear in the acceleration. Without constraint
    /// rows that is all. With them, the constraint stage is differentiated with `K` held
    /// constant and `a_s`'s tangent taken as `K⁻¹ (∂f − ∂RNEA(q, v, a) − h ∂B·a)` (the forcing's
    /// solve): the solve's optimality condition `K (x − x₀) = …` then changes as with `K`'s own
    /// tangent (the change of `K` is folded into `x₀ = v + h a_s`), and `a = a_s + (x − x₀)/h`
    /// comes out exact.
    fn pass(&mut self, pass: &Pass<'_>, seeds: Seeds, log: &mut SolveLog, out: &mut Columns) -> Result<(), DualError> {
        let (model, lanes) = (&self.model, &self.lanes);
        let nv = model.nv();
        let data = &self.workspace.data;
        let qacc = data.qacc();
        let (q, v, act, u) = seeds.lift(lanes, pass.state, pass.ctrl);
        let point = Point { qpos: &q, qvel: &v, act: &act };
        let smooth = self.tangents.data.smooth_mut();
        // Kinematics depend on the position alone: after the position's columns, once (to
        // clear their tangents).
        let moved = seeds.start <= nv;
        if moved {
            let columns: Vec<usize> = (seeds.start..(seeds.start + seeds.count).min(nv)).collect();
            smooth.kin.set_along(lanes, data.kinematics(), &q, &columns);
        }
        // The passive forces read only the position and the velocity, and Euler's damping only
        // the velocity: along the other columns their tangents are zero.
        let state_moves = seeds.start < 2 * nv;
        let velocity_moves = state_moves && seeds.start + seeds.count > nv;
        smooth.actuation(lanes, point, &u);
        if state_moves {
            smooth.add_passive_forces(lanes, point);
        }
        let mut force = smooth.force.clone();
        // Euler's implicit damping `K = M + h·B(v)`: `h ∂B·a` joins the forces' tangents.
        let mut extra = DVector::zeros(0);
        if velocity_moves && euler_damping(lanes, &v, &mut extra) {
            force.zip_apply(&extra.zip_map(qacc, |e, a| e * Lanes::from_f64(a)), |f, e| *f -= e);
        }
        let newton = matches!(pass.constraints, Constraints::Newton(..));
        let mut column = DVector::zeros(nv);
        for k in 0..seeds.count {
            let c = seeds.start + k;
            column.zip_apply(&force, |d, x| *d = x.tangent(0, k));
            if c < 2 * nv {
                let rnea = if c < nv { self.rnea.dq.column(c) } else { self.rnea.dv.column(c - nv) };
                column -= rnea;
            }
            out.forcing.set_column(c, &column);
            if !newton {
                data.smooth().factor.solve_in_place(&mut column);
                out.dqacc.set_column(c, &column);
            }
            out.drate.column_mut(c).zip_apply(&smooth.act_rate, |d, x| *d = x.tangent(0, k));
        }
        match pass.constraints {
            Constraints::Off => {}
            // Only the position and the velocity move the rows.
            Constraints::Newton(_, contact) if seeds.start < 2 * nv => {
                let rows = constraint_force_tangent(lanes, (point, moved), data, contact, &mut self.tangents)?;
                for k in 0..seeds.count {
                    out.rows.column_mut(seeds.start + k).zip_apply(rows, |d, x| *d = x.tangent(0, k));
                }
            }
            Constraints::Newton(..) => {}
            Constraints::Replayed(before) => {
                let smooth = DVector::from_fn(nv, |i, _| {
                    let mut x = Lanes::from_f64(data.qacc_smooth()[i]);
                    (0..seeds.count).for_each(|k| x.set_tangent(0, k, out.dqacc[(i, seeds.start + k)]));
                    x
                });
                let contact = &mut self.contact;
                contact.resume(before);
                contact.replay(std::mem::take(log));
                let staged = constraint_stage(lanes, (point, moved), (&smooth, data), contact, &mut self.tangents);
                *log = contact.take_solutions();
                staged?;
                let qacc = self.tangents.data.qacc();
                for k in 0..seeds.count {
                    out.dqacc.column_mut(seeds.start + k).zip_apply(qacc, |d, x| *d = x.tangent(0, k));
                }
            }
        }
        Ok(())
    }

    /// The acceleration's columns under the Newton rule `H` at the step's solution `x`: the
    /// solve's optimality condition `g = K (x − x₀) − Jᵀ f(J x − target)` moves along a column by
    /// `dg = −K dx₀ + d(−Jᵀ f)`, the second term the rows' (`out.rows`, with `x` held), the free
    /// velocity by `dx₀ = dv + h dq̈_s` (so `K dx₀ = K dv + h·forcing`, no solve with `K`); then
    /// `dx = −H⁻¹ dg`, every column in one sweep over `H`'s factor (the step's own Hessian at
    /// its solution), and `dq̈ = (dx − dv)/h`.
    fn solved_columns(&mut self, rule: &Sensitivity, out: &mut Columns) {
        let nv = self.model.nv();
        let n = out.forcing.ncols();
        let h = self.model.timestep;
        let metric = &mut self.metric;
        self.workspace.data.constraint_problem().joint.mass.to_dense(metric);
        let velocity = |c: usize| (nv..2 * nv).contains(&c).then(|| c - nv);
        // `dg`, side by side: entry `i` of column `c` at `i·n + c` (`rule`'s layout).
        let dg = &mut self.dg;
        dg.resize(n * nv, 0.0);
        let columns = out.rows.column_iter().zip(out.forcing.column_iter()).enumerate();
        for (c, (rows, forcing)) in columns {
            let metric = velocity(c).map(|d| metric.column(d));
            // The rows move with the position and the velocity only.
            let moves = c < 2 * nv;
            for i in 0..nv {
                let dv = metric.as_ref().map_or(0.0, |m| m[i]);
                let row = if moves { rows[i] } else { 0.0 };
                dg[i * n + c] = row - h * forcing[i] - dv;
            }
        }
        rule.tangents(dg, n);
        for (c, mut dqacc) in out.dqacc.column_iter_mut().enumerate() {
            for i in 0..nv {
                let dv = f64::from(velocity(c) == Some(i));
                dqacc[i] = (dg[i * n + c] - dv) / h;
            }
        }
    }

    /// The next state's tangents (`q'` in tangent coordinates, `v'`, `act'`) along every
    /// column, given the acceleration's (`dqacc`) and the activation rates' (`drate`):
    /// `v' = v + h q̈`, then `q' = q ⊕ h v'` and the activations' update through their
    /// per-joint and per-actuator maps ([`Integration`]).
    fn integration(&self, state: &State<f64>, columns: &Columns, (a, b): (&mut DMatrix<f64>, &mut DMatrix<f64>)) {
        let (nv, na) = (self.model.nv(), self.model.na());
        let h = self.model.timestep;
        let maps = Integration::new(&self.lanes, h, (state, &self.workspace.next), self.workspace.data.act_dot());
        let outputs = a.column_iter_mut().chain(b.column_iter_mut());
        let inputs = columns.dqacc.column_iter().zip(columns.drate.column_iter());
        for (c, (mut jac, (dqacc, drate))) in outputs.zip(inputs).enumerate() {
            for i in 0..nv {
                jac[nv + i] = f64::from(c == nv + i) + h * dqacc[i];
            }
            for i in 0..nv {
                let (start, size) = maps.block[i];
                jac[i] = (0..size)
                    .map(|k| {
                        let dq = f64::from(c == start + k);
                        maps.position[(i, k)] * dq + maps.velocity[(i, k)] * jac[nv + start + k]
                    })
                    .sum();
            }
            for k in 0..na {
                let dact = f64::from(c == 2 * nv + k);
                jac[2 * nv + k] = maps.activation[(k, 0)] * dact + maps.activation[(k, 1)] * drate[k];
            }
        }
    }
}

/// The integration's derivatives. `q' = q ⊕ h v'` moves each joint alone, and within a joint
/// each block of at most three coordinates (a free joint's translation, a rotation) alone, so
/// one forward pass that seeds coordinate `k` of every block in tangent lane `k` gives every
/// block's derivative at once; likewise each activation moves alone, with its own rate.
struct Integration {
    /// Each degree of freedom's block: its first degree of freedom and size.
    block: Vec<(usize, usize)>,
    /// `∂q'_i/∂q_{start+k}` and `∂q'_i/∂v'_{start+k}` at `(i, k)`, in tangent coordinates.
    position: DMatrix<f64>,
    velocity: DMatrix<f64>,
    /// Per activation: `∂act'/∂act` and `∂act'/∂rate`.
    activation: DMatrix<f64>,
}

impl Integration {
    /// At the step from `state` to `next` (timestep `h`) at the activation rates `rate`.
    fn new(lanes: &Model<Lanes>, h: f64, (state, next): (&State<f64>, &State<f64>), rate: &DVector<f64>) -> Self {
        let (nv, na) = (lanes.nv(), lanes.na());
        let mut block = vec![(0, 1); nv];
        for joint in lanes.joints() {
            let d = joint.dof_adr();
            let blocks: &[(usize, usize)] = match joint.kind() {
                JointKind::Hinge | JointKind::Slide => &[(0, 1)],
                JointKind::Ball => &[(0, 3)],
                JointKind::Free => &[(0, 3), (3, 3)],
            };
            for &(offset, size) in blocks {
                block[d + offset..d + offset + size].fill((d + offset, size));
            }
        }
        let seeded = |i: usize, value: f64| unit_tangent(value, Some(i - block[i].0));
        let lift = |x: &DVector<f64>| x.map(Lanes::from_f64);
        let h = Lanes::from_f64(h);
        let moved = |q: &DVector<Lanes>, v: &DVector<Lanes>| {
            let q_next = integrate_position(lanes, q, v, h);
            difference_position(lanes, &q_next, &lift(&next.qpos))
        };
        let delta = DVector::from_fn(nv, |i, _| seeded(i, 0.0));
        let q_moved = integrate_position(lanes, &lift(&state.qpos), &delta, Lanes::from_f64(1.0));
        let by_position = moved(&q_moved, &lift(&next.qvel));
        let by_velocity = moved(&lift(&state.qpos), &DVector::from_fn(nv, |i, _| seeded(i, next.qvel[i])));
        let tangents = |x: &DVector<Lanes>| DMatrix::from_fn(nv, 3, |i, k| x[i].tangent(0, k));
        let (position, velocity) = (tangents(&by_position), tangents(&by_velocity));
        // Activations: lane 0 along every activation, lane 1 along every rate.
        let along = |x: &DVector<f64>, lane: usize| x.map(|value| unit_tangent(value, Some(lane)));
        let mut act_next = DVector::zeros(na);
        integrate_activations(lanes, &along(&state.act, 0), &along(rate, 1), &mut act_next);
        let activation = DMatrix::from_fn(na, 2, |k, lane| act_next[k].tangent(0, lane));
        Integration { block, position, velocity, activation }
    }
}

/// How the passes take the constraint stage of the step that left `data` under `contact`'s
/// preset: replayed from the warm starts `before` where the step's method kept them (not
/// Newton's), else by Newton's rule at the step's solution.
fn constraints<'a>(
    data: &Data<f64>,
    contact: &'a ContactState,
    before: Option<&'a WarmCheckpoint>,
) -> Result<Constraints<'a>, DualError> {
    if data.constraint_jacobian().nrows() == 0 {
        return Ok(Constraints::Off);
    }
    if let Some(before) = before {
        return Ok(Constraints::Replayed(before));
    }
    let Some(rule) = data.constraint_rule() else {
        return Err(DualError::NotAnalytical { what: "a constraint solve without its one solution" });
    };
    let rule = rule.map_err(ContactError::from);
    Ok(Constraints::Newton(rule.map_err(StepError::from)?, contact))
}

/// `value` with a unit tangent in direction `k` (none without one).
fn unit_tangent(value: f64, k: Option<usize>) -> Lanes {
    let mut x = Lanes::from_f64(value);
    if let Some(k) = k {
        x.set_tangent(0, k, 1.0);
    }
    x
}

/// The column ranges of the forward passes: the position's columns `0..nv` first, then the
/// rest, at most [`LANES`] each (so that no pass mixes the two).
fn passes(nv: usize, columns: usize) -> impl Iterator<Item = (usize, usize)> {
    let chunks = |from: usize, to: usize| (from..to).step_by(LANES).map(move |s| (s, (s + LANES).min(to)));
    chunks(0, nv).chain(chunks(nv, columns))
}

/// Unit directions for the columns `start..start + count` of a step's Jacobian: the state
/// `(q, v, act)` in tangent coordinates, then the controls.
struct Seeds {
    start: usize,
    count: usize,
    nv: usize,
    na: usize,
}

impl Seeds {
    /// The tangent direction of entry `i` of the block that begins at column `offset`, if its
    /// column is one of these.
    fn direction(&self, offset: usize, i: usize) -> Option<usize> {
        let column = offset + i;
        (column >= self.start && column < self.start + self.count).then(|| column - self.start)
    }

    /// The state and the controls with these directions: `q ⊕ δ` on the manifold, the rest
    /// along their own coordinates.
    fn lift(
        &self,
        lanes: &Model<Lanes>,
        state: &State<f64>,
        ctrl: &[f64],
    ) -> (DVector<Lanes>, DVector<Lanes>, DVector<Lanes>, Vec<Lanes>) {
        let (nv, na) = (self.nv, self.na);
        let lift = |value: f64, offset: usize, i: usize| unit_tangent(value, self.direction(offset, i));
        let q = state.qpos.map(Lanes::from_f64);
        // `q ⊕ δ` only where a position's column is among these.
        let q = if self.start < nv {
            let delta = DVector::from_fn(nv, |i, _| lift(0.0, 0, i));
            integrate_position(lanes, &q, &delta, Lanes::from_f64(1.0))
        } else {
            q
        };
        let v = DVector::from_fn(nv, |i, _| lift(state.qvel[i], nv, i));
        let act = DVector::from_fn(na, |i, _| lift(state.act[i], 2 * nv, i));
        let u = ctrl.iter().enumerate().map(|(i, &c)| lift(c, 2 * nv + na, i)).collect();
        (q, v, act, u)
    }
}
