//! The data one evaluation of the dynamics fills (MuJoCo's `mjData`): every stage's output,
//! readable afterwards, and the storage the stages reuse.

use std::sync::Arc;

use nalgebra::{DMatrix, DVector};

use super::batch_solver::BatchSolver;
use super::gather::{ContactPoint, Gather};
use crate::contact::differentiable::{merged, zones_on_all};
use crate::contact::newton::impulses;
use crate::contact::{
    ContactProblem, ContactRow, JointSpace, NewtonWorkspace, Sensitivity, SensitivityError, Solution, SolverConfig,
    Warm,
};
use crate::dynamics::{Kinematics, MassFactor, Smooth, TreeMatrix};
use crate::math::SparseRows;
use crate::model::{Model, State};
use crate::scalar::Scalar;

/// Everything one evaluation of the dynamics computes (MuJoCo's `mjData`): each stage's output,
/// readable after [`fn@super::forward`] or a step (a step's last evaluation: RK4's
/// fourth stage), and the storage the stages refill, so that evaluating again allocates
/// nothing.
#[derive(Clone, Debug)]
pub struct Data<S: Scalar> {
    /// The smooth stages' outputs: kinematics, the mass matrix and its factor, the smooth
    /// forces, `qacc_smooth` and the activations' rates.
    pub(super) smooth: Smooth<S>,
    /// The acceleration with the constraint forces (MuJoCo's `qacc`).
    pub(super) qacc: DVector<S>,
    /// The factor of the bare mass matrix where it differs from the smooth stages' (MuJoCo's
    /// solve under Euler's implicit damping, see [`super::constraint`]).
    pub(super) bare: MassFactor<S>,
    /// The gathered constraints, and the problem they make with its rows' numbers, the bodies
    /// each acts between and the pre-step velocity `J v`.
    pub(super) gather: Gather<S>,
    pub(super) problem: ContactProblem<S>,
    pub(super) rows: Vec<ContactRow<S>>,
    pub(super) bodies: Vec<[Option<usize>; 2]>,
    pub(super) pre_step: DVector<S>,
    /// Each lane's warm start, the solve's storage, its post-step velocity and each lane's
    /// solution.
    pub(super) warm: Vec<Warm>,
    pub(super) newton: NewtonWorkspace,
    pub(super) velocity: DVector<S>,
    pub(super) solutions: Vec<Solution>,
    /// The joint-space impulse of a split solve.
    pub(super) impulse: DVector<S>,
    /// The impulses MuJoCo's no-slip pass left, and whether it ran in the last solve.
    pub(super) noslip_impulses: DVector<S>,
    pub(super) noslip_ran: bool,
    /// The solve a batch scalar supplies for all its lanes, if it does.
    pub(super) solver: Option<Arc<dyn BatchSolver<S>>>,
}

impl<S: Scalar> Data<S> {
    /// Takes what the model and the state fix for a step: once per step, before its
    /// evaluations.
    pub(super) fn prepare(&mut self, model: &Model<S>, state: &State<S>) {
        self.smooth.prepare(model, state);
    }

    /// Whether the evaluations that follow have the constraint stage record how each contact's
    /// and tie's rows push on the bodies, which the acceleration-stage sensors and
    /// [`Data::external_wrenches`] read (off by default: a step does not need it).
    pub fn set_record_wrenches(&mut self, on: bool) {
        self.gather.record_wrenches = on;
    }

    /// Each body's external wrench from the constraints of this evaluation, as MuJoCo's
    /// `mj_rnePostConstraint` leaves it in `cfrc_ext`: torque then force, world axes, the
    /// torque about the centre of mass of the body's tree; the world's row zero. After a step
    /// this is its last evaluation's (RK4's fourth stage, as MuJoCo's after `mj_step`). `None`
    /// unless there was an evaluation and it recorded its wrenches
    /// ([`Data::set_record_wrenches`]).
    pub fn external_wrenches(&self, model: &Model<S>) -> Option<Vec<[S; 6]>> {
        self.gather.recorded.then(|| {
            let impulses = self.impulses();
            let impulses = if impulses.is_empty() { DVector::zeros(self.gather.row_count()) } else { impulses };
            super::loads::external_wrenches(model, self.kinematics(), &self.gather, &impulses, model.timestep)
        })
    }

    /// The gathered constraints.
    pub(super) fn gather(&self) -> &Gather<S> {
        &self.gather
    }

    /// The position stage: body, geom and site poses, tendon lengths and moment arms
    /// (MuJoCo's `xpos`, `xquat`, `geom_xpos`, `ten_length`, ...).
    pub fn kinematics(&self) -> &Kinematics<S> {
        &self.smooth.kin
    }

    /// The smooth stages' outputs, among them the factor they solve with: `M` plus the
    /// integrator's extra diagonal (`h·B`, Euler's implicit damping, where it applies), so that
    /// `qacc_smooth = factor⁻¹ qfrc_smooth`.
    pub fn smooth(&self) -> &Smooth<S> {
        &self.smooth
    }

    /// The smooth stages' storage, for a caller that evaluates them itself before
    /// [`super::constraint_stage`] (the step Jacobians by stages).
    pub fn smooth_mut(&mut self) -> &mut Smooth<S> {
        &mut self.smooth
    }

    /// The joint-space mass matrix `M(q)`, armature included, dense (MuJoCo's `qM` expanded by
    /// `mj_fullM`); the evaluation keeps it in the tree's rows.
    pub fn mass_matrix(&self) -> DMatrix<S> {
        let mut out = DMatrix::zeros(0, 0);
        self.smooth.mass.to_dense(&mut out);
        out
    }

    /// The contacts found, in MuJoCo's order (MuJoCo's `contact`); those with rows in the order
    /// of their rows.
    pub fn contacts(&self) -> &[ContactPoint<S>] {
        &self.gather.contacts
    }

    /// The constraint Jacobian: a row per constraint dimension, equalities, friction losses,
    /// limits, then contacts (a pyramidal contact's edges), as MuJoCo orders `efc_J`; each row
    /// holds only the degrees of freedom its constraint reaches.
    pub fn constraint_jacobian(&self) -> &SparseRows<S> {
        self.gather.jacobian()
    }

    /// The applied forces less the bias forces: passive plus actuator minus `C(q, v)`
    /// (MuJoCo's `qfrc_smooth`).
    pub fn qfrc_smooth(&self) -> &DVector<S> {
        &self.smooth.force
    }

    /// The unconstrained acceleration (MuJoCo's `qacc_smooth`).
    pub fn qacc_smooth(&self) -> &DVector<S> {
        &self.smooth.acceleration
    }

    /// The activations' rates (MuJoCo's `act_dot`).
    pub fn act_dot(&self) -> &DVector<S> {
        &self.smooth.act_rate
    }

    /// The acceleration with the constraint forces (MuJoCo's `qacc`), before an implicit
    /// integrator's correction.
    pub fn qacc(&self) -> &DVector<S> {
        &self.qacc
    }

    /// The constraint problem the last solve was given (MuJoCo's `efc_*` arrays with the
    /// metric): the mass matrix it solves in (with the integrator's extra diagonal where phyz
    /// solves with it), the constraint Jacobian, the free velocity, each row's target velocity
    /// and regularizer.
    pub fn constraint_problem(&self) -> &ContactProblem<S> {
        &self.problem
    }

    /// Each batch lane's solution of the last constraint solve.
    pub fn solutions(&self) -> &[Solution] {
        &self.solutions
    }

    /// The constraint forces on every row of [`Data::constraint_jacobian`] (MuJoCo's
    /// `efc_force`): the solve's impulses over the step of `model`, the one evaluated.
    pub fn constraint_forces(&self, model: &Model<S>) -> DVector<S> {
        self.impulses() / model.timestep
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

impl<S: Scalar> Default for Data<S> {
    fn default() -> Self {
        let joint =
            JointSpace { mass: TreeMatrix::default(), jacobian: SparseRows::default(), free: DVector::zeros(0) };
        Data {
            smooth: Smooth::default(),
            qacc: DVector::zeros(0),
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

impl Data<f64> {
    /// The Newton derivative rule at the last constraint solve's solution, `None` unless there
    /// was exactly one: from that solve's own factor of the Hessian where its iterations left it
    /// at the solution, else factorized there.
    pub fn constraint_rule(&self) -> Option<Result<Sensitivity, SensitivityError>> {
        let [solution] = self.solutions.as_slice() else { return None };
        Some(match self.newton.solution_factor() {
            Some(factor) => Sensitivity::with_factor(solution, factor.clone()),
            None => Sensitivity::new(&self.problem, solution),
        })
    }
}
