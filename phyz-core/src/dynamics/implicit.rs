//! What MuJoCo's `implicit` and `implicitfast` integrators integrate: the acceleration taken
//! through `M − h·D` instead of `M`, where `D = ∂f/∂v` is the derivative of the smooth forces with
//! respect to the velocities (MuJoCo's `qDeriv`, `mjd_smooth_vel`). Velocity-dependent forces —
//! damping, actuators with velocity gains, the fluid's drag, and for `implicit` the Coriolis and
//! centrifugal terms — are then integrated backward in time, which keeps stiff damping and servos stable at large
//! steps.
//!
//! The constraint solve still runs with `M`, as MuJoCo's: its acceleration `a` satisfies
//! `M a = f_smooth + f_constraint`, and the integrated one is `(M − h·D)⁻¹ M a`. As MuJoCo's, `D`
//! has the mass matrix's tree sparsity (a tendon across two branches loses its cross terms).
//! `implicitfast` leaves out the Coriolis derivative (but for a free body alone in its tree) and
//! keeps `D` symmetric, so the tree-structured factorization of `M` factorizes `M − h·D`;
//! `implicit` keeps it whole and solves with an LU.

use nalgebra::{DMatrix, DVector, Dim, Matrix, Matrix6, StorageMut, U1, Vector6};

use super::actuation::{actuator_force, force_velocity_slope};
use super::fluid::{FluidDerivative, add_fluid_velocity_derivative};
use super::kinematics::{Kinematics, LinkBuffers};
use super::mass::MassFactor;
use super::passive::damper_slope;
use super::rnea_derivatives::RneaDerivatives;
use super::tendon::DofRow;
use crate::Scalar;
use crate::error::StepError;
use crate::math::{copy_vector, zero_matrix, zero_vector};
use crate::model::{Dynamics, JointKind, Model, Point};

/// The inputs of `D` at one evaluation: the state, the controls and the activations' rates.
pub(crate) struct DerivativeInputs<'a, S: Scalar> {
    pub point: Point<'a, S>,
    pub ctrl: &'a [S],
    pub act_rate: &'a DVector<S>,
}

/// The storage the implicit correction reuses from step to step.
#[derive(Clone, Debug)]
pub struct ImplicitWork<S: Scalar> {
    /// `D`, then `M − h·D`.
    matrix: DMatrix<S>,
    factor: MassFactor<S>,
    rhs: DVector<S>,
    /// The Coriolis derivative.
    coriolis: RneaDerivatives<S>,
    fluid: FluidDerivative<S>,
}

impl<S: Scalar> Default for ImplicitWork<S> {
    fn default() -> Self {
        ImplicitWork {
            matrix: DMatrix::zeros(0, 0),
            factor: MassFactor::default(),
            rhs: DVector::zeros(0),
            coriolis: RneaDerivatives::default(),
            fluid: FluidDerivative::default(),
        }
    }
}

impl<S: Scalar> ImplicitWork<S> {
    /// Replaces the acceleration `qacc` (which satisfies `M·qacc = f`) by `(M − h·D)⁻¹ f`, for
    /// the model's implicit integrator (`coriolis`: `implicit`, else `implicitfast`).
    pub(crate) fn correct(
        &mut self,
        model: &Model<S>,
        (kin, links, row): (&Kinematics<S>, &mut LinkBuffers<S>, &mut DVector<S>),
        mass: &DMatrix<S>,
        inputs: &DerivativeInputs<'_, S>,
        coriolis: bool,
        qacc: &mut DVector<S>,
    ) -> Result<(), StepError> {
        let (h, nv) = (model.timestep, model.nv());
        velocity_derivative(model, (kin, row), inputs, &mut self.matrix);
        add_fluid_velocity_derivative(model, kin, inputs.point.qvel, (links, &mut self.fluid), &mut self.matrix);
        for (entry, &m) in self.matrix.iter_mut().zip(mass.iter()) {
            *entry = m - h * *entry;
        }
        zero_vector(&mut self.rhs, nv);
        self.rhs.gemv(S::one(), mass, qacc, S::zero());
        copy_vector(qacc, &self.rhs);
        if coriolis {
            self.add_coriolis_derivative(model, kin, inputs.point.qvel, 0..nv);
            lu_solve_in_place(&mut self.matrix, qacc);
            return Ok(());
        }
        self.factor.factorize(model, &self.matrix)?;
        self.factor.solve_in_place(qacc);
        // MuJoCo's implicitfast keeps the gyroscopic derivative of a free body alone in its tree:
        // its 6 × 6 block is solved apart, with an LU.
        let free = || model.joints().iter().filter(|j| standalone_free_body(model, j.body)).map(|j| j.dof_adr());
        if free().next().is_some() {
            self.add_coriolis_derivative(model, kin, inputs.point.qvel, free().flat_map(|d| d..d + 6));
        }
        for start in free() {
            let block = start..start + 6;
            let mut a: Matrix6<S> = self.matrix.fixed_view::<6, 6>(block.start, block.start).into_owned();
            let mut x: Vector6<S> = self.rhs.fixed_rows::<6>(block.start).into_owned();
            lu_solve_in_place(&mut a, &mut x);
            qacc.fixed_rows_mut::<6>(block.start).copy_from(&x);
        }
        Ok(())
    }

    /// Adds `h·∂C/∂v` to the columns `columns` of the matrix (`M − h·D` becomes
    /// `M − h·(D − ∂C/∂v)` there), from the analytical derivatives of RNEA.
    fn add_coriolis_derivative(
        &mut self,
        model: &Model<S>,
        kin: &Kinematics<S>,
        qvel: &DVector<S>,
        columns: impl Iterator<Item = usize> + Clone,
    ) {
        let h = model.timestep;
        self.coriolis.velocity_columns(model, kin, qvel, columns.clone());
        for j in columns {
            for i in 0..model.nv() {
                self.matrix[(i, j)] += self.coriolis.dv[(i, j)] * h;
            }
        }
    }
}

/// MuJoCo's standalone free body: a body whose only joint is free, alone in its tree (six
/// degrees of freedom) with no mass below it.
fn standalone_free_body<S: Scalar>(model: &Model<S>, body: usize) -> bool {
    let bodies = model.bodies();
    let joints = bodies[body].joints();
    let free = joints.len() == 1 && model.joints()[joints.start].kind() == JointKind::Free;
    let below = |b: usize| b != body && model.in_subtree(b, body);
    let massless = |m: S| (0..m.lanes()).all(|l| m.lane(l) == 0.0);
    free && (1..bodies.len()).filter(|&b| below(b)).all(|b| bodies[b].joints().is_empty() && massless(bodies[b].mass))
}

/// `D = ∂(f_passive + f_actuator)/∂v` into `d` (MuJoCo's `mjd_passive_vel` and
/// `mjd_actuator_vel`), but for the fluid's drag, which `correct` adds: joint and tendon
/// dampers' slopes, and each actuator's velocity gain and bias
/// along its transmission, except where its force is clamped to its range. As MuJoCo's, the
/// velocity gain multiplies the raw control (not clamped) of an actuator without dynamics.
fn velocity_derivative<S: Scalar>(
    model: &Model<S>,
    (kin, row): (&Kinematics<S>, &mut DVector<S>),
    inputs: &DerivativeInputs<'_, S>,
    d: &mut DMatrix<S>,
) {
    let nv = model.nv();
    zero_matrix(d, nv, nv);
    if model.enabled.damper {
        let v = inputs.point.qvel;
        for joint in model.joints() {
            let adr = joint.dof_adr();
            for k in adr..adr + joint.kind().nv() {
                d[(k, k)] -= damper_slope(joint.damping, &joint.damping_poly, v[k]);
            }
        }
        for (t, tendon) in model.tendons().iter().enumerate() {
            let jacobian = kin.tendons.jacobian(model, t);
            let slope = damper_slope(tendon.damping, &tendon.damping_poly, jacobian.dot(model, v));
            add_outer(model, &jacobian, -slope, d);
        }
    }
    if !model.enabled.actuation {
        return;
    }
    for (index, (actuator, &u)) in model.actuators().iter().zip(inputs.ctrl).enumerate() {
        let terms = actuator_force(model, (kin, &mut *row), index, inputs.point, (inputs.ctrl, inputs.act_rate));
        let input = match actuator.dynamics {
            Dynamics::None => u,
            _ => terms.input,
        };
        let slope = force_velocity_slope(actuator, (terms.length, terms.velocity), input);
        let slope = match actuator.force_range {
            Some([lo, hi]) => {
                let clamped = terms.unclamped.less_eq(lo) | terms.unclamped.greater_eq(hi);
                S::select(clamped, S::zero(), slope)
            }
            None => slope,
        };
        add_outer(model, &terms.moment, slope, d);
    }
}

/// `d += b · c cᵀ` for the moment `c` (a tendon's or an actuator's), on the tree's sparsity
/// only: as MuJoCo's `qDeriv`, which has no entry between two branches of a tree.
fn add_outer<S: Scalar>(model: &Model<S>, c: &impl DofRow<S>, b: S, d: &mut DMatrix<S>) {
    c.for_each(model, |i, ci| {
        c.for_each(model, |k, ck| {
            if model.tree().on_one_path(i, k) {
                d[(i, k)] += b * ci * ck;
            }
        })
    });
}

/// Solves `a x = b` in place (`b` becomes `x`, `a` its LU factors) by Gaussian elimination
/// without pivoting, as MuJoCo's sparse LU of `M − h·D` does: the mass matrix's diagonal
/// dominates.
fn lu_solve_in_place<S: Scalar, N: Dim, SA, SB>(a: &mut Matrix<S, N, N, SA>, b: &mut Matrix<S, N, U1, SB>)
where
    SA: StorageMut<S, N, N>,
    SB: StorageMut<S, N, U1>,
{
    let n = b.len();
    for k in 0..n {
        let pivot = a[(k, k)];
        for i in k + 1..n {
            let factor = a[(i, k)] / pivot;
            for j in k + 1..n {
                let akj = a[(k, j)];
                a[(i, j)] -= factor * akj;
            }
            let bk = b[k];
            b[i] -= factor * bk;
        }
    }
    for k in (0..n).rev() {
        let mut x = b[k];
        for j in k + 1..n {
            x -= a[(k, j)] * b[j];
        }
        b[k] = x / a[(k, k)];
    }
}
