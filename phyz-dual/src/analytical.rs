//! Step Jacobians by stages: the heavy stages differentiated analytically in `f64`, the light
//! ones by forward tangents through that stage alone.
//!
//! Forward mode pushes tangents through the whole step, so each direction pays kinematics, the
//! mass matrix, its factor, RNEA and the solve again. Here the step is taken once in `f64`, and
//! its derivative is assembled stage by stage:
//!
//! - the applied forces (actuators, passive forces, activation rates) by `DualSVec64<8>` tangents
//!   through kinematics and those forces only, eight columns per pass;
//! - inverse dynamics by its analytical derivatives ([`RneaDerivatives`]);
//! - the acceleration by the implicit function theorem on `K·q̈ = f(q, v, act, u) − C(q, v)`,
//!   `K = M + h·B` (Euler's implicit damping), with the step's own factor of `K`:
//!   `dq̈ = K⁻¹ (∂f − ∂RNEA(q, v, q̈) − h ∂B·q̈)`, no new factorization;
//! - the integration (`q ⊕ h v'`, the activations) by tangents through it alone.
//!
//! It covers the semi-implicit Euler step without constraint rows (contacts, limits and
//! equalities are refused at the states where they act, as other integrators are refused).

use nalgebra::{DMatrix, DVector};
use num_dual::DualSVec64;

use crate::DualError;
use crate::jacobian::StepJacobians;
use phyz_core::dynamics::passive::damper_slope;
use phyz_core::dynamics::{RneaDerivatives, Smooth, difference_position, integrate_position};
use phyz_core::model::{Integrator, Point};
use phyz_core::sim::{ContactState, Workspace, step_in};
use phyz_core::{Arithmetic, Model, State, Tangents};

/// Columns per forward pass.
const LANES: usize = 8;
type Lanes = DualSVec64<LANES>;

/// Step Jacobians `A`, `B` of one model at many states, by stages (see the module's notes). The
/// model is cast to the tangent scalar once, and the storage is reused from one state to the
/// next.
pub struct AnalyticalJacobians {
    model: Model<f64>,
    lanes: Model<Lanes>,
    workspace: Workspace<f64>,
    smooth: Smooth<Lanes>,
    rnea: RneaDerivatives<f64>,
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
            smooth: Smooth::default(),
            rnea: RneaDerivatives::default(),
        })
    }

    /// The Jacobians of the step from `state` under `ctrl`, from the solver preset and warm
    /// starts in `contact` (left as the step leaves them). A state where constraint rows act is
    /// refused.
    pub fn at(&mut self, state: &State<f64>, ctrl: &[f64], contact: &mut ContactState) -> Result<StepJacobians, DualError> {
        let model = &self.model;
        step_in(model, state, ctrl, contact, &mut self.workspace)?;
        let data = &self.workspace.data;
        if data.constraint_jacobian().nrows() > 0 {
            return Err(DualError::NotAnalytical { what: "steps with constraint rows" });
        }
        let qacc = data.qacc();
        self.rnea.compute(model, data.kinematics(), &state.qvel, qacc);
        let (nv, na, nu) = (model.nv(), model.na(), model.nu());
        let columns = 2 * nv + na + nu;
        // ∂f − ∂RNEA − h ∂B·q̈, then K⁻¹ of it: the acceleration's columns.
        let mut dqacc = DMatrix::zeros(nv, columns);
        let mut drate = DMatrix::zeros(na, columns);
        self.smooth.prepare(&self.lanes, &state.cast());
        for start in (0..columns).step_by(LANES) {
            let seeds = Seeds::new(model, start, columns);
            let (q, v, act, u) = seeds.lift(&self.lanes, state, ctrl);
            self.smooth.kin.update(&self.lanes, &q);
            self.smooth.applied_forces(&self.lanes, Point { qpos: &q, qvel: &v, act: &act }, &u);
            let mut force = self.smooth.force.clone();
            if model.enabled.euler_damp && model.enabled.damper {
                for joint in self.lanes.joints() {
                    for d in joint.dof_adr()..joint.dof_adr() + joint.kind().nv() {
                        let slope = damper_slope(joint.damping, &joint.damping_poly, v[d]);
                        force[d] -= slope * Lanes::from_f64(model.timestep * qacc[d]);
                    }
                }
            }
            for k in 0..seeds.count {
                dqacc.set_column(start + k, &force.map(|x| x.tangent(0, k)));
                drate.set_column(start + k, &self.smooth.act_rate.map(|x| x.tangent(0, k)));
            }
        }
        dqacc.columns_mut(0, nv).zip_apply(&self.rnea.dq, |x, d| *x -= d);
        dqacc.columns_mut(nv, nv).zip_apply(&self.rnea.dv, |x, d| *x -= d);
        data.smooth_factor().solve_columns(&mut dqacc);
        let jac = self.integration(state, &dqacc, &drate);
        let n = 2 * nv + na;
        Ok(StepJacobians {
            a: jac.columns(0, n).into_owned(),
            b: jac.columns(n, nu).into_owned(),
            p: DMatrix::zeros(n, 0),
            next: self.workspace.next.clone(),
            info: self.workspace.info.clone(),
        })
    }

    /// The next state's tangents (`q'` in tangent coordinates, `v'`, `act'`) along every
    /// column, given the acceleration's (`dqacc`) and the activation rates' (`drate`):
    /// `v' = v + h q̈`, `q' = q ⊕ h v'` and the activations' update, by tangents through them.
    fn integration(&self, state: &State<f64>, dqacc: &DMatrix<f64>, drate: &DMatrix<f64>) -> DMatrix<f64> {
        let (model, lanes) = (&self.model, &self.lanes);
        let (nv, na) = (model.nv(), model.na());
        let columns = dqacc.ncols();
        let h = model.timestep;
        let next = &self.workspace.next;
        let rate = self.workspace.data.act_dot();
        let mut jac = DMatrix::zeros(2 * nv + na, columns);
        for start in (0..columns).step_by(LANES) {
            let seeds = Seeds::new(model, start, columns);
            let (q, v, act, _) = seeds.lift(lanes, state, &[]);
            // `value` with the tangents `from + scale·tangents` along this pass's columns.
            let along = |value: &DVector<f64>, from: &DVector<Lanes>, scale: f64, tangents: &DMatrix<f64>| {
                DVector::from_fn(value.len(), |i, _| {
                    let mut x = Lanes::from_f64(value[i]);
                    for k in 0..seeds.count {
                        x.set_tangent(0, k, from[i].tangent(0, k) + scale * tangents[(i, start + k)]);
                    }
                    x
                })
            };
            let v_next = along(&next.qvel, &v, h, dqacc);
            let q_next = integrate_position(lanes, &q, &v_next, Lanes::from_f64(h));
            let dq = difference_position(lanes, &q_next, &next.qpos.map(Lanes::from_f64));
            let rate = along(rate, &DVector::zeros(na), 1.0, drate);
            let act_now = DVector::from_fn(na, |i, _| act[i]);
            let mut act_next = DVector::zeros(na);
            phyz_core::dynamics::actuation::integrate_activations(lanes, &act_now, &rate, &mut act_next);
            for k in 0..seeds.count {
                let column = dq.iter().chain(v_next.iter()).chain(act_next.iter()).map(|x| x.tangent(0, k));
                jac.column_mut(start + k).iter_mut().zip(column).for_each(|(j, t)| *j = t);
            }
        }
        jac
    }
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
    fn new(model: &Model<f64>, start: usize, columns: usize) -> Self {
        Seeds { start, count: LANES.min(columns - start), nv: model.nv(), na: model.na() }
    }

    /// Tangent `k` of entry `i` of the block that begins at column `offset`.
    fn unit(&self, offset: usize, i: usize) -> impl Iterator<Item = (usize, f64)> {
        let column = offset + i;
        (column >= self.start && column < self.start + self.count).then(|| (column - self.start, 1.0)).into_iter()
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
        let lift = |value: f64, offset: usize, i: usize| {
            let mut x = Lanes::from_f64(value);
            for (k, t) in self.unit(offset, i) {
                x.set_tangent(0, k, t);
            }
            x
        };
        let delta = DVector::from_fn(nv, |i, _| lift(0.0, 0, i));
        let q = integrate_position(lanes, &state.qpos.map(Lanes::from_f64), &delta, Lanes::from_f64(1.0));
        let v = DVector::from_fn(nv, |i, _| lift(state.qvel[i], nv, i));
        let act = DVector::from_fn(na, |i, _| lift(state.act[i], 2 * nv, i));
        let u = ctrl.iter().enumerate().map(|(i, &c)| lift(c, 2 * nv + na, i)).collect();
        (q, v, act, u)
    }
}
