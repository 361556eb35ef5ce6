//! The smooth stages of one acceleration evaluation in MuJoCo's order — position (kinematics,
//! mass matrix and its factorization), velocity and actuation (passive, actuator and bias
//! forces), acceleration — with every stage's output kept here (MuJoCo's `mjData` idea), so that
//! evaluating again refills this storage instead of allocating.

use nalgebra::{DMatrix, DVector};

use super::actuation::{activation_rates, set_actuator_forces};
use super::crba::mass_matrix_into;
use super::implicit::{DerivativeInputs, ImplicitWork};
use super::kinematics::{Kinematics, LinkBuffers, place_inertias};
use super::mass::{MassFactor, TreeMatrix};
use super::passive::add_passive_forces;
use super::rnea::{RootedLinks, rnea};
use crate::Scalar;
use crate::error::StepError;
use crate::math::{SpatialInertia, copy_vector, zero_vector};
use crate::model::{Integrator, Model, Point, State};

/// The outputs of the smooth stages at one `(q, v, act, ctrl)`.
#[derive(Clone, Debug)]
pub struct Smooth<S: Scalar> {
    pub kin: Kinematics<S>,
    /// `M(q)`, armature included, in the tree's rows (filled by [`Smooth::position`], or set by
    /// a caller that evaluates the later stages alone).
    pub mass: TreeMatrix<S>,
    /// The factor of `M` plus the extra diagonal.
    pub factor: MassFactor<S>,
    /// The applied generalized forces less the bias forces: passive plus actuator minus
    /// `C(q, v)` (MuJoCo's `qfrc_smooth`).
    pub force: DVector<S>,
    /// The unconstrained acceleration (MuJoCo's `qacc_smooth`).
    pub acceleration: DVector<S>,
    /// The activations' rates (MuJoCo's `act_dot`).
    pub act_rate: DVector<S>,
    /// Each link's inertia in its tree's rooted frame, and its subtree's (MuJoCo's `cinert` and
    /// `crb`), from the position stage.
    inertia: Vec<SpatialInertia<S>>,
    composite: Vec<SpatialInertia<S>>,
    /// RNEA's per-link motions and forces.
    rooted: RootedLinks<S>,
    links: LinkBuffers<S>,
    bias: DVector<S>,
    /// The extra diagonal the factor holds, and whether the last evaluation had one.
    extra: DVector<S>,
    is_damped: bool,
    /// `M` dense, for the implicit integrators' correction.
    dense: DMatrix<S>,
    implicit: ImplicitWork<S>,
    /// A site transmission's moment row.
    moment_row: DVector<S>,
}

impl<S: Scalar> Default for Smooth<S> {
    fn default() -> Self {
        Smooth {
            kin: Kinematics::default(),
            mass: TreeMatrix::default(),
            factor: MassFactor::default(),
            force: DVector::zeros(0),
            acceleration: DVector::zeros(0),
            act_rate: DVector::zeros(0),
            inertia: Vec::new(),
            composite: Vec::new(),
            rooted: RootedLinks::default(),
            links: LinkBuffers::default(),
            bias: DVector::zeros(0),
            extra: DVector::zeros(0),
            is_damped: false,
            dense: DMatrix::zeros(0, 0),
            implicit: ImplicitWork::default(),
            moment_row: DVector::zeros(0),
        }
    }
}

impl<S: Scalar> Smooth<S> {
    /// Takes what `state` fixes for a step (the mocap bodies' poses): once per step, before the
    /// evaluations (without it, mocap bodies are where the model puts them, or where the last
    /// call put them).
    pub fn prepare(&mut self, model: &Model<S>, state: &State<S>) {
        self.kin.set_mocap(model, &state.mocap_pos, &state.mocap_quat);
    }

    /// The position stage's smooth part: kinematics, and the mass matrix formed and factorized
    /// with `extra_diagonal` (shared by the smooth acceleration and the constraint solve).
    pub fn position(
        &mut self,
        model: &Model<S>,
        q: &DVector<S>,
        extra_diagonal: Option<&DVector<S>>,
    ) -> Result<(), StepError> {
        self.kin.update(model, q);
        place_inertias(model, &self.kin, &mut self.inertia);
        mass_matrix_into(model, &self.kin, &self.inertia, &mut self.composite, &mut self.mass);
        self.set_extra_diagonal(extra_diagonal);
        self.factor.factorize_tree(model, &self.mass, extra_diagonal)
    }

    /// The extra diagonal [`Smooth::factored_into`] adds to the mass matrix (an integrator's
    /// damping), none with `None`.
    pub fn set_extra_diagonal(&mut self, extra_diagonal: Option<&DVector<S>>) {
        self.is_damped = extra_diagonal.is_some();
        if let Some(extra) = extra_diagonal {
            copy_vector(&mut self.extra, extra);
        }
    }

    /// The velocity and actuation stages, after [`Smooth::position`] at the same point (whose
    /// kinematics and placed inertias RNEA reads): the activations' rates, and the actuator and
    /// passive forces less the bias forces in [`Smooth::force`].
    pub fn forces(&mut self, model: &Model<S>, point: Point<'_, S>, ctrl: &[S]) {
        self.actuation(model, point, ctrl);
        self.add_passive_forces(model, point);
        zero_vector(&mut self.bias, model.nv());
        rnea(model, &self.kin, &self.inertia, (point.qvel, None), &mut self.rooted, &mut self.bias);
        self.force -= &self.bias;
    }

    /// The actuation stage alone, after the kinematics at the same point: the activations'
    /// rates, and the actuator forces in [`Smooth::force`] (the step by stages differentiates
    /// these and [`Smooth::add_passive_forces`]' apart from RNEA's).
    pub fn actuation(&mut self, model: &Model<S>, point: Point<'_, S>, ctrl: &[S]) {
        activation_rates(model, point.act, ctrl, &mut self.act_rate);
        let storage = (&self.kin, &mut self.moment_row, &mut self.links);
        set_actuator_forces(model, storage, point, (ctrl, &self.act_rate), &mut self.force);
    }

    /// Adds the passive forces at `point` (springs, dampers, fluid, gravity compensation) to
    /// [`Smooth::force`]: they read the position and the velocity only.
    pub fn add_passive_forces(&mut self, model: &Model<S>, point: Point<'_, S>) {
        add_passive_forces(model, &self.kin, point.qpos, point.qvel, &mut self.links, &mut self.force);
    }

    /// The acceleration stage: the unconstrained acceleration `M⁻¹ f` from the factor and the
    /// forces of the stages before.
    pub fn acceleration(&mut self) {
        copy_vector(&mut self.acceleration, &self.force);
        self.factor.solve_in_place(&mut self.acceleration);
    }

    /// For the implicit integrators, replaces the acceleration `qacc` at `point` (one that
    /// satisfies `M·qacc = f`, as the constraint solve's does) by the one they integrate,
    /// `(M − h·∂f/∂v)⁻¹ f`; the other integrators' is left as it is. Follows
    /// the stages at the same point.
    pub fn integrate_implicitly(
        &mut self,
        model: &Model<S>,
        point: Point<'_, S>,
        ctrl: &[S],
        qacc: &mut DVector<S>,
    ) -> Result<(), StepError> {
        let coriolis = match model.integrator {
            Integrator::Implicit => true,
            Integrator::ImplicitFast => false,
            Integrator::Euler | Integrator::Rk4 => return Ok(()),
        };
        let inputs = DerivativeInputs { point, ctrl, act_rate: &self.act_rate };
        let kinematics = (&self.kin, &mut self.links, &mut self.moment_row);
        self.mass.to_dense(&mut self.dense);
        self.implicit.correct(model, kinematics, &self.dense, &inputs, coriolis, qacc)
    }

    /// The matrix [`Smooth::factor`] factorizes, `M` plus the extra diagonal, written into
    /// `out` in the tree's rows.
    pub fn factored_into(&self, out: &mut TreeMatrix<S>) {
        out.copy_from(&self.mass);
        if self.is_damped {
            for (i, &e) in self.extra.iter().enumerate() {
                out.add_diagonal(i, e);
            }
        }
    }
}
