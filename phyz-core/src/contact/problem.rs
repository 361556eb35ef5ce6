//! The assembled problem the solver sees, in joint space: the post-step velocity `x` minimizing
//!
//! ```text
//! ½ (x − x₀)ᵀ M (x − x₀) + Σ_c s_c(J_c x − target_c)
//! ```
//!
//! with `x₀` the unconstrained (free) velocity, `M` the metric the impulses act through and
//! `s_c` each constraint's soft cost ([`super::cost`], with `D = 1/R`). Its dual is the impulse
//! problem `min ½ fᵀ(A + R)f + fᵀ(J x₀ − target)` over the friction cones, `A = J M⁻¹ Jᵀ`; the
//! impulses are `f = −∂s/∂jar` at the solution, and `M (x − x₀) = Jᵀ f`.

use std::any::Any;
use std::borrow::Cow;

use nalgebra::DVector;

use super::config::{Method, SolverConfig};
use super::cost::Piece;
use super::row::{ConstraintKind, ContactRow};
use crate::Scalar;
use crate::dynamics::{MassFactor, TreeMatrix};
use crate::math::{SparseRows, zero_vector};
use crate::scalar::Mask;

/// The structure of one constraint: its shape and the moving bodies it acts between (`None`
/// for the world), which `Coupling::PerBody` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub kind: ConstraintKind,
    pub bodies: [Option<usize>; 2],
}

impl Constraint {
    pub fn new(kind: ConstraintKind) -> Self {
        Constraint { kind, bodies: [None, None] }
    }

    /// True when both constraints act on a common moving body.
    pub(crate) fn shares_body(&self, other: &Constraint) -> bool {
        self.bodies.iter().flatten().any(|b| other.bodies.contains(&Some(*b)))
    }
}

/// The joint-space data of a problem: metric, constraint Jacobian, free velocity.
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpace<S: Scalar> {
    /// `M`: the mass matrix the impulses act through (symmetric positive definite), in the
    /// tree's rows as the smooth stages make it (a hand-built problem's dense `M` is
    /// [`TreeMatrix::from_dense`]): the solver's products and its Hessian read it there.
    pub mass: TreeMatrix<S>,
    /// `J`: one row per constraint row, each over the degrees of freedom it reaches.
    pub jacobian: SparseRows<S>,
    /// `x₀`: the velocity after the step without constraint impulses.
    pub free: DVector<S>,
}

impl<S: Scalar> JointSpace<S> {
    /// `J x₀`: the constraint-space velocity without impulses.
    pub fn free_velocity(&self) -> DVector<S> {
        self.jacobian.mul(&self.free)
    }
}

/// How the solver measures progress, as MuJoCo does: cost changes and gradient norms are in
/// acceleration units multiplied by `scale` (one over the mean inertia times `max(1, nv)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    pub scale: f64,
    /// The step the velocity-level problem spans (cost / dt² and gradient / dt are its
    /// acceleration-level values).
    pub timestep: f64,
}

impl Default for Units {
    fn default() -> Self {
        Units { scale: 1.0, timestep: 1.0 }
    }
}

/// The convex contact problem, in any scalar (its data can carry derivatives or batch lanes;
/// the solve reads real parts).
#[derive(Clone, Debug, PartialEq)]
pub struct ContactProblem<S: Scalar> {
    pub constraints: Vec<Constraint>,
    pub joint: JointSpace<S>,
    /// The velocity each row should reach: the separating target on normal and limit rows,
    /// the friction rows' reference velocity (zero, or MuJoCo's damped one).
    pub target: DVector<S>,
    /// The diagonal regularizer `R` (`D = 1/R`).
    pub regularizer: DVector<S>,
    /// Friction coefficient per constraint.
    pub mu: Vec<S>,
    /// Torsional and rolling friction per constraint (read by condim 4 and 6 contacts).
    pub twist: Vec<[S; 2]>,
    /// Per constraint, the batch lanes it exists in (a masked slot of a contact buffer is absent
    /// from the lanes that found nothing there): each lane solves its own constraints only.
    pub present: Vec<S::Mask>,
    pub units: Units,
}

impl<S: Scalar> ContactProblem<S> {
    /// Number of constraint rows.
    pub fn rows(&self) -> usize {
        self.target.len()
    }

    /// Number of degrees of freedom.
    pub fn dofs(&self) -> usize {
        self.joint.free.len()
    }

    /// First row of each constraint.
    pub fn offsets(&self) -> Vec<usize> {
        let mut offsets = Vec::new();
        self.offsets_into(&mut offsets);
        offsets
    }

    /// [`ContactProblem::offsets`] written into `offsets`.
    pub fn offsets_into(&self, offsets: &mut Vec<usize>) {
        offsets.clear();
        let mut at = 0;
        for c in &self.constraints {
            offsets.push(at);
            at += c.kind.dim();
        }
    }

    /// Each constraint with its first row and its friction coefficient.
    pub fn each(&self) -> impl Iterator<Item = (&Constraint, usize, S)> + '_ {
        self.constraints.iter().zip(self.offsets()).zip(&self.mu).map(|((c, at), &mu)| (c, at, mu))
    }

    /// Constraint `c`'s cost piece, its rows starting at `at`, from all rows' deviations `jar`
    /// and `D = 1/R`.
    pub fn piece<'a>(&self, c: usize, at: usize, jar: &'a [S], d: &'a [S]) -> Piece<'a, S> {
        let kind = self.constraints[c].kind;
        let rows = at..at + kind.dim();
        Piece { kind, jar: &jar[rows.clone()], d: &d[rows], mu: self.mu[c], twist: self.twist[c] }
    }

    /// [`ContactProblem::lane`], borrowed instead of copied where the problem already is that
    /// lane: a plain `f64` problem with every constraint present (the common step), whose rows
    /// are all the problem's (`None`).
    pub fn lane_view(&self, lane: usize) -> (Cow<'_, ContactProblem<f64>>, Option<Vec<usize>>) {
        let own = (self as &dyn Any).downcast_ref::<ContactProblem<f64>>();
        match own {
            Some(problem) if problem.present.iter().all(|&p| p) => (Cow::Borrowed(problem), None),
            _ => {
                let (problem, rows) = self.lane(lane);
                (Cow::Owned(problem), Some(rows))
            }
        }
    }

    /// The real parts of batch lane `lane`, the constraints absent from it left out, with the
    /// rows of `self` the lane's rows come from.
    pub fn lane(&self, lane: usize) -> (ContactProblem<f64>, Vec<usize>) {
        // Numbers on a device come to the host in one transfer (the first lane's copy reads
        // them; the other lanes find them read).
        S::Mask::prefetch(self.present.iter().copied());
        let JointSpace { mass, jacobian, free } = &self.joint;
        let rows = [&self.target, &self.regularizer].into_iter().flat_map(|v| v.iter());
        let twist = self.twist.iter().flatten();
        S::prefetch(
            mass.values()
                .iter()
                .chain(jacobian.values())
                .chain(free.iter())
                .chain(rows)
                .chain(&self.mu)
                .chain(twist)
                .copied(),
        );
        let re = |x: &S| x.lane(lane);
        let kept: Vec<usize> = (0..self.constraints.len()).filter(|&c| self.present[c].lane(lane)).collect();
        let offsets = self.offsets();
        let rows: Vec<usize> =
            kept.iter().flat_map(|&c| offsets[c]..offsets[c] + self.constraints[c].kind.dim()).collect();
        let problem = ContactProblem {
            constraints: kept.iter().map(|&c| self.constraints[c]).collect(),
            joint: JointSpace {
                mass: self.joint.mass.map(|x| x.lane(lane)),
                jacobian: self.joint.jacobian.select_rows(rows.iter().copied(), re),
                free: self.joint.free.map(|x| x.lane(lane)),
            },
            target: DVector::from_fn(rows.len(), |i, _| re(&self.target[rows[i]])),
            regularizer: DVector::from_fn(rows.len(), |i, _| re(&self.regularizer[rows[i]])),
            mu: kept.iter().map(|&c| re(&self.mu[c])).collect(),
            twist: kept.iter().map(|&c| self.twist[c].map(|x| x.lane(lane))).collect(),
            present: vec![true; kept.len()],
            units: self.units,
        };
        (problem, rows)
    }
}

impl<S: Scalar> ContactProblem<S> {
    /// Assembles the problem from its joint-space data and the constraints' rows under
    /// `config`, with the regularizer `R = (1 − d)/d · w` on normal and limit rows (`w` the row's
    /// inverse weight, MuJoCo's `diagApprox`, or else the exact `A_nn = J_n M⁻¹ J_nᵀ`) and the
    /// floor `config.regularization · w` alone on friction rows — so that stiction is exact to
    /// that relative floor, and a friction direction nothing can move (a planar model's
    /// out-of-plane tangent) still has a definite block — unless `config.mujoco_compat` puts
    /// the normal row's `R` on them too, as MuJoCo does.
    ///
    /// `velocity` is the pre-step constraint-space velocity `J v`: friction rows target the
    /// fraction [`ContactRow::friction_reference`] of it (none without it).
    ///
    /// Rows are in the problem's scalar ([`ContactRow`]): whatever their values carry
    /// (tangents, batch lanes) the targets, regularizer and friction carry too. Every
    /// constraint is present in every lane.
    pub fn from_rows(
        joint: JointSpace<S>,
        velocity: Option<&DVector<S>>,
        rows: &[ContactRow<S>],
        bodies: Option<&[[Option<usize>; 2]]>,
        config: &SolverConfig,
    ) -> Self {
        let mut problem = ContactProblem {
            constraints: Vec::new(),
            joint,
            target: DVector::zeros(0),
            regularizer: DVector::zeros(0),
            mu: Vec::new(),
            twist: Vec::new(),
            present: Vec::new(),
            units: Units::default(),
        };
        problem.set_rows(velocity, rows, bodies, config);
        problem
    }

    /// Sets the problem's rows over its joint-space data as [`ContactProblem::from_rows`]
    /// does, reusing its storage.
    pub fn set_rows(
        &mut self,
        velocity: Option<&DVector<S>>,
        rows: &[ContactRow<S>],
        bodies: Option<&[[Option<usize>; 2]]>,
        config: &SolverConfig,
    ) {
        let joint = &self.joint;
        let m = joint.jacobian.nrows();
        zero_vector(&mut self.regularizer, m);
        zero_vector(&mut self.target, m);
        let (regularizer, target) = (&mut self.regularizer, &mut self.target);
        // Only rows without an inverse weight of their own need the mass matrix factorized.
        let weighted = rows.iter().all(|r| r.inverse_weight.is_some());
        let factor = if weighted { None } else { MassFactor::of(&joint.mass) };
        self.mu.clear();
        self.twist.clear();
        self.constraints.clear();
        self.present.clear();
        let mut at = 0;
        for (i, row) in rows.iter().enumerate() {
            let weight = row.inverse_weight.unwrap_or_else(|| {
                let jacobian = joint.jacobian.dense_row(at);
                factor.as_ref().map_or(S::one(), |f| jacobian.dot(&f.solve(&jacobian)))
            });
            let (normal, floor) = normal_regularizer(row, weight, config);
            regularizer[at] = normal;
            target[at] = row.bias;
            let (kind, impratio, mu) = (row.kind, row.impratio, row.mu);
            if kind == ConstraintKind::PyramidEdge {
                // MuJoCo's pyramid: every edge's regularizer matches the elliptic cone's friction
                // impedance, 2 μ² / impratio times the edge's own `(1 − d)/d · w (1 + μ²)`.
                regularizer[at] = normal * (S::one() + mu * mu) * S::from_f64(2.0) * mu * mu / impratio;
            }
            let twist = row.twist;
            if kind.is_cone() {
                let sliding = if config.mujoco_compat { normal / impratio } else { floor };
                // Only the convex cone glides; the Gauss-Seidel pass's staged update does not.
                let glides = config.method == Method::Newton && !config.mujoco_compat;
                let friction = FrictionRows {
                    coefficients: [mu, mu, twist[0], twist[1], twist[1]],
                    rows: kind.dim() - 1,
                    sliding,
                    reference: row.friction_reference,
                };
                let rows = at + 1..at + kind.dim();
                let pre_step = velocity.map(|v| &v.as_slice()[rows.clone()]);
                let (regularizers, targets) =
                    (&mut regularizer.as_mut_slice()[rows.clone()], &mut target.as_mut_slice()[rows]);
                let lowered = friction.fill(regularizers, targets, pre_step, glides);
                target[at] -= lowered;
            }
            self.mu.push(mu);
            self.twist.push(twist);
            let bodies = bodies.and_then(|b| b.get(i).copied()).unwrap_or([None, None]);
            self.constraints.push(Constraint { kind, bodies });
            self.present.push(S::Mask::splat(true));
            at += kind.dim();
        }
        // MuJoCo's floor on `R` (its `mjMINVAL`): a rigid row with no regularization still has
        // a finite `D = 1/R`.
        let floor = S::from_f64(MIN_REGULARIZER);
        regularizer.apply(|r| *r = S::select(r.greater(floor), *r, floor));
    }
}

/// The smallest regularizer a row gets (MuJoCo's `mjMINVAL`).
const MIN_REGULARIZER: f64 = 1e-15;

/// The slip speed (m/s) below which the glide compensation fades out (see [`glide`]): far
/// above a sticking contact's creep, far below any slip whose glide matters.
const GLIDE_FADE: f64 = 1e-3;

/// A cone's friction rows: their coefficients, the regularizer of the sliding rows and the
/// fraction of the pre-step velocity they target.
struct FrictionRows<S> {
    /// MuJoCo's five numbers (sliding twice, torsional, rolling twice), of which the cone's
    /// `rows` friction rows use the first.
    coefficients: [S; 5],
    rows: usize,
    sliding: S,
    reference: S,
}

impl<S: Scalar> FrictionRows<S> {
    /// Writes the rows' regularizers and targets from their pre-step velocities (none: zero),
    /// and returns how much the normal target is lowered for the cone's glide (none unless
    /// `glides`).
    fn fill(&self, regularizer: &mut [S], target: &mut [S], pre_step: Option<&[S]>, glides: bool) -> S {
        let (mu, coefficients) = (self.coefficients[0], &self.coefficients[..self.rows]);
        for (k, &f) in coefficients.iter().enumerate() {
            // MuJoCo's `R_j f_j² = R_1 μ²` on the spin and roll rows: the cone is circular in
            // the scaled coordinates the cost is written in.
            regularizer[k] = if k < 2 { self.sliding } else { self.sliding * mu * mu / (f * f) };
            target[k] = pre_step.map_or(S::zero(), |v| v[k] * self.reference);
        }
        match pre_step {
            Some(v) if glides => glide(coefficients, v, mu),
            _ => S::zero(),
        }
    }
}

/// `μ` times the pre-step slip speed `|v_t|`, smoothed to `√(|v_t|² + ε²) − ε` with `ε` =
/// [`GLIDE_FADE`] so that it has a derivative where a contact sticks; a contact that also
/// resists spinning or rolling counts each angular rate `ω_j` as the slip `(f_j/μ) ω_j`.
///
/// Every convex relaxation of Coulomb friction puts a sliding contact's post-step velocity on
/// the dual cone, `v_n = target_n + |(f_j v_j)_j|`: the body glides off the surface at `μ` times
/// its slip (Anitescu's relaxation). phyz's own presets lower the normal target by that much at
/// the step's start, so that in steady sliding the two cancel to `μ |Δv_t|` and the contact
/// keeps Coulomb's normal force; a sticking contact (no slip) is unchanged. `mujoco_compat`
/// keeps MuJoCo's targets, glide included. A contact without friction does not glide.
fn glide<S: Scalar>(coefficients: &[S], velocity: &[S], mu: S) -> S {
    let fade = mu * S::from_f64(GLIDE_FADE);
    let slip = coefficients.iter().zip(velocity).fold(fade * fade, |a, (&f, &v)| a + f * f * v * v);
    S::select(mu.greater(S::zero()), slip.sqrt() - fade, S::zero())
}

/// The normal (or limit) row's regularizer `(1 − d)/d · w`, kept above the floor
/// `config.regularization · w`; and the floor itself.
fn normal_regularizer<S: Scalar>(row: &ContactRow<S>, weight: S, config: &SolverConfig) -> (S, S) {
    let d = row.effective_impedance().clamp(S::from_f64(1e-6), S::one());
    let live = (S::one() - d) / d * weight;
    let floor = weight * S::from_f64(config.regularization);
    (S::select(live.greater(floor), live, floor), floor)
}
